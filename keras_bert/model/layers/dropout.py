"""Dropout with a cheaper random mask: 16 random bits an element instead of a float.

Keras's `Dropout` draws one uniform float per element (TensorFlow's
`stateless_dropout`), compares it with the rate and selects. On CPU the random numbers
are most of its cost, and dropout is a fifth of a mixed_bfloat16 pretraining step
(`benchmarks/profile_step.py`). `BertDropout` draws half as many 32-bit Philox words and
reads each as two 16-bit numbers: an element is dropped when its number is below
`round(rate * 65536)`, so the rate is kept to within 2**-17 (0.1 → 0.1000061), and kept
elements are scaled by 1 / (1 - rate) as in Keras. The mask is one multiply forward and
one backward. Randomness comes from the layer's `keras.random.SeedGenerator`, as in
`keras.layers.Dropout`, so `keras.utils.set_random_seed` fixes it.
"""

import keras
import tensorflow as tf

_BITS = 16
_LEVELS = 1 << _BITS


def dropout_threshold(rate: float) -> int:
    """The 16-bit number below which an element is dropped.

    Example:

    >>> dropout_threshold(0.1), round(dropout_threshold(0.1) / 65536, 7)
    (6554, 0.1000061)
    """
    return min(_LEVELS - 1, max(1, round(rate * _LEVELS)))


def keep_mask(shape, rate: float, seed, dtype):
    """A [shape] tensor of 1 / (1 - rate) where an element is kept and 0 where dropped.

    `seed` is a shape-[2] integer tensor, as for `tf.random.stateless_uniform`.

    Example:

    >>> m = keep_mask((1000,), 0.5, tf.constant([1, 2]), "float32")
    >>> sorted(set(m.numpy().tolist()))
    [0.0, 2.0]
    """
    size = tf.reduce_prod(shape)
    words = tf.random.stateless_uniform(((size + 1) // 2,), seed, minval=None, maxval=None,
                                        dtype=tf.uint32)
    numbers = tf.reshape(tf.bitcast(words, tf.uint16), (-1,))[:size]
    keep = tf.reshape(numbers >= tf.constant(dropout_threshold(rate), tf.uint16), shape)
    # A cast and a multiply: a third faster than selecting between two scalars.
    return tf.cast(keep, dtype) * tf.constant(1.0 / (1.0 - rate), dtype)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` with the 16-bit mask of this module (same arguments).

    With `noise_shape` it is Keras's own dropout.

    Example:

    >>> layer = BertDropout(0.5, seed=1)
    >>> y = layer(keras.ops.ones((4, 256)), training=True)
    >>> sorted(set(y.numpy().ravel().tolist()))
    [0.0, 2.0]
    >>> 0.4 < float(keras.ops.mean(y)) / 2 < 0.6
    True
    """

    def call(self, inputs, training=False):
        if not training or self.rate == 0 or self.noise_shape is not None:
            return super().call(inputs, training=training)
        if self.rate >= 1:
            return tf.zeros_like(inputs)
        seed = self.seed_generator.next()
        # XLA wants int32 stateless seeds; the generator's state may be int64 or uint32.
        seed = tf.cast(tf.math.floormod(tf.cast(seed, tf.int64), 2**31 - 1), tf.int32)
        return inputs * keep_mask(tf.shape(inputs), self.rate, seed, inputs.dtype)
