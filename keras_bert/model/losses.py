"""The pretraining objective with global (not per-replica) averages.

`BertPretrainer.compile()` uses these by default; `keras_bert.training` re-exports them.

Keras averages a loss on each replica and then across replicas. For the masked-LM loss,
an average over the real predictions (`masked_lm_weights`), that would weight every
replica alike however many predictions it holds. `MaskedLMLoss` divides each replica's
sum by the weight summed over all replicas instead, so the loss, its gradient and the
logged `masked_lm_loss` are those of one device seeing the whole global batch.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.model import tf_fast


def sum_over_replicas(value):
    """Sums `value` over the replicas of the current `tf.distribute` strategy.

    Outside a replica context, or with one replica, it is `value` itself; so it is on
    the other backends, whose losses (under `keras.distribution` too) see the global
    batch.

    Example:

    >>> float(sum_over_replicas(keras.ops.convert_to_tensor(3.0)))
    3.0
    """
    if tf_fast.ENABLED:
        return tf_fast.sum_over_replicas(value)
    return value


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMLoss(keras.losses.Loss):
    """Masked-LM cross-entropy averaged over the real predictions of the global batch.

    Takes the `masked_lm_ids` [batch, P] as `y_true`, the logits [batch, P, vocab] as
    `y_pred` and `masked_lm_weights` [batch, P] (1 for a real prediction, 0 for padding)
    as `sample_weight`. Under a distribution strategy, each replica returns its share of
    the global average (its weighted sum over the global weight), which Keras's cross-
    replica gradient sum and loss tracking then add up exactly.

    Example:

    >>> import numpy as np
    >>> loss = MaskedLMLoss()
    >>> logits = np.log(np.array([[[0.5, 0.5], [0.9, 0.1]]], "float32"))
    >>> ids = np.array([[0, 1]])
    >>> round(float(loss(ids, logits, sample_weight=np.array([[1.0, 0.0]]))), 4)  # ln 2
    0.6931
    """

    def __init__(self, name: str = "masked_lm_loss", dtype=None):
        super().__init__(name=name, reduction="sum", dtype=dtype)

    def call(self, y_true, y_pred):
        return keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)

    def __call__(self, y_true, y_pred, sample_weight=None):
        losses = self.call(ops.convert_to_tensor(y_true), ops.cast(y_pred, "float32"))
        weights = (ops.ones_like(losses) if sample_weight is None
                   else ops.cast(ops.reshape(sample_weight, ops.shape(losses)), "float32"))
        total = ops.sum(losses * weights)
        return ops.divide_no_nan(total, sum_over_replicas(ops.sum(weights)))

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}


def pretraining_losses(next_sentence: bool = True) -> dict[str, keras.losses.Loss]:
    """The losses for `BertPretrainer.compile`: `MaskedLMLoss` for "masked_lm" and, with
    NSP, cross-entropy over the batch for "next_sentence" (an unweighted mean, which
    Keras already averages globally).

    Example:

    >>> sorted(pretraining_losses())
    ['masked_lm', 'next_sentence']
    """
    losses = {"masked_lm": MaskedLMLoss()}
    if next_sentence:
        losses["next_sentence"] = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return losses
