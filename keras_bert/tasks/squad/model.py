"""The SQuAD family's task model: `BertSpanLabeler`, start and end logits over the
sequence (paper §4.2/4.3), with its raw-text face (`from_preset`, `fit` on strings,
`answer`, `export`).

Its registered name (`keras_bert>BertSpanLabeler`) is what saved `.keras` files refer to.
"""

from __future__ import annotations

import keras

from keras_bert.model.encoder import BertEncoder
from keras_bert.model.models import encoder_inputs, float32_logits, head_initializer
from keras_bert.tasks.task_model import SpanFace, TaskModel


@keras.saving.register_keras_serializable(package="keras_bert")
class BertSpanLabeler(SpanFace, TaskModel):
    """SQuAD-style extractive QA: start and end logits over the sequence (paper §4.2/4.3).

    Outputs `start_logits` and `end_logits`, float32 [batch, seq]. Labels are the start
    and end token indices; SQuAD v2 "no answer" examples point both at [CLS] (index 0).
    Decode predictions with `keras_bert.tasks.squad.best_span`.

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertSpanLabeler(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)))
    >>> x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 8), "int32")}
    >>> tuple(model(x)["start_logits"].shape)
    (2, 8)
    """

    def __init__(self, encoder: BertEncoder, name: str = "bert_span_labeler", **kwargs):
        inputs = encoder_inputs(encoder)
        seq = encoder(inputs)["sequence_output"]
        logits = keras.layers.Dense(2, kernel_initializer=head_initializer(encoder),
                                    dtype=encoder.dtype_policy, name="span_logits")(seq)
        logits = float32_logits(logits)
        outputs = {"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}
        super().__init__(encoder, inputs=inputs, outputs=outputs, name=name, **kwargs)

    def default_loss(self):
        ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"start_logits": ce, "end_logits": ce}

    def default_metrics(self):
        return None

    def compile(self, optimizer="auto", loss="auto", metrics="auto", *,
                learning_rate: float | None = None, **kwargs):
        # The paper's objective is the mean of the start and end log-likelihoods.
        if loss == "auto":
            kwargs.setdefault("loss_weights", {"start_logits": 0.5, "end_logits": 0.5})
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        learning_rate=learning_rate, **kwargs)
