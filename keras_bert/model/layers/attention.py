"""Multi-head self-attention as BERT computes it, with the softmax kept in float32."""

import keras
from keras import ops

from keras_bert.model import tf_fast
from keras_bert.model.layers.dropout import BertDropout

# The additive mask google-research/bert applies to padded keys before the softmax.
MASK_BIAS = -10000.0


def dense_rows(rows, kernel, bias, dtype, scale=None):
    """`rows @ kernel + bias`: a projection of the 2-D `rows` [n, in].

    `kernel` is any Dense/EinsumDense kernel whose leading axes multiply to `in` (it is
    reshaped to [in, out]); `scale`, if given, multiplies kernel and bias (cheaper than
    scaling the product). On TensorFlow it is `tf_fast.dense_rows` (one MatMul and a
    BiasAdd, the fastest form for TF's CPU kernels).

    Example:

    >>> y = dense_rows(ops.ones((2, 4)), ops.ones((4, 2, 3)), ops.zeros((2, 3)), "float32")
    >>> tuple(y.shape), float(y[0, 0])
    ((2, 6), 4.0)
    """
    if tf_fast.ENABLED:
        return tf_fast.dense_rows(rows, kernel, bias, dtype, scale)
    kernel = ops.reshape(ops.cast(kernel, dtype), (rows.shape[-1], -1))
    bias = ops.reshape(ops.cast(bias, dtype), (-1,))
    if scale is not None:
        kernel, bias = kernel * scale, bias * scale
    return ops.matmul(rows, kernel) + bias


def quantized(*layers) -> bool:
    """Whether any of `layers` (Dense, EinsumDense, Embedding) holds quantized weights
    (`Model.quantize`). Its `kernel` (`embeddings`) is then the raw int8 or int4 tensor,
    without its scale: only the layer's own call computes its output, so the layers of
    this package call it instead of multiplying by the kernel, and leave their TensorFlow
    fast paths (`tf_fast`), which read kernels, to float layers.

    Example:

    >>> dense = keras.layers.EinsumDense("ab,bc->ac", output_shape=4)
    >>> dense.build((None, 8))
    >>> before = quantized(dense)
    >>> dense.quantize("int8")
    >>> before, quantized(dense), str(dense.kernel.dtype)
    (False, True, 'int8')
    """
    return any(layer.quantization_mode is not None for layer in layers)


def attention_bias(input_mask, dtype="float32"):
    """Turns an input mask [batch, seq] (1 = real token) into an additive bias.

    The result has shape [batch, 1, 1, seq] and broadcasts over heads and queries:
    0 where a key may be attended to, -10000 where it is padding.
    """
    mask = ops.cast(input_mask, dtype)
    return ops.expand_dims(ops.expand_dims((1.0 - mask) * MASK_BIAS, 1), 1)


def attention_output_spec(x, num_heads, dtype, return_probs=False):
    """The symbolic outputs of a layer that maps `x` [batch, seq, H] to the same shape and,
    with `return_probs`, also gives attention probabilities [batch, heads, seq, seq]."""
    out = keras.KerasTensor(x.shape, dtype=dtype)
    if not return_probs:
        return out
    probs_shape = (x.shape[0], num_heads, x.shape[1], x.shape[1])
    return out, keras.KerasTensor(probs_shape, dtype=dtype)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over A heads with query/key/value/output projections.

    The projections are `keras.layers.EinsumDense` with the same kernel layout as
    `keras.layers.MultiHeadAttention` ([H, A, H/A] for query/key/value and
    [A, H/A, H] for the output), so weights move between the two unchanged. Unlike
    `MultiHeadAttention`, the masked softmax always runs in float32, also under the
    `mixed_float16` / `mixed_bfloat16` policies, and the mask is BERT's additive bias.

    Args:
        num_heads: A.
        head_size: H / A.
        dropout: dropout rate on the attention probabilities.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        x: [batch, seq, H].
        bias: additive attention bias [batch, 1, 1, seq] from `attention_bias`.
        return_probs: also return the attention probabilities [batch, A, seq, seq].

    Example:

    >>> layer = BertSelfAttention(num_heads=2, head_size=4)
    >>> x = keras.ops.ones((1, 3, 8))
    >>> tuple(layer(x, attention_bias(keras.ops.ones((1, 3)))).shape)
    (1, 3, 8)
    """

    def __init__(self, num_heads, head_size, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_size = head_size
        self.dropout_rate = dropout
        self.initializer_range = initializer_range
        hidden = num_heads * head_size
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)

        def projection(name):
            return keras.layers.EinsumDense(
                "abc,cde->abde", output_shape=(None, num_heads, head_size), bias_axes="de",
                kernel_initializer=init, dtype=self.dtype_policy, name=name)

        self.query = projection("query")
        self.key = projection("key")
        self.value = projection("value")
        self.output_dense = keras.layers.EinsumDense(
            "abcd,cde->abe", output_shape=(None, hidden), bias_axes="e",
            kernel_initializer=init, dtype=self.dtype_policy, name="attention_output")
        self.dropout = BertDropout(dropout, dtype=self.dtype_policy, name="dropout")
        self._scale = 1.0 / float(head_size) ** 0.5

    def build(self, input_shape):
        for layer in (self.query, self.key, self.value):
            layer.build(input_shape)
        self.output_dense.build((None, None, self.num_heads, self.head_size))
        self.built = True

    def call(self, x, bias, training=None, return_probs=False):
        projections = (self.query, self.key, self.value, self.output_dense)
        if tf_fast.ENABLED and not quantized(*projections):
            return tf_fast.self_attention(self, x, bias, training, return_probs)
        # The projections use the EinsumDense kernels as plain [H, H] matrices on the
        # [batch * seq, H] rows; the 1/sqrt(H/A) scale is folded into the query kernel
        # and bias instead of scaling the scores. A quantized projection is the layer's
        # own call (its kernel alone lacks the scale).
        dtype = self.compute_dtype
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        rows = ops.reshape(x, (-1, x.shape[-1]))

        def heads(layer, scale=None):
            if quantized(layer):
                y = layer(x) if scale is None else layer(x) * scale
            else:
                y = dense_rows(rows, layer.kernel, layer.bias, dtype, scale)
                y = ops.reshape(y, (batch, seq, self.num_heads, self.head_size))
            return ops.transpose(y, (0, 2, 1, 3))           # [batch, A, seq, H/A]

        q = heads(self.query, self._scale)
        k, v = heads(self.key), heads(self.value)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))  # [batch, A, seq, seq]
        probs = ops.softmax(ops.cast(scores, "float32") + ops.cast(bias, "float32"), axis=-1)
        probs = ops.cast(probs, dtype)
        context = ops.matmul(self.dropout(probs, training=training), v)
        context = ops.transpose(context, (0, 2, 1, 3))      # [batch, seq, A, H/A]
        if quantized(self.output_dense):
            out = self.output_dense(context)
        else:
            context = ops.reshape(context, (-1, self.num_heads * self.head_size))
            out = dense_rows(context, self.output_dense.kernel, self.output_dense.bias, dtype)
            out = ops.reshape(out, (batch, seq, out.shape[-1]))
        return (out, probs) if return_probs else out

    def compute_output_spec(self, x, bias, training=None, return_probs=False):
        return attention_output_spec(x, self.num_heads, self.compute_dtype, return_probs)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads,
                "head_size": self.head_size, "dropout": self.dropout_rate,
                "initializer_range": self.initializer_range}
