"""The recipe against keras-hub's defaults, and the command line against Python: MiniLM
fine-tuned 1 epoch (batch 32) on the first rows of a GLUE train file, scored on held-out
rows, a process per side and seed (same weights and rows). Sides: python
(`set_random_seed`, `from_preset(M, num_classes=2, sequence_length=L)`, `compile()`,
`fit`); keras_hub (`BertTextClassifier.from_preset` with its defaults, on MiniLM saved
with keras-hub's tanh GELU); command (`keras-bert finetune --task T --max_seq_length L
--num_train_epochs 1 --train_batch_size 32 --seed S` on a GLUE folder of the same rows).
SST-2: first 2,000 train rows, the last 872 held out, L 64; MRPC: first 1,000 train rows,
the 408 dev pairs, L 128. Summary: mean accuracies, fit-time ratio python/keras_hub (goal
<= 0.6), largest |command - python| gap (goal <= 0.005); `--export` adds `serve_text`
against `predict` and int8's label agreement (python side).

    python benchmarks/recipe.py --task sst2 --seeds 1,2,3   (--task mrpc --seeds 1,2)
    python benchmarks/recipe.py --task sst2 --seeds 1 --sides python --export
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import harness

TASKS = {"sst2": {"folder": "SST-2", "train": 2000, "length": 64},
         "mrpc": {"folder": "MRPC", "train": 1000, "length": 128}}


def _table(path: str) -> tuple[str, list[list[str]]]:
    with open(path, encoding="utf-8-sig") as f:
        header, *lines = f.read().splitlines()
    return header, [line.split("\t") for line in lines if line]


def rows(task: str, train: int):
    """(header, train rows, dev rows, (x, labels) of train, of dev) as GLUE rows."""
    folder = os.path.join(harness.GLUE, TASKS[task]["folder"])
    header, table = _table(os.path.join(folder, "train.tsv"))
    dev = table[-872:] if task == "sst2" else _table(os.path.join(folder, "dev.tsv"))[1]
    xy = ((lambda r: ([t for t, _ in r], [int(y) for _, y in r])) if task == "sst2" else
          (lambda r: (([x[3] for x in r], [x[4] for x in r]), [int(x[0]) for x in r])))
    return header, table[:train], dev, xy(table[:train]), xy(dev)


def python_side(args) -> dict:
    import keras

    import keras_bert

    _, _, _, (x, y), (dev_x, dev_y) = rows(args.task, args.train)
    keras.utils.set_random_seed(args.seed)
    started = time.monotonic()
    model = keras_bert.BertClassifier.from_preset(harness.minilm(), num_classes=2,
                                                  sequence_length=TASKS[args.task]["length"])
    model.compile()
    setup = time.monotonic() - started
    started = time.monotonic()
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    fit = time.monotonic() - started
    results = model.evaluate(dev_x, dev_y, batch_size=32, return_dict=True, verbose=0)
    row = {"fit_s": fit, "setup_s": setup, "accuracy": results["accuracy"],
           "peak_learning_rate": model._recipe_learning_rate}
    return {**row, **export_and_quantize(model, dev_x)} if args.export else row


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

    _, _, _, (x, y), (dev_x, dev_y) = rows(args.task, args.train)
    length = TASKS[args.task]["length"]
    path, preset = harness.minilm(), os.path.join(tempfile.mkdtemp(), "minilm")
    save_keras_hub_preset(load_encoder(path), preset, checkpoint_vocab(path),
                          sequence_length=length, approximate_gelu=True)
    keras.utils.set_random_seed(args.seed)
    started = time.monotonic()
    model = keras_hub.models.BertTextClassifier.from_preset(preset, num_classes=2)
    model.preprocessor.sequence_length = length
    setup = time.monotonic() - started
    x, dev_x = (tuple(x), tuple(dev_x)) if args.task == "mrpc" else (x, dev_x)
    started = time.monotonic()
    model.fit(x=x, y=y, batch_size=32, epochs=1, verbose=0)
    fit = time.monotonic() - started
    results = model.evaluate(x=dev_x, y=dev_y, batch_size=32, return_dict=True, verbose=0)
    accuracy = results.get("sparse_categorical_accuracy", results.get("accuracy"))
    return {"fit_s": fit, "setup_s": setup, "accuracy": accuracy}


def command_side(args) -> dict:
    header, train_rows, dev_rows, _, _ = rows(args.task, args.train)
    work = tempfile.mkdtemp()
    data = os.path.join(work, TASKS[args.task]["folder"])
    os.makedirs(data)
    for name, table in (("train.tsv", train_rows), ("dev.tsv", dev_rows)):
        with open(os.path.join(data, name), "w", encoding="utf-8") as f:
            f.write("".join("\t".join(r) + "\n" for r in [[header], *table]))
    out = os.path.join(work, "run")
    result = harness.keras_bert(
        "finetune", "--task", args.task, "--data_dir", data, "--output_dir", out,
        "--checkpoint", harness.minilm(), "--max_seq_length", str(TASKS[args.task]["length"]),
        "--num_train_epochs", "1", "--train_batch_size", "32", "--seed", str(args.seed),
        "--quiet")
    if result["exit_code"]:
        raise SystemExit(f"keras-bert finetune failed: {result.get('error')}")
    with open(os.path.join(out, "metrics.json"), encoding="utf-8") as f:
        metrics = json.load(f)
    return {"fit_s": metrics["fit_seconds"], "accuracy": metrics["accuracy"],
            "process_s": result["process_seconds"]}


SIDES = {"python": python_side, "keras_hub": keras_hub_side, "command": command_side}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="sst2", choices=sorted(TASKS))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--train", type=int, default=None)
    parser.add_argument("--sides", default="python,keras_hub,command")
    parser.add_argument("--export", action="store_true",
                        help="python side (SST-2): also export and quantize (int8) the model")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.train = args.train or TASKS[args.task]["train"]
    if args.child:
        print("RESULT " + json.dumps(SIDES[args.child](args)), flush=True)
        return
    results: dict[str, dict[int, dict]] = {}
    for seed in [int(s) for s in args.seeds.split(",")]:
        for side in args.sides.split(","):
            child = harness.run_row([sys.executable, __file__, "--child", side, "--task",
                                     args.task, "--seed", str(seed), "--train",
                                     str(args.train), *(["--export"] if args.export else [])],
                                    env={"TF_CPP_MIN_LOG_LEVEL": "3"})
            line = next((x for x in child["stdout"].splitlines() if x.startswith("RESULT ")),
                        None)
            row = ({"error": child.get("error") or child["stdout"][-2000:]} if line is None
                   else json.loads(line[7:]))
            if line is not None:
                results.setdefault(side, {})[seed] = row
            harness.emit({"task": args.task, "side": side, "seed": seed, **row,
                          "train_rows": args.train, "batch_size": 32, "epochs": 1,
                          "sequence_length": TASKS[args.task]["length"], "cpu": harness.cpu()})
    summary = {"summary": True, "task": args.task, "cpu": harness.cpu(), **{
        f"{side}_mean_accuracy": round(statistics.mean(r["accuracy"] for r in runs.values()), 4)
        for side, runs in results.items()}}
    python, hub, command = (results.get(s, {}) for s in ("python", "keras_hub", "command"))
    if python and hub:
        summary["fit_time_ratio_python_to_keras_hub"] = round(
            statistics.mean(r["fit_s"] for r in python.values())
            / statistics.mean(r["fit_s"] for r in hub.values()), 3)
    common = sorted(set(python) & set(command))
    if common:
        summary["max_abs_accuracy_gap_command_python"] = round(max(
            abs(python[s]["accuracy"] - command[s]["accuracy"]) for s in common), 4)
    harness.emit(summary)


if __name__ == "__main__":
    main()
