"""Which ops an exported signature needs, and which model servers register them.

A SavedModel loads in a model server only if the server's binary registers every op of
its graph. TensorFlow's own ops (those of `tf.raw_ops`) are in every TF Serving build;
tensorflow-text's ops are linked into the stock `tensorflow_model_server` (and the
`tensorflow/serving` Docker images, which carry that binary) at the tensorflow-text
version each TF Serving release pins, so a newer op fails on an older server with "Op
type not registered".

`signature_ops` lists the op types a concrete function runs (its nested functions
included), `custom_ops` the ones outside TensorFlow core with the first versions that
register them, for the model card; `saved_model_ops` reads them back from a written
SavedModel (what a test or a deployment check audits).

The versions come from the tensorflow/text sources (the release whose `ops_lib` first
links the op) and tensorflow/serving's `workspace.bzl` at each release tag (the
tensorflow-text version it pins; the stock server links `ops_lib` through
`SUPPORTED_TENSORFLOW_OPS` in `tensorflow_serving/model_servers/BUILD`).
"""

from __future__ import annotations

import os

import tensorflow as tf

# op type -> (first tensorflow-text release that registers it, first TF Serving release
# whose stock model server registers it, a note).
TEXT_OPS = {
    "FastBertNormalize": ("2.9.0", "2.12.0", "TF Serving 2.11 pins tensorflow-text 2.8"),
    "FastWordpieceTokenizeWithOffsets": (
        "2.7.0", "2.10.0", "also the 2.7.3 patch release; not 2.8.x or 2.9.x, which pin "
        "tensorflow-text 2.6"),
    "TFText>FastWordpieceDetokenize": ("2.7.0", "2.10.0", "also 2.7.3"),
    "TFText>WhitespaceTokenizeWithOffsetsV2": ("2.7.0", "2.10.0", "also 2.7.3"),
    "TFText>RoundRobinTrim": (
        "2.13.0", "2.20.0", "TF Serving 2.12-2.19 pin tensorflow-text 2.12.1, whose "
        "ops_lib does not link the trimmer"),
    "TFText>RoundRobinGenerateMasks": ("2.13.0", "2.20.0", "as RoundRobinTrim"),
    "WordpieceTokenizeWithOffsets": ("1.0.0b0", "2.0.0", ""),
    "NormalizeUTF8": ("1.0.0b0", "2.2.0", ""),
    "CaseFoldUTF8": ("1.0.0b0", "2.2.0", ""),
    "RegexSplitWithOffsets": ("2.0.0", "2.2.0", ""),
}


def _version(text: str) -> tuple:
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


def core_op_names() -> frozenset[str]:
    """The op types TensorFlow itself registers (`tf.raw_ops`)."""
    return frozenset(name for name in dir(tf.raw_ops) if not name.startswith("_"))


def _ops_of(graph_def, roots=None) -> set[str]:
    """Op types of `graph_def`'s nodes (or of the library functions `roots` only), with
    every library function they call, directly or through an attribute (`f`,
    `then_branch`, `body`...)."""
    library = {f.signature.name: f for f in graph_def.library.function}
    ops, seen = set(), set()
    pending = list(graph_def.node) if roots is None else []
    todo = list(roots or [])

    def visit(node):
        if node.op in library:
            todo.append(node.op)
        else:
            ops.add(node.op)
        for value in node.attr.values():
            if value.HasField("func"):
                todo.append(value.func.name)
            elif value.HasField("list"):
                todo.extend(f.name for f in value.list.func)

    for node in pending:
        visit(node)
    while todo:
        name = todo.pop()
        if name in seen or name not in library:
            continue
        seen.add(name)
        for node in library[name].node_def:
            visit(node)
    return ops


def signature_ops(concrete_function) -> set[str]:
    """The op types a concrete function runs, nested functions included."""
    return _ops_of(concrete_function.graph.as_graph_def())


def _meta_graph(path):
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(os.fspath(path), "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    return proto.meta_graphs[0]


def all_saved_model_ops(path: str | os.PathLike) -> set[str]:
    """Every op type in a SavedModel's graph and function library, reachable from a
    signature or not (a model server imports them all)."""
    graph = _meta_graph(path).graph_def
    ops = {node.op for node in graph.node}
    ops.update(node.op for f in graph.library.function for node in f.node_def)
    return ops - {f.signature.name for f in graph.library.function}


def saved_model_ops(path: str | os.PathLike) -> dict[str, set[str]]:
    """Signature name -> the op types it runs, read from a SavedModel directory's
    saved_model.pb (no TensorFlow object is loaded)."""
    meta = _meta_graph(path)
    graph = meta.graph_def
    producers = {node.name: node for node in graph.node}
    result = {}
    for name, signature in meta.signature_def.items():
        # The signature's outputs come from a (Stateful)PartitionedCall of its function.
        roots, nodes = [], []
        for tensor in signature.outputs.values():
            node = producers.get(tensor.name.split(":")[0])
            if node is not None:
                nodes.append(node)
                roots.extend(v.func.name for v in node.attr.values() if v.HasField("func"))
        ops = _ops_of(graph, roots)
        ops.update(n.op for n in nodes)
        result[name] = ops
    return result


def custom_ops(ops) -> list[dict]:
    """The ops of `ops` outside TensorFlow core, each with the package and the first
    versions that register it (None where unknown), sorted by name."""
    core = core_op_names()
    entries = []
    for op in sorted(set(ops) - core):
        text_version, serving_version, note = TEXT_OPS.get(op, (None, None, ""))
        entries.append({"op": op,
                        "package": "tensorflow-text" if op in TEXT_OPS else None,
                        "first_tensorflow_text": text_version,
                        "first_tf_serving": serving_version,
                        **({"note": note} if note else {})})
    return entries


def serving_requirements(signature_op_sets: dict[str, set[str]]) -> dict:
    """The model card's `ops` entry: per signature its non-core ops; whether that list
    is empty (`tensorflow_core_only`: then the model needs no op a TF Serving build of
    the exporting TensorFlow version lacks); and the oldest stock TF Serving release that
    registers all the listed ops (None when there are none, or one is unknown)."""
    per_signature = {name: custom_ops(ops) for name, ops in sorted(signature_op_sets.items())}
    needed = [entry for entries in per_signature.values() for entry in entries]
    if not needed or any(entry["first_tf_serving"] is None for entry in needed):
        oldest = None
    else:
        oldest = max((entry["first_tf_serving"] for entry in needed), key=_version)
    return {"outside_tensorflow_core": per_signature, "tensorflow_core_only": not needed,
            "oldest_stock_tf_serving": oldest}
