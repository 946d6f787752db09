"""Metrics of sentence embeddings, as sentence-transformers' evaluators compute them:
`sts_metrics` (its `EmbeddingSimilarityEvaluator`: Pearson and Spearman correlation
of the cosine similarity with gold scores) and `retrieval_metrics` (its
`InformationRetrievalEvaluator`, binary relevance: recall@k, MRR@10 and nDCG@10 of a
query-by-document score matrix), and `roc_auc` (of a paraphrase classifier's scores).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from keras_bert.core.errors import ArgumentError
from keras_bert.metrics.glue import average_ranks, pearson, spearmanr

RECALL_AT = (1, 5, 10)
RANKED_AT = 10  # MRR@10 and nDCG@10


def cosine_rows(a, b) -> np.ndarray:
    """Cosine similarity of each row of `a` with the same row of `b`.

    Example:

    >>> cosine_rows([[1.0, 0.0], [1.0, 1.0]], [[3.0, 4.0], [2.0, 2.0]]).round(3).tolist()
    [0.6, 1.0]
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return (a * b).sum(-1) / np.maximum(norms, 1e-12)


def sts_metrics(scores, similarities) -> dict[str, float]:
    """{"spearman", "pearson"}: the correlations of `similarities` (e.g. the cosine of
    each pair's embeddings) with the gold `scores`.

    Example:

    >>> {k: round(v, 4) for k, v in sts_metrics([0.0, 2.5, 5.0], [0.1, 0.2, 0.9]).items()}
    {'spearman': 1.0, 'pearson': 0.9177}
    """
    return {"spearman": spearmanr(scores, similarities),
            "pearson": pearson(scores, similarities)}


def roc_auc(labels, scores) -> float:
    """Area under the ROC curve of `scores` for binary `labels` (1 positive): the
    chance that a positive scores above a negative, ties counting half (as
    scikit-learn's `roc_auc_score`).

    Example:

    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or set(np.unique(labels).tolist()) != {0, 1}:
        raise ArgumentError("labels must hold both 0 and 1, one per score.", field="labels")
    ranks = average_ranks(np.asarray(scores, np.float64))
    positives = int(labels.sum())
    negatives = len(labels) - positives
    return float((ranks[labels == 1].sum() - positives * (positives + 1) / 2)
                 / (positives * negatives))


def retrieval_metrics(scores, relevant: Sequence) -> dict[str, float]:
    """recall@1/5/10, MRR@10 and nDCG@10 (binary relevance, averaged over queries) of a
    [queries, documents] score matrix (higher is more relevant) and, per query, the
    index (or a list of indices) of its relevant documents. Ties rank the lower index
    first.

    Example:

    >>> m = retrieval_metrics([[0.9, 0.1, 0.3], [0.2, 0.1, 0.8]], [0, [1, 2]])
    >>> m["recall@1"], m["mrr@10"], round(m["ndcg@10"], 4)
    (0.75, 1.0, 0.9599)
    """
    scores = np.asarray(scores, np.float64)
    if scores.ndim != 2 or not scores.size:
        raise ArgumentError(f"scores must be a [queries, documents] matrix, got shape "
                            f"{scores.shape}.", field="scores")
    relevant = [_relevant_set(r, i, scores.shape[1]) for i, r in enumerate(relevant)]
    if len(relevant) != scores.shape[0]:
        raise ArgumentError(f"{scores.shape[0]} queries but {len(relevant)} relevance "
                            "entries; give one per query.", field="relevant")
    depth = min(max(*RECALL_AT, RANKED_AT), scores.shape[1])
    # Stable: of equal scores the lower document index ranks first.
    top = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
    hits = np.array([[d in rel for d in row] for row, rel in zip(top, relevant)], bool)
    sizes = np.array([len(rel) for rel in relevant], np.float64)
    out = {f"recall@{k}": float(np.mean(hits[:, :k].sum(1) / sizes)) for k in RECALL_AT}
    ranked = hits[:, :RANKED_AT]
    first = np.where(ranked.any(1), ranked.argmax(1), -1)
    out[f"mrr@{RANKED_AT}"] = float(np.mean(np.where(first >= 0, 1.0 / (first + 1), 0.0)))
    discounts = 1.0 / np.log2(np.arange(2, ranked.shape[1] + 2))
    dcg = (ranked * discounts).sum(1)
    ideal = np.array([discounts[:min(int(s), ranked.shape[1])].sum() for s in sizes])
    out[f"ndcg@{RANKED_AT}"] = float(np.mean(dcg / ideal))
    return out


def _relevant_set(entry, query: int, documents: int) -> set[int]:
    values = [entry] if isinstance(entry, (int, np.integer)) else entry
    if (isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray))
            or not len(values)):
        raise ArgumentError(f"relevant[{query}] must be a document index or a non-empty "
                            f"list of them, got {entry!r}.", field="relevant")
    out = set()
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < documents:
            raise ArgumentError(f"relevant[{query}] holds {v!r}, not an index of the "
                                f"{documents} documents.", field="relevant")
        out.add(int(v))
    return out
