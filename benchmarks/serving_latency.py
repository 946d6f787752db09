"""Serving latency of exported models beside torch and ONNX Runtime, in one run.

Exports the checkpoint (default: MiniLM-L6-H384) at float32 and mixed_bfloat16, XLA off
and on, and times the SavedModels' `serving_default` (ids) and `serve_text` (raw text) at
batch 1 (seq 32, 128) and batch 32 (seq 128), beside the Keras encoder in a
`tf.function`, Hugging Face on torch (eager), ONNX Runtime float32 and, at batch 1, ONNX
Runtime int8 (`quantize_dynamic`) and LiteRT float32 and dynamic int8 exports. Every
system gets the same threads, each of `--threads` in a process of its own on models
exported once to `--workdir`; calls are timed round-robin; idle torch/ORT threads sleep.
Prints p50/p90/p99 ms and sequences/s per variant, a summary per shape, the file sizes
and issue 24's batch-1 goals: LiteRT int8 p50 / ORT int8 p50 <= 1.25, < ORT float32.

    python benchmarks/serving_latency.py                      # the full table
    python benchmarks/serving_latency.py --rounds 20 --rounds_batch32 0 \\
        --precisions float32 --xla off                        # a smoke run
    python benchmarks/serving_latency.py --embedder --threads 2

`--embedder`: the MiniLM folder's `BertTextEmbedder` in LiteRT (text in) beside
sentence-transformers' `encode` on its ONNX int8 backend (`sentence-transformers[onnx]`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import harness

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SHAPES = ((1, 32), (1, 128), (32, 128))
QUANTIZE = ("none", "dynamic_int8")  # LiteRT models (batch 1 rows)
HF_ONNX, HF_ONNX_INT8 = "hf_bert.onnx", "hf_bert_int8.onnx"
SENTENCE = ("the film follows a young musician who leaves her small town for the city , "
            "where she finds that talent alone is not enough and that every success "
            "has a price that someone else pays .")


def _texts(tokenizer, batch: int, seq: int) -> list[bytes]:
    """`batch` texts that tokenize to exactly seq - 2 word pieces ([CLS]/[SEP] added)."""
    import tensorflow as tf

    words = (SENTENCE.split() * (seq // 4 + 8))
    lo, hi = 1, len(words)
    while lo < hi:  # the fewest words that give seq - 2 pieces (or more)
        mid = (lo + hi) // 2
        n = int(tokenizer.tokenize(tf.constant([" ".join(words[:mid])])).row_lengths()[0])
        lo, hi = (mid + 1, hi) if n < seq - 2 else (lo, mid)
    text = " ".join(words[:lo])
    return [text.encode()] * batch


def _ids(batch: int, seq: int, vocab: int):
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, vocab, size=(batch, seq)).astype("int32")
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids),
            "input_type_ids": np.zeros_like(ids)}


def _hf_feed(batch: int, seq: int, vocab: int) -> dict:  # as Hugging Face's BertModel
    ids = list(_ids(batch, seq, vocab).values())
    return dict(zip(("input_ids", "attention_mask", "token_type_ids"),
                    (x.astype("int64") for x in ids)))


def _torch_variants(checkpoint: str, threads: int, shapes, vocab: int, workdir: str):
    """Hugging Face BertModel on torch, and its ONNX export in ONNX Runtime at float32
    and dynamic int8 (int8 at batch 1 only), if installed."""
    variants = {}
    # Idle OpenMP threads sleep instead of spinning into the next variant's call.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch
        from transformers import BertModel
    except ImportError as e:
        harness.emit({"system": "hf_torch", "skipped": f"not installed ({e})"})
        harness.emit({"system": "onnxruntime", "skipped": "needs torch to export the model"})
        return variants
    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)  # inference only in this process
    model = BertModel.from_pretrained(checkpoint).eval()
    for batch, seq in shapes:
        feed = {k: torch.from_numpy(v) for k, v in _hf_feed(batch, seq, vocab).items()}
        variants[("hf_torch", "eager", batch, seq)] = lambda feed=feed: model(**feed)
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as e:
        harness.emit({"system": "onnxruntime", "skipped": f"not installed ({e})"})
        return variants
    path, int8_path = os.path.join(workdir, HF_ONNX), os.path.join(workdir, HF_ONNX_INT8)
    if not os.path.isfile(int8_path):  # made once per work directory
        _export_torch_onnx(torch, model, path)
        quantize_dynamic(path, int8_path, weight_type=QuantType.QInt8)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as torch
    for batch, seq in shapes:
        feed = _hf_feed(batch, seq, vocab)
        for mode, model_path in (("cpu", path), ("cpu_int8", int8_path)):
            if mode == "cpu" or batch == 1:  # a session per shape, as for LiteRT
                session = ort.InferenceSession(model_path, options,
                                               providers=["CPUExecutionProvider"])
                variants[("onnxruntime", mode, batch, seq)] = (
                    lambda s=session, feed=feed: s.run(None, feed))
    return variants


def _export_torch_onnx(torch, model, path: str) -> None:
    axes, names = {0: "batch", 1: "seq"}, ["input_ids", "attention_mask", "token_type_ids"]
    wrapper = torch.nn.Module()  # BertModel.forward takes the ids by keyword only
    wrapper.bert, wrapper.forward = model, lambda *ids: model(**dict(zip(names, ids)))[:2]
    example = tuple(torch.ones((1, 8), dtype=torch.int64) for _ in range(3))
    torch.onnx.export(wrapper.eval(), example, path, input_names=names,
                      output_names=["last_hidden_state", "pooler_output"],
                      dynamic_axes={n: axes for n in [*names, "last_hidden_state"]},
                      opset_version=17, dynamo=False)  # TorchScript: no onnxscript


def _export_variants(source_args: dict, workdir: str, precisions, xla_modes, shapes):
    import tensorflow as tf

    from keras_bert.export import export_saved_model
    from keras_bert.tasks.export_sources import load_export_source

    variants = {}
    for precision in precisions:
        source = load_export_source(**source_args, precision=precision)
        for xla in xla_modes:
            name = f"{precision}_{'xla' if xla else 'noxla'}"
            path = _once(workdir, name, lambda: export_saved_model(
                source, workdir, name, precision=precision, jit_compile=xla,  # noqa: B023
                warmup=False)[0])
            loaded = tf.saved_model.load(path)
            ids_fn, text_fn = (loaded.signatures[k] for k in ("serving_default", "serve_text"))
            for batch, seq in shapes:
                ids = {k: tf.constant(v) for k, v in
                       _ids(batch, seq, source.config.vocab_size).items()}
                text = tf.constant(_texts(source.tokenizer, batch, seq))
                variants[("savedmodel_ids", name, batch, seq)] = (
                    lambda f=ids_fn, x=ids: f(**x))
                variants[("savedmodel_text", name, batch, seq)] = (
                    lambda f=text_fn, t=text: f(text=t))
    return variants


def _once(workdir: str, name: str, export) -> str:
    """`workdir/name/1`, made by `export()` (the version directory) unless it is there."""
    path, start = os.path.join(workdir, name, "1"), time.perf_counter()
    if not os.path.isdir(path):  # made once per work directory
        path = export()
        harness.emit({"event": "exported", "variant": name, "path": path,
                      "seconds": round(time.perf_counter() - start, 1)})
    return path


def _litert_variants(source_args: dict, workdir: str, threads: int, shapes, reference):
    """LiteRT float32 and dynamic int8: `serving_default` (its pooled output checked
    against the Keras encoder's, `reference`), and `serve_text`, in `load_interpreter`'s interpreter (ai-edge-litert's, else TensorFlow's)."""
    import numpy as np

    from keras_bert.export import export_litert, load_interpreter
    from keras_bert.tasks.export_sources import load_export_source

    source, variants = load_export_source(**source_args), {}
    for quantize in QUANTIZE:
        path = os.path.join(_once(workdir, f"litert_{quantize}", lambda q=quantize: (
            export_litert(source, workdir, f"litert_{q}", quantize=q)[0])), "model.tflite")
        mode = "float32" if quantize == "none" else quantize
        for batch, seq in shapes:
            # An interpreter per shape: one shared by the round-robin's shapes would
            # resize and re-plan its XNNPACK delegate at every call (about 5% more).
            interpreter = load_interpreter(path, num_threads=threads)
            ids_fn = interpreter.get_signature_runner("serving_default")
            text_fn = interpreter.get_signature_runner("serve_text")
            ids = _ids(batch, seq, source.config.vocab_size)
            pooled = ids_fn(**ids)["pooled_output"]
            harness.emit({"event": "check", "system": "litert", "mode": mode, "seq": seq,
                          "runtime": type(interpreter).__module__.split(".")[0],
                          "pooled_output_max_abs_diff_vs_keras": round(
                              float(np.abs(pooled - reference(ids)).max()), 6)})
            variants[("litert_ids", mode, batch, seq)] = lambda f=ids_fn, x=ids: f(**x)
            text = np.array(_texts(source.tokenizer, batch, seq), dtype=object)
            variants[("litert_text", mode, batch, seq)] = lambda f=text_fn, t=text: f(text=t)
    return variants


def _embedder_variants(checkpoint: str, workdir: str, threads: int, shapes):
    """keras_bert's LiteRT embedders (`serve_text`) beside sentence-transformers' `encode`
    on torch float32 and on its ONNX backend's dynamic int8 export of a copy of the
    folder (avx512_vnni or avx2 as the CPU has), exported once per work directory;
    prints each one's cosine to sentence-transformers' float32 embeddings."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import numpy as np
    import onnxruntime as ort
    import torch
    from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

    import keras_bert
    from keras_bert.export import LiteRTModel

    embedder, encoders = keras_bert.BertTextEmbedder.from_preset(checkpoint), {}
    for quantize in QUANTIZE:
        model = LiteRTModel(_once(workdir, f"embedder_{quantize}", lambda q=quantize: (
            embedder.export(os.path.join(workdir, f"embedder_{q}"), format="litert",
                            quantize=q))), num_threads=threads)
        encoders[("litert_text", quantize.replace("none", "float32"))] = (
            lambda texts, m=model: m.serve_text(text=texts)["embedding"])
    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    config = "avx512_vnni" if "avx512_vnni" in harness.cpu_flags() else "avx2"
    folder, file_name = os.path.join(workdir, "st_onnx"), f"onnx/model_qint8_{config}.onnx"
    if not os.path.isfile(os.path.join(folder, file_name)):
        os.makedirs(folder, exist_ok=True)
        for entry in set(os.listdir(checkpoint)) - set(os.listdir(folder)):
            os.symlink(os.path.join(checkpoint, entry), os.path.join(folder, entry))
        export_dynamic_quantized_onnx_model(
            SentenceTransformer(folder, device="cpu", backend="onnx"), config, folder)
    options = ort.SessionOptions()  # as _torch_variants' sessions
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    for mode, st in (("float32", SentenceTransformer(checkpoint, device="cpu")),
                     ("dynamic_int8", SentenceTransformer(folder, device="cpu", backend="onnx",
                      model_kwargs={"file_name": file_name, "session_options": options,
                                    "provider": "CPUExecutionProvider"}))):
        encoders[("st_onnx" if mode != "float32" else "st_torch", mode)] = (
            lambda texts, st=st: st.encode(texts, batch_size=32))
    sentences = [str(s) for s in np.load(os.path.join(
        harness.REPO, "tests", "fixtures", "embeddings", "minilm_refs.npz"))["sentences"]]
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    reference, variants = unit(encoders[("st_torch", "float32")](sentences)), {}
    for (system, mode), encode in encoders.items():
        cosine = (unit(np.asarray(encode(sentences))) * reference).sum(-1)
        harness.emit({"event": "check", "system": system, "mode": mode,
                      "cosine_to_st_float32_min": round(float(cosine.min()), 5),
                      "cosine_to_st_float32_mean": round(float(cosine.mean()), 5)})
        for batch, seq in shapes:
            texts = [t.decode() for t in _texts(embedder.preprocessor.tokenizer, batch, seq)]
            variants[(system, mode, batch, seq)] = lambda f=encode, t=texts: f(t)
    return variants


def _keras_baseline(checkpoint: str, shapes):
    import tensorflow as tf

    from keras_bert.checkpoints import load_encoder

    encoder = load_encoder(checkpoint)
    call = tf.function(lambda x: encoder(x, training=False)["pooled_output"])
    variants = {}
    for batch, seq in shapes:
        ids = {k: tf.constant(v) for k, v in
               _ids(batch, seq, encoder.config.vocab_size).items()}
        variants[("keras_bert", "tf_function", batch, seq)] = lambda x=ids: call(x)
    return variants, encoder.config.vocab_size, lambda ids: call(ids).numpy()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", help="encoder checkpoint (default: installed MiniLM)")
    parser.add_argument("--threads", default="1,2", help="thread counts, a process each")
    parser.add_argument("--rounds", type=int, default=200, help="calls a variant, batch 1")
    parser.add_argument("--rounds_batch32", type=int, default=8, help="... at batch 32")
    parser.add_argument("--precisions", default="float32,mixed_bfloat16")
    parser.add_argument("--xla", default="off,on", help="off, on or off,on")
    parser.add_argument("--workdir", help="where the models are exported, and reused from "
                                          "(default: a new temporary directory)")
    parser.add_argument("--embedder", action="store_true", help="sentence embedders")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="serving_latency_")
    os.makedirs(args.workdir, exist_ok=True)
    records = measure(args, threads[0]) if len(threads) == 1 else []
    for count in threads if len(threads) > 1 else []:
        # A process per thread count, reusing the first one's exports.
        argv = [sys.executable, os.path.abspath(__file__), "--threads", str(count), "--child"]
        for key, value in vars(args).items():
            if key not in ("threads", "child") and value is not None and value is not False:
                argv += [f"--{key}"] + ([] if value is True else [str(value)])
        with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as child:
            for line in child.stdout:
                print(line, end="", flush=True)
                if line.startswith('{"system"') and "p50_ms" in line:
                    records.append(json.loads(line))
        if child.returncode:
            return child.returncode
    if args.rounds > 0 and not args.child and not args.embedder:  # the parent sums up
        harness.emit(_sizes(args.workdir))
        harness.emit(_goals(records))
    return 0


