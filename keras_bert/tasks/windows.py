"""Windows over token sequences longer than one model input: google-research/bert's
`run_squad.py` rule, shared by SQuAD passages and NER sentences.

A sequence of `n` tokens is cut into windows of at most `max_tokens` tokens whose
starts are `doc_stride` apart (`min(max_tokens, doc_stride)`, since only the last
window can be shorter), until one reaches the end; a sequence of no tokens gets one
empty window. A token that several windows hold is read in its "max-context" window:
the one where min(tokens left of it, tokens right of it) + 0.01 * window length is
largest, the first such window on a tie.

`window_spans` and `max_context_windows` are the rule for one sequence in Python and
numpy (what features are made with); `window_table` and `best_windows` are the same
rule over a batch of sequences in core TensorFlow ops (what exported `serve_text`
signatures run in the graph). The scores are float64 in both, so ties break alike.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf


def window_spans(num_tokens: int, max_tokens: int, doc_stride: int) -> list[tuple[int, int]]:
    """run_squad's passage windows: `(start, length)` pairs of at most `max_tokens`
    tokens whose starts are `doc_stride` apart, until the last one reaches the end.
    An empty passage gets one empty window.

    Example:

    >>> window_spans(10, 4, 3)
    [(0, 4), (3, 4), (6, 4)]
    >>> window_spans(3, 4, 2)
    [(0, 3)]
    """
    spans, start = [], 0
    while True:
        length = min(num_tokens - start, max_tokens)
        spans.append((start, length))
        if start + length >= num_tokens:
            return spans
        start += min(length, doc_stride)


def max_context_windows(spans: Sequence[tuple[int, int]], num_tokens: int) -> np.ndarray:
    """For each passage token, the index of the window where it has the most context.

    run_squad's `_check_is_max_context`: a token's score in a window is
    min(tokens left of it, tokens right of it) + 0.01 * window length; the first window
    with the highest score wins.

    Example:

    >>> max_context_windows([(0, 4), (2, 4)], 6).tolist()  # token 2: 0+.04 vs 0+.04
    [0, 0, 0, 1, 1, 1]
    """
    if num_tokens == 0:
        return np.zeros(0, np.int64)
    starts = np.array([s for s, _ in spans])[:, None]
    lengths = np.array([n for _, n in spans])[:, None]
    position = np.arange(num_tokens)[None, :]
    ends = starts + lengths - 1
    score = np.minimum(position - starts, ends - position) + 0.01 * lengths
    score = np.where((position >= starts) & (position <= ends), score, -np.inf)
    return score.argmax(axis=0)


def _window_steps(num_tokens, max_tokens, doc_stride):
    """int64 tokens, window sizes (broadcast to them) and starts' step per sequence."""
    num_tokens = tf.cast(num_tokens, tf.int64)
    max_tokens = tf.broadcast_to(tf.cast(max_tokens, tf.int64), tf.shape(num_tokens))
    return num_tokens, max_tokens, tf.minimum(max_tokens, tf.cast(doc_stride, tf.int64))


def window_table(num_tokens, max_tokens, doc_stride) -> dict[str, tf.Tensor]:
    """`window_spans` of a batch of sequences, in TensorFlow ops.

    Args:
        num_tokens: int [batch], the tokens of each sequence.
        max_tokens: int, a scalar or [batch]: the most tokens per window (>= 1).
        doc_stride: int: tokens between the starts of consecutive windows (>= 1).

    Returns:
        int64 tensors: "sequence", "start" and "length" [windows] (every window of the
        batch, sequence by sequence, in order) and "splits" [batch + 1] (sequence i's
        windows are rows splits[i]:splits[i + 1]).

    Example:

    >>> table = window_table([10, 3, 0], 4, 3)
    >>> {k: v.numpy().tolist() for k, v in table.items()}  # doctest: +NORMALIZE_WHITESPACE
    {'sequence': [0, 0, 0, 1, 2], 'start': [0, 3, 6, 0, 0], 'length': [4, 4, 4, 3, 0],
     'splits': [0, 3, 4, 5]}
    """
    num_tokens, max_tokens, step = _window_steps(num_tokens, max_tokens, doc_stride)
    # All windows but the last are full: the last must reach the end.
    counts = 1 + (tf.maximum(num_tokens - max_tokens, 0) + step - 1) // step
    sequence = tf.repeat(tf.range(tf.size(num_tokens, out_type=tf.int64)), counts)
    start = tf.ragged.range(counts).flat_values * tf.gather(step, sequence)
    length = tf.minimum(tf.gather(num_tokens, sequence) - start,
                        tf.gather(max_tokens, sequence))
    splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(counts)], axis=0)
    return {"sequence": sequence, "start": start, "length": length, "splits": splits}


def best_windows(token, sequence, num_tokens, max_tokens, doc_stride) -> tf.Tensor:
    """`max_context_windows` in TensorFlow ops: for each queried token, the number
    (0, 1, ... within its sequence) of its max-context window.

    Args:
        token: int [queries], token positions in their sequences.
        sequence: int [queries], the sequence (of the batch) each token is in.
        num_tokens, max_tokens, doc_stride: the batch's windows, as in `window_table`.

    Returns:
        int64 [queries]. Only the windows that hold the token are scored (at most
        ceil(max_tokens / step) of them), so the cost does not grow with the length of
        the sequence.

    Example:

    >>> best_windows([0, 2, 3, 5], [0, 0, 0, 0], [6], 4, 2).numpy().tolist()
    [0, 0, 1, 1]
    """
    num_tokens, max_tokens, step = _window_steps(num_tokens, max_tokens, doc_stride)
    token, sequence = tf.cast(token, tf.int64), tf.cast(sequence, tf.int64)
    n, size, step = (tf.gather(v, sequence) for v in (num_tokens, max_tokens, step))
    count = 1 + (tf.maximum(n - size, 0) + step - 1) // step
    # Window k holds the token when k * step <= token < k * step + size.
    first = tf.maximum(token - size + step, 0) // step  # ceil((token - size + 1) / step)
    last = tf.minimum(token // step, count - 1)
    window = tf.ragged.range(first, last + 1)
    query = window.value_rowids()
    k = window.flat_values
    start = k * tf.gather(step, query)
    length = tf.minimum(tf.gather(n, query) - start, tf.gather(size, query))
    position = tf.gather(token, query)
    score = (tf.cast(tf.minimum(position - start, start + length - 1 - position), tf.float64)
             + 0.01 * tf.cast(length, tf.float64))
    queries = tf.size(token)
    best = tf.math.unsorted_segment_max(score, query, queries)
    never = tf.gather(count, query)  # past the sequence's last window
    return tf.math.unsorted_segment_min(
        tf.where(score == tf.gather(best, query), k, never), query, queries)
