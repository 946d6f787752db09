"""The canonical variable names: every model variable under its google-research/bert name
(`bert/encoder/layer_0/attention/self/query/kernel`, `cls/predictions/...`) with the
shape Google stores it in, and the mapping of those names to Hugging Face keys.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from keras_bert.model.encoder import BertEncoder


@dataclasses.dataclass
class Slot:
    """One model variable and how it looks in Google's layout (shape and converter)."""

    google_name: str
    variable: object  # keras.Variable
    google_shape: tuple
    # Hugging Face stores dense kernels as [out, in]: transposed Google kernels.
    hf_transpose: bool = False

    def from_google(self, array: np.ndarray) -> np.ndarray:
        return np.reshape(array, tuple(self.variable.shape))

    def to_google(self) -> np.ndarray:
        return np.reshape(np.asarray(self.variable.numpy()), self.google_shape)


class _NspSlot(Slot):
    def from_google(self, array):
        return np.transpose(array)

    def to_google(self):
        return np.transpose(np.asarray(self.variable.numpy()))


def _dense_slots(prefix, kernel, bias, google_kernel_shape, google_bias_shape):
    return [Slot(f"{prefix}/kernel", kernel, google_kernel_shape, hf_transpose=True),
            Slot(f"{prefix}/bias", bias, google_bias_shape)]


def _layer_norm_slots(prefix, layer):
    shape = tuple(layer.gamma.shape)
    return [Slot(f"{prefix}/gamma", layer.gamma, shape),
            Slot(f"{prefix}/beta", layer.beta, shape)]


def encoder_slots(encoder: BertEncoder) -> list[Slot]:
    """The encoder's variables under their google-research/bert names."""
    cfg = encoder.config
    h, i_size = cfg.hidden_size, cfg.intermediate_size
    emb = encoder.embeddings
    slots = [
        Slot("bert/embeddings/word_embeddings", emb.word_embeddings.embeddings,
             (cfg.vocab_size, h)),
        Slot("bert/embeddings/token_type_embeddings", emb.token_type_embeddings.embeddings,
             (cfg.type_vocab_size, h)),
        Slot("bert/embeddings/position_embeddings", emb.position_embeddings,
             (cfg.max_position_embeddings, h)),
        *_layer_norm_slots("bert/embeddings/LayerNorm", emb.layer_norm),
    ]
    for n, block in enumerate(encoder.transformer_layers):
        p = f"bert/encoder/layer_{n}"
        att = block.attention
        for proj in ("query", "key", "value"):
            layer = getattr(att, proj)
            slots += _dense_slots(f"{p}/attention/self/{proj}", layer.kernel, layer.bias,
                                  (h, h), (h,))
        slots += _dense_slots(f"{p}/attention/output/dense", att.output_dense.kernel,
                              att.output_dense.bias, (h, h), (h,))
        slots += _layer_norm_slots(f"{p}/attention/output/LayerNorm", block.attention_layer_norm)
        slots += _dense_slots(f"{p}/intermediate/dense", block.intermediate.kernel,
                              block.intermediate.bias, (h, i_size), (i_size,))
        slots += _dense_slots(f"{p}/output/dense", block.output_dense.kernel,
                              block.output_dense.bias, (i_size, h), (h,))
        slots += _layer_norm_slots(f"{p}/output/LayerNorm", block.output_layer_norm)
    dense = encoder.pooler.dense
    slots += _dense_slots("bert/pooler/dense", dense.kernel, dense.bias, (h, h), (h,))
    return slots


def pretrainer_head_slots(pretrainer) -> list[Slot]:
    """The MLM (and NSP) head variables of a `BertPretrainer` under Google's names."""
    cfg = pretrainer.encoder.config
    h = cfg.hidden_size
    mlm = pretrainer.masked_lm
    slots = _dense_slots("cls/predictions/transform/dense", mlm.transform.kernel,
                         mlm.transform.bias, (h, h), (h,))
    slots += _layer_norm_slots("cls/predictions/transform/LayerNorm", mlm.layer_norm)
    slots.append(Slot("cls/predictions/output_bias", mlm.output_bias, (cfg.vocab_size,)))
    if pretrainer.next_sentence_head is not None:
        nsp = pretrainer.next_sentence_head
        # Google stores the NSP weights as [2, H] (already [out, in], like Hugging Face).
        slots.append(_NspSlot("cls/seq_relationship/output_weights", nsp.kernel, (2, h)))
        slots.append(Slot("cls/seq_relationship/output_bias", nsp.bias, (2,)))
    return slots


def google_to_hf_name(name: str, hf_prefix: str = "bert.") -> str:
    """Maps a google-research/bert variable name to its Hugging Face state-dict key.

    >>> google_to_hf_name("bert/encoder/layer_3/attention/self/query/kernel")
    'bert.encoder.layer.3.attention.self.query.weight'
    >>> google_to_hf_name("cls/predictions/output_bias")
    'cls.predictions.bias'
    """
    special = {"cls/predictions/output_bias": "cls.predictions.bias",
               "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
               "cls/seq_relationship/output_bias": "cls.seq_relationship.bias"}
    if name in special:
        return special[name]
    parts = name.split("/")
    if parts[0] == "bert":
        parts[0] = hf_prefix.rstrip(".")
    parts = [p.replace("layer_", "layer.") if re.fullmatch(r"layer_\d+", p) else p
             for p in parts]
    leaf = {"kernel": "weight", "gamma": "weight", "beta": "bias"}.get(parts[-1], parts[-1])
    if parts[-1] in ("word_embeddings", "token_type_embeddings", "position_embeddings"):
        parts.append("weight")
    else:
        parts[-1] = leaf
    return ".".join(p for p in parts if p)
