"""The run directory of a pretraining run: what it holds, the settings every start
records there, whether a new start resumes, extends or replaces the run it finds, and
writing the run's files into it.

Reusing a run directory: the same settings resume the run where it stopped. Settings that
change what is trained (data, batch, steps, learning rate, config, seed, vocab, ...) are
refused with a `MismatchError` that lists them (old -> new), unless `overwrite=True`
(start afresh: the old run's files are removed when the new run starts) or, when only
`num_train_steps` changed, `resume=True` (extend the run). Options that only change how
the run is executed or recorded (`steps_per_execution`, `jit_compile`, checkpoint and
logging intervals, the strategy) may change between starts.

Run directory layout::

    output_dir/
      keras_bert_config.json, encoder.weights.h5   the trained encoder
      vocab.txt                                    a copy of the vocab (when one is known)
      metrics.json                                 final metrics (last logging window)
      run_config.json                              options, model config, data, strategy;
                                                   `starts`: the settings of every start
      train_log.jsonl                              one JSON line per logging window
      checkpoints/ckpt-STEP.*                      training state, for resuming
      logs/train/                                  TensorBoard event files
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import os
import shutil

import tensorflow as tf

from keras_bert.checkpoints import KERAS_BERT_CONFIG, KERAS_BERT_WEIGHTS, save_encoder
from keras_bert.core import fileio, input_files
from keras_bert.core.errors import MismatchError, OutputError, Setting
from keras_bert.core.run_files import CHECKPOINTS, LOGS, METRICS, RUN_CONFIG, TRAIN_LOG
from keras_bert.data.inspection import PretrainingDataInfo
from keras_bert.model.config import BertConfig
from keras_bert.model.encoder import BertEncoder
from keras_bert.text.vocab import VOCAB_FILE
from keras_bert.training.options import PretrainingOptions

logger = logging.getLogger("keras_bert")

# What a run writes into its directory (anything else there is left alone).
_RUN_FILES = (CHECKPOINTS, LOGS, TRAIN_LOG, METRICS, RUN_CONFIG, KERAS_BERT_CONFIG,
              KERAS_BERT_WEIGHTS, VOCAB_FILE)
# The names whose hidden temporaries a run writes into its directory.
_TEMPORARIES = ("encoder", "previous-run", RUN_CONFIG, METRICS, VOCAB_FILE)
# Options that change how a run is executed or recorded, not what it trains (or must
# equal the data anyway): a resumed run may change them.
_EXECUTION_OPTIONS = ("max_seq_length", "max_predictions_per_seq", "steps_per_execution",
                      "save_checkpoints_steps", "keep_checkpoints", "log_steps",
                      "jit_compile")


def run_settings(options: PretrainingOptions, next_sentence: bool, config: BertConfig,
                 info: PretrainingDataInfo, vocab_sha256: str | None,
                 init_checkpoint: str | None) -> dict:
    """What decides the result of a run: compared with the settings a run directory
    records before resuming it (JSON-normalized, so a record read back compares equal)."""
    trained = {k: v for k, v in dataclasses.asdict(options).items()
               if k not in _EXECUTION_OPTIONS}
    trained["next_sentence"] = next_sentence
    settings = {
        "options": trained,
        "bert_config": config.to_dict(),
        # Files by name and size, not path: data staged elsewhere on a restart resumes.
        "data": {"files": [[os.path.basename(f), size]
                           for f, size in zip(info.files, info.file_sizes)],
                 "settings": info.settings, "vocab_sha256": info.vocab.get("sha256")},
        "vocab_sha256": vocab_sha256,
        "init_checkpoint": init_checkpoint and _checkpoint_name(init_checkpoint),
    }
    return json.loads(json.dumps(settings))


def _checkpoint_name(init_checkpoint: str) -> str:
    """An init checkpoint as a run's settings record it: its directory's name (and the
    prefix of a Google checkpoint), not its full path, so a job that stages the same
    checkpoint elsewhere on every restart still resumes (its config and vocab are
    compared as well).

    Example:

    >>> _checkpoint_name("/tmp/job-1/uncased_L-12_H-768_A-12/bert_model.ckpt")
    'uncased_L-12_H-768_A-12/bert_model.ckpt'
    """
    path = os.path.normpath(init_checkpoint.rstrip("/"))
    if fileio.isdir(path):
        return os.path.basename(path)
    return "/".join([os.path.basename(os.path.dirname(path)), os.path.basename(path)])


def _flatten(value, prefix: str = "") -> dict:
    if isinstance(value, dict) and value:
        flat = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: value}


_SETTING_NAMES = {"data.files": "input files", "data.vocab_sha256": "the data's vocab",
                  "vocab_sha256": "vocab", "init_checkpoint": "init_checkpoint"}
_MISSING = object()


def _show(key: str, value) -> str:
    if value is _MISSING:
        return "(none)"
    if key == "data.files" and isinstance(value, list):
        shown = ", ".join(f"{name} ({size} bytes)" for name, size in value[:3])
        return f"{len(value)} files: {shown}" + (", ..." if len(value) > 3 else "")
    if key.endswith("sha256") and isinstance(value, str):
        return f"sha256 {value[:12]}…"
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _differences(old: dict, new: dict) -> dict[str, str]:
    """{setting: "old -> new"} for every setting that differs."""
    old, new = _flatten(old), _flatten(new)
    differences = {}
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, _MISSING), new.get(key, _MISSING)
        if before != after:
            name = _SETTING_NAMES.get(key) or key.removeprefix("options.").replace(
                "bert_config.", "config.")
            differences[key] = f"{name}: {_show(key, before)} → {_show(key, after)}"
    return differences


def _read_run_config(output_dir: str) -> dict | None:
    path = os.path.join(output_dir, RUN_CONFIG)
    if not fileio.exists(path):
        return None
    try:
        record = fileio.read_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise OutputError(f"{path} is unreadable ({e}); remove it, or overwrite the run in "
                          f"{output_dir}.") from None
    return record if isinstance(record, dict) else None


def _has_state(output_dir: str) -> bool:
    """Whether a run directory holds anything of value: a checkpoint or a trained
    encoder (a start that died before its first checkpoint leaves neither)."""
    return bool(tf.train.latest_checkpoint(os.path.join(output_dir, CHECKPOINTS))
                or fileio.exists(os.path.join(output_dir, METRICS))
                or fileio.exists(os.path.join(output_dir, KERAS_BERT_CONFIG)))


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")



class RunDirectory:
    """The directory of one pretraining run (see the module docstring for its layout).

    Args:
        path: the directory.
        vocab_source: the vocab file the run uses, copied into the directory as
            vocab.txt when it starts (None: no vocab is known).

    Example:

    >>> RunDirectory("runs/tiny").checkpoints
    'runs/tiny/checkpoints'
    """

    def __init__(self, path: str, vocab_source: str | None = None):
        self.path = path
        self.vocab_source = vocab_source

    @property
    def checkpoints(self) -> str:
        """The directory of the run's training checkpoints."""
        return os.path.join(self.path, CHECKPOINTS)

    @property
    def metrics(self) -> str:
        """The run's `metrics.json`, written when it finishes."""
        return os.path.join(self.path, METRICS)

    def start_kind(self, settings: dict, *, overwrite: bool, resume: bool) -> str:
        """How a start with `settings` (from `run_settings`) relates to the run the
        directory holds: "started", "resumed", "extended", "restarted" (the previous start
        saved nothing) or "overwrote". Raises `MismatchError` when that run has other
        settings and neither `overwrite` nor (for a new step count only) `resume` allows
        going on."""
        output_dir = self.path
        record = _read_run_config(output_dir) if fileio.isdir(output_dir) else None
        if not (fileio.isdir(output_dir) and _has_state(output_dir)):
            return "started" if record is None else "restarted"
        if overwrite:
            return "overwrote"
        previous = (record or {}).get("settings")
        if previous is None:
            logger.warning("%s holds a run without recorded settings (from an older "
                           "keras_bert?); resuming it without comparing them.", output_dir)
            return "resumed"
        differences = _differences(previous, settings)
        if not differences:
            return "resumed"
        if resume and set(differences) == {"options.num_train_steps"}:
            logger.info("Extending the run in %s: %s.", output_dir,
                        differences["options.num_train_steps"])
            return "extended"
        starts = record.get("starts") or [{}]
        since = f" (started {starts[0]['time']})" if starts[0].get("time") else ""
        if set(differences) == {"options.num_train_steps"}:
            advice = ("pass ", Setting("resume", True), " to continue it to the new "
                      "num_train_steps, or ", Setting("overwrite", True), " to start a new "
                      "run in its place")
        else:
            advice = ("use another output_dir, or pass ", Setting("overwrite", True),
                      " to start a new run in its place (the old run's files are removed "
                      "when it starts)")
        raise MismatchError.advising(
            f"{output_dir} holds a run{since} with other settings: "
            + "; ".join(differences.values()) + ". To resume it, use its settings; else ",
            *advice, ".")

    def prepare(self, run_config: dict, *, kind: str, start_step: int,
                replace_previous: bool) -> None:
        """Creates or updates the directory for a start of `kind` at `start_step` (the
        chief's part of starting): removes the previous run's files if
        `replace_previous`, copies the vocab in and records `run_config` as the latest
        start in `run_config.json`. A failure puts the previous run's files back."""
        fileio.makedirs(self.path)
        fileio.remove_stale_temporaries(self.path, owned=lambda name: name in _TEMPORARIES)
        aside = self._move_previous_aside(kind) if replace_previous else None
        try:
            self._copy_vocab()
            self._write_run_config(run_config, kind, start_step)
        except BaseException:
            if aside:
                self._restore_previous(aside)
            raise
        if aside:
            shutil.rmtree(aside, ignore_errors=True)

    def export_encoder(self, encoder: BertEncoder) -> None:
        """Saves the encoder into the directory itself (beside the run's other files),
        each file renamed into place complete, the config last since it marks the
        directory as a keras_bert checkpoint. The staging directory is a hidden temporary
        that `fileio.remove_stale_temporaries` clears if the process dies mid-way."""
        output_dir = self.path
        staging = fileio.temporary_path(os.path.join(output_dir, "encoder"))
        os.makedirs(staging)
        try:
            target = os.path.join(staging, "encoder")
            save_encoder(encoder, target)
            for name in sorted(os.listdir(target), key=lambda n: n == KERAS_BERT_CONFIG):
                os.replace(os.path.join(target, name), os.path.join(output_dir, name))
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _run_files(self) -> list[str]:
        """The entries of the run directory that belong to the run."""
        names = list(_RUN_FILES)
        if self.vocab_source and os.path.abspath(self.vocab_source) == os.path.abspath(
                os.path.join(self.path, VOCAB_FILE)):
            names.remove(VOCAB_FILE)  # the given vocab itself: not the run's copy
        return [n for n in names if fileio.exists(os.path.join(self.path, n))]

    def _move_previous_aside(self, kind: str) -> str | None:
        """Moves the old run's files into a hidden temporary directory (removed once the
        new run is set up; `fileio.remove_stale_temporaries` clears one a crash leaves).
        Remote directories cannot rename directories: their old files are removed."""
        output_dir, names = self.path, self._run_files()
        if fileio.is_remote(output_dir):
            gfile = tf.io.gfile
            for name in names:
                path = os.path.join(output_dir, name)
                (gfile.rmtree if gfile.isdir(path) else gfile.remove)(path)
            return None
        aside = fileio.temporary_path(os.path.join(output_dir, "previous-run"))
        os.makedirs(aside)
        for name in names:
            os.replace(os.path.join(output_dir, name), os.path.join(aside, name))
        logger.info("%s the previous run in %s (its files: %s).",
                    "Replacing" if kind == "overwrote" else "Restarting",
                    output_dir, ", ".join(names) or "none")
        return aside

    def _restore_previous(self, aside: str) -> None:
        for name in os.listdir(aside):
            target = os.path.join(self.path, name)
            if os.path.isdir(target):
                shutil.rmtree(target, ignore_errors=True)
            os.replace(os.path.join(aside, name), target)
        shutil.rmtree(aside, ignore_errors=True)

    def _copy_vocab(self) -> None:
        source = self.vocab_source
        target = os.path.join(self.path, VOCAB_FILE)
        if not source or os.path.abspath(source) == os.path.abspath(target):
            return
        if fileio.exists(target) and input_files.file_sha256(target) == input_files.file_sha256(source):
            return
        with fileio.open_file(source, "rb") as f, fileio.atomic_write(target, "wb") as copy:
            shutil.copyfileobj(f, copy)

    def _write_run_config(self, run_config: dict, kind: str, start_step: int) -> None:
        path = os.path.join(self.path, RUN_CONFIG)
        starts = []
        previous = _read_run_config(self.path)
        if previous is not None:
            starts = previous.get("starts") or [{"time": None, "kind": "started",
                                                  "start_step": 0, **previous}]
        start = {"time": _now(), "kind": kind, "start_step": start_step, **run_config}
        fileio.write_json(path, {**run_config, "starts": [*starts, start]})
