"""Training curves: the loss and metric curves a pretraining or fine-tuning run wrote.

`read_training_curves` reads pretraining's TensorBoard event files (`logs/<split>/`) and
`train_log.jsonl`, or fine-tuning's per-epoch history in `finetune_config.json` (train
loss, dev metrics), into `TrainingCurves`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os

from keras_bert.core.errors import DataError, InputNotFoundError
from keras_bert.core.run_files import FINETUNE_CONFIG, LOGS, TRAIN_LOG

# Throughput is not a learning curve; these logged scalars are left out of the plots.
_NOT_CURVES = ("steps_per_second", "examples_per_second")


@dataclasses.dataclass
class TrainingCurves:
    """The curves of one run: `curves[metric][line] = (x, y)` (lists of equal length),
    `line` naming the split ("train", a dev split, a TensorBoard log directory), with
    " (restart k)" (k = 1, 2, ...) when fine-tuning ran several restarts.

    Attributes:
        run_dir: the run directory read.
        kind: "pretraining" or "fine-tuning".
        x_label: "step" or "epoch".
        curves: metric -> line -> (x values, y values).
        sources: the files the curves came from.
    """

    run_dir: str
    kind: str
    x_label: str
    curves: dict
    sources: list[str]

    def add(self, metric: str, line: str, x, y) -> None:
        xs, ys = self.curves.setdefault(metric, {}).setdefault(line, ([], []))
        xs.append(x)
        ys.append(float(y))

    @property
    def metrics(self) -> list[str]:
        """The metrics in panel order: the total loss, other losses, other metrics, the
        learning rate."""
        def rank(name):
            return (0 if name in ("loss", "epoch_loss") else 1 if "loss" in name
                    else 3 if "learning_rate" in name else 2, name)

        return sorted(self.curves, key=rank)


def _no_logs(run_dir: str, why: str) -> InputNotFoundError:
    return InputNotFoundError(
        f"run directory {run_dir!r} {why}: expected {LOGS}/ with TensorBoard event "
        f"files or {TRAIN_LOG} (keras-bert pretrain) or {FINETUNE_CONFIG} with a history "
        "(keras-bert finetune).")


def read_training_curves(run_dir: str) -> TrainingCurves:
    """The loss and metric curves a pretraining or fine-tuning run directory holds.

    Fine-tuning (`finetune_config.json`): per epoch, the training loss ("train") and
    every dev split's metrics (one line per split), from its `history`.
    Pretraining: per logged step, every scalar of the TensorBoard event files under
    `logs/` (one line per subdirectory: `train`, and any evaluation split), or, when
    there are none, of `train_log.jsonl` ("train"). A step logged twice (a run resumed
    from an earlier checkpoint) keeps its latest value. Throughput is left out.

    Example:

    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> with open(os.path.join(run, "train_log.jsonl"), "w") as f:
    ...     _ = f.write('{"step": 2, "loss": 9.5, "steps_per_second": 3.0}\\n'
    ...                 '{"step": 4, "loss": 8.0, "steps_per_second": 3.1}\\n')
    >>> read_training_curves(run).curves
    {'loss': {'train': ([2, 4], [9.5, 8.0])}}
    """
    run_dir = os.fspath(run_dir)
    if not os.path.isdir(run_dir):
        if os.path.exists(run_dir):
            raise InputNotFoundError(f"run directory {run_dir!r} is a file; give the "
                                     "output directory of keras-bert pretrain or finetune.")
        raise InputNotFoundError(f"run directory {run_dir!r} does not exist.")
    if os.path.isfile(os.path.join(run_dir, FINETUNE_CONFIG)):
        return _finetuning_curves(run_dir)
    curves = TrainingCurves(run_dir, "pretraining", "step", {}, [])
    _read_event_logs(os.path.join(run_dir, LOGS), curves)
    if "train" not in {line for lines in curves.curves.values() for line in lines}:
        _read_jsonl(os.path.join(run_dir, TRAIN_LOG), curves)
    if not curves.curves:
        raise _no_logs(run_dir, "holds no training logs" if os.listdir(run_dir)
                       else "is empty")
    return curves


def _finetuning_curves(run_dir: str) -> TrainingCurves:
    from keras_bert.checkpoints.finetuning_runs import read_finetuning_record

    path = os.path.join(run_dir, FINETUNE_CONFIG)
    history = read_finetuning_record(run_dir, fields={}).get("history") or []
    curves = TrainingCurves(run_dir, "fine-tuning", "epoch", {}, [path])
    restarts = {entry.get("restart", 0) for entry in history}
    for entry in history:
        restart = entry.get("restart", 0)
        suffix = f" (restart {restart + 1})" if len(restarts) > 1 else ""
        epoch = entry["epoch"]
        if _is_number(entry.get("loss")) and math.isfinite(entry["loss"]):
            curves.add("loss", "train" + suffix, epoch, entry["loss"])
        for split, metrics in (entry.get("dev") or {}).items():
            for name, value in metrics.items():
                if isinstance(value, float):
                    curves.add(name, split + suffix, epoch, value)
    if not curves.curves:
        raise _no_logs(run_dir, f"has no per-epoch history in {FINETUNE_CONFIG}")
    return curves


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _read_event_logs(logs_dir: str, curves: TrainingCurves) -> None:
    if not os.path.isdir(logs_dir):
        return
    import tensorflow as tf

    for directory, _, names in sorted(os.walk(logs_dir)):
        events = sorted(n for n in names if "tfevents" in n)
        if not events:
            continue
        line = os.path.relpath(directory, logs_dir).replace(os.sep, "/")
        line = "train" if line == "." else line
        latest: dict = {}  # (tag, step) -> (wall time, order, value)
        for order, name in enumerate(events):
            path = os.path.join(directory, name)
            curves.sources.append(path)
            try:
                for record in tf.data.TFRecordDataset(path):
                    event = tf.compat.v1.Event.FromString(record.numpy())
                    for value in event.summary.value:
                        if value.HasField("tensor"):
                            number = tf.make_ndarray(value.tensor)
                            if number.size != 1 or number.dtype.kind not in "fiu":
                                continue  # not a scalar (text, histogram)
                            number = float(number.reshape(()))
                        elif value.HasField("simple_value"):
                            number = float(value.simple_value)
                        else:
                            continue
                        key = (value.tag, int(event.step))
                        stamp = (event.wall_time, order)
                        if key not in latest or stamp >= latest[key][:2]:
                            latest[key] = (*stamp, number)
            except tf.errors.DataLossError:
                pass  # a file cut short by a killed run: keep what was complete
        for (tag, step), (*_, number) in sorted(latest.items(), key=lambda kv: kv[0][1]):
            if tag not in _NOT_CURVES:
                curves.add(tag, line, step, number)


def _read_jsonl(path: str, curves: TrainingCurves) -> None:
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    by_step: dict = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
            step = int(record["step"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            if number == len(lines):
                break  # the last line cut short by a killed run
            raise DataError("is not a JSON record with a step.", path=path,
                            line=number) from None
        by_step[step] = record  # a step logged again after a resume: the latest wins
    if by_step:
        curves.sources.append(path)
    for step in sorted(by_step):
        for name, value in by_step[step].items():
            if name != "step" and name not in _NOT_CURVES and _is_number(value):
                curves.add(name, "train", step, value)
