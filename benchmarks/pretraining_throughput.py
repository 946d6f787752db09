"""Training-step (or, with `--forward`, encoder forward-pass) throughput on the CPU next to
the peers and the machine's matmul ceiling, in one run.

    python benchmarks/pretraining_throughput.py [--forward] [--precision mixed_bfloat16]

L6/H384/A12/I1536, batch 32, seq 128. The step (forward, backward, AdamW with clipping,
20 predictions): keras_bert's `BertPretrainer` (MLM + NSP) compiled as `keras-bert
pretrain` compiles it, tf-models-official's `BertPretrainerV2` (MLM + NSP), keras-hub's
`BertMaskedLM` (MLM only), in graph and XLA modes. `--forward`: keras_bert's encoder with
exact GELU (its default, as Hugging Face) and tanh GELU (as keras-hub's `BertBackbone`,
the like-for-like row), keras-hub and Hugging Face's `BertModel` on torch (eager only),
in eager, graph (`tf.function`) and XLA modes; under bfloat16 keras_bert's float32
encoder runs beside it. "ceiling" runs exactly the matmuls. Each implementation is a
child process (its own peak RSS and CPU time); the children of one mode are timed
round-robin, a call each per round; rows give the median call.
"""

from __future__ import annotations

import argparse
import importlib
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
L, H, A, INTER, VOCAB = SHAPE.values()
STEP_IMPLS = ("keras_bert", "tf_models_official", "keras_hub", "ceiling")
FORWARD_IMPLS = ("ceiling", "keras_bert", "keras_bert_gelu_tanh", "keras_hub", "hf_torch")
EAGER_ONLY = ("hf_torch",)


def _batch(batch, seq, predictions):
    import numpy as np

    rng, predictions = np.random.default_rng(0), min(predictions, seq - 1)
    ids = rng.integers(1000, VOCAB, size=(batch, seq)).astype("int32")
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq), predictions, replace=False)
                                  for _ in range(batch)]), axis=1).astype("int32")
    return {"ids": ids, "mask": np.ones_like(ids), "types": np.zeros_like(ids),
            "positions": positions,
            "labels": rng.integers(1000, VOCAB, size=(batch, predictions)).astype("int32"),
            "weights": np.ones((batch, predictions), "float32"),
            "nsp": rng.integers(0, 2, size=(batch, 1)).astype("int32")}


def _forward(impl, b, mode, precision):
    """One forward pass of keras_bert's encoder, keras-hub's or Hugging Face's."""
    import tensorflow as tf

    ids, mask, types = (tf.constant(b[k]) for k in ("ids", "mask", "types"))
    if impl == "hf_torch":  # optional: pip install torch transformers
        import torch
        import transformers

        model = transformers.BertModel(transformers.BertConfig(
            vocab_size=VOCAB, hidden_size=H, num_hidden_layers=L, num_attention_heads=A,
            intermediate_size=INTER, hidden_act="gelu"), add_pooling_layer=True).eval()
        tensors = [torch.from_numpy(b[k].astype("int64")) for k in ("ids", "mask", "types")]
        bf16 = precision == "mixed_bfloat16"

        def run_torch():
            with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=bf16):
                return model(input_ids=tensors[0], attention_mask=tensors[1],
                             token_type_ids=tensors[2]).last_hidden_state.float().numpy()

        return run_torch
    if impl == "keras_hub":
        model = _hub_backbone(dtype=precision)

        def call(i, m, t):
            return model({"token_ids": i, "padding_mask": m, "segment_ids": t},
                         training=False)["sequence_output"]
    else:
        from keras_bert import BertConfig, BertEncoder

        act = "gelu_tanh" if impl == "keras_bert_gelu_tanh" else "gelu"
        model = BertEncoder(BertConfig(**SHAPE, hidden_act=act), dtype=precision)

        def call(i, m, t):
            return model({"input_word_ids": i, "input_mask": m, "input_type_ids": t},
                         training=False)["sequence_output"]
    fn = call if mode == "eager" else tf.function(call, jit_compile=mode == "xla")
    return lambda: fn(ids, mask, types).numpy()


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


def _hub_backbone(**kwargs):
    import keras_hub

    return keras_hub.models.BertBackbone(
        vocabulary_size=VOCAB, num_layers=L, num_heads=A, hidden_dim=H,
        intermediate_dim=INTER, max_sequence_length=512, **kwargs)


def _keras_hub(b, xla):
    import keras
    import keras_hub

    model = keras_hub.models.BertMaskedLM(backbone=_hub_backbone(), preprocessor=None)
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
        vocab_size=VOCAB, hidden_size=H, num_layers=L, num_attention_heads=A,
        inner_dim=INTER, type_vocab_size=2, max_sequence_length=512)
    model = models.BertPretrainerV2(encoder_network=encoder, classification_heads=[
        layers.ClassificationHead(inner_dim=H, num_classes=2, name="next_sentence")])
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


