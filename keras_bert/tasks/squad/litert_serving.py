"""SQuAD's `serve_text` in LiteRT ops (`serve_questions`): what
`keras_bert.tasks.squad.serving` computes, within LiteRT's ops: strings are only gathered
(new strings are joined from bytes by `keras_bert.text.litert_ops.join_bytes`),
arithmetic is int32 and float32, and the windows follow `keras_bert.tasks.windows`' rule
(`keras_bert.tasks.litert_windows`)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert.export.serving import whitespace_code_points
from keras_bert.tasks.litert_windows import best_windows, window_pieces, windows
from keras_bert.text.litert_ops import JOIN_WIDTHS, gather_rows, join_bytes, utf8_bytes

# NgramsStringJoin rounds for SQuAD answers: up to 8 * 8 * 16 * 16 * 16 bytes (256 KiB).
ANSWER_WIDTHS = (*JOIN_WIDTHS, 16, 16)
ANSWER_MAX_BYTES = int(np.prod(ANSWER_WIDTHS))


def serve_questions(module, inputs):
    """SQuAD's `serve_text` (`keras_bert.tasks.squad.serving`) in LiteRT ops:
    the same windows, candidates, max-context rule, answers and outputs.

    The SavedModel adds the two float32 logits of a span in float64; LiteRT has no
    float64, so a span's score is kept exact as a float32 sum and its rounding error
    (two-sum) and spans are ranked by both, the same order. Only the SQuAD v2.0 test
    null score - best score > threshold is computed in float32 (equal unless within
    float32 rounding of the threshold). An answer over `ANSWER_MAX_BYTES` of UTF-8 is
    cut there."""
    source, serving = module.source, module.serving
    question, passage = inputs["text"], inputs["text_pair"]
    batch = tf.size(question)
    (q_ids, p_ids), (_, p_starts), (_, p_ends), decoded = (
        module.lite_tokenizer.tokenize_with_offsets(question, passage))
    q_len = tf.minimum(tf.cast(q_ids.row_lengths(), tf.int32), serving.max_query_length)
    q_ids = window_pieces(q_ids, tf.range(batch), tf.zeros_like(q_len), q_len)  # its head
    n_tokens = tf.cast(p_ids.row_lengths(), tf.int32)
    room = source.max_seq_length - q_len - 3  # passage pieces per window

    # One row per window: its question, where it starts and how long it is.
    example, start, length, splits = windows(n_tokens, room, serving.doc_stride)
    count = tf.size(example)
    index = tf.range(count) - tf.gather(splits, example)
    offset = tf.gather(q_len, example) + 2  # the passage's first position
    pieces = window_pieces(p_ids, example, start, length)
    packed = module.pack_text([gather_rows(q_ids, example), pieces])
    out = module.model_outputs(packed)
    real = packed["input_mask"] > 0
    start_logits = tf.where(real, out["start_logits"], float("-inf"))
    end_logits = tf.where(real, out["end_logits"], float("-inf"))

    # Candidates of each window: its n_best_size best starts x best ends.
    k = tf.minimum(serving.n_best_size, tf.shape(start_logits)[1])
    top_start = tf.math.top_k(start_logits, k).indices
    top_end = tf.math.top_k(end_logits, k).indices

    def in_passage(p):
        return (p >= offset[:, None]) & (p < (offset + length)[:, None])

    token_of_start = tf.reshape(start[:, None] + top_start - offset[:, None], [-1])
    of_window = tf.reshape(tf.tile(example[:, None], [1, k]), [-1])
    best = best_windows(token_of_start, tf.gather(n_tokens, of_window),
                        tf.gather(room, of_window), serving.doc_stride)
    is_max_context = tf.reshape(best, tf.shape(top_start)) == index[:, None]
    # [windows, start rank, end rank]
    i, j = tf.expand_dims(top_start, 2), tf.expand_dims(top_end, 1)
    ok = (tf.expand_dims(in_passage(top_start) & is_max_context, 2)
          & tf.expand_dims(in_passage(top_end), 1) & (j >= i)
          & (j - i + 1 <= serving.max_answer_length))
    score, error = _two_sum(
        tf.expand_dims(tf.gather(start_logits, top_start, batch_dims=1), 2),
        tf.expand_dims(tf.gather(end_logits, top_end, batch_dims=1), 1))
    ok = tf.reshape(ok, [count, -1])
    score, error = tf.reshape(score, [count, -1]), tf.reshape(error, [count, -1])

    # The best candidate of each question: highest score, then the earliest in
    # (window, start rank, end rank) order.
    best_score, best_error, chosen = _segment_best(score, error, ok, example, batch)
    per_window = k * k
    order = tf.range(count)[:, None] * per_window + tf.range(per_window)[None, :]
    never = count * per_window
    first = tf.math.unsorted_segment_min(
        tf.reduce_min(tf.where(chosen, order, never), axis=1), example, batch)
    has_span = first < never
    first = tf.where(has_span, first, 0)
    window, rank = first // per_window, first % per_window
    shift = tf.gather(start, window) - tf.gather(offset, window)
    start_token = shift + tf.gather_nd(top_start, tf.stack([window, rank // k], axis=1))
    end_token = shift + tf.gather_nd(top_end, tf.stack([window, rank % k], axis=1))
    char_start = _row_value(p_starts, start_token, has_span)
    char_end = _row_value(p_ends, end_token, has_span)

    blank = _blank_rows(decoded)  # questions, then passages
    keep = (has_span & ~tf.gather(blank, tf.range(batch))
            & ~tf.gather(blank, batch + tf.range(batch)))
    if serving.null_score_diff_threshold is not None:
        null_score, null_error = _two_sum(start_logits[:, 0], end_logits[:, 0])
        null, null_error = _segment_min_pair(null_score, null_error, example, batch)
        diff = (null - best_score) + (null_error - best_error)
        keep &= ~(diff > serving.null_score_diff_threshold)
    return {
        "answer": _answers(decoded, batch, char_start, char_end, keep),
        "answer_start": tf.where(keep, char_start, -1),
        "answer_end": tf.where(keep, char_end, -1),
        "score": tf.where(has_span, best_score, 0.0),
        "has_answer": keep,
    }


def _two_sum(a, b):
    """a + b as float32 (sum, rounding error): sum + error is the exact sum."""
    total = a + b
    b_part = total - a
    error = (a - (total - b_part)) + (b - b_part)
    return total, tf.where(tf.math.is_finite(total), error, 0.0)


def _segment_best(score, error, ok, example, batch):
    """The best (score, error) of each question over its windows' `ok` candidates,
    and which candidates have it: (score, error, chosen)."""
    masked = tf.where(ok, score, float("-inf"))
    best = tf.math.unsorted_segment_max(tf.reduce_max(masked, axis=1), example, batch)
    tied = ok & (masked == tf.gather(best, example)[:, None])
    best_error = tf.math.unsorted_segment_max(
        tf.reduce_max(tf.where(tied, error, float("-inf")), axis=1), example, batch)
    return best, best_error, tied & (error == tf.gather(best_error, example)[:, None])


def _segment_min_pair(score, error, example, batch):
    """The smallest (score, error) of each question's windows."""
    low = tf.math.unsorted_segment_min(score, example, batch)
    low_error = tf.math.unsorted_segment_min(
        tf.where(score == tf.gather(low, example), error, float("inf")), example, batch)
    return low, low_error


