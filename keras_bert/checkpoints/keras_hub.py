"""keras-hub BERT presets, read and written without keras-hub: the directory that
`BertBackbone.save_to_preset` (with `BertTokenizer`'s) or `BertTextClassifier`'s writes:
`config.json`, `model.weights.h5` (Keras 3's h5 layout), `tokenizer.json`,
`assets/tokenizer/vocabulary.txt`, `metadata.json`, for a task also `task.json` and
`task.weights.h5`. Weights are read with h5py and matched to the encoder by slot.

keras-hub's BERT computes what keras_bert's encoder computes with `hidden_act=
"gelu_tanh"` (its `gelu_approximate`), LayerNorm epsilon 1e-12, one dropout rate for
hidden states and attention, the 1/sqrt(H/A) attention scale and a tanh pooler over
[CLS]; a preset reads as such a `BertConfig`. An encoder with another activation or
epsilon has no keras-hub BERT preset (see `save_keras_hub_preset`).
"""

from __future__ import annotations

import datetime
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
    VocabError,
    VocabMismatchError,
)
from keras_bert.core.fileio import atomic_directory, json_text
from keras_bert.model.config import BertConfig, read_json_object
from keras_bert.model.encoder import BertEncoder
from keras_bert.text.vocab import load_vocab

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
# The special tokens keras-hub's BertTokenizer requires in a vocabulary.
_SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")
_MODULE = "keras_hub.src.models.bert."
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
# The classifier head's dense layer in task.weights.h5, and the state of the optimizer
# that keras-hub compiles a BertTextClassifier with (Adam(5e-5), unbuilt), which it expects.
_HEAD = "layers/dense/vars"
_TASK_OPTIMIZER = {"optimizer/vars/0": np.asarray(0, np.int64),
                   "optimizer/vars/1": np.asarray(5e-5, np.float32)}


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
    kernel, bias = arrays.get(f"{_HEAD}/0"), arrays.get(f"{_HEAD}/1")
    num_classes = config.get("num_classes")
    if kernel is None or bias is None or kernel.shape[-1:] != bias.shape or \
            bias.shape != (num_classes,):
        raise CheckpointError(
            f"{os.path.join(path, KERAS_HUB_TASK_WEIGHTS)}: no classifier head of "
            f"{num_classes} classes in it ({_HEAD}/0 and /1); found {sorted(arrays)[:10]}.")
    preprocessor = (config.get("preprocessor") or {}).get("config") or {}
    length = preprocessor.get("sequence_length")
    return KerasHubTask(int(num_classes), kernel.astype(np.float32), bias.astype(np.float32),
                        None if length is None else int(length),
                        config.get("activation") or "linear", float(config.get("dropout", 0.1)))


def load_keras_hub_classifier(path: str | os.PathLike, dtype=None):
    """A keras_bert `BertClassifier` with the backbone and head of a keras-hub
    `BertTextClassifier` preset. It outputs logits: a preset whose `activation` is not
    linear (e.g. "softmax") outputs that activation of them in keras-hub.

    >>> import tempfile
    >>> load_keras_hub_classifier(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.InputNotFoundError: keras-hub preset ... has no config.json.
    """
    from keras_bert.model.models import BertClassifier

    config = read_keras_hub_config(path)
    task = read_keras_hub_task(path)
    if task is None:
        raise CheckpointError(f"keras-hub preset {os.fspath(path)!r} has no {KERAS_HUB_TASK}: "
                              "it is a backbone; load it with load_encoder.")
    encoder = load_keras_hub_encoder(path, BertEncoder(config, dtype=dtype))
    model = BertClassifier(encoder, num_classes=task.num_classes, dropout=task.dropout)
    head = model.get_layer("logits")
    head.kernel.assign(task.kernel)
    head.bias.assign(task.bias)
    if task.activation != "linear":
        logger.info("%s: keras-hub applies %r to these logits.", path, task.activation)
    return model


# --- writing ------------------------------------------------------------------------------

def _serialized(module: str, class_name: str, config: dict, dtype: str = "float32") -> dict:
    """A keras-hub object as `keras.saving.serialize_keras_object` writes it."""
    dtype_policy = {"module": "keras", "class_name": "DTypePolicy",
                    "config": {"name": dtype}, "registered_name": None}
    return {"module": _MODULE + module, "class_name": class_name,
            "config": {"name": module, "trainable": True, "dtype": dtype_policy, **config},
            "registered_name": f"keras_hub>{class_name}"}


def _backbone_json(config: BertConfig) -> dict:
    return _serialized("bert_backbone", "BertBackbone", {
        "vocabulary_size": config.vocab_size, "num_layers": config.num_layers,
        "num_heads": config.num_heads, "hidden_dim": config.hidden_size,
        "intermediate_dim": config.intermediate_size, "dropout": config.hidden_dropout,
        "max_sequence_length": config.max_position_embeddings,
        "num_segments": config.type_vocab_size})


