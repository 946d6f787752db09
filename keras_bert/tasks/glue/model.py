"""The GLUE family's task model: `BertClassifier`, sentence or sentence-pair
classification (or regression) from the pooled [CLS] output (paper §4.1), with its
raw-text face (`from_preset`, `fit` on strings, `classify`, `export`).

Its registered name (`keras_bert>BertClassifier`) is what saved `.keras` files refer to.
"""

from __future__ import annotations

import keras

from keras_bert.model.encoder import BertEncoder
from keras_bert.tasks.task_model import ClassifierFace, DenseHeadTask


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(ClassifierFace, DenseHeadTask):
    """Sentence or sentence-pair classification from the pooled [CLS] output (paper §4.1).

    With `num_classes=1` it is a regressor (e.g. STS-B) trained with mean squared error.
    Output: float32 logits [batch, num_classes].

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)),
    ...                        num_classes=3)
    >>> x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 8), "int32")}
    >>> tuple(model(x).shape)
    (2, 3)
    """

    config_fields = ("num_classes", "dropout")

    def __init__(self, encoder: BertEncoder, num_classes: int = 2, dropout: float | None = None,
                 name: str = "bert_classifier", **kwargs):
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1 (1 means regression), got {num_classes}.")
        super().__init__(encoder, units=num_classes, dropout=dropout, output="pooled_output",
                         name=name, **kwargs)
        self.num_classes = num_classes

    def default_loss(self):
        if self.num_classes == 1:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        if self.num_classes == 1:
            return [keras.metrics.MeanSquaredError(name="mse")]
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    @classmethod
    def from_keras_hub_preset(cls, path, dtype=None):
        """The backbone and head of a keras-hub `BertTextClassifier` preset (ids in,
        logits out; `from_preset` adds the preprocessor); see
        `load_keras_hub_classifier`."""
        return load_keras_hub_classifier(path, dtype=dtype, cls=cls)


def load_keras_hub_classifier(path, dtype=None, cls=None) -> BertClassifier:
    """A `BertClassifier` with the backbone and head of a keras-hub `BertTextClassifier`
    preset at `path` (of `cls`, a subclass, when given). It outputs logits: a preset
    whose `activation` is not linear (e.g. "softmax") outputs that activation of them in
    keras-hub.

    >>> import tempfile
    >>> load_keras_hub_classifier(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.InputNotFoundError: keras-hub preset ... has no config.json.
    """
    import logging
    import os

    from keras_bert.checkpoints.keras_hub import (
        KERAS_HUB_TASK,
        load_keras_hub_encoder,
        read_keras_hub_config,
        read_keras_hub_task,
    )
    from keras_bert.core.errors import CheckpointError

    config = read_keras_hub_config(path)
    task = read_keras_hub_task(path)
    if task is None:
        raise CheckpointError(f"keras-hub preset {os.fspath(path)!r} has no {KERAS_HUB_TASK}: "
                              "it is a backbone; load it with load_encoder.")
    encoder = load_keras_hub_encoder(path, BertEncoder(config, dtype=dtype))
    model = (cls or BertClassifier)(encoder, num_classes=task.num_classes,
                                    dropout=task.dropout)
    head = model.get_layer("logits")
    head.kernel.assign(task.kernel)
    head.bias.assign(task.bias)
    if task.activation != "linear":
        logging.getLogger("keras_bert").info("%s: keras-hub applies %r to these logits.",
                                             path, task.activation)
    return model
