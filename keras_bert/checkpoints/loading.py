"""Reading any checkpoint: its format detected from the path, then `read_config`,
`load_encoder` and `load_pretrainer` dispatch to the format's reader.
"""

from __future__ import annotations

import glob
import json
import os

from keras_bert.checkpoints.google import GOOGLE_CKPT, GOOGLE_CONFIG, google_config, open_google
from keras_bert.checkpoints.huggingface import HF_CONFIG, HF_WEIGHTS, hf_config, open_huggingface
from keras_bert.checkpoints.keras_hub import (
    is_keras_hub_preset,
    load_keras_hub_encoder,
    read_keras_hub_config,
)
from keras_bert.checkpoints.matching import (
    NamedCheckpoint,
    assign_slots,
    report_unused,
    tensorflow_for,
    unreadable,
)
from keras_bert.checkpoints.model_garden import (
    MODEL_GARDEN_PARAMS,
    TF2_VALUE,
    load_model_garden_encoder,
    model_garden_config,
)
from keras_bert.checkpoints.names import encoder_slots, pretrainer_head_slots
from keras_bert.checkpoints.native import (
    KERAS_BERT_CONFIG,
    is_training_checkpoint,
    load_native_encoder,
    load_training_encoder,
    load_training_pretrainer,
    native_config,
    training_checkpoint_config,
)
from keras_bert.checkpoints.remote import resolve_checkpoint_name
from keras_bert.checkpoints.training_runs import (
    find_run_directory,
    latest_run_checkpoint,
)
from keras_bert.core.errors import CheckpointError, InputNotFoundError
from keras_bert.core.run_files import RUN_CONFIG
from keras_bert.model.config import BertConfig
from keras_bert.model.encoder import BertEncoder

# An export's model card, VERSION/assets.extra/MODEL_CARD (written by keras_bert.export).
MODEL_CARD = "keras_bert.json"


class NoCheckpointError(InputNotFoundError):
    """A directory that holds no checkpoint: `empty`, or an export (`export`: what
    `describe_export` says of it), or neither (another directory); the message says so.
    A caller with its own advice for such a directory (`keras-bert export`) reads these."""

    def __init__(self, message: str, path: str, empty: bool = False,
                 export: tuple[str, str] | None = None):
        super().__init__(message)
        self.path, self.empty, self.export = path, empty, export


def detect_format(path: str | os.PathLike) -> tuple[str, str]:
    """(format, resolved path) of a checkpoint path or name (`hf://ORG/NAME`, a Google
    release name: fetched or found in the cache first): "keras_bert", "keras_hub", "hf",
    "google", "tf2" or "training" (a `keras-bert pretrain` training checkpoint, the
    resolved path its prefix). Raises with guidance (`NoCheckpointError` for a directory
    that holds none).

    >>> detect_format("/nonexistent/bert")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.InputNotFoundError: No checkpoint at '/nonexistent/bert': it does not exist (give a checkpoint directory or a Google checkpoint prefix).
    """
    path = resolve_checkpoint_name(os.fspath(path))
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, KERAS_BERT_CONFIG)):
            return "keras_bert", path
        if is_keras_hub_preset(path):
            return "keras_hub", path
        if os.path.isfile(os.path.join(path, HF_WEIGHTS)):
            return "hf", path
        prefix = _google_prefix_in_dir(path) or _pretraining_run_checkpoint(path)
        if prefix:
            return _prefix_format(prefix), prefix
        found = sorted(os.listdir(path))
        export = describe_export(path)
        if export:
            what, came_from = export
            raise NoCheckpointError(
                f"{path!r} is {what}, not a checkpoint: an export cannot be read back as a "
                "model; give the checkpoint or fine-tuning run directory it was exported "
                f"from{came_from}.", path, export=export)
        raise NoCheckpointError(
            f"{path!r} {'is empty: it holds' if not found else 'holds'} no BERT checkpoint: "
            f"expected {KERAS_BERT_CONFIG} (keras_bert), config.json + model.safetensors "
            f"(Hugging Face), config.json + model.weights.h5 (a keras-hub preset), "
            f"{GOOGLE_CONFIG} + {GOOGLE_CKPT}.index (Google TF1 or tf-models-official "
            "TF2), or a `keras-bert pretrain` run directory"
            + (f". Found: {found[:20]}" if found else "."), path, empty=not found)
    if os.path.isfile(path + ".index"):
        return _prefix_format(path), path
    if os.path.isfile(path):
        raise InputNotFoundError(
            f"{path!r} is a file, not a checkpoint: give the checkpoint's directory (Hugging "
            "Face, keras_bert, Google or tf-models-official) or a TF checkpoint prefix "
            "(without .index).")
    raise InputNotFoundError(f"No checkpoint at {path!r}: it does not exist (give a checkpoint "
                             "directory or a Google checkpoint prefix).")


