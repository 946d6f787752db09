"""BertConfig: the hyperparameters of a BERT encoder, presets, and config-file I/O.

The names follow the paper (L layers, H hidden size, A attention heads, I intermediate
size) and Google's `bert_config.json`, so a config read from any released checkpoint
maps one to one.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import os
import types
from collections.abc import Mapping
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
# Keys that Hugging Face's config.json has and Google's bert_config.json never does: an
# older Hugging Face config without `model_type` is still told apart by them (or by its
# file name, config.json), and its "gelu" read as the exact GELU it means there.
_HF_ONLY_KEYS = ("model_type", "architectures", "layer_norm_eps", "pad_token_id",
                 "position_embedding_type", "transformers_version", "torch_dtype",
                 "_name_or_path", "use_cache", "classifier_dropout", "gradient_checkpointing")
_HF_CONFIG_NAME = "config.json"
# The fields a config file must have (BertConfig's defaults stand in for the others).
_REQUIRED = ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size")
# Each field of Google's bert_config.json and Hugging Face's config.json, by its key there.
_FILE_KEYS = {"vocab_size": "vocab_size", "hidden_size": "hidden_size",
              "num_layers": "num_hidden_layers", "num_heads": "num_attention_heads",
              "intermediate_size": "intermediate_size",
              "hidden_dropout": "hidden_dropout_prob",
              "attention_dropout": "attention_probs_dropout_prob",
              "max_position_embeddings": "max_position_embeddings",
              "type_vocab_size": "type_vocab_size", "initializer_range": "initializer_range"}
# The names BertConfig's checks give its fields (`from_fields` sets a file's keys).
_SHOWN_NAMES: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "keras_bert_config_shown_names", default=types.MappingProxyType({}))


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
        checks = _ConfigChecks("BertConfig", self)
        checks.at_least(1, "vocab_size", "hidden_size", "num_layers", "num_heads",
                        "intermediate_size", "max_position_embeddings", "type_vocab_size")
        checks.one_of("hidden_act", ACTIVATIONS)
        for name in ("hidden_dropout", "attention_dropout"):
            checks.within(name, 0.0, 1.0, high_open=True)
        checks.greater_than(0, "initializer_range", "layer_norm_eps")
        if not checks.problems:
            checks.check(self.hidden_size % self.num_heads == 0, "hidden_size",
                         f"({self.hidden_size}) must be divisible by "
                         f"{checks.shown('num_heads')} ({self.num_heads}); choose heads "
                         "that divide the width")
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

    # --- a config file's fields -----------------------------------------------------------
    @classmethod
    def from_fields(cls, d: Mapping[str, Any], keys: Mapping[str, str], **fixed) -> BertConfig:
        """A config from `d`, a config file's object that records field `f` under the key
        `keys[f]`; `fixed` gives the fields the format does not record, and BertConfig's
        defaults stand in for absent optional ones. Values are taken as they are (a JSON
        `true` is no integer, `"768"` no number), and every problem is named by the
        file's key: an `ArgumentError`. A missing required key is a `KeyError` of it.

        Example:

        >>> BertConfig.from_fields({"vocab_size": 8, "hidden_size": 4, "layers": True,
        ...                         "num_heads": 2, "intermediate_size": 8},
        ...                        {**{f: f for f in _REQUIRED}, "num_layers": "layers"})
        Traceback (most recent call last):
        ...
        keras_bert.core.errors.ArgumentError: Invalid BertConfig: layers must be an integer, got True.
        """
        values = dict(fixed)
        for field, key in keys.items():
            if key in d:
                values[field] = d[key]
            elif field in _REQUIRED:
                raise KeyError(key)
        token = _SHOWN_NAMES.set(keys)
        try:
            return cls(**values)
        finally:
            _SHOWN_NAMES.reset(token)

    # --- Google's bert_config.json ----------------------------------------------------
    @classmethod
    def from_google_dict(cls, d: dict[str, Any]) -> BertConfig:
        act = d.get("hidden_act", "gelu")
        if not isinstance(act, str) or _GOOGLE_ACTIVATIONS.get(act) is None:
            raise ArgumentError(f"Unsupported hidden_act {act!r} in bert_config.json; "
                             f"supported: {sorted(k for k, v in _GOOGLE_ACTIVATIONS.items() if v)}.")
        hidden_act = _GOOGLE_ACTIVATIONS[act]
        approximation = d.get(GELU_APPROXIMATION_KEY, "tanh")
        if act == "gelu" and approximation not in ("tanh", "none"):
            raise ArgumentError(f"{GELU_APPROXIMATION_KEY} must be 'tanh' or 'none', "
                             f"got {approximation!r}.")
        if act == "gelu" and approximation == "none":
            hidden_act = "gelu"
        return cls.from_fields(d, _FILE_KEYS, hidden_act=hidden_act)

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
        if not isinstance(act, str) or act not in _HF_ACTIVATIONS:
            raise ArgumentError(f"Unsupported hidden_act {act!r} in config.json; "
                             f"supported: {sorted(_HF_ACTIVATIONS)}.")
        return cls.from_fields(d, {**_FILE_KEYS, "layer_norm_eps": "layer_norm_eps"},
                               hidden_act=_HF_ACTIVATIONS[act])

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

        The format is told apart by its keys and its file's name: `num_layers` marks
        ours; a key only Hugging Face writes (`model_type`, `layer_norm_eps`,
        `architectures`, ...) marks Hugging Face, keras_bert's `gelu_approximation` marks
        Google; failing those, a file named `config.json` is Hugging Face's (an older one,
        without `model_type`) and any other (`bert_config.json`) Google's. It matters: a
        "gelu" is the exact GELU in Hugging Face's format and the tanh approximation in
        Google's. A field of the wrong type or out of its range is a `DataError` naming
        the file, the field as the file names it, its value and what is expected.
        """
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise InputNotFoundError(f"No BERT config file at {path!r}.")
        d = read_json_object(path, "an object with BERT's fields")
        if "num_layers" in d:
            kind, read = "keras_bert config", cls.from_dict
        elif "num_hidden_layers" not in d and "model_type" not in d:
            raise DataError("neither a Google bert_config.json, a Hugging Face config.json "
                            "nor a keras_bert config (no layer-count key: num_hidden_layers "
                            "or num_layers).", path=path)
        elif _is_hf_config(d, path):
            kind, read = "Hugging Face config.json", cls.from_hf_dict
        else:
            kind, read = "Google bert_config.json", cls.from_google_dict
        try:
            return read(d)
        except KeyError as e:  # a required field is missing
            raise DataError(f"this {kind} lacks the required field {e.args[0]!r}.",
                            path=path) from None
        except ValueError as e:  # a field of the wrong type or range, an unknown one
            raise DataError(str(e), path=path) from None

    def to_json_file(self, path: str | os.PathLike, format: str = "keras_bert") -> None:
        """Writes the config as `format` "keras_bert", "google" or "hf"."""
        writers = {"keras_bert": self.to_dict, "google": self.to_google_dict,
                   "hf": self.to_hf_dict}
        if format not in writers:
            raise ArgumentError(f"format must be one of {sorted(writers)}, got {format!r}.")
        fileio.write_json(path, writers[format]())


