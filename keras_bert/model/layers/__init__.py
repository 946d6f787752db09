"""Keras layers that build BERT: embeddings, attention, transformer block and heads."""

from keras_bert.model.layers.attention import BertSelfAttention, attention_bias
from keras_bert.model.layers.embeddings import BertEmbeddings
from keras_bert.model.layers.heads import BertPooler, MaskedLMHead, gather_positions
from keras_bert.model.layers.transformer import TransformerBlock, get_activation

__all__ = ["BertEmbeddings", "BertPooler", "BertSelfAttention", "MaskedLMHead",
           "TransformerBlock", "attention_bias", "gather_positions", "get_activation"]
