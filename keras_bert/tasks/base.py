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
import logging
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf

from keras_bert.core.errors import ArgumentError

logger = logging.getLogger("keras_bert")

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


@dataclasses.dataclass(frozen=True)
class FeatureSettings:
    """How examples become model inputs (the paper's fine-tuning defaults).

    Args:
        max_seq_length: tokens per sequence, [CLS]/[SEP] included.
        doc_stride: SQuAD passages and NER sentences: tokens between the starts of
            consecutive windows (`keras_bert.tasks.windows`).
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


# `Features.extra` key: per example, the word pieces truncation cut off (GLUE, SWAG, NER;
# SQuAD: of the question, whose limit `TRUNCATION_LIMIT` then names).
TRUNCATED_TOKENS = "truncated_tokens"
# `Features.extra` key: (setting, value) of the limit that cut, when not max_seq_length.
TRUNCATION_LIMIT = "truncation_limit"
# Above this share of truncated examples, `truncation_report` calls for attention.
LARGE_TRUNCATED_SHARE = 0.05


def truncation_report(features: Features, max_seq_length: int) -> tuple[str, bool] | None:
    """(one line on how many examples truncation cut and by how much, whether that is a
    large share: over 5%) for features that count it (`TRUNCATED_TOKENS`), else None.

    Example:

    >>> f = Features(inputs={}, labels=None, lengths=np.array([4, 4, 3, 2]),
    ...              example_index=np.arange(4),
    ...              extra={TRUNCATED_TOKENS: np.array([0, 6, 0, 2])})
    >>> truncation_report(f, 4)
    ('2 of 4 examples (50.0%) were cut to max_seq_length 4, losing 4.0 word pieces on average (at most 6); raise --max_seq_length to keep more of them', True)
    """
    dropped = features.extra.get(TRUNCATED_TOKENS)
    if dropped is None or not len(dropped):
        return None
    name, limit = features.extra.get(TRUNCATION_LIMIT, ("max_seq_length", max_seq_length))
    cut = np.asarray(dropped)[np.asarray(dropped) > 0]
    if not len(cut):
        return f"no example was cut to {name} {limit}", False
    share = len(cut) / len(dropped)
    message = (f"{len(cut)} of {len(dropped)} examples ({share:.1%}) were cut to "
               f"{name} {limit}, losing {cut.mean():.1f} word pieces on "
               f"average (at most {int(cut.max())})")
    large = share > LARGE_TRUNCATED_SHARE
    if large:
        message += f"; raise --{name} to keep more of them"
    return message, large


def log_truncation(features: Features, max_seq_length: int, where: str) -> None:
    """Logs `truncation_report` for the split `where` (a file name or split label):
    a warning when a large share was cut, else an info line."""
    report = truncation_report(features, max_seq_length)
    if report is not None:
        message, large = report
        (logger.warning if large else logger.info)("%s: %s", where, message)

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
        """The task model (a `keras_bert.model.models` class) on `encoder`, not yet compiled."""

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

    def text_examples(self, x, y=None) -> list:
        """The task's examples of raw inputs `x` (Python lists of strings, as the task
        model's `fit`/`predict` take them) and labels `y` (None when unlabelled); what
        each family takes is in its own docstring."""
        raise ArgumentError(f"task {self.name!r} reads its benchmark's files only; it "
                            "takes no raw text.", field="x")

    def serving(self, settings: FeatureSettings):
        """What `keras_bert.export` needs to serve this task's model (a
        `keras_bert.export.serving.ModelServing`: outputs, `serve_text`, card fields), with
        the run's `settings`; None for a task that cannot be exported."""
        return None

    def training_examples(self, examples: Sequence) -> list:
        """The examples of the training split to train on (all of them, unless the
        task cannot make a target of some, e.g. SQuAD's mismatched answers)."""
        return list(examples)

    def tune_on_dev(self, examples: Sequence, predictions: Sequence, metrics: dict
                    ) -> tuple[list, dict]:
        """Decoding settings chosen on a dev split (SQuAD v2.0's no-answer threshold):
        the dev predictions and metrics with them applied. `metrics` are
        `evaluate(examples, predictions)`. Most tasks have none and return them as
        they are."""
        return list(predictions), metrics

    def config(self) -> dict:
        """What must be saved with a fine-tuned model to decode its outputs later (label
        list, ...); JSON-serializable."""
        return {"task": self.name}

    def restore(self, config: dict) -> None:
        """Takes back what `config()` saved (e.g. a label list learned from the training
        data), before a saved model's outputs are decoded."""
        del config  # nothing to take back unless a task saves more than its name

    def tfds_layout(self):
        """Where the task's data lies in tensorflow-datasets and how its records become
        examples: a `keras_bert.tasks.tfds_source.TfdsLayout`, what `tfds_examples`
        reads with. A task tensorflow-datasets does not have raises `ArgumentError`."""
        raise ArgumentError(f"Task {self.name!r} cannot be read from tensorflow-datasets; "
                            "read it from the benchmark's files (a data_dir) instead.",
                            field="name")


