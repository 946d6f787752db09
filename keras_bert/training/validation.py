"""Checks that run before training starts, so a mismatch is an error naming the
problem instead of a crash (or silent garbage) hours into a run.

`inspect_pretraining_data` reads the schema, sequence length and token ids of the
TFRecords (and the `pretraining_data*.json` sidecar written beside them, if any);
the `check_*` functions compare them with the model config, the vocab and the batch.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os

import keras
import numpy as np
import tensorflow as tf
from google.protobuf.message import DecodeError

from keras_bert.config import BertConfig

# google-research/bert's schema: name -> (kind, width); widths "L" = max_seq_length,
# "P" = max_predictions_per_seq.
_SCHEMA = {
    "input_ids": ("int64_list", "L"),
    "input_mask": ("int64_list", "L"),
    "segment_ids": ("int64_list", "L"),
    "masked_lm_positions": ("int64_list", "P"),
    "masked_lm_ids": ("int64_list", "P"),
    "masked_lm_weights": ("float_list", "P"),
    "next_sentence_labels": ("int64_list", 1),
}
_MASKED_LM = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
_FILES_CHECKED = 64


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
    """

    files: tuple[str, ...]
    max_seq_length: int
    max_predictions_per_seq: int | None
    max_token_id: int
    records_read: int
    settings: dict
    vocab: dict

    @property
    def dynamic_masking(self) -> bool:
        return self.max_predictions_per_seq is None


def match_files(file_pattern: str) -> list[str]:
    """Files matching comma-separated globs (local or any `tf.io.gfile` filesystem).

    Example:

    >>> match_files("/nonexistent/*.tfrecord")
    Traceback (most recent call last):
    ...
    FileNotFoundError: --input_file pattern '/nonexistent/*.tfrecord' matches no file.
    """
    files: list[str] = []
    for pattern in (p.strip() for p in file_pattern.split(",")):
        if not pattern:
            continue
        matched = sorted(tf.io.gfile.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"--input_file pattern {pattern!r} matches no file.")
        files.extend(f for f in matched if f not in files)
    if not files:
        raise FileNotFoundError("--input_file names no file.")
    return files


def _first_record(path: str) -> bytes:
    try:
        for record in tf.data.TFRecordDataset(path).take(1):
            return record.numpy()
    except tf.errors.DataLossError as e:
        raise ValueError(f"{path} is not a TFRecord file ({e.message}).") from None
    raise ValueError(f"{path} holds no records; remove it or recreate the data.")


def _schema_of(path: str, record: bytes) -> tuple[int, int | None]:
    """(max_seq_length, max_predictions_per_seq or None) of one record; raises on any
    difference from the pretraining schema."""
    try:
        features = tf.train.Example.FromString(record).features.feature
    except DecodeError as e:
        raise ValueError(f"{path} does not hold tf.train.Example records ({e}).") from None
    required = [n for n in _SCHEMA if n not in _MASKED_LM]
    missing = [n for n in required if n not in features]
    present_mlm = [n for n in _MASKED_LM if n in features]
    if missing or 0 < len(present_mlm) < len(_MASKED_LM):
        lacking = missing + [n for n in _MASKED_LM if present_mlm and n not in features]
        raise ValueError(
            f"{path} is not BERT pretraining data: it lacks the features {lacking} (it has "
            f"{sorted(features)}). Expected google-research/bert's schema {list(_SCHEMA)}, "
            "as `keras-bert create-pretraining-data` writes it.")
    widths = {}
    for name in required + present_mlm:
        kind, width = _SCHEMA[name]
        feature = features[name]
        if feature.WhichOneof("kind") != kind:
            raise ValueError(f"{path}: feature {name!r} is a {feature.WhichOneof('kind')}, "
                             f"expected a {kind}.")
        length = len(getattr(feature, kind).value)
        if width == 1 and length != 1:
            raise ValueError(f"{path}: feature {name!r} has {length} values, expected 1.")
        if isinstance(width, str) and widths.setdefault(width, (name, length))[1] != length:
            other, other_length = widths[width]
            raise ValueError(f"{path}: features {other!r} ({other_length} values) and "
                             f"{name!r} ({length}) must have the same length.")
    return widths["L"][1], widths["P"][1] if "P" in widths else None


