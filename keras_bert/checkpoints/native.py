"""keras_bert's own checkpoints: the directory `save_encoder` writes
(`keras_bert_config.json` + `encoder.weights.h5`), read back by `load_encoder`; the
training checkpoints of `keras-bert pretrain` (`RUN/checkpoints/ckpt-STEP`), read with
their run's config; and the check that a fine-tuned run's Keras model file
(`model.keras`) is whole before Keras reads it.
"""

from __future__ import annotations

import logging
import os
import re
import zipfile
import zlib
from collections.abc import Iterable

from keras_bert.checkpoints.matching import tensorflow_for, unreadable
from keras_bert.checkpoints.training_runs import (
    by_position,
    find_run_directory,
    read_run_record,
)
from keras_bert.core.errors import CheckpointError, DataError
from keras_bert.core.fileio import atomic_directory, json_text
from keras_bert.core.run_files import RUN_CONFIG
from keras_bert.model.config import BertConfig, read_json_object
from keras_bert.model.encoder import BertEncoder

logger = logging.getLogger("keras_bert")

KERAS_BERT_CONFIG = "keras_bert_config.json"
KERAS_BERT_WEIGHTS = "encoder.weights.h5"
# A model variable in a training checkpoint of `keras-bert pretrain` (`TrainingCheckpoint`):
# keyed by its position in the pretrainer's `variables` and its short name.
_TRAINING_KEY = re.compile(r"^model/\d+-[^/]+/\.ATTRIBUTES/VARIABLE_VALUE$")
# What every Keras 3 `.keras` archive holds: the model's config and its weights file.
_KERAS_ARCHIVE_CONFIG = "config.json"
_KERAS_ARCHIVE_WEIGHTS = "model.weights."


def native_config(directory: str) -> BertConfig:
    """The `BertConfig` recorded in a directory written by `save_encoder`; a `DataError`
    naming the file when it records none, or one with a field of the wrong type or
    range."""
    path = os.path.join(directory, KERAS_BERT_CONFIG)
    with unreadable(path):
        record = read_json_object(path, "an object with keras_bert's encoder config")
    if not isinstance(record.get("config"), dict):
        raise DataError("records no encoder config (its \"config\" object); save the "
                        "encoder again with save_encoder.", path=path)
    try:
        return BertConfig.from_dict(record["config"])
    except ValueError as e:  # an unknown field, a value of the wrong type or range
        raise DataError(str(e), path=path) from None


def load_native_encoder(directory: str, output_attentions: bool = False,
                        dtype=None) -> BertEncoder:
    """The encoder of a directory written by `save_encoder`."""
    encoder = BertEncoder(native_config(directory), output_attentions=output_attentions,
                          dtype=dtype)
    weights = os.path.join(directory, KERAS_BERT_WEIGHTS)
    with unreadable(weights):
        encoder.load_weights(weights)
    return encoder


def is_training_checkpoint(names: Iterable[str]) -> bool:
    """Whether a TF checkpoint with these variable names is a training checkpoint of
    `keras-bert pretrain` (the whole training state, `RUN/checkpoints/ckpt-STEP`)."""
    return any(_TRAINING_KEY.match(name) for name in names)


def _training_run(prefix: str) -> tuple[str, dict]:
    """(the run directory, its run_config.json record) of a training checkpoint."""

    run_dir = find_run_directory(prefix)
    if run_dir is None:
        expected = os.path.join(os.path.dirname(os.path.dirname(prefix)) or ".", RUN_CONFIG)
        raise CheckpointError(
            f"{prefix} is a training checkpoint of `keras-bert pretrain` away from its run "
            f"directory: the model config it was trained with is in the run's {RUN_CONFIG} "
            f"(expected at {expected}); give the checkpoint inside its run directory "
            "(RUN/checkpoints/ckpt-STEP), or the run directory itself.")
    return run_dir, read_run_record(run_dir)


def training_checkpoint_config(prefix: str) -> BertConfig:
    """The `BertConfig` of a `keras-bert pretrain` training checkpoint: its run's."""
    return BertConfig.from_dict(_training_run(prefix)[1]["bert_config"])