# The model file of each export format in a version directory, and what it holds.
_EXPORT_FILES = {"saved_model.pb": "SavedModel", "saved_model.pbtxt": "SavedModel",
                 "model.tflite": "LiteRT model", "model.onnx": "ONNX model"}


def describe_export(directory: str) -> tuple[str, str] | None:
    """What a directory written by `keras-bert export` is, for messages, or None when
    it is none: (what it is, " (...)": where its model card says it was exported from,
    as `source_checkpoint`). Takes a version directory (`NAME/VERSION/saved_model.pb`,
    `model.tflite`, `model.onnx`) and the model's directory of numbered versions
    (`NAME/`, described by its newest version).

    Example:

    >>> import tempfile
    >>> version = os.path.join(tempfile.mkdtemp(), "sst2", "1")
    >>> os.makedirs(os.path.join(version, "assets.extra"))
    >>> _ = open(os.path.join(version, "saved_model.pb"), "wb").write(b"")
    >>> describe_export(version)[0]
    'an exported SavedModel (a TF Serving version directory)'
    >>> with open(os.path.join(version, "assets.extra", "keras_bert.json"), "w") as f:
    ...     _ = f.write('{"source_checkpoint": "/runs/sst2"}')
    >>> describe_export(os.path.dirname(version))
    ("a model's directory of exported versions (1), the newest an exported SavedModel",
     " (its model card's source_checkpoint names it: /runs/sst2)")
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        return None
    kind = _export_kind(directory)
    if kind is not None:
        where = "a TF Serving version directory" if kind == "SavedModel" else \
            "a version directory"
        return f"an exported {kind} ({where})", _came_from(directory)
    names = [n for n in os.listdir(directory) if not n.startswith(".")]
    versions = sorted(int(n) for n in names
                      if n.isdigit() and os.path.isdir(os.path.join(directory, n)))
    if not versions or len(versions) != len(names):
        return None
    newest = os.path.join(directory, str(versions[-1]))
    kind = _export_kind(newest)
    if kind is None:
        return None
    shown = ", ".join(map(str, versions[-5:]))
    return (f"a model's directory of exported versions ({shown}), the newest an exported "
            f"{kind}", _came_from(newest))


def _export_kind(directory: str) -> str | None:
    return next((kind for name, kind in _EXPORT_FILES.items()
                 if os.path.isfile(os.path.join(directory, name))), None)


def _came_from(version_directory: str) -> str:
    """Where an export's model card says it came from, as a parenthesis for messages."""
    card = os.path.join(version_directory, "assets.extra", MODEL_CARD)
    try:
        with open(card, encoding="utf-8") as f:
            source = json.load(f).get("source_checkpoint")
    except (OSError, ValueError, AttributeError):
        source = None
    if isinstance(source, str) and source:
        return f" (its model card's source_checkpoint names it: {source})"
    return f" (an export's model card, assets.extra/{MODEL_CARD}, names it as source_checkpoint)"


def _pretraining_run_checkpoint(directory: str) -> str | None:
    """The newest checkpoint of a `keras-bert pretrain` run directory whose trained
    encoder is not there yet (stopped before the end), or None for another directory."""
    run_dir = find_run_directory(directory)
    if run_dir is None:
        return None
    prefix = latest_run_checkpoint(run_dir)
    if prefix is None:
        raise InputNotFoundError(
            f"{directory!r} is a `keras-bert pretrain` run directory without a checkpoint or "
            "a trained encoder (its run stopped before saving one); resume the run with "
            "`keras-bert pretrain`, or give another checkpoint.")
    return prefix


