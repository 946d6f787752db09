"""keras_bert's own checkpoint directory (`keras_bert_config.json` + `encoder.weights.h5`):
written by `save_encoder`, read back by `load_encoder`.
"""

from __future__ import annotations

import json
import os

from keras_bert.checkpoints.matching import unreadable
from keras_bert.config import BertConfig
from keras_bert.encoder import BertEncoder
from keras_bert.io import atomic_directory

KERAS_BERT_CONFIG = "keras_bert_config.json"
KERAS_BERT_WEIGHTS = "encoder.weights.h5"


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
