"""The Keras face against keras-hub, each side in its own process, same MiniLM weights and
rows: `from_preset`, `compile()`, `fit` on SST-2 sentences as Python lists (batch 32, one
epoch, length 64), `evaluate` on held-out rows; a last line holds the fit-time ratio.

    python benchmarks/keras_face.py [--train 2000] [--dev 872] [--sides keras_bert,keras_hub,keras_bert_jax]

keras-hub's BERT computes the tanh GELU, so its preset is MiniLM saved with
`approximate_gelu=True`; keras_bert keeps MiniLM's exact GELU. Data: the first `--train`
rows of SST-2's train.tsv train, its last `--dev` rows are held out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import harness

SST2 = os.path.join(harness.GLUE, "SST-2", "train.tsv")


def rows(path: str, train: int, dev: int):
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n").split("\t") for line in f][1:]
    pairs = [(text, int(label)) for text, label in lines]
    return pairs[:train], pairs[-dev:]


def keras_bert_side(args) -> dict:
    import keras_bert

    train, dev = rows(args.data, args.train, args.dev)
    started = time.monotonic()
    model = keras_bert.BertClassifier.from_preset(harness.minilm(),
                                                  num_classes=2, sequence_length=64)
    model.compile()
    setup = time.monotonic() - started
    started = time.monotonic()
    model.fit([t for t, _ in train], [y for _, y in train], batch_size=32, epochs=1,
              seed=args.seed, verbose=0)
    fit = time.monotonic() - started
    texts = [t for t, _ in dev]
    results = model.evaluate(texts, [y for _, y in dev], batch_size=32, return_dict=True,
                             verbose=0)
    row = {"fit_s": fit, "setup_s": setup, "dev_accuracy": results["accuracy"],
           "learning_rate_peak": model._recipe_learning_rate}
    import keras

    if keras.backend.backend() == "tensorflow":
        row.update(export_and_quantize(model, texts))
    return row


def export_and_quantize(model, texts) -> dict:
    """The exported SavedModel's `serve_text` against `predict` on the dev texts, then
    int8 quantization: how many dev labels stay those of the float model."""
    import warnings

    import numpy as np
    import tensorflow as tf

    logits = model.predict(texts, batch_size=32, verbose=0)
    version = model.export(os.path.join(tempfile.mkdtemp(), "sst2"), warmup=False)
    serve = tf.saved_model.load(version).signatures["serve_text"]
    served = np.concatenate([serve(text=tf.constant(texts[i:i + 64]))["logits"].numpy()
                             for i in range(0, len(texts), 64)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LayerNorm and dropout have nothing to quantize
        model.quantize("int8")
    quantized = model.predict(texts, batch_size=32, verbose=0)
    return {"serve_text_max_abs_diff": float(np.abs(served - logits).max()),
            "int8_label_agreement": float(np.mean(quantized.argmax(-1) == logits.argmax(-1)))}


def keras_hub_side(args) -> dict:
    import keras
    import keras_hub

    from keras_bert.checkpoints import checkpoint_vocab, load_encoder, save_keras_hub_preset

    train, dev = rows(args.data, args.train, args.dev)
    path = harness.minilm()
    preset = os.path.join(tempfile.mkdtemp(), "minilm")
    save_keras_hub_preset(load_encoder(path), preset, checkpoint_vocab(path),
                          sequence_length=64, approximate_gelu=True)
    keras.utils.set_random_seed(args.seed)
    started = time.monotonic()
    model = keras_hub.models.BertTextClassifier.from_preset(preset, num_classes=2)
    model.preprocessor.sequence_length = 64
    model.compile(optimizer=keras.optimizers.AdamW(5e-5), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    setup = time.monotonic() - started
    started = time.monotonic()
    model.fit(x=[t for t, _ in train], y=[y for _, y in train], batch_size=32, epochs=1,
              verbose=0)
    fit = time.monotonic() - started
    results = model.evaluate(x=[t for t, _ in dev], y=[y for _, y in dev], batch_size=32,
                             return_dict=True, verbose=0)
    return {"fit_s": fit, "setup_s": setup, "dev_accuracy": results["accuracy"]}


SIDES = {"keras_bert": ("tensorflow", keras_bert_side),
         "keras_bert_jax": ("jax", keras_bert_side),
         "keras_hub": ("tensorflow", keras_hub_side)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--dev", type=int, default=872)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", default=SST2)
    parser.add_argument("--sides", default="keras_bert,keras_hub,keras_bert_jax")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = SIDES[args.child][1](args)
        print("RESULT " + json.dumps(result), flush=True)
        return
    results = {}
    for side in args.sides.split(","):
        backend = SIDES[side][0]
        child = harness.run_row([sys.executable, __file__, "--child", side, "--train",
                                 str(args.train), "--dev", str(args.dev), "--seed",
                                 str(args.seed), "--data", args.data],
                                env={"KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"})
        line = next((x for x in child["stdout"].splitlines() if x.startswith("RESULT ")), None)
        row = ({"side": side, "error": child.get("error")} if line is None
               else {"side": side, "backend": backend, **json.loads(line[7:])})
        if line is not None:
            results[side] = row
        harness.emit({**row, "train_rows": args.train, "dev_rows": args.dev, "batch_size": 32,
                      "epochs": 1, "sequence_length": 64, "cpu": harness.cpu()})
    if "keras_bert" in results and "keras_hub" in results:
        harness.emit({"summary": True, "goal": "<= 0.6", "cpu": harness.cpu(),
                      "fit_time_ratio_keras_bert_to_keras_hub": round(
                          results["keras_bert"]["fit_s"] / results["keras_hub"]["fit_s"], 3)})


if __name__ == "__main__":
    main()