def _ceiling(b, mode, forward):
    """The matrix multiplications and nothing else: the encoder's (distinct Q/K/V/output,
    attention scores and context, feed-forward) and, for the step, the tied MLM decoder's
    at the masked positions with the gradients of every weight and activation. No softmax,
    LayerNorm, GELU, dropout, loss or optimizer: the seq/s if everything else were free.
    Under mixed_bfloat16 the matmuls run in bfloat16 (the step's on float32 variables, as
    Keras does). Distinct weights per projection and layer: with one shared matrix,
    grappler's common-subexpression elimination merges the Q, K and V products."""
    import keras
    import tensorflow as tf

    dtype = keras.mixed_precision.global_policy().compute_dtype
    batch, seq = b["ids"].shape
    d, rows_masked = H // A, b["positions"].size
    make = (lambda t: tf.cast(t, dtype)) if forward else tf.Variable
    shapes = [("q", (H, H)), ("k", (H, H)), ("v", (H, H)), ("o", (H, H)),
              ("w1", (H, INTER)), ("w2", (INTER, H))]
    weights = [{k: make(tf.random.normal(s) * 0.05) for k, s in shapes} for _ in range(L)]
    table = None if forward else tf.Variable(tf.random.normal((VOCAB, H)) * 0.05)
    x0 = tf.random.normal((batch * seq, H))

    def encoder():
        x = tf.cast(x0, dtype)
        for w in weights:
            w = {k: tf.cast(v, dtype) for k, v in w.items()}
            q, k, v = (tf.reshape(tf.matmul(x, w[n]), (batch * A, seq, d)) for n in "qkv")
            c = tf.matmul(tf.matmul(q, k, transpose_b=True), v)
            x = tf.matmul(tf.reshape(c, (batch * seq, H)), w["o"])
            x = tf.matmul(tf.matmul(x, w["w1"]), w["w2"])
        return x

    def step():
        variables = [x0, table] + [v for w in weights for v in w.values()]
        with tf.GradientTape() as tape:
            tape.watch(x0)
            logits = tf.matmul(encoder()[:rows_masked], tf.cast(table, dtype),
                               transpose_b=True)
            loss = tf.reduce_sum(tf.cast(logits, tf.float32))
        return tf.add_n([tf.reduce_sum(g) for g in tape.gradient(loss, variables)])

    fn = encoder if forward else step
    fn = fn if mode == "eager" else tf.function(fn, jit_compile=mode == "xla")
    return lambda: fn().numpy()


def serve(args):
    """Child mode: builds one implementation, runs the warmup calls, prints "ready", then
    one timed call per "step" line on stdin (its wall and CPU seconds), peak RSS on "stats"."""
    impl, mode = args.impl, args.mode
    precision = "float32" if impl == "keras_bert_float32" else args.precision
    keras = importlib.import_module("tf_keras" if impl == "tf_models_official" else "keras")
    keras.mixed_precision.set_global_policy(precision)
    b = _batch(args.batch, args.seq, args.predictions)
    if impl == "ceiling":
        call = _ceiling(b, mode, args.forward)
    elif args.forward:
        call = _forward(impl, b, mode, precision)
    else:
        call = {"keras_bert": _keras_bert, "keras_hub": _keras_hub,
                "tf_models_official": _tf_models_official}[impl](b, mode == "xla")
    start = time.perf_counter()
    for _ in range(args.warmup):
        call()
    harness.emit({"ready": True, "warmup_s": round(time.perf_counter() - start, 1)})
    for command in sys.stdin:
        if command.strip() == "step":
            t, c = time.perf_counter(), time.process_time()
            call()
            harness.emit({"s": time.perf_counter() - t, "cpu_s": time.process_time() - c})
        elif command.strip() == "stats":
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            harness.emit({"peak_rss_mb": round(rss, 1)})
            return


