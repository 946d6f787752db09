"""keras-hub BERT presets written without keras-hub (`save_keras_hub_preset`): the
directory `BertBackbone.save_to_preset` (with `BertTokenizer`'s) or
`BertTextClassifier`'s writes, its JSON in `keras.saving.serialize_keras_object`'s form
and its weights in Keras 3's h5 layout, so that keras-hub's `from_preset` loads it with
keras_bert's outputs. Reading presets back is `keras_hub`'s.
"""

from __future__ import annotations

import datetime
import logging
import os

import numpy as np

from keras_bert.checkpoints.keras_hub import (
    KERAS_HUB_ACTIVATION,
    KERAS_HUB_CONFIG,
    KERAS_HUB_HEAD,
    KERAS_HUB_LAYER_NORM_EPS,
    KERAS_HUB_METADATA,
    KERAS_HUB_PREPROCESSOR,
    KERAS_HUB_TASK,
    KERAS_HUB_TASK_WEIGHTS,
    KERAS_HUB_TOKENIZER,
    KERAS_HUB_VOCAB,
    KERAS_HUB_WEIGHTS,
    keras_hub_weight_name,
)
from keras_bert.checkpoints.names import encoder_slots
from keras_bert.core.errors import ArgumentError, VocabError, VocabMismatchError
from keras_bert.core.fileio import atomic_directory, json_text
from keras_bert.model.config import BertConfig
from keras_bert.model.encoder import BertEncoder
from keras_bert.text.vocab import load_vocab

logger = logging.getLogger("keras_bert")

# The special tokens keras-hub's BertTokenizer requires in a vocabulary.
_SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")
_MODULE = "keras_hub.src.models.bert."
# The state of the optimizer that keras-hub compiles a BertTextClassifier with
# (Adam(5e-5), unbuilt), which it expects in task.weights.h5.
_TASK_OPTIMIZER = {"optimizer/vars/0": np.asarray(0, np.int64),
                   "optimizer/vars/1": np.asarray(5e-5, np.float32)}


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
    # Its own check, not `vocab.check_vocab_matches`: keras-hub also needs the special tokens.
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


# The registered Keras name of keras_bert's classifier (the tasks stage's class).
CLASSIFIER = "keras_bert>BertClassifier"


def _split_model(model) -> tuple[BertEncoder, object | None]:
    """(encoder, classifier or None) of a `BertEncoder` or a keras_bert `BertClassifier`
    (the tasks stage's, known here by its registered Keras name)."""
    import keras

    if keras.saving.get_registered_name(type(model)) == CLASSIFIER:
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
    >>> from keras_bert.checkpoints.keras_hub import load_keras_hub_encoder, read_keras_hub_config
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
            f"{KERAS_HUB_HEAD}/0": np.asarray(head.kernel.numpy(), np.float32),
            f"{KERAS_HUB_HEAD}/1": np.asarray(head.bias.numpy(), np.float32), **_TASK_OPTIMIZER}

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
