"""Checkpoint import and export.

Formats:

- Google's original TF1 release (`bert_config.json` + `bert_model.ckpt.*`), whose
  variable names (`bert/encoder/layer_0/attention/self/query/kernel`, `cls/predictions/...`)
  are the canonical BERT names everything else maps to. Read and written.
- Hugging Face BERT (`config.json` + `model.safetensors`), read with the safetensors
  numpy API (no torch).
- tf-models-official (TF2 Model Garden) object-based checkpoints of its `BertEncoder` /
  `BertEncoderV2`, alone or inside a model such as `BertPretrainerV2` (keys like
  `encoder/_transformer_layers/0/.../.ATTRIBUTES/VARIABLE_VALUE`), with a
  `bert_config.json` or Model Garden `params.yaml` beside them. Read through TF's
  checkpoint reader and the checkpoint's object graph, so tf-models-official itself need
  not be installed.
- keras_bert's own directory (`keras_bert_config.json` + `encoder.weights.h5`).

Every variable is matched by name and shape: a missing or mis-shaped variable raises an
error naming it and both shapes, and checkpoint variables that nothing used are reported
through the `keras_bert` logger (optimizer slots are counted, not listed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import json
import logging
import os
import re
from collections.abc import Callable

import numpy as np

from keras_bert.config import BertConfig
from keras_bert.encoder import BertEncoder
from keras_bert.errors import CheckpointError, InputNotFoundError, MismatchError
from keras_bert.io import atomic_directory

logger = logging.getLogger("keras_bert")

KERAS_BERT_CONFIG = "keras_bert_config.json"
KERAS_BERT_WEIGHTS = "encoder.weights.h5"
GOOGLE_CONFIG = "bert_config.json"
GOOGLE_CKPT = "bert_model.ckpt"

# Optimizer and bookkeeping variables found in Google's pretraining checkpoints and in
# TF2 object-based ones (optimizer slots, the optimizer's own variables, save_counter).
_OPTIMIZER_VARIABLE = re.compile(r"(/adam_[mv]$|/Adam(_\d+)?$|^global_step$|_power$"
                                 r"|/\.OPTIMIZER_SLOT/|^optimizer/|^save_counter/)")


@dataclasses.dataclass
class _Slot:
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


class _NspSlot(_Slot):
    def from_google(self, array):
        return np.transpose(array)

    def to_google(self):
        return np.transpose(np.asarray(self.variable.numpy()))


def _dense_slots(prefix, kernel, bias, google_kernel_shape, google_bias_shape):
    return [_Slot(f"{prefix}/kernel", kernel, google_kernel_shape, hf_transpose=True),
            _Slot(f"{prefix}/bias", bias, google_bias_shape)]


def _layer_norm_slots(prefix, layer):
    shape = tuple(layer.gamma.shape)
    return [_Slot(f"{prefix}/gamma", layer.gamma, shape),
            _Slot(f"{prefix}/beta", layer.beta, shape)]


def encoder_slots(encoder: BertEncoder) -> list[_Slot]:
    """The encoder's variables under their google-research/bert names."""
    cfg = encoder.config
    h, i_size = cfg.hidden_size, cfg.intermediate_size
    emb = encoder.embeddings
    slots = [
        _Slot("bert/embeddings/word_embeddings", emb.word_embeddings.embeddings,
              (cfg.vocab_size, h)),
        _Slot("bert/embeddings/token_type_embeddings", emb.token_type_embeddings.embeddings,
              (cfg.type_vocab_size, h)),
        _Slot("bert/embeddings/position_embeddings", emb.position_embeddings,
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


def pretrainer_head_slots(pretrainer) -> list[_Slot]:
    """The MLM (and NSP) head variables of a `BertPretrainer` under Google's names."""
    cfg = pretrainer.encoder.config
    h = cfg.hidden_size
    mlm = pretrainer.masked_lm
    slots = _dense_slots("cls/predictions/transform/dense", mlm.transform.kernel,
                         mlm.transform.bias, (h, h), (h,))
    slots += _layer_norm_slots("cls/predictions/transform/LayerNorm", mlm.layer_norm)
    slots.append(_Slot("cls/predictions/output_bias", mlm.output_bias, (cfg.vocab_size,)))
    if pretrainer.next_sentence_head is not None:
        nsp = pretrainer.next_sentence_head
        # Google stores the NSP weights as [2, H] (already [out, in], like Hugging Face).
        slots.append(_NspSlot("cls/seq_relationship/output_weights", nsp.kernel, (2, h)))
        slots.append(_Slot("cls/seq_relationship/output_bias", nsp.bias, (2,)))
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


def _assign(slots: list[_Slot], read: Callable[[str], np.ndarray | None], source: str,
            transpose_kernels: bool = False, names: Callable[[_Slot], str] | None = None,
            native_shapes: bool = False):
    """Assigns every slot from `read(name)`; raises on a missing or mis-shaped variable.

    Checkpoint arrays have the slot's Google shape, or with `native_shapes` the model
    variable's own shape (TF2 checkpoints store the same EinsumDense layouts). Shapes
    are checked before anything is assigned, so a failed load leaves the model as it
    was. Returns the set of checkpoint names that were used.
    """
    names = names or (lambda s: s.google_name)
    values, used = [], set()
    for slot in slots:
        key = names(slot)
        expected = tuple(slot.variable.shape) if native_shapes else tuple(slot.google_shape)
        array = read(key)
        if array is None:
            raise CheckpointError(f"{source}: variable {key!r} is missing (the model needs "
                                  f"it with shape {expected}).")
        if transpose_kernels and slot.hf_transpose:
            array = np.transpose(array)
        if tuple(array.shape) != expected:
            raise CheckpointError(
                f"{source}: variable {key!r} has shape {tuple(array.shape)} but the model "
                f"expects {expected}; does the config match the weights?")
        values.append(slot.from_google(np.asarray(array, dtype=np.float32)))
        used.add(key)
    for slot, value in zip(slots, values):
        slot.variable.assign(value.astype(slot.variable.dtype))
    return used


def _report_unused(source: str, available: set[str], used: set[str], expected_extra=()):
    unused = sorted(available - used)
    optimizer = [n for n in unused if _OPTIMIZER_VARIABLE.search(n)]
    others = [n for n in unused if n not in optimizer]
    if optimizer:
        logger.info("%s: skipped %d optimizer/bookkeeping variables (e.g. %s).", source,
                    len(optimizer), optimizer[0])
    if others:
        level = logging.INFO if all(n.startswith(tuple(expected_extra)) for n in others) \
            else logging.WARNING
        logger.log(level, "%s: %d checkpoint variables were not used by this model: %s",
                   source, len(others), ", ".join(others))
    return others


# ---------------------------------------------------------------------------------------
# Locating checkpoints
# ---------------------------------------------------------------------------------------

def _detect(path: str) -> tuple[str, str]:
    """Returns (format, resolved path) for a checkpoint path; raises with guidance."""
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, KERAS_BERT_CONFIG)):
            return "keras_bert", path
        if os.path.isfile(os.path.join(path, "model.safetensors")):
            return "hf", path
        prefix = _google_prefix_in_dir(path)
        if prefix:
            return _prefix_format(prefix), prefix
        raise InputNotFoundError(
            f"{path!r} holds no BERT checkpoint: expected {KERAS_BERT_CONFIG} (keras_bert), "
            f"config.json + model.safetensors (Hugging Face), or {GOOGLE_CONFIG} + "
            f"{GOOGLE_CKPT}.index (Google TF1 or tf-models-official TF2). Found: "
            f"{sorted(os.listdir(path))[:20]}")
    if os.path.isfile(path + ".index"):
        return _prefix_format(path), path
    if os.path.isfile(path):
        raise InputNotFoundError(
            f"{path!r} is a file, not a checkpoint: give the checkpoint's directory (Hugging "
            "Face, keras_bert, Google or tf-models-official) or a TF checkpoint prefix "
            "(without .index).")
    raise InputNotFoundError(f"No checkpoint at {path!r}: it does not exist (give a checkpoint "
                             "directory or a Google checkpoint prefix).")


