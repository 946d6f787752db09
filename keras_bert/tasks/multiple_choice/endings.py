"""The blank-ending rule of multiple choice, the one rule for every answer the package
gives to a multiple-choice example from text (`keras-bert predict` and `evaluate`
through `SwagTask.decode`, the SavedModel's `serve_text` in
`keras_bert.tasks.multiple_choice.serving`, the LiteRT `serve_text` in
`keras_bert.tasks.multiple_choice.litert_serving`).

An ending is *blank* when the tokenizer turns it into no word pieces: "", whitespace of any kind (U+3000 and
U+00A0 included), or only characters BERT's text cleaning drops (control and format
characters such as U+200B ZERO WIDTH SPACE, U+FFFD; lone accents when uncased). A blank
ending is not a candidate: its choice is still scored (as `start` alone) but gets
probability 0 and is never the label; the label is the highest-scoring of the other
endings. An example whose endings are all blank has no answer: label -1 (`NO_ANSWER`)
and all probabilities 0; `predictions.csv` writes it as -1, and accuracy counts it wrong.
Only answering follows the rule; training sees all four choices as the data gives them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.tasks.common import TOKENIZE_BATCH

NO_ANSWER = -1  # the label of an example whose endings are all blank


def blank_endings(tokenizer, endings: Sequence[str]) -> np.ndarray:
    """Whether each ending is blank (no word pieces; the module docstring's rule), a
    bool array as long as `endings`.

    Example:

    >>> from keras_bert.text.tokenizer import BertTokenizer
    >>> tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])
    >>> blank_endings(tok, ["a", "", " \\t", "\\u200b", "\\u3000", "?"]).tolist()
    [False, True, True, True, True, False]
    """
    counts = [tokenizer.tokenize(tf.constant(list(endings[i:i + TOKENIZE_BATCH]), tf.string))
              .row_lengths().numpy() for i in range(0, len(endings), TOKENIZE_BATCH)]
    return np.concatenate(counts) == 0 if counts else np.zeros(0, bool)


def choose_endings(logits: np.ndarray, blank: np.ndarray) -> np.ndarray:
    """The label of each row of `logits` [n, E] under the blank-ending rule (module
    docstring): the best non-blank ending, `NO_ANSWER` where `blank` [n, E] is all True.

    Example:

    >>> choose_endings(np.array([[5., 1, 2], [5, 1, 2]]),
    ...                np.array([[False] * 3, [True, False, True]])).tolist()
    [0, 1]
    >>> choose_endings(np.array([[5., 1]]), np.array([[True, True]])).tolist()
    [-1]
    """
    best = np.argmax(np.where(blank, -np.inf, logits), axis=-1)
    return np.where(blank.all(axis=-1), NO_ANSWER, best)
