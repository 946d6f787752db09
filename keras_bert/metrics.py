"""The official metrics of the paper's fine-tuning tasks, in numpy only.

- GLUE (§4.1): `accuracy`, binary `f1_score` (MRPC, QQP), `matthews_corrcoef` (CoLA),
  `pearson` and `spearmanr` (STS-B), gathered per task by `glue_metrics`.
- SQuAD v1.1 / v2.0 (§4.2, §4.3): `normalize_answer`, `squad_exact_match`, `squad_f1`
  and `squad_evaluate`, which follow the official evaluate-v2.0.py script (on v1.1 data
  it gives evaluate-v1.1.py's numbers).
- CoNLL-2003 NER (§5.3): `ner_span_metrics`, entity-level precision/recall/F1 counted
  the way the conlleval script counts chunks.

Scales: every value is a fraction in [0, 1] (the papers print GLUE and NER scores
multiplied by 100, but result files keep fractions), except the SQuAD scores, which
are percentages (0-100) as the official SQuAD scripts write them.
"""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Mapping, Sequence

import numpy as np

from keras_bert.errors import ArgumentError

# GLUE task name -> the official metrics `glue_metrics` returns, in that order.
GLUE_METRIC_NAMES = {
    "cola": ("matthews_corrcoef",),
    "sst2": ("accuracy",),
    "mrpc": ("accuracy", "f1"),
    "stsb": ("pearson", "spearmanr"),
    "qqp": ("accuracy", "f1"),
    "mnli": ("accuracy",),
    "qnli": ("accuracy",),
    "rte": ("accuracy",),
    "wnli": ("accuracy",),
}


def _pair(labels, predictions, what: str = "labels and predictions"):
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    if labels.ndim != 1 or predictions.ndim != 1:
        raise ArgumentError(f"{what} must be 1-D sequences, got shapes {labels.shape} and "
                            f"{predictions.shape}.")
    if len(labels) != len(predictions):
        raise ArgumentError(f"{what} differ in length: {len(labels)} and {len(predictions)}.")
    if not len(labels):
        raise ArgumentError(f"{what} are empty; a metric needs at least one example.")
    return labels, predictions


def accuracy(labels, predictions) -> float:
    """The fraction of predictions equal to their label.

    Args:
        labels: gold labels, a 1-D sequence (ints or strings).
        predictions: predicted labels, same length and kind.

    Returns:
        a float in [0, 1].

    Example:

    >>> accuracy([1, 0, 1, 1], [1, 1, 1, 0])
    0.5
    """
    labels, predictions = _pair(labels, predictions)
    return float(np.mean(labels == predictions))


def f1_score(labels, predictions, positive=1) -> float:
    """Binary F1 of the `positive` class (GLUE's MRPC and QQP F1), as sklearn's
    `f1_score(average="binary")`: 2 TP / (2 TP + FP + FN), 0 when there is no positive
    label or prediction at all.

    Args:
        labels: gold labels, a 1-D sequence.
        predictions: predicted labels, same length.
        positive: the label counted as positive.

    Returns:
        a float in [0, 1].

    Example:

    >>> f1_score([1, 1, 0, 0], [1, 0, 1, 0])  # TP 1, FP 1, FN 1
    0.5
    """
    labels, predictions = _pair(labels, predictions)
    gold, guess = labels == positive, predictions == positive
    true_positives = int(np.sum(gold & guess))
    denominator = int(np.sum(gold)) + int(np.sum(guess))
    return 2.0 * true_positives / denominator if denominator else 0.0


def matthews_corrcoef(labels, predictions) -> float:
    """Matthews correlation coefficient (CoLA's metric), from the confusion matrix as
    sklearn's `matthews_corrcoef` computes it (its multi-class form, which for two
    classes is (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))). 0 when undefined
    (all labels or all predictions in one class), as sklearn returns.

    Args:
        labels: gold labels, a 1-D sequence.
        predictions: predicted labels, same length.

    Returns:
        a float in [-1, 1].

    Example:

    >>> round(matthews_corrcoef([1, 1, 1, 0, 0], [1, 1, 0, 0, 1]), 4)  # TP 2 TN 1 FP 1 FN 1
    0.1667
    """
    labels, predictions = _pair(labels, predictions)
    classes, index = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    gold, guess = index[:len(labels)], index[len(labels):]
    confusion = np.zeros((len(classes), len(classes)), np.float64)
    np.add.at(confusion, (gold, guess), 1.0)
    true_counts, guess_counts = confusion.sum(axis=1), confusion.sum(axis=0)
    correct, total = np.trace(confusion), confusion.sum()
    covariance = correct * total - guess_counts @ true_counts
    denominator = np.sqrt((total ** 2 - guess_counts @ guess_counts)
                          * (total ** 2 - true_counts @ true_counts))
    return float(covariance / denominator) if denominator else 0.0