def _google_prefix_in_dir(directory: str) -> str | None:
    preferred = os.path.join(directory, GOOGLE_CKPT)
    if os.path.isfile(preferred + ".index"):
        return preferred
    candidates = sorted(glob.glob(os.path.join(directory, "*.index")))
    if not candidates and not os.path.isfile(os.path.join(directory, "checkpoint")):
        return None  # no TF checkpoint here (and no need for TensorFlow to say so)
    tf = tensorflow_for(f"Reading the TensorFlow checkpoint in {directory}")
    latest = tf.train.latest_checkpoint(directory)
    if latest:
        return latest
    return candidates[0][: -len(".index")] if len(candidates) == 1 else None


def _prefix_format(prefix: str) -> str:
    """"training" for a training checkpoint of `keras-bert pretrain`, "tf2" for another
    object-based (TF2) checkpoint, "google" for a name-based TF1 one."""
    tf = tensorflow_for(f"Reading the TensorFlow checkpoint {prefix} (Google TF1, "
                        "tf-models-official or a `keras-bert pretrain` training checkpoint)")

    with unreadable(prefix + ".index"):
        names = [name for name, _ in tf.train.list_variables(prefix)]
    if is_training_checkpoint(names):
        return "training"
    return "tf2" if any(n.endswith(TF2_VALUE) for n in names) else "google"


def read_config(path: str | os.PathLike) -> BertConfig:
    """The `BertConfig` of a checkpoint, without reading its weights.

    Takes every path `load_encoder` takes (keras_bert, Hugging Face, Google or
    tf-models-official), so a config can be checked or adjusted before the weights are
    loaded. A tf-models-official checkpoint with neither a `bert_config.json` nor a
    `params.yaml` beside it gets its sizes from its variable shapes (see `load_encoder`).

    Example:

    >>> read_config("uncased_L-12_H-768_A-12").hidden_size  # doctest: +SKIP
    768
    """
    return format_config(*detect_format(path))


def format_config(fmt: str, resolved: str) -> BertConfig:
    """The `BertConfig` of a checkpoint whose format and path `detect_format` gave."""
    if fmt == "keras_bert":
        return native_config(resolved)
    if fmt == "hf":
        return hf_config(resolved)
    if fmt == "keras_hub":
        return read_keras_hub_config(resolved)
    if fmt == "tf2":
        return model_garden_config(resolved)
    if fmt == "training":
        return training_checkpoint_config(resolved)
    return google_config(resolved)


def config_file(path: str | os.PathLike) -> str | None:
    """The file that `read_config` reads a checkpoint's config from (for messages that
    name it): keras_bert_config.json, a Hugging Face or keras-hub config.json, Google's
    bert_config.json, a tf-models-official params.yaml, a `keras-bert pretrain` run's
    run_config.json; None for a tf-models-official checkpoint whose config is read off
    its variable shapes.

    Example:

    >>> config_file("uncased_L-12_H-768_A-12")  # doctest: +SKIP
    '.../uncased_L-12_H-768_A-12/bert_config.json'
    """
    fmt, resolved = detect_format(path)
    if fmt == "keras_bert":
        return os.path.join(resolved, KERAS_BERT_CONFIG)
    if fmt in ("hf", "keras_hub"):
        return os.path.join(resolved, HF_CONFIG)
    if fmt == "training":
        return os.path.join(find_run_directory(resolved), RUN_CONFIG)
    directory = os.path.dirname(resolved) or "."
    candidates = [GOOGLE_CONFIG] + ([MODEL_GARDEN_PARAMS] if fmt == "tf2" else [])
    return next((os.path.join(directory, name) for name in candidates
                 if os.path.isfile(os.path.join(directory, name))), None)


