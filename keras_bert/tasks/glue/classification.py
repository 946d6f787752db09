"""Text classification (or regression) with your own labels: the task behind
`BertClassifier.from_preset(source, num_classes=..., label_names=...)`.

It is a `GlueTask` in every way that matters (features, `BertClassifier`, decoding,
serving), with the label names given (or "0".."n-1"), single texts or pairs decided by
the first data it sees, and accuracy (regression: Pearson and Spearman) as its metric.
"""

from __future__ import annotations

from collections.abc import Sequence

from keras_bert.core.errors import ArgumentError
from keras_bert.metrics import accuracy
from keras_bert.tasks.glue.task import GlueExample, GlueTask

TASK_NAME = "classification"


class TextClassificationTask(GlueTask):
    """Texts (or pairs) -> one of `labels`; `labels=None` is a regression (a score).

    Args:
        labels: the label names in class-index order, or None for regression.
        pair: whether inputs are text pairs; None: decided by the first inputs.

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

    def __repr__(self):
        return f"TextClassificationTask({None if self.labels is None else list(self.labels)})"

    def text_examples(self, x, y=None) -> list[GlueExample]:
        if self.pair is None:
            from keras_bert.tasks.common import text_pairs

            self.pair = text_pairs(x)[1] is not None
            self.text_columns = ("sentence1", "sentence2") if self.pair else ("sentence",)
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
        if config.get("task", self.name) != self.name:
            raise ArgumentError(f"The saved config is for {config.get('task')!r}, not "
                                f"{self.name!r}.", field="task")
        if "labels" in config:
            self.labels = None if config["labels"] is None else tuple(config["labels"])
            self.metric_names = (("accuracy",) if self.labels is not None
                                 else ("pearson", "spearmanr"))
            self.main_metric = self.metric_names[-1]
        if config.get("pair") is not None:
            self.pair = config["pair"]
            self.text_columns = ("sentence1", "sentence2") if self.pair else ("sentence",)
