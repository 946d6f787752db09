"""BertEncoder: the BERT network as a functional keras.Model with TF Hub input/output names."""

from __future__ import annotations

import contextlib
import functools
import re
import warnings

import keras
import numpy as np

from keras_bert.core.errors import ArgumentError
from keras_bert.model import saving, tf_fast
from keras_bert.model.config import BertConfig
from keras_bert.model.layers import BertEmbeddings, BertPooler, TransformerBlock, attention_bias

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")

# The `Model.quantize` modes whose results keras_bert's layers compute correctly (a
# quantized sublayer computes its own projection, see `layers.attention.quantized`).
# Keras's "gptq" and "awq" calibrate block by block through
# `get_quantization_layer_structure`, whose blocks take the hidden states alone; a BERT
# block also needs the attention bias, so these models do not offer them.
QUANTIZATION_MODES = ("int8", "int4", "float8")


def check_quantization_mode(model, mode) -> None:
    """Raises an `ArgumentError` unless `mode` is one of `QUANTIZATION_MODES`. The
    `quantize` of the encoder and the task models call it with the mode Keras resolved
    (from `mode` or a `keras.quantizers` config; Keras itself rejects unknown modes and a
    "gptq" or "awq" without its config), before any layer changes.

    Example:

    >>> check_quantization_mode(None, "int8")
    >>> check_quantization_mode(None, "gptq")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: quantize(mode='gptq') is not supported by ...
    """
    if mode in QUANTIZATION_MODES:
        return
    owner = type(model).__name__ if model is not None else "keras_bert's models"
    why = (": it calibrates block by block and a BERT block needs the attention bias "
           "besides the hidden states" if mode in ("gptq", "awq") else "")
    raise ArgumentError(
        f"quantize(mode={mode!r}) is not supported by {owner}{why}. Use one of "
        f"{', '.join(map(repr, QUANTIZATION_MODES))}.", field="mode")


def check_lora_rank(rank) -> int:
    """`rank` of `enable_lora` as an int, or `ArgumentError` if it is no positive integer."""
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise ArgumentError(f"enable_lora: rank must be a positive integer (e.g. 4 or 8), "
                            f"got {rank!r}.", field="rank")
    return int(rank)


def check_mode_first(model) -> None:
    """Makes `model.quantize` check its mode (`check_quantization_mode`) before Keras
    does: Keras wraps each instance's `quantize` in one that refuses an unknown mode
    itself, listing modes ("gptq", "awq") that keras_bert's models do not offer. Called
    from `__new__`, right after Keras installs its wrapper."""
    keras_quantize = model.quantize

    @functools.wraps(keras_quantize)
    def quantize(mode=None, config=None, **kwargs):
        if mode is not None:
            check_quantization_mode(model, mode)
        return keras_quantize(mode=mode, config=config, **kwargs)

    model.quantize = quantize