def _row_value(ragged, position, present):
    """`ragged[b, position[b]]` per row (0 where `present` is False)."""
    flat = tf.concat([ragged.flat_values, [0]], axis=0)
    where = tf.where(present, tf.cast(ragged.row_starts(), tf.int32) + position,
                     tf.size(flat) - 1)
    return tf.gather(flat, where)


def _blank_rows(decoded):
    """Whether each decoded string is only characters `str.strip()` removes."""
    space = tf.reduce_any(decoded.cps[:, None] == tf.constant(
        whitespace_code_points(), tf.int32)[None, :], axis=1)
    other = tf.math.unsorted_segment_sum(tf.cast(~space, tf.int32), decoded.rows,
                                         decoded.nrows)
    return other == 0


def _answers(decoded, batch, char_start, char_end, keep):
    """Characters char_start:char_end of each passage (the rows after the `batch`
    questions of `decoded`) as UTF-8 strings, "" where not `keep`: U+FFFD for each
    invalid sequence, as the SavedModel's transcoded passage has."""
    codes, length = utf8_bytes(decoded.cps)
    flat = tf.reshape(codes, [-1])
    flat = tf.gather(flat, tf.cast(tf.where(flat >= 0)[:, 0], tf.int32))
    byte_start = tf.concat([tf.cumsum(length, exclusive=True), [tf.size(flat)]], axis=0)
    row_start = tf.gather(decoded.splits, batch + tf.range(batch))
    first = tf.gather(byte_start, row_start + tf.maximum(char_start, 0))
    size = tf.gather(byte_start, row_start + tf.maximum(char_end, 0)) - first
    # No answer: one "" byte (the code after the last) for join_bytes.
    first = tf.where(keep, first, tf.size(flat))
    size = tf.where(keep, tf.minimum(size, ANSWER_MAX_BYTES), 1)
    return join_bytes(flat, first, size, ANSWER_WIDTHS)[:batch]
