"""GLUE (paper §4.1): the nine tasks read from the TSV files of the GLUE benchmark
download, classified from [CLS] by `BertClassifier`, scored with the official metrics
and written in GLUE's submission format.

Data layout: one directory per task (`CoLA`, `SST-2`, `MRPC`, `STS-B`, `QQP`, `MNLI`,
`QNLI`, `RTE`, `WNLI`) holding `train.tsv`, `dev.tsv` and `test.tsv` (MNLI:
`dev_matched.tsv`, `dev_mismatched.tsv`, `test_matched.tsv`, `test_mismatched.tsv`).
Fields are separated by tabs with no quoting (quote characters are ordinary text, as
csv.QUOTE_NONE reads them; GLUE's sentences hold unbalanced quotes). Columns are found
by the header's names; CoLA's train/dev files alone have no header (source, label,
original mark, sentence). Labels are those of google-research/bert's run_classifier.py.

`GLUE_TASKS` maps each task name ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli",
"qnli", "rte", "wnli") to its `GlueTask`.

The same tasks read from tensorflow-datasets (`glue/<task>`, see
`keras_bert.tasks.tfds_source`): tfds's class names are mapped by name to the label
strings of the GLUE TSVs (sst2 "negative"/"positive" -> "0"/"1", MNLI's names as they
are, ...); the `idx` feature (the row number in GLUE's TSV) is the guid, and examples
come back in that order. Test splits carry the label -1, read as None.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence

import numpy as np

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.metrics import GLUE_METRIC_NAMES, glue_metrics
from keras_bert.tasks.base import TRUNCATED_TOKENS, Features, FeatureSettings, Task
from keras_bert.tasks.common import (
    as_numpy_outputs,
    encode_text_segments,
    label_list,
    read_lines,
    text_pairs,
    warn_blank_lines,
)
from keras_bert.tasks.glue.examples import GLUE_TFDS_FEATURES, TFDS_SPLITS, GlueExample, tfds_reader
from keras_bert.tasks.labels import class_problem, refuse, score
from keras_bert.tasks.registry import task_model_class
from keras_bert.tasks.tfds_source import TfdsLayout


class GlueTask(Task):
    """One GLUE task: reading its TSVs, features, `BertClassifier`, decoding, metrics
    and the submission file.

    Args:
        name: the task name ("mnli", ...).
        directory: its directory in the GLUE download ("MNLI", ...).
        labels: the label strings in class-index order, or None for regression
            (STS-B, one output).
        text_columns: header names of the one or two text columns.
        label_column: header name of the label column.
        headerless_columns: the column names of train/dev files that have no header
            (CoLA), else None.
        dev_splits: the evaluation splits.
        test_splits: the unlabelled test splits.
        submission_names: the GLUE submission file name for each test split.
        score_range: regression: the (lowest, highest) score a label may hold (STS-B:
            0 to 5); a file with a score outside it is refused before training.

    Example:

    >>> task = GLUE_TASKS["rte"]
    >>> task.labels, task.metric_names, task.main_metric
    (('entailment', 'not_entailment'), ('accuracy',), 'accuracy')
    """

    family = "glue"

    def __init__(self, name: str, directory: str, labels: Sequence[str] | None,
                 text_columns: Sequence[str], label_column: str,
                 headerless_columns: Sequence[str] | None = None,
                 dev_splits: Sequence[str] = ("dev",), test_splits: Sequence[str] = ("test",),
                 submission_names: Sequence[str] | None = None,
                 score_range: tuple[float, float] | None = None):
        self.name = name
        self.score_range = score_range
        self.directory = directory
        self.labels = None if labels is None else tuple(labels)
        self.text_columns = tuple(text_columns)
        self.label_column = label_column
        self.headerless_columns = (None if headerless_columns is None
                                   else tuple(headerless_columns))
        self.dev_splits = tuple(dev_splits)
        self.test_splits = tuple(test_splits)
        self.submission_names = tuple(submission_names or (f"{directory}.tsv",))
        self.metric_names = GLUE_METRIC_NAMES[name]
        self.main_metric = {"mrpc": "f1", "qqp": "f1", "stsb": "spearmanr",
                            "cola": "matthews_corrcoef"}.get(name, "accuracy")

    def __repr__(self):
        return f"GlueTask({self.name!r})"

    def serving(self, settings: FeatureSettings):
        """A classifier's serving (label names, one text or a pair), or a regressor's."""
        from keras_bert.tasks.glue.serving import ClassifierServing, RegressionServing

        pair = len(self.text_columns) > 1
        if self.is_regression:
            return RegressionServing(pair=pair)
        return ClassifierServing(pair=pair, label_names=tuple(self.labels))

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def num_classes(self) -> int:
        """Model outputs: the number of labels, 1 for regression."""
        return 1 if self.labels is None else len(self.labels)

    # --- files ----------------------------------------------------------------------
    def split_path(self, data_dir: str, split: str) -> str:
        """`data_dir/<split>.tsv`, or `data_dir/<task directory>/<split>.tsv` when
        `data_dir` is the root of the GLUE download (it holds the task's directory).
        Splits: "train", `dev_splits`, `test_splits`; for MNLI "test" means
        "test_matched"."""
        if split == "test" and "test" not in self.test_splits:
            split = self.test_splits[0]
        known = ("train", *self.dev_splits, *self.test_splits)
        if split not in known:
            raise ArgumentError(f"GLUE {self.name} has no split {split!r}; expected one of "
                                f"{known}.", field="split")
        nested = os.path.join(data_dir, self.directory)
        root = nested if fileio.isdir(nested) else data_dir
        return os.path.join(root, f"{split}.tsv")

    def submission_name(self, split: str = "test") -> str:
        """The file name the GLUE server expects for `split`'s predictions
        (e.g. "MNLI-mm.tsv" for "test_mismatched")."""
        if split == "test":
            split = self.test_splits[0]
        if split not in self.test_splits:
            raise ArgumentError(f"GLUE {self.name} has no test split {split!r}; expected "
                                f"one of {self.test_splits}.", field="split")
        return self.submission_names[self.test_splits.index(split)]

    def read_examples(self, path: str, labelled: bool = True) -> list[GlueExample]:
        """Reads a file in the task's layout.

        The layout is decided from the first line: a header naming the task's text
        columns (every file but CoLA's train/dev, e.g. `index sentence1 sentence2
        label` for RTE), where columns are then found by name, so a train/dev file and
        a test file (an id column, no label) both read; or, for CoLA, rows of its four
        headerless columns (source, label, original mark, sentence).

        Args:
            path: the TSV file.
            labelled: True: every row needs a label in the task's label set (a float
                for STS-B). False: the label column is ignored if there is one (what
                `predict` reads: train/dev/test files alike).

        Returns:
            the `GlueExample`s in file order.

        Raises:
            DataError: naming the file and line of a row with a wrong column count or
                an unknown label, a file without the expected header or label column,
                or a file without rows.
        """
        lines = read_lines(path)
        first = next(lines, None)
        if first is None:
            raise DataError("is empty; expected a GLUE "
                            f"{self.name} file with examples.", path=path)
        fields = first[1].split("\t")
        if set(self.text_columns) <= set(fields):
            names, rows = fields, lines
        elif self.headerless_columns and len(fields) == len(self.headerless_columns):
            names, rows = list(self.headerless_columns), _chain_first(first, lines)
        else:
            raise DataError(
                f"does not look like a GLUE {self.name} file: expected a tab-separated "
                f"header with the column(s) {list(self.text_columns)}"
                + (f" or {len(self.headerless_columns)} headerless columns"
                   if self.headerless_columns else "") + f", got {fields[:12]}.",
                path=path, line=first[0])
        text_index = [names.index(c) for c in self.text_columns]
        label_index = names.index(self.label_column) if self.label_column in names else None
        if labelled and label_index is None:
            raise DataError(f"has no {self.label_column!r} label column (columns: {names}); "
                            "read it with labelled=False for prediction.", path=path,
                            line=first[0])
        id_index = next((names.index(c) for c in ("index", "id") if c in names), None)
        examples, blank = [], []
        for row_number, (number, text) in enumerate(rows):
            if not text:  # a blank line holds no row, but keeps its place in the numbering
                blank.append(number)
                continue
            row = text.split("\t")
            if len(row) != len(names):
                raise DataError(f"has {len(row)} tab-separated columns, expected "
                                f"{len(names)} ({', '.join(names)}).", path=path,
                                line=number)
            label = self._parse_label(row[label_index], path, number) if labelled else None
            texts = [row[i] for i in text_index]
            guid = row[id_index] if id_index is not None else str(row_number)
            last_line = number
            examples.append(GlueExample(guid, texts[0], texts[1] if len(texts) > 1 else None,
                                        label))
        if not examples:
            raise DataError(f"has no examples (GLUE {self.name}).", path=path)
        warn_blank_lines(path, blank, last_line)
        return examples

    def _parse_label(self, raw: str, path: str, line: int):
        """A file's label as examples hold it (`keras_bert.tasks.labels`' judgment,
        the same as `text_examples`'), or `DataError` naming the file and line."""
        if self.labels is None:
            value, problem = score(raw)
            if problem and self.score_range and _is_float(raw):
                value, problem = math.nan, None  # NaN, inf: outside the range, said below
            if problem:
                raise DataError(f"{problem}; {self.name} is a regression: every label is "
                                "a finite number.", path=path, line=line)
            low, high = self.score_range or (-math.inf, math.inf)
            if not low <= value <= high:
                raise DataError(f"score {raw!r} is outside GLUE {self.name}'s range "
                                f"{low:g} to {high:g}.", path=path, line=line)
            return value
        problem = class_problem(raw, self.labels, indices=False, known=self.known_labels)
        if problem:
            raise DataError(f"{problem}.", path=path, line=line)
        return raw

    # What a file's unknown label is not one of (before the label list).
    @property
    def known_labels(self) -> str:
        return f"GLUE {self.name}'s labels "

    def label_hint(self, values: list) -> str:
        """What `text_examples` adds when some of the labels `values` are refused (GLUE's
        label sets are fixed: nothing)."""
        return ""

    # --- raw text (the task model's face) ------------------------------------------
    def text_examples(self, x, y=None) -> list[GlueExample]:
        """Examples of raw inputs: `x` one text, a list of texts, or pairs (see
        `keras_bert.tasks.common.text_pairs`); `y` None, or per text a label name, a
        class index, or a score for regression.

        Example:

        >>> GLUE_TASKS["sst2"].text_examples(["a fine film", "dull"], [1, "0"])[0]
        GlueExample(guid='0', text_a='a fine film', text_b=None, label='1')
        """
        first, second = text_pairs(x)
        pair = len(self.text_columns) > 1
        if pair != (second is not None):
            raise ArgumentError(
                f"{self.name} classifies {'pairs of texts' if pair else 'single texts'}; "
                + ("give pairs: x=(texts, text_pairs) or {'text': ..., 'text_pair': ...}."
                   if pair else "give a list of texts, not pairs."), field="x")
        labels = self.raw_labels(label_list(y, len(first)))
        return [GlueExample(str(i), a, None if second is None else second[i],
                            None if labels is None else labels[i])
                for i, a in enumerate(first)]

    def raw_labels(self, values: list | None) -> list | None:
        """Raw labels `y` as examples hold them: label names (of a name or a class
        index) or, for a regression, finite floats. One `ArgumentError` names every
        label that does not belong (`y[i]`) and the task's labels."""
        if values is None:
            return None
        if self.labels is None:
            scores = [score(v) for v in values]
            refuse([(f"y[{i}]", problem) for i, (_, problem) in enumerate(scores) if problem],
                   "y", f"{self.name} is a regression: every label is a finite number.")
            return [value for value, _ in scores]
        problems = [(f"y[{i}]", problem) for i, v in enumerate(values)
                    if (problem := class_problem(v, self.labels))]
        refuse(problems, "y", self.label_hint(values) if problems else "")
        return [v if isinstance(v, str) else self.labels[v] for v in values]

    # --- features and model ---------------------------------------------------------
    def features(self, examples: Sequence[GlueExample], tokenizer,
                 settings: FeatureSettings) -> Features:
        """`[CLS] text_a [SEP] (text_b [SEP])` per example; labels are class indices
        (int32), float32 scores for STS-B, or None when the examples have no labels."""
        if not examples:
            raise ArgumentError("No examples to make features of.")
        segments = [[e.text_a for e in examples]]
        if len(self.text_columns) > 1:
            segments.append([e.text_b or "" for e in examples])
        dropped = []
        inputs = encode_text_segments(tokenizer, segments, settings.max_seq_length, dropped)
        return Features(inputs=inputs, labels=self.label_array(examples),
                        lengths=inputs["input_mask"].sum(axis=1).astype(np.int32),
                        example_index=np.arange(len(examples), dtype=np.int64),
                        extra={TRUNCATED_TOKENS: np.asarray(dropped, np.int32)})

    def label_array(self, examples: Sequence[GlueExample]) -> np.ndarray | None:
        """The examples' labels as training targets (None when unlabelled)."""
        has_label = [e.label is not None for e in examples]
        if not any(has_label):
            return None
        if not all(has_label):
            raise ArgumentError(f"{has_label.count(False)} of {len(examples)} examples have "
                                "no label; give all or none labels.")
        if self.labels is None:
            return np.array([e.label for e in examples], np.float32)
        index = {label: i for i, label in enumerate(self.labels)}
        refuse([(f"example {i}", problem) for i, e in enumerate(examples)
                if (problem := class_problem(e.label, self.labels, indices=False))],
               "examples")
        return np.array([index[e.label] for e in examples], np.int32)

    def build_model(self, encoder, **kwargs):
        """`BertClassifier(encoder, num_classes)`; `kwargs` go to it (e.g. `dropout`)."""
        model_class = task_model_class("glue", "BertClassifier")
        return model_class(encoder, num_classes=self.num_classes, **kwargs)

    # --- predictions ----------------------------------------------------------------
    def decode(self, examples: Sequence[GlueExample], features: Features, outputs,
               settings: FeatureSettings | None = None) -> list:
        """Label strings (argmax of the logits), or STS-B scores as floats."""
        logits = as_numpy_outputs(outputs)
        if logits.ndim != 2 or logits.shape != (len(features), self.num_classes):
            raise ArgumentError(f"Expected outputs shaped ({len(features)}, "
                                f"{self.num_classes}), got {logits.shape}.", field="outputs")
        if len(examples) != len(features):
            raise ArgumentError(f"{len(examples)} examples but {len(features)} features.")
        predictions = [None] * len(examples)
        values = (logits[:, 0].tolist() if self.labels is None
                  else [self.labels[i] for i in np.argmax(logits, axis=-1)])
        for feature, example in enumerate(features.example_index):
            predictions[int(example)] = values[feature]
        return predictions

    def class_index(self, value, what: str) -> int:
        """The class index of a label string (`ArgumentError` naming `what` for one not
        in `labels`), or of an index given as a number."""
        if isinstance(value, str):
            if value not in self.labels:
                raise ArgumentError(f"{what} {value!r} is not one of {list(self.labels)}.")
            return self.labels.index(value)
        return int(value)

    def evaluate(self, examples: Sequence[GlueExample], predictions: Sequence) -> dict:
        """`keras_bert.metrics.glue_metrics` of the predictions (label strings or
        class indices; STS-B scores) against the examples' labels."""
        if len(examples) != len(predictions):
            raise ArgumentError(f"{len(examples)} examples but {len(predictions)} "
                                "predictions.", field="predictions")
        if any(e.label is None for e in examples):
            raise ArgumentError("The examples have no labels to evaluate against; read "
                                "them with labelled=True.")
        if self.labels is None:
            return glue_metrics(self.name, [e.label for e in examples],
                                [float(p) for p in predictions])
        gold = [self.class_index(e.label, "label") for e in examples]
        guessed = [self.class_index(p, "prediction") for p in predictions]
        return glue_metrics(self.name, gold, guessed)

    def write_predictions(self, examples: Sequence[GlueExample], predictions: Sequence,
                          path: str) -> None:
        """GLUE's submission format: a header `index<TAB>prediction`, then one row per
        example in input order: its id and its label (a score with 6 significant digits
        for STS-B)."""
        if len(examples) != len(predictions):
            raise ArgumentError(f"{len(examples)} examples but {len(predictions)} "
                                "predictions.", field="predictions")
        with fileio.atomic_write(path) as f:
            f.write("index\tprediction\n")
            for example, prediction in zip(examples, predictions):
                if self.labels is None:
                    prediction = format(float(prediction), ".6g")
                elif not isinstance(prediction, str):
                    prediction = self.labels[int(prediction)]
                f.write(f"{example.guid}\t{prediction}\n")

    def config(self) -> dict:
        return {"task": self.name, "labels": None if self.labels is None else list(self.labels)}

    def restore(self, config: dict) -> None:
        """Checks a saved `config()` against this task: GLUE's label sets are fixed, so
        there is nothing to take back, but a model saved for other labels must not be
        decoded with these."""
        if config.get("task", self.name) != self.name:
            raise ArgumentError(f"The saved config is for {config.get('task')!r}, not GLUE "
                                f"{self.name}.", field="task")
        if "labels" in config:
            labels = config["labels"]
            if (None if labels is None else tuple(labels)) != self.labels:
                raise ArgumentError(f"Saved labels {labels} differ from GLUE {self.name}'s "
                                    f"{self.labels}.", field="labels")

    def tfds_layout(self) -> TfdsLayout:
        """`glue/<task>` in tensorflow-datasets (see the module docstring); your own
        `classification` data is not there."""
        if self.name not in GLUE_TFDS_FEATURES:
            return super().tfds_layout()  # raises: not a dataset tfds has
        known = ("train", *self.dev_splits, *self.test_splits)
        # MNLI: "test" means "test_matched", as for the files.
        aliases = {} if "test" in self.test_splits else {"test": self.test_splits[0]}
        return TfdsLayout(f"glue/{self.name}", {s: TFDS_SPLITS[s] for s in known},
                          functools.partial(tfds_reader, self), split_aliases=aliases)

    @classmethod
    def from_config(cls, config: dict) -> GlueTask:
        """The registered task of a `config()` (checks that the labels agree)."""
        task = GLUE_TASKS.get(config.get("task"))
        if task is None:
            raise ArgumentError(f"Unknown GLUE task {config.get('task')!r}; expected one of "
                                f"{sorted(GLUE_TASKS)}.", field="task")
        task.restore(config)
        return task


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _chain_first(first, rest):
    yield first
    yield from rest


_BINARY = ("0", "1")
_ENTAILMENT = ("entailment", "not_entailment")

GLUE_TASKS: dict[str, GlueTask] = {task.name: task for task in (
    GlueTask("cola", "CoLA", _BINARY, ("sentence",), "label",
             headerless_columns=("source", "label", "original_mark", "sentence")),
    GlueTask("sst2", "SST-2", _BINARY, ("sentence",), "label"),
    GlueTask("mrpc", "MRPC", _BINARY, ("#1 String", "#2 String"), "Quality"),
    GlueTask("stsb", "STS-B", None, ("sentence1", "sentence2"), "score",
             score_range=(0.0, 5.0)),
    GlueTask("qqp", "QQP", _BINARY, ("question1", "question2"), "is_duplicate"),
    GlueTask("mnli", "MNLI", ("contradiction", "entailment", "neutral"),
             ("sentence1", "sentence2"), "gold_label",
             dev_splits=("dev_matched", "dev_mismatched"),
             test_splits=("test_matched", "test_mismatched"),
             submission_names=("MNLI-m.tsv", "MNLI-mm.tsv")),
    GlueTask("qnli", "QNLI", _ENTAILMENT, ("question", "sentence"), "label"),
    GlueTask("rte", "RTE", _ENTAILMENT, ("sentence1", "sentence2"), "label"),
    GlueTask("wnli", "WNLI", _BINARY, ("sentence1", "sentence2"), "label"),
)}
