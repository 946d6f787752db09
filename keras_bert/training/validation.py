"""Checks that run before training starts, so a mismatch is an error naming the
problem instead of a crash (or silent garbage) hours into a run.

`inspect_pretraining_data` reads the schema, sequence length and token ids of the
TFRecords (and the `pretraining_data*.json` sidecar written beside them, if any) and
checks that no file is cut short; the `check_*` functions compare them with the model
config, the vocab files and the batch. Every error is a `keras_bert.core.errors` type that
names the fields and files involved: `DataError` for malformed data, `MismatchError` for
inputs that do not belong together, `ArgumentError` for a value out of range.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import logging
import os

import keras
import numpy as np
import tensorflow as tf
from google.protobuf.message import DecodeError

from keras_bert.core import fileio, input_files
from keras_bert.core.errors import ArgumentError, DataError, MismatchError
from keras_bert.data.tfrecords import (
    MASKED_LM_FEATURES,
    PRETRAINING_SCHEMA,
    SIDECAR_PATTERN,
    check_shard_sizes,
)
from keras_bert.model.config import BertConfig
from keras_bert.text.tokenizer import load_vocab

logger = logging.getLogger("keras_bert")

_FILES_CHECKED = 64
# The record framing of local files is walked before training, up to this many bytes in
# all (about a second per GiB); files past it are only checked if training hits an error.
_FRAMING_CHECK_BYTES = 4 << 30


@dataclasses.dataclass(frozen=True)
class PretrainingDataInfo:
    """What the pretraining TFRecords hold.

    Attributes:
        files: the matched files.
        max_seq_length: the length of `input_ids`.
        max_predictions_per_seq: the width of the masked-LM features; None for
            unmasked files meant for dynamic masking.
        max_token_id: the largest token id in the records read.
        records_read: how many records `max_token_id` was taken from.
        settings: the sidecar's settings ({} without a sidecar).
        vocab: the sidecar's vocab record, {"sha256", "size"} ({} without one).
        sidecar: the sidecar's path (None without one).
        file_sizes: the size in bytes of each file.
    """

    files: tuple[str, ...]
    max_seq_length: int
    max_predictions_per_seq: int | None
    max_token_id: int
    records_read: int
    settings: dict
    vocab: dict
    sidecar: str | None = None
    file_sizes: tuple[int, ...] = ()

    @property
    def dynamic_masking(self) -> bool:
        return self.max_predictions_per_seq is None

    @property
    def where(self) -> str:
        """How messages name the data: its sidecar, else its first file."""
        return self.sidecar or self.files[0]


def _first_record(path: str) -> bytes:
    try:
        for record in tf.data.TFRecordDataset(path).take(1):
            return record.numpy()
    except tf.errors.DataLossError as e:
        raise DataError(f"not a TFRecord file, or cut short inside its first record "
                        f"({e.message}); copy or recreate it.", path=path) from None
    raise DataError("holds no records; remove it or recreate the data.", path=path)


def corrupt_record(path: str, size: int | None = None) -> str | None:
    """Where a TFRecord file's framing breaks (a record that runs past the end of the
    file, as a cut copy leaves it), as a message; None when every record is complete.

    Reads only the 8-byte length of each record (TFRecord framing: length, length CRC,
    data, data CRC). Local files only (None for remote ones).

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
    >>> with tf.io.TFRecordWriter(path) as w:
    ...     for _ in range(3):
    ...         w.write(b"0123456789")
    >>> corrupt_record(path) is None
    True
    >>> _ = os.truncate(path, 70)
    >>> corrupt_record(path)
    'record 3 (at byte 52) needs 26 bytes but the file ends after 18; the file is cut short or corrupted'
    """
    if fileio.is_remote(path):
        return None
    size = os.path.getsize(path) if size is None else size
    position, number = 0, 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while position < size:
            number += 1
            header = os.pread(fd, 8, position)
            needed = 16 + int.from_bytes(header, "little") if len(header) == 8 else 16
            if position + needed > size:
                return (f"record {number} (at byte {position}) needs {needed} bytes but the "
                        f"file ends after {size - position}; the file is cut short or "
                        "corrupted")
            position += needed
    finally:
        os.close(fd)
    return None


def _check_framing(files: list[str], sizes: list[int]) -> None:
    budget = _FRAMING_CHECK_BYTES
    for path, size in zip(files, sizes):
        if size > budget:
            break
        budget -= size
        problem = corrupt_record(path, size)
        if problem:
            raise DataError(f"{problem} (an interrupted copy?); copy or recreate it.",
                            path=path)


def data_loss_error(files, error: Exception) -> DataError:
    """The `DataError` for a `tf.errors.DataLossError` met while reading `files`: the
    file whose framing breaks, found by walking them all, else the files' pattern."""
    for path in files:
        problem = corrupt_record(path)
        if problem:
            return DataError(f"{problem}; copy or recreate it.", path=path)
    message = getattr(error, "message", str(error))
    return DataError(f"one of the {len(files)} input files (from {files[0]}) is corrupted: "
                     f"{message}")


