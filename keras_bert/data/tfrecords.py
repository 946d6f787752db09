"""The pretraining TFRecord format: schema, vectorized serialization, atomic shard writes
and the tf.data training reader.

The schema is google-research/bert's, feature for feature: int64 `input_ids`,
`input_mask`, `segment_ids` ([max_seq_length]), int64 `masked_lm_positions`,
`masked_lm_ids` and float `masked_lm_weights` ([max_predictions_per_seq], zero-padded),
int64 `next_sentence_labels` ([1], 1 = random next). Files for dynamic masking hold the
unmasked `input_ids` and leave out the three `masked_lm_*` features. `PRETRAINING_SCHEMA`
states it once; `feature_spec` is its parsing spec.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf

from keras_bert.core import fileio, input_files
from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.data.masking import MaskedLmMasker

# google-research/bert's pretraining example: feature -> (the `tf.train.Feature` list it
# is, its width): "max_seq_length", "max_predictions_per_seq" or a number.
PRETRAINING_SCHEMA: dict[str, tuple[str, str | int]] = {
    "input_ids": ("int64_list", "max_seq_length"),
    "input_mask": ("int64_list", "max_seq_length"),
    "segment_ids": ("int64_list", "max_seq_length"),
    "masked_lm_positions": ("int64_list", "max_predictions_per_seq"),
    "masked_lm_ids": ("int64_list", "max_predictions_per_seq"),
    "masked_lm_weights": ("float_list", "max_predictions_per_seq"),
    "next_sentence_labels": ("int64_list", 1),
}
# The features that files for dynamic masking leave out.
MASKED_LM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
_DTYPES = {"int64_list": tf.int64, "float_list": tf.float32}
# The JSON sidecars `create_pretraining_data` writes beside the shards.
SIDECAR_PATTERN = "pretraining_data*.json"


def feature_spec(max_seq_length: int, max_predictions_per_seq: int | None = None
                 ) -> dict[str, tf.io.FixedLenFeature]:
    """The parsing spec of a pretraining example (`PRETRAINING_SCHEMA`), in the
    original's feature order.

    Args:
        max_seq_length: the length of `input_ids`, `input_mask` and `segment_ids`.
        max_predictions_per_seq: the width of the masked-LM features; None for files
            written for dynamic masking, which have none.

    Example:

    >>> list(feature_spec(128, 20))
    ['input_ids', 'input_mask', 'segment_ids', 'masked_lm_positions', 'masked_lm_ids', \
'masked_lm_weights', 'next_sentence_labels']
    >>> list(feature_spec(128))
    ['input_ids', 'input_mask', 'segment_ids', 'next_sentence_labels']
    """
    widths = {"max_seq_length": max_seq_length,
              "max_predictions_per_seq": max_predictions_per_seq}
    return {name: tf.io.FixedLenFeature([widths.get(width, width)], _DTYPES[kind])
            for name, (kind, width) in PRETRAINING_SCHEMA.items()
            if max_predictions_per_seq is not None or name not in MASKED_LM_FEATURES}


def serialize_examples(features: Mapping[str, np.ndarray]) -> list[bytes]:
    """Serializes a batch of fixed-width features into `tf.train.Example` protos, all at
    once in numpy (no Python loop per example, no TF op).

    The bytes are protobuf's encoding of such an Example: one map entry per feature in
    the dict's order, lists packed (varints for Int64List, little-endian float32 for
    FloatList). They are computed as whole-batch byte matrices: every piece of a record
    (tags, keys, length prefixes, values) is a column block, varints take as many
    columns as the batch's largest needs, and a mask keeps each record's own bytes.

    Args:
        features: name -> [n, width] array; float32 becomes a FloatList, integers an
            Int64List (negative ones as protobuf encodes them, ten bytes each).

    Returns:
        The n serialized examples.

    Example:

    >>> records = serialize_examples({"ids": np.array([[1, 2], [3, 300]]),
    ...                               "w": np.array([[0.5], [1.0]], "float32")})
    >>> tf.train.Example.FromString(records[1]).features.feature["ids"].int64_list.value
    [3, 300]
    """
    values = {name: np.asarray(array) for name, array in features.items()}
    n = len(next(iter(values.values())))
    record = _ByteColumns(n)
    entries = []  # per feature: its map entry's pieces, and the entry's length
    entries_length = np.zeros(n, np.int64)
    for name, array in values.items():
        if array.ndim != 2 or len(array) != n:
            raise ValueError(f"Feature {name!r} has shape {array.shape}; every feature must "
                             f"be [n, width] with the same n ({n}).")
        if array.dtype == np.float32:
            list_field = 0x12  # Feature.float_list, length-delimited
            payload = (array.astype("<f4").view(np.uint8), None)
            payload_length = np.full(n, 4 * array.shape[1], np.int64)
        elif np.issubdtype(array.dtype, np.integer):
            list_field = 0x1A  # Feature.int64_list
            *payload, payload_length = _varints(array.astype(np.int64).view(np.uint64))
        else:
            raise TypeError(f"Feature {name!r} is {array.dtype}; a tf.train.Example holds "
                            "float32 or integer values here.")
        key = name.encode("utf-8")
        # An empty list has no packed field at all, as protobuf writes it.
        list_length = np.where(payload_length > 0,
                               1 + _varint_length(payload_length) + payload_length, 0)
        feature_length = 1 + _varint_length(list_length) + list_length
        entry_length = (2 + len(key) + _varint_length(np.int64(len(key)))
                        + _varint_length(feature_length) + feature_length)
        entries.append((key, list_field, list_length, feature_length, entry_length,
                        payload_length, payload))
        entries_length += 1 + _varint_length(entry_length) + entry_length
    record.constant(b"\x0a")  # Example.features
    record.varint(entries_length)
    for key, list_field, list_length, feature_length, entry_length, payload_length, payload \
            in entries:
        record.constant(b"\x0a")  # Features.feature: one map entry
        record.varint(entry_length)
        record.constant(b"\x0a" + _encode_varint(len(key)) + key + b"\x12")  # key, value
        record.varint(feature_length)
        record.constant(bytes([list_field]))
        record.varint(list_length)
        if payload[0].shape[1]:
            record.constant(b"\x0a")  # the packed `value` field
            record.varint(payload_length)
            record.block(*payload)
    return record.split()


class _ByteColumns:
    """The bytes of n records as column blocks: [n, width] uint8 each, with an optional
    mask of the bytes a record really has (left out: all of them)."""

    def __init__(self, n: int):
        self.n = n
        self.blocks: list[tuple[np.ndarray, np.ndarray | None]] = []
        self._pending = b""

    def constant(self, data: bytes) -> None:
        self._pending += data

    def varint(self, values: np.ndarray) -> None:
        digits, keep, _ = _varints(np.asarray(values, np.int64).view(np.uint64)[:, None])
        self.block(digits, keep)

    def block(self, data: np.ndarray, keep: np.ndarray | None) -> None:
        self._flush()
        self.blocks.append((data, keep))

    def _flush(self) -> None:
        if self._pending:
            row = np.frombuffer(self._pending, np.uint8)
            self.blocks.append((np.broadcast_to(row, (self.n, len(row))), None))
            self._pending = b""

    def split(self) -> list[bytes]:
        self._flush()
        data = np.concatenate([block for block, _ in self.blocks], axis=1)
        keep = np.ones(data.shape, bool)
        column = 0
        for block, mask in self.blocks:
            if mask is not None:
                keep[:, column:column + block.shape[1]] = mask
            column += block.shape[1]
        flat = data[keep].tobytes()
        ends = np.cumsum(np.count_nonzero(keep, axis=1)).tolist()
        return [flat[start:end] for start, end in zip([0, *ends[:-1]], ends)]


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Protobuf varints of uint64 values [n, width]: the bytes [n, width * b] (b bytes
    per value, as many as the largest needs), the mask of those each value uses (None
    when all are), and the bytes per row."""
    n, width = values.shape
    top = int(values.max()) if values.size else 0
    size = max(1, -(-top.bit_length() // 7))
    if size == 1:
        return values.astype(np.uint8), None, np.full(n, width, np.int64)
    if top < 2**32:
        values = values.astype(np.uint32)  # faster arithmetic, same bits
    # Byte k holds bits 7k.. and has the continuation bit if the value reaches byte k + 1.
    reaches = [values >= values.dtype.type(1 << 7 * k) for k in range(1, size)]
    digits = np.empty((n, width, size), np.uint8)
    for k in range(size):
        digit = (values >> values.dtype.type(7 * k)).astype(np.uint8) & np.uint8(0x7F)
        digits[..., k] = digit | (reaches[k].view(np.uint8) << np.uint8(7)) if k < size - 1 \
            else digit
    keep = np.empty((n, width, size), bool)
    keep[..., 0] = True
    for k in range(1, size):
        keep[..., k] = reaches[k - 1]
    used = width + sum(r.sum(axis=1) for r in reaches)
    return digits.reshape(n, width * size), keep.reshape(n, width * size), used


def _varint_length(values) -> np.ndarray:
    """Bytes in the varints of non-negative int64 values."""
    values = np.asarray(values, np.int64)
    return 1 + sum((values >> shift > 0).astype(np.int64) for shift in range(7, 64, 7))


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_tfrecord(path: str | os.PathLike, records) -> None:
    """Writes serialized records to `path` all or nothing (`keras_bert.core.fileio.atomic_path`):
    into a hidden temporary file beside it, renamed over `path` only once complete and
    removed on an error; a killed process leaves at most that hidden file, which no
    `*.tfrecord` glob matches and `keras_bert.core.fileio.remove_stale_temporaries` clears.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
    >>> write_tfrecord(path, [b"a", b"b"])
    >>> [r.numpy() for r in tf.data.TFRecordDataset(path)]
    [b'a', b'b']
    """
    with fileio.atomic_path(path) as temporary, tf.io.TFRecordWriter(temporary) as writer:
        for record in records:
            writer.write(record)


def pretraining_dataset(file_pattern: str | Sequence[str], batch_size: int, *,
                        max_seq_length: int, max_predictions_per_seq: int,
                        is_training: bool = True, masker: MaskedLmMasker | None = None,
                        seed: int | None = None, shuffle_buffer_size: int = 10_000,
                        cycle_length: int = 8, drop_remainder: bool = True,
                        input_context: tf.distribute.InputContext | None = None,
                        skip_batches: int = 0) -> tf.data.Dataset:
    """The tf.data training pipeline over pretraining TFRecord shards.

    Interleaves the shards, shuffles records (training), batches (with `drop_remainder`
    for static shapes), parses each batch in one vectorized op and prefetches. With a
    `masker` the files must hold unmasked instances (`dynamic_masking=True`) and every
    batch is masked in graph with fresh randomness, so each epoch sees new masks.

    Args:
        file_pattern: a glob, a comma-separated list of globs or a list of files.
        batch_size: examples per batch (per input pipeline).
        max_seq_length, max_predictions_per_seq: the shapes the files were written with.
        is_training: shuffle files and records and repeat forever.
        masker: a `MaskedLmMasker` for dynamic masking.
        seed: makes shuffling and dynamic masks reproducible.
        shuffle_buffer_size: records in the shuffle buffer.
        cycle_length: shards read concurrently.
        drop_remainder: drop the last partial batch (static batch dimension).
        input_context: a `tf.distribute.InputContext`; each input pipeline reads its
            share of the files.
        skip_batches: start after this many batches (resuming a run): the same batches
            and dynamic masks as reading from the start and dropping them, but the
            skipped records are only read, never parsed, masked or batched.

    Returns:
        A dataset of dicts with tf-models-official's names: int32 `input_word_ids`,
        `input_mask`, `input_type_ids` [batch, max_seq_length]; int32
        `masked_lm_positions`, `masked_lm_ids` and float32 `masked_lm_weights` [batch,
        max_predictions_per_seq]; int32 `next_sentence_labels` [batch, 1].

    Raises:
        InputNotFoundError: a pattern matches no file (or names a directory).
        DataError: a shard's size differs from the one its sidecar records
            (`check_shard_sizes`).

    Example:

    >>> ds = pretraining_dataset("/data/pretraining/*.tfrecord", 32, max_seq_length=128,
    ...                          max_predictions_per_seq=20)  # doctest: +SKIP
    >>> next(iter(ds))["input_word_ids"].shape  # doctest: +SKIP
    TensorShape([32, 128])
    """
    files = input_files.expand_patterns(file_pattern, what="pretraining TFRecord")
    check_shard_sizes(files)
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if input_context is not None and input_context.num_input_pipelines > 1:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        dataset = dataset.shuffle(len(files), seed=seed).repeat()
    dataset = dataset.interleave(
        tf.data.TFRecordDataset, cycle_length=min(cycle_length, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=seed is not None or not is_training)
    if is_training:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed)
    if skip_batches:
        dataset = dataset.skip(skip_batches * batch_size)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)

    spec = feature_spec(max_seq_length, None if masker else max_predictions_per_seq)

    def parse(records):
        example = tf.io.parse_example(records, spec)
        features = {
            "input_word_ids": example["input_ids"],
            "input_mask": example["input_mask"],
            "input_type_ids": example["segment_ids"],
            "next_sentence_labels": example["next_sentence_labels"],
        }
        features.update({name: example[name] for name in MASKED_LM_FEATURES if name in example})
        # tf.train.Example stores int64; accelerators want int32 (as tf-models-official).
        return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
                for name, value in features.items()}

    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    if masker is not None:
        if masker.max_predictions_per_seq != max_predictions_per_seq:
            raise ArgumentError(
                f"The masker predicts {masker.max_predictions_per_seq} tokens per sequence "
                f"but max_predictions_per_seq={max_predictions_per_seq}.",
                field="max_predictions_per_seq")
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
        if skip_batches:
            seeds = seeds.skip(skip_batches)

        def mask(features, batch_seed):
            masked = masker(features["input_word_ids"], features["input_mask"], batch_seed)
            return {**features, **masked}

        dataset = tf.data.Dataset.zip(dataset, seeds).map(mask, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def check_shard_sizes(files: Sequence[str]) -> None:
    """Raises `DataError` naming a shard whose size differs from the one the sidecar
    beside it recorded (a truncated copy or an interrupted download would otherwise
    fail mid-training with TensorFlow's "truncated record", which names no file).

    Costs a directory listing per directory and a size per file; files without a
    sidecar entry (written by other tools or older versions) are not checked.

    Example:

    >>> import tempfile, json
    >>> directory = tempfile.mkdtemp()
    >>> path = os.path.join(directory, "part-00000.tfrecord")
    >>> write_tfrecord(path, [b"a", b"b"])
    >>> fileio.write_json(os.path.join(directory, "pretraining_data.json"),
    ...                  {"shards": {"part-00000.tfrecord": {"file_bytes": 99}}})
    >>> check_shard_sizes([path])
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.DataError: .../part-00000.tfrecord: has 34 bytes, but ...
    """
    by_directory: dict[str, list[str]] = {}
    for path in files:
        by_directory.setdefault(os.path.dirname(path), []).append(path)
    for directory, paths in by_directory.items():
        recorded: dict[str, tuple[str, int]] = {}
        try:
            names = fileio.listdir(directory or ".")
        except (OSError, tf.errors.OpError):
            continue
        for name in sorted(n.rstrip("/") for n in names):
            if not fnmatch.fnmatch(name, SIDECAR_PATTERN):
                continue
            try:
                sidecar = fileio.read_json(os.path.join(directory, name))
                shards = sidecar.get("shards", {}) if isinstance(sidecar, dict) else {}
            except (OSError, ValueError, tf.errors.OpError):
                continue  # an unreadable sidecar: the training checks report it
            for shard, counts in shards.items():
                if isinstance(counts, dict) and isinstance(counts.get("file_bytes"), int):
                    recorded[shard] = (name, counts["file_bytes"])
        for path in paths:
            name = os.path.basename(path)
            if name not in recorded:
                continue
            sidecar_name, expected = recorded[name]
            size = fileio.file_size(path)
            if size != expected:
                raise DataError(
                    f"has {size} bytes, but {sidecar_name} beside it records {expected}: the "
                    "shard is truncated (an interrupted copy or download?) or was replaced; "
                    "copy it again or recreate the pretraining data.", path=path)
