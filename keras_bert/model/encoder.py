"""BertEncoder: the BERT network as a functional keras.Model with TF Hub input/output names."""

from __future__ import annotations

import keras

from keras_bert.model import tf_fast
from keras_bert.model.config import BertConfig
from keras_bert.model.layers import BertEmbeddings, BertPooler, TransformerBlock, attention_bias

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


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
    (`benchmarks/encoder_throughput.py`; `tf_fast.eager_inference`).
    `compile_eager_calls = False` turns that off.
    """

    compile_eager_calls = True

    def __init__(self, config: BertConfig | dict, output_attentions: bool = False,
                 dtype=None, name: str = "bert_encoder", **kwargs):
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

    def __call__(self, inputs, *args, **kwargs):
        if (tf_fast.ENABLED and self.compile_eager_calls and not args
                and set(kwargs) <= {"training"} and not kwargs.get("training") and self.built):
            outputs = tf_fast.eager_inference(self, inputs, INPUT_NAMES, _inference_call)
            if outputs is not None:
                return outputs
        return super().__call__(inputs, *args, **kwargs)

    @property
    def word_embeddings(self) -> keras.layers.Embedding:
        """The word embedding layer (the masked-LM decoder is tied to it)."""
        return self.embeddings.word_embeddings

    def get_config(self):
        return {"config": self.config.to_dict(), "output_attentions": self.output_attentions,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy),
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _inference_call(encoder: BertEncoder, inputs):
    """Keras's own call of `encoder` for inference (what `tf_fast.eager_inference`
    compiles)."""
    return super(BertEncoder, encoder).__call__(inputs, training=False)
