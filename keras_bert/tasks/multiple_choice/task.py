"""SWAG (paper §4.4): pick the most plausible of four continuations of a sentence.

Data layout: the SWAG release's `train.csv`, `val.csv` (the dev split) and `test.csv`,
comma-separated with quoted fields and the header
`,video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,...,ending3,label`
(the first, unnamed column is the example's id; `test.csv` has no `label`).

Each example becomes four sequences `[CLS] sent1 [SEP] sent2 + " " + ending_k [SEP]`
(the paper's sentence A = the given sentence, sentence B = a possible continuation),
scored by `BertMultipleChoice` and softmaxed over the four choices.

Blank endings (an ending of no word pieces is never the answer; a row of only blank
endings answers -1) follow the one rule of `keras_bert.tasks.multiple_choice.endings`.
"""

from __future__ import annotations

import csv
import dataclasses
import io as text_io
import os
from collections.abc import Sequence

import numpy as np

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.metrics import accuracy
from keras_bert.tasks.base import TRUNCATED_TOKENS, Features, FeatureSettings, Task
from keras_bert.tasks.common import (
    as_numpy_outputs,
    encode_text_segments,
    read_text,
    warn_blank_lines,
)
from keras_bert.tasks.multiple_choice.endings import (  # noqa: F401 (NO_ANSWER: named here too)
    NO_ANSWER,
    blank_endings,
    choose_endings,
)
from keras_bert.tasks.multiple_choice.model import BertMultipleChoice

NUM_CHOICES = 4
_ENDINGS = tuple(f"ending{k}" for k in range(NUM_CHOICES))
# `Features.extra` key: bool [examples, NUM_CHOICES], which endings are blank.
BLANK_ENDINGS = "blank_endings"


@dataclasses.dataclass(frozen=True)
class SwagExample:
    """One SWAG question.

    Attributes:
        id: the first (unnamed) column, or the 0-based row number without one.
        context: `sent1`, the given sentence.
        start: `sent2`, the beginning of the continuation.
        endings: the four candidate endings.
        label: the index of the right ending, or None for unlabelled data.
    """

    id: str
    context: str
    start: str
    endings: tuple[str, ...]
    label: int | None = None

    def choices(self) -> list[str]:
        """The four sentence-B texts: `start + " " + ending`."""
        return [f"{self.start} {ending}" for ending in self.endings]


