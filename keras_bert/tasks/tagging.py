"""Named-entity recognition on CoNLL-2003 (paper §5.3): fine-tuned (`BertNerTagger`)
or feature-based on the frozen encoder (`BertFeatureBasedTagger`, Table 7).

Data layout: `train.txt`, `valid.txt` (the dev split) and `test.txt`, one token per
line with space-separated columns, the word first and the NER tag last (CoNLL-2003:
`word POS chunk NER`), a blank line between sentences and `-DOCSTART-` lines between
documents. Tags may be IOB1 (CoNLL-2003 as distributed), BIO (IOB2) or IOBES; the
official score (`keras_bert.metrics.ner_span_metrics`) reads chunks as conlleval does.

As in the paper, each word's label sits on its first WordPiece; the other pieces,
[CLS], [SEP] and padding carry the label `IGNORE_LABEL` (-1), which the models' default
loss (`SparseCategoricalCrossentropy(ignore_class=-1)`) and accuracy skip. Sentences
longer than the sequence are cut: a word whose first piece does not fit gets no
prediction and is decoded as "O"; `Features.extra["truncated_words"]` counts them.

The same data read from tensorflow-datasets (`conll2003`, see
`keras_bert.tasks.tfds_source`): the `tokens` and the `ner` tags by name. tfds keeps no
line numbers, so `NerExample.line` is 0.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert import io
from keras_bert.errors import ArgumentError, DataError
from keras_bert.metrics import ner_span_metrics
from keras_bert.tasks.base import TRUNCATED_TOKENS, Features, FeatureSettings, Task
from keras_bert.tasks.common import as_numpy_outputs, read_lines
from keras_bert.tasks.tagging_models import IGNORE_LABEL, BertFeatureBasedTagger, BertNerTagger
from keras_bert.tasks.tfds_source import TfdsLayout, class_names, record_text, require_features

_TAG = re.compile(r"O|[BIES]-\S+")
_TOKENIZE_BATCH = 65536  # words per tokenizer call


@dataclasses.dataclass(frozen=True)
class NerExample:
    """One sentence.

    Attributes:
        words: the words, in order.
        tags: one NER tag per word, or None for unlabelled data.
        line: the file line of the first word (1-based).
    """

    words: tuple[str, ...]
    tags: tuple[str, ...] | None = None
    line: int = 0


class NerTask(Task):
    """CoNLL-2003 NER (`--task ner`).

    Args:
        labels: the tag list in class-index order. None (a new task): `features` of the
            first labelled examples it sees (the training split) sets it to the tags
            they contain, sorted with "O" first. `config()` saves it and `restore`
            (or `NerTask.from_config`) takes it back for prediction.

    Example:

    >>> task = NerTask()
    >>> task.label_list_of([NerExample(("EU", "rejects"), ("I-ORG", "O"))])
    ('O', 'I-ORG')
    """

    name = "ner"
    family = "tagging"
    metric_names = ("precision", "recall", "f1")
    main_metric = "f1"
    dev_splits = ("dev",)
    _FILES = {"train": "train.txt", "dev": "valid.txt", "valid": "valid.txt",
              "test": "test.txt"}

    def __init__(self, labels: Sequence[str] | None = None):
        self.labels = None if labels is None else self._checked_labels(labels)

    def __repr__(self):
        return f"NerTask(labels={self.labels})"

    @staticmethod
    def _checked_labels(labels) -> tuple[str, ...]:
        labels = tuple(labels)
        bad = [t for t in labels if not _TAG.fullmatch(t)]
        if bad or len(set(labels)) != len(labels) or len(labels) < 2:
            raise ArgumentError(f"NER labels must be 2 or more distinct tags 'O' or "
                                f"B-/I-/E-/S-TYPE; got {list(labels)}.", field="labels")
        return labels

    @staticmethod
    def label_list_of(examples: Sequence[NerExample]) -> tuple[str, ...]:
        """The tags of `examples`, sorted, "O" first."""
        tags = {t for e in examples for t in (e.tags or ())}
        return tuple(["O"] * ("O" in tags) + sorted(tags - {"O"}))

    # --- files ----------------------------------------------------------------------
    def split_path(self, data_dir: str, split: str) -> str:
        """`train.txt`, `valid.txt` (split "dev") or `test.txt` in `data_dir`."""
        if split not in self._FILES:
            raise ArgumentError(f"CoNLL-2003 has no split {split!r}; expected 'train', "
                                "'dev' or 'test'.", field="split")
        return os.path.join(data_dir, self._FILES[split])

    def read_examples(self, path: str, labelled: bool = True) -> list[NerExample]:
        """Sentences of a CoNLL-2003 file (see the module docstring).

        Args:
            path: the file.
            labelled: True: the last column of every token line is its tag, and every
                line has as many columns as the first. False: only the first column
                (the word) is read, so a file of one word per line works too.

        Raises:
            DataError: naming the file and line of a malformed tag or a line with
                another column count, or a file without sentences.
        """
        examples, words, tags = [], [], []
        first_line = columns = None

        def flush():
            if words:
                examples.append(NerExample(tuple(words), tuple(tags) if labelled else None,
                                           first_line))
                words.clear()
                tags.clear()

        for number, text in read_lines(path):
            fields = text.split()
            if not fields or fields[0] == "-DOCSTART-":
                flush()
                continue
            if labelled:
                if columns is None:
                    columns = len(fields)
                    if columns < 2:
                        raise DataError("has one column; expected the word first and the "
                                        "NER tag last (read it with labelled=False for "
                                        "words only).", path=path, line=number)
                if len(fields) != columns:
                    raise DataError(f"has {len(fields)} columns, expected {columns} like "
                                    "the file's first token line.", path=path, line=number)
                if not _TAG.fullmatch(fields[-1]):
                    raise DataError(f"tag {fields[-1]!r} is not 'O' or B-/I-/E-/S-TYPE.",
                                    path=path, line=number)
                tags.append(fields[-1])
            if not words:
                first_line = number
            words.append(fields[0])
        flush()
        if not examples:
            raise DataError("has no sentences (CoNLL-2003 layout: a token per line, "
                            "blank lines between sentences).", path=path)
        return examples

    # --- features and model ---------------------------------------------------------
    def features(self, examples: Sequence[NerExample], tokenizer,
                 settings: FeatureSettings) -> Features:
        """`[CLS] pieces of every word [SEP]`, cut to `max_seq_length`.

        Labels [n, max_seq_length] hold each word's tag index on its first piece and
        `IGNORE_LABEL` elsewhere (also for a tag missing from the label list, counted
        in `extra["unknown_tags"]`). `extra` also holds "word_positions" (each word's
        first-piece position, -1 when cut off; all examples' words in a row),
        "word_splits" (example i's words are word_positions[splits[i]:splits[i+1]])
        and "truncated_words" (how many words were cut off).
        """
        if not examples:
            raise ArgumentError("No examples to make features of.")
        labelled = [e.tags is not None for e in examples]
        if any(labelled) and not all(labelled):
            raise ArgumentError("Some examples have tags and some not; give all or none.")
        if self.labels is None:
            if not all(labelled):
                raise ArgumentError("This NerTask has no label list yet: make features of "
                                    "the labelled training examples first, or create it "
                                    "with NerTask(labels=...) / NerTask.from_config.")
            self.labels = self._checked_labels(self.label_list_of(examples))
        seq_length = settings.max_seq_length
        if seq_length < 3:
            raise ArgumentError(f"max_seq_length must be >= 3, got {seq_length}.",
                                field="max_seq_length")
        words = [w for e in examples for w in e.words]
        words_per_example = np.array([len(e.words) for e in examples], np.int64)
        piece_ids, piece_counts = self._tokenize_words(tokenizer, words)

        # A word with no pieces (only characters BERT drops) becomes [UNK], so that
        # every word has a first piece to carry its label.
        counts = np.maximum(piece_counts, 1)
        ids = np.full(int(counts.sum()), tokenizer.unk_id, np.int32)
        word_start = np.cumsum(counts) - counts  # in the flat piece list
        old_start = np.cumsum(piece_counts) - piece_counts
        owner = np.repeat(np.arange(len(words)), piece_counts)
        ids[word_start[owner] + np.arange(len(piece_ids)) - old_start[owner]] = piece_ids

        example_of_word = np.repeat(np.arange(len(examples)), words_per_example)
        pieces_per_example = np.bincount(example_of_word, weights=counts,
                                         minlength=len(examples)).astype(np.int64)
        example_start = np.cumsum(pieces_per_example) - pieces_per_example
        position = 1 + word_start - example_start[example_of_word]  # after [CLS]
        cut = position >= seq_length - 1  # the last slot is [SEP]'s
        piece_example = np.repeat(example_of_word, counts)
        piece_position = 1 + np.arange(len(ids)) - example_start[piece_example]
        kept = piece_position < seq_length - 1

        n = len(examples)
        lengths = (np.minimum(pieces_per_example, seq_length - 2) + 2).astype(np.int32)
        word_ids = np.full((n, seq_length), tokenizer.pad_id, np.int32)
        word_ids[piece_example[kept], piece_position[kept]] = ids[kept]
        word_ids[:, 0] = tokenizer.cls_id
        word_ids[np.arange(n), lengths - 1] = tokenizer.sep_id
        mask = (np.arange(seq_length)[None, :] < lengths[:, None]).astype(np.int32)

        extra = {"word_positions": np.where(cut, -1, position).astype(np.int32),
                 "word_splits": np.concatenate([[0], np.cumsum(words_per_example)]),
                 "truncated_words": int(cut.sum()), "unknown_tags": 0,
                 TRUNCATED_TOKENS: np.maximum(pieces_per_example - (seq_length - 2),
                                              0).astype(np.int32)}
        labels = None
        if all(labelled):
            index = {tag: i for i, tag in enumerate(self.labels)}
            tag_ids = np.array([index.get(t, IGNORE_LABEL) for e in examples for t in e.tags],
                               np.int32)
            extra["unknown_tags"] = int(np.sum(tag_ids == IGNORE_LABEL))
            labels = np.full((n, seq_length), IGNORE_LABEL, np.int32)
            labels[example_of_word[~cut], position[~cut]] = tag_ids[~cut]
        inputs = {"input_word_ids": word_ids, "input_mask": mask,
                  "input_type_ids": np.zeros_like(word_ids)}
        return Features(inputs=inputs, labels=labels, lengths=lengths,
                        example_index=np.arange(n, dtype=np.int64), extra=extra)

    @staticmethod
    def _tokenize_words(tokenizer, words):
        """Flat piece ids of all words and the number of pieces of each."""
        ids, counts = [np.zeros(0, np.int32)], [np.zeros(0, np.int64)]
        for start in range(0, len(words), _TOKENIZE_BATCH):
            pieces = tokenizer.tokenize(tf.constant(words[start:start + _TOKENIZE_BATCH],
                                                    dtype=tf.string))
            ids.append(pieces.flat_values.numpy())
            counts.append(pieces.row_lengths().numpy())
        return (np.concatenate(ids).astype(np.int32),
                np.concatenate(counts).astype(np.int64))

    def build_model(self, encoder, feature_based: bool = False, **kwargs):
        """The tagger on `encoder`: `BertNerTagger` (fine-tuning), or with
        `feature_based=True` `BertFeatureBasedTagger` (frozen encoder, last four
        layers concatenated, two-layer BiLSTM; `lstm_units=768` by default). `kwargs`
        go to the model."""
        if self.labels is None:
            raise ArgumentError("This NerTask has no label list yet: make features of the "
                                "training examples first, or create it with labels.")
        model_class = BertFeatureBasedTagger if feature_based else BertNerTagger
        return model_class(encoder, num_classes=len(self.labels), **kwargs)

    # --- predictions ----------------------------------------------------------------
    def decode(self, examples: Sequence[NerExample], features: Features, outputs,
               settings: FeatureSettings | None = None) -> list[list[str]]:
        """Per example, a tag per word: the argmax at the word's first piece; "O" for a
        word cut off by `max_seq_length`."""
        if self.labels is None:
            raise ArgumentError("This NerTask has no label list to decode with.")
        logits = as_numpy_outputs(outputs)
        if logits.ndim != 3 or len(logits) != len(features) or len(examples) != len(features):
            raise ArgumentError(f"Expected outputs [{len(features)}, seq, "
                                f"{len(self.labels)}] for {len(examples)} examples, got "
                                f"{logits.shape}.", field="outputs")
        positions, splits = features.extra["word_positions"], features.extra["word_splits"]
        example_of_word = np.repeat(np.arange(len(features)), np.diff(splits))
        guessed = np.zeros(len(positions), np.int64)  # "O" is label 0 when present
        present = positions >= 0
        guessed[present] = np.argmax(logits[example_of_word[present], positions[present]],
                                     axis=-1)
        labels = np.array(self.labels, dtype=object)
        tags = np.where(present, labels[guessed], "O")
        predictions = [None] * len(examples)
        for feature, example in enumerate(features.example_index):
            predictions[int(example)] = tags[splits[feature]:splits[feature + 1]].tolist()
        return predictions

    def evaluate(self, examples: Sequence[NerExample], predictions: Sequence) -> dict:
        """conlleval's entity precision, recall and F1 (fractions)."""
        if any(e.tags is None for e in examples):
            raise ArgumentError("The examples have no tags to evaluate against; read them "
                                "with labelled=True.")
        return ner_span_metrics([e.tags for e in examples], predictions)

    def write_predictions(self, examples: Sequence[NerExample], predictions: Sequence,
                          path: str) -> None:
        """conlleval's input layout: `word gold predicted` per line (`word predicted`
        for unlabelled examples), a blank line after each sentence."""
        if len(examples) != len(predictions):
            raise ArgumentError(f"{len(examples)} examples but {len(predictions)} "
                                "predictions.", field="predictions")
        with io.atomic_write(path) as f:
            for example, tags in zip(examples, predictions):
                if len(tags) != len(example.words):
                    raise ArgumentError(f"The sentence at line {example.line} has "
                                        f"{len(example.words)} words but {len(tags)} "
                                        "predicted tags.", field="predictions")
                gold = example.tags or [None] * len(tags)
                for word, gold_tag, tag in zip(example.words, gold, tags):
                    f.write(f"{word} {tag}\n" if gold_tag is None
                            else f"{word} {gold_tag} {tag}\n")
                f.write("\n")

    def config(self) -> dict:
        return {"task": self.name, "labels": None if self.labels is None else list(self.labels)}

    def restore(self, config: dict) -> None:
        """Takes the label list back from a saved `config()`."""
        if config.get("task", self.name) != self.name:
            raise ArgumentError(f"Not a {self.name} task config: {config}.", field="task")
        if config.get("labels") is not None:
            self.labels = self._checked_labels(config["labels"])

    def tfds_layout(self) -> TfdsLayout:
        """`conll2003` in tensorflow-datasets (see the module docstring)."""
        return TfdsLayout("conll2003", _TFDS_SPLITS, _tfds_reader,
                          other_names=("conll2003/conll2003",))

    @classmethod
    def from_config(cls, config: dict) -> NerTask:
        """A task with the label list of a saved `config()`."""
        task = cls()
        task.restore(config)
        return task


# --- tensorflow-datasets --------------------------------------------------------------

CONLL2003_TFDS_TAGS = frozenset(["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC",
                                 "B-MISC", "I-MISC"])
"""The `ner` class names of tfds's conll2003 (in any order)."""
_TFDS_SPLITS = {"train": "train", "dev": "dev", "valid": "dev", "test": "test"}


def _tfds_reader(builder, name: str):
    require_features(builder, name, ("tokens", "ner"))
    feature = builder.info.features["ner"]
    tags = class_names(getattr(feature, "feature", feature), name, "ner tag",
                       CONLL2003_TFDS_TAGS)

    def read(as_numpy, dataset, where: str, labelled: bool) -> list[NerExample]:
        examples = []
        for record, r in enumerate(as_numpy(dataset)):
            words = tuple(record_text(w) for w in r["tokens"])
            if not words:
                continue  # no sentence (the file reader skips blank lines alike)
            sentence_tags = None
            if labelled:
                ids = [int(t) for t in r["ner"]]
                if len(ids) != len(words):
                    raise DataError(f"record {record} has {len(words)} tokens but "
                                    f"{len(ids)} ner tags.", path=where)
                bad = [t for t in ids if not 0 <= t < len(tags)]
                if bad:
                    raise DataError(f"record {record}: ner tag index {bad[0]} is not one "
                                    f"of the {len(tags)} tags {tags}.", path=where)
                sentence_tags = tuple(tags[t] for t in ids)
            examples.append(NerExample(words, sentence_tags))
        return examples

    return read
