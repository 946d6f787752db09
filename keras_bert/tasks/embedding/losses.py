"""The losses `BertTextEmbedder` trains with, as sentence-transformers defines them, in
`keras.ops` (every backend).

Each takes `y_pred` of shape [batch, k, width]: the embeddings of each training
example's k texts (an anchor, its positive and optional hard negatives; or the two
texts of a scored pair), which the embedder computes in one batch of batch * k texts,
and `y_true` [batch]: each pair's score (NaN where the data has none).

- `MultipleNegativesRankingLoss` (in-batch negatives): each anchor must pick its own
  positive among every positive and hard negative of the batch, by cross-entropy over
  the cosine similarities times `scale` (20).
- `CoSENTLoss`: scored pairs; every two pairs whose scores are ordered must keep that
  order in cosine similarity: log(1 + sum exp(scale * (cos_j - cos_i))) over the pairs
  with score_i > score_j (only the order of the scores matters).
- `CosineSimilarityLoss`: scored pairs; the mean squared error between the cosine
  similarity and the score (scores in [0, 1]).
- `SentencePairLoss`, what `compile()` chooses: CoSENT on scored pairs, multiple
  negatives ranking on unscored ones (decided per batch by whether its scores are NaN).

Example:

>>> import numpy as np
>>> pairs = np.array([[[1.0, 0.0], [1.0, 0.1]], [[0.0, 1.0], [0.1, 1.0]]], "float32")
>>> float(MultipleNegativesRankingLoss()(np.full(2, np.nan), pairs)) < 0.01
True
>>> float(CoSENTLoss()(np.array([1.0, 0.0]), pairs)) > 0.5  # equal cosines, unequal scores
True
"""

from __future__ import annotations

import keras
from keras import ops


def _unit(x):
    return x / ops.maximum(ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True)), 1e-12)


def _pair_cosine(y_pred):
    y_pred = ops.cast(y_pred, "float32")
    return ops.sum(_unit(y_pred[:, 0]) * _unit(y_pred[:, 1]), axis=-1)


def multiple_negatives_ranking(y_pred, scale: float = 20.0):
    """Mean cross-entropy of each anchor's scaled cosines against the batch's positives
    (then its hard negatives); the right answer is its own positive."""
    y_pred = ops.cast(y_pred, "float32")
    width = ops.shape(y_pred)[-1]
    anchors = _unit(y_pred[:, 0])
    candidates = _unit(ops.reshape(ops.transpose(y_pred[:, 1:], (1, 0, 2)), (-1, width)))
    logits = ops.matmul(anchors, ops.transpose(candidates)) * scale
    labels = ops.arange(ops.shape(y_pred)[0])
    return ops.mean(keras.losses.sparse_categorical_crossentropy(labels, logits,
                                                                 from_logits=True))


def cosent(y_true, y_pred, scale: float = 20.0):
    """log(1 + sum over pairs i, j with score_i > score_j of exp(scale * (cos_j - cos_i)))."""
    cosine = _pair_cosine(y_pred) * scale
    y_true = ops.cast(ops.reshape(y_true, (-1,)), "float32")
    difference = cosine[:, None] - cosine[None, :]  # cos_i - cos_j
    ordered = ops.cast(y_true[:, None] < y_true[None, :], "float32")  # score_i < score_j
    difference = difference - (1.0 - ordered) * 1e12
    flat = ops.concatenate([ops.zeros((1,), "float32"), ops.reshape(difference, (-1,))])
    return ops.logsumexp(flat)


def cosine_mse(y_true, y_pred):
    y_true = ops.cast(ops.reshape(y_true, (-1,)), "float32")
    return ops.mean(ops.square(_pair_cosine(y_pred) - y_true))


class _PairLoss(keras.losses.Loss):
    def __init__(self, scale: float = 20.0, name=None, reduction="sum_over_batch_size",
                 dtype=None):
        super().__init__(name=name or self.default_name, reduction=reduction, dtype=dtype)
        self.scale = float(scale)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


@keras.saving.register_keras_serializable(package="keras_bert")
class MultipleNegativesRankingLoss(_PairLoss):
    """sentence-transformers' `MultipleNegativesRankingLoss`: (anchor, positive[,
    negatives...]) examples, every other positive and negative in the batch a negative;
    `y_true` is ignored."""

    default_name = "multiple_negatives_ranking_loss"

    def call(self, y_true, y_pred):
        return multiple_negatives_ranking(y_pred, self.scale)


@keras.saving.register_keras_serializable(package="keras_bert")
class CoSENTLoss(_PairLoss):
    """sentence-transformers' `CoSENTLoss` on scored pairs."""

    default_name = "cosent_loss"

    def call(self, y_true, y_pred):
        return cosent(y_true, y_pred, self.scale)


@keras.saving.register_keras_serializable(package="keras_bert")
class CosineSimilarityLoss(keras.losses.Loss):
    """sentence-transformers' `CosineSimilarityLoss`: (cosine - score)^2, scores in
    [0, 1]."""

    def __init__(self, name="cosine_similarity_loss", reduction="sum_over_batch_size",
                 dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        return cosine_mse(y_true, y_pred)


@keras.saving.register_keras_serializable(package="keras_bert")
class SentencePairLoss(_PairLoss):
    """`compile()`'s choice: `CoSENTLoss` for a batch of scored pairs, else (its scores
    NaN: pairs without scores, or triplets) `MultipleNegativesRankingLoss`."""

    default_name = "sentence_pair_loss"

    def call(self, y_true, y_pred):
        scored = ops.logical_not(ops.any(ops.isnan(ops.cast(y_true, "float32"))))
        # Both are cheap ([batch, batch] matrices); NaN scores never reach CoSENT.
        safe = ops.where(ops.isnan(ops.cast(y_true, "float32")), 0.0,
                         ops.cast(y_true, "float32"))
        ranked = multiple_negatives_ranking(y_pred, self.scale)
        if y_pred.shape[1] is not None and y_pred.shape[1] != 2:
            return ranked  # triplets and more: scores make no sense
        return ops.where(scored, cosent(safe, y_pred, self.scale), ranked)
