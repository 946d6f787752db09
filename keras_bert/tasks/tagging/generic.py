"""Your own tagged words: `--task tagging`, a tag per word with any tag set.

File layout (`data_dir` holds `train.txt`, `dev.txt` and, optionally, `test.txt`):
CoNLL-style, UTF-8, one word per line with its tag last, separated by whitespace (a tab
or spaces; columns between the word and the tag, such as CoNLL-2003's part of speech,
are allowed and ignored, but every line of a file has as many columns as its first), a
blank line between sentences (`-DOCSTART-` lines also end a sentence and are skipped).
Prediction input may hold the words alone, one per line.

The tag set is any set of two or more tags (no whitespace inside a tag): the distinct
tags of the training file, sorted with "O" first, saved with the run (`config()`) and
restored for evaluation, prediction and export. A dev (or prediction input) tag the
training file does not have is refused, naming its file and line: the model could
neither predict nor be scored on it (`keras_bert.tasks.labels`).

Metrics: word accuracy; when every tag is "O" or B-/I-/E-/S-TYPE (an entity scheme),
also conlleval's entity precision, recall and F1, and F1 is then the main metric.

The task is `NerTask`'s machinery (windows over long sentences, each word's label on its
first piece, the taggers, serving) with these files and tags.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from keras_bert.core.errors import ArgumentError
from keras_bert.metrics import accuracy, ner_span_metrics
from keras_bert.tasks.base import Task
from keras_bert.tasks.tagging.task import NerExample, NerTask

TASK_NAME = "tagging"


class TaggingTask(NerTask):
    """A tag per word, any tag set (`--task tagging`; see the module docstring).

    Args:
        labels: the tag list in class-index order; None: learnt from the training
            examples (as `NerTask` does), or restored from a saved run.

    Example:

    >>> task = TaggingTask()
    >>> task.label_list_of([NerExample(("Dogs", "bark"), ("NOUN", "VERB"))])
    ('NOUN', 'VERB')
    >>> TaggingTask(["NOUN", "VERB"]).metric_names, TaggingTask(["O", "B-X"]).main_metric
    (('accuracy',), 'f1')
    """

    name = TASK_NAME
    family = "tagging"
    tag_pattern = re.compile(r"\S+")
    tag_rule = "a tag without whitespace"
    refuses_unknown_file_tags = True  # a dev tag train never had: file and line, exit 2
    _FILES = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}

    def __repr__(self):
        return f"TaggingTask(labels={self.labels})"

    @property
    def entity_tags(self) -> bool:
        """Whether the tags are an entity scheme ("O", B-/I-/E-/S-TYPE): then the
        metrics include conlleval's entity F1."""
        return self.labels is not None and all(NerTask.tag_pattern.fullmatch(t) for t in self.labels)

    @property
    def metric_names(self) -> tuple[str, ...]:
        return ("accuracy", "precision", "recall", "f1") if self.entity_tags else ("accuracy",)

    @property
    def main_metric(self) -> str:
        return "f1" if self.entity_tags else "accuracy"

    def split_path(self, data_dir: str, split: str) -> str:
        """`train.txt`, `dev.txt` or `test.txt` in `data_dir`."""
        if split not in self._FILES:
            raise ArgumentError(f"tagging has no split {split!r}; expected 'train', 'dev' or "
                                "'test'.", field="split")
        return os.path.join(data_dir, self._FILES[split])

    def evaluate(self, examples: Sequence[NerExample], predictions: Sequence) -> dict:
        """Word accuracy, and for entity tags conlleval's precision, recall and F1."""
        if any(e.tags is None for e in examples):
            raise ArgumentError("The examples have no tags to evaluate against; read them "
                                "with labelled=True.")
        if len(examples) != len(predictions):
            raise ArgumentError(f"{len(examples)} examples but {len(predictions)} "
                                "predictions.", field="predictions")
        gold = [t for e in examples for t in e.tags]
        guessed = [t for p in predictions for t in p]
        if len(gold) != len(guessed):
            raise ArgumentError(f"{len(gold)} gold tags but {len(guessed)} predicted.",
                                field="predictions")
        metrics = {"accuracy": accuracy(gold, guessed)}
        if self.entity_tags:
            metrics.update(ner_span_metrics([e.tags for e in examples], predictions))
        return metrics

    tfds_layout = Task.tfds_layout  # your own files only
