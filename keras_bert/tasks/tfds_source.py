"""Fine-tuning examples read from prepared tensorflow-datasets instead of the benchmark's
own files (`keras-bert finetune --task sst2 --tfds glue/sst2`).

Nothing is downloaded: the dataset must already be prepared in the tfds data directory
(`tfds build glue/sst2` or `tfds.load("glue/sst2", download=True)` on a machine with
network access, then copied or shared). tensorflow-datasets is an optional extra
(`pip install -e ".[datasets]"`), imported only when a dataset is read.

Records become the task's own examples, so everything after reading (features, models,
metrics, submission files) is the same as for the benchmark files. Each task family
knows its own datasets: a task's `tfds_layout()` (a `TfdsLayout`) names the dataset,
maps the split names and turns records into examples (GLUE in `keras_bert.tasks.glue.task`,
SQuAD in `keras_bert.tasks.squad.tfds`, CoNLL-2003 in `keras_bert.tasks.tagging.task`).
This module opens the prepared dataset for any of them and holds the record helpers
they share. SWAG is not in tensorflow-datasets.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping

from keras_bert.core.errors import ArgumentError, DataError, InputNotFoundError, MismatchError
from keras_bert.tasks.base import Task


@dataclasses.dataclass(frozen=True)
class TfdsLayout:
    """Where a task's data lies in tensorflow-datasets, and how its records become the
    task's examples.

    Attributes:
        dataset: the tfds dataset name ("glue/sst2", "squad/v1.1", "conll2003").
        splits: keras_bert's split name -> tfds's ("dev" -> "validation").
        reader: `reader(builder, name)` checks the builder's features (`MismatchError`
            when they are not the expected ones) and returns `read(as_numpy, dataset,
            where, labelled)`, which turns a split's `tf.data.Dataset` into examples
            (`where` names the split in errors; `labelled=False` ignores labels).
        split_aliases: split names that stand for one of `splits` (MNLI's "test" is
            "test_matched"); errors list only `splits`.
        other_names: other names of the same dataset (a builder's only config named
            explicitly, e.g. "conll2003/conll2003").
    """

    dataset: str
    splits: Mapping[str, str]
    reader: Callable
    split_aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)
    other_names: tuple[str, ...] = ()


def tfds_dataset_name(task: Task) -> str:
    """The tensorflow-datasets name that holds `task` ("glue/sst2", "squad/v2.0",
    "conll2003"); `ArgumentError` for a task tfds does not have (SWAG).

    Example:

    >>> from keras_bert.tasks.registry import get_task
    >>> tfds_dataset_name(get_task("mnli")), tfds_dataset_name(get_task("squad1"))
    ('glue/mnli', 'squad/v1.1')
    """
    return task.tfds_layout().dataset


def tfds_split_name(task: Task, split: str) -> str:
    """tfds's name of keras_bert's `split` ("train", "dev", "dev_matched", "test", ...)
    of `task`. A tfds slice after the name is kept ("train[:10%]").

    Example:

    >>> from keras_bert.tasks.registry import get_task
    >>> tfds_split_name(get_task("mnli"), "dev_mismatched")
    'validation_mismatched'
    >>> tfds_split_name(get_task("sst2"), "dev"), tfds_split_name(get_task("ner"), "dev")
    ('validation', 'dev')
    >>> tfds_split_name(get_task("squad2"), "train[:1000]")
    'train[:1000]'
    """
    return _split_name(task.tfds_layout(), task.name, split)


def _split_name(layout: TfdsLayout, task_name: str, split: str) -> str:
    match = re.fullmatch(r"([a-z_]+)(\[[^\]]*\])?", split)
    base, piece = (match.group(1), match.group(2) or "") if match else (split, "")
    base = layout.split_aliases.get(base, base)
    if base not in layout.splits:
        raise ArgumentError(f"{task_name} has no split {split!r} in tensorflow-datasets; "
                            f"expected one of {sorted(layout.splits)} (optionally sliced, "
                            "e.g. 'train[:10%]').", field="split")
    return layout.splits[base] + piece


def tfds_examples(task: Task, name: str, split: str, data_dir: str | None = None,
                  labelled: bool = True) -> list:
    """The examples of one split of a prepared tensorflow-datasets dataset, as the task's
    own example class (`GlueExample`, `SquadExample`, `NerExample`).

    Args:
        task: the task (`keras_bert.tasks.registry.get_task(...)`).
        name: the tfds dataset that holds it: "glue/<task>" (e.g. "glue/mnli"),
            "squad/v1.1" (squad1), "squad/v2.0" (squad2) or "conll2003" (ner), with
            an optional ":version".
        split: keras_bert's split name: "train", "dev" (MNLI: "dev_matched",
            "dev_mismatched"), "test" (MNLI: "test_matched", "test_mismatched");
            a tfds slice may follow ("train[:1000]").
        data_dir: the tfds data directory it was prepared in (None: tfds's default,
            `$TFDS_DATA_DIR` or ~/tensorflow_datasets).
        labelled: False ignores labels, answers and tags (GLUE test splits have none
            either way).

    Returns:
        the examples; GLUE in the order of the benchmark's TSV.

    Raises:
        ArgumentError: `name` does not hold `task`, an unknown split, or a task
            tensorflow-datasets does not have (SWAG).
        InputNotFoundError: tensorflow-datasets is not installed, or the dataset is
            not prepared in `data_dir` (nothing is downloaded).
        MismatchError: the prepared dataset's label names are not the ones expected.
        DataError: a malformed record (named by its place in the split).

    Example:

    >>> from keras_bert.tasks.registry import get_task
    >>> examples = tfds_examples(get_task("sst2"), "glue/sst2", "dev")  # doctest: +SKIP
    >>> examples[0].label, examples[0].text_b  # doctest: +SKIP
    ('1', None)
    >>> tfds_examples(get_task("sst2"), "glue/mrpc", "dev")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: tensorflow-datasets 'glue/mrpc' does not hold task sst2: read it from 'glue/sst2'.
    """
    layout = task.tfds_layout()
    given = name.partition(":")[0]
    if given != layout.dataset and given not in layout.other_names:
        raise ArgumentError(f"tensorflow-datasets {name!r} does not hold task {task.name}: "
                            f"read it from {layout.dataset!r}.", field="name")
    tfds_split = _split_name(layout, task.name, split)
    tfds = _import_tfds()
    builder = _builder(tfds, name, data_dir)
    read = layout.reader(builder, name)
    dataset = _as_dataset(builder, name, split, tfds_split)
    where = f"{name} ({split})"
    examples = read(tfds.as_numpy, dataset, where, labelled)
    if not examples:
        raise DataError("holds no examples (an empty split).", path=where)
    return examples


def _import_tfds():
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        raise InputNotFoundError(
            "Reading a task from tensorflow-datasets needs the package "
            "tensorflow-datasets: pip install -e \".[datasets]\" (or pip install "
            "tensorflow-datasets).") from None
    return tfds


def _builder(tfds, name: str, data_dir: str | None):
    try:
        return tfds.builder(name, data_dir=data_dir, try_gcs=False)
    except (AssertionError, ValueError) as e:  # e.g. a version tfds does not have
        raise ArgumentError(f"tensorflow-datasets cannot open {name!r}: {e}",
                            field="name") from None


def _as_dataset(builder, name: str, split: str, tfds_split: str):
    try:
        return builder.as_dataset(split=tfds_split, shuffle_files=False)
    except AssertionError:
        # tfds' way of saying "not prepared"; anything else is not ours to explain.
        if builder.is_prepared():
            raise
        raise InputNotFoundError(
            f"tensorflow-datasets {name!r} is not prepared in {builder.data_dir_root!s} "
            f"(no {builder.data_dir!s}), and nothing is downloaded here: prepare it first "
            f"on a machine with network access (`tfds build {name} --data_dir DIR`, or "
            f"`tfds.load({name!r}, data_dir=DIR, download=True)`), then give that "
            "data directory.") from None
    except ValueError as e:  # tfds: "Unknown split ..." or a bad slice
        raise ArgumentError(f"{name} has no split {tfds_split!r} (keras_bert's {split!r}) "
                            f"prepared: {e}", field="split") from None


# --- what the families' readers share ------------------------------------------------


def record_text(value) -> str:
    """A tfds text feature (bytes from `as_numpy`) as a string."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def feature_names(builder) -> set[str]:
    """The names of the features of a tfds builder's records."""
    return set(builder.info.features.keys())


def require_features(builder, name: str, features) -> None:
    """`MismatchError` unless the builder's records have all of `features`."""
    missing = [f for f in features if f not in feature_names(builder)]
    if missing:
        raise MismatchError(f"tensorflow-datasets {name!r} has no feature(s) {missing} "
                            f"(it has {sorted(feature_names(builder))}); keras_bert "
                            "expects the layout of tensorflow-datasets 4.9.")


def class_names(feature, name: str, what: str, expected) -> list[str]:
    """A ClassLabel's names, checked to be the `expected` set (by name, any order)."""
    names = list(getattr(feature, "names", None) or ())
    if sorted(names) != sorted(expected):
        raise MismatchError(f"tensorflow-datasets {name!r} has the {what} names {names}, "
                            f"not the ones keras_bert maps to this task's labels: "
                            f"{sorted(expected)}.")
    return names
