"""Adapting a trained task model: post-training quantization (`quantize`) and low-rank
adaptation (`enable_lora`), and the retracing both need: functions traced before
either keep the old weights, so they are dropped when the encoder's weights change.
"""

from __future__ import annotations

from keras_bert.core.errors import ArgumentError
from keras_bert.model import saving
from keras_bert.model.encoder import (
    check_lora_rank,
    check_mode_first,
    check_quantization_mode,
    nothing_to_quantize_unsaid,
)
from keras_bert.model.layers.attention import quantized


class Adaptation:
    """`quantize` and `enable_lora` for `BertTask` (which holds `encoder`)."""

    def __new__(cls, *args, **kwargs):
        model = super().__new__(cls, *args, **kwargs)
        check_mode_first(model)
        return model

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """`keras.Model.quantize` of the encoder and the heads, for the modes keras_bert
        computes correctly (`keras_bert.model.encoder.QUANTIZATION_MODES`; others raise
        an `ArgumentError` naming them).

        Example:

        >>> from keras_bert import BertClassifier, BertConfig, BertEncoder
        >>> model = BertClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)))
        >>> model.quantize("int8")
        >>> model.get_layer("logits").quantization_mode
        'int8'
        """
        check_quantization_mode(self, mode)
        with nothing_to_quantize_unsaid(self):
            super().quantize(mode, config=config, filters=filters, **kwargs)
        self.encoder._weights_replaced()

    def enable_lora(self, rank: int) -> None:
        """`BertEncoder.enable_lora(rank)` on this model's encoder: the attention's query
        and value projections learn low-rank updates, the rest of the encoder is frozen,
        and the task's own layers stay trainable. Call it before `compile()`.

        Example:

        >>> from keras_bert import BertClassifier, BertConfig, BertEncoder
        >>> model = BertClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)))
        >>> model.enable_lora(4)
        >>> sorted({w.path.split("/")[-1] for w in model.trainable_weights})
        ['bias', 'kernel', 'lora_kernel_a', 'lora_kernel_b']
        """
        rank = check_lora_rank(rank)  # before the frozen-encoder refusal
        if any(getattr(layer, "freezes_encoder", False) for layer in self._flatten_layers()):
            raise ArgumentError(
                f"enable_lora: {type(self).__name__} keeps its encoder frozen (its features "
                f"come from a BertFeatureExtractor), so LoRA factors would never train; "
                f"fine-tune a model that trains its encoder, e.g. BertTokenClassifier.",
                field="rank")
        self.encoder.enable_lora(rank)

    # Functions traced before `quantize`/`enable_lora` on the encoder keep old weights.
    def _forget_stale_functions(self):
        if self._encoder_revision != self.encoder.weights_revision:
            self._encoder_revision = self.encoder.weights_revision
            self.train_function = self.test_function = self.predict_function = None

    def make_train_function(self, force=False):
        self._forget_stale_functions()
        return super().make_train_function(force)

    def make_test_function(self, force=False):
        self._forget_stale_functions()
        return super().make_test_function(force)

    def make_predict_function(self, force=False):
        self._forget_stale_functions()
        return super().make_predict_function(force)

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        """`keras.Model.save` to a `.keras` file, written beside it and renamed into
        place (`keras_bert.model.saving`): an interrupted save leaves the previous
        file intact. Other suffixes (`.h5`) are refused, and so is a quantized model
        (its `.keras` file would not load back: the file records the float layers'
        config): save the float model and quantize after loading, or `export()` the
        quantized one."""
        if quantized(*self._flatten_layers()):
            raise ArgumentError(
                f"this {type(self).__name__} is quantized, and a quantized .keras file would "
                "not load back: save the float model and call quantize() after loading "
                "it, or export() the quantized model.", field="filepath")
        return saving.save_model(super().save, self, filepath, overwrite=overwrite,
                                 zipped=zipped, **kwargs)

    def save_weights(self, filepath, overwrite=True, max_shard_size=None):
        """`keras.Model.save_weights`; a `.weights.h5` file is written atomically."""
        return saving.save_weights(super().save_weights, filepath, overwrite=overwrite,
                                   max_shard_size=max_shard_size)