def pearson(x, y) -> float:
    """Pearson correlation of two 1-D sequences of numbers (STS-B), as
    `scipy.stats.pearsonr(x, y)[0]`; NaN when either sequence is constant.

    Args:
        x, y: numbers, same length (at least 2).

    Returns:
        a float in [-1, 1], or NaN.

    Example:

    >>> round(pearson([1, 2, 3], [2, 4, 7]), 6)
    0.993399
    """
    x, y = _pair(x, y, "x and y")
    if len(x) < 2:
        raise ArgumentError("A correlation needs at least 2 values.")
    x = x.astype(np.float64) - np.mean(x, dtype=np.float64)
    y = y.astype(np.float64) - np.mean(y, dtype=np.float64)
    norm = np.linalg.norm(x) * np.linalg.norm(y)
    if not norm:
        return float("nan")
    return float(np.clip(x @ y / norm, -1.0, 1.0))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they span."""
    _, group, counts = np.unique(values, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts  # 0-based rank where each group starts
    return (first + (counts + 1) / 2.0)[group]


def spearmanr(x, y) -> float:
    """Spearman rank correlation (STS-B), as `scipy.stats.spearmanr(x, y)[0]`: Pearson's
    correlation of the ranks, tied values getting the average of their ranks.

    Args:
        x, y: numbers, same length (at least 2).

    Returns:
        a float in [-1, 1], or NaN when either sequence is constant.

    Example:

    >>> round(spearmanr([1, 2, 2, 3], [1, 3, 2, 4]), 6)  # ranks of x: 1, 2.5, 2.5, 4
    0.948683
    """
    x, y = _pair(x, y, "x and y")
    return pearson(_average_ranks(x), _average_ranks(y))


def glue_task_key(task_name: str) -> str:
    """A GLUE task name in lower case without "-" and "_", as `GLUE_METRIC_NAMES` keys it.

    Args:
        task_name: e.g. "STS-B", "sst_2" or "mnli".

    Example:

    >>> glue_task_key("STS-B"), glue_task_key("SST-2")
    ('stsb', 'sst2')
    """
    return task_name.lower().replace("-", "").replace("_", "")


def glue_metrics(task_name: str, labels, predictions) -> dict[str, float]:
    """The official GLUE metrics of one task: CoLA Matthews correlation; SST-2, MNLI,
    QNLI, RTE, WNLI accuracy; MRPC, QQP accuracy and F1 of class 1; STS-B Pearson and
    Spearman correlations. Fractions, not percentages.

    Args:
        task_name: "cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte" or
            "wnli" (case, "-" and "_" ignored, so "SST-2" works).
        labels: gold labels (class indices or label strings; STS-B scores).
        predictions: predictions in the same terms.

    Returns:
        {metric name: value}, with the names of `GLUE_METRIC_NAMES[task]`.

    Example:

    >>> glue_metrics("mrpc", [1, 0, 1, 1], [1, 1, 1, 0])
    {'accuracy': 0.5, 'f1': 0.6666666666666666}
    """
    key = glue_task_key(task_name)
    if key not in GLUE_METRIC_NAMES:
        raise ArgumentError(f"Unknown GLUE task {task_name!r}; expected one of "
                            f"{sorted(GLUE_METRIC_NAMES)}.", field="task_name")
    if key == "stsb":
        x = np.asarray(labels, np.float64)
        y = np.asarray(predictions, np.float64)
        return {"pearson": pearson(x, y), "spearmanr": spearmanr(x, y)}
    if key == "cola":
        return {"matthews_corrcoef": matthews_corrcoef(labels, predictions)}
    result = {"accuracy": accuracy(labels, predictions)}
    if key in ("mrpc", "qqp"):
        # Labels "0"/"1" as strings (the TSV's own terms) count like the ints.
        result["f1"] = f1_score(np.asarray(labels).astype(np.int64),
                                np.asarray(predictions).astype(np.int64), positive=1)
    return result


# ---------------------------------------------------------------------------------------
# SQuAD

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


# ---------------------------------------------------------------------------------------
# NER

def _split_tag(tag: str) -> tuple[str, str]:
    # conlleval: "B-PER" -> ("B", "PER"); a tag without "-" ("O") has no type.
    prefix, dash, kind = tag.partition("-")
    return (prefix, kind) if dash else (tag, "")


def _chunk_ends(previous: str, previous_type: str, tag: str, kind: str) -> bool:
    """conlleval's endOfChunk: does a chunk end just before `tag`?"""
    if previous in ("B", "I") and tag in ("B", "O", "S"):
        return True
    if previous in ("E", "S"):
        return True
    return previous != "O" and previous_type != kind