def measure(args, threads: int) -> list[dict]:
    """Exports what is not in `args.workdir` yet and times every variant with `threads`
    threads; returns the measurement records."""
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    checkpoint = args.checkpoint or harness.minilm()
    harness.emit({"event": "setup", "checkpoint": checkpoint, "threads": threads,
           "tensorflow": tf.__version__, "cpu": harness.cpu(), "workdir": args.workdir,
           "versions": harness.versions(
               "tensorflow", "tensorflow-text", "ai-edge-litert", "onnxruntime", "torch",
               "transformers", "sentence-transformers", "optimum", "optimum-onnx")})
    if args.rounds <= 0:
        return []
    shapes = [s for s in SHAPES if (args.rounds if s[0] == 1 else args.rounds_batch32) > 0]
    source_args = {"checkpoint": checkpoint, "max_seq_length": 128}
    if args.embedder:
        variants = _embedder_variants(checkpoint, args.workdir, threads, shapes)
    else:
        variants, vocab, reference = _keras_baseline(checkpoint, shapes)
        variants.update(_export_variants(source_args, args.workdir,
                                         args.precisions.split(","),
                                         [m == "on" for m in args.xla.split(",")], shapes))
        variants.update(_litert_variants(source_args, args.workdir, threads,
                                         [s for s in shapes if s[0] == 1], reference))
        variants.update(_torch_variants(checkpoint, threads, shapes, vocab, args.workdir))
    records = []
    for batch, seq in shapes:
        shape_variants = {k: v for k, v in variants.items() if k[2:] == (batch, seq)}
        rounds = args.rounds if batch == 1 else args.rounds_batch32
        times = {k: np.asarray(t) for k, t in
                 harness.round_robin(shape_variants, rounds, warmup=3).items()}
        results = {}
        for (system, mode, _, _), t in times.items():
            record = {"system": system, "mode": mode, "batch": batch, "seq": seq,
                      "threads": threads, "calls": len(t),
                      **{f"p{q}_ms": round(float(np.percentile(t, q)) * 1e3, 2)
                         for q in (50, 90, 99)},
                      "requests_per_s": round(len(t) / float(t.sum()), 2),
                      "seq_per_s": round(batch * len(t) / float(t.sum()), 1)}
            results[(system, mode)] = record
            records.append(record)
            harness.emit(record)
        harness.emit(_summary(results, batch, seq, threads))
    return records