def _google_prefix_in_dir(directory: str) -> str | None:
    preferred = os.path.join(directory, GOOGLE_CKPT)
    if os.path.isfile(preferred + ".index"):
        return preferred
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(directory)
    if latest:
        return latest
    candidates = sorted(glob.glob(os.path.join(directory, "*.index")))
    return candidates[0][: -len(".index")] if len(candidates) == 1 else None


def _google_config(prefix: str) -> BertConfig:
    path = os.path.join(os.path.dirname(prefix) or ".", GOOGLE_CONFIG)
    if not os.path.isfile(path):
        raise InputNotFoundError(f"Google checkpoint {prefix!r} has no {GOOGLE_CONFIG} beside "
                                 "it; put the config that came with the checkpoint there.")
    return BertConfig.from_json_file(path)


def _read_hf(directory: str) -> tuple[BertConfig, dict[str, np.ndarray]]:
    from safetensors.numpy import load_file

    config = read_config(directory)
    path = os.path.join(directory, "model.safetensors")
    with _unreadable(path):
        return config, load_file(path)


@contextlib.contextmanager
def _unreadable(path: str):
    """Turns a library's failure to parse a checkpoint file (truncated, corrupt, not the
    format) into a `CheckpointError` that names the file."""
    try:
        yield
    except CheckpointError:
        raise
    except Exception as e:  # safetensors, h5py and TF raise their own types
        if isinstance(e, (FileNotFoundError, PermissionError)):
            raise
        raise CheckpointError(f"{path} cannot be read ({type(e).__name__}: "
                              f"{' '.join(str(e).split())[:200]}); it may be truncated or "
                              "corrupt: download or save it again.") from e


