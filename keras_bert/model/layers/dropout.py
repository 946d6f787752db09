"""Dropout with a cheaper random mask on TensorFlow: 16 random bits an element instead of
a float.

Keras's `Dropout` draws one uniform float per element (TensorFlow's
`stateless_dropout`), compares it with the rate and selects. On CPU the random numbers
are most of its cost, and dropout is a fifth of a mixed_bfloat16 pretraining step
(profiled once with the TensorFlow profiler: `git show
9273a48:benchmarks/profile_step.py`). On the TensorFlow backend `BertDropout` draws half as
many 32-bit Philox words and reads each as two 16-bit numbers (`tf_fast.keep_mask`): an
element is dropped when its number is below `round(rate * 65536)`, so the rate is kept to
within 2**-17 (0.1 → 0.1000061), and kept elements are scaled by 1 / (1 - rate) as in
Keras. The mask is one multiply forward and one backward. On the other backends it is
Keras's own dropout. Randomness comes from the layer's `keras.random.SeedGenerator`, as
in `keras.layers.Dropout`, so `keras.utils.set_random_seed` fixes it.
"""

import keras
from keras import ops

from keras_bert.model import tf_fast
from keras_bert.model.tf_fast import dropout_threshold

__all__ = ["BertDropout", "dropout_threshold"]


@keras.saving.register_keras_serializable(package="keras_bert")
class BertDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` with the 16-bit mask of this module on TensorFlow (same
    arguments).

    With `noise_shape`, or on another backend, it is Keras's own dropout.

    Example:

    >>> layer = BertDropout(0.5, seed=1)
    >>> y = layer(keras.ops.ones((4, 256)), training=True)
    >>> sorted(set(keras.ops.convert_to_numpy(y).ravel().tolist()))
    [0.0, 2.0]
    >>> 0.4 < float(keras.ops.mean(y)) / 2 < 0.6
    True
    """

    def call(self, inputs, training=False):
        if not training or self.rate == 0 or self.noise_shape is not None:
            return super().call(inputs, training=training)
        if tf_fast.ENABLED:
            return tf_fast.bert_dropout(self, inputs)
        if self.rate >= 1:
            return ops.zeros_like(inputs)
        return super().call(inputs, training=training)
