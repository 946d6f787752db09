"""sentence-transformers folders read exactly, without torch: `modules.json` (the
modules in order: a BERT `Transformer`, `Pooling`, `Dense`, `Normalize`),
`sentence_bert_config.json` (max_seq_length, do_lower_case) and
`config_sentence_transformers.json` (prompts, default_prompt_name, similarity_fn_name).

A module keras_bert cannot compute (any other type, a transformer that is not BERT, a
Dense whose activation has no Keras twin or whose weights are only a pickled
pytorch_model.bin) is refused with one `CheckpointError` line naming the module; none
is skipped.

Example:

>>> import json, os, tempfile
>>> folder = tempfile.mkdtemp()
>>> with open(os.path.join(folder, MODULES_FILE), "w") as f:
...     json.dump([{"idx": 0, "name": "0", "path": "", "type": "my.Module"}], f)
>>> is_sentence_transformers_folder(folder)
True
>>> read_sentence_transformers(folder)
Traceback (most recent call last):
...
keras_bert.core.errors.CheckpointError: ... module 0 ('my.Module') is not a module keras_bert computes (Transformer, Pooling, Dense, Normalize).
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from keras_bert.core.errors import CheckpointError

MODULES_FILE = "modules.json"
TRANSFORMER_CONFIG = "sentence_bert_config.json"
MODEL_CONFIG = "config_sentence_transformers.json"
_PREFIX = "sentence_transformers.models."
# sentence-transformers' legacy pooling flags, in its concatenation order.
POOLING_FLAGS = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                 "pooling_mode_mean_tokens": "mean",
                 "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                 "pooling_mode_weightedmean_tokens": "weightedmean",
                 "pooling_mode_lasttoken": "lasttoken"}
POOLING_MODES = tuple(POOLING_FLAGS.values())
# torch activation classes -> Keras activation names (None: identity).
ACTIVATIONS = {"Tanh": "tanh", "Identity": None, "ReLU": "relu", "GELU": "gelu",
               "Sigmoid": "sigmoid", "SiLU": "silu"}
SIMILARITIES = ("cosine", "dot", "euclidean", "manhattan")


@dataclasses.dataclass
class DenseModule:
    """A `Dense` module: `units` outputs, Keras `activation`, its weights (kernel [in,
    out], bias or None)."""

    units: int
    activation: str | None
    kernel: np.ndarray
    bias: np.ndarray | None


@dataclasses.dataclass
class SentenceTransformersSpec:
    """What a sentence-transformers folder asks of the model, in module order."""

    transformer_path: str
    pooling: tuple[str, ...] = ("mean",)
    dense: list[DenseModule] = dataclasses.field(default_factory=list)
    normalize: bool = False
    max_seq_length: int | None = None
    do_lower_case: bool = False
    prompts: dict = dataclasses.field(default_factory=dict)
    default_prompt_name: str | None = None
    similarity_fn_name: str = "cosine"


def is_sentence_transformers_folder(path) -> bool:
    return os.path.isfile(os.path.join(os.fspath(path), MODULES_FILE))


def _json(path: str, default=None):
    if not os.path.isfile(path):
        return default
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path}: not readable JSON ({e}).") from None


def read_sentence_transformers(folder) -> SentenceTransformersSpec:
    """The folder's modules and settings; `CheckpointError` (one line, naming the
    module) for anything keras_bert would compute differently."""
    folder = os.fspath(folder)
    modules = _json(os.path.join(folder, MODULES_FILE))
    if not isinstance(modules, list) or not modules:
        raise CheckpointError(f"{folder}/{MODULES_FILE} lists no modules.")
    where = f"sentence-transformers folder {folder!r}:"
    spec = None
    for i, module in enumerate(modules):
        kind = str(module.get("type", ""))
        name = f"module {module.get('name', i)} ({kind!r})"
        path = os.path.join(folder, module.get("path", ""))
        short = kind.rsplit(".", 1)[-1] if kind.startswith(_PREFIX) or kind.startswith(
            "sentence_transformers.") else ""
        if (spec is None) != (short == "Transformer"):
            raise CheckpointError(f"{where} {name} " + (
                "must come after one Transformer module." if spec is None and short
                else "is not a module keras_bert computes (Transformer, Pooling, Dense, "
                "Normalize)." if spec is None else "is a second Transformer."))
        if short == "Transformer":
            spec = _transformer(path, where, name)
        elif short == "Pooling":
            spec.pooling = _pooling(_json(os.path.join(path, "config.json"), {}), where, name)
        elif short == "Dense":
            spec.dense.append(_dense(path, where, name))
        elif short == "Normalize":
            spec.normalize = True
        else:
            raise CheckpointError(f"{where} {name} is not a module keras_bert computes "
                                  "(Transformer, Pooling, Dense, Normalize).")
    config = _json(os.path.join(folder, MODEL_CONFIG), {})
    spec.prompts = dict(config.get("prompts") or {})
    spec.default_prompt_name = config.get("default_prompt_name")
    spec.similarity_fn_name = config.get("similarity_fn_name") or "cosine"
    if spec.similarity_fn_name not in SIMILARITIES:
        raise CheckpointError(f"{where} similarity_fn_name {spec.similarity_fn_name!r} is "
                              f"not one of {', '.join(SIMILARITIES)}.")
    return spec


def _transformer(path, where, name) -> SentenceTransformersSpec:
    model_type = (_json(os.path.join(path, "config.json"), {}) or {}).get("model_type")
    if model_type != "bert":
        raise CheckpointError(f"{where} {name} is a {model_type or 'unknown'} transformer, "
                              "not BERT; keras_bert computes BERT only.")
    settings = _json(os.path.join(path, TRANSFORMER_CONFIG), {})
    return SentenceTransformersSpec(transformer_path=path,
                                    max_seq_length=settings.get("max_seq_length"),
                                    do_lower_case=bool(settings.get("do_lower_case")))


def _pooling(config: dict, where, name) -> tuple[str, ...]:
    """The pooling modes, concatenated in this order (sentence-transformers' rule)."""
    if not config.get("include_prompt", True):
        raise CheckpointError(f"{where} {name} excludes the prompt from pooling "
                              "(include_prompt false), which keras_bert does not compute.")
    modes = config.get("pooling_mode")
    if modes is None:
        modes = [mode for flag, mode in POOLING_FLAGS.items() if config.get(flag)] or ["mean"]
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    for mode in modes:
        if mode not in POOLING_MODES:
            raise CheckpointError(f"{where} {name} pools by {mode!r}, not one of "
                                  f"{', '.join(POOLING_MODES)}.")
    return modes


def _dense(path, where, name) -> DenseModule:
    config = _json(os.path.join(path, "config.json"), {})
    activation = str(config.get("activation_function", "torch.nn.modules.activation.Tanh"))
    short = activation.rsplit(".", 1)[-1]
    if short not in ACTIVATIONS:
        raise CheckpointError(f"{where} {name} has the activation {activation!r}, which "
                              f"keras_bert does not compute ({', '.join(ACTIVATIONS)}).")
    if config.get("use_residual"):
        raise CheckpointError(f"{where} {name} adds a residual (use_residual), which "
                              "keras_bert does not compute.")
    weights_file = os.path.join(path, "model.safetensors")
    if not os.path.isfile(weights_file):
        raise CheckpointError(f"{where} {name} has no model.safetensors (a pytorch_model.bin "
                              "needs torch): save the folder again with safetensors.")
    from safetensors.numpy import load_file

    tensors = load_file(weights_file)
    weight = tensors.get("linear.weight")
    out_features, in_features = config.get("out_features"), config.get("in_features")
    if weight is None or weight.shape != (out_features, in_features):
        raise CheckpointError(f"{where} {name}: linear.weight is "
                              f"{None if weight is None else weight.shape}, not "
                              f"({out_features}, {in_features}) as its config says.")
    bias = tensors.get("linear.bias") if config.get("bias", True) else None
    return DenseModule(units=int(out_features), activation=ACTIVATIONS[short],
                       kernel=np.asarray(weight, np.float32).T,
                       bias=None if bias is None else np.asarray(bias, np.float32))
