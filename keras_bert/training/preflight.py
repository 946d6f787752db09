"""Checks that run before training starts, so a mismatch is an error naming the
problem instead of a crash (or silent garbage) hours into a run.

The data is read by `keras_bert.data.inspection.inspect_pretraining_data` (its schema,
sequence length, token ids and sidecar); the `check_*` functions here compare what it
found with the options, the model config, the vocab files and the batch. Every error is
a `keras_bert.core.errors` type that names the fields and files involved:
`MismatchError` for inputs that do not belong together, `ArgumentError` for a value out
of range.
"""

from __future__ import annotations

import dataclasses
import logging
import os

import keras

from keras_bert.core import input_files
from keras_bert.core.errors import ArgumentError, MismatchError
from keras_bert.data.inspection import PretrainingDataInfo
from keras_bert.model.config import BertConfig
from keras_bert.text.tokenizer import load_vocab

logger = logging.getLogger("keras_bert")


def check_data_flags(info: PretrainingDataInfo, *, max_seq_length: int | None = None,
                     max_predictions_per_seq: int | None = None) -> None:
    """Raises `MismatchError` when the options `max_seq_length` /
    `max_predictions_per_seq` (None: not given) differ from what the data holds.

    Example:

    >>> info = PretrainingDataInfo(("a.tfrecord",), 128, 20, 29000, 10, {}, {})
    >>> check_data_flags(info, max_seq_length=64)
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.MismatchError: a.tfrecord holds sequences of length 128, but max_seq_length is 64; ...
    """
    where = info.files[0]
    if max_seq_length is not None and max_seq_length != info.max_seq_length:
        raise MismatchError(
            f"{where} holds sequences of length {info.max_seq_length}, but max_seq_length "
            f"is {max_seq_length}; set max_seq_length to {info.max_seq_length} (or leave it "
            "out) or recreate the data with the length you want.")
    if (max_predictions_per_seq is not None and info.max_predictions_per_seq is not None
            and max_predictions_per_seq != info.max_predictions_per_seq):
        raise MismatchError(
            f"{where} holds {info.max_predictions_per_seq} masked-LM predictions per "
            f"sequence, but max_predictions_per_seq is {max_predictions_per_seq}; set it to "
            f"{info.max_predictions_per_seq} or leave it out.")


def check_data_fits_model(info: PretrainingDataInfo, config: BertConfig,
                          config_source: str = "the model") -> None:
    """Raises `MismatchError` when the data's sequences are longer than the position
    table or its token ids do not fit the embedding table.

    Example:

    >>> info = PretrainingDataInfo(("a.tfrecord",), 128, 20, 29000, 10, {}, {})
    >>> check_data_fits_model(info, BertConfig(vocab_size=8000))
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.MismatchError: a.tfrecord holds token id 29000, but the model's vocab_size is 8000: ...
    """
    where = info.files[0]
    source = _source(config_source)
    if info.max_seq_length > config.max_position_embeddings:
        raise MismatchError(
            f"{where} holds sequences of length {info.max_seq_length}, longer than the "
            f"model's max_position_embeddings={config.max_position_embeddings}{source}.")
    if info.max_token_id >= config.vocab_size:
        raise MismatchError(
            f"{where} holds token id {info.max_token_id}, but the model's vocab_size is "
            f"{config.vocab_size}{source}: the data was made with a larger vocab than the "
            "embedding table; use the matching vocab_file/config.")


def _source(config_source: str) -> str:
    return "" if config_source == "the model" else f" (from {config_source})"


def vocab_size_of(vocab_file: str) -> int:
    """The number of tokens in a vocab.txt, read (and checked) by `load_vocab`.

    Example:

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tokens.txt"
    >>> _ = path.write_text("[PAD]\\n[UNK]\\n[CLS]\\n")
    >>> vocab_size_of(str(path))
    3
    """
    return len(load_vocab(vocab_file))


@dataclasses.dataclass(frozen=True)
class _Vocab:
    label: str  # how messages name it
    path: str
    sha256: str
    size: int

    def __str__(self):
        return f"{self.label} {self.path} (sha256 {self.sha256[:12]}…, {self.size} tokens)"