def _summary(results: dict, batch: int, seq: int, threads: int) -> dict:
    """The best exported variant per entry point against the peers present."""
    summary = {"summary": f"batch {batch} seq {seq} threads {threads}"}
    peers = {name: r for (system, mode), r in results.items()
             for name in [system if mode != "cpu_int8" else "onnxruntime_int8"]
             if system in ("keras_bert", "hf_torch", "onnxruntime")}
    peers.update({f"{system}_{mode}": r for (system, mode), r in results.items()
                  if system.startswith("st_")})  # --embedder's sentence-transformers
    for entry in ("savedmodel_ids", "savedmodel_text", "litert_ids", "litert_text"):
        mine = [r for (system, _), r in results.items() if system == entry]
        if not mine:
            continue
        best = min(mine, key=lambda r: r["p50_ms"])
        summary[f"{entry}_best"] = {"mode": best["mode"], "p50_ms": best["p50_ms"],
                                    "seq_per_s": best["seq_per_s"]}
        for name, peer in peers.items():
            summary[f"{entry}_p50_vs_{name}"] = round(best["p50_ms"] / peer["p50_ms"], 3)
            summary[f"{entry}_seq_per_s_vs_{name}"] = round(
                best["seq_per_s"] / peer["seq_per_s"], 3)
    return summary