def _schema_of(path: str, record: bytes) -> tuple[int, int | None]:
    """(max_seq_length, max_predictions_per_seq or None) of one record; raises on any
    difference from the pretraining schema."""
    try:
        features = tf.train.Example.FromString(record).features.feature
    except DecodeError as e:
        raise DataError(f"does not hold tf.train.Example records ({e}).", path=path) from None
    required = [n for n in PRETRAINING_SCHEMA if n not in MASKED_LM_FEATURES]
    missing = [n for n in required if n not in features]
    present_mlm = [n for n in MASKED_LM_FEATURES if n in features]
    if missing or 0 < len(present_mlm) < len(MASKED_LM_FEATURES):
        lacking = missing + [n for n in MASKED_LM_FEATURES if present_mlm and n not in features]
        raise DataError(
            f"not BERT pretraining data: it lacks the features {lacking} (it has "
            f"{sorted(features)}). Expected google-research/bert's schema "
            f"{list(PRETRAINING_SCHEMA)}, as `keras-bert create-pretraining-data` writes it.",
            path=path)
    widths = {}
    for name in required + present_mlm:
        kind, width = PRETRAINING_SCHEMA[name]
        feature = features[name]
        if feature.WhichOneof("kind") != kind:
            raise DataError(f"feature {name!r} is a {feature.WhichOneof('kind')}, expected "
                            f"a {kind}.", path=path)
        length = len(getattr(feature, kind).value)
        if width == 1 and length != 1:
            raise DataError(f"feature {name!r} has {length} values, expected 1.", path=path)
        if isinstance(width, str) and widths.setdefault(width, (name, length))[1] != length:
            other, other_length = widths[width]
            raise DataError(f"features {other!r} ({other_length} values) and {name!r} "
                            f"({length}) must have the same length.", path=path)
    predictions = widths.get("max_predictions_per_seq")
    return widths["max_seq_length"][1], predictions[1] if predictions else None


def _read_sidecar(files: list[str]) -> tuple[str | None, dict]:
    directory = os.path.dirname(files[0])
    names = sorted(n.rstrip("/") for n in fileio.listdir(directory or "."))
    for name in fnmatch.filter(names, SIDECAR_PATTERN):
        path = os.path.join(directory, name)
        try:
            return path, fileio.read_json(path)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
    return None, {}


def _max_token_id(files: list[str], sample_records: int) -> tuple[int, int]:
    max_id, count = 0, 0
    for path in files:
        if count >= sample_records:
            break
        try:
            for record in tf.data.TFRecordDataset(path).take(sample_records - count):
                try:
                    features = tf.train.Example.FromString(record.numpy()).features.feature
                except DecodeError as e:
                    raise DataError(f"record {count + 1} is not a tf.train.Example ({e}).",
                                    path=path) from None
                for name in ("input_ids", "masked_lm_ids"):
                    if name in features and features[name].int64_list.value:
                        max_id = max(max_id, int(np.max(features[name].int64_list.value)))
                count += 1
        except tf.errors.DataLossError as e:
            raise DataError(f"corrupted or cut short ({e.message}); copy or recreate it.",
                            path=path) from None
    return max_id, count


def inspect_pretraining_data(file_pattern: str, sample_records: int = 2000
                             ) -> PretrainingDataInfo:
    """Reads the schema and token ids of pretraining TFRecords.

    Every file's first record (up to 64 files) must have google-research/bert's schema
    with the same lengths; the first `sample_records` records give the largest token id;
    each file must have the size its sidecar records (if it records one), and the
    record framing of local files (up to 4 GiB in all) must be complete.

    Raises:
        InputNotFoundError: the pattern matches nothing.
        DataError: a file is not pretraining data, is cut short, or files disagree on
            lengths.

    Example:

    >>> info = inspect_pretraining_data("data/pretraining/*.tfrecord")  # doctest: +SKIP
    >>> info.max_seq_length, info.max_predictions_per_seq  # doctest: +SKIP
    (128, 20)
    """
    files = input_files.expand_patterns(file_pattern, what="input_file")
    sizes = [fileio.file_size(f) for f in files]
    shapes = {}
    for path in files[:_FILES_CHECKED]:
        shapes[path] = _schema_of(path, _first_record(path))
    distinct = sorted(set(shapes.values()), key=str)
    if len(distinct) > 1:
        examples = {shape: path for path, shape in shapes.items()}
        raise DataError("The input files were written with different (max_seq_length, "
                        f"max_predictions_per_seq): {examples}; train on one kind at a "
                        "time.")
    max_seq_length, max_predictions = distinct[0]
    check_shard_sizes(files)  # against the sizes the sidecar records, if any
    _check_framing(files, sizes)
    max_id, count = _max_token_id(files[:_FILES_CHECKED], sample_records)
    sidecar_path, sidecar = _read_sidecar(files)
    return PretrainingDataInfo(tuple(files), max_seq_length, max_predictions, max_id, count,
                               sidecar.get("settings", {}), sidecar.get("vocab", {}),
                               sidecar_path, tuple(sizes))


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
