"""Output layers on top of the encoder: the [CLS] pooler and the masked-LM head."""

import keras
from keras import ops

from keras_bert.model import tf_fast
from keras_bert.model.layers.attention import dense_rows, quantized
from keras_bert.model.layers.transformer import get_activation


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPooler(keras.layers.Layer):
    """tanh(W h_[CLS] + b): the sentence-level representation of paper §3 (Figure 1, C).

    Example:

    >>> pooler = BertPooler(hidden_size=8)
    >>> tuple(pooler(keras.ops.ones((2, 5, 8))).shape)
    (2, 8)
    """

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size, activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy, name="dense")

    def build(self, input_shape):
        self.dense.build((None, input_shape[-1]))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def compute_output_spec(self, sequence_output):
        return keras.KerasTensor((sequence_output.shape[0], self.hidden_size),
                                 dtype=self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "hidden_size": self.hidden_size,
                "initializer_range": self.initializer_range}


def gather_positions(sequence, positions):
    """Picks rows of `sequence` [batch, seq, H] at `positions` [batch, P] → [batch, P, H]."""
    positions = ops.cast(positions, "int32")
    return ops.take_along_axis(sequence, ops.expand_dims(positions, -1), axis=1)


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the original tokens at masked positions (the paper's MLM task).

    The hidden states at `masked_positions` go through a dense transform with the
    encoder's activation and a LayerNorm, then are scored against the word embedding
    table (the decoder weights are tied to the input embeddings) plus an output bias.
    Only the gathered positions are scored, never the whole sequence.

    Args:
        embedding: the `keras.layers.Embedding` holding the word embeddings to tie to.
            Not part of `get_config`: pass it again to `from_config`.
        hidden_act: activation of the transform (see `BertConfig.hidden_act`).
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal initializer.

    Call args:
        sequence_output: [batch, seq, H].
        masked_positions: int [batch, P].

    Returns:
        float32 logits [batch, P, vocab_size].

    Example:

    >>> emb = keras.layers.Embedding(50, 8)
    >>> emb.build()
    >>> head = MaskedLMHead(emb)
    >>> logits = head(keras.ops.ones((2, 6, 8)), keras.ops.zeros((2, 3), "int32"))
    >>> tuple(logits.shape)
    (2, 3, 50)
    """

    def __init__(self, embedding, hidden_act="gelu", layer_norm_eps=1e-12,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if embedding is None:
            raise ValueError("MaskedLMHead needs the word embedding layer to tie its "
                             "decoder to; pass `embedding=`.")
        self.embedding = embedding
        self.hidden_act = hidden_act
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        hidden = embedding.output_dim
        self.transform = keras.layers.Dense(
            hidden, activation=get_activation(hidden_act),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy, name="transform")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=self.dtype_policy, name="layer_norm")

    def build(self, input_shape=None):
        hidden = self.embedding.output_dim
        self.transform.build((None, None, hidden))
        self.layer_norm.build((None, None, hidden))
        self.output_bias = self.add_weight(name="output_bias",
                                           shape=(self.embedding.input_dim,),
                                           initializer="zeros")
        self.built = True

    def call(self, sequence_output, masked_positions):
        x = gather_positions(sequence_output, masked_positions)     # [batch, P, H]
        if tf_fast.ENABLED and not quantized(self.transform, self.embedding):
            return tf_fast.masked_lm_logits(self, x)
        batch, predictions = ops.shape(x)[0], ops.shape(x)[1]
        rows = ops.reshape(x, (-1, x.shape[-1]))
        dtype = self.compute_dtype
        if quantized(self.transform):
            rows = self.transform(rows)
        else:
            rows = self.transform.activation(dense_rows(
                rows, self.transform.kernel, self.transform.bias, dtype))
        rows = self.layer_norm(rows)
        # The decoder is tied to the [vocab, H] word embedding table; a quantized table
        # is read through the embedding's own call, which applies its scales.
        if quantized(self.embedding):
            table = self.embedding(ops.arange(self.embedding.input_dim, dtype="int32"))
        else:
            table = self.embedding.embeddings
        logits = ops.matmul(rows, ops.transpose(ops.cast(table, dtype)))
        logits = ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")
        return ops.reshape(logits, (batch, predictions, -1))

    def compute_output_spec(self, sequence_output, masked_positions):
        shape = (masked_positions.shape[0], masked_positions.shape[1], self.embedding.input_dim)
        return keras.KerasTensor(shape, dtype="float32")

    def get_config(self):
        return {**super().get_config(), "hidden_act": self.hidden_act,
                "layer_norm_eps": self.layer_norm_eps,
                "initializer_range": self.initializer_range}

    @classmethod
    def from_config(cls, config, embedding=None):
        return cls(embedding=embedding, **config)