def feature_dataset(features: Features, batch_size: int, training: bool = False,
                    seed: int | None = None, with_labels: bool | None = None,
                    epochs: int = 1, group_by_length: bool = False,
                    order: np.ndarray | None = None) -> tf.data.Dataset:
    """A tf.data pipeline over `features`, batched, each batch cut to its longest
    sequence (dynamic padding; on JAX and PyTorch rounded up to `length_multiple`); no
    Python runs per element.

    For training (`training=True`), the order is shuffled anew for each of `epochs`
    epochs from `seed` (the dataset then holds all epochs: pass `steps_per_epoch` to
    `fit`). `group_by_length` additionally sorts each run of 50 batches by length
    before cutting it into batches, and shuffles the batches, so a batch holds
    sequences of similar length and carries little padding (Hugging Face's
    `group_by_length`); the set of examples per epoch is unchanged. Evaluation reads
    the features in input order, or in `order` (a permutation of their indices, e.g.
    `length_order(features)`, to batch sequences of similar length together).

    Yields `inputs` dicts, or `(inputs, labels)` when `with_labels` (default: whether
    `features.labels` is set). Inputs of rank >= 2 are cut on their last axis (the
    sequence; multiple-choice inputs are [n, choices, seq]); labels of shape [n, seq]
    (tagging) are cut too.

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
    n = len(features)
    if n == 0:
        raise ValueError("feature_dataset needs at least one feature.")
    lengths = features.lengths.astype(np.int32)
    if training:
        order = epoch_orders(lengths, batch_size, seed, epochs, group_by_length)
    else:
        indices = np.arange(n) if order is None else np.asarray(order)
        if sorted(indices.tolist()) != list(range(n)):
            raise ValueError(f"order must be a permutation of the {n} features' indices.")
        order = [indices[i:i + batch_size] for i in range(0, n, batch_size)]
    # Batches as rows of indices, -1 past the end of a short last batch.
    rows = np.full((len(order), batch_size), -1, np.int64)
    for r, batch in enumerate(order):
        rows[r, :len(batch)] = batch
    tensors = {k: tf.constant(v) for k, v in features.inputs.items()}
    tensors["_length"] = tf.constant(lengths)
    labels = None
    if with_labels:
        labels = tf.nest.map_structure(tf.constant, features.labels)
    sequence_keys = [k for k, v in features.inputs.items() if v.ndim >= 2]
    seq_len = next(iter(features.inputs.values())).shape[-1]
    label_is_sequence = (with_labels and isinstance(features.labels, np.ndarray)
                         and features.labels.ndim == 2 and features.labels.shape[1] == seq_len)

    multiple = length_multiple(seq_len)

    def gather(row):
        index = tf.boolean_mask(row, row >= 0)
        x = {k: tf.gather(v, index) for k, v in tensors.items()}
        longest = tf.reduce_max(x.pop("_length"))
        if multiple > 1:
            longest = tf.minimum(-(-longest // multiple) * multiple, seq_len)
        for key in sequence_keys:
            x[key] = x[key][..., :longest]
        if not with_labels:
            return x
        y = tf.nest.map_structure(lambda t: tf.gather(t, index), labels)
        if label_is_sequence:
            y = y[:, :longest]
        return x, y

    # Gathering a batch costs microseconds: two batches in flight keep any step fed.
    # Without tf.data's autotuning, whose background thread can hold up the iterator's
    # release at the end of `fit` for up to a minute (measured: 20-25 s in 3 of 5 runs
    # of the SST-2 recipe).
    options = tf.data.Options()
    options.autotune.enabled = False
    dataset = tf.data.Dataset.from_tensor_slices(rows).with_options(options)
    return dataset.map(gather, num_parallel_calls=2, deterministic=True).prefetch(2)


def length_multiple(max_seq_length: int) -> int:
    """What `feature_dataset` rounds a batch's length up to: 1 on the TensorFlow backend,
    whose step functions take any length in one trace; on JAX and PyTorch, where each
    new shape is compiled anew, a quarter of `max_seq_length` (at least 16, a multiple
    of 8), so that a run compiles its step for about four lengths.

    Example:

    >>> length_multiple(128) in (1, 32)
    True
    """
    if keras.backend.backend() == "tensorflow":
        return 1
    return max(16, -(-max_seq_length // 32) * 8)


def length_order(features: Features) -> np.ndarray:
    """The features' indices from shortest to longest (ties in input order): batches
    read in this order carry almost no padding.

    Example:

    >>> length_order(Features(inputs={}, labels=None, lengths=np.array([3, 1, 3, 2]),
    ...                       example_index=np.arange(4))).tolist()
    [1, 3, 0, 2]
    """
    return np.argsort(features.lengths, kind="stable")


def restore_order(outputs, order: np.ndarray):
    """`model.predict` outputs of features read in `order` (see `length_order`), put
    back in the features' own order: every array, tensor or ragged tensor in `outputs`
    has one row per feature.

    Example:

    >>> restore_order({"logits": np.array([[0.1], [0.3], [0.2]])}, np.array([1, 0, 2]))
    {'logits': array([[0.3],
           [0.1],
           [0.2]])}
    """
    inverse = np.empty(len(order), np.int64)
    inverse[np.asarray(order)] = np.arange(len(order))

    def restore(rows):
        if isinstance(rows, np.ndarray):
            return rows[inverse]
        return tf.gather(rows, inverse)

    return tf.nest.map_structure(restore, outputs)


def epoch_orders(lengths: np.ndarray, batch_size: int, seed: int | None, epochs: int = 1,
                 group_by_length: bool = False, group_batches: int = 50) -> list[np.ndarray]:
    """The training batches (index arrays) of `epochs` epochs, reproducible from `seed`.

    Each epoch is a fresh permutation cut into batches of `batch_size` (the last one
    shorter). With `group_by_length`, each run of `group_batches` batches of the
    permutation is sorted by length before it is cut, and the epoch's batches are then
    shuffled.

    Example:

    >>> lengths = np.array([5, 1, 4, 2, 3, 6])
    >>> batches = epoch_orders(lengths, 2, seed=0, group_by_length=True)
    >>> sorted(int(i) for b in batches for i in b)
    [0, 1, 2, 3, 4, 5]
    >>> sorted(sorted(lengths[b].tolist()) for b in batches)
    [[1, 2], [3, 4], [5, 6]]
    """
    rng = np.random.default_rng(seed)
    n = len(lengths)
    batches = []
    for _ in range(epochs):
        order = rng.permutation(n)
        if not group_by_length:
            batches += [order[i:i + batch_size] for i in range(0, n, batch_size)]
            continue
        group = group_batches * batch_size
        epoch = []
        for start in range(0, n, group):
            chunk = order[start:start + group]
            chunk = chunk[np.argsort(-lengths[chunk], kind="stable")]
            epoch += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
        batches += [epoch[i] for i in rng.permutation(len(epoch))]
    return batches