def _hf_prefix(tensors: dict[str, np.ndarray]) -> str:
    # BertModel checkpoints have bare keys ("embeddings..."); BertForPreTraining and
    # task checkpoints prefix them with "bert.".
    return "bert." if any(k.startswith("bert.") for k in tensors) else ""


# HF buffers and tied duplicates that carry no weights of their own.
_HF_NON_WEIGHTS = ("embeddings.position_ids", "cls.predictions.decoder.weight",
                   "cls.predictions.decoder.bias")


def _hf_available(tensors, prefix):
    return {k for k in tensors if not k.endswith(_HF_NON_WEIGHTS)}


# ---------------------------------------------------------------------------------------
# tf-models-official (TF2 Model Garden) object-based checkpoints
# ---------------------------------------------------------------------------------------

MODEL_GARDEN_PARAMS = "params.yaml"
_TF2_VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"
_TF2_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"
# The attributes through which tf-models-official's BertEncoder and BertEncoderV2 track
# their layers; an object with all of them in a checkpoint's graph is such an encoder.
_TF2_ENCODER_CHILDREN = ("_embedding_layer", "_position_embedding_layer",
                         "_type_embedding_layer", "_embedding_norm_layer",
                         "_transformer_layers", "_pooler_layer")
_TF2_EMBEDDINGS = {"word_embeddings": "_embedding_layer/embeddings",
                   "token_type_embeddings": "_type_embedding_layer/embeddings",
                   "position_embeddings": "_position_embedding_layer/embeddings"}
_TF2_BLOCK = {"attention/self/query": "_attention_layer/_query_dense",
              "attention/self/key": "_attention_layer/_key_dense",
              "attention/self/value": "_attention_layer/_value_dense",
              "attention/output/dense": "_attention_layer/_output_dense",
              "attention/output/LayerNorm": "_attention_layer_norm",
              "intermediate/dense": "_intermediate_dense",
              "output/dense": "_output_dense",
              "output/LayerNorm": "_output_layer_norm"}
# tf-models-official's activation names (its "gelu" is the tanh approximation).
_MODEL_GARDEN_ACTIVATIONS = {"gelu": "gelu_tanh", "relu": "relu", "tanh": "tanh",
                             "swish": "silu"}


def _tf2_name(google_name: str) -> str:
    """The object path, inside a tf-models-official BERT encoder, of the variable that
    google-research/bert names `google_name` (the two store the same EinsumDense shapes).

    >>> _tf2_name("bert/encoder/layer_1/attention/self/query/kernel")
    '_transformer_layers/1/_attention_layer/_query_dense/kernel'
    """
    parts = google_name.split("/")
    if parts[1] == "embeddings":
        if parts[2] == "LayerNorm":
            return f"_embedding_norm_layer/{parts[3]}"
        return _TF2_EMBEDDINGS[parts[2]]
    if parts[1] == "pooler":
        return f"_pooler_layer/{parts[-1]}"
    layer = parts[2][len("layer_"):]
    return f"_transformer_layers/{layer}/{_TF2_BLOCK['/'.join(parts[3:-1])]}/{parts[-1]}"


