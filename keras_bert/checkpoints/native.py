"""keras_bert's own checkpoint directory (`keras_bert_config.json` + `encoder.weights.h5`):
written by `save_encoder`, read back by `load_encoder`; and the check that a fine-tuned
run's Keras model file (`model.keras`) is whole before Keras reads it.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib

from keras_bert.checkpoints.matching import unreadable
from keras_bert.config import BertConfig
from keras_bert.encoder import BertEncoder
from keras_bert.errors import CheckpointError
from keras_bert.io import atomic_directory

KERAS_BERT_CONFIG = "keras_bert_config.json"
KERAS_BERT_WEIGHTS = "encoder.weights.h5"
# What every Keras 3 `.keras` archive holds: the model's config and its weights file.
_KERAS_ARCHIVE_CONFIG = "config.json"
_KERAS_ARCHIVE_WEIGHTS = "model.weights."


def native_config(directory: str) -> BertConfig:
    """The `BertConfig` recorded in a directory written by `save_encoder`."""
    path = os.path.join(directory, KERAS_BERT_CONFIG)
    with unreadable(path), open(path, encoding="utf-8") as f:
        return BertConfig.from_dict(json.load(f)["config"])


def load_native_encoder(directory: str, output_attentions: bool = False,
                        dtype=None) -> BertEncoder:
    """The encoder of a directory written by `save_encoder`."""
    encoder = BertEncoder(native_config(directory), output_attentions=output_attentions,
                          dtype=dtype)
    weights = os.path.join(directory, KERAS_BERT_WEIGHTS)
    with unreadable(weights):
        encoder.load_weights(weights)
    return encoder


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
            json.dump(meta, f, indent=2)
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
    keras_bert.errors.CheckpointError: .../model.keras is unreadable or truncated (14 bytes, not a
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
