"""SQuAD v1.1 / v2.0's official scores (§4.2, §4.3): `normalize_answer`,
`squad_exact_match`, `squad_f1` and `squad_evaluate`, which follow the official
evaluate-v2.0.py script (on v1.1 data it gives evaluate-v1.1.py's numbers), including
its search of the best no-answer threshold. Percentages (0-100), as the official
scripts write them.
"""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Mapping, Sequence

from keras_bert.core.errors import ArgumentError

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """The official SQuAD normalization: lower-case, drop ASCII punctuation, drop the
    articles "a", "an", "the" (as whole words), then collapse whitespace, in that order.

    Args:
        s: an answer text.

    Returns:
        the normalized text.

    Example:

    >>> normalize_answer("The  Cat!")
    'cat'
    >>> normalize_answer("an apple, a day")
    'apple day'
    """
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _answer_tokens(s: str) -> list[str]:
    return normalize_answer(s).split() if s else []


def _gold_for_scoring(gold_answers: Sequence[str]) -> list[str]:
    # evaluate-v2.0.py: gold answers that normalize to nothing are dropped, and a question
    # without any (unanswerable) has the empty string as its only correct answer.
    return [a for a in gold_answers if normalize_answer(a)] or [""]


def _exact(gold: str, prediction: str) -> float:
    return float(normalize_answer(gold) == normalize_answer(prediction))


