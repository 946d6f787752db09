"""Reading any checkpoint: its format detected from the path, then `read_config`,
`load_encoder` and `load_pretrainer` dispatch to the format's reader.
"""

from __future__ import annotations

import glob
import os

from keras_bert.checkpoints.google import GOOGLE_CKPT, GOOGLE_CONFIG, google_config, open_google
from keras_bert.checkpoints.huggingface import HF_WEIGHTS, hf_config, open_huggingface
from keras_bert.checkpoints.matching import (
    NamedCheckpoint,
    assign_slots,
    report_unused,
    unreadable,
)
from keras_bert.checkpoints.model_garden import (
    TF2_VALUE,
    load_model_garden_encoder,
    model_garden_config,
)
from keras_bert.checkpoints.names import encoder_slots, pretrainer_head_slots
from keras_bert.checkpoints.native import KERAS_BERT_CONFIG, load_native_encoder, native_config
from keras_bert.config import BertConfig
from keras_bert.encoder import BertEncoder
from keras_bert.errors import CheckpointError, InputNotFoundError


def _detect(path: str) -> tuple[str, str]:
    """Returns (format, resolved path) for a checkpoint path; raises with guidance."""
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, KERAS_BERT_CONFIG)):
            return "keras_bert", path
        if os.path.isfile(os.path.join(path, HF_WEIGHTS)):
            return "hf", path
        prefix = _google_prefix_in_dir(path)
        if prefix:
            return _prefix_format(prefix), prefix
        raise InputNotFoundError(
            f"{path!r} holds no BERT checkpoint: expected {KERAS_BERT_CONFIG} (keras_bert), "
            f"config.json + model.safetensors (Hugging Face), or {GOOGLE_CONFIG} + "
            f"{GOOGLE_CKPT}.index (Google TF1 or tf-models-official TF2). Found: "
            f"{sorted(os.listdir(path))[:20]}")
    if os.path.isfile(path + ".index"):
        return _prefix_format(path), path
    if os.path.isfile(path):
        raise InputNotFoundError(
            f"{path!r} is a file, not a checkpoint: give the checkpoint's directory (Hugging "
            "Face, keras_bert, Google or tf-models-official) or a TF checkpoint prefix "
            "(without .index).")
    raise InputNotFoundError(f"No checkpoint at {path!r}: it does not exist (give a checkpoint "
                             "directory or a Google checkpoint prefix).")


def _google_prefix_in_dir(directory: str) -> str | None:
    preferred = os.path.join(directory, GOOGLE_CKPT)
    if os.path.isfile(preferred + ".index"):
        return preferred
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(directory)
    if latest:
        return latest
    candidates = sorted(glob.glob(os.path.join(directory, "*.index")))
    return candidates[0][: -len(".index")] if len(candidates) == 1 else None


def _prefix_format(prefix: str) -> str:
    """"tf2" for an object-based (TF2) checkpoint, "google" for a name-based TF1 one."""
    import tensorflow as tf

    with unreadable(prefix + ".index"):
        names = [name for name, _ in tf.train.list_variables(prefix)]
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
    fmt, resolved = _detect(path)
    if fmt == "keras_bert":
        return native_config(resolved)
    if fmt == "hf":
        return hf_config(resolved)
    if fmt == "tf2":
        return model_garden_config(resolved)
    return google_config(resolved)


def load_encoder(path: str | os.PathLike, output_attentions: bool = False,
                 dtype=None) -> BertEncoder:
    """Builds a `BertEncoder` with the weights of a checkpoint.

    Args:
        path: a Hugging Face model directory (`config.json` + `model.safetensors`), a
            Google checkpoint (a directory with `bert_config.json` and
            `bert_model.ckpt.*`, or the checkpoint prefix), a tf-models-official (TF2
            Model Garden) checkpoint (its directory or prefix; see below), or a
            directory written by `save_encoder`.
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
    fmt, resolved = _detect(path)
    if fmt == "keras_bert":
        return load_native_encoder(resolved, output_attentions=output_attentions, dtype=dtype)
    if fmt == "tf2":
        return load_model_garden_encoder(resolved, output_attentions=output_attentions,
                                         dtype=dtype)
    config, read, available, source, transpose, names = _open(fmt, resolved)
    encoder = BertEncoder(config, output_attentions=output_attentions, dtype=dtype)
    used = assign_slots(encoder_slots(encoder), read, source, transpose, names)
    report_unused(source, available, used, expected_extra=("cls/", "cls."))
    return encoder


def load_pretrainer(path: str | os.PathLike, dtype=None):
    """Builds a `BertPretrainer` (MLM + NSP) with encoder and head weights from a Google
    or Hugging Face pretraining checkpoint. A checkpoint without an NSP head gives a
    pretrainer with `next_sentence=False`; one without an MLM head is an error."""
    from keras_bert.models import BertPretrainer

    fmt, resolved = _detect(path)
    if fmt in ("keras_bert", "tf2"):
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
