"""BertConfig: the hyperparameters of a BERT encoder, presets, and config-file I/O.

The names follow the paper (L layers, H hidden size, A attention heads, I intermediate
size) and Google's `bert_config.json`, so a config read from any released checkpoint
maps one to one.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from keras_bert.core import fileio
from keras_bert.core.checks import OptionChecks
from keras_bert.core.errors import ArgumentError, DataError, InputNotFoundError

# Activation names used inside keras_bert. "gelu" is the exact (erf) GELU that Hugging
# Face means by "gelu"; "gelu_tanh" is the tanh approximation that google-research/bert's
# modeling.py computes for its "gelu".
ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "tanh", "silu")

_HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_python": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "silu",
    "swish": "silu",
}
_TO_HF_ACTIVATION = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu",
                     "tanh": "tanh", "silu": "silu"}
# google-research/bert's modeling.get_activation: "gelu" there is the tanh form.
_GOOGLE_ACTIVATIONS = {"gelu": "gelu_tanh", "relu": "relu", "tanh": "tanh",
                       "linear": None}
_TO_GOOGLE_ACTIVATION = {"gelu": "gelu", "gelu_tanh": "gelu", "relu": "relu", "tanh": "tanh"}
# Google's format has no name for the exact GELU; keras_bert writes "gelu" plus this key
# ("none" = exact, "tanh" = Google's default when the key is absent).
GELU_APPROXIMATION_KEY = "gelu_approximation"


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyperparameters of a BERT encoder.

    Args:
        vocab_size: WordPiece vocabulary size (rows of the token embedding table).
        hidden_size: H, the width of every layer.
        num_layers: L, the number of transformer blocks.
        num_heads: A, attention heads per block; must divide `hidden_size`.
        intermediate_size: I, the width of the feed-forward layer (4H in the paper).
        hidden_act: "gelu" (exact, erf) or "gelu_tanh" (google-research/bert's
            approximation), "relu", "tanh" or "silu".
        hidden_dropout: dropout on embeddings and on every sub-layer output.
        attention_dropout: dropout on the attention probabilities.
        max_position_embeddings: the longest sequence the position table covers.
        type_vocab_size: number of segment ids (2 for sentence pairs).
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_eps: LayerNorm epsilon (1e-12 in every released BERT).

    Example:

    >>> cfg = BertConfig.from_preset("tiny")
    >>> (cfg.num_layers, cfg.hidden_size, cfg.num_heads, cfg.intermediate_size)
    (2, 128, 2, 512)
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12

    def __post_init__(self):
        checks = OptionChecks("BertConfig", self)
        checks.at_least(1, "vocab_size", "hidden_size", "num_layers", "num_heads",
                        "intermediate_size", "max_position_embeddings", "type_vocab_size")
        checks.one_of("hidden_act", ACTIVATIONS)
        for name in ("hidden_dropout", "attention_dropout"):
            checks.within(name, 0.0, 1.0, high_open=True)
        checks.greater_than(0, "initializer_range", "layer_norm_eps")
        if not checks.problems:
            checks.check(self.hidden_size % self.num_heads == 0, "hidden_size",
                         f"({self.hidden_size}) must be divisible by num_heads "
                         f"({self.num_heads}); choose heads that divide the width")
        checks.raise_if_any()

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_heads

    def replace(self, **changes) -> BertConfig:
        """Returns a copy with some fields changed (e.g. `vocab_size=8000`)."""
        return dataclasses.replace(self, **changes)

    # --- plain dicts --------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BertConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ArgumentError(f"Unknown BertConfig fields {unknown}; known fields: {sorted(names)}.")
        return cls(**d)

    # --- presets ------------------------------------------------------------------
    @classmethod
    def from_preset(cls, name: str, **overrides) -> BertConfig:
        """A named configuration: the paper's base/large or the small-BERTs grid."""
        if name not in PRESETS:
            raise ArgumentError(f"Unknown preset {name!r}; available presets: {sorted(PRESETS)}.")
        return cls(**{**PRESETS[name], **overrides})

    # --- Google's bert_config.json ----------------------------------------------------
    @classmethod
    def from_google_dict(cls, d: dict[str, Any]) -> BertConfig:
        act = d.get("hidden_act", "gelu")
        if act not in _GOOGLE_ACTIVATIONS or _GOOGLE_ACTIVATIONS[act] is None:
            raise ArgumentError(f"Unsupported hidden_act {act!r} in bert_config.json; "
                             f"supported: {sorted(k for k, v in _GOOGLE_ACTIVATIONS.items() if v)}.")
        hidden_act = _GOOGLE_ACTIVATIONS[act]
        approximation = d.get(GELU_APPROXIMATION_KEY, "tanh")
        if act == "gelu" and approximation not in ("tanh", "none"):
            raise ArgumentError(f"{GELU_APPROXIMATION_KEY} must be 'tanh' or 'none', "
                             f"got {approximation!r}.")
        if act == "gelu" and approximation == "none":
            hidden_act = "gelu"
        return cls(
            vocab_size=int(d["vocab_size"]),
            hidden_size=int(d["hidden_size"]),
            num_layers=int(d["num_hidden_layers"]),
            num_heads=int(d["num_attention_heads"]),
            intermediate_size=int(d["intermediate_size"]),
            hidden_act=hidden_act,
            hidden_dropout=float(d.get("hidden_dropout_prob", 0.1)),
            attention_dropout=float(d.get("attention_probs_dropout_prob", 0.1)),
            max_position_embeddings=int(d.get("max_position_embeddings", 512)),
            type_vocab_size=int(d.get("type_vocab_size", 2)),
            initializer_range=float(d.get("initializer_range", 0.02)),
        )

    def to_google_dict(self) -> dict[str, Any]:
        """The `bert_config.json` dict. An exact-GELU config also gets
        `"gelu_approximation": "none"`, which keras_bert reads back exactly; the original
        TF1 code ignores that key and would compute its tanh GELU instead."""
        if self.hidden_act not in _TO_GOOGLE_ACTIVATION:
            raise ArgumentError(
                f"hidden_act {self.hidden_act!r} has no name in google-research/bert's "
                f"bert_config.json; representable: {sorted(_TO_GOOGLE_ACTIVATION)}.")
        extra = {GELU_APPROXIMATION_KEY: "none"} if self.hidden_act == "gelu" else {}
        return {**extra,
            "attention_probs_dropout_prob": self.attention_dropout,
            "hidden_act": _TO_GOOGLE_ACTIVATION[self.hidden_act],
            "hidden_dropout_prob": self.hidden_dropout,
            "hidden_size": self.hidden_size,
            "initializer_range": self.initializer_range,
            "intermediate_size": self.intermediate_size,
            "max_position_embeddings": self.max_position_embeddings,
            "num_attention_heads": self.num_heads,
            "num_hidden_layers": self.num_layers,
            "type_vocab_size": self.type_vocab_size,
            "vocab_size": self.vocab_size,
        }

    # --- Hugging Face config.json -----------------------------------------------------
    @classmethod
    def from_hf_dict(cls, d: dict[str, Any]) -> BertConfig:
        model_type = d.get("model_type", "bert")
        if model_type != "bert":
            raise ArgumentError(f"config.json describes model_type {model_type!r}; only 'bert' "
                             "checkpoints are supported.")
        pos_type = d.get("position_embedding_type", "absolute")
        if pos_type != "absolute":
            raise ArgumentError(f"position_embedding_type {pos_type!r} is not supported; "
                             "BERT uses 'absolute'.")
        act = d.get("hidden_act", "gelu")
        if act not in _HF_ACTIVATIONS:
            raise ArgumentError(f"Unsupported hidden_act {act!r} in config.json; "
                             f"supported: {sorted(_HF_ACTIVATIONS)}.")
        return cls(
            vocab_size=int(d["vocab_size"]),
            hidden_size=int(d["hidden_size"]),
            num_layers=int(d["num_hidden_layers"]),
            num_heads=int(d["num_attention_heads"]),
            intermediate_size=int(d["intermediate_size"]),
            hidden_act=_HF_ACTIVATIONS[act],
            hidden_dropout=float(d.get("hidden_dropout_prob", 0.1)),
            attention_dropout=float(d.get("attention_probs_dropout_prob", 0.1)),
            max_position_embeddings=int(d.get("max_position_embeddings", 512)),
            type_vocab_size=int(d.get("type_vocab_size", 2)),
            initializer_range=float(d.get("initializer_range", 0.02)),
            layer_norm_eps=float(d.get("layer_norm_eps", 1e-12)),
        )

    def to_hf_dict(self) -> dict[str, Any]:
        return {
            "architectures": ["BertModel"],
            "model_type": "bert",
            "attention_probs_dropout_prob": self.attention_dropout,
            "hidden_act": _TO_HF_ACTIVATION[self.hidden_act],
            "hidden_dropout_prob": self.hidden_dropout,
            "hidden_size": self.hidden_size,
            "initializer_range": self.initializer_range,
            "intermediate_size": self.intermediate_size,
            "layer_norm_eps": self.layer_norm_eps,
            "max_position_embeddings": self.max_position_embeddings,
            "num_attention_heads": self.num_heads,
            "num_hidden_layers": self.num_layers,
            "pad_token_id": 0,
            "position_embedding_type": "absolute",
            "type_vocab_size": self.type_vocab_size,
            "vocab_size": self.vocab_size,
        }

    # --- files --------------------------------------------------------------------------
    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> BertConfig:
        """Reads Google's bert_config.json, Hugging Face's config.json or keras_bert's own.

        The format is told apart by its keys: `model_type` marks Hugging Face, the
        `num_hidden_layers` key without it marks Google, and `num_layers` marks ours.
        """
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise InputNotFoundError(f"No BERT config file at {path!r}.")
        with open(path, encoding="utf-8") as f:
            try:
                d = json.load(f)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise DataError(f"not valid JSON: {e}", path=path) from e
        readers = [("model_type", "Hugging Face config.json", cls.from_hf_dict),
                   ("num_hidden_layers", "Google bert_config.json", cls.from_google_dict),
                   ("num_layers", "keras_bert config", cls.from_dict)]
        for key, kind, read in readers:
            if isinstance(d, dict) and key in d:
                try:
                    return read(d)
                except KeyError as e:  # a required field is missing
                    raise DataError(f"this {kind} lacks the required field {e.args[0]!r}.",
                                    path=path) from None
                except (TypeError, ValueError) as e:  # a field of the wrong type or range
                    raise DataError(str(e), path=path) from None
        raise DataError("neither a Google bert_config.json, a Hugging Face config.json nor "
                        "a keras_bert config (no layer-count key).", path=path)

    def to_json_file(self, path: str | os.PathLike, format: str = "keras_bert") -> None:
        """Writes the config as `format` "keras_bert", "google" or "hf"."""
        writers = {"keras_bert": self.to_dict, "google": self.to_google_dict,
                   "hf": self.to_hf_dict}
        if format not in writers:
            raise ArgumentError(f"format must be one of {sorted(writers)}, got {format!r}.")
        fileio.write_json(path, writers[format]())


def _preset(layers, hidden, heads=None):
    return {"num_layers": layers, "hidden_size": hidden,
            "num_heads": heads or hidden // 64, "intermediate_size": 4 * hidden}


# The paper's BERT-Base/Large and the "small BERTs" grid (Turc et al., 2019) that
# google-research/bert released; A = H/64 and I = 4H throughout.
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": _preset(2, 128),
    "mini": _preset(4, 256),
    "small": _preset(4, 512),
    "medium": _preset(8, 512),
    "base": _preset(12, 768),
    "large": _preset(24, 1024),
}
