"""What every fine-tuning task provides, and the tf.data plumbing they share.

A task family (GLUE, SQuAD, tagging, multiple choice) implements `Task`: it reads the
benchmark's own files, turns examples into features with the package's tokenizer and
packer, builds the task model on an encoder, decodes model outputs back into
predictions in the benchmark's terms, scores them with the official metric and writes
them in the benchmark's submission format. `keras-bert finetune / evaluate / predict`
only call these methods, so a new task needs no pipeline code.

Features are tokenized once, in batches of TensorFlow ops, and kept as padded int32
arrays with their lengths; `feature_dataset` slices them per batch to the batch's
longest sequence (dynamic padding), so short inputs cost short sequences.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


@dataclasses.dataclass(frozen=True)
class FeatureSettings:
    """How examples become model inputs (the paper's fine-tuning defaults).

    Args:
        max_seq_length: tokens per sequence, [CLS]/[SEP] included.
        doc_stride: SQuAD: tokens between the starts of consecutive passage windows.
        max_query_length: SQuAD: question tokens kept.
        max_answer_length: SQuAD: longest answer in tokens.
        n_best_size: SQuAD: candidates kept per question in the n-best list.
    """

    max_seq_length: int = 128
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30
    n_best_size: int = 20


@dataclasses.dataclass
class Features:
    """Model inputs for a list of examples.

    `inputs` maps each of `INPUT_NAMES` (and any task-specific input) to an int32 array
    whose first axis is the feature index; `labels` is the training target array (or
    None for unlabelled data); `lengths` the real length of each feature (the padding
    after it is dropped per batch); `example_index[i]` the example feature `i` came
    from (several features per example for SQuAD windows); `extra` holds whatever the
    task's `decode` needs (token-to-character maps, first sub-token positions, ...).
    """

    inputs: dict[str, np.ndarray]
    labels: np.ndarray | dict[str, np.ndarray] | None
    lengths: np.ndarray
    example_index: np.ndarray
    extra: dict = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.lengths)


class Task(abc.ABC):
    """One fine-tuning task (e.g. `sst2`, `squad2`, `ner`).

    Attributes:
        name: the `--task` name.
        family: "glue", "squad", "tagging" or "multiple_choice".
        metric_names: the official metric names `evaluate` returns.
        main_metric: the one `--num_restarts` keeps the best seed by.
        dev_splits: the evaluation splits (MNLI: dev_matched and dev_mismatched).
    """

    name: str
    family: str
    metric_names: tuple[str, ...]
    main_metric: str
    dev_splits: tuple[str, ...] = ("dev",)

    @abc.abstractmethod
    def split_path(self, data_dir: str, split: str) -> str:
        """The file of `split` ("train", a dev split, "test") in the benchmark's layout."""

    @abc.abstractmethod
    def read_examples(self, path: str, labelled: bool = True) -> list:
        """Examples of one file in the benchmark's layout; `DataError` names the file and
        line of a malformed row. `labelled=False` reads files without (or ignores) the
        label column."""

    @abc.abstractmethod
    def features(self, examples: Sequence, tokenizer, settings: FeatureSettings) -> Features:
        """Tokenized, packed model inputs (and labels when the examples have them)."""

    @abc.abstractmethod
    def build_model(self, encoder, **kwargs):
        """The task model (a `keras_bert.models` class) on `encoder`, not yet compiled."""

    @abc.abstractmethod
    def decode(self, examples: Sequence, features: Features, outputs, settings: FeatureSettings
               ) -> list:
        """Predictions, one per example, in the benchmark's terms (a label string, a
        number, an answer text, a tag per word, a choice index) from `model.predict`'s
        outputs on `features`."""

    @abc.abstractmethod
    def evaluate(self, examples: Sequence, predictions: Sequence) -> dict:
        """The official metrics of `predictions` against the examples' gold labels."""

    @abc.abstractmethod
    def write_predictions(self, examples: Sequence, predictions: Sequence, path: str) -> None:
        """Writes predictions in the benchmark's submission format, atomically."""

    def config(self) -> dict:
        """What must be saved with a fine-tuned model to decode its outputs later (label
        list, ...); JSON-serializable."""
        return {"task": self.name}


def feature_dataset(features: Features, batch_size: int, training: bool = False,
                    seed: int | None = None, with_labels: bool | None = None
                    ) -> tf.data.Dataset:
    """A tf.data pipeline over `features`: shuffled each epoch when `training`, batched,
    and each batch cut to its longest sequence (no Python per element).

    Yields `inputs` dicts, or `(inputs, labels)` when `with_labels` (default: whether
    `features.labels` is set). Inputs whose second axis is the sequence are cut; the
    last axis is cut for multiple-choice inputs [n, choices, seq].

    Example:

    >>> f = Features(inputs={"input_word_ids": np.array([[2, 5, 3, 0], [2, 3, 0, 0]], "int32"),
    ...                      "input_mask": np.array([[1, 1, 1, 0], [1, 1, 0, 0]], "int32"),
    ...                      "input_type_ids": np.zeros((2, 4), "int32")},
    ...              labels=np.array([1, 0]), lengths=np.array([3, 2]),
    ...              example_index=np.arange(2))
    >>> x, y = next(iter(feature_dataset(f, 2)))
    >>> x["input_word_ids"].numpy().tolist(), y.numpy().tolist()
    ([[2, 5, 3], [2, 3, 0]], [1, 0])
    """
    if with_labels is None:
        with_labels = features.labels is not None
    tensors = dict(features.inputs)
    tensors["_length"] = features.lengths.astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices(
        (tensors, features.labels) if with_labels else tensors)
    if training:
        dataset = dataset.shuffle(len(features), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size)
    sequence_keys = {k for k, v in features.inputs.items() if v.ndim >= 2}
    label_is_sequence = (with_labels and isinstance(features.labels, np.ndarray)
                         and features.labels.ndim == 2
                         and features.labels.shape[1] == next(
                             iter(features.inputs.values())).shape[-1])

    def cut(x, y=None):
        x = dict(x)
        longest = tf.reduce_max(x.pop("_length"))
        for key in sequence_keys:
            x[key] = x[key][..., :longest]
        if y is None:
            return x
        if label_is_sequence:
            y = y[:, :longest]
        return x, y

    return dataset.map(cut, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