def _read_sidecar(files: list[str]) -> dict:
    directory = os.path.dirname(files[0])
    for path in sorted(glob.glob(os.path.join(directory, "pretraining_data*.json"))):
        with open(path, encoding="utf-8") as f:
            try:
                return json.load(f)
            except json.JSONDecodeError:
                continue
    return {}


def inspect_pretraining_data(file_pattern: str, sample_records: int = 2000
                             ) -> PretrainingDataInfo:
    """Reads the schema and token ids of pretraining TFRecords.

    Every file's first record (up to 64 files) must have google-research/bert's schema
    with the same lengths; the first `sample_records` records give the largest token id.

    Raises:
        FileNotFoundError: the pattern matches nothing.
        ValueError: a file is not pretraining data, or files disagree on lengths.

    Example:

    >>> info = inspect_pretraining_data("data/pretraining/*.tfrecord")  # doctest: +SKIP
    >>> info.max_seq_length, info.max_predictions_per_seq  # doctest: +SKIP
    (128, 20)
    """
    files = match_files(file_pattern)
    shapes = {}
    for path in files[:_FILES_CHECKED]:
        shapes[path] = _schema_of(path, _first_record(path))
    distinct = sorted(set(shapes.values()), key=str)
    if len(distinct) > 1:
        examples = {shape: path for path, shape in shapes.items()}
        raise ValueError("The input files were written with different (max_seq_length, "
                         f"max_predictions_per_seq): {examples}; train on one kind at a "
                         "time.")
    max_seq_length, max_predictions = distinct[0]
    max_id, count = 0, 0
    for record in tf.data.TFRecordDataset(files[:_FILES_CHECKED]).take(sample_records):
        features = tf.train.Example.FromString(record.numpy()).features.feature
        for name in ("input_ids", "masked_lm_ids"):
            if name in features and features[name].int64_list.value:
                max_id = max(max_id, int(np.max(features[name].int64_list.value)))
        count += 1
    sidecar = _read_sidecar(files)
    return PretrainingDataInfo(tuple(files), max_seq_length, max_predictions, max_id, count,
                               sidecar.get("settings", {}), sidecar.get("vocab", {}))


def check_data_flags(info: PretrainingDataInfo, *, max_seq_length: int | None = None,
                     max_predictions_per_seq: int | None = None) -> None:
    """Raises ValueError when `--max_seq_length` / `--max_predictions_per_seq` (None:
    not given) differ from what the data holds.

    Example:

    >>> info = PretrainingDataInfo(("a.tfrecord",), 128, 20, 29000, 10, {}, {})
    >>> check_data_flags(info, max_seq_length=64)
    Traceback (most recent call last):
    ...
    ValueError: a.tfrecord holds sequences of length 128, but --max_seq_length is 64; ...
    """
    where = info.files[0]
    if max_seq_length is not None and max_seq_length != info.max_seq_length:
        raise ValueError(
            f"{where} holds sequences of length {info.max_seq_length}, but --max_seq_length "
            f"is {max_seq_length}; pass --max_seq_length {info.max_seq_length} or recreate "
            "the data with the length you want.")
    if (max_predictions_per_seq is not None and info.max_predictions_per_seq is not None
            and max_predictions_per_seq != info.max_predictions_per_seq):
        raise ValueError(
            f"{where} holds {info.max_predictions_per_seq} masked-LM predictions per "
            f"sequence, but --max_predictions_per_seq is {max_predictions_per_seq}; pass "
            f"--max_predictions_per_seq {info.max_predictions_per_seq}.")


