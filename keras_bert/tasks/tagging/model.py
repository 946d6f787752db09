"""The tagging family's task models (paper §5.3): `BertTokenClassifier` (per-token
logits), `BertNerTagger` (fine-tuned) and `BertFeatureBasedTagger` (the frozen encoder's features into a BiLSTM, Table 7), with
the loss and `MaskedTokenAccuracy` that skip the positions labelled `IGNORE_LABEL`.

Each has the raw-text face (`from_preset`, `fit` on strings, `tag`, `export`). Their
registered names (`keras_bert>BertTokenClassifier`, `keras_bert>BertNerTagger`, ...) are what saved `.keras` files
refer to.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
from keras import ops

from keras_bert.model.encoder import BertEncoder
from keras_bert.tasks.labels import IGNORE_LABEL
from keras_bert.tasks.task_model import (
    BertFeatureExtractor,
    DenseHeadTask,
    TaggerFace,
    TaskModel,
)

__all__ = ["IGNORE_LABEL", "BertFeatureBasedTagger", "BertNerTagger", "BertTokenClassifier",
           "MaskedTokenAccuracy"]


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(TaggerFace, DenseHeadTask):
    """Per-token tagging, e.g. NER (paper §5.3): float32 logits [batch, seq, num_classes].

    Pass `sample_weight=input_mask` (or a first-sub-token mask) to `fit` so padding and
    continuation pieces do not count.

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertTokenClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)),
    ...                             num_classes=9)
    >>> x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 8), "int32")}
    >>> tuple(model(x).shape)
    (2, 8, 9)
    """

    config_fields = ("num_classes", "dropout")

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout: float | None = None,
                 name: str = "bert_token_classifier", **kwargs):
        if num_classes < 2:
            raise ValueError(f"num_classes must be >= 2 for tagging, got {num_classes}.")
        super().__init__(encoder, units=num_classes, dropout=dropout, output="sequence_output",
                         name=name, **kwargs)
        self.num_classes = num_classes


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedTokenAccuracy(keras.metrics.Metric):
    """Accuracy over the token positions whose label is not `ignore_label`.

    Example:

    >>> import numpy as np
    >>> m = MaskedTokenAccuracy()
    >>> m.update_state(np.array([[1, -1, 0]]), np.array([[[0., 1.], [1., 0.], [0., 1.]]]))
    >>> float(m.result())
    0.5
    """

    def __init__(self, ignore_label: int = IGNORE_LABEL, name: str = "accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.ignore_label = ignore_label
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        weight = ops.cast(ops.not_equal(y_true, self.ignore_label), "float32")
        if sample_weight is not None:
            weight = weight * ops.cast(ops.reshape(sample_weight, ops.shape(weight)), "float32")
        hit = ops.cast(ops.equal(ops.cast(ops.argmax(y_pred, axis=-1), "int32"), y_true),
                       "float32")
        self.correct.assign_add(ops.sum(hit * weight))
        self.count.assign_add(ops.sum(weight))

    def result(self):
        return ops.divide_no_nan(self.correct, self.count)

    def reset_state(self):
        self.correct.assign(0.0)
        self.count.assign(0.0)

    def get_config(self):
        return {"ignore_label": self.ignore_label, "name": self.name, "dtype": self.dtype}


def _tagging_loss():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                      ignore_class=IGNORE_LABEL)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertNerTagger(BertTokenClassifier):
    """`BertTokenClassifier` whose default loss and accuracy skip positions labelled
    `IGNORE_LABEL` (-1): continuation pieces, [CLS], [SEP] and padding. The loss is the
    mean over the labelled positions of the batch.

    Example:

    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertNerTagger(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)),
    ...                       num_classes=3)
    >>> type(model.default_loss()).__name__, model.default_loss().ignore_class
    ('SparseCategoricalCrossentropy', -1)
    """

    def __init__(self, encoder, num_classes: int, dropout: float | None = None,
                 name: str = "bert_ner_tagger", **kwargs):
        super().__init__(encoder, num_classes=num_classes, dropout=dropout, name=name,
                         **kwargs)

    def default_loss(self):
        return _tagging_loss()

    def default_metrics(self):
        return [MaskedTokenAccuracy(name="accuracy")]


@keras.saving.register_keras_serializable(package="keras_bert")
class BertFeatureBasedTagger(TaskModel):
    """The paper's feature-based NER (§5.3): the frozen encoder's hidden states of
    `layers` concatenated (the last four by default, the best of Table 7), a randomly
    initialized two-layer BiLSTM (`lstm_units` per direction, 768 in the paper) and a
    dense tagger. Output: float32 logits [batch, seq, num_classes].

    Only the BiLSTMs and the tagger train: the features come from a
    `BertFeatureExtractor` (inference mode, no gradient), and the encoder's variables
    are left out of this model's trainable weights without touching the encoder's own
    `trainable` flag. `compile()` without a loss skips `IGNORE_LABEL` positions; its
    default optimizer is Adam at 1e-3, since the BiLSTM starts from scratch.

    Args:
        encoder: a `BertEncoder`.
        num_classes: number of tags.
        lstm_units: units of each LSTM direction.
        layers: encoder layers whose outputs are concatenated.
        dropout: dropout on the BiLSTM output, before the tagger.

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> enc = BertEncoder(BertConfig.from_preset("tiny", vocab_size=50))
    >>> model = BertFeatureBasedTagger(enc, num_classes=5, lstm_units=8, layers=(-2, -1))
    >>> x = {"input_word_ids": np.ones((2, 6), "int32"), "input_mask": np.ones((2, 6), "int32"),
    ...      "input_type_ids": np.zeros((2, 6), "int32")}
    >>> tuple(model(x).shape), len(model.trainable_weights)  # 2 x 2 LSTMs x 3 + dense 2
    ((2, 6, 5), 14)
    >>> len(enc.trainable_weights) > 0  # the encoder object itself is left as it was
    True
    """

    def __init__(self, encoder, num_classes: int, lstm_units: int = 768,
                 layers: Sequence[int] = (-4, -3, -2, -1), dropout: float = 0.1,
                 name: str = "bert_feature_based_tagger", **kwargs):
        if num_classes < 2:
            raise ValueError(f"num_classes must be >= 2 for tagging, got {num_classes}.")
        if lstm_units < 1:
            raise ValueError(f"lstm_units must be >= 1, got {lstm_units}.")
        policy = encoder.dtype_policy
        extractor = BertFeatureExtractor(encoder, layers=layers, combine="concat")
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in ("input_word_ids", "input_mask", "input_type_ids")}
        x = extractor(inputs)
        mask = ops.not_equal(inputs["input_mask"], 0)
        for i in range(2):
            lstm = keras.layers.LSTM(lstm_units, return_sequences=True, dtype=policy)
            x = keras.layers.Bidirectional(lstm, dtype=policy, name=f"bilstm_{i + 1}")(
                x, mask=mask)
        x = keras.layers.Dropout(dropout, dtype=policy, name="tagger_dropout")(x)
        logits = keras.layers.Dense(num_classes, dtype=policy, name="logits")(x)
        super().__init__(encoder, inputs=inputs, outputs=ops.cast(logits, "float32"),
                         name=name, **kwargs)
        self.extractor = extractor
        self.num_classes = num_classes
        self.lstm_units = lstm_units
        self.layers_used = tuple(int(i) for i in layers)
        self.dropout = dropout

    def task_config(self):
        return {"num_classes": self.num_classes, "lstm_units": self.lstm_units,
                "layers": list(self.layers_used), "dropout": self.dropout}

    def default_loss(self):
        return _tagging_loss()

    def default_metrics(self):
        return [MaskedTokenAccuracy(name="accuracy")]

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Like `keras.Model.compile`; "auto" picks Adam(1e-3), the masked
        cross-entropy and `MaskedTokenAccuracy`."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(1e-3)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    # The frozen encoder: Keras collects trainable weights through every sublayer, so
    # the extractor's own freezing does not carry over to a model that contains it.
    def _frozen(self) -> set[int]:
        return {id(v) for v in self.extractor.variables}

    @property
    def trainable_weights(self):
        frozen = self._frozen()
        return [v for v in super().trainable_weights if id(v) not in frozen]

    @property
    def trainable_variables(self):
        frozen = self._frozen()
        return [v for v in super().trainable_variables if id(v) not in frozen]

    @property
    def non_trainable_weights(self):
        trainable = {id(v) for v in self.trainable_weights}
        return [v for v in self.weights if id(v) not in trainable]

    @property
    def non_trainable_variables(self):
        trainable = {id(v) for v in self.trainable_variables}
        return [v for v in self.variables if id(v) not in trainable]
