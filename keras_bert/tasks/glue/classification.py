"""Text classification (or regression) with your own labels: `--task classification`
on your own TSV/CSV files (`keras_bert.tasks.glue.table` has their layout), and the task
behind `BertClassifier.from_preset(source, num_classes=..., label_names=...)`.

It is a `GlueTask` in every way that matters (features, `BertClassifier`, decoding,
serving), with the label names given, or learnt from the training data (`from_data`:
the distinct labels of the training file, sorted), single texts or pairs decided by
the first data it sees (a file's header), and accuracy (regression: Pearson and
Spearman) as its metric. `config()` saves the labels and the pairing with the run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.metrics import accuracy
from keras_bert.tasks.glue import table
from keras_bert.tasks.glue.task import GlueExample, GlueTask
from keras_bert.tasks.labels import mixed_kinds

logger = logging.getLogger("keras_bert")

TASK_NAME = "classification"
# What old demo runs saved as their task: the same task (see `keras_bert.tasks.glue`).
OLD_NAMES = ("library",)


class TextClassificationTask(GlueTask):
    """Texts (or pairs) -> one of `labels`; `labels=None` is a regression (a score).

    Args:
        labels: the label names in class-index order, or None for regression.
        pair: whether inputs are text pairs; None: undecided: raw inputs may be
            either until training data decides (a file's header, or the first
            `fit`: `training_examples`).

    Example:

    >>> task = TextClassificationTask(["neg", "pos"])
    >>> task.text_examples([("a", "b")], ["pos"])[0].text_b, task.num_classes
    ('b', 2)
    """

    def __init__(self, labels: Sequence[str] | None, pair: bool | None = None):
        if labels is not None and (len(labels) < 2 or len(set(labels)) != len(labels)
                                   or not all(isinstance(x, str) for x in labels)):
            raise ArgumentError(f"a classifier needs two or more distinct label names "
                                f"(strings), got {list(labels)}.", field="label_names")
        # GlueTask.__init__ looks the name up among GLUE's metrics; this task sets its own.
        self.name = TASK_NAME
        self.directory = TASK_NAME
        self.score_range = None
        self.labels = None if labels is None else tuple(labels)
        self.pair = pair
        self.text_columns = ("sentence1", "sentence2") if pair else ("sentence",)
        self.label_column = "label"
        self.headerless_columns = None
        self.dev_splits = ("dev",)
        self.test_splits = ("test",)
        self.submission_names = ("classification.tsv",)
        self.metric_names = ("accuracy",) if labels is not None else ("pearson", "spearmanr")
        self.main_metric = self.metric_names[-1]

    @classmethod
    def from_data(cls) -> TextClassificationTask:
        """The task of `--task classification`: its label names are learnt from the
        first labelled examples it makes features of (the training split), sorted, or
        restored from a saved run.

        Example:

        >>> task = TextClassificationTask.from_data()
        >>> _ = task.label_array(task.text_examples(["a", "b", "c"], ["pos", "neg", "pos"]))
        >>> task.labels
        ('neg', 'pos')
        """
        task = cls(("0", "1"))
        task.labels = ()  # to be learnt
        return task

    def __repr__(self):
        return f"TextClassificationTask({None if self.labels is None else list(self.labels)})"

    @property
    def num_classes(self) -> int:
        if self.labels == ():
            raise ArgumentError("This classification task has no label names yet: make "
                                "features of the labelled training examples first, or "
                                "restore a saved run's config.", field="labels")
        return super().num_classes

    # --- your own files -------------------------------------------------------------
    def split_path(self, data_dir: str, split: str) -> str:
        """`data_dir/<split>.tsv` or `.csv` (`keras_bert.tasks.glue.table`); splits
        "train", "dev", "test"."""
        if split not in ("train", "dev", "test"):
            raise ArgumentError(f"classification has no split {split!r}; expected 'train', "
                                "'dev' or 'test'.", field="split")
        return table.table_path(data_dir, split)

    def read_examples(self, path: str, labelled: bool = True) -> list[GlueExample]:
        """Rows of a `.tsv` or `.csv` file with a header (`keras_bert.tasks.glue.table`).

        Raises:
            DataError: naming the file and line of a missing column, a row with another
                column count, an empty label, a label the training file did not have,
                single texts where the task was trained on pairs (or the reverse), or a
                file without rows.
        """
        rows = table.table_rows(path)
        first = next(rows, None)
        if first is None or not first[1]:
            raise DataError("is empty or starts with a blank line; expected a header "
                            "naming the text and label columns.", path=path)
        header_line, names = first
        columns = table.text_columns(names, path, header_line)
        pair = len(columns) > 1
        if self.pair is not None and pair != self.pair:
            raise DataError(f"holds {'text pairs' if pair else 'single texts'}, but the task "
                            f"classifies {'pairs' if self.pair else 'single texts'} (columns "
                            f"{names[:12]}).", path=path, line=header_line)
        self._set_pair(pair)
        label_index = (names.index(table.LABEL_COLUMN) if table.LABEL_COLUMN in names
                       else None)
        if labelled and label_index is None:
            raise DataError(f"has no {table.LABEL_COLUMN!r} column (columns: {names[:12]}).",
                            path=path, line=header_line)
        text_index = [names.index(c) for c in columns]
        id_index = next((names.index(c) for c in table.ID_COLUMNS if c in names), None)
        examples = []
        for number, row in rows:
            if not row:
                continue
            if len(row) != len(names):
                raise DataError(f"has {len(row)} columns, expected {len(names)} like the "
                                f"header ({', '.join(names[:12])}).", path=path, line=number)
            label = self._file_label(row[label_index], path, number) if labelled else None
            if not labelled and label_index is not None and row[label_index].strip():
                self._file_label(row[label_index], path, number)  # unused, but it must belong
            guid = row[id_index] if id_index is not None else str(len(examples))
            texts = [row[i] for i in text_index]
            examples.append(GlueExample(guid, texts[0], texts[1] if pair else None, label))
        if not examples:
            raise DataError("has a header but no rows.", path=path)
        if labelled and self.labels == ():  # the training file: its labels are learnt
            _warn_mixed_kinds([e.label for e in examples], path)
        return examples

    # Files: an unknown label is not one of the labels ... (GlueTask._parse_label).
    known_labels = "the labels learnt from the training data "

    def _file_label(self, raw: str, path: str, line: int):
        if self.labels is None:  # a restored regression
            return self._parse_label(raw, path, line)
        if not raw.strip():
            raise DataError("has an empty label.", path=path, line=line)
        return self._parse_label(raw, path, line) if self.labels else raw

    def label_hint(self, values: list) -> str:
        """How to train on label names the classifier does not have."""
        names = sorted({v for v in values if isinstance(v, str)})
        if not names:
            return f"The classifier's labels are {list(self.labels)}."
        return (f"The classifier's labels are {list(self.labels)}; to train on label "
                f"names, build it with label_names={names} (from_preset(..., "
                "label_names=[...])), or give class indices.")

    def _set_pair(self, pair: bool | None) -> None:
        self.pair = pair
        self.text_columns = ("sentence1", "sentence2") if pair else ("sentence",)

    def _as_inputs(self, pair: bool, work):
        """`work()` with the task taking pairs (or not) for this call only: a task whose
        pairing is undecided (`pair=None`) takes single texts and pairs alike until
        `training_examples` (a `fit`) decides it."""
        if self.pair is not None:
            return work()
        self._set_pair(pair)
        try:
            return work()
        finally:
            self._set_pair(None)

    def label_array(self, examples: Sequence[GlueExample]):
        """The class indices of the examples' labels; a task without label names yet
        learns them here, from these (the training) examples, sorted."""
        if self.labels == () and examples and all(e.label is not None for e in examples):
            learnt = sorted({str(e.label) for e in examples})
            if len(learnt) < 2:
                raise DataError(f"the training data has one label only ({learnt}); a "
                                "classifier needs two or more.")
            self.labels = tuple(learnt)
        elif self.labels == () and any(e.label is not None for e in examples):
            raise ArgumentError("give all or none of the examples labels.")
        return super().label_array(examples)

    def text_examples(self, x, y=None) -> list[GlueExample]:
        if self.pair is None:  # undecided: single texts or pairs, as `x` holds them
            from keras_bert.tasks.common import text_pairs

            return self._as_inputs(text_pairs(x)[1] is not None,
                                   lambda: self._text_examples(x, y))
        return self._text_examples(x, y)

    def features(self, examples: Sequence[GlueExample], tokenizer, settings):
        """`GlueTask.features`; an undecided task packs pairs if the examples are."""
        return self._as_inputs(bool(examples) and examples[0].text_b is not None,
                               lambda: super(TextClassificationTask, self).features(
                                   examples, tokenizer, settings))

    def training_examples(self, examples: Sequence[GlueExample]) -> list[GlueExample]:
        """The examples; an undecided task (`pair=None`) learns here, from the training
        examples, whether it classifies single texts or pairs (saved with `config`)."""
        if self.pair is None and examples:
            self._set_pair(examples[0].text_b is not None)
        return super().training_examples(examples)

    def _text_examples(self, x, y=None) -> list[GlueExample]:
        if self.labels == () and y is not None:  # learning the labels: take them as given
            from keras_bert.tasks.common import label_list

            labels = self.labels
            y = [str(v) for v in label_list(y, len(y))]  # names, not class indices
            self.labels = tuple(sorted(set(y)))
            _warn_mixed_kinds(self.labels, "y")
            try:
                return super().text_examples(x, y)
            finally:
                self.labels = labels
        return super().text_examples(x, y)

    def evaluate(self, examples: Sequence[GlueExample], predictions: Sequence) -> dict:
        """Accuracy of the predicted labels (regression: Pearson and Spearman)."""
        if self.labels is None:
            from keras_bert.metrics import glue_metrics

            return glue_metrics("stsb", [e.label for e in examples],
                                [float(p) for p in predictions])
        gold = [self.class_index(e.label, "label") for e in examples]
        guessed = [self.class_index(p, "prediction") for p in predictions]
        return {"accuracy": accuracy(gold, guessed)}

    def config(self) -> dict:
        return {**super().config(), "pair": self.pair}

    def restore(self, config: dict) -> None:
        """Takes back the saved label names and whether inputs are pairs."""
        if config.get("task", self.name) not in (self.name, *OLD_NAMES):
            raise ArgumentError(f"The saved config is for {config.get('task')!r}, not "
                                f"{self.name!r}.", field="task")
        if "labels" in config:
            self.labels = None if config["labels"] is None else tuple(config["labels"])
            self.metric_names = (("accuracy",) if self.labels is not None
                                 else ("pearson", "spearmanr"))
            self.main_metric = self.metric_names[-1]
        if config.get("pair") is not None:
            self._set_pair(config["pair"])


def _warn_mixed_kinds(labels, where: str) -> None:
    """Warns when labels about to be learnt mix numbers with names (`where`: the file,
    or `y`): `0`, `1`, `neg`, `pos` would become four classes."""
    note = mixed_kinds(labels)
    if note:
        logger.warning("%s %s.", where, note)
