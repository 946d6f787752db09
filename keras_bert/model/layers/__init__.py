"""Keras layers that build BERT:

- `embeddings`: token + segment + position embeddings, LayerNorm and dropout;
- `attention`: multi-head self-attention and the attention bias of a mask;
- `transformer`: the post-LN transformer block and the activations;
- `dropout`: dropout with per-layer seed state;
- `heads`: the [CLS] pooler, the masked-LM head and position gathering.
"""

from keras_bert.model.layers.attention import BertSelfAttention, attention_bias
from keras_bert.model.layers.embeddings import BertEmbeddings
from keras_bert.model.layers.heads import BertPooler, MaskedLMHead, gather_positions
from keras_bert.model.layers.transformer import TransformerBlock, get_activation

__all__ = ["BertEmbeddings", "BertPooler", "BertSelfAttention", "MaskedLMHead",
           "TransformerBlock", "attention_bias", "gather_positions", "get_activation"]
