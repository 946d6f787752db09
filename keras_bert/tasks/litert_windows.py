"""`keras_bert.tasks.windows`' rule in LiteRT's int32 ops, for the LiteRT `serve_text` of
the families that read long inputs in windows (SQuAD passages, NER sentences)."""

from __future__ import annotations

import tensorflow as tf

from keras_bert.text.litert_ops import row_of


def windows(num_tokens, room, stride: int):
    """`keras_bert.tasks.windows.window_table` in int32: (sequence, start, length) of
    every window and the row splits of the windows over the sequences. `room`, the
    most tokens a window, is an int or int32 [sequences]."""
    room = tf.broadcast_to(room, tf.shape(num_tokens))
    step = tf.minimum(room, stride)
    counts = 1 + (tf.maximum(num_tokens - room, 0) + step - 1) // step
    splits = tf.concat([[0], tf.cumsum(counts)], axis=0)
    sequence = row_of(splits, splits[-1])
    start = (tf.range(splits[-1]) - tf.gather(splits, sequence)) * tf.gather(step, sequence)
    length = tf.minimum(tf.gather(num_tokens, sequence) - start, tf.gather(room, sequence))
    return sequence, start, length, splits


def best_windows(token, num_tokens, room, stride: int):
    """`keras_bert.tasks.windows.best_windows` in int32: the max-context window (its
    number in the sequence) of each token; `num_tokens` and `room` (an int or int32)
    per token. The score min(left, right) + 0.01 * length is compared as
    100 * min(left, right) + length."""
    room = tf.broadcast_to(room, tf.shape(token))
    step = tf.minimum(room, stride)
    count = 1 + (tf.maximum(num_tokens - room, 0) + step - 1) // step
    first = tf.maximum(token - room + step, 0) // step
    last = tf.minimum(token // step, count - 1)
    most = tf.reduce_max(tf.concat([(room + step - 1) // step, [1]], axis=0))
    k = first[:, None] + tf.range(most)[None, :]  # the windows that may hold it
    start = k * step[:, None]
    length = tf.minimum(num_tokens[:, None] - start, room[:, None])
    position = token[:, None]
    score = 100 * tf.minimum(position - start, start + length - 1 - position) + length
    score = tf.where(k <= last[:, None], score, -1)
    return first + tf.argmax(score, axis=1, output_type=tf.int32)


def window_pieces(segment, window, start, length):
    """Ragged [windows, (pieces)]: pieces start:start + length of row `window` of
    `segment`."""
    splits = tf.concat([[0], tf.cumsum(length)], axis=0)
    row = row_of(splits, splits[-1])
    source = (tf.gather(tf.cast(segment.row_starts(), tf.int32), tf.gather(window, row))
              + tf.gather(start, row) + tf.range(splits[-1]) - tf.gather(splits, row))
    return tf.RaggedTensor.from_row_splits(tf.gather(segment.flat_values, source),
                                           tf.cast(splits, tf.int64), validate=False)