def _tokenizer_json(lower_case: bool) -> dict:
    # strip_accents follows lowercase: keras_bert's (Google's) uncased tokenizer strips them.
    return _serialized("bert_tokenizer", "BertTokenizer", {
        "config_file": KERAS_HUB_TOKENIZER, "vocabulary": None, "sequence_length": None,
        "lowercase": lower_case, "strip_accents": lower_case, "split": True,
        "suffix_indicator": "##", "oov_token": "[UNK]"}, dtype="int32")


def _classifier_json(config: BertConfig, lower_case: bool, num_classes: int, dropout: float,
                     sequence_length: int) -> tuple[dict, dict]:
    """(task.json, preprocessor.json) of a `BertTextClassifier`."""
    preprocessor = _serialized("bert_text_classifier_preprocessor",
                               "BertTextClassifierPreprocessor", {
                                   "tokenizer": _tokenizer_json(lower_case),
                                   "config_file": KERAS_HUB_PREPROCESSOR,
                                   "sequence_length": sequence_length,
                                   "truncate": "round_robin"})
    task = _serialized("bert_text_classifier", "BertTextClassifier", {
        "backbone": _backbone_json(config), "preprocessor": preprocessor,
        "num_classes": num_classes, "activation": "linear", "dropout": dropout})
    return task, preprocessor


def _write_h5(path: str, arrays: dict[str, np.ndarray]) -> None:
    """A Keras 3 weights file: each array at its `.../vars/N` path."""
    import h5py

    with h5py.File(path, "w") as f:
        f.create_group("vars")
        for key, value in arrays.items():
            group, index = key.rsplit("/", 1)
            f.require_group(group).create_dataset(index, data=value)


def _check_representable(config: BertConfig, approximate_gelu: bool) -> None:
    """Raises `ArgumentError` unless keras-hub's BertBackbone computes what `config` does
    (with `approximate_gelu`, an exact-GELU encoder is written for keras-hub's tanh GELU)."""
    if config.layer_norm_eps != KERAS_HUB_LAYER_NORM_EPS:
        raise ArgumentError(
            f"keras-hub's BertBackbone fixes its LayerNorm epsilon at 1e-12; this encoder's "
            f"is {config.layer_norm_eps}, which a keras-hub preset cannot record.",
            field="layer_norm_eps")
    if config.hidden_act == "gelu" and approximate_gelu:
        logger.warning("keras-hub's BertBackbone computes the tanh GELU: the preset's outputs "
                       "differ slightly from this exact-GELU encoder's (about 4e-3 at most "
                       "for MiniLM-L6's sequence output).")
    elif config.hidden_act != KERAS_HUB_ACTIVATION:
        extra = (" (pass approximate_gelu=True to write it for that approximation; the "
                 "outputs change by up to a few 1e-3)" if config.hidden_act == "gelu" else "")
        raise ArgumentError(
            f"keras-hub's BertBackbone computes the tanh GELU (keras_bert's 'gelu_tanh'); "
            f"this encoder's hidden_act is {config.hidden_act!r}{extra}.", field="hidden_act")