class SwagTask(Task):
    """SWAG multiple choice (`--task swag`).

    Example:

    >>> task = SwagTask()
    >>> task.metric_names, task.split_path("swag", "dev")
    (('accuracy',), 'swag/val.csv')
    """

    name = "swag"
    family = "multiple_choice"
    metric_names = ("accuracy",)
    main_metric = "accuracy"
    dev_splits = ("dev",)
    num_choices = NUM_CHOICES
    _FILES = {"train": "train.csv", "dev": "val.csv", "val": "val.csv", "test": "test.csv"}

    def __repr__(self):
        return "SwagTask()"

    def split_path(self, data_dir: str, split: str) -> str:
        """`train.csv`, `val.csv` (split "dev") or `test.csv` in `data_dir`."""
        if split not in self._FILES:
            raise ArgumentError(f"SWAG has no split {split!r}; expected 'train', 'dev' or "
                                "'test'.", field="split")
        return os.path.join(data_dir, self._FILES[split])

    def text_examples(self, x, y=None) -> list[SwagExample]:
        """Examples of raw text: `x` {"context": [...], "endings": [[...], ...]} or a
        list of (context, endings) tuples, up to four endings each (fewer are blank
        choices, never chosen); `y` None, or per context the index of the right ending.

        Example:

        >>> SwagTask().text_examples({"context": "She opens the door.",
        ...                           "endings": [["She walks in.", "It sings."]]})[0].endings
        ('She walks in.', 'It sings.', '', '')
        """
        from keras_bert.tasks.common import label_list, text_list

        if isinstance(x, dict):
            if set(x) != {"context", "endings"}:
                raise ArgumentError("give {'context': [...], 'endings': [[...], ...]}, got "
                                    f"the keys {sorted(x)}.", field="x")
            contexts, endings = text_list(x["context"], "context"), list(x["endings"])
        elif isinstance(x, (list, tuple)) and x and all(
                isinstance(p, (tuple, list)) and len(p) == 2 for p in x):
            contexts = text_list([p[0] for p in x], "context")
            endings = [p[1] for p in x]
        else:
            raise ArgumentError("give {'context': [...], 'endings': [[...], ...]} or "
                                "(context, endings) tuples.", field="x")
        if len(endings) != len(contexts):
            raise ArgumentError(f"{len(contexts)} contexts but {len(endings)} lists of "
                                "endings.", field="x")
        labels = label_list(y, len(contexts))
        examples = []
        for i, (context, options) in enumerate(zip(contexts, endings)):
            options = text_list(options, f"endings[{i}]")
            if not 2 <= len(options) <= NUM_CHOICES:
                raise ArgumentError(f"context {i} has {len(options)} endings; give 2 to "
                                    f"{NUM_CHOICES}.", field="x")
            label = None if labels is None else labels[i]
            if label is not None and (isinstance(label, bool) or not isinstance(label, int)
                                      or not 0 <= label < len(options)):
                raise ArgumentError(f"label {label!r} of context {i} is no index of its "
                                    f"{len(options)} endings.", field="y")
            padded = tuple(options) + ("",) * (NUM_CHOICES - len(options))
            examples.append(SwagExample(str(i), context, "", padded, label))
        return examples

    def read_examples(self, path: str, labelled: bool = True) -> list[SwagExample]:
        """Examples of a SWAG CSV file; columns are found by the header's names.

        Args:
            path: the CSV file.
            labelled: True: a `label` column with 0-3 is required. False: a `label`
                column is ignored if present (train/val/test files all read).

        Raises:
            DataError: naming the file and (1-based, first) line of a row with another
                number of fields than the header or a bad label, a header without the
                SWAG columns, or a file without rows.
        """
        reader = csv.reader(text_io.StringIO(read_text(path), newline=""))
        try:
            header = next(reader, None)
            if header is None:
                raise DataError("is empty; expected a SWAG CSV file.", path=path)
            missing = [c for c in ("sent1", "sent2", *_ENDINGS) if c not in header]
            if missing:
                raise DataError(f"does not look like a SWAG file: the header lacks "
                                f"{missing} (got {header[:12]}).", path=path, line=1)
            if labelled and "label" not in header:
                raise DataError("has no 'label' column; read it with labelled=False for "
                                "prediction.", path=path, line=1)
            column = {name: header.index(name) for name in header}
            id_column = column.get("")
            examples, blank, row_number = [], [], -1
            while True:
                line = reader.line_num + 1
                row = next(reader, None)
                if row is None:
                    break
                row_number += 1  # blank rows keep their place in the numbering
                if not row:
                    blank.append(line)
                    continue
                if len(row) != len(header):
                    raise DataError(f"has {len(row)} fields, expected {len(header)} like "
                                    "the header.", path=path, line=line)
                label = None
                if labelled:
                    raw = row[column["label"]]
                    if raw not in {str(k) for k in range(NUM_CHOICES)}:
                        raise DataError(f"label {raw!r} is not one of 0-{NUM_CHOICES - 1}.",
                                        path=path, line=line)
                    label = int(raw)
                examples.append(SwagExample(
                    id=row[id_column] if id_column is not None else str(row_number),
                    context=row[column["sent1"]], start=row[column["sent2"]],
                    endings=tuple(row[column[e]] for e in _ENDINGS), label=label))
                last_line = line
        except csv.Error as e:
            raise DataError(f"is not valid CSV ({e}).", path=path,
                            line=reader.line_num) from None
        if not examples:
            raise DataError("has no examples (SWAG).", path=path)
        warn_blank_lines(path, blank, last_line)
        return examples

    def features(self, examples: Sequence[SwagExample], tokenizer,
                 settings: FeatureSettings) -> Features:
        """Inputs [n, 4, max_seq_length]: per choice `[CLS] sent1 [SEP] sent2 ending
        [SEP]`, longest-first truncation; `lengths` is the longest of the four. Labels:
        the right choice's index (int32), or None when unlabelled. `extra` holds which
        endings are blank (`BLANK_ENDINGS`, for `decode`)."""
        if not examples:
            raise ArgumentError("No examples to make features of.")
        if any(len(e.endings) != NUM_CHOICES for e in examples):
            raise ArgumentError(f"Every SWAG example needs {NUM_CHOICES} endings.")
        contexts = [e.context for e in examples for _ in range(NUM_CHOICES)]
        choices = [c for e in examples for c in e.choices()]
        dropped = []
        flat = encode_text_segments(tokenizer, [contexts, choices], settings.max_seq_length,
                                    dropped)
        inputs = {k: v.reshape(len(examples), NUM_CHOICES, -1) for k, v in flat.items()}
        has_label = [e.label is not None for e in examples]
        if any(has_label) and not all(has_label):
            raise ArgumentError("Some examples have labels and some not; give all or none.")
        labels = np.array([e.label for e in examples], np.int32) if all(has_label) else None
        return Features(inputs=inputs, labels=labels,
                        lengths=inputs["input_mask"].sum(axis=-1).max(axis=-1).astype(np.int32),
                        example_index=np.arange(len(examples), dtype=np.int64),
                        extra={TRUNCATED_TOKENS: np.asarray(dropped, np.int32).reshape(
                            len(examples), NUM_CHOICES).max(axis=1),
                               BLANK_ENDINGS: blank_endings(
                                   tokenizer, [x for e in examples for x in e.endings]
                               ).reshape(len(examples), NUM_CHOICES)})

    def serving(self, settings: FeatureSettings):
        """Multiple choice's serving (context, continuation, endings)."""
        from keras_bert.tasks.multiple_choice.serving import ChoiceServing

        return ChoiceServing(num_choices=int(self.num_choices))

    def build_model(self, encoder, **kwargs):
        """`BertMultipleChoice(encoder, num_choices=4)`; `kwargs` go to it."""
        return BertMultipleChoice(encoder, num_choices=NUM_CHOICES, **kwargs)

    def decode(self, examples: Sequence[SwagExample], features: Features, outputs,
               settings: FeatureSettings | None = None) -> list[int]:
        """The index (0-3) of the highest-scoring non-blank ending of each example, -1
        (`NO_ANSWER`) for one whose endings are all blank (the module docstring's rule;
        features without `BLANK_ENDINGS` count no ending blank)."""
        logits = as_numpy_outputs(outputs)
        if logits.shape != (len(features), NUM_CHOICES) or len(examples) != len(features):
            raise ArgumentError(f"Expected outputs shaped ({len(features)}, {NUM_CHOICES}) "
                                f"for {len(examples)} examples, got {logits.shape}.",
                                field="outputs")
        blank = features.extra.get(BLANK_ENDINGS)
        blank = np.zeros(logits.shape, bool) if blank is None else np.asarray(blank, bool)
        predictions = [None] * len(examples)
        for feature, choice in enumerate(choose_endings(logits, blank)):
            predictions[int(features.example_index[feature])] = int(choice)
        return predictions

    def evaluate(self, examples: Sequence[SwagExample], predictions: Sequence) -> dict:
        """Accuracy (a fraction); a prediction of -1 (no answer) is wrong."""
        if any(e.label is None for e in examples):
            raise ArgumentError("The examples have no labels to evaluate against; read "
                                "them with labelled=True.")
        return {"accuracy": accuracy([e.label for e in examples],
                                     [int(p) for p in predictions])}

    def write_predictions(self, examples: Sequence[SwagExample], predictions: Sequence,
                          path: str) -> None:
        """A CSV `index,prediction` with each example's id and predicted choice (0-3,
        or -1 when every ending is blank: no answer)."""
        if len(examples) != len(predictions):
            raise ArgumentError(f"{len(examples)} examples but {len(predictions)} "
                                "predictions.", field="predictions")
        with fileio.atomic_write(path) as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["index", "prediction"])
            writer.writerows([e.id, int(p)] for e, p in zip(examples, predictions))

    def tfds_layout(self):
        """SWAG is not in tensorflow-datasets: always `ArgumentError`."""
        raise ArgumentError("SWAG is not in tensorflow-datasets; read it from the "
                            "benchmark's files (a data_dir) instead.", field="name")

    @classmethod
    def from_config(cls, config: dict) -> SwagTask:
        if config.get("task") != cls.name:
            raise ArgumentError(f"Not a {cls.name} task config: {config}.", field="task")
        return cls()
