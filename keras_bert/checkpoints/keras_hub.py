"""keras-hub BERT presets, read without keras-hub (`keras_hub_writing` writes them): the
directory that `BertBackbone.save_to_preset` (with `BertTokenizer`'s) or
`BertTextClassifier`'s writes: `config.json`, `model.weights.h5` (Keras 3's h5 layout), `tokenizer.json`,
`assets/tokenizer/vocabulary.txt`, `metadata.json`, for a task also `task.json` and
`task.weights.h5`. Weights are read with h5py and matched to the encoder by slot.

keras-hub's BERT computes what keras_bert's encoder computes with `hidden_act=
"gelu_tanh"` (its `gelu_approximate`), LayerNorm epsilon 1e-12, one dropout rate for
hidden states and attention, the 1/sqrt(H/A) attention scale and a tanh pooler over
[CLS]; a preset reads as such a `BertConfig`. An encoder with another activation or
epsilon has no keras-hub BERT preset (see `keras_hub_writing.save_keras_hub_preset`).
"""

from __future__ import annotations

import logging
import os
from typing import NamedTuple

import numpy as np

from keras_bert.checkpoints.matching import assign_slots, report_unused, unreadable
from keras_bert.checkpoints.names import encoder_slots
from keras_bert.core.errors import (
    ArgumentError,
    CheckpointError,
    DataError,
    InputNotFoundError,
)
from keras_bert.model.config import BertConfig, read_json_object
from keras_bert.model.encoder import BertEncoder

logger = logging.getLogger("keras_bert")

KERAS_HUB_CONFIG = "config.json"
KERAS_HUB_WEIGHTS = "model.weights.h5"
KERAS_HUB_TOKENIZER = "tokenizer.json"
KERAS_HUB_PREPROCESSOR = "preprocessor.json"
KERAS_HUB_TASK = "task.json"
KERAS_HUB_TASK_WEIGHTS = "task.weights.h5"
KERAS_HUB_METADATA = "metadata.json"
KERAS_HUB_VOCAB = os.path.join("assets", "tokenizer", "vocabulary.txt")
# What keras-hub's BERT fixes in code rather than in its config.
KERAS_HUB_ACTIVATION = "gelu_tanh"
KERAS_HUB_LAYER_NORM_EPS = 1e-12
_EMBEDDINGS = {"word_embeddings": "reversible_embedding", "token_type_embeddings": "embedding",
               "position_embeddings": "position_embedding", "LayerNorm": "layer_normalization"}
_BLOCK = {**{f"attention/self/{p}": f"_self_attention_layer/{p}_dense"
             for p in ("query", "key", "value")},
          "attention/output/dense": "_self_attention_layer/output_dense",
          "attention/output/LayerNorm": "_self_attention_layer_norm",
          "intermediate/dense": "_feedforward_intermediate_dense",
          "output/dense": "_feedforward_output_dense",
          "output/LayerNorm": "_feedforward_layer_norm"}
# Each BertConfig field by its key in a BertBackbone's config (one dropout for both rates).
_BACKBONE_KEYS = {"vocab_size": "vocabulary_size", "hidden_size": "hidden_dim",
                  "num_layers": "num_layers", "num_heads": "num_heads",
                  "intermediate_size": "intermediate_dim", "hidden_dropout": "dropout",
                  "attention_dropout": "dropout", "max_position_embeddings": "max_sequence_length",
                  "type_vocab_size": "num_segments"}
# The classifier head's dense layer in task.weights.h5.
KERAS_HUB_HEAD = "layers/dense/vars"


class KerasHubTask(NamedTuple):
    """The task of a `BertTextClassifier` preset: what a `BertClassifier` needs."""

    num_classes: int
    kernel: np.ndarray  # [H, num_classes]
    bias: np.ndarray  # [num_classes]
    sequence_length: int | None  # the preprocessor's, None without one
    activation: str  # keras-hub's output activation ("linear": logits)
    dropout: float


def keras_hub_weight_name(google_name: str) -> str:
    """The `model.weights.h5` dataset of a keras-hub `BertBackbone` that holds the
    variable google-research/bert names `google_name` (with the same shape as keras_bert's
    variable: keras-hub's attention kernels are [H, A, H/A] and [A, H/A, H] too).

    >>> keras_hub_weight_name("bert/encoder/layer_1/attention/self/query/kernel")
    'layers/transformer_encoder_1/_self_attention_layer/query_dense/vars/0'
    >>> keras_hub_weight_name("bert/embeddings/LayerNorm/beta")
    'layers/layer_normalization/vars/1'
    """
    parts = google_name.split("/")
    index = 1 if parts[-1] in ("bias", "beta") else 0
    if parts[1] == "embeddings":
        group = _EMBEDDINGS[parts[2]]
    elif parts[1] == "pooler":
        group = "dense"
    else:
        layer = int(parts[2][len("layer_"):])
        group = (f"transformer_encoder{f'_{layer}' if layer else ''}/"
                 f"{_BLOCK['/'.join(parts[3:-1])]}")
    return f"layers/{group}/vars/{index}"


