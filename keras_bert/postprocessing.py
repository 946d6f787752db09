"""Decoding task-model outputs into answers: SQuAD v1.1 spans and the v2 no-answer rule."""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class SpanPrediction:
    """The best answer span of one example.

    `start`/`end` are token indices (inclusive) or None when the example is judged
    unanswerable; `score` is start_logit + end_logit of the best span and `null_score`
    the [CLS] score (start_logit[0] + end_logit[0]).
    """

    start: int | None
    end: int | None
    score: float
    null_score: float

    @property
    def has_answer(self) -> bool:
        return self.start is not None


def best_span(start_logits, end_logits, allowed=None, max_answer_length: int = 30,
              null_score_diff_threshold: float | None = None) -> SpanPrediction:
    """Finds the highest-scoring span with start <= end < start + max_answer_length.

    As in the paper (§4.2, §4.3): a span (i, j) scores S·T_i + E·T_j, here the start
    and end logits. For SQuAD v2, pass `null_score_diff_threshold` (τ, tuned on dev):
    the example gets no answer unless best_span_score > null_score + τ, where the null
    score is that of the span at [CLS] (index 0).

    Args:
        start_logits, end_logits: float arrays [seq] for one example.
        allowed: optional bool array [seq], True where an answer may start or end
            (context tokens; excludes question, [SEP] and padding). Index 0 is never a
            span position.
        max_answer_length: longest span in tokens.
        null_score_diff_threshold: None for SQuAD v1.1 (always answer).

    Example:

    >>> best_span([0, 1, 5, 0], [0, 0, 1, 6]).start, best_span([0, 1, 5, 0], [0, 0, 1, 6]).end
    (2, 3)
    >>> best_span([9, 1, 2, 0], [9, 0, 1, 2], null_score_diff_threshold=0.0).has_answer
    False
    """
    start_logits = np.asarray(start_logits, dtype=np.float64)
    end_logits = np.asarray(end_logits, dtype=np.float64)
    if start_logits.shape != end_logits.shape or start_logits.ndim != 1:
        raise ValueError(f"start_logits {start_logits.shape} and end_logits {end_logits.shape} "
                         "must be 1-D arrays of the same length (one example).")
    if max_answer_length < 1:
        raise ValueError(f"max_answer_length must be >= 1, got {max_answer_length}.")
    n = start_logits.shape[0]
    ok = np.ones(n, bool) if allowed is None else np.asarray(allowed, bool).copy()
    ok[0] = False
    scores = start_logits[:, None] + end_logits[None, :]
    i, j = np.indices((n, n))
    valid = (j >= i) & (j - i < max_answer_length) & ok[:, None] & ok[None, :]
    null_score = float(start_logits[0] + end_logits[0])
    if not valid.any():
        return SpanPrediction(None, None, float("-inf"), null_score)
    flat = np.where(valid, scores, -np.inf).argmax()
    s, e = divmod(int(flat), n)
    score = float(scores[s, e])
    if null_score_diff_threshold is not None and not score > null_score + null_score_diff_threshold:
        return SpanPrediction(None, None, score, null_score)
    return SpanPrediction(s, e, score, null_score)
