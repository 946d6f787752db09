"""Encoder forward-pass throughput on the CPU, side by side with keras-hub and the
machine's matmul ceiling, all measured in one run.

Prints one JSON line per measurement and a final comparison line:

    python benchmarks/encoder_throughput.py            # L6/H384/A12/I1536, batch 32, seq 128

Each implementation runs in its own subprocess so its peak RSS is its own. "ceiling" is
a tf.function that performs exactly the encoder's matrix multiplications (projections,
feed-forward, attention scores and context) and nothing else: the seq/s the encoder
would reach if everything but the matmuls were free. The fractions in the summary are
against the plain-TF ceiling; the XLA-compiled ceiling is reported beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

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


def _time(fn, args, warmup, iters):
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        out = fn(*args)
        # Materialize the result so lazy execution is included.
        _ = [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]  # median


def run_one(impl, xla, batch, seq, warmup, iters):
    import tensorflow as tf

    ids, mask, types = _inputs(batch, seq, SHAPE["vocab_size"])
    L, H, A, inter = (SHAPE[k] for k in ("num_layers", "hidden_size", "num_heads", "intermediate_size"))
    if impl == "keras_bert":
        from keras_bert import BertConfig, BertEncoder

        model = BertEncoder(BertConfig(**SHAPE))

        def call(i, m, t):
            return model({"input_word_ids": i, "input_mask": m, "input_type_ids": t},
                         training=False)["sequence_output"]
    elif impl == "keras_hub":
        import keras_hub

        model = keras_hub.models.BertBackbone(
            vocabulary_size=SHAPE["vocab_size"], num_layers=L, num_heads=A, hidden_dim=H,
            intermediate_dim=inter, max_sequence_length=512)

        def call(i, m, t):
            return model({"token_ids": i, "padding_mask": m, "segment_ids": t},
                         training=False)["sequence_output"]
    elif impl == "ceiling":
        d = H // A
        w = {k: tf.random.normal(s) for k, s in
             [("qkvo", (H, H)), ("w1", (H, inter)), ("w2", (inter, H))]}

        def call(i, m, t):
            x = tf.random.normal((batch * seq, H)) + tf.cast(tf.reduce_sum(i), tf.float32) * 0
            for _ in range(L):
                q, k, v = (tf.reshape(tf.matmul(x, w["qkvo"]), (batch * A, seq, d))
                           for _ in range(3))
                c = tf.matmul(tf.matmul(q, k, transpose_b=True), v)
                x = tf.matmul(tf.reshape(c, (batch * seq, H)), w["qkvo"])
                x = tf.matmul(tf.matmul(x, w["w1"]), w["w2"])
            return x
    else:
        raise ValueError(impl)
    fn = tf.function(call, jit_compile=bool(xla))
    seconds = _time(fn, (tf.constant(ids), tf.constant(mask), tf.constant(types)), warmup, iters)
    flops = encoder_flops(batch, seq, L, H, inter)
    return {"impl": impl, "xla": bool(xla), "batch": batch, "seq": seq,
            "seq_per_s": round(batch / seconds, 2), "ms_per_batch": round(seconds * 1e3, 1),
            "gflops": round(flops / seconds / 1e9, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--impl", help=argparse.SUPPRESS)  # child mode
    parser.add_argument("--xla", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.impl:
        print(json.dumps(run_one(args.impl, args.xla, args.batch, args.seq, args.warmup,
                                 args.iters)))
        return
    results = {}
    for impl in ("ceiling", "keras_bert", "keras_hub"):
        for xla in (0, 1):
            cmd = [sys.executable, __file__, "--impl", impl, "--xla", str(xla),
                   "--batch", str(args.batch), "--seq", str(args.seq),
                   "--iters", str(args.iters), "--warmup", str(args.warmup)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                line = {"impl": impl, "xla": bool(xla), "skipped": proc.stderr.strip()[-300:]}
            else:
                line = json.loads(proc.stdout.strip().splitlines()[-1])
                results[(impl, xla)] = line
            print(json.dumps(line), flush=True)
    ours = {x: results.get(("keras_bert", x)) for x in (0, 1)}
    hub = {x: results.get(("keras_hub", x)) for x in (0, 1)}
    ceiling = results.get(("ceiling", 0))
    summary = {"summary": "encoder_throughput", **{k: v for k, v in SHAPE.items()},
               "batch": args.batch, "seq": args.seq}
    for x, tag in ((0, "no_xla"), (1, "xla")):
        if ours[x] and hub[x]:
            summary[f"speedup_vs_keras_hub_{tag}"] = round(ours[x]["seq_per_s"] / hub[x]["seq_per_s"], 2)
        if ours[x] and ceiling:
            # The goal is stated against the plain-TF matmul ceiling.
            summary[f"fraction_of_matmul_ceiling_{tag}"] = round(
                ours[x]["seq_per_s"] / ceiling["seq_per_s"], 2)
    if results.get(("ceiling", 1)) and ceiling:
        summary["xla_matmul_ceiling_vs_tf"] = round(
            results[("ceiling", 1)]["seq_per_s"] / ceiling["seq_per_s"], 2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
