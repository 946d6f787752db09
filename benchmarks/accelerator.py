"""BERT pretraining throughput on one accelerator with JAX: keras_bert next to keras-hub,
no TensorFlow in the process (tests/model/test_backends.py runs `--smoke` without it).

    python benchmarks/accelerator.py            # on one H100/H200: about 5 minutes
    python benchmarks/accelerator.py --smoke    # a tiny config on CPU, in seconds

A row is one pretraining step (forward, backward, AdamW with clipping) in mixed_bfloat16
under `jax.jit` (stateless calls, donated state) on synthetic batches: BERT-base at
sequence 128 and 512, BERT-large at 128. keras_bert: `BertPretrainer` (MLM + NSP) as
`keras-bert pretrain` trains it; keras_hub (when it imports): `BertBackbone` +
`BertMaskedLM` with the same loss and optimizer. The median step over `--steps` after
`--warmup`, each waited on; sequences/s and model FLOP utilisation against the device's
dense bfloat16 peak (`PEAK_BF16_TFLOPS`; matmul FLOPs, 3x forward), beside NVIDIA's
DeepLearningExamples TF2 BERT-large A100 figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # runpy leaves it out
from harness import emit  # noqa: E402  (TensorFlow-free)

os.environ.setdefault("KERAS_BACKEND", "jax")

SIZES = {
    "bert_base": {"num_layers": 12, "hidden_size": 768, "num_heads": 12,
                  "intermediate_size": 3072},
    "bert_large": {"num_layers": 24, "hidden_size": 1024, "num_heads": 16,
                   "intermediate_size": 4096},
    "smoke": {"num_layers": 2, "hidden_size": 64, "num_heads": 4, "intermediate_size": 128},
}
VOCAB = 30522
# (size, sequence, masked-LM predictions, batch) of each row.
ROWS = (("bert_base", 128, 20, 256), ("bert_base", 512, 80, 64), ("bert_large", 128, 20, 256))
SMOKE_ROWS = (("smoke", 32, 5, 4),)
SMOKE_VOCAB = 512

# Dense (no sparsity) bfloat16 tensor-core peaks in TFLOP/s, by a substring of the
# device name (the first match wins; "H100" without "PCIe" is the SXM part).
PEAK_BF16_TFLOPS = (("H200", 989.0), ("H100 PCIe", 756.0), ("H100", 989.0), ("A100", 312.0))

# NVIDIA DeepLearningExamples, TensorFlow2/LanguageModeling/BERT: pretraining
# throughput of BERT-large on one A100 80GB, mixed precision.
ANCHORS = (
    {"anchor": "NVIDIA DeepLearningExamples TF2 BERT-large pretraining, 1x A100 80GB",
     "precision": "mixed", "seq": 128, "batch": 312, "seq_per_s": 485.6},
    {"anchor": "NVIDIA DeepLearningExamples TF2 BERT-large pretraining, 1x A100 80GB",
     "precision": "mixed", "seq": 512, "seq_per_s": 96.5},
)


def peak_tflops(device_name: str) -> float | None:
    """The dense bfloat16 peak of a device by its name, or None when it is not known.

    Example:

    >>> peak_tflops("NVIDIA H100 80GB HBM3"), peak_tflops("NVIDIA H200"), peak_tflops("cpu")
    (989.0, 989.0, None)
    """
    return next((peak for key, peak in PEAK_BF16_TFLOPS if key in device_name), None)


def step_flops(size: dict, batch: int, seq: int, predictions: int, vocab: int,
               nsp: bool = True) -> float:
    """Model FLOPs of one training step: 3x the forward matmuls (2 FLOPs a multiply-add).

    Example:

    >>> round(step_flops(SIZES["bert_base"], 1, 128, 20, 30522) / 1e9, 1)  # per sequence
    69.9
    """
    h, i, n = size["hidden_size"], size["intermediate_size"], size["num_layers"]
    per_token = n * (4 * h * h + 2 * h * i + 2 * seq * h)   # projections, FFN, attention
    per_prediction = h * h + h * vocab                      # MLM transform and decoder
    per_sequence = h * h + (2 * h if nsp else 0)            # pooler and NSP
    forward = 2 * batch * (seq * per_token + predictions * per_prediction + per_sequence)
    return 3.0 * forward


def synthetic_batch(batch: int, seq: int, predictions: int, vocab: int, seed: int = 0):
    """Random ids with a tenth of each sequence padded, distinct sorted MLM positions,
    MLM labels and weights, NSP labels (numpy arrays)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000 if vocab > 2000 else 5, vocab, size=(batch, seq)).astype("int32")
    real = seq - seq // 10
    mask = (np.arange(seq)[None, :] < real).astype("int32").repeat(batch, axis=0)
    positions = np.sort(np.stack([rng.choice(np.arange(1, real), predictions, replace=False)
                                  for _ in range(batch)]), axis=1).astype("int32")
    return {"ids": ids * mask, "mask": mask,
            "types": ((np.arange(seq)[None, :] >= real // 2) * mask).astype("int32"),
            "positions": positions,
            "labels": rng.integers(5, vocab, size=(batch, predictions)).astype("int32"),
            "weights": np.ones((batch, predictions), "float32"),
            "nsp": rng.integers(0, 2, size=(batch,)).astype("int32")}


def _optimizer():
    import keras

    from keras_bert.model.models import WEIGHT_DECAY_EXCLUDED

    optimizer = keras.optimizers.AdamW(learning_rate=1e-4, weight_decay=0.01, epsilon=1e-6,
                                       global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=list(WEIGHT_DECAY_EXCLUDED))
    return optimizer


def keras_bert_model(size: dict, seq: int, vocab: int, b: dict):
    """keras_bert's pretrainer, its inputs and its loss(outputs)."""
    import keras

    from keras_bert.model.config import BertConfig
    from keras_bert.model.encoder import BertEncoder
    from keras_bert.model.losses import MaskedLMLoss
    from keras_bert.model.models import BertPretrainer

    config = BertConfig(vocab_size=vocab, max_position_embeddings=max(seq, 512), **size)
    model = BertPretrainer(BertEncoder(config))
    x = {"input_word_ids": b["ids"], "input_mask": b["mask"], "input_type_ids": b["types"],
         "masked_lm_positions": b["positions"]}
    mlm = MaskedLMLoss()

    def loss(out, b):
        nsp = keras.losses.sparse_categorical_crossentropy(
            b["nsp"], out["next_sentence"], from_logits=True)
        return (mlm(b["labels"], out["masked_lm"], sample_weight=b["weights"])
                + keras.ops.mean(nsp))

    return model, x, loss


def keras_hub_model(size: dict, seq: int, vocab: int, b: dict):
    """keras-hub's `BertBackbone` + `BertMaskedLM` head on the same configuration."""
    import keras_hub

    from keras_bert.model.losses import MaskedLMLoss

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=vocab, num_layers=size["num_layers"], num_heads=size["num_heads"],
        hidden_dim=size["hidden_size"], intermediate_dim=size["intermediate_size"],
        max_sequence_length=max(seq, 512))
    model = keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=None)
    x = {"token_ids": b["ids"], "padding_mask": b["mask"].astype(bool),
         "segment_ids": b["types"], "mask_positions": b["positions"]}
    mlm = MaskedLMLoss()
    return model, x, lambda out, b: mlm(b["labels"], out, sample_weight=b["weights"])


