"""The layers after the encoder in a `BertTextEmbedder`, as sentence-transformers
computes them: `SentencePooling` (its pooling modes over the real tokens, in float32,
concatenated in the folder's order) and `L2Normalize` (its `Normalize` module).

Example:

>>> import numpy as np
>>> x = np.array([[[1., 2.], [3., 4.], [9., 9.]]], "float32")
>>> mask = np.array([[1, 1, 0]], "int32")
>>> np.asarray(SentencePooling(("mean", "max", "cls", "lasttoken"))(x, mask)).tolist()
[[2.0, 3.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]]
>>> np.asarray(L2Normalize()(np.array([[3., 4.]], "float32"))).tolist()
[[0.6000000238418579, 0.800000011920929]]
"""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.checkpoints.sentence_transformers import POOLING_MODES


@keras.saving.register_keras_serializable(package="keras_bert")
class SentencePooling(keras.layers.Layer):
    """Token vectors [batch, seq, width] and their `input_mask` -> one vector per
    sequence: each of `modes` (sentence-transformers' names: "cls", "max", "mean",
    "mean_sqrt_len_tokens", "weightedmean", "lasttoken") over the real tokens,
    concatenated. Computed in float32 whatever the encoder's precision."""

    def __init__(self, modes=("mean",), **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.modes = (modes,) if isinstance(modes, str) else tuple(modes)
        for mode in self.modes:
            if mode not in POOLING_MODES:
                raise ValueError(f"pooling mode {mode!r} is not one of {POOLING_MODES}.")

    def call(self, sequence, input_mask):
        # expand_dims, not `[..., None]`: LiteRT's converter leaves a new-axis slice as
        # an unresolved custom StridedSlice op.
        sequence = ops.cast(sequence, "float32")
        mask = ops.expand_dims(ops.cast(input_mask, "float32"), -1)
        count = ops.sum(mask, axis=1)
        out = []
        for mode in self.modes:
            if mode == "cls":  # right-padded: the first token is a real one
                out.append(sequence[:, 0])
            elif mode == "max":
                out.append(ops.max(ops.where(mask > 0, sequence, float("-inf")), axis=1))
            elif mode in ("mean", "mean_sqrt_len_tokens"):
                total = ops.sum(sequence * mask, axis=1)
                count = ops.maximum(count, 1e-9)
                out.append(total / (count if mode == "mean" else ops.sqrt(count)))
            elif mode == "weightedmean":  # token i (from 1) weighs i
                positions = ops.arange(1, ops.shape(sequence)[1] + 1, dtype="float32")
                weights = mask * ops.reshape(positions, (1, -1, 1))
                out.append(ops.sum(sequence * weights, axis=1)
                           / ops.maximum(ops.sum(weights, axis=1), 1e-9))
            else:  # lasttoken: the last real token
                last = ops.cast(ops.sum(input_mask, axis=1), "int32") - 1
                out.append(ops.take_along_axis(sequence, ops.reshape(last, (-1, 1, 1)),
                                               axis=1)[:, 0])
        return out[0] if len(out) == 1 else ops.concatenate(out, axis=-1)

    def compute_output_shape(self, sequence_shape, input_mask_shape=None):
        return (sequence_shape[0], sequence_shape[-1] * len(self.modes))

    def get_config(self):
        return {**super().get_config(), "modes": list(self.modes)}


@keras.saving.register_keras_serializable(package="keras_bert")
class L2Normalize(keras.layers.Layer):
    """`x / max(||x||, 1e-12)` on the last axis (torch's `F.normalize`, what
    sentence-transformers' `Normalize` applies)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)

    def call(self, x):
        norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
        return x / ops.maximum(norm, 1e-12)

    def compute_output_shape(self, shape):
        return shape
