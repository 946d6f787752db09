"""Inspecting pretraining TFRecords before they are read for training: their schema,
sequence lengths and token ids, the `pretraining_data*.json` sidecar written beside
them, and the record framing that a cut copy breaks.

`inspect_pretraining_data` reads the schema, sequence length and token ids of the
TFRecords (and the sidecar, if any) and checks that no file is cut short, returning a
`PretrainingDataInfo`; `corrupt_record` finds where a file's framing breaks and
`data_loss_error` turns a `tf.errors.DataLossError` met while reading into a
`DataError` naming the file. Malformed data raises `keras_bert.core.errors.DataError`,
naming the fields and files involved.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os

import numpy as np
import tensorflow as tf
from google.protobuf.message import DecodeError

from keras_bert.core import fileio, input_files
from keras_bert.core.errors import DataError
from keras_bert.data.tfrecords import (
    MASKED_LM_FEATURES,
    PRETRAINING_SCHEMA,
    SIDECAR_PATTERN,
    check_shard_sizes,
)

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
