"""Hugging Face BERT checkpoints (`config.json` + `model.safetensors`), read with the
safetensors numpy API (no torch), their keys mapped from Google's names.
"""

from __future__ import annotations

import os

import numpy as np

from keras_bert.checkpoints.matching import NamedCheckpoint, unreadable
from keras_bert.checkpoints.names import google_to_hf_name
from keras_bert.core.errors import InputNotFoundError
from keras_bert.model.config import BertConfig

HF_CONFIG = "config.json"
HF_WEIGHTS = "model.safetensors"

# HF buffers and tied duplicates that carry no weights of their own.
_HF_NON_WEIGHTS = ("embeddings.position_ids", "cls.predictions.decoder.weight",
                   "cls.predictions.decoder.bias")


def hf_config(directory: str) -> BertConfig:
    """The `config.json` of a Hugging Face model directory; raises if it is absent."""
    config_path = os.path.join(directory, HF_CONFIG)
    if not os.path.isfile(config_path):
        raise InputNotFoundError(
            f"Hugging Face checkpoint {directory!r} has no config.json.")
    return BertConfig.from_json_file(config_path)


def _hf_prefix(tensors: dict[str, np.ndarray]) -> str:
    # BertModel checkpoints have bare keys ("embeddings..."); BertForPreTraining and
    # task checkpoints prefix them with "bert.".
    return "bert." if any(k.startswith("bert.") for k in tensors) else ""


def open_huggingface(directory: str) -> NamedCheckpoint:
    """A Hugging Face model directory, its tensors read under Google's names."""
    from safetensors.numpy import load_file

    config = hf_config(directory)
    path = os.path.join(directory, HF_WEIGHTS)
    with unreadable(path):
        tensors = load_file(path)
    prefix = _hf_prefix(tensors)
    return NamedCheckpoint(config, tensors.get,
                           {k for k in tensors if not k.endswith(_HF_NON_WEIGHTS)},
                           f"Hugging Face checkpoint {directory}", True,
                           lambda s: google_to_hf_name(s.google_name, prefix))
