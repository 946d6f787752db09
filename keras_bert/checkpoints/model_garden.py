"""tf-models-official (TF2 Model Garden) checkpoints: the object-based TF2 checkpoints
of its `BertEncoder` / `BertEncoderV2`, alone or inside a model such as
`BertPretrainerV2` (keys like `encoder/_transformer_layers/0/.../.ATTRIBUTES/VARIABLE_VALUE`),
with a `bert_config.json` or Model Garden `params.yaml` beside them. Read through TF's
checkpoint reader and the checkpoint's object graph, so tf-models-official itself need
not be installed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import numpy as np

from keras_bert.checkpoints.google import GOOGLE_CONFIG
from keras_bert.checkpoints.matching import (
    assign_slots,
    report_unused,
    tensorflow_for,
    unreadable,
)
from keras_bert.checkpoints.names import encoder_slots
from keras_bert.core.errors import CheckpointError
from keras_bert.model.config import BertConfig
from keras_bert.model.encoder import BertEncoder

logger = logging.getLogger("keras_bert")

MODEL_GARDEN_PARAMS = "params.yaml"
# The key suffix of every variable in an object-based (TF2) checkpoint.
TF2_VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"
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
        tf = tensorflow_for(f"Reading the tf-models-official checkpoint {prefix}")
        from tensorflow.core.protobuf import trackable_object_graph_pb2

        self.prefix = prefix
        self.source = f"tf-models-official checkpoint {prefix}"
        with unreadable(prefix):
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
            if not key.endswith(TF2_VALUE):
                continue
            node = 0
            for part in key[: -len(TF2_VALUE)].split("/"):
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
        return {k for k in self.shapes if k.endswith(TF2_VALUE)}

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


def _params_config(path: str) -> BertConfig:
    """The BERT encoder config in a Model Garden experiment's params.yaml
    (`task.model.encoder` with `type: bert` or `bert_v2`)."""
    try:
        import yaml
    except ImportError:
        raise CheckpointError(f"{path}: reading Model Garden's {MODEL_GARDEN_PARAMS} needs "
                              f"PyYAML (pip install pyyaml); or put a {GOOGLE_CONFIG} beside "
                              "the checkpoint.") from None
    with unreadable(path), open(path, encoding="utf-8") as f:
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
    # tf-models-official's BertEncoderConfig defaults for absent fields; values are
    # taken as written (a YAML `true` is no layer count), each problem named by its key.
    defaults = {"vocab_size": 30522, "hidden_size": 768, "num_layers": 12,
                "num_attention_heads": 12, "intermediate_size": 3072, "dropout_rate": 0.1,
                "attention_dropout_rate": 0.1, "max_position_embeddings": 512,
                "type_vocab_size": 2, "initializer_range": 0.02}
    keys = {"vocab_size": "vocab_size", "hidden_size": "hidden_size",
            "num_layers": "num_layers", "num_heads": "num_attention_heads",
            "intermediate_size": "intermediate_size", "hidden_dropout": "dropout_rate",
            "attention_dropout": "attention_dropout_rate",
            "max_position_embeddings": "max_position_embeddings",
            "type_vocab_size": "type_vocab_size", "initializer_range": "initializer_range"}
    try:
        return BertConfig.from_fields({**defaults, **d}, keys,
                                      hidden_act=_MODEL_GARDEN_ACTIVATIONS[act])
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: {e}") from None


def _tf2_config(prefix: str, checkpoint: Callable[[], _Tf2Checkpoint]) -> BertConfig:
    """bert_config.json beside the checkpoint, else params.yaml, else read off shapes."""
    directory = os.path.dirname(prefix) or "."
    if os.path.isfile(os.path.join(directory, GOOGLE_CONFIG)):
        return BertConfig.from_json_file(os.path.join(directory, GOOGLE_CONFIG))
    if os.path.isfile(os.path.join(directory, MODEL_GARDEN_PARAMS)):
        return _params_config(os.path.join(directory, MODEL_GARDEN_PARAMS))
    return checkpoint().inferred_config()


def model_garden_config(prefix: str) -> BertConfig:
    """The config of a tf-models-official checkpoint: `bert_config.json` beside it, else
    `params.yaml`, else read off its variable shapes."""
    return _tf2_config(prefix, lambda: _Tf2Checkpoint(prefix))


def load_model_garden_encoder(prefix: str, output_attentions: bool = False,
                              dtype=None) -> BertEncoder:
    """A `BertEncoder` with the weights of the tf-models-official encoder in a checkpoint."""
    checkpoint = _Tf2Checkpoint(prefix)
    encoder = BertEncoder(_tf2_config(prefix, lambda: checkpoint),
                          output_attentions=output_attentions, dtype=dtype)
    slots = encoder_slots(encoder)
    assign_slots(slots, checkpoint.read, checkpoint.source,
                 names=lambda s: checkpoint.name(_tf2_name(s.google_name)), native_shapes=True)
    used_keys = {checkpoint.key(_tf2_name(s.google_name)) for s in slots}
    # Other objects' variables (an MLM head, an optimizer) are expected; an encoder
    # variable left over is not.
    available = checkpoint.available()
    report_unused(checkpoint.source, available, used_keys,
                  expected_extra=tuple(available - checkpoint.encoder_keys()))
    return encoder