class _Tf2Checkpoint:
    """A TF2 object-based checkpoint holding a tf-models-official BERT encoder.

    Variables are found through the checkpoint's object graph, so an encoder saved alone
    (`Checkpoint(encoder=...)`), inside a model (`model/encoder_network/...`) or through
    a functional model's `layer_with_weights-N` edges resolves to the same paths, and a
    variable saved once under another owner (`BertPretrainerV2` stores the word
    embeddings as `masked_lm/embedding_table`) is still found.
    """

    def __init__(self, prefix: str):
        import tensorflow as tf
        from tensorflow.core.protobuf import trackable_object_graph_pb2

        self.prefix = prefix
        self.source = f"tf-models-official checkpoint {prefix}"
        with _unreadable(prefix):
            self.reader = tf.train.load_checkpoint(prefix)
            self.shapes = self.reader.get_variable_to_shape_map()
            # children[n]: edge name -> node; values[n]: checkpoint key of a variable.
            self.children: list[dict[str, int]] = []
            self.values: list[str | None] = []
            if _TF2_GRAPH in self.shapes:
                graph = trackable_object_graph_pb2.TrackableObjectGraph()
                graph.ParseFromString(self.reader.get_tensor(_TF2_GRAPH))
                for node in graph.nodes:
                    self.children.append({c.local_name: c.node_id for c in node.children})
                    self.values.append(next((a.checkpoint_key for a in node.attributes
                                             if a.name == "VARIABLE_VALUE"), None))
            else:
                self._graph_from_keys()
        self.paths = self._shortest_paths()
        self.node, self.path = self._find_encoder()

    def _graph_from_keys(self):
        # Without a stored object graph the key names themselves are the tree.
        self.children, self.values = [{}], [None]
        for key in self.shapes:
            if not key.endswith(_TF2_VALUE):
                continue
            node = 0
            for part in key[: -len(_TF2_VALUE)].split("/"):
                if part not in self.children[node]:
                    self.children[node][part] = len(self.children)
                    self.children.append({})
                    self.values.append(None)
                node = self.children[node][part]
            self.values[node] = key

    def _shortest_paths(self) -> dict[int, str]:
        paths, frontier = {0: ""}, [0]
        while frontier:
            following = []
            for node in frontier:
                for name, child in self.children[node].items():
                    if child not in paths:
                        paths[child] = f"{paths[node]}/{name}".lstrip("/")
                        following.append(child)
            frontier = following
        return paths

    def _find_encoder(self) -> tuple[int, str]:
        found = [n for n in self.paths
                 if all(c in self.children[n] for c in _TF2_ENCODER_CHILDREN)]
        if not found:
            raise CheckpointError(
                f"{self.source}: no tf-models-official BERT encoder in it (no object with "
                f"{', '.join(_TF2_ENCODER_CHILDREN)}); its top-level objects are "
                f"{sorted(self.children[0])}. keras_bert reads the TF2 checkpoints of "
                "official.nlp.modeling.networks.BertEncoder / BertEncoderV2, saved alone or "
                "inside a model such as BertPretrainerV2.")
        if len(found) > 1:
            raise CheckpointError(
                f"{self.source}: holds {len(found)} BERT encoders "
                f"({', '.join(self.paths[n] for n in found)}); save the one to load alone "
                "with tf.train.Checkpoint(encoder=...).")
        node = found[0]
        path = self.paths[node]
        projection = self.children[node].get("_embedding_projection")
        if projection is not None and self.children[projection]:
            raise CheckpointError(
                f"{self.source}: the encoder at {path!r} projects narrower word embeddings "
                "to the hidden size (embedding_width != hidden_size); keras_bert's "
                "BertEncoder has no such projection and cannot load it.")
        return node, path

    def name(self, relative: str) -> str:
        """The readable object path of a variable given relative to the encoder."""
        return f"{self.path}/{relative}".lstrip("/")

    def key(self, relative: str) -> str | None:
        node = self.node
        for part in relative.split("/"):
            node = self.children[node].get(part)
            if node is None:
                return None
        key = self.values[node]
        return key if key in self.shapes else None

    def shape(self, relative: str) -> tuple | None:
        key = self.key(relative)
        return None if key is None else tuple(self.shapes[key])

    def read(self, name: str) -> np.ndarray | None:
        key = self.key(name[len(self.path):].lstrip("/"))
        return None if key is None else self.reader.get_tensor(key)

    def encoder_keys(self) -> set[str]:
        """Checkpoint keys of every variable inside the encoder object."""
        keys, seen, stack = set(), {self.node}, [self.node]
        while stack:
            node = stack.pop()
            if self.values[node]:
                keys.add(self.values[node])
            for child in self.children[node].values():
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        return keys

    def available(self) -> set[str]:
        return {k for k in self.shapes if k.endswith(_TF2_VALUE)}

    def inferred_config(self) -> BertConfig:
        """The sizes read from the variable shapes (the activation cannot be: assumed to
        be tf-models-official's default, its tanh GELU)."""
        query = self.shape(_tf2_name("bert/encoder/layer_0/attention/self/query/kernel"))
        where = os.path.dirname(self.prefix) or "."
        if query is None or len(query) != 3:
            raise CheckpointError(
                f"{self.source}: no {GOOGLE_CONFIG} or {MODEL_GARDEN_PARAMS} beside it, and "
                "the number of attention heads cannot be read from its variables (the first "
                f"layer's query kernel is {query}, not [hidden, heads, head_size]); put the "
                f"model's {GOOGLE_CONFIG} in {where}.")
        sizes = {}
        for field, google_name, axis in [
                ("vocab_size", "bert/embeddings/word_embeddings", 0),
                ("max_position_embeddings", "bert/embeddings/position_embeddings", 0),
                ("type_vocab_size", "bert/embeddings/token_type_embeddings", 0),
                ("intermediate_size", "bert/encoder/layer_0/intermediate/dense/kernel", 1)]:
            shape = self.shape(_tf2_name(google_name))
            if shape is None or len(shape) != 2:
                raise CheckpointError(
                    f"{self.source}: no {GOOGLE_CONFIG} beside it, and its "
                    f"{field} cannot be read: variable {self.name(_tf2_name(google_name))!r} "
                    f"is {'missing' if shape is None else f'shaped {shape}'}; put the "
                    f"model's {GOOGLE_CONFIG} in {where}.")
            sizes[field] = shape[axis]
        layers = self.children[self.node]["_transformer_layers"]
        indices = [int(n) for n in self.children[layers] if n.isdigit()]
        config = BertConfig(hidden_size=query[0], num_heads=query[1],
                            num_layers=max(indices) + 1,
                            hidden_act="gelu_tanh", **sizes)
        logger.warning(
            "%s: no %s or %s beside it; sizes read from the variable shapes (L=%d, H=%d, "
            "A=%d, I=%d, vocab %d) and hidden_act assumed 'gelu_tanh' (tf-models-official's "
            "default GELU); put the model's %s beside it if it used another activation.",
            self.source, GOOGLE_CONFIG, MODEL_GARDEN_PARAMS, config.num_layers,
            config.hidden_size, config.num_heads, config.intermediate_size,
            config.vocab_size, GOOGLE_CONFIG)
        return config


