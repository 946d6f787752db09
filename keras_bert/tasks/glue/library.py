"""The demo's fine-tuning task: which library a docstring sentence comes from.

`keras-bert demo` derives it from its own corpus (the English docstrings of the Python
standard library, numpy, tensorflow and keras): every example is one sentence, its
label the library whose source holds it. It is a `GlueTask` in GLUE's single-sentence
layout (`train.tsv` and `dev.tsv` with a `sentence<TAB>label` header), so
`keras_bert.tasks.finetuning.Finetuning` fine-tunes it exactly as it fine-tunes SST-2,
scored by accuracy; the label set is the task's own (saved with the model).
"""

from __future__ import annotations

from collections.abc import Sequence

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError
from keras_bert.metrics import accuracy
from keras_bert.tasks.glue.task import GlueExample, GlueTask

TASK_NAME = "library"


class LibraryTask(GlueTask):
    """Sentence -> the library its docstring comes from, one class per library.

    Args:
        labels: the library names in class-index order.

    Example:

    >>> task = LibraryTask(["stdlib", "numpy"])
    >>> task.name, task.labels, task.metric_names, task.num_classes
    ('library', ('stdlib', 'numpy'), ('accuracy',), 2)
    """

    def __init__(self, labels: Sequence[str]):
        if len(labels) < 2 or len(set(labels)) != len(labels):
            raise ArgumentError(f"the library task needs two or more distinct labels, got "
                                f"{list(labels)}.", field="labels")
        # GlueTask.__init__ looks the name up among GLUE's metrics; this task sets its own.
        self.name = TASK_NAME
        self.directory = TASK_NAME
        self.labels = tuple(labels)
        self.text_columns = ("sentence",)
        self.label_column = "label"
        self.headerless_columns = None
        self.dev_splits = ("dev",)
        self.test_splits = ("test",)
        self.submission_names = ("library.tsv",)
        self.metric_names = ("accuracy",)
        self.main_metric = "accuracy"

    @classmethod
    def saved(cls) -> LibraryTask:
        """The task of a saved run, before `restore` gives it the run's labels (how
        `get_task("library")` opens a demo run for `load_finetuned` and export)."""
        task = cls(("", " "))
        task.labels = ()
        return task

    def __repr__(self):
        return f"LibraryTask({list(self.labels)!r})"

    def evaluate(self, examples: Sequence[GlueExample], predictions: Sequence) -> dict:
        """Accuracy of the predicted library names."""
        if len(examples) != len(predictions):
            raise ArgumentError(f"{len(examples)} examples but {len(predictions)} "
                                "predictions.", field="predictions")
        gold = [self.class_index(e.label, "label") for e in examples]
        guessed = [self.class_index(p, "prediction") for p in predictions]
        return {"accuracy": accuracy(gold, guessed)}

    def restore(self, config: dict) -> None:
        """Takes back the label list a saved model was trained with."""
        if config.get("task", self.name) != self.name:
            raise ArgumentError(f"The saved config is for {config.get('task')!r}, not "
                                f"{self.name!r}.", field="task")
        if config.get("labels"):
            self.labels = tuple(config["labels"])


def write_split(path: str, examples: Sequence[tuple[str, str]]) -> None:
    """Writes (sentence, label) pairs as a `LibraryTask` TSV file, atomically.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.tsv")
    >>> write_split(path, [("Returns the array.", "numpy")])
    >>> [(e.text_a, e.label) for e in LibraryTask(["stdlib", "numpy"]).read_examples(path)]
    [('Returns the array.', 'numpy')]
    """
    with fileio.atomic_write(path) as f:
        f.write("sentence\tlabel\n")
        for sentence, label in examples:
            if "\t" in sentence or "\n" in sentence:
                raise ArgumentError(f"a sentence holds a tab or a newline: {sentence!r}.")
            f.write(f"{sentence}\t{label}\n")