def check_vocab(vocab_file: str | None, config: BertConfig,
                info: PretrainingDataInfo | None = None, *,
                checkpoint_vocab: str | None = None, pretrained: bool = False,
                config_source: str = "the model") -> None:
    """Checks that the vocabs that meet in a run belong together: `vocab_file`, the
    vocab the data was made with (its sidecar's `vocab` record), the vocab.txt beside
    the init checkpoint (`checkpoint_vocab`), and the model's embedding table.

    Raises `MismatchError`, naming both sides (paths, checksum prefixes, sizes), when:
    the checksum of `vocab_file` or `checkpoint_vocab` differs from the data's; the
    tokens of `vocab_file` and `checkpoint_vocab` differ; a vocab is larger than
    `config.vocab_size`; or, for `pretrained` weights, a vocab's size differs from the
    checkpoint's (its vocab.txt's size, else its config's vocab_size). Training from
    scratch with a vocab smaller than the table is allowed (a padded table), with a
    warning.

    Example:

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tokens.txt"
    >>> _ = path.write_text("\\n".join(f"t{i}" for i in range(100)) + "\\n")
    >>> check_vocab(str(path), BertConfig(vocab_size=64))
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.MismatchError: vocab_file ... has 100 tokens but the model's embedding table has 64 rows ...
    """
    vocabs = []
    if vocab_file:
        vocab_file = os.fspath(vocab_file)
        vocabs.append(_Vocab("vocab_file", vocab_file, "", vocab_size_of(vocab_file)))
    if checkpoint_vocab:
        vocabs.append(_Vocab("the init_checkpoint's vocab", checkpoint_vocab, "",
                             vocab_size_of(checkpoint_vocab)))
    vocabs = [dataclasses.replace(v, sha256=input_files.file_sha256(v.path)) for v in vocabs]
    data_vocab = (info.vocab or {}) if info else {}
    recorded, recorded_size = data_vocab.get("sha256"), data_vocab.get("size")
    if recorded:
        data_directory = os.path.dirname(info.files[0]) or "."
        for vocab in vocabs:
            if vocab.sha256 != recorded:
                size = f", {recorded_size} tokens" if recorded_size is not None else ""
                raise MismatchError(
                    f"The TFRecords in {data_directory} were made with another vocab "
                    f"(sha256 {recorded[:12]}…{size}, per {info.where}) than {vocab}; the "
                    "token ids would not match the vocab. Use the vocab.txt the data was "
                    "made with, or recreate the data with this one.")
    if len(vocabs) == 2 and vocabs[0].sha256 != vocabs[1].sha256 and (
            load_vocab(vocabs[0].path) != load_vocab(vocabs[1].path)):
        raise MismatchError(f"{vocabs[0]} differs from {vocabs[1]}; continue pretraining "
                            "with the vocab that came with the checkpoint.")

    source = _source(config_source)
    sizes = [(f"{v.label} {v.path}", v.size) for v in vocabs]
    if recorded_size is not None:
        sizes.append((f"the data's vocab (per {info.where})", int(recorded_size)))
    expected, expected_from = config.vocab_size, f"the vocab_size of its config{source}"
    if checkpoint_vocab:
        checkpoint = next(v for v in vocabs if v.path == checkpoint_vocab)
        expected, expected_from = checkpoint.size, f"its vocab.txt {checkpoint.path}"
    for name, size in sizes:
        if size > config.vocab_size:
            raise MismatchError(
                f"{name} has {size} tokens but the model's embedding table has "
                f"{config.vocab_size} rows (vocab_size{source}); ids past it could not be "
                "embedded. "
                "Use a config with vocab_size >= the vocab, or a preset (which takes the "
                "vocab's size).")
        if pretrained and size != expected:
            raise MismatchError(
                f"{name} has {size} tokens but the init_checkpoint's vocab has {expected} "
                f"({expected_from}): it is another model's vocab. Use the checkpoint's "
                "vocab.txt and data made with it.")
        if not pretrained and size < config.vocab_size:
            logger.warning("%s has %d tokens, fewer than the model's vocab_size %d%s: the "
                           "extra embedding rows stay unused.", name, size, config.vocab_size,
                           source)


def check_batch(global_batch_size: int, num_replicas: int,
                gradient_accumulation_steps: int = 1) -> int:
    """Returns the per-replica micro-batch size; raises `ArgumentError` unless the
    global batch splits evenly over accumulation steps and replicas.

    Example:

    >>> check_batch(32, num_replicas=2, gradient_accumulation_steps=4)
    4
    >>> check_batch(30, num_replicas=4)
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: train_batch_size 30 is not divisible by the 4 replicas ...
    """
    if global_batch_size < 1:
        raise ArgumentError(f"train_batch_size must be >= 1, got {global_batch_size}.",
                            field="train_batch_size")
    if global_batch_size % gradient_accumulation_steps:
        raise ArgumentError(
            f"train_batch_size {global_batch_size} is not divisible by "
            f"gradient_accumulation_steps {gradient_accumulation_steps}.",
            field="train_batch_size")
    micro = global_batch_size // gradient_accumulation_steps
    if micro % num_replicas:
        detail = (f" (a micro-batch of {micro} after {gradient_accumulation_steps} "
                  "accumulation steps)" if gradient_accumulation_steps > 1 else "")
        raise ArgumentError(
            f"train_batch_size {global_batch_size}{detail} is not divisible by the "
            f"{num_replicas} replicas of the strategy; every replica needs an equal share. "
            f"Use a multiple of {num_replicas * gradient_accumulation_steps}.",
            field="train_batch_size")
    return micro // num_replicas


def check_static_shapes(element_spec) -> None:
    """Raises ValueError if a dataset's elements have a dimension of unknown size
    (TPUs and XLA need static shapes: batch with drop_remainder, fixed widths).

    Example:

    >>> import tensorflow as tf
    >>> spec = {"input_word_ids": tf.TensorSpec([None, 128], tf.int32)}
    >>> check_static_shapes(spec)
    Traceback (most recent call last):
    ...
    ValueError: Input 'input_word_ids' has shape (None, 128); TPU/XLA training needs ...
    """
    for path, spec in keras.tree.flatten_with_path(element_spec):
        path = "/".join(map(str, path))
        if not spec.shape.is_fully_defined():
            raise ValueError(
                f"Input {path!r} has shape {tuple(spec.shape)}; TPU/XLA training needs "
                "static shapes (batch with drop_remainder=True and fixed-width features).")