def _model_garden_config(path: str) -> BertConfig:
    """The BERT encoder config in a Model Garden experiment's params.yaml
    (`task.model.encoder` with `type: bert` or `bert_v2`)."""
    try:
        import yaml
    except ImportError:
        raise CheckpointError(f"{path}: reading Model Garden's {MODEL_GARDEN_PARAMS} needs "
                              f"PyYAML (pip install pyyaml); or put a {GOOGLE_CONFIG} beside "
                              "the checkpoint.") from None
    with _unreadable(path), open(path, encoding="utf-8") as f:
        params = yaml.safe_load(f)
    encoder = params if isinstance(params, dict) else {}
    for key in ("task", "model", "encoder"):
        encoder = encoder.get(key, encoder) if isinstance(encoder, dict) else None
    kind = encoder.get("type", "bert") if isinstance(encoder, dict) else None
    d = encoder.get(kind) if kind in ("bert", "bert_v2") else None
    if not isinstance(d, dict):
        raise CheckpointError(f"{path}: no BERT encoder config (task.model.encoder with "
                              f"type bert or bert_v2); found encoder type {kind!r}.")
    if d.get("norm_first"):
        raise CheckpointError(f"{path}: the encoder is pre-LayerNorm (norm_first: true); "
                              "keras_bert's BertEncoder is BERT's post-LayerNorm network.")
    if d.get("embedding_size") not in (None, d.get("hidden_size", 768)):
        raise CheckpointError(f"{path}: embedding_size {d['embedding_size']} differs from "
                              "hidden_size; keras_bert's BertEncoder has no embedding "
                              "projection.")
    act = d.get("hidden_activation", "gelu")
    if act not in _MODEL_GARDEN_ACTIVATIONS:
        raise CheckpointError(f"{path}: hidden_activation {act!r} is not supported; "
                              f"supported: {sorted(_MODEL_GARDEN_ACTIVATIONS)}.")
    try:  # tf-models-official's BertEncoderConfig defaults for absent fields
        return BertConfig(
            vocab_size=int(d.get("vocab_size", 30522)),
            hidden_size=int(d.get("hidden_size", 768)),
            num_layers=int(d.get("num_layers", 12)),
            num_heads=int(d.get("num_attention_heads", 12)),
            intermediate_size=int(d.get("intermediate_size", 3072)),
            hidden_act=_MODEL_GARDEN_ACTIVATIONS[act],
            hidden_dropout=float(d.get("dropout_rate", 0.1)),
            attention_dropout=float(d.get("attention_dropout_rate", 0.1)),
            max_position_embeddings=int(d.get("max_position_embeddings", 512)),
            type_vocab_size=int(d.get("type_vocab_size", 2)),
            initializer_range=float(d.get("initializer_range", 0.02)))
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: {e}") from None