def _read_json(path: str, expected: str = "an object") -> dict:
    """The JSON object in `path`; a `DataError` naming the file (and the line and column
    of a JSON fault) when it is not one."""
    with unreadable(path):
        return read_json_object(path, expected)


def is_keras_hub_preset(path: str | os.PathLike) -> bool:
    """Whether `path` is a keras-hub preset directory: its `config.json` is a serialized
    keras-hub object (`module` keras_hub..., `class_name`, `config`), whatever model, or
    is no JSON object (invalid JSON, a list) beside a `model.weights.h5`, so that reading
    the preset names the fault in its config.json.

    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> is_keras_hub_preset(directory)
    False
    >>> _ = open(os.path.join(directory, "config.json"), "w").write(
    ...     '{"module": "keras_hub.src.models.bert.bert_backbone", '
    ...     '"class_name": "BertBackbone", "config": {}}')
    >>> is_keras_hub_preset(directory)
    True
    """
    path = os.fspath(path)
    try:
        data = _read_json(os.path.join(path, KERAS_HUB_CONFIG))
    except OSError:  # no config.json: not a preset
        return False
    except DataError:  # laid out as a preset: reading its config names the fault
        return os.path.isfile(os.path.join(path, KERAS_HUB_WEIGHTS))
    return ("class_name" in data and "config" in data
            and (str(data.get("module", "")).startswith("keras_hub")
                 or str(data.get("registered_name", "")).startswith("keras_hub>")))


def read_keras_hub_config(path: str | os.PathLike) -> BertConfig:
    """The `BertConfig` of a keras-hub BERT preset (its `BertBackbone` config), with
    keras-hub's fixed numerics: `hidden_act="gelu_tanh"`, `layer_norm_eps=1e-12`, its one
    `dropout` for hidden states and attention. Another model's preset is a
    `CheckpointError` that names its class.

    >>> read_keras_hub_config("bert_tiny_en_uncased").num_layers  # doctest: +SKIP
    2
    """
    path = os.fspath(path)
    config_path = os.path.join(path, KERAS_HUB_CONFIG)
    if not os.path.isfile(config_path):
        raise InputNotFoundError(f"keras-hub preset {path!r} has no {KERAS_HUB_CONFIG}.")
    data = _read_json(config_path, "a serialized keras-hub BertBackbone (an object with "
                                   "module, class_name and config)")
    if data.get("class_name") != "BertBackbone":
        what = (f"a {data['class_name']!r} ({data.get('module')})" if "class_name" in data
                else "no keras-hub object (its config.json names no class_name)")
        raise CheckpointError(f"keras-hub preset {path!r} holds {what}, not a BertBackbone: "
                              "keras_bert reads keras-hub's BERT presets only.")
    c = data.get("config")
    if not isinstance(c, dict):
        raise DataError(f"its config is {c!r}, expected an object with the BertBackbone's "
                        "fields (vocabulary_size, hidden_dim, num_layers, ...).",
                        path=config_path)
    try:
        return BertConfig.from_fields(c, _BACKBONE_KEYS, hidden_act=KERAS_HUB_ACTIVATION,
                                      layer_norm_eps=KERAS_HUB_LAYER_NORM_EPS)
    except KeyError as e:
        raise DataError(f"not a complete BertBackbone config: it lacks the required field "
                        f"{e.args[0]!r}.", path=config_path) from None
    except ArgumentError as e:
        raise DataError(f"its BertBackbone config: {e}", path=config_path) from None


def keras_hub_vocab(path: str | os.PathLike) -> str | None:
    """The vocabulary file of a keras-hub preset (`assets/tokenizer/vocabulary.txt`, one
    token a line like a vocab.txt), or None when it has none.

    >>> keras_hub_vocab("/nowhere") is None
    True
    """
    vocab = os.path.join(os.fspath(path), KERAS_HUB_VOCAB)
    return vocab if os.path.isfile(vocab) else None


