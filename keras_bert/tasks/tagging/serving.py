"""`serve_text` of a tagger (NER) model: one label per whitespace word, in the graph.

The same features and decoding as `keras-bert predict` (`NerTask.features` and
`decode`), written with core TensorFlow ops around the tokenizer:

* each text is split into words where Python's `str.split()` splits it (the characters
  `str.isspace()` calls whitespace; `predict` reads the words of a CoNLL file so);
* each word is tokenized on its own; a word with no pieces (only characters BERT
  drops) becomes [UNK], so that every word has a first piece;
* a text's pieces are cut into windows of `max_seq_length - 2` pieces whose starts are
  `doc_stride` pieces apart (`keras_bert.tasks.windows`; a text that fits is one
  window), each `[CLS] pieces [SEP]`, and every window of the batch runs through the
  model at once;
* a word's label is the argmax of the logits at its first piece, in the window where
  that piece has the most context.

Outputs, padded to the batch's most words: `words` and `labels` (string [batch,
words], "" on padding), `word_start` and `word_end` (int32 [batch, words], Unicode code
point offsets into the text, end exclusive; -1 on padding) and `num_words` (int32
[batch]). Invalid UTF-8 is read as U+FFFD (one per invalid sequence, as the tokenizer
counts it), so the offsets count those too and the words are valid UTF-8. A text with no
words (empty or only whitespace) gets 0 words, never a failed request.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import tensorflow as tf

from keras_bert.export.serving import (
    ModelServing,
    label_lookup,
    string_batches,
    whitespace_code_points,
)
from keras_bert.tasks.tagging import litert_serving
from keras_bert.tasks.windows import best_windows, window_table


def split_words(text):
    """`str.split()` of each string of `text` ([batch] UTF-8), in TensorFlow ops.

    Returns:
        `(words, starts, ends)`: ragged [batch, (words)] strings and int64 code point
        offsets of each word in its text (end exclusive).

    Example:

    >>> words, starts, ends = split_words(tf.constant(["  Straße\\tin  Köln ", ""]))
    >>> words.to_list(), starts.to_list(), ends.to_list()
    ([[b'Stra\\xc3\\x9fe', b'in', b'K\\xc3\\xb6ln'], []], [[2, 9, 13], []], [[8, 11, 17], []])
    """
    chars = tf.strings.unicode_decode(text, "UTF-8", errors="replace",
                                      replacement_char=0xFFFD)
    code_points = chars.flat_values
    space = tf.reduce_any(code_points[:, None] == tf.constant(
        whitespace_code_points(), code_points.dtype)[None, :], axis=1)
    n = tf.size(code_points, out_type=tf.int64)
    row = chars.value_rowids()
    index = tf.range(n)
    # Whether the character before (after) each one, in its text, is whitespace or absent.
    before = (index == tf.gather(chars.row_splits, row)) | tf.gather(
        space, tf.maximum(index - 1, 0))
    after = (index + 1 == tf.gather(chars.row_splits, row + 1)) | tf.gather(
        space, tf.minimum(index + 1, n - 1))
    starts, ends = tf.where(~space & before)[:, 0], tf.where(~space & after)[:, 0] + 1
    word_row = tf.gather(row, starts)
    in_word = tf.where(~space)[:, 0]
    word_number = tf.cumsum(tf.cast(~space & before, tf.int64)) - 1  # of the batch
    word_chars = tf.RaggedTensor.from_value_rowids(
        tf.gather(code_points, in_word), tf.gather(word_number, in_word),
        nrows=tf.size(starts, out_type=tf.int64))
    words = tf.strings.unicode_encode(word_chars, "UTF-8")
    offset = tf.gather(chars.row_splits, word_row)
    batch = chars.nrows()

    def by_text(values):
        return tf.RaggedTensor.from_value_rowids(values, word_row, nrows=batch)

    return by_text(words), by_text(starts - offset), by_text(ends - offset)


def serve_words(module, inputs):
    """Labels of the words of `inputs["text"]` ([batch] sentences); see the module
    docstring."""
    text = string_batches(inputs)["text"]
    source, serving = module.source, module.serving
    tok = source.tokenizer
    words, starts, ends = split_words(text)
    word_text = words.value_rowids()  # the text of each word of the batch
    pieces = tok.tokenize(words.flat_values)
    empty = pieces.row_lengths() == 0
    unk = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(tf.cast(empty, tf.int64))], tok.unk_id),
        tf.cast(empty, tf.int64))
    pieces = tf.concat([pieces, tf.cast(unk, pieces.dtype)], axis=1)
    batch = words.nrows()
    count = pieces.row_lengths()
    text_pieces = tf.math.unsorted_segment_sum(count, word_text, batch)
    text_start = tf.cumsum(text_pieces, exclusive=True)  # in the batch's flat pieces
    first_piece = tf.cumsum(count, exclusive=True) - tf.gather(text_start, word_text)

    room = source.max_seq_length - 2
    table = window_table(text_pieces, room, serving.doc_stride)
    window, start, length = table["sequence"], table["start"], table["length"]
    ids = tf.gather(pieces.flat_values,
                    tf.ragged.range(start, start + length) + tf.gather(text_start, window)[:, None])
    rows = tf.size(window, out_type=tf.int64)
    cls = tf.RaggedTensor.from_tensor(tf.fill([rows, 1], tf.cast(tok.cls_id, ids.dtype)))
    sep = tf.RaggedTensor.from_tensor(tf.fill([rows, 1], tf.cast(tok.sep_id, ids.dtype)))
    ids = tf.concat([cls, ids, sep], axis=1)
    word_ids = tf.cast(ids.to_tensor(default_value=tok.pad_id), tf.int32)
    real = tf.range(tf.shape(word_ids, out_type=tf.int64)[1])[None, :] < (length + 2)[:, None]
    packed = {"input_word_ids": word_ids, "input_mask": tf.cast(real, tf.int32),
              "input_type_ids": tf.zeros_like(word_ids)}
    logits = module.model_outputs(packed)["logits"]

    best = best_windows(first_piece, word_text, text_pieces, room, serving.doc_stride)
    feature = tf.gather(table["splits"], word_text) + best
    position = 1 + first_piece - tf.gather(start, feature)
    guessed = tf.argmax(tf.gather_nd(logits, tf.stack([feature, position], axis=1)), axis=-1)
    names = tf.constant(list(serving.label_names))
    labels = words.with_flat_values(tf.gather(names, guessed))
    return {"words": words.to_tensor(default_value=""),
            "labels": labels.to_tensor(default_value=""),
            "word_start": tf.cast(starts, tf.int32).to_tensor(default_value=-1),
            "word_end": tf.cast(ends, tf.int32).to_tensor(default_value=-1),
            "num_words": tf.cast(words.row_lengths(), tf.int32)}


@dataclasses.dataclass(frozen=True)
class TaggerServing(ModelServing):
    """A token tagger (NER): `logits` [batch, seq, labels] and per-token `labels` from
    ids ("" on padding); from `serve_text`, a label per whitespace word (see the module
    docstring), over windows `doc_stride` pieces apart for long sentences."""

    kind: ClassVar[str] = "tagger"
    doc_stride: int = 128

    def named_outputs(self, out: dict, inputs: dict) -> dict:
        best = tf.argmax(out["logits"], axis=-1, output_type=tf.int32)
        return {**out, "labels": label_lookup(self.label_names, best,
                                              keep=inputs["input_mask"] > 0)}

    def serve_text(self, module, inputs: dict) -> dict:
        return serve_words(module, inputs)

    def serve_lite_text(self, module, inputs: dict) -> dict:
        return litert_serving.serve_words(module, inputs)

    def truncation(self, max_seq_length: int) -> str:
        return (f"a sentence longer than max_seq_length ({max_seq_length}) word "
                "pieces, [CLS] and [SEP] included, is read in windows whose starts are "
                f"doc_stride ({self.doc_stride}) pieces apart; each word is labelled from "
                "the window where its first piece has the most context, as `keras-bert "
                "predict` labels it")

    def litert_limits(self, text: bool) -> dict:
        if not text:
            return {}
        return {"words": "at least one word column (\"\", -1 padding) when no text has a "
                         "word: LiteRT's Python API cannot return an empty tensor"}