class _ConfigChecks(OptionChecks):
    """`OptionChecks` that name each field as the config file being read names it (the
    keys `BertConfig.from_fields` was given), and name a problem once where two fields
    come from one key (keras-hub's one `dropout`)."""

    def shown(self, field: str) -> str:
        return _SHOWN_NAMES.get().get(field, field)

    def fail(self, field: str, problem: str) -> None:
        super().fail(field, problem)
        text = f"{self.shown(field)} {problem}"
        if any(text == earlier for _, earlier in self.problems[:-1]):
            self.problems.pop()
        else:
            self.problems[-1] = (field, text)


def _is_hf_config(d: Mapping[str, Any], path: str) -> bool:
    """Whether a config object with BERT's `num_hidden_layers` is Hugging Face's (else
    Google's): by its keys (see `BertConfig.from_json_file`), else by its file name."""
    if any(key in d for key in _HF_ONLY_KEYS):
        return True
    if GELU_APPROXIMATION_KEY in d:
        return False
    return os.path.basename(path) == _HF_CONFIG_NAME


_JSON_TYPES = {list: "a JSON list", str: "a JSON string", bool: "a JSON true or false",
               int: "a JSON number", float: "a JSON number", type(None): "JSON null"}


def read_json_object(path: str | os.PathLike, expected: str = "an object") -> dict[str, Any]:
    """The JSON object in the file `path`. Raises `DataError` naming the file when it is not
    valid JSON (with the line and column of the fault) or holds another JSON value than
    an object (`expected` says what it should hold).

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "config.json")
    >>> _ = open(path, "w").write('{"hidden_size": 768,\\n "num_layers" 12}')
    >>> read_json_object(path)
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.DataError: .../config.json:2: not valid JSON at line 2, column 15: Expecting ':' delimiter; fix the file or replace it with its original.
    >>> _ = open(path, "w").write('[768, 12]')
    >>> read_json_object(path, "an object with BERT's fields")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.DataError: .../config.json: holds a JSON list, expected an object with BERT's fields.
    """
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        try:
            d = json.load(f)
        except json.JSONDecodeError as e:
            raise DataError(f"not valid JSON at line {e.lineno}, column {e.colno}: {e.msg}; "
                            "fix the file or replace it with its original.",
                            path=path, line=e.lineno) from None
        except UnicodeDecodeError as e:
            raise DataError(f"not valid JSON: not UTF-8 text ({e.reason} at byte "
                            f"{e.start}); replace it with its original.", path=path) from None
    if not isinstance(d, dict):
        raise DataError(f"holds {_JSON_TYPES[type(d)]}, expected {expected}.", path=path)
    return d


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