def keras_hub_lower_case(path: str | os.PathLike) -> bool:
    """Whether a keras-hub preset's tokenizer lower-cases: `tokenizer.json`'s `lowercase`
    (True without the file). keras_bert's uncased tokenizer also strips accents, as
    Google's does; keras-hub keeps that apart (`strip_accents`), and a preset where the
    two differ gets a warning (keras_bert's tokenization of accented text will differ).

    >>> keras_hub_lower_case("/nowhere")
    True
    """
    path = os.path.join(os.fspath(path), KERAS_HUB_TOKENIZER)
    if not os.path.isfile(path):
        return True
    config = _read_json(path).get("config") or {}
    lower_case = bool(config.get("lowercase", True))
    if bool(config.get("strip_accents", lower_case)) != lower_case:
        logger.warning("%s: lowercase=%s but strip_accents=%s; keras_bert's tokenizer "
                       "strips accents exactly when it lower-cases, so text with accents "
                       "tokenizes differently.", path, lower_case, not lower_case)
    return lower_case


def _read_h5(path: str) -> dict[str, np.ndarray]:
    """Every dataset of a Keras weights file, by its path (hard links only)."""
    import h5py

    if not os.path.isfile(path):
        sharded = path[: -len(".h5")] + ".json"
        raise InputNotFoundError(
            f"{path} is missing" + (" (the preset's weights are sharded, which keras_bert "
                                    "does not read)" if os.path.isfile(sharded) else "") + ".")
    arrays = {}

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            value = np.asarray(item[()])
            if item.attrs.get("dtype") == "bfloat16":  # stored by Keras as 2-byte opaque
                import ml_dtypes

                value = value.view(ml_dtypes.bfloat16)
            arrays[name] = value

    with unreadable(path), h5py.File(path, "r") as f:
        f.visititems(visit)
    return arrays


def load_keras_hub_encoder(path: str | os.PathLike, encoder: BertEncoder) -> BertEncoder:
    """Assigns the weights of a keras-hub BERT preset to `encoder`, built from
    `read_keras_hub_config(path)` (every variable checked by name and shape first);
    returns it.

    >>> p = "bert_tiny_en_uncased"  # a keras-hub preset directory
    >>> encoder = load_keras_hub_encoder(p, BertEncoder(read_keras_hub_config(p)))  # doctest: +SKIP
    """
    path = os.fspath(path)
    source = f"keras-hub preset {path}"
    arrays = _read_h5(os.path.join(path, KERAS_HUB_WEIGHTS))
    used = assign_slots(encoder_slots(encoder), arrays.get, source,
                        names=lambda slot: keras_hub_weight_name(slot.google_name),
                        native_shapes=True)
    report_unused(source, set(arrays), used)
    return encoder


def read_keras_hub_task(path: str | os.PathLike) -> KerasHubTask | None:
    """The classifier of a keras-hub `BertTextClassifier` preset (`task.json` and
    `task.weights.h5`): its classes, head kernel and bias, the preprocessor's
    sequence_length; None for a preset without a task (a backbone). Another task class
    is a `CheckpointError` that names it.

    >>> import tempfile
    >>> read_keras_hub_task(tempfile.mkdtemp()) is None
    True
    """
    path = os.fspath(path)
    task_path = os.path.join(path, KERAS_HUB_TASK)
    if not os.path.isfile(task_path):
        return None
    data = _read_json(task_path)
    if data.get("class_name") != "BertTextClassifier":
        raise CheckpointError(
            f"{task_path}: its task is a {data.get('class_name')!r}, which keras_bert does "
            "not read (only BertTextClassifier); its backbone loads with load_encoder.")
    config = data.get("config") or {}
    arrays = _read_h5(os.path.join(path, KERAS_HUB_TASK_WEIGHTS))
    kernel, bias = arrays.get(f"{KERAS_HUB_HEAD}/0"), arrays.get(f"{KERAS_HUB_HEAD}/1")
    num_classes = config.get("num_classes")
    if kernel is None or bias is None or kernel.shape[-1:] != bias.shape or \
            bias.shape != (num_classes,):
        raise CheckpointError(
            f"{os.path.join(path, KERAS_HUB_TASK_WEIGHTS)}: no classifier head of "
            f"{num_classes} classes in it ({KERAS_HUB_HEAD}/0 and /1); found "
            f"{sorted(arrays)[:10]}.")
    preprocessor = (config.get("preprocessor") or {}).get("config") or {}
    length = preprocessor.get("sequence_length")
    return KerasHubTask(int(num_classes), kernel.astype(np.float32), bias.astype(np.float32),
                        None if length is None else int(length),
                        config.get("activation") or "linear", float(config.get("dropout", 0.1)))
