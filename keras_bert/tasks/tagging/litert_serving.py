"""The tagger's `serve_text` in LiteRT ops (`serve_words`): what
`keras_bert.tasks.tagging.serving` computes, within LiteRT's ops (strings only gathered,
int32 arithmetic, windows by `keras_bert.tasks.litert_windows`)."""

from __future__ import annotations

import tensorflow as tf

from keras_bert.export.serving import whitespace_code_points
from keras_bert.tasks.litert_windows import best_windows, window_pieces, windows
from keras_bert.text.litert_ops import concat_rows, row_of, split_words


def serve_words(module, inputs):
    """The tagger's `serve_text` (`keras_bert.tasks.tagging.serving`) in LiteRT ops."""
    source, serving = module.source, module.serving
    tok, names = source.tokenizer, [*serving.label_names, ""]
    words, word_splits, starts, ends = split_words(inputs["text"], whitespace_code_points())
    count = tf.size(starts)
    word_text = row_of(word_splits, count)
    pieces = module.lite_tokenizer.tokenize(words[:count])
    lengths = tf.cast(pieces.row_lengths(), tf.int32)
    empty = tf.cast(lengths == 0, tf.int32)  # a word of no pieces is [UNK]
    unk = tf.RaggedTensor.from_row_splits(
        tf.fill([tf.reduce_sum(empty)], tok.unk_id),
        tf.cast(tf.concat([[0], tf.cumsum(empty)], axis=0), tf.int64), validate=False)
    pieces = concat_rows(pieces, unk)
    lengths = lengths + empty
    nrows = tf.size(word_splits) - 1
    text_pieces = tf.math.unsorted_segment_sum(lengths, word_text, nrows)
    text_start = tf.cumsum(text_pieces, exclusive=True)
    first_piece = tf.cumsum(lengths, exclusive=True) - tf.gather(text_start, word_text)
    room = source.max_seq_length - 2
    window, start, length, window_splits = windows(text_pieces, room, serving.doc_stride)
    segment = tf.RaggedTensor.from_row_splits(pieces.flat_values, tf.cast(tf.concat(
        [[0], tf.cumsum(text_pieces)], axis=0), tf.int64), validate=False)
    # Window w holds pieces start[w]:start[w] + length[w] of its text.
    logits = module.model_outputs(module.pack_text([window_pieces(segment, window, start,
                                                                  length)]))["logits"]
    best = best_windows(first_piece, tf.gather(text_pieces, word_text), room,
                        serving.doc_stride)
    feature = tf.gather(window_splits, word_text) + best
    position = 1 + first_piece - tf.gather(start, feature)
    guessed = tf.argmax(tf.gather_nd(logits, tf.stack([feature, position], axis=1)),
                        axis=-1, output_type=tf.int32)
    # At least one column: LiteRT's Python API cannot return an empty tensor
    # (`LiteRTModel` cuts the column off again when no text has a word).
    most = tf.reduce_max(tf.concat([word_splits[1:] - word_splits[:-1], [1]], axis=0))
    j = tf.range(most)[None, :]
    real = j < (word_splits[1:] - word_splits[:-1])[:, None]
    at = tf.where(real, word_splits[:-1, None] + j, count)
    padded_guess = tf.concat([guessed, [len(names) - 1]], axis=0)
    return {"words": tf.gather(words, at),
            "labels": tf.gather(tf.constant(names), tf.gather(padded_guess, at)),
            "word_start": tf.gather(tf.concat([starts, [-1]], axis=0), at),
            "word_end": tf.gather(tf.concat([ends, [-1]], axis=0), at),
            "num_words": word_splits[1:] - word_splits[:-1]}
