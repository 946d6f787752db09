"""The multiple-choice family's task model: `BertMultipleChoice` (SWAG, paper §4.4),
with its raw-text face (`from_preset`, `fit` on strings, `choose`, `export`), and the
`_FoldChoices` layer that folds the choices into the batch.

Their registered names (`keras_bert>BertMultipleChoice`, `keras_bert>_FoldChoices`) are
what saved `.keras` files refer to.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.model.encoder import INPUT_NAMES, BertEncoder
from keras_bert.tasks.task_model import ChoiceFace, DenseHeadTask


@keras.saving.register_keras_serializable(package="keras_bert")
class _FoldChoices(keras.layers.Layer):
    """[batch, choices, seq] -> [batch * choices, seq]; the seq length is only known at
    call time, so this cannot be a static `Reshape`."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_spec(self, x):
        batch = None if x.shape[0] is None or x.shape[1] is None else x.shape[0] * x.shape[1]
        return keras.KerasTensor((batch, x.shape[-1]), dtype=x.dtype)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoice(ChoiceFace, DenseHeadTask):
    """SWAG-style multiple choice (paper §4.4): each (context, choice) pair is encoded,
    its pooled output scored by one dense unit, and the scores softmaxed over choices.

    Inputs are the encoder dict with int32 tensors shaped [batch, num_choices, seq].
    Output: float32 logits [batch, num_choices].

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertMultipleChoice(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)),
    ...                            num_choices=4)
    >>> x = {"input_word_ids": np.ones((2, 4, 8), "int32"),
    ...      "input_mask": np.ones((2, 4, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 4, 8), "int32")}
    >>> tuple(model(x).shape)
    (2, 4)
    """

    config_fields = ("num_choices", "dropout")

    def __init__(self, encoder: BertEncoder, num_choices: int, dropout: float | None = None,
                 name: str = "bert_multiple_choice", **kwargs):
        if num_choices < 2:
            raise ValueError(f"num_choices must be >= 2, got {num_choices}.")
        inputs = {name: keras.Input(shape=(num_choices, None), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        flat = {k: _FoldChoices(name=f"fold_{k}")(v) for k, v in inputs.items()}
        super().__init__(encoder, units=1, dropout=dropout, output="pooled_output",
                         inputs=inputs, encoder_inputs=flat, head_name="choice_score",
                         logits_shape=(-1, num_choices), name=name, **kwargs)
        self.num_choices = num_choices