@contextlib.contextmanager
def nothing_to_quantize_unsaid(model):
    """Within the block, `keras.Model.quantize`'s warning that a layer "does not have a
    `quantize` method implemented" is left out for the kinds of layer in `model` that
    hold no kernel and no embedding table (inputs, LayerNorm, dropout, activations):
    they have nothing to quantize, and a user can do nothing about it. A layer kind with
    weights to quantize and no `quantize` still warns."""
    leaves = [layer for layer in model._flatten_layers(include_self=False)
              if len(list(layer._flatten_layers())) == 1]
    quantizable = {type(layer).__name__ for layer in leaves
                   if {w.name for w in layer.weights} & {"kernel", "embeddings"}}
    with warnings.catch_warnings():
        for kind in {type(layer).__name__ for layer in leaves} - quantizable:
            warnings.filterwarnings(
                "ignore", message=f"Layer {re.escape(kind)} does not have a `quantize` method",
                category=UserWarning)
        yield


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEncoder(keras.Model):
    """The bidirectional Transformer encoder of BERT (paper §3, Figure 1).

    Inputs are the TF Hub BERT dict of int32 tensors shaped [batch, seq]:
    `input_word_ids` (WordPiece ids), `input_mask` (1 for real tokens, 0 for padding)
    and `input_type_ids` (segment A = 0, B = 1). Outputs are a dict with
    `sequence_output` [batch, seq, H] (the last layer), `pooled_output` [batch, H]
    (tanh-pooled [CLS]), `encoder_outputs` (a list of L tensors [batch, seq, H], one per
    layer, for the paper's feature-based approach) and, with `output_attentions=True`,
    `attention_probs` (L tensors [batch, A, seq, seq]).

    Args:
        config: a `BertConfig` (or its dict form).
        output_attentions: also return the attention probabilities of every layer.
        dtype: a dtype policy for all layers, e.g. "mixed_bfloat16"; defaults to
            the global policy.
        lora_rank: if set, `enable_lora(lora_rank)` once built (how a `.keras` file
            restores a LoRA encoder).

    Example:

    >>> import numpy as np
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
    >>> batch = {"input_word_ids": np.array([[2, 7, 9, 3, 0]], "int32"),
    ...          "input_mask": np.array([[1, 1, 1, 1, 0]], "int32"),
    ...          "input_type_ids": np.zeros((1, 5), "int32")}
    >>> out = encoder(batch)
    >>> tuple(out["sequence_output"].shape), len(out["encoder_outputs"])
    ((1, 5, 128), 2)

    On the TensorFlow backend, called eagerly for inference (`encoder(inputs)` in a
    notebook, `training` not True), the encoder runs as one `tf.function` traced once per
    input signature (`reduce_retracing`: after a second shape the batch and sequence axes
    stay unknown), not layer by layer: 1.4x the eager rate on a CPU
    (`benchmarks/pretraining_throughput.py --forward`; `tf_fast.eager_inference`).
    `compile_eager_calls = False` turns that off.

    `quantize("int8")` (or "int4", "float8"; `QUANTIZATION_MODES`) quantizes the dense
    layers and embeddings after training, as `keras.Model.quantize`; `enable_lora(rank)`
    readies the encoder for low-rank fine-tuning. Both drop what was compiled or traced
    with the old weights, also in the task models on this encoder.
    """

    compile_eager_calls = True

    def __new__(cls, *args, **kwargs):
        encoder = super().__new__(cls, *args, **kwargs)
        check_mode_first(encoder)
        return encoder

    def __init__(self, config: BertConfig | dict, output_attentions: bool = False,
                 dtype=None, lora_rank: int | None = None, name: str = "bert_encoder",
                 **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        if not isinstance(config, BertConfig):
            raise TypeError(f"BertEncoder needs a BertConfig, got {type(config).__name__}.")

        # === Layers ===
        embeddings = BertEmbeddings(
            vocab_size=config.vocab_size, hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size, dropout=config.hidden_dropout,
            layer_norm_eps=config.layer_norm_eps,
            initializer_range=config.initializer_range, dtype=dtype, name="embeddings")
        blocks = [
            TransformerBlock(
                num_heads=config.num_heads, intermediate_size=config.intermediate_size,
                hidden_act=config.hidden_act, dropout=config.hidden_dropout,
                attention_dropout=config.attention_dropout,
                layer_norm_eps=config.layer_norm_eps,
                initializer_range=config.initializer_range, dtype=dtype,
                name=f"transformer_layer_{i}")
            for i in range(config.num_layers)
        ]
        pooler = BertPooler(config.hidden_size, initializer_range=config.initializer_range,
                            dtype=dtype, name="pooler")

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        x = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
        bias = attention_bias(inputs["input_mask"])
        layer_outputs, probs = [], []
        for block in blocks:
            if output_attentions:
                x, p = block(x, bias, return_probs=True)
                probs.append(p)
            else:
                x = block(x, bias)
            layer_outputs.append(x)
        outputs = {"sequence_output": x, "pooled_output": pooler(x),
                   "encoder_outputs": layer_outputs}
        if output_attentions:
            outputs["attention_probs"] = probs
        super().__init__(inputs=inputs, outputs=outputs, name=name, **kwargs)
        # Keras' functional models ignore `dtype`: set the policy its layers use, so that
        # `dtype_policy` (which task heads follow) and `get_config` report it.
        if dtype is not None:
            self.dtype_policy = dtype

        # === Attributes ===
        self.config = config
        self.output_attentions = output_attentions
        self.embeddings = embeddings
        self.transformer_layers = blocks
        self.pooler = pooler
        self.lora_rank = None
        # Bumped whenever `quantize` or `enable_lora` replaces weights; task models
        # compare it with the value their train/test/predict functions were made at.
        self.weights_revision = 0
        if lora_rank is not None:
            self.enable_lora(lora_rank)

    def __call__(self, inputs, *args, **kwargs):
        if (tf_fast.ENABLED and self.compile_eager_calls and not args
                and set(kwargs) <= {"training"} and not kwargs.get("training") and self.built):
            outputs = tf_fast.eager_inference(self, inputs, INPUT_NAMES, _inference_call)
            if outputs is not None:
                return outputs
        return super().__call__(inputs, *args, **kwargs)

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """`keras.Model.quantize`, for the modes keras_bert computes correctly
        (`QUANTIZATION_MODES`; others raise an `ArgumentError` naming them), dropping
        the compiled eager call traced with the float weights.

        Example:

        >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
        >>> encoder.quantize("int8")
        >>> layer = encoder.transformer_layers[0].attention.query
        >>> layer.quantization_mode, str(layer.kernel.dtype)
        ('int8', 'int8')
        """
        check_quantization_mode(self, mode)
        with nothing_to_quantize_unsaid(self):
            super().quantize(mode, config=config, filters=filters, **kwargs)
        self._weights_replaced()

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        """`keras.Model.save` to a `.keras` file, written beside it and renamed into
        place (`keras_bert.model.saving`): an interrupted save leaves the previous file
        intact; other suffixes (`.h5`) are refused."""
        return saving.save_model(super().save, self, filepath, overwrite=overwrite,
                                 zipped=zipped, **kwargs)

    def save_weights(self, filepath, overwrite=True, max_shard_size=None):
        """`keras.Model.save_weights`; a `.weights.h5` file is written atomically."""
        return saving.save_weights(super().save_weights, filepath, overwrite=overwrite,
                                   max_shard_size=max_shard_size)

    def enable_lora(self, rank: int) -> None:
        """Low-rank adaptation (LoRA, Hu et al. 2021), as keras-hub's
        `BertBackbone.enable_lora`: the query and value projections of every attention
        layer learn a rank-`rank` update (`keras.layers.EinsumDense.enable_lora`; its
        `kernel` is then the frozen kernel plus the scaled product of two small
        factors), and every other weight of the encoder, those projections' kernels
        and biases included, is frozen. Call it before `compile()`. A `.keras` file
        stores the merged kernels and, in the config, `lora_rank`: loading it gives the
        same outputs and the LoRA factors again (zero, ready to train on).

        Example:

        >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
        >>> encoder.enable_lora(4)
        >>> sorted({w.name for w in encoder.trainable_weights})
        ['lora_kernel_a', 'lora_kernel_b']
        """
        rank = check_lora_rank(rank)
        if self.lora_rank is not None:
            raise ArgumentError(f"enable_lora: LoRA is already enabled on {self.name} (rank "
                                f"{self.lora_rank}); it can be enabled once.", field="rank")
        self.trainable = True
        for layer in self._flatten_layers(include_self=False):
            layer.trainable = False
        for block in self.transformer_layers:
            for projection in (block.attention.query, block.attention.value):
                projection.trainable = True
                projection.enable_lora(rank)
                projection.bias.trainable = False
        self.lora_rank = rank
        self._weights_replaced()

    def _weights_replaced(self) -> None:
        """Forgets the functions traced with the weights before `quantize` or
        `enable_lora`: the compiled eager call and Keras's train/test/predict
        functions (task models on this encoder see `weights_revision` move)."""
        if tf_fast.ENABLED:
            tf_fast.forget_compiled_call(self)
        self.train_function = self.test_function = self.predict_function = None
        self.weights_revision += 1

    @property
    def word_embeddings(self) -> keras.layers.Embedding:
        """The word embedding layer (the masked-LM decoder is tied to it)."""
        return self.embeddings.word_embeddings

    def get_config(self):
        config = {"config": self.config.to_dict(), "output_attentions": self.output_attentions,
                  "dtype": keras.dtype_policies.serialize(self.dtype_policy),
                  "name": self.name, "trainable": self.trainable}
        if self.lora_rank is not None:
            config["lora_rank"] = self.lora_rank
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _inference_call(encoder: BertEncoder, inputs):
    """Keras's own call of `encoder` for inference (what `tf_fast.eager_inference`
    compiles)."""
    return super(BertEncoder, encoder).__call__(inputs, training=False)