def check_data_fits_model(info: PretrainingDataInfo, config: BertConfig) -> None:
    """Raises ValueError when the data's sequences are longer than the position table
    or its token ids do not fit the embedding table.

    Example:

    >>> info = PretrainingDataInfo(("a.tfrecord",), 128, 20, 29000, 10, {}, {})
    >>> check_data_fits_model(info, BertConfig(vocab_size=8000))
    Traceback (most recent call last):
    ...
    ValueError: a.tfrecord holds token id 29000, but the model's vocab_size is 8000: ...
    """
    where = info.files[0]
    if info.max_seq_length > config.max_position_embeddings:
        raise ValueError(
            f"{where} holds sequences of length {info.max_seq_length}, longer than the "
            f"model's max_position_embeddings={config.max_position_embeddings}.")
    if info.max_token_id >= config.vocab_size:
        raise ValueError(
            f"{where} holds token id {info.max_token_id}, but the model's vocab_size is "
            f"{config.vocab_size}: the data was made with a larger vocab than the "
            "embedding table; use the matching --vocab_file/--config.")


def vocab_size_of(vocab_file: str) -> int:
    """The number of tokens (lines) in a vocab.txt.

    Example:

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "vocab.txt"
    >>> _ = path.write_text("[PAD]\\n[UNK]\\n[CLS]\\n")
    >>> vocab_size_of(str(path))
    3
    """
    if not os.path.isfile(vocab_file):
        raise FileNotFoundError(f"--vocab_file {vocab_file} does not exist.")
    with open(vocab_file, encoding="utf-8") as f:
        return sum(1 for _ in f)


def check_vocab(vocab_file: str, config: BertConfig,
                info: PretrainingDataInfo | None = None) -> None:
    """Raises ValueError when the vocab is larger than the embedding table, or differs
    from the vocab the data was made with (per the data's sidecar).

    Example:

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "vocab.txt"
    >>> _ = path.write_text("\\n".join(f"t{i}" for i in range(100)) + "\\n")
    >>> check_vocab(str(path), BertConfig(vocab_size=64))
    Traceback (most recent call last):
    ...
    ValueError: --vocab_file ... has 100 tokens but the model's embedding table has 64 rows ...
    """
    size = vocab_size_of(vocab_file)
    if size > config.vocab_size:
        raise ValueError(
            f"--vocab_file {vocab_file} has {size} tokens but the model's embedding table "
            f"has {config.vocab_size} rows (vocab_size); ids past it could not be embedded. "
            "Use a config with vocab_size >= the vocab, or a preset (which takes the "
            "vocab's size).")
    recorded = (info.vocab or {}).get("sha256") if info else None
    if recorded:
        with open(vocab_file, "rb") as f:
            actual = hashlib.sha256(f.read()).hexdigest()
        if actual != recorded:
            raise ValueError(
                f"The TFRecords in {os.path.dirname(info.files[0])} were made with another "
                f"vocab (sha256 {recorded[:12]}…) than --vocab_file {vocab_file} "
                f"({actual[:12]}…); the token ids would not match the vocab.")


def check_batch(global_batch_size: int, num_replicas: int,
                gradient_accumulation_steps: int = 1) -> int:
    """Returns the per-replica micro-batch size; raises ValueError unless the global
    batch splits evenly over accumulation steps and replicas.

    Example:

    >>> check_batch(32, num_replicas=2, gradient_accumulation_steps=4)
    4
    >>> check_batch(30, num_replicas=4)
    Traceback (most recent call last):
    ...
    ValueError: --train_batch_size 30 is not divisible by the 4 replicas ...
    """
    if global_batch_size < 1:
        raise ValueError(f"--train_batch_size must be >= 1, got {global_batch_size}.")
    if global_batch_size % gradient_accumulation_steps:
        raise ValueError(
            f"--train_batch_size {global_batch_size} is not divisible by "
            f"--gradient_accumulation_steps {gradient_accumulation_steps}.")
    micro = global_batch_size // gradient_accumulation_steps
    if micro % num_replicas:
        detail = (f" (a micro-batch of {micro} after {gradient_accumulation_steps} "
                  "accumulation steps)" if gradient_accumulation_steps > 1 else "")
        raise ValueError(
            f"--train_batch_size {global_batch_size}{detail} is not divisible by the "
            f"{num_replicas} replicas of the strategy; every replica needs an equal share. "
            f"Use a multiple of {num_replicas * gradient_accumulation_steps}.")
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