def _tf2_config(prefix: str, checkpoint: Callable[[], _Tf2Checkpoint]) -> BertConfig:
    """bert_config.json beside the checkpoint, else params.yaml, else read off shapes."""
    directory = os.path.dirname(prefix) or "."
    if os.path.isfile(os.path.join(directory, GOOGLE_CONFIG)):
        return BertConfig.from_json_file(os.path.join(directory, GOOGLE_CONFIG))
    if os.path.isfile(os.path.join(directory, MODEL_GARDEN_PARAMS)):
        return _model_garden_config(os.path.join(directory, MODEL_GARDEN_PARAMS))
    return checkpoint().inferred_config()


def _prefix_format(prefix: str) -> str:
    """"tf2" for an object-based (TF2) checkpoint, "google" for a name-based TF1 one."""
    import tensorflow as tf

    with _unreadable(prefix + ".index"):
        names = [name for name, _ in tf.train.list_variables(prefix)]
    return "tf2" if any(n.endswith(_TF2_VALUE) for n in names) else "google"


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------

def read_config(path: str | os.PathLike) -> BertConfig:
    """The `BertConfig` of a checkpoint, without reading its weights.

    Takes every path `load_encoder` takes (keras_bert, Hugging Face, Google or
    tf-models-official), so a config can be checked or adjusted before the weights are
    loaded. A tf-models-official checkpoint with neither a `bert_config.json` nor a
    `params.yaml` beside it gets its sizes from its variable shapes (see `load_encoder`).

    Example:

    >>> read_config("uncased_L-12_H-768_A-12").hidden_size  # doctest: +SKIP
    768
    """
    fmt, resolved = _detect(path)
    if fmt == "keras_bert":
        path = os.path.join(resolved, KERAS_BERT_CONFIG)
        with _unreadable(path), open(path, encoding="utf-8") as f:
            return BertConfig.from_dict(json.load(f)["config"])
    if fmt == "hf":
        config_path = os.path.join(resolved, "config.json")
        if not os.path.isfile(config_path):
            raise InputNotFoundError(
                f"Hugging Face checkpoint {resolved!r} has no config.json.")
        return BertConfig.from_json_file(config_path)
    if fmt == "tf2":
        return _tf2_config(resolved, lambda: _Tf2Checkpoint(resolved))
    return _google_config(resolved)


def load_encoder(path: str | os.PathLike, output_attentions: bool = False,
                 dtype=None) -> BertEncoder:
    """Builds a `BertEncoder` with the weights of a checkpoint.

    Args:
        path: a Hugging Face model directory (`config.json` + `model.safetensors`), a
            Google checkpoint (a directory with `bert_config.json` and
            `bert_model.ckpt.*`, or the checkpoint prefix), a tf-models-official (TF2
            Model Garden) checkpoint (its directory or prefix; see below), or a
            directory written by `save_encoder`.
        output_attentions: also return attention probabilities.
        dtype: dtype policy of the encoder (e.g. "mixed_bfloat16").

    Returns:
        The encoder. Head variables in the checkpoint (MLM/NSP) are reported as unused;
        use `load_pretrainer` to keep them.

    A tf-models-official checkpoint is the object-based TF2 checkpoint of its
    `BertEncoder` or `BertEncoderV2` (`tf.train.Checkpoint(encoder=...)`, as Model
    Garden's TF2 BERT checkpoints are released) or of a model holding one, such as
    `BertPretrainerV2` (`model/encoder_network/...`): the encoder is found under any
    prefix through the checkpoint's object graph, and tf-models-official need not be
    installed. Its config is the `bert_config.json` beside it, else the Model Garden
    `params.yaml` beside it (`task.model.encoder`; needs PyYAML), else it is read off
    the variable shapes: L, H, A (the query kernel is [H, A, H/A]), I, vocab, positions
    and segments, with the activation assumed to be tf-models-official's default GELU
    (the tanh approximation, "gelu_tanh") and dropouts 0.1; a warning says so. The
    variables cannot tell a pre-LayerNorm encoder (`norm_first=True`) from BERT's
    post-LayerNorm one: only its params.yaml does.

    Example:

    >>> encoder = load_encoder("uncased_L-12_H-768_A-12")  # doctest: +SKIP
    """
    fmt, resolved = _detect(path)
    if fmt == "keras_bert":
        encoder = BertEncoder(read_config(resolved), output_attentions=output_attentions,
                              dtype=dtype)
        weights = os.path.join(resolved, KERAS_BERT_WEIGHTS)
        with _unreadable(weights):
            encoder.load_weights(weights)
        return encoder
    if fmt == "tf2":
        checkpoint = _Tf2Checkpoint(resolved)
        encoder = BertEncoder(_tf2_config(resolved, lambda: checkpoint),
                              output_attentions=output_attentions, dtype=dtype)
        slots = encoder_slots(encoder)
        _assign(slots, checkpoint.read, checkpoint.source,
                names=lambda s: checkpoint.name(_tf2_name(s.google_name)), native_shapes=True)
        used_keys = {checkpoint.key(_tf2_name(s.google_name)) for s in slots}
        # Other objects' variables (an MLM head, an optimizer) are expected; an encoder
        # variable left over is not.
        available = checkpoint.available()
        _report_unused(checkpoint.source, available, used_keys,
                       expected_extra=tuple(available - checkpoint.encoder_keys()))
        return encoder
    config, read, available, source, transpose, names = _open(fmt, resolved)
    encoder = BertEncoder(config, output_attentions=output_attentions, dtype=dtype)
    used = _assign(encoder_slots(encoder), read, source, transpose, names)
    _report_unused(source, available, used, expected_extra=("cls/", "cls."))
    return encoder