def jitted_step(model, loss_fn, optimizer):
    """`step(state, x, b) -> (loss, state)`: one jitted training step on the state
    `(trainable, non_trainable, optimizer variables)`, which it donates."""
    import jax

    def compute_loss(trainable, non_trainable, x, b):
        out, non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
        return loss_fn(out, b), non_trainable

    grad_fn = jax.value_and_grad(compute_loss, has_aux=True)

    def step(state, x, b):
        trainable, non_trainable, optimizer_variables = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable, x, b)
        trainable, optimizer_variables = optimizer.stateless_apply(
            optimizer_variables, grads, trainable)
        return loss, (trainable, non_trainable, optimizer_variables)

    return jax.jit(step, donate_argnums=0)


def time_row(impl: str, size_name: str, seq: int, predictions: int, batch: int,
             args) -> dict:
    """Builds `impl`'s model for one row, runs warmup then timed steps; its JSON row."""
    import jax
    import numpy as np

    vocab = SMOKE_VOCAB if args.smoke else VOCAB
    size = SIZES[size_name]
    b = synthetic_batch(batch, seq, predictions, vocab)
    build = keras_bert_model if impl == "keras_bert" else keras_hub_model
    model, x, loss_fn = build(size, seq, vocab, b)
    optimizer = _optimizer()
    optimizer.build(model.trainable_variables)
    state = ([v.value for v in model.trainable_variables],
             [v.value for v in model.non_trainable_variables],
             [v.value for v in optimizer.variables])
    step = jitted_step(model, loss_fn, optimizer)
    x, b = jax.device_put(x), jax.device_put(b)
    start = time.perf_counter()
    times, loss = [], None
    for i in range(args.warmup + args.steps):
        t = time.perf_counter()
        loss, state = step(state, x, b)
        loss.block_until_ready()
        if i >= args.warmup:
            times.append(time.perf_counter() - t)
        if i == 0:
            compile_s = time.perf_counter() - start
    step_s = statistics.median(times)
    flops = step_flops(size, batch, seq, predictions, vocab, nsp=impl == "keras_bert")
    device = jax.devices()[0]
    name = getattr(device, "device_kind", str(device))
    peak = peak_tflops(name) if device.platform != "cpu" else None
    tflops = flops / step_s / 1e12
    return {"impl": impl, "model": size_name, "seq": seq, "predictions": predictions,
            "batch": batch, "precision": "mixed_bfloat16", "seq_per_s": round(batch / step_s, 2),
            "step_s": round(step_s, 5), "model_tflops_per_s": round(tflops, 3),
            "mfu": round(tflops / peak, 4) if peak else None, "peak_bf16_tflops": peak,
            "first_step_s": round(compile_s, 2), "steps": args.steps,
            "final_loss": round(float(np.asarray(loss)), 4), "device": name,
            "jax": jax.__version__}


