"""The post-LayerNorm transformer block of BERT (Vaswani et al. 2017, as used in the paper)."""

import keras
from keras import ops

from keras_bert.model import tf_fast
from keras_bert.model.layers.attention import (
    BertSelfAttention,
    attention_output_spec,
    dense_rows,
    quantized,
)
from keras_bert.model.layers.dropout import BertDropout

_SQRT_HALF = 0.7071067811865476


def gelu(x):
    """Exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (Hugging Face's "gelu").

    On TensorFlow it is `tf_fast.gelu` (a form grappler fuses into the preceding MatMul,
    whose bfloat16 gradient avoids the slow Erfc kernel).

    Example:

    >>> round(float(gelu(keras.ops.convert_to_tensor(1.0))), 6)
    0.841345
    """
    if tf_fast.ENABLED:
        return tf_fast.gelu(x)
    return 0.5 * x * (1.0 + ops.erf(x * _SQRT_HALF))


def gelu_tanh(x):
    """The tanh approximation of GELU (google-research/bert's "gelu"),
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).

    On TensorFlow it is `tf_fast.gelu_tanh` (`tf.nn.gelu(approximate=True)` in a graph).

    Example:

    >>> round(float(gelu_tanh(keras.ops.convert_to_tensor(1.0))), 6)
    0.841192
    """
    if tf_fast.ENABLED:
        return tf_fast.gelu_tanh(x)
    return keras.activations.gelu(x, approximate=True)


def get_activation(name):
    """Maps a `BertConfig.hidden_act` name to an activation function."""
    if name == "gelu":
        return gelu
    if name == "gelu_tanh":
        return gelu_tanh
    if name in ("relu", "tanh", "silu"):
        return keras.activations.get(name)
    raise ValueError(f"Unknown activation {name!r}; use gelu, gelu_tanh, relu, tanh or silu.")


@keras.saving.register_keras_serializable(package="keras_bert")
class TransformerBlock(keras.layers.Layer):
    """One BERT layer: self-attention and a feed-forward network, each followed by
    dropout, a residual connection and LayerNorm (post-LN).

    Args:
        num_heads: A.
        intermediate_size: I, the feed-forward width.
        hidden_act: activation name of the feed-forward layer (see `BertConfig`).
        dropout: dropout on sub-layer outputs.
        attention_dropout: dropout on attention probabilities.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        x: [batch, seq, H].
        bias: additive attention bias [batch, 1, 1, seq].
        return_probs: also return the attention probabilities.

    Example:

    >>> from keras_bert.model.layers.attention import attention_bias
    >>> block = TransformerBlock(num_heads=2, intermediate_size=32)
    >>> x = keras.ops.ones((2, 4, 8))
    >>> tuple(block(x, attention_bias(keras.ops.ones((2, 4)))).shape)
    (2, 4, 8)
    """

    def __init__(self, num_heads, intermediate_size, hidden_act="gelu", dropout=0.1,
                 attention_dropout=0.1, layer_norm_eps=1e-12, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.dropout_rate = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self._activation = get_activation(hidden_act)

    def build(self, input_shape):
        hidden = input_shape[-1]
        if hidden % self.num_heads:
            raise ValueError(f"TransformerBlock: hidden size {hidden} is not divisible by "
                             f"num_heads {self.num_heads}.")
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        policy = self.dtype_policy
        self.attention = BertSelfAttention(
            self.num_heads, hidden // self.num_heads, dropout=self.attention_dropout,
            initializer_range=self.initializer_range, dtype=policy, name="attention")
        self.attention_dropout_layer = BertDropout(self.dropout_rate, dtype=policy)
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_eps, dtype=policy, name="attention_layer_norm")
        self.intermediate = keras.layers.Dense(
            self.intermediate_size, kernel_initializer=init, dtype=policy, name="intermediate")
        self.output_dense = keras.layers.Dense(
            hidden, kernel_initializer=init, dtype=policy, name="output")
        self.output_dropout = BertDropout(self.dropout_rate, dtype=policy)
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_eps, dtype=policy, name="output_layer_norm")
        self.attention.build(input_shape)
        self.attention_layer_norm.build(input_shape)
        self.intermediate.build(input_shape)
        self.output_dense.build(tuple(input_shape[:-1]) + (self.intermediate_size,))
        self.output_layer_norm.build(input_shape)
        self.built = True

    def call(self, x, bias, training=None, return_probs=False):
        attn = self.attention(x, bias, training=training, return_probs=return_probs)
        if return_probs:
            attn, probs = attn
        x = self.attention_layer_norm(x + self.attention_dropout_layer(attn, training=training))
        h = self._feed_forward(x, training)
        x = self.output_layer_norm(x + h)
        return (x, probs) if return_probs else x

    def _feed_forward(self, x, training):
        # The feed-forward network on the [batch * seq, H] rows, like the attention; a
        # quantized layer is its own call (its kernel alone lacks the scale).
        if tf_fast.ENABLED and not quantized(self.intermediate, self.output_dense):
            return tf_fast.feed_forward(self, x, training)
        dtype = self.compute_dtype
        rows = ops.reshape(x, (-1, x.shape[-1]))
        h = self._activation(self._dense(self.intermediate, rows, dtype))
        h = self._dense(self.output_dense, h, dtype)
        return ops.reshape(self.output_dropout(h, training=training), ops.shape(x))

    @staticmethod
    def _dense(layer, rows, dtype):
        if quantized(layer):
            return layer(rows)
        return dense_rows(rows, layer.kernel, layer.bias, dtype)

    def compute_output_spec(self, x, bias, training=None, return_probs=False):
        return attention_output_spec(x, self.num_heads, self.compute_dtype, return_probs)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads,
                "intermediate_size": self.intermediate_size, "hidden_act": self.hidden_act,
                "dropout": self.dropout_rate, "attention_dropout": self.attention_dropout,
                "layer_norm_eps": self.layer_norm_eps,
                "initializer_range": self.initializer_range}