def _goals(records: list[dict]) -> dict:
    """Issue 24's batch-1 latency goals (`goals` below) per shape and thread count."""
    p50 = {(r["system"], r["mode"], r["seq"], r["threads"]): r["p50_ms"]
           for r in records if r["batch"] == 1}
    goals = {"goals": "batch 1 p50: litert int8 / ort int8 <= 1.25, litert int8 / ort fp32 < 1"}
    for seq, threads in sorted({(k[2], k[3]) for k in p50}):
        mine, int8, fp32 = (p50.get((*k, seq, threads)) for k in (
            ("litert_ids", "dynamic_int8"), ("onnxruntime", "cpu_int8"), ("onnxruntime", "cpu")))
        if None in (mine, int8, fp32):
            continue
        goals[f"seq {seq} threads {threads}"] = {
            "litert_int8_p50_ms": mine, "ort_int8_p50_ms": int8, "ort_fp32_p50_ms": fp32,
            "litert_int8_vs_ort_int8": round(mine / int8, 3),
            "litert_int8_vs_ort_fp32": round(mine / fp32, 3),
            "met": mine / int8 <= 1.25 and mine < fp32}
    return goals


def _sizes(workdir: str) -> dict:
    """Bytes of the SavedModel's variables (float32), the .tflite and .onnx files."""
    def size(*parts):
        path = os.path.join(workdir, *parts)
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
                   for f in files) if os.path.isdir(path) else (
            os.path.getsize(path) if os.path.isfile(path) else None)

    sizes = {"event": "sizes", "savedmodel_variables": size("float32_noxla", "1", "variables"),
             "onnx_float32": size(HF_ONNX), "onnx_int8": size(HF_ONNX_INT8),
             **{f"tflite_{q}": size(f"litert_{q}", "1", "model.tflite") for q in QUANTIZE}}
    if sizes["savedmodel_variables"] and sizes["tflite_dynamic_int8"]:
        sizes["tflite_int8_vs_savedmodel_variables"] = round(
            sizes["tflite_dynamic_int8"] / sizes["savedmodel_variables"], 3)
    return sizes


if __name__ == "__main__":
    sys.exit(main())