def _vocabulary(vocab_file: str, config: BertConfig) -> list[str]:
    """The tokens of `vocab_file`, checked to fit the encoder and keras-hub's tokenizer."""
    # Not `vocab.check_vocab_matches`: `vocab` finds a preset's vocab through this module.
    tokens = load_vocab(vocab_file)
    if len(tokens) != config.vocab_size:
        raise VocabMismatchError(f"the vocab {os.fspath(vocab_file)} has {len(tokens)} tokens "
                                 f"but the encoder has {config.vocab_size}; give the vocab.txt "
                                 "it was trained with.")
    missing = [t for t in _SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise VocabError(f"keras-hub's BertTokenizer needs {missing} in the vocabulary, which "
                         "lacks them.", path=os.fspath(vocab_file))
    return list(tokens)


def _split_model(model) -> tuple[BertEncoder, object | None]:
    """(encoder, classifier or None) of a `BertEncoder` or a keras_bert `BertClassifier`."""
    from keras_bert.model.models import BertClassifier

    if isinstance(model, BertClassifier):
        return model.encoder, model
    if isinstance(model, BertEncoder):
        return model, None
    raise ArgumentError(f"save_keras_hub_preset writes a BertEncoder or a BertClassifier, "
                        f"not a {type(model).__name__}.", field="model")


def _metadata(encoder: BertEncoder) -> dict:
    import importlib.metadata

    import keras

    try:  # keras-hub writes its version; a preset written without it has none
        hub_version = importlib.metadata.version("keras-hub")
    except importlib.metadata.PackageNotFoundError:
        hub_version = None
    return {"keras_version": keras.version(), "keras_hub_version": hub_version,
            "parameter_count": encoder.count_params(),
            "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
            "tasks": ["MaskedLM", "TextClassifier", "TextEmbedder"], "written_by": "keras_bert"}


def save_keras_hub_preset(model, directory: str | os.PathLike, vocab_file: str | os.PathLike,
                          lower_case: bool = True, sequence_length: int | None = None,
                          approximate_gelu: bool = False, overwrite: bool = False) -> None:
    """Writes a keras_bert `BertEncoder`, or a `BertClassifier`, as a keras-hub BERT preset
    that `keras_hub.models.BertBackbone.from_preset(directory)` and
    `BertTokenizer.from_preset(directory)` (for a classifier also
    `BertTextClassifier.from_preset(directory)`) load with the same outputs. keras-hub is
    not needed: the files are written directly, the weights in Keras 3's h5 layout.

    Args:
        model: a `BertEncoder` (a backbone preset) or a `BertClassifier` (a
            `BertTextClassifier` preset: backbone, linear head, preprocessor).
        directory: the preset directory; written under a temporary name and renamed into
            place, so a failed save leaves nothing behind. A non-empty one is an error
            unless `overwrite=True`.
        vocab_file: the encoder's vocab (its size must be the encoder's).
        lower_case: whether the tokenizer lower-cases (and strips accents) as keras_bert's.
        sequence_length: a classifier preset's preprocessor length (default: the
            encoder's max_position_embeddings).
        approximate_gelu: write an exact-GELU encoder (`hidden_act="gelu"`, Hugging Face's)
            although keras-hub computes the tanh GELU, which moves outputs (by up to 4e-3 on
            MiniLM-L6's sequence output, against values of up to 6); without
            it that is an `ArgumentError`, as is any other activation or LayerNorm epsilon.

    Example:

    >>> import tempfile
    >>> from keras_bert import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=8,
    ...                                              hidden_act="gelu_tanh"))
    >>> vocab = os.path.join(tempfile.mkdtemp(), "vocab")
    >>> _ = open(vocab, "w").write("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\na\\nb\\nc\\n")
    >>> preset = os.path.join(tempfile.mkdtemp(), "preset")
    >>> save_keras_hub_preset(encoder, preset, vocab)
    >>> sorted(os.listdir(preset))
    ['assets', 'config.json', 'metadata.json', 'model.weights.h5', 'tokenizer.json']
    >>> read_keras_hub_config(preset) == encoder.config
    True
    >>> again = load_keras_hub_encoder(preset, BertEncoder(encoder.config))
    >>> all((a == b).all() for a, b in zip(encoder.get_weights(), again.get_weights()))
    True
    """
    encoder, classifier = _split_model(model)
    config = encoder.config
    _check_representable(config, approximate_gelu)
    tokens = _vocabulary(vocab_file, config)
    files = {KERAS_HUB_CONFIG: _backbone_json(config),
             KERAS_HUB_TOKENIZER: _tokenizer_json(lower_case),
             KERAS_HUB_METADATA: _metadata(encoder)}
    weights = {KERAS_HUB_WEIGHTS: {
        keras_hub_weight_name(slot.google_name): np.asarray(slot.variable.numpy(), np.float32)
        for slot in encoder_slots(encoder)}}
    sequence_length = sequence_length or config.max_position_embeddings
    if not 1 <= sequence_length <= config.max_position_embeddings:
        raise ArgumentError(f"sequence_length {sequence_length} is not within 1 and the "
                            f"encoder's {config.max_position_embeddings} positions.",
                            field="sequence_length")
    if classifier is not None:
        head = classifier.get_layer("logits")
        files[KERAS_HUB_TASK], files[KERAS_HUB_PREPROCESSOR] = _classifier_json(
            config, lower_case, classifier.num_classes, classifier.dropout, sequence_length)
        weights[KERAS_HUB_TASK_WEIGHTS] = {
            f"{_HEAD}/0": np.asarray(head.kernel.numpy(), np.float32),
            f"{_HEAD}/1": np.asarray(head.bias.numpy(), np.float32), **_TASK_OPTIMIZER}

    def write(tmp):
        for name, data in files.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(json_text(data, indent=4, sort_keys=False) + "\n")
        os.makedirs(os.path.dirname(os.path.join(tmp, KERAS_HUB_VOCAB)))
        with open(os.path.join(tmp, KERAS_HUB_VOCAB), "w", encoding="utf-8") as f:
            f.write("".join(f"{token}\n" for token in tokens))
        for name, arrays in weights.items():
            _write_h5(os.path.join(tmp, name), arrays)

    atomic_directory(directory, write, overwrite=overwrite)