def load_pretrainer(path: str | os.PathLike, dtype=None):
    """Builds a `BertPretrainer` (MLM + NSP) with encoder and head weights from a Google
    or Hugging Face pretraining checkpoint. A checkpoint without an NSP head gives a
    pretrainer with `next_sentence=False`; one without an MLM head is an error."""
    from keras_bert.models import BertPretrainer

    fmt, resolved = _detect(path)
    if fmt in ("keras_bert", "tf2"):
        raise CheckpointError(f"{path!r} is read as an encoder only; load it with "
                              "load_encoder and wrap it in BertPretrainer.")
    config, read, available, source, transpose, names = _open(fmt, resolved)
    has_nsp = any(n.startswith(("cls/seq_relationship", "cls.seq_relationship"))
                  for n in available)
    model = BertPretrainer(BertEncoder(config, dtype=dtype), next_sentence=has_nsp)
    used = _assign(encoder_slots(model.encoder) + pretrainer_head_slots(model), read,
                   source, transpose, names)
    _report_unused(source, available, used)
    return model


def _open(fmt, resolved):
    """(config, read(name), available names, source label, transpose?, naming)."""
    if fmt == "google":
        import tensorflow as tf

        with _unreadable(resolved):
            reader = tf.train.load_checkpoint(resolved)
        shapes = reader.get_variable_to_shape_map()
        return (_google_config(resolved),
                lambda n: reader.get_tensor(n) if n in shapes else None,
                set(shapes), f"Google checkpoint {resolved}", False, None)
    config, tensors = _read_hf(resolved)
    prefix = _hf_prefix(tensors)
    return (config, tensors.get, _hf_available(tensors, prefix),
            f"Hugging Face checkpoint {resolved}", True,
            lambda s: google_to_hf_name(s.google_name, prefix))


def save_encoder(encoder: BertEncoder, directory: str | os.PathLike,
                 overwrite: bool = False) -> None:
    """Writes `encoder` in keras_bert's format (config JSON + Keras weights file).

    The directory is written under a temporary name and renamed into place, so an
    interrupted save never leaves a half-written checkpoint behind. A non-empty
    `directory` is an error unless `overwrite=True`, which replaces it only once the
    new checkpoint is complete (the old one stays intact if the save fails).

    Example:

    >>> from keras_bert import BertConfig, BertEncoder, load_encoder
    >>> import tempfile
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=50))
    >>> path = tempfile.mkdtemp() + "/encoder"
    >>> save_encoder(encoder, path)
    >>> save_encoder(encoder, path, overwrite=True)
    >>> load_encoder(path).config == encoder.config
    True
    """
    meta = {"format": "keras_bert", "version": 1, "config": encoder.config.to_dict()}

    def write(tmp):
        with open(os.path.join(tmp, KERAS_BERT_CONFIG), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=2)
        encoder.save_weights(os.path.join(tmp, KERAS_BERT_WEIGHTS))

    atomic_directory(directory, write, overwrite=overwrite)


