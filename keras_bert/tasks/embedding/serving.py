"""Serving a `BertTextEmbedder`: its export's `serving_default` (ids) and `serve_text`
(raw text, tokenized and cut to the model's length inside) give `embedding`, float32
[batch, width], the vector `encode` gives (pooling, Dense and Normalize are in the
model's graph). The same in LiteRT (`serve_text` in LiteRT's text ops, the base class's
`serve_lite_text`) and ONNX (`serving_default` only), as for every family.
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert.export.serving import ModelServing


class EmbeddingServing(ModelServing):
    """A sentence embedder (`BertTextEmbedder`)."""

    kind = "embedding"

    def forward(self, model, inputs) -> dict:
        return {"embedding": tf.cast(model(inputs, training=False), tf.float32)}
