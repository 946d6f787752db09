"""Encoder forward-pass throughput on the CPU next to keras-hub, Hugging Face on torch and
the machine's matmul ceiling, in one run (L6/H384/A12/I1536, batch 32, seq 128).

    python benchmarks/encoder_throughput.py [--precision mixed_bfloat16]

Modes: eager (`model(inputs)`), graph (`tf.function`) and xla (`jit_compile=True`).
Timed round-robin in one process; peak RSS from a short child per variant. "ceiling"
runs exactly the encoder's matmuls. keras_bert runs with exact GELU (its default, as
Hugging Face) and tanh GELU (as keras-hub's `BertBackbone`, the like-for-like row);
with `--precision mixed_bfloat16` keras_bert's float32 encoder runs beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

import harness

from keras_bert.core.precision import PRECISIONS

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SHAPE = {"num_layers": 6, "hidden_size": 384, "num_heads": 12, "intermediate_size": 1536,
         "vocab_size": 30522}


def encoder_flops(batch, seq, layers, hidden, inter):
    """Multiply-add FLOPs (2 per MAC) of one forward pass."""
    per_layer = (4 * 2 * seq * hidden * hidden          # Q, K, V, output projections
                 + 2 * 2 * seq * seq * hidden          # scores and context
                 + 2 * 2 * seq * hidden * inter)       # feed-forward
    return batch * layers * per_layer


def _inputs(batch, seq, vocab):
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, vocab, size=(batch, seq)).astype("int32")
    return ids, np.ones_like(ids), np.zeros_like(ids)


MODES = ("eager", "graph", "xla")
# keras_bert runs twice: with exact GELU (Hugging Face's "gelu", BertConfig's default) and
# with the tanh approximation (google-research/bert's "gelu"), which is what keras-hub's
# BertBackbone uses, so "keras_bert_gelu_tanh" vs "keras_hub" is like for like.
IMPLS = ("ceiling", "keras_bert", "keras_bert_gelu_tanh", "keras_hub", "hf_torch")
EAGER_ONLY = ("hf_torch",)


def build(impl, mode, batch, seq, precision="float32"):
    """Returns a zero-argument callable running one forward pass of `impl`."""
    import tensorflow as tf

    bf16 = precision == "mixed_bfloat16"
    policy = "float32" if impl == "keras_bert_float32" else precision

    ids, mask, types = (tf.constant(a) for a in _inputs(batch, seq, SHAPE["vocab_size"]))
    L, H, A, inter = (SHAPE[k] for k in ("num_layers", "hidden_size", "num_heads",
                                         "intermediate_size"))
    if impl in ("keras_bert", "keras_bert_gelu_tanh", "keras_bert_float32"):
        from keras_bert import BertConfig, BertEncoder

        act = "gelu_tanh" if impl == "keras_bert_gelu_tanh" else "gelu"
        model = BertEncoder(BertConfig(**SHAPE, hidden_act=act), dtype=policy)

        def call(i, m, t):
            return model({"input_word_ids": i, "input_mask": m, "input_type_ids": t},
                         training=False)["sequence_output"]
    elif impl == "keras_hub":
        import keras_hub

        model = keras_hub.models.BertBackbone(
            vocabulary_size=SHAPE["vocab_size"], num_layers=L, num_heads=A, hidden_dim=H,
            intermediate_dim=inter, max_sequence_length=512, dtype=policy)

        def call(i, m, t):
            return model({"token_ids": i, "padding_mask": m, "segment_ids": t},
                         training=False)["sequence_output"]
    elif impl == "hf_torch":
        # Hugging Face transformers' BertModel on PyTorch (optional: pip install torch
        # transformers), exact GELU like keras_bert's default; eager only.
        import torch
        import transformers

        model = transformers.BertModel(transformers.BertConfig(
            vocab_size=SHAPE["vocab_size"], hidden_size=H, num_hidden_layers=L,
            num_attention_heads=A, intermediate_size=inter, hidden_act="gelu"),
            add_pooling_layer=True).eval()
        tensors = [torch.from_numpy(a.astype("int64"))
                   for a in _inputs(batch, seq, SHAPE["vocab_size"])]

        def run_torch():
            with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=bf16):
                return model(input_ids=tensors[0], attention_mask=tensors[1],
                             token_type_ids=tensors[2]).last_hidden_state.float().numpy()

        return run_torch
    elif impl == "ceiling":
        d = H // A
        # Distinct weights per projection and layer: with one shared matrix, grappler's
        # common-subexpression elimination merges the Q, K and V products into one and
        # the "ceiling" skips a sixth of the work.
        dtype = tf.bfloat16 if bf16 else tf.float32
        w = [{k: tf.cast(tf.random.normal(s) * 0.05, dtype) for k, s in
              [("q", (H, H)), ("k", (H, H)), ("v", (H, H)), ("o", (H, H)),
               ("w1", (H, inter)), ("w2", (inter, H))]} for _ in range(L)]
        x0 = tf.cast(tf.random.normal((batch * seq, H)), dtype)

        def call(i, m, t):
            x = x0 + tf.cast(i[0, 0], dtype) * 0
            for lw in w:
                q, k, v = (tf.reshape(tf.matmul(x, lw[n]), (batch * A, seq, d))
                           for n in "qkv")
                c = tf.matmul(tf.matmul(q, k, transpose_b=True), v)
                x = tf.matmul(tf.reshape(c, (batch * seq, H)), lw["o"])
                x = tf.matmul(tf.matmul(x, lw["w1"]), lw["w2"])
            return x
    else:
        raise ValueError(impl)
    fn = call if mode == "eager" else tf.function(call, jit_compile=mode == "xla")
    return lambda: fn(ids, mask, types).numpy()


def peak_rss_child(impl, mode, batch, seq, precision):
    """Child mode: a few passes of one implementation, then its peak RSS."""
    run = build(impl, mode, batch, seq, precision)
    for _ in range(3):
        run()
    return {"impl": impl, "mode": mode,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def _peak_rss(impl, mode, args):
    cmd = [sys.executable, __file__, "--impl", impl, "--mode", mode,
           "--batch", str(args.batch), "--seq", str(args.seq), "--precision", args.precision]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])["peak_rss_mb"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--precision", choices=PRECISIONS, default="float32")
    parser.add_argument("--impls", default=None, help="comma-separated subset of "
                        + ",".join(IMPLS) + " (default: all)")
    parser.add_argument("--impl", help=argparse.SUPPRESS)  # child mode (peak RSS)
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.impl:
        print(json.dumps(peak_rss_child(args.impl, args.mode, args.batch, args.seq,
                                        args.precision)))
        return
    impls = list(args.impls.split(",") if args.impls else IMPLS)
    if args.precision != "float32" and "keras_bert" in impls:
        impls.insert(impls.index("keras_bert") + 1, "keras_bert_float32")
    variants = [(impl, mode) for impl in impls for mode in MODES
                if mode == "eager" or impl not in EAGER_ONLY]
    # Children first: Linux keeps ru_maxrss across exec, so a child started after this
    # process has built models would inherit (and report) this process's peak.
    peak_rss = {key: _peak_rss(*key, args) for key in variants}
    runs, skipped = {}, {}
    for key in variants:
        try:
            runs[key] = build(*key, args.batch, args.seq, args.precision)
            runs[key]()  # trace/compile
        except ImportError as e:
            skipped[key] = str(e)
    times = harness.round_robin(runs, args.rounds)  # the median of each is reported
    flops = encoder_flops(args.batch, args.seq, SHAPE["num_layers"], SHAPE["hidden_size"],
                          SHAPE["intermediate_size"])
    results = {}
    for key in variants:
        impl, mode = key
        if key in skipped:
            print(json.dumps({"impl": impl, "mode": mode, "skipped": skipped[key]}))
            continue
        seconds = sorted(times[key])[len(times[key]) // 2]
        results[key] = line = {
            "impl": impl, "mode": mode, "precision": "float32" if impl == "keras_bert_float32"
            else args.precision, "batch": args.batch, "seq": args.seq,
            "seq_per_s": round(args.batch / seconds, 2), "ms_per_batch": round(seconds * 1e3, 1),
            "gflops": round(flops / seconds / 1e9, 1), "peak_rss_mb": peak_rss[key]}
        harness.emit(line)
    summary = {"summary": "encoder_throughput", **SHAPE, "batch": args.batch, "seq": args.seq,
               "precision": args.precision, "rounds": args.rounds, **harness.machine()}
    ceiling = results.get(("ceiling", "graph"))
    for mode in MODES:
        hub = results.get(("keras_hub", mode))
        for impl, tag in (("keras_bert_gelu_tanh", ""), ("keras_bert", "_exact_gelu")):
            ours = results.get((impl, mode))
            if ours and hub:
                summary[f"speedup_vs_keras_hub_{mode}{tag}"] = round(
                    ours["seq_per_s"] / hub["seq_per_s"], 2)
            if ours and ceiling:
                summary[f"fraction_of_tf_matmul_ceiling_{mode}{tag}"] = round(
                    ours["seq_per_s"] / ceiling["seq_per_s"], 2)
    torch_eager = results.get(("hf_torch", "eager"))
    if torch_eager:
        for impl, mode in (("keras_bert", "eager"), ("keras_bert", "graph")):
            if (impl, mode) in results:
                summary[f"speedup_vs_hf_torch_{mode}_exact_gelu"] = round(
                    results[(impl, mode)]["seq_per_s"] / torch_eager["seq_per_s"], 2)
    for mode in MODES:
        ours, own_f32 = results.get(("keras_bert", mode)), results.get(("keras_bert_float32",
                                                                         mode))
        if ours and own_f32:
            summary[f"bfloat16_speedup_vs_own_float32_{mode}"] = round(
                ours["seq_per_s"] / own_f32["seq_per_s"], 2)
        peers = [results[(p, mode)] for p in ("keras_hub", "hf_torch") if (p, mode) in results]
        if ours and peers:
            best = max(peers, key=lambda r: r["seq_per_s"])
            summary[f"speedup_vs_fastest_peer_{mode}_exact_gelu"] = round(
                ours["seq_per_s"] / best["seq_per_s"], 2)
            summary[f"fastest_peer_{mode}"] = best["impl"] + (
                "" if best["mode"] == mode else f" ({best['mode']})")
    xla_ceiling = results.get(("ceiling", "xla"))
    ours_xla = results.get(("keras_bert_gelu_tanh", "xla"))
    if xla_ceiling and ours_xla:
        summary["fraction_of_xla_matmul_ceiling_xla"] = round(
            ours_xla["seq_per_s"] / xla_ceiling["seq_per_s"], 2)
    if xla_ceiling and ceiling:
        summary["xla_matmul_ceiling_vs_tf"] = round(
            xla_ceiling["seq_per_s"] / ceiling["seq_per_s"], 2)
    harness.emit(summary)


if __name__ == "__main__":
    main()