def load_encoder(path: str | os.PathLike, output_attentions: bool = False,
                 dtype=None) -> BertEncoder:
    """Builds a `BertEncoder` with the weights of a checkpoint.

    Args:
        path: a Hugging Face model directory (`config.json` + `model.safetensors`), a
            Google checkpoint (a directory with `bert_config.json` and
            `bert_model.ckpt.*`, or the checkpoint prefix), a tf-models-official (TF2
            Model Garden) checkpoint (its directory or prefix; see below), a directory
            written by `save_encoder` (a finished `keras-bert pretrain` run directory is
            one), or a training checkpoint of `keras-bert pretrain`
            (`RUN/checkpoints/ckpt-STEP`; `RUN/checkpoints`, or a run directory without
            its trained encoder yet, for the newest), read with the run's config.
        output_attentions: also return attention probabilities.
        dtype: dtype policy of the encoder (e.g. "mixed_bfloat16").

    Returns:
        The encoder. Head variables in the checkpoint (MLM/NSP) are reported as unused;
        use `load_pretrainer` to keep them.

    A tf-models-official checkpoint is the object-based TF2 checkpoint of its
    `BertEncoder` or `BertEncoderV2` (`tf.train.Checkpoint(encoder=...)`, as Model
    Garden's TF2 BERT checkpoints are released) or of a model holding one, such as
    `BertPretrainerV2` (`model/encoder_network/...`): the encoder is found under any
    prefix through the checkpoint's object graph, and tf-models-official need not be
    installed. Its config is the `bert_config.json` beside it, else the Model Garden
    `params.yaml` beside it (`task.model.encoder`; needs PyYAML), else it is read off
    the variable shapes: L, H, A (the query kernel is [H, A, H/A]), I, vocab, positions
    and segments, with the activation assumed to be tf-models-official's default GELU
    (the tanh approximation, "gelu_tanh") and dropouts 0.1; a warning says so. The
    variables cannot tell a pre-LayerNorm encoder (`norm_first=True`) from BERT's
    post-LayerNorm one: only its params.yaml does.

    Example:

    >>> encoder = load_encoder("uncased_L-12_H-768_A-12")  # doctest: +SKIP
    """
    fmt, resolved = detect_format(path)
    if fmt == "keras_bert":
        return load_native_encoder(resolved, output_attentions=output_attentions, dtype=dtype)
    if fmt == "tf2":
        return load_model_garden_encoder(resolved, output_attentions=output_attentions,
                                         dtype=dtype)
    if fmt == "training":
        return load_training_encoder(resolved, output_attentions=output_attentions,
                                     dtype=dtype)
    if fmt == "keras_hub":
        return load_keras_hub_encoder(resolved, BertEncoder(
            read_keras_hub_config(resolved), output_attentions=output_attentions, dtype=dtype))
    config, read, available, source, transpose, names = _open(fmt, resolved)
    encoder = BertEncoder(config, output_attentions=output_attentions, dtype=dtype)
    used = assign_slots(encoder_slots(encoder), read, source, transpose, names)
    report_unused(source, available, used, expected_extra=("cls/", "cls."))
    return encoder


def load_pretrainer(path: str | os.PathLike, dtype=None):
    """Builds a `BertPretrainer` (MLM + NSP) with encoder and head weights from a Google
    or Hugging Face pretraining checkpoint, or a training checkpoint of `keras-bert
    pretrain` (`RUN/checkpoints/ckpt-STEP`, `RUN/checkpoints` for its newest). A
    checkpoint without an NSP head gives a pretrainer with `next_sentence=False`; one
    without an MLM head is an error."""
    from keras_bert.model.models import BertPretrainer

    fmt, resolved = detect_format(path)
    if fmt == "training":
        return load_training_pretrainer(resolved, dtype=dtype)
    if fmt in ("keras_bert", "tf2", "keras_hub"):
        raise CheckpointError(f"{path!r} is read as an encoder only; load it with "
                              "load_encoder and wrap it in BertPretrainer.")
    config, read, available, source, transpose, names = _open(fmt, resolved)
    has_nsp = any(n.startswith(("cls/seq_relationship", "cls.seq_relationship"))
                  for n in available)
    model = BertPretrainer(BertEncoder(config, dtype=dtype), next_sentence=has_nsp)
    used = assign_slots(encoder_slots(model.encoder) + pretrainer_head_slots(model), read,
                        source, transpose, names)
    report_unused(source, available, used)
    return model


def _open(fmt: str, resolved: str) -> NamedCheckpoint:
    return open_google(resolved) if fmt == "google" else open_huggingface(resolved)
