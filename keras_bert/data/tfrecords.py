"""The pretraining TFRecord format: schema, vectorized serialization, atomic shard writes
and the tf.data training reader.

The schema is google-research/bert's, feature for feature: int64 `input_ids`,
`input_mask`, `segment_ids` ([max_seq_length]), int64 `masked_lm_positions`,
`masked_lm_ids` and float `masked_lm_weights` ([max_predictions_per_seq], zero-padded),
int64 `next_sentence_labels` ([1], 1 = random next). Files for dynamic masking hold the
unmasked `input_ids` and leave out the three `masked_lm_*` features.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf

from keras_bert.data.masking import MaskedLmMasker

MASKED_LM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")


def feature_spec(max_seq_length: int, max_predictions_per_seq: int | None = None
                 ) -> dict[str, tf.io.FixedLenFeature]:
    """The parsing spec of a pretraining example, in the original's feature order.

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
    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
            for name in ("input_ids", "input_mask", "segment_ids")}
    if max_predictions_per_seq is not None:
        spec["masked_lm_positions"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
        spec["masked_lm_ids"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
        spec["masked_lm_weights"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32)
    spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    return spec


def serialize_examples(features: Mapping[str, tf.Tensor | np.ndarray]) -> tf.Tensor:
    """Serializes a batch of fixed-width features into `tf.train.Example` protos, all at
    once in TF ops (no Python loop per example).

    Args:
        features: name -> [n, width] values; float32 becomes a FloatList, integers an
            Int64List. The examples keep the dict's feature order.

    Returns:
        A [n] string tensor of serialized examples.

    Example:

    >>> records = serialize_examples({"ids": np.array([[1, 2], [3, 4]]),
    ...                               "w": np.array([[0.5], [1.0]], "float32")})
    >>> tf.train.Example.FromString(records[1].numpy()).features.feature["ids"].int64_list.value
    [3, 4]
    """
    entries = []
    for name, values in features.items():
        values = tf.convert_to_tensor(values)
        if values.dtype == tf.float32:
            list_type, field = "tensorflow.FloatList", "float_list"
        elif values.dtype.is_integer:
            values, list_type, field = tf.cast(values, tf.int64), "tensorflow.Int64List", "int64_list"
        else:
            raise TypeError(f"Feature {name!r} is {values.dtype.name}; a tf.train.Example holds "
                            "float32 or integer values here.")
        n, width = tf.shape(values)[0], tf.shape(values)[1]
        value_list = tf.io.encode_proto(tf.fill([n, 1], width), [values], ["value"], list_type)
        feature = tf.io.encode_proto(tf.ones([n, 1], tf.int32), [value_list[:, tf.newaxis]],
                                     [field], "tensorflow.Feature")
        entries.append(tf.io.encode_proto(
            tf.ones([n, 2], tf.int32), [tf.fill([n, 1], name), feature[:, tf.newaxis]],
            ["key", "value"], "tensorflow.Features.FeatureEntry"))
    n = tf.shape(entries[0])[0]
    feature_map = tf.io.encode_proto(tf.fill([n, 1], len(entries)), [tf.stack(entries, axis=1)],
                                     ["feature"], "tensorflow.Features")
    return tf.io.encode_proto(tf.ones([n, 1], tf.int32), [feature_map[:, tf.newaxis]],
                              ["features"], "tensorflow.Example")


def write_tfrecord(path: str | os.PathLike, records) -> None:
    """Writes serialized records to `path` all or nothing: into a hidden temporary file
    beside it, renamed over `path` only once complete (and removed on an error; a killed
    process leaves at most that hidden file, which the next write replaces).

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
    >>> write_tfrecord(path, [b"a", b"b"])
    >>> [r.numpy() for r in tf.data.TFRecordDataset(path)]
    [b'a', b'b']
    """
    path = os.fspath(path)
    temporary = temporary_path(path)
    try:
        with tf.io.TFRecordWriter(temporary) as writer:
            for record in records:
                writer.write(record)
    except BaseException:
        os.remove(temporary)
        raise
    os.replace(temporary, path)


def temporary_path(path: str) -> str:
    """The hidden name a file is written under before it is complete (never matches a
    `*.tfrecord` glob).

    Example:

    >>> temporary_path("/data/part-00001.tfrecord")
    '/data/.part-00001.tfrecord.tmp'
    """
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.tmp")


def pretraining_dataset(file_pattern: str | Sequence[str], batch_size: int, *,
                        max_seq_length: int, max_predictions_per_seq: int,
                        is_training: bool = True, masker: MaskedLmMasker | None = None,
                        seed: int | None = None, shuffle_buffer_size: int = 10_000,
                        cycle_length: int = 8, drop_remainder: bool = True,
                        input_context: tf.distribute.InputContext | None = None
                        ) -> tf.data.Dataset:
    """The tf.data training pipeline over pretraining TFRecord shards.

    Interleaves the shards, shuffles records (training), batches (with `drop_remainder`
    for static shapes), parses each batch in one vectorized op and prefetches. With a
    `masker` the files must hold unmasked instances (`--dynamic_masking`) and every batch
    is masked in graph with fresh randomness, so each epoch sees new masks.

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

    Returns:
        A dataset of dicts with tf-models-official's names: int32 `input_word_ids`,
        `input_mask`, `input_type_ids` [batch, max_seq_length]; int32
        `masked_lm_positions`, `masked_lm_ids` and float32 `masked_lm_weights` [batch,
        max_predictions_per_seq]; int32 `next_sentence_labels` [batch, 1].

    Example:

    >>> ds = pretraining_dataset("/data/pretraining/*.tfrecord", 32, max_seq_length=128,
    ...                          max_predictions_per_seq=20)  # doctest: +SKIP
    >>> next(iter(ds))["input_word_ids"].shape  # doctest: +SKIP
    TensorShape([32, 128])
    """
    files = _match_files(file_pattern)
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
            raise ValueError(f"The masker predicts {masker.max_predictions_per_seq} tokens per "
                             f"sequence but max_predictions_per_seq={max_predictions_per_seq}.")
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)

        def mask(features, batch_seed):
            masked = masker(features["input_word_ids"], features["input_mask"], batch_seed)
            return {**features, **masked}

        dataset = tf.data.Dataset.zip(dataset, seeds).map(mask, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def _match_files(file_pattern: str | Sequence[str]) -> list[str]:
    patterns = file_pattern.split(",") if isinstance(file_pattern, str) else list(file_pattern)
    files = []
    for pattern in patterns:
        matched = sorted(tf.io.gfile.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"No files match {pattern!r}.")
        files.extend(matched)
    return files
