"""Named-entity recognition on CoNLL-2003 (paper §5.3): fine-tuned (`BertNerTagger`)
or feature-based on the frozen encoder (`BertFeatureBasedTagger`, Table 7).

Data layout: `train.txt`, `valid.txt` (the dev split) and `test.txt`, one token per
line with space-separated columns, the word first and the NER tag last (CoNLL-2003:
`word POS chunk NER`), a blank line between sentences and `-DOCSTART-` lines between
documents. Tags may be IOB1 (CoNLL-2003 as distributed), BIO (IOB2) or IOBES; the
official score (`keras_bert.metrics.ner_span_metrics`) reads chunks as conlleval does.

As in the paper, each word's label sits on its first WordPiece; the other pieces,
[CLS], [SEP] and padding carry the label `IGNORE_LABEL` (-1), which the models' default
loss (`SparseCategoricalCrossentropy(ignore_class=-1)`) and accuracy skip. A sentence
longer than the sequence is cut into overlapping windows `doc_stride` pieces apart, as
SQuAD passages are (`keras_bert.tasks.windows`), and each word is predicted in the
window where it has the most context, so no word goes without a prediction. An
exported model's `serve_text` (`keras_bert.tasks.tagging.serving`) does the same in the
graph.

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

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.metrics import ner_span_metrics
from keras_bert.tasks.base import TRUNCATED_TOKENS, Features, FeatureSettings, Task
from keras_bert.tasks.common import as_numpy_outputs, read_lines
from keras_bert.tasks.labels import IGNORE_LABEL, refuse, tag_problem
from keras_bert.tasks.registry import task_model_class
from keras_bert.tasks.tagging.examples import TFDS_SPLITS, NerExample, tag_name, tfds_reader
from keras_bert.tasks.tfds_source import TfdsLayout
from keras_bert.tasks.windows import max_context_windows, window_spans

_TAG = re.compile(r"O|[BIES]-\S+")
_TOKENIZE_BATCH = 65536  # words per tokenizer call


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

    # What a tag must look like, and the words of the error when it does not.
    tag_pattern = _TAG
    tag_rule = "'O' or B-/I-/E-/S-TYPE"
    # Whether a file's tag outside the label list (once it has one) is refused. Not for
    # CoNLL-2003: the benchmark's dev and test files may hold a chunk-start tag of its
    # scheme that train lacks (IOB1's rare B-), which conlleval still scores by chunk;
    # such a tag is scored as a wrong prediction, as the official evaluation does.
    # Your own tags (`TaggingTask`) are refused. Raw-text tags always are.
    refuses_unknown_file_tags = False

    def __init__(self, labels: Sequence[str] | None = None):
        self.labels = None if labels is None else self._checked_labels(labels)

    def __repr__(self):
        return f"NerTask(labels={self.labels})"

    @classmethod
    def _checked_labels(cls, labels) -> tuple[str, ...]:
        labels = tuple(labels)
        bad = [t for t in labels if not isinstance(t, str) or not cls.tag_pattern.fullmatch(t)]
        if bad or len(set(labels)) != len(labels) or len(labels) < 2:
            raise ArgumentError(f"{cls.name} labels must be 2 or more distinct tags, each "
                                f"{cls.tag_rule}; got {list(labels)}.", field="labels")
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

    def text_examples(self, x, y=None) -> list[NerExample]:
        """Examples of raw text: `x` one sentence or a list of them, each a string
        (split on whitespace) or a list of its words; `y` None, or per sentence one tag
        per word.

        Example:

        >>> NerTask(("O", "B-PER")).text_examples(["Ann ran"], [["B-PER", "O"]])[0].words
        ('Ann', 'ran')
        """
        from keras_bert.tasks.common import label_list

        sentences = [x] if isinstance(x, str) else list(x)
        words = []
        for i, sentence in enumerate(sentences):
            if isinstance(sentence, str):
                words.append(tuple(sentence.split()))
            elif isinstance(sentence, (list, tuple)) and all(isinstance(w, str)
                                                            for w in sentence):
                words.append(tuple(sentence))
            else:
                raise ArgumentError(f"sentence {i} must be a string or a list of words, "
                                    f"got {type(sentence).__name__}.", field="x")
            if not words[-1]:
                raise ArgumentError(f"sentence {i} has no words.", field="x")
        tags = label_list(y, len(words)) if not (
            isinstance(x, str) and y is not None) else [y]
        examples = []
        for i, sentence in enumerate(words):
            sentence_tags = None if tags is None else tuple(tags[i])
            if sentence_tags is not None and len(sentence_tags) != len(sentence):
                raise ArgumentError(f"sentence {i} has {len(sentence)} words but "
                                    f"{len(sentence_tags)} tags.", field="y")
            examples.append(NerExample(sentence, sentence_tags))
        return self._known_tags(examples)

    def _known_tags(self, examples: list[NerExample]) -> list[NerExample]:
        """`examples` with tags given as class indices turned into tag names, once every
        tag is checked against the label list (when the task has one): one
        `ArgumentError` names each unknown tag, its sentence and word, and the tags."""
        if self.labels is None:
            return examples
        problems = [(f"sentence {i}, word {j}", problem) for i, e in enumerate(examples)
                    for j, tag in enumerate(e.tags or ())
                    if (problem := tag_problem(tag_name(tag, self.labels), self.labels))]
        refuse(problems, "y", "Build the tagger with label_names that include every tag "
               "(from_preset(..., label_names=[...])), or fix the tags.")
        return [e if e.tags is None else dataclasses.replace(
            e, tags=tuple(tag_name(t, self.labels) for t in e.tags)) for e in examples]

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
                if not self.tag_pattern.fullmatch(fields[-1]):
                    raise DataError(f"tag {fields[-1]!r} is not {self.tag_rule}.",
                                    path=path, line=number)
                self._check_file_tag(fields[-1], path, number)
                tags.append(fields[-1])
            elif len(fields) > 1:  # prediction input with its tags: they must belong too
                self._check_file_tag(fields[-1], path, number)
            if not words:
                first_line = number
            words.append(fields[0])
        flush()
        if not examples:
            raise DataError("has no sentences (CoNLL-2003 layout: a token per line, "
                            "blank lines between sentences).", path=path)
        return examples

    def _check_file_tag(self, tag: str, path: str, line: int) -> None:
        """`DataError` naming the file and line of a tag outside the task's label list
        (once it has one: learnt from the training file, or restored with a run), for a
        task that `refuses_unknown_file_tags`."""
        if self.labels is None or not self.refuses_unknown_file_tags:
            return
        problem = tag_problem(tag, self.labels)
        if problem:
            raise DataError(f"{problem}, those of the training data: a tag train never "
                            "had cannot be predicted or scored.", path=path, line=line)

    # --- features and model ---------------------------------------------------------
    def features(self, examples: Sequence[NerExample], tokenizer,
                 settings: FeatureSettings) -> Features:
        """Windows `[CLS] pieces [SEP]` over each sentence's word pieces.

        A sentence of at most `max_seq_length - 2` pieces is one feature, `[CLS] pieces
        of every word [SEP]`. A longer one is cut into windows of `max_seq_length - 2`
        pieces whose starts are `doc_stride` pieces apart (SQuAD's rule,
        `keras_bert.tasks.windows`), one feature each; `example_index` maps them back.
        Nothing is cut off: every piece is in some window.

        Labels [n, max_seq_length] hold each word's tag index on its first piece in
        every window that holds that piece, and `IGNORE_LABEL` elsewhere. A tag missing
        from the label list is refused (`ArgumentError` naming the example) by a task
        that `refuses_unknown_file_tags`; CoNLL-2003's dev tags of that kind are
        `IGNORE_LABEL` too, counted in `extra["unknown_tags"]` (`text_examples` refuses
        them in raw text, so `fit` never trains one as "ignore"). Every
        window, not only a word's max-context one, because each window is then
        labelled as a sentence of its own would be: the model learns from every
        position it reads, including a window's edges, where it still has to tag the
        words that no other window holds (a sentence's first and last pieces). Words
        in an overlap count in the loss once per window that holds them. A sentence
        that fits, the usual case, is one window and unchanged. Predictions read each
        word in its max-context window only (see `decode`).

        `extra` also holds, per word of all examples in a row: "word_features" (the
        feature of its max-context window) and "word_positions" (its first piece's
        position there); "word_splits" (example i's words are rows
        splits[i]:splits[i + 1] of those); `TRUNCATED_TOKENS` (0 for every example).

        Example:

        >>> from keras_bert import BertTokenizer
        >>> tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
        >>> task = NerTask(labels=("O", "B-PER"))
        >>> f = task.features([NerExample(("a", "b", "a", "b"), ("O", "B-PER", "O", "O"))],
        ...                   tok, FeatureSettings(max_seq_length=5, doc_stride=2))
        >>> f.inputs["input_word_ids"].tolist(), f.labels.tolist()
        ([[2, 5, 6, 5, 3], [2, 5, 6, 3, 0]], [[-1, 0, 1, 0, -1], [-1, 0, 0, -1, -1]])
        >>> # The third word: min(2, 0) + .03 in window 0 beats min(0, 1) + .02 in window 1.
        >>> f.extra["word_features"].tolist(), f.extra["word_positions"].tolist()
        ([0, 0, 0, 1], [1, 2, 3, 2])
        """
        all_labelled = self._check_feature_request(examples, settings)
        seq_length = settings.max_seq_length
        words = [w for e in examples for w in e.words]
        words_per_example = np.array([len(e.words) for e in examples], np.int64)
        piece_ids, piece_counts = self._tokenize_words(tokenizer, words)
        ids, counts, word_start = _pieces_with_unk(piece_ids, piece_counts, tokenizer.unk_id)

        example_of_word = np.repeat(np.arange(len(examples)), words_per_example)
        pieces_per_example = np.bincount(example_of_word, weights=counts,
                                         minlength=len(examples)).astype(np.int64)
        example_start = np.cumsum(pieces_per_example) - pieces_per_example
        word_offset = word_start - example_start[example_of_word]  # in its sentence

        # The windows, sentence by sentence; a word's max-context window.
        room = seq_length - 2  # pieces per window
        spans = [window_spans(int(n), room, settings.doc_stride) for n in pieces_per_example]
        windows_per_example = np.array([len(s) for s in spans], np.int64)
        window_example = np.repeat(np.arange(len(examples)), windows_per_example)
        window_start = np.array([s for ss in spans for s, _ in ss], np.int64)
        window_length = np.array([n for ss in spans for _, n in ss], np.int64)
        word_splits = np.concatenate([[0], np.cumsum(words_per_example)])
        word_features = _max_context_features(spans, windows_per_example, pieces_per_example,
                                              word_splits, example_of_word, word_offset)
        word_positions = 1 + word_offset - window_start[word_features]  # after [CLS]

        n = len(window_example)
        piece_window = np.repeat(np.arange(n), window_length)
        in_window = np.arange(len(piece_window)) - np.repeat(
            np.cumsum(window_length) - window_length, window_length)
        source = (example_start[window_example] + window_start)[piece_window] + in_window
        lengths = (window_length + 2).astype(np.int32)
        word_ids = np.full((n, seq_length), tokenizer.pad_id, np.int32)
        word_ids[piece_window, 1 + in_window] = ids[source]
        word_ids[:, 0] = tokenizer.cls_id
        word_ids[np.arange(n), lengths - 1] = tokenizer.sep_id
        mask = (np.arange(seq_length)[None, :] < lengths[:, None]).astype(np.int32)

        extra = {"word_features": word_features,
                 "word_positions": word_positions.astype(np.int32),
                 "word_splits": word_splits, "unknown_tags": 0,
                 # Windows, not truncation: no word piece is ever cut off.
                 TRUNCATED_TOKENS: np.zeros(len(examples), np.int32)}
        labels = None
        if all_labelled:
            labels, extra["unknown_tags"] = self._window_labels(
                examples, len(ids), word_start, (n, seq_length),
                (piece_window, 1 + in_window), source)
        inputs = {"input_word_ids": word_ids, "input_mask": mask,
                  "input_type_ids": np.zeros_like(word_ids)}
        return Features(inputs=inputs, labels=labels, lengths=lengths,
                        example_index=window_example, extra=extra)

    def _check_feature_request(self, examples: Sequence[NerExample],
                               settings: FeatureSettings) -> bool:
        """Fails on what `features` cannot make windows or labels of, before any work;
        takes the label list from `examples` when the task has none yet. Returns whether
        the examples are labelled (all of them, or else none)."""
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
        if settings.doc_stride < 1:
            raise ArgumentError(f"doc_stride must be >= 1, got {settings.doc_stride}.",
                                field="doc_stride")
        return all(labelled)

    def _window_labels(self, examples: Sequence[NerExample], num_pieces: int, word_start,
                       shape: tuple[int, int], cells, source):
        """The label rows of `features`: each word's tag index on its first piece, in every
        window that holds that piece (`cells`: the window and position of each windowed
        piece, `source`: its index in the flat piece list), `IGNORE_LABEL` elsewhere.
        Returns them and the number of tags missing from the label list (refused when
        the task `refuses_unknown_file_tags`)."""
        if self.refuses_unknown_file_tags:
            refuse([(f"example {i}" + (f" (line {e.line + j})" if e.line else ""), problem)
                    for i, e in enumerate(examples) for j, tag in enumerate(e.tags)
                    if (problem := tag_problem(tag, self.labels))], "examples",
                   "A tag outside the label list would be trained as 'ignore'.")
        index = {tag: i for i, tag in enumerate(self.labels)}
        tag_ids = np.array([index.get(t, IGNORE_LABEL) for e in examples for t in e.tags],
                           np.int32)
        unknown_tags = int(np.sum(tag_ids == IGNORE_LABEL))
        piece_tag = np.full(num_pieces, IGNORE_LABEL, np.int32)
        piece_tag[word_start] = tag_ids  # on first pieces only
        labels = np.full(shape, IGNORE_LABEL, np.int32)
        labels[cells] = piece_tag[source]
        return labels, unknown_tags

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

    def serving(self, settings: FeatureSettings):
        """A tagger's serving: its label names, windows `settings.doc_stride` apart."""
        from keras_bert.tasks.tagging.serving import TaggerServing

        return TaggerServing(label_names=tuple(self.labels), doc_stride=settings.doc_stride)

    def build_model(self, encoder, feature_based: bool = False, **kwargs):
        """The tagger on `encoder`: `BertNerTagger` (fine-tuning), or with
        `feature_based=True` `BertFeatureBasedTagger` (frozen encoder, last four
        layers concatenated, two-layer BiLSTM; `lstm_units=768` by default). `kwargs`
        go to the model."""
        if self.labels is None:
            raise ArgumentError("This NerTask has no label list yet: make features of the "
                                "training examples first, or create it with labels.")
        model_class = task_model_class(
            "tagging", "BertFeatureBasedTagger" if feature_based else "BertNerTagger")
        return model_class(encoder, num_classes=len(self.labels), **kwargs)

    # --- predictions ----------------------------------------------------------------
    def decode(self, examples: Sequence[NerExample], features: Features, outputs,
               settings: FeatureSettings | None = None) -> list[list[str]]:
        """Per example, a tag per word: the argmax at the word's first piece in its
        max-context window (the paper's first-piece rule; `features`)."""
        if self.labels is None:
            raise ArgumentError("This NerTask has no label list to decode with.")
        logits = as_numpy_outputs(outputs)
        splits = features.extra["word_splits"]
        if (logits.ndim != 3 or len(logits) != len(features)
                or len(examples) != len(splits) - 1):
            raise ArgumentError(f"Expected outputs [{len(features)}, seq, "
                                f"{len(self.labels)}] for the {len(splits) - 1} examples "
                                f"of the features, got {logits.shape} for "
                                f"{len(examples)} examples.", field="outputs")
        guessed = np.argmax(logits[features.extra["word_features"],
                                   features.extra["word_positions"]], axis=-1)
        tags = np.array(self.labels, dtype=object)[guessed]
        return [tags[splits[i]:splits[i + 1]].tolist() for i in range(len(examples))]

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
        with fileio.atomic_write(path) as f:
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
        return TfdsLayout("conll2003", TFDS_SPLITS, tfds_reader,
                          other_names=("conll2003/conll2003",))

    @classmethod
    def from_config(cls, config: dict) -> NerTask:
        """A task with the label list of a saved `config()`."""
        task = cls()
        task.restore(config)
        return task


def _pieces_with_unk(piece_ids, piece_counts, unk_id: int):
    """The flat piece ids of all words with [UNK] for a word with no pieces (only
    characters BERT drops), so that every word has a first piece to carry its label;
    each word's number of pieces there and its first piece's index."""
    counts = np.maximum(piece_counts, 1)
    ids = np.full(int(counts.sum()), unk_id, np.int32)
    word_start = np.cumsum(counts) - counts  # in the flat piece list
    old_start = np.cumsum(piece_counts) - piece_counts
    owner = np.repeat(np.arange(len(piece_counts)), piece_counts)
    ids[word_start[owner] + np.arange(len(piece_ids)) - old_start[owner]] = piece_ids
    return ids, counts, word_start


def _max_context_features(spans, windows_per_example, pieces_per_example, word_splits,
                          example_of_word, word_offset):
    """Each word's max-context window, as a feature index: where `decode` reads its
    prediction. A sentence that fits is one window, so only longer ones are scored."""
    first_window = np.cumsum(windows_per_example) - windows_per_example
    best = np.zeros(len(word_offset), np.int64)  # the only window of a sentence that fits
    for i in np.flatnonzero(windows_per_example > 1):
        rows = slice(word_splits[i], word_splits[i + 1])
        best[rows] = max_context_windows(spans[i], int(pieces_per_example[i]))[
            word_offset[rows]]
    return first_window[example_of_word] + best