def save_google_checkpoint(model, directory: str | os.PathLike) -> str:
    """Writes a `BertEncoder` or `BertPretrainer` in google-research/bert's TF1 format.

    Produces `bert_config.json` and `bert_model.ckpt.{index,data-*}` (plus the
    `checkpoint` state file) with the original variable names, so TF1's
    `tf.train.Saver`, tf-models-official's converters and `load_encoder` read it.
    Returns the checkpoint prefix.
    """
    import tensorflow as tf

    from keras_bert.models import BertPretrainer

    if isinstance(model, BertPretrainer):
        encoder, slots = model.encoder, encoder_slots(model.encoder) + pretrainer_head_slots(model)
    elif isinstance(model, BertEncoder):
        encoder, slots = model, encoder_slots(model)
    else:
        raise TypeError(f"save_google_checkpoint takes a BertEncoder or BertPretrainer, got "
                        f"{type(model).__name__}.")
    config = encoder.config.to_google_dict()

    def write(tmp):
        with open(os.path.join(tmp, GOOGLE_CONFIG), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
        tensors = [tf.constant(s.to_google(), dtype=tf.float32) for s in slots]
        tf.raw_ops.SaveV2(prefix=os.path.join(tmp, GOOGLE_CKPT),
                          tensor_names=[s.google_name for s in slots],
                          shape_and_slices=[""] * len(slots), tensors=tensors)
        with open(os.path.join(tmp, "checkpoint"), "w", encoding="utf-8") as f:
            f.write(f'model_checkpoint_path: "{GOOGLE_CKPT}"\n'
                    f'all_model_checkpoint_paths: "{GOOGLE_CKPT}"\n')

    atomic_directory(directory, write)
    return os.path.join(os.fspath(directory), GOOGLE_CKPT)


def check_vocab_matches(vocab_file: str | os.PathLike, vocab_size: int, owner: str, *,
                        checkpoint: str | os.PathLike | None = None) -> int:
    """Raises `MismatchError` unless `vocab_file` belongs to the model: it must have
    exactly `vocab_size` tokens (the vocab size of `owner`, e.g. a checkpoint's config),
    and, when `checkpoint` has a vocab.txt of its own beside it, the same token on every
    line as that one (only its `[unusedN]` slots may hold new tokens, as Google's README
    suggests for adding words). A vocab of another model gives wrong ids without any
    other sign: every sentence embeds alike. Returns the file's token count.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> _ = open(path, "w").write("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n")
    >>> check_vocab_matches(path, 30522, "the model 'bert-base'")
    Traceback (most recent call last):
    ...
    keras_bert.errors.MismatchError: the vocab .../vocab.txt has 4 tokens but the model 'bert-base' has 30522; use the vocab.txt that came with the model.
    """
    from keras_bert.tokenization import load_vocab

    tokens = load_vocab(vocab_file)
    size = len(tokens)
    if size != vocab_size:
        raise MismatchError(f"the vocab {os.fspath(vocab_file)} has {size} tokens but {owner} "
                            f"has {vocab_size}; use the vocab.txt that came with the model.")
    own = checkpoint_vocab(checkpoint) if checkpoint is not None else None
    if own is None or os.path.abspath(own) == os.path.abspath(os.fspath(vocab_file)):
        return size
    own_tokens = load_vocab(own)
    for line, (token, expected) in enumerate(zip(tokens, own_tokens), start=1):
        if token != expected and not expected.startswith("[unused"):
            raise MismatchError(
                f"the vocab {os.fspath(vocab_file)} is not the vocab of {owner}: line {line} "
                f"holds {token!r} where the model's own {own} has {expected!r}, so the "
                "token ids would not match the embeddings; use the model's vocab.txt (only "
                "its [unusedN] lines may be replaced by new tokens).")
    return size


def checkpoint_vocab(path: str | os.PathLike) -> str | None:
    """The vocab.txt that came with a checkpoint (beside it), or None.

    Example:

    >>> checkpoint_vocab("/nonexistent/model") is None
    True
    """
    path = os.fspath(path)
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    candidate = os.path.join(directory, "vocab.txt")
    return candidate if os.path.isfile(candidate) else None


def checkpoint_lower_case(path: str | os.PathLike) -> bool:
    """Whether a checkpoint's vocab is uncased: its `tokenizer_config.json`'s
    `do_lower_case` (Hugging Face), else a "cased" in a Google checkpoint's directory
    name (`cased_L-12_H-768_A-12`), else True (the common uncased vocab).

    Example:

    >>> checkpoint_lower_case("/models/cased_L-12_H-768_A-12")
    False
    """
    path = os.fspath(path)
    # A file or a Google checkpoint prefix names its directory; anything else is one.
    is_file = os.path.isfile(path) or os.path.isfile(path + ".index")
    directory = os.path.dirname(path) if is_file else path
    config = os.path.join(directory, "tokenizer_config.json")
    if os.path.isfile(config):
        with open(config, encoding="utf-8") as f:
            return bool(json.load(f).get("do_lower_case", True))
    name = os.path.basename(os.path.normpath(directory)).lower()
    return not (name.startswith("cased") or "_cased" in name or "-cased" in name)
