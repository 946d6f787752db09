"""GLUE's official metrics (§4.1): `accuracy`, binary `f1_score` (MRPC, QQP),
`matthews_corrcoef` (CoLA), `pearson` and `spearmanr` (STS-B), gathered per task by
`glue_metrics`. Fractions in [0, 1], not the papers' percentages.
"""

from __future__ import annotations

import numpy as np

from keras_bert.core.errors import ArgumentError

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


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they span (Spearman's
    correlation and the ROC AUC of `keras_bert.metrics.retrieval` rank with it).

    Example:

    >>> average_ranks(np.array([3.0, 1.0, 3.0])).tolist()
    [2.5, 1.0, 2.5]
    """
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
    return pearson(average_ranks(x), average_ranks(y))


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
