"""Reading a `keras-bert finetune` run directory back as a checkpoint: its file names
(`FINETUNE_CONFIG`, `FINETUNED_MODEL`: their one owner, which the tasks stage writes
and loads runs with), whether a path is one (`is_finetuning_run`, asked by the opener,
`open_artifact`, for every command), its record (`read_finetuning_record`) and its
encoder's config, read from the model file (or any `.keras` file) without its weights.
This module only reads a run's files, so that `open_artifact` takes a run like any other
checkpoint.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping

from keras_bert.checkpoints.matching import unreadable
from keras_bert.checkpoints.native import check_keras_archive
from keras_bert.core import fileio
from keras_bert.core.errors import CheckpointError, DataError, InputNotFoundError
from keras_bert.core.run_files import FINETUNE_CONFIG, FINETUNED_MODEL
from keras_bert.model.config import BertConfig
from keras_bert.text.vocab import VOCAB_FILE

# What every finetune_config.json records, and the JSON type of each.
RECORD_FIELDS = {"task": str, "options": dict, "lower_case": bool}
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "true or false",
               int: "a number", float: "a number", type(None): "null"}
# The member of a .keras archive that holds the model's config, and the encoder's class.
_ARCHIVE_CONFIG = "config.json"
_ENCODER_CLASS = "BertEncoder"


def is_finetuning_run(path: str | os.PathLike) -> bool:
    """Whether `path` is a `keras-bert finetune` output directory (its
    finetune_config.json is there; its model.keras may have been lost).

    Example:

    >>> is_finetuning_run("/nonexistent/runs/mrpc")
    False
    """
    return os.path.isfile(os.path.join(os.fspath(path), FINETUNE_CONFIG))


def read_finetuning_record(path: str | os.PathLike,
                           fields: Mapping[str, type] = RECORD_FIELDS) -> dict:
    """The record of a fine-tuning run directory `path` (its finetune_config.json: the
    task and its config, the options, the casing, the history). Every reader of the file
    goes through here; `fields` are those it needs (name -> JSON type).

    Raises:
        FileNotFoundError: the file is missing.
        DataError: it is not valid JSON (the message gives the line and column), or not
            a fine-tuning record (not a JSON object, or one of `fields` missing or of
            another type).

    Example:

    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> _ = open(os.path.join(run, FINETUNE_CONFIG), "w").write('{"task": "stsb",\\n "options" {}}')
    >>> read_finetuning_record(run)
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.DataError: .../finetune_config.json:2: is not valid JSON (line 2, column 12: Expecting ':' delimiter); ...
    """
    config_path = os.path.join(os.fspath(path), FINETUNE_CONFIG)
    remedy = "copy it again from where the run was written, or re-run `keras-bert finetune`"
    try:
        record = fileio.read_json(config_path)
    except json.JSONDecodeError as e:
        raise DataError(f"is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); "
                        f"{remedy}.", path=config_path, line=e.lineno) from None
    except UnicodeDecodeError as e:
        raise DataError(f"is not valid JSON (not UTF-8: {e.reason} at byte {e.start}); "
                        f"{remedy}.", path=config_path) from None
    if not isinstance(record, dict):
        raise DataError(f"is not a fine-tuning record: it holds {_JSON_TYPES[type(record)]}, "
                        f"not a JSON object; {remedy}.", path=config_path)
    for field, kind in fields.items():
        if not isinstance(record.get(field), kind):
            found = "missing" if field not in record else f"{record[field]!r}"
            raise DataError(f"is not a fine-tuning record: its {field!r} is {found} "
                            f"({_JSON_TYPES[kind]} expected); {remedy}.",
                            path=config_path)
    return record


def check_finetuning_run(path: str | os.PathLike) -> dict:
    """The record of the fine-tuning run directory `path` (see `read_finetuning_record`),
    once its files are there: finetune_config.json, model.keras and vocab.txt.

    Raises:
        InputNotFoundError: `path` is not a directory, or one of the files is missing.
        DataError: see `read_finetuning_record`.

    Example:

    >>> check_finetuning_run("/nonexistent/runs/mrpc")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.InputNotFoundError: '/nonexistent/runs/mrpc' is not a directory; give the output_dir of a fine-tuning run.
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise InputNotFoundError(f"{path!r} is not a directory; give the output_dir of a "
                                 "fine-tuning run.")
    for needed in (FINETUNE_CONFIG, FINETUNED_MODEL, VOCAB_FILE):
        missing = os.path.join(path, needed)
        if os.path.isfile(missing):
            continue
        if needed == FINETUNED_MODEL:
            # Named as a run: read as an encoder checkpoint, the directory would get a
            # list of encoder checkpoint files instead.
            raise InputNotFoundError(f"{path!r} is a fine-tuning run directory without its "
                                     f"model file: {missing!r} is missing; copy it there "
                                     "again, or re-run `keras-bert finetune`.")
        raise InputNotFoundError(f"{path!r} is not a fine-tuned model: it has no "
                                 f"{needed} (run `keras-bert finetune` first).")
    return read_finetuning_record(path)


def finetuned_encoder_config(path: str | os.PathLike) -> BertConfig:
    """The `BertConfig` of the encoder in a fine-tuning run directory's model.keras,
    read from the archive's config without loading any weights.

    Raises:
        CheckpointError: the model file is truncated, corrupt or not a Keras archive, or
            its model holds no `BertEncoder`.
    """
    model_path = os.path.join(os.fspath(path), FINETUNED_MODEL)
    check_keras_archive(model_path)
    found = keras_archive_encoder_config(model_path)
    if found is None:
        raise CheckpointError(f"{model_path} holds no {_ENCODER_CLASS} (not the model of a "
                              "`keras-bert finetune` run); re-run `keras-bert finetune`.")
    return found


def keras_archive_encoder_config(model_path: str | os.PathLike) -> BertConfig | None:
    """The `BertConfig` of the first `BertEncoder` in a `.keras` archive's model config
    (None when it holds none), read without loading any weights.

    Raises:
        CheckpointError: the file is not a readable zip archive.
    """
    with unreadable(os.fspath(model_path)), zipfile.ZipFile(model_path) as archive:
        model_config = json.loads(archive.read(_ARCHIVE_CONFIG))
    found = _encoder_config(model_config)
    return None if found is None else BertConfig.from_dict(found)


def _encoder_config(node) -> dict | None:
    """The config (a `BertConfig` dict) of the first `BertEncoder` in a Keras model's
    serialized config, searched depth first."""
    if isinstance(node, dict):
        if node.get("class_name") == _ENCODER_CLASS and isinstance(node.get("config"), dict):
            return node["config"].get("config")
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    return next((found for child in children
                 if (found := _encoder_config(child)) is not None), None)
