"""Serving a sentence (or sentence-pair) classifier or regressor: its outputs.

`serve_text` is the common one (tokenize, pack as in fine-tuning, run): `text`, and
`text_pair` for pair tasks. A classifier gives `logits` and `probabilities`
[batch, classes] and `label` (the class name stored in the model); a regressor
(STS-B) gives `score` [batch].
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert.export.serving import ModelServing, label_lookup


class ClassifierServing(ModelServing):
    """A sequence classifier (`BertClassifier`)."""

    kind = "classifier"

    def forward(self, model, inputs) -> dict:
        logits = tf.cast(model(inputs, training=False), tf.float32)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1)}

    def named_outputs(self, out: dict, inputs: dict) -> dict:
        best = tf.argmax(out["logits"], axis=-1, output_type=tf.int32)
        return {**out, "label": label_lookup(self.label_names, best)}


class RegressionServing(ModelServing):
    """A regressor (`BertClassifier` with one output: STS-B's similarity)."""

    kind = "regression"

    def forward(self, model, inputs) -> dict:
        return {"score": tf.cast(model(inputs, training=False), tf.float32)[:, 0]}
