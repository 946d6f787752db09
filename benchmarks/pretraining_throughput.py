"""Pretraining throughput (training sequences/s of a whole step: forward, backward,
AdamW with clipping) next to keras-hub and tf-models-official, in one run.

    python benchmarks/pretraining_throughput.py [--precision mixed_bfloat16]

L6/H384/A12/I1536, batch 32, seq 128, 20 predictions. keras_bert: `BertPretrainer` (MLM
+ NSP) compiled as `keras-bert pretrain` compiles it; tf-models-official:
`BertPretrainerV2` (MLM + NSP); keras-hub: `BertMaskedLM` (MLM only); "ceiling": the
step's matmuls alone. Each implementation is a child process (its own peak RSS), with
and without XLA; the children of one mode are timed round-robin, a step each per round;
the median step, and `seq_per_cpu_s` by the child's CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import harness

from keras_bert.core.precision import PRECISIONS

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SHAPE = {"num_layers": 6, "hidden_size": 384, "num_heads": 12, "intermediate_size": 1536,
         "vocab_size": 30522}
IMPLEMENTATIONS = ("keras_bert", "tf_models_official", "keras_hub", "ceiling")


def _batch(batch, seq, predictions, vocab):
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, vocab, size=(batch, seq)).astype("int32")
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq), predictions, replace=False)
                                  for _ in range(batch)]), axis=1).astype("int32")
    return {"ids": ids, "mask": np.ones_like(ids), "types": np.zeros_like(ids),
            "positions": positions,
            "labels": rng.integers(1000, vocab, size=(batch, predictions)).astype("int32"),
            "weights": np.ones((batch, predictions), "float32"),
            "nsp": rng.integers(0, 2, size=(batch, 1)).astype("int32")}


def _keras_bert(b, xla):
    import keras

    from keras_bert import BertConfig, BertEncoder, BertPretrainer
    from keras_bert.training import create_optimizer, pretraining_losses

    model = BertPretrainer(BertEncoder(BertConfig(**SHAPE)))
    model.compile(optimizer=create_optimizer(1e-4, 10_000, 100), loss=pretraining_losses(),
                  metrics="auto", jit_compile=xla)
    x = {"input_word_ids": b["ids"], "input_mask": b["mask"], "input_type_ids": b["types"],
         "masked_lm_positions": b["positions"]}
    y = {"masked_lm": b["labels"], "next_sentence": b["nsp"]}
    w = {"masked_lm": b["weights"], "next_sentence": keras.ops.ones((len(b["ids"]), 1))}
    return lambda: model.train_on_batch(x, y, sample_weight=w)


def _keras_hub(b, xla):
    import keras
    import keras_hub

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=SHAPE["vocab_size"], num_layers=SHAPE["num_layers"],
        num_heads=SHAPE["num_heads"], hidden_dim=SHAPE["hidden_size"],
        intermediate_dim=SHAPE["intermediate_size"], max_sequence_length=512)
    model = keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=None)
    optimizer = keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6,
                                       global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=["gamma", "beta", "bias"])
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), weighted_metrics=["sparse_categorical_accuracy"], jit_compile=xla)
    x = {"token_ids": b["ids"], "padding_mask": b["mask"].astype(bool),
         "segment_ids": b["types"], "mask_positions": b["positions"]}
    return lambda: model.train_on_batch(x, b["labels"], sample_weight=b["weights"])


def _tf_models_official(b, xla):
    import tensorflow as tf
    import tf_keras
    from official.nlp.modeling import layers, models, networks

    encoder = networks.BertEncoderV2(
        vocab_size=SHAPE["vocab_size"], hidden_size=SHAPE["hidden_size"],
        num_layers=SHAPE["num_layers"], num_attention_heads=SHAPE["num_heads"],
        inner_dim=SHAPE["intermediate_size"], type_vocab_size=2, max_sequence_length=512)
    model = models.BertPretrainerV2(encoder_network=encoder, classification_heads=[
        layers.ClassificationHead(inner_dim=SHAPE["hidden_size"], num_classes=2,
                                  name="next_sentence")])
    optimizer = tf_keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6,
                                          global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=["LayerNorm", "layer_norm", "bias"])
    x = {"input_word_ids": tf.constant(b["ids"]), "input_mask": tf.constant(b["mask"]),
         "input_type_ids": tf.constant(b["types"]),
         "masked_lm_positions": tf.constant(b["positions"])}
    labels, weights, nsp = (tf.constant(b[k]) for k in ("labels", "weights", "nsp"))
    ce = tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    @tf.function(jit_compile=xla)
    def step():
        with tf.GradientTape() as tape:
            out = model(x, training=True)
            logits = tf.cast(out["mlm_logits"], tf.float32)  # float32 under mixed precision
            mlm = tf.reduce_sum(ce(labels, logits) * weights) / tf.reduce_sum(weights)
            loss = mlm + tf.reduce_mean(ce(nsp, tf.cast(out["next_sentence"], tf.float32)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return lambda: step().numpy()


def _ceiling(b, xla):
    """The training step's matrix multiplications and nothing else: the forward matmuls
    of the encoder (distinct Q/K/V/output, attention scores and context, feed-forward)
    and of the tied MLM decoder at the masked positions, with their gradients for every
    weight and activation (the backward matmuls). No softmax, LayerNorm, GELU, dropout,
    loss or optimizer: the seq/s a step would reach if everything else were free. Under
    mixed_bfloat16 the matmuls run in bfloat16 on float32 variables, as Keras does."""
    import keras
    import tensorflow as tf

    dtype = keras.mixed_precision.global_policy().compute_dtype

    L, H, A, inter, vocab = (SHAPE[k] for k in ("num_layers", "hidden_size", "num_heads",
                                                "intermediate_size", "vocab_size"))
    batch, seq = b["ids"].shape
    rows_masked = b["positions"].size
    d = H // A
    shapes = [("q", (H, H)), ("k", (H, H)), ("v", (H, H)), ("o", (H, H)),
              ("w1", (H, inter)), ("w2", (inter, H))]
    weights = [{k: tf.Variable(tf.random.normal(s) * 0.05) for k, s in shapes}
               for _ in range(L)]
    table = tf.Variable(tf.random.normal((vocab, H)) * 0.05)
    x0 = tf.random.normal((batch * seq, H))
    variables = [table] + [v for w in weights for v in w.values()]

    @tf.function(jit_compile=xla)
    def step():
        with tf.GradientTape() as tape:
            tape.watch(x0)
            x = tf.cast(x0, dtype)
            for w in weights:
                w = {k: tf.cast(v, dtype) for k, v in w.items()}
                q, k, v = (tf.reshape(tf.matmul(x, w[n]), (batch * A, seq, d)) for n in "qkv")
                c = tf.matmul(tf.matmul(q, k, transpose_b=True), v)
                x = tf.matmul(tf.reshape(c, (batch * seq, H)), w["o"])
                x = tf.matmul(tf.matmul(x, w["w1"]), w["w2"])
            logits = tf.matmul(x[:rows_masked], tf.cast(table, dtype), transpose_b=True)
            loss = tf.reduce_sum(tf.cast(logits, tf.float32))
        grads = tape.gradient(loss, [x0, *variables])
        return tf.add_n([tf.reduce_sum(g) for g in grads])

    return lambda: step().numpy()


def _set_precision(impl, precision):
    if impl == "tf_models_official":
        import tf_keras

        tf_keras.mixed_precision.set_global_policy(precision)
    else:
        import keras

        keras.mixed_precision.set_global_policy(precision)


def serve(impl, xla, batch, seq, predictions, warmup, precision="float32"):
    """Child mode: builds one implementation, runs the warmup steps, prints "ready", then
    runs one timed step per "step" line on stdin (printing its wall and CPU seconds) and
    its peak RSS on "stats"."""
    _set_precision(impl, precision)
    b = _batch(batch, seq, predictions, SHAPE["vocab_size"])
    make = {"keras_bert": _keras_bert, "keras_hub": _keras_hub,
            "tf_models_official": _tf_models_official, "ceiling": _ceiling}[impl]
    step = make(b, bool(xla))
    start = time.perf_counter()
    for _ in range(warmup):
        step()
    print(json.dumps({"ready": True, "warmup_s": round(time.perf_counter() - start, 1)}),
          flush=True)
    for command in sys.stdin:
        if command.strip() == "step":
            t, c = time.perf_counter(), time.process_time()
            step()
            print(json.dumps({"s": time.perf_counter() - t, "cpu_s": time.process_time() - c}),
                  flush=True)
        elif command.strip() == "stats":
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(json.dumps({"peak_rss_mb": round(rss, 1)}), flush=True)
            return


class _Child:
    """One implementation in its own process, driven line by line."""

    def __init__(self, impl, xla, args):
        self.impl, self.xla = impl, xla
        # stderr goes to a file: an undrained pipe would block a chatty child.
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--impl", impl, "--xla", str(xla),
             "--batch", str(args.batch), "--seq", str(args.seq),
             "--predictions", str(args.predictions), "--warmup", str(args.warmup),
             "--precision", args.precision],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.ready = self._read()
        self.times, self.cpu_times = [], []

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                return json.loads(line)
        self.proc.wait()
        self.stderr.seek(0)
        raise RuntimeError(self.stderr.read().strip()[-400:])

    def step(self):
        self.proc.stdin.write("step\n")
        self.proc.stdin.flush()
        result = self._read()
        self.times.append(result["s"])
        self.cpu_times.append(result["cpu_s"])

    def finish(self, args):
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        rss = self._read()["peak_rss_mb"]
        self.proc.wait()
        seconds = sorted(self.times)[len(self.times) // 2]
        cpu_seconds = sorted(self.cpu_times)[len(self.cpu_times) // 2]
        return {"impl": self.impl, "xla": bool(self.xla), "precision": args.precision,
                "batch": args.batch, "seq": args.seq, "predictions": args.predictions,
                "objective": {"keras_hub": "mlm", "ceiling": "matmuls only"}.get(
                    self.impl, "mlm+nsp"),
                "seq_per_s": round(args.batch / seconds, 2), "s_per_step": round(seconds, 3),
                "seq_per_cpu_s": round(args.batch / cpu_seconds, 2),
                "step_times_s": [round(t, 3) for t in self.times],
                "warmup_s": self.ready["warmup_s"], "peak_rss_mb": rss}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--predictions", type=int, default=20)
    parser.add_argument("--steps", type=int, default=6, help="timed steps (rounds)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--impls", default=",".join(IMPLEMENTATIONS))
    parser.add_argument("--precision", default="float32",
                        choices=PRECISIONS)
    parser.add_argument("--impl", help=argparse.SUPPRESS)  # child mode
    parser.add_argument("--xla", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.impl:
        serve(args.impl, args.xla, args.batch, args.seq, args.predictions, args.warmup,
              args.precision)
        return
    results = {}
    for xla in (0, 1):
        # All implementations of one mode stay alive side by side; each round times one
        # step of each, so load changes on a shared machine hit them alike.
        children = []
        for impl in args.impls.split(","):
            try:
                children.append(_Child(impl, xla, args))
            except RuntimeError as e:
                print(json.dumps({"impl": impl, "xla": bool(xla), "skipped": str(e)}),
                      flush=True)
        for _ in range(args.steps):
            for child in children:
                child.step()
        for child in children:
            results[(child.impl, xla)] = line = child.finish(args)
            harness.emit(line)
    summary = {"summary": "pretraining_throughput", **SHAPE, "batch": args.batch,
               "seq": args.seq, "predictions": args.predictions, "precision": args.precision,
               **harness.machine()}
    for xla, tag in ((0, "no_xla"), (1, "xla")):
        ours = results.get(("keras_bert", xla))
        peers = [results[(p, xla)] for p in ("tf_models_official", "keras_hub")
                 if (p, xla) in results]
        if ours and peers:
            best = max(peers, key=lambda r: r["seq_per_s"])
            summary[f"keras_bert_seq_per_s_{tag}"] = ours["seq_per_s"]
            summary[f"fastest_peer_{tag}"] = best["impl"]
            summary[f"speedup_vs_fastest_peer_{tag}"] = round(
                ours["seq_per_s"] / best["seq_per_s"], 2)
            best_cpu = max(peers, key=lambda r: r["seq_per_cpu_s"])
            summary[f"cpu_time_speedup_vs_fastest_peer_{tag}"] = round(
                ours["seq_per_cpu_s"] / best_cpu["seq_per_cpu_s"], 2)
            summary[f"peak_rss_mb_{tag}"] = {r["impl"]: r["peak_rss_mb"] for r in [ours, *peers]}
            ceiling = results.get(("ceiling", xla))
            if ceiling:
                summary[f"matmul_ceiling_seq_per_s_{tag}"] = ceiling["seq_per_s"]
                summary[f"fraction_of_matmul_ceiling_{tag}"] = round(
                    ours["seq_per_s"] / ceiling["seq_per_s"], 2)
                summary[f"fastest_peer_fraction_of_matmul_ceiling_{tag}"] = round(
                    best["seq_per_s"] / ceiling["seq_per_s"], 2)
    harness.emit(summary)


if __name__ == "__main__":
    main()