class _Child:
    """One implementation in its own process, driven line by line."""

    def __init__(self, impl, mode, args):
        self.impl, self.mode, self.calls = impl, mode, []
        # stderr goes to a file: an undrained pipe would block a chatty child.
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--impl", impl, "--mode", mode, "--batch",
             str(args.batch), "--seq", str(args.seq), "--predictions", str(args.predictions),
             "--warmup", str(args.warmup), "--precision", args.precision]
            + ["--forward"] * args.forward,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.ready = self._read()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                return json.loads(line)
        self.proc.wait()
        self.stderr.seek(0)
        raise RuntimeError(self.stderr.read().strip()[-400:])

    def send(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._read()

    def step(self):
        self.calls.append(self.send("step"))

    def finish(self, args):
        rss = self.send("stats")["peak_rss_mb"]
        self.proc.wait()
        times = [c["s"] for c in self.calls]
        seconds = sorted(times)[len(times) // 2]
        cpu_seconds = sorted(c["cpu_s"] for c in self.calls)[len(times) // 2]
        row = {"impl": self.impl, "mode": self.mode,
               "precision": "float32" if self.impl == "keras_bert_float32" else args.precision,
               "batch": args.batch, "seq": args.seq,
               "seq_per_s": round(args.batch / seconds, 2), "s_per_call": round(seconds, 4),
               "seq_per_cpu_s": round(args.batch / cpu_seconds, 2),
               "times_s": [round(t, 4) for t in times],
               "warmup_s": self.ready["warmup_s"], "peak_rss_mb": rss}
        if not args.forward:
            row.update(predictions=args.predictions, objective={
                "keras_hub": "mlm", "ceiling": "matmuls only"}.get(self.impl, "mlm+nsp"))
        return row


def summarize(results, args, modes):
    """keras_bert's rows against each peer, the fastest peer and the matmul ceiling."""
    ours = ("keras_bert", "keras_bert_gelu_tanh") if args.forward else ("keras_bert",)
    peer_names = ("keras_hub", "hf_torch") if args.forward else ("tf_models_official",
                                                                 "keras_hub")
    summary = {"summary": "encoder_forward" if args.forward else "pretraining_step", **SHAPE,
               "batch": args.batch, "seq": args.seq, "precision": args.precision,
               **harness.machine()}
    for mode in modes:
        # A peer that runs eager only (torch) is compared in every mode at its eager rate.
        peers = [r for r in (results.get((p, mode)) or results.get((p, "eager"))
                             for p in peer_names) if r]
        ceiling = results.get(("ceiling", mode))
        summary[f"peak_rss_mb_{mode}"] = {
            i: r["peak_rss_mb"] for (i, m), r in results.items() if m == mode}
        if peers:
            best = max(peers, key=lambda r: r["seq_per_s"])
            summary[f"fastest_peer_{mode}"] = f"{best['impl']} ({best['mode']})"
            if ceiling:
                summary[f"fastest_peer_fraction_of_matmul_ceiling_{mode}"] = round(
                    best["seq_per_s"] / ceiling["seq_per_s"], 2)
        for impl in ours:
            row = results.get((impl, mode))
            if not row:
                continue
            summary[f"{impl}_seq_per_s_{mode}"] = row["seq_per_s"]
            others = peers + [r for r in [results.get(("keras_bert_float32", mode))] if r]
            for other in others:
                summary[f"{impl}_vs_{other['impl']}_{mode}"] = round(
                    row["seq_per_s"] / other["seq_per_s"], 2)
            if peers:
                summary[f"{impl}_vs_fastest_peer_{mode}"] = round(
                    row["seq_per_s"] / best["seq_per_s"], 2)
                summary[f"{impl}_cpu_time_vs_fastest_peer_{mode}"] = round(
                    row["seq_per_cpu_s"] / max(r["seq_per_cpu_s"] for r in peers), 2)
            if ceiling:
                summary[f"{impl}_fraction_of_matmul_ceiling_{mode}"] = round(
                    row["seq_per_s"] / ceiling["seq_per_s"], 2)
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forward", action="store_true",
                        help="the encoder's forward pass instead of the training step")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--predictions", type=int, default=20)
    parser.add_argument("--steps", type=int, help="timed rounds (default: 6, --forward 10)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--precision", default="float32", choices=PRECISIONS)
    parser.add_argument("--impls", help="comma-separated; default: all of "
                        f"{','.join(STEP_IMPLS)} (--forward: {','.join(FORWARD_IMPLS)})")
    parser.add_argument("--modes", help="default: graph,xla (--forward: eager,graph,xla)")
    parser.add_argument("--impl", help=argparse.SUPPRESS)  # child mode
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.impl:
        return serve(args)
    impls = (args.impls.split(",") if args.impls
             else list(FORWARD_IMPLS if args.forward else STEP_IMPLS))
    if args.forward and args.precision != "float32" and "keras_bert" in impls:
        impls.insert(impls.index("keras_bert") + 1, "keras_bert_float32")
    modes = (args.modes or ("eager,graph,xla" if args.forward else "graph,xla")).split(",")
    results = {}
    for mode in modes:
        # The children of one mode stay alive side by side; each round times one call of
        # each, so load changes on a shared machine hit them alike.
        children = []
        for impl in impls:
            if mode != "eager" and impl in EAGER_ONLY:
                continue
            try:
                children.append(_Child(impl, mode, args))
            except RuntimeError as e:
                harness.emit({"impl": impl, "mode": mode, "skipped": str(e)})
        for _ in range(args.steps or (10 if args.forward else 6)):
            for child in children:
                child.step()
        for child in children:
            results[(child.impl, mode)] = line = child.finish(args)
            harness.emit(line)
    harness.emit(summarize(results, args, modes))


if __name__ == "__main__":
    main()