def load_training_pretrainer(prefix: str, dtype=None):
    """The `BertPretrainer` (encoder, MLM and NSP heads) at a training checkpoint of
    `keras-bert pretrain`, `RUN/checkpoints/ckpt-STEP`: built from the run's config as
    the run built it, so that its variables line up with the checkpoint's by position
    (as `TrainingCheckpoint` saves them), then read from the checkpoint (the optimizer
    state is left out). Every variable's name and shape is checked first."""
    tf = tensorflow_for(f"Reading the `keras-bert pretrain` training checkpoint {prefix}")

    from keras_bert.model.models import BertPretrainer

    run_dir, record = _training_run(prefix)
    config = BertConfig.from_dict(record["bert_config"])
    with unreadable(prefix + ".index"):
        reader = tf.train.load_checkpoint(prefix)
        saved = {key: tuple(shape) for key, shape in reader.get_variable_to_shape_map().items()
                 if _TRAINING_KEY.match(key)}
    recorded = ((record.get("settings") or {}).get("options") or {}).get("next_sentence")
    for next_sentence in (recorded,) if isinstance(recorded, bool) else (True, False):
        model = BertPretrainer(BertEncoder(config, dtype=dtype), next_sentence=next_sentence)
        variables = {f"model/{key}/.ATTRIBUTES/VARIABLE_VALUE": variable
                     for key, variable in by_position(model.variables).items()}
        if set(variables) == set(saved):
            break
    else:
        unmatched = sorted(set(variables) ^ set(saved))
        raise CheckpointError(
            f"{prefix}: its {len(saved)} model variables are not those of the pretrainer "
            f"that {os.path.join(run_dir, RUN_CONFIG)} describes ({len(variables)} "
            f"variables; e.g. {unmatched[0]!r} is in only one of them); is that file "
            "another run's?")
    for key, variable in variables.items():
        if saved[key] != tuple(variable.shape):
            raise CheckpointError(
                f"{prefix}: variable {key!r} has shape {saved[key]} but the config in "
                f"{os.path.join(run_dir, RUN_CONFIG)} gives {tuple(variable.shape)}; is "
                "that file another run's?")
    with unreadable(prefix):
        for key, variable in variables.items():
            variable.assign(reader.get_tensor(key))
    logger.info("Read the pretrainer of %s (the run in %s).", prefix, run_dir)
    return model


def load_training_encoder(prefix: str, output_attentions: bool = False,
                          dtype=None) -> BertEncoder:
    """The encoder at a training checkpoint of `keras-bert pretrain` (see
    `load_training_pretrainer`)."""
    encoder = load_training_pretrainer(prefix).encoder
    if not output_attentions and dtype is None:
        return encoder
    copy = BertEncoder(encoder.config, output_attentions=output_attentions, dtype=dtype)
    copy.set_weights(encoder.get_weights())
    return copy


def save_encoder(encoder: BertEncoder, directory: str | os.PathLike,
                 overwrite: bool = False) -> None:
    """Writes `encoder` in keras_bert's format (config JSON + Keras weights file).

    The directory is written under a temporary name and renamed into place, so an
    interrupted save never leaves a half-written checkpoint behind. A non-empty
    `directory` is an error unless `overwrite=True`, which replaces it only once the
    new checkpoint is complete (the old one stays intact if the save fails).

    Example:

    >>> from keras_bert import BertConfig, BertEncoder, load_encoder
    >>> import tempfile
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=50))
    >>> path = tempfile.mkdtemp() + "/encoder"
    >>> save_encoder(encoder, path)
    >>> save_encoder(encoder, path, overwrite=True)
    >>> load_encoder(path).config == encoder.config
    True
    """
    meta = {"format": "keras_bert", "version": 1, "config": encoder.config.to_dict()}

    def write(tmp):
        with open(os.path.join(tmp, KERAS_BERT_CONFIG), "w", encoding="utf-8") as f:
            f.write(json_text(meta, indent=2, sort_keys=False) + "\n")
        encoder.save_weights(os.path.join(tmp, KERAS_BERT_WEIGHTS))

    atomic_directory(directory, write, overwrite=overwrite)


def check_keras_archive(path: str | os.PathLike,
                        remedy: str = "copy it again, or re-run `keras-bert finetune` to "
                                      "write it anew") -> None:
    """Raises `CheckpointError` naming `path` and `remedy` if the `.keras` model file is
    not whole: truncated (an interrupted copy), corrupt (every member's CRC is checked)
    or not a Keras archive at all (Keras reports a truncated file as "File not found").

    A missing file is left to the caller, which names what else it expected beside it.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "model.keras")
    >>> _ = open(path, "wb").write(b"PK\\x03\\x04 cut short")
    >>> check_keras_archive(path, remedy="copy it again")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.CheckpointError: .../model.keras is unreadable or truncated (14 bytes, not a
    complete .keras archive); copy it again.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        return
    problem = None
    if not zipfile.is_zipfile(path):
        problem = (f"is unreadable or truncated ({os.path.getsize(path)} bytes, not a complete "
                   ".keras archive)")
    else:
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
                bad = archive.testzip()
            if bad is not None:
                problem = f"is corrupt ({bad} inside it fails its checksum)"
            elif _KERAS_ARCHIVE_CONFIG not in names or not any(
                    n.startswith(_KERAS_ARCHIVE_WEIGHTS) for n in names):
                problem = f"is not a Keras model file (a zip archive of {sorted(names)[:5]})"
        except (zipfile.BadZipFile, EOFError, zlib.error, ValueError) as e:
            problem = f"is unreadable ({type(e).__name__}: {' '.join(str(e).split())[:120]})"
    if problem:
        raise CheckpointError(f"{path} {problem}; {remedy}.")