def _chunk_starts(previous: str, previous_type: str, tag: str, kind: str) -> bool:
    """conlleval's startOfChunk: does a chunk start at `tag`?"""
    if tag in ("B", "S"):
        return True
    if previous in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag != "O" and previous_type != kind


def ner_chunks(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """The entity chunks of one tag sequence as conlleval finds them: (first token,
    last token, type). Works for IOB1, BIO (IOB2) and IOBES: `B-` and `S-` always start
    a chunk; `I-` (or `E-`) starts one after `O`, after a chunk's end or after another
    type.

    Args:
        tags: the tags of one sentence ("O", "B-PER", "I-LOC", ...).

    Returns:
        the chunks in order, as (first index, last index, type).

    Example:

    >>> ner_chunks(["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"])
    [(0, 1, 'PER'), (2, 2, 'PER'), (4, 4, 'LOC'), (5, 5, 'ORG')]
    """
    chunks, start = [], None
    previous, previous_type = "O", ""
    for i, full_tag in enumerate(list(tags) + ["O"]):  # the sentence boundary ends a chunk
        tag, kind = _split_tag(full_tag)
        if tag not in ("B", "I", "E", "S", "O") or (tag == "O") != (kind == ""):
            raise ArgumentError(f"Tag {full_tag!r} at position {i} is not 'O' or "
                                "B-/I-/E-/S- followed by a type.")
        if start is not None and _chunk_ends(previous, previous_type, tag, kind):
            chunks.append((start, i - 1, previous_type))
            start = None
        if _chunk_starts(previous, previous_type, tag, kind):
            start = i
        previous, previous_type = tag, kind
    return chunks


def ner_span_metrics(gold_tag_sequences: Sequence[Sequence[str]],
                     predicted_tag_sequences: Sequence[Sequence[str]]) -> dict[str, float]:
    """Entity-level precision, recall and F1 as conlleval computes them (CoNLL-2003's
    official score): a predicted chunk is correct when a gold chunk has the same first
    token, last token and type. Chunks never cross sentences. Fractions in [0, 1]; a
    ratio with a zero denominator is 0.

    Args:
        gold_tag_sequences: per sentence, the gold tag of each word (IOB1, BIO or IOBES).
        predicted_tag_sequences: per sentence, the predicted tags, same lengths.

    Returns:
        {"precision", "recall", "f1"}.

    Example:

    >>> gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    >>> ner_span_metrics(gold, [["B-PER", "I-PER", "O", "B-ORG"]])
    {'precision': 0.5, 'recall': 0.5, 'f1': 0.5}
    """
    if len(gold_tag_sequences) != len(predicted_tag_sequences):
        raise ArgumentError(f"{len(gold_tag_sequences)} gold and "
                            f"{len(predicted_tag_sequences)} predicted sentences.")
    correct = found_gold = found_guessed = 0
    for i, (gold, guessed) in enumerate(zip(gold_tag_sequences, predicted_tag_sequences)):
        if len(gold) != len(guessed):
            raise ArgumentError(f"Sentence {i} has {len(gold)} gold and {len(guessed)} "
                                "predicted tags.")
        gold_chunks, guessed_chunks = set(ner_chunks(gold)), set(ner_chunks(guessed))
        correct += len(gold_chunks & guessed_chunks)
        found_gold += len(gold_chunks)
        found_guessed += len(guessed_chunks)
    precision = correct / found_guessed if found_guessed else 0.0
    recall = correct / found_gold if found_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}
