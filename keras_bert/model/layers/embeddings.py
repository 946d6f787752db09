"""BERT's input embeddings: token + segment + learned position, then LayerNorm and dropout."""

import keras
from keras import ops

from keras_bert.model.layers.dropout import BertDropout


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEmbeddings(keras.layers.Layer):
    """Sums word, segment (token type) and absolute position embeddings (paper §3.2).

    Args:
        vocab_size: rows of the word embedding table.
        hidden_size: embedding width H.
        max_position_embeddings: rows of the learned position table; longer inputs
            are an error.
        type_vocab_size: rows of the segment table.
        dropout: dropout rate applied after the LayerNorm.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal initializer.

    Call args:
        input_word_ids: int tensor [batch, seq].
        input_type_ids: int tensor [batch, seq].

    Returns:
        A float tensor [batch, seq, hidden_size].

    Example:

    >>> layer = BertEmbeddings(vocab_size=100, hidden_size=8,
    ...                        max_position_embeddings=16, type_vocab_size=2)
    >>> ids = keras.ops.ones((2, 5), "int32")
    >>> tuple(layer(ids, keras.ops.zeros((2, 5), "int32")).shape)
    (2, 5, 8)
    """

    def __init__(self, vocab_size, hidden_size, max_position_embeddings=512,
                 type_vocab_size=2, dropout=0.1, layer_norm_eps=1e-12,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout_rate = dropout
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.word_embeddings = keras.layers.Embedding(
            vocab_size, hidden_size, embeddings_initializer=init,
            dtype=self.dtype_policy, name="word_embeddings")
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size, hidden_size, embeddings_initializer=init,
            dtype=self.dtype_policy, name="token_type_embeddings")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=self.dtype_policy, name="layer_norm")
        self.dropout = BertDropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape=None):
        self.word_embeddings.build()
        self.token_type_embeddings.build()
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range))
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_word_ids, input_type_ids, training=None):
        seq_len = ops.shape(input_word_ids)[1]
        if isinstance(seq_len, int) and seq_len > self.max_position_embeddings:
            raise ValueError(
                f"Input sequence length {seq_len} exceeds max_position_embeddings="
                f"{self.max_position_embeddings}; truncate inputs (e.g. "
                f"BertPreprocessor(seq_length={self.max_position_embeddings})).")
        x = self.word_embeddings(input_word_ids) + self.token_type_embeddings(input_type_ids)
        positions = ops.cast(self.position_embeddings[:seq_len], x.dtype)
        x = self.layer_norm(x + positions[None])
        return self.dropout(x, training=training)

    def compute_output_spec(self, input_word_ids, input_type_ids, training=None):
        return keras.KerasTensor(tuple(input_word_ids.shape) + (self.hidden_size,),
                                 dtype=self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size,
                "max_position_embeddings": self.max_position_embeddings,
                "type_vocab_size": self.type_vocab_size, "dropout": self.dropout_rate,
                "layer_norm_eps": self.layer_norm_eps,
                "initializer_range": self.initializer_range}