def _f1(gold: str, prediction: str) -> float:
    gold_tokens, predicted_tokens = _answer_tokens(gold), _answer_tokens(prediction)
    if not gold_tokens or not predicted_tokens:
        # An empty side (no answer) scores 1 only against another empty side.
        return float(gold_tokens == predicted_tokens)
    common = collections.Counter(gold_tokens) & collections.Counter(predicted_tokens)
    same = sum(common.values())
    if not same:
        return 0.0
    precision, recall = same / len(predicted_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _as_answer_list(gold_answers) -> list[str]:
    if isinstance(gold_answers, str):
        raise ArgumentError("gold_answers must be a list of answer texts (a bare string "
                            "was given); use [] for an unanswerable question.")
    return list(gold_answers)


def squad_exact_match(prediction: str, gold_answers: Sequence[str]) -> float:
    """SQuAD exact match of one prediction: 1.0 if it equals any gold answer after
    `normalize_answer`, else 0.0. An unanswerable question (`gold_answers == []`, or
    only answers that normalize to nothing) matches only an empty prediction.

    Args:
        prediction: the predicted answer text ("" for "no answer").
        gold_answers: the gold answer texts.

    Returns:
        0.0 or 1.0.

    Example:

    >>> squad_exact_match("the Eiffel tower", ["Eiffel Tower", "the tower"])
    1.0
    >>> squad_exact_match("", []), squad_exact_match("Paris", [])
    (1.0, 0.0)
    """
    gold = _gold_for_scoring(_as_answer_list(gold_answers))
    return max(_exact(a, prediction) for a in gold)


def squad_f1(prediction: str, gold_answers: Sequence[str]) -> float:
    """SQuAD token F1 of one prediction: the best over the gold answers of the F1 of
    the bags of normalized tokens. For an unanswerable question (`gold_answers == []`)
    it is 1.0 for an empty prediction and 0.0 otherwise (the v2.0 rule).

    Args:
        prediction: the predicted answer text ("" for "no answer").
        gold_answers: the gold answer texts.

    Returns:
        a float in [0, 1].

    Example:

    >>> squad_f1("the big cat", ["a cat"])  # precision 1/2, recall 1
    0.6666666666666666
    """
    gold = _gold_for_scoring(_as_answer_list(gold_answers))
    return max(_f1(a, prediction) for a in gold)


def _best_threshold(predictions, scores, na_probs, has_answer):
    """evaluate-v2.0.py's find_best_thresh: start from "no answer for all" and answer
    questions in increasing order of their no-answer probability, keeping the best."""
    score = best = sum(1 for qid in has_answer if not has_answer[qid])
    best_threshold = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            score += scores[qid]
        elif predictions[qid]:
            score -= 1
        if score > best:
            best, best_threshold = score, na_probs[qid]
    return 100.0 * best / len(scores), float(best_threshold)


def squad_evaluate(examples_gold: Mapping[str, Sequence[str]],
                   predictions: Mapping[str, str],
                   na_probs: Mapping[str, float] | None = None,
                   na_prob_thresh: float = 1.0) -> dict:
    """The official SQuAD scores of a set of predictions, as evaluate-v2.0.py computes
    them (for SQuAD v1.1 data, where every question has answers, `exact_match` and `f1`
    equal evaluate-v1.1.py's).

    Args:
        examples_gold: question id -> the gold answer texts ([] for an unanswerable
            question).
        predictions: question id -> the predicted text ("" for "no answer"). Every
            question of `examples_gold` needs one; extra ids are ignored.
        na_probs: optional question id -> probability (or any score) that the
            question has no answer. With it, a prediction whose `na_prob` exceeds
            `na_prob_thresh` counts as "no answer", and the best threshold is searched.
        na_prob_thresh: the threshold for `na_probs` (the script's default, 1.0).

    Returns:
        percentages: `exact_match`, `f1` and `total` (number of questions); when some
        question is unanswerable, also `HasAns_exact`, `HasAns_f1`, `HasAns_total`,
        `NoAns_exact`, `NoAns_f1`, `NoAns_total` (a group is left out when empty); with
        `na_probs`, also `best_exact`, `best_exact_thresh`, `best_f1`, `best_f1_thresh`.

    Example:

    >>> gold = {"q1": ["Paris"], "q2": []}
    >>> squad_evaluate(gold, {"q1": "paris", "q2": "Lyon"})["exact_match"]
    50.0
    """
    if not examples_gold:
        raise ArgumentError("examples_gold is empty; there is nothing to evaluate.")
    missing = [qid for qid in examples_gold if qid not in predictions]
    if missing:
        raise ArgumentError(f"{len(missing)} question(s) have no prediction, e.g. "
                            f"{missing[:3]}.", field="predictions")
    if na_probs is not None:
        lacking = [qid for qid in examples_gold if qid not in na_probs]
        if lacking:
            raise ArgumentError(f"{len(lacking)} question(s) have no na_prob, e.g. "
                                f"{lacking[:3]}.", field="na_probs")
    has_answer = {qid: bool(_as_answer_list(gold)) for qid, gold in examples_gold.items()}
    exact_raw = {qid: squad_exact_match(predictions[qid], gold)
                 for qid, gold in examples_gold.items()}
    f1_raw = {qid: squad_f1(predictions[qid], gold) for qid, gold in examples_gold.items()}

    def thresholded(raw):
        if na_probs is None:
            return raw
        return {qid: float(not has_answer[qid]) if na_probs[qid] > na_prob_thresh else s
                for qid, s in raw.items()}

    exact, f1 = thresholded(exact_raw), thresholded(f1_raw)

    def mean(scores, qids):
        return 100.0 * sum(scores[qid] for qid in qids) / len(qids)

    qids = list(examples_gold)
    result = {"exact_match": mean(exact, qids), "f1": mean(f1, qids), "total": len(qids)}
    if not all(has_answer.values()):
        for prefix, wanted in (("HasAns", True), ("NoAns", False)):
            group = [qid for qid in qids if has_answer[qid] == wanted]
            if group:
                result[f"{prefix}_exact"] = mean(exact, group)
                result[f"{prefix}_f1"] = mean(f1, group)
                result[f"{prefix}_total"] = len(group)
    if na_probs is not None:
        probs = {qid: na_probs[qid] for qid in qids}
        result["best_exact"], result["best_exact_thresh"] = _best_threshold(
            predictions, exact_raw, probs, has_answer)
        result["best_f1"], result["best_f1_thresh"] = _best_threshold(
            predictions, f1_raw, probs, has_answer)
    return result
