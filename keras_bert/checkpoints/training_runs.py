"""Reading a `keras-bert pretrain` run directory back as a checkpoint: where its
record and training checkpoints are (`RUN/run_config.json`, `RUN/checkpoints/ckpt-STEP`)
and how `TrainingCheckpoint` keys the variables it saves (`by_position`). The training
stage writes these files with the same names; this module only reads them, so that
`load_encoder` and `load_export_source` take a run at any saved step.
"""

from __future__ import annotations

import os

from keras_bert.checkpoints.matching import tensorflow_for, unreadable
from keras_bert.core import fileio
from keras_bert.core.errors import CheckpointError
from keras_bert.core.run_files import CHECKPOINTS, RUN_CONFIG


def by_position(variables) -> dict:
    """Variables keyed by position and short name, as training checkpoints hold them.
    Paths would not do: Keras numbers some names per process (`seed_generator_5`,
    `adam_w_1/...`), so a rerun in the same process would not find its own variables;
    the same model and optimizer built by the same code list their variables in the
    same order."""
    return {f"{i:05d}-{v.name}": v for i, v in enumerate(variables)}


def find_run_directory(path: str | os.PathLike) -> str | None:
    """The pretraining run directory that `path` names: the run directory itself (it
    holds run_config.json), its checkpoints/ directory, or a checkpoint in that
    (`checkpoints/ckpt-STEP`); None for any other path.

    Example:

    >>> find_run_directory("/nonexistent/run/checkpoints/ckpt-200") is None
    True
    """
    path = os.path.normpath(os.fspath(path))
    candidates = [path]
    if os.path.basename(path) == CHECKPOINTS:
        candidates.append(os.path.dirname(path) or ".")
    parent = os.path.dirname(path)
    if os.path.basename(parent) == CHECKPOINTS:
        candidates.append(os.path.dirname(parent) or ".")
    return next((c for c in candidates if fileio.exists(os.path.join(c, RUN_CONFIG))), None)


def read_run_record(run_dir: str) -> dict:
    """The run_config.json of a pretraining run directory (the settings, `bert_config`
    and `data_settings` of its latest start), for reading a run's checkpoints back.

    Raises:
        CheckpointError: the file is not valid JSON, or records no `bert_config`.
    """
    path = os.path.join(run_dir, RUN_CONFIG)
    with unreadable(path):
        record = fileio.read_json(path)
    if not isinstance(record, dict) or not isinstance(record.get("bert_config"), dict):
        raise CheckpointError(f"{path} records no bert_config (not a `keras-bert pretrain` "
                              "run's record); its checkpoints cannot be read without the "
                              "model config it was trained with.")
    return record


def latest_run_checkpoint(run_dir: str) -> str | None:
    """The newest complete checkpoint (its `ckpt-STEP` prefix) of a run directory."""
    checkpoints = os.path.join(run_dir, CHECKPOINTS)
    if not fileio.exists(os.path.join(checkpoints, "checkpoint")):
        return None  # no checkpoint state file: nothing saved yet (TensorFlow not needed)
    # Only here: reading run paths stays light.
    tf = tensorflow_for(f"Reading the training checkpoints of the run {run_dir}")
    return tf.train.latest_checkpoint(os.path.join(run_dir, CHECKPOINTS))