def _keras_hub_available() -> str | None:
    """None when keras_hub imports, else why not."""
    try:
        import keras_hub  # noqa: F401
    except Exception as e:  # noqa: BLE001  (any failure to import skips its rows)
        return f"keras_hub does not import: {type(e).__name__}: {e}"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny config (L2/H64, seq 32, batch 4, vocab 512) in seconds")
    parser.add_argument("--steps", type=int, default=None, help="timed steps (default 20; 3 "
                        "with --smoke)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed steps first "
                        "(default 3; 1 with --smoke)")
    parser.add_argument("--impls", default="keras_bert,keras_hub")
    parser.add_argument("--budget_s", type=float, default=330.0,
                        help="rows that would start after this many seconds are skipped")
    args = parser.parse_args(argv)
    args.steps = args.steps or (3 if args.smoke else 20)
    args.warmup = args.warmup or (1 if args.smoke else 3)
    import keras

    if keras.backend.backend() != "jax":
        sys.exit(f"accelerator.py runs on the JAX backend (KERAS_BACKEND=jax), not "
                 f"{keras.backend.backend()}.")
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    impls = args.impls.split(",")
    if "keras_hub" in impls:
        why = _keras_hub_available()
        if why:
            emit({"impl": "keras_hub", "skipped": why})
            impls.remove("keras_hub")
    start = time.perf_counter()
    for size_name, seq, predictions, batch in (SMOKE_ROWS if args.smoke else ROWS):
        for impl in impls:
            row = {"impl": impl, "model": size_name, "seq": seq, "batch": batch}
            if time.perf_counter() - start > args.budget_s:
                emit({**row, "skipped": f"over --budget_s {args.budget_s}"})
                continue
            try:
                row = time_row(impl, size_name, seq, predictions, batch, args)
            except Exception as e:  # noqa: BLE001  (an out-of-memory row must not end the run)
                row.update(error=f"{type(e).__name__}: {str(e)[:300]}")
            emit(row)
            keras.backend.clear_session()
    for anchor in ANCHORS:
        emit(anchor)


if __name__ == "__main__":
    main()
