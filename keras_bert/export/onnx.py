"""ONNX export of the token-id signature: `export_onnx`.

Writes `OUTPUT_DIR/NAME/VERSION/model.onnx` (the same numbered versions as the
SavedModel export, written to a hidden temporary directory and renamed into place once
complete) holding the SavedModel's `serving_default`: int32 `input_word_ids`,
`input_mask`, `input_type_ids` [batch, seq] ([batch, choices, seq] for multiple
choice; both axes dynamic) in, the same outputs under the same names out (string
outputs such as a classifier's `label` included). Beside it: the model card
`assets.extra/keras_bert.json` (with `"format": "onnx"`; also in the file's metadata
under that name) and the vocabulary `assets/vocab.txt` a client tokenizes with.

The graph is `ServingModule.serve_ids` converted by tf2onnx (the `onnx` extra:
`pip install "keras_bert[onnx]"`, imported only when converting). Unlike the
SavedModel, the ONNX model does not check its inputs: tf2onnx drops TensorFlow's
assertions, so a client sends ids as `serving_default` documents them (an id >= the
vocabulary size still fails in ONNX Runtime's Gather, but a negative one counts from
the end, as ONNX's Gather does; a mask other than 0/1, or a row of 0s, is not refused).
Only float32 models are exported: ONNX Runtime's CPU kernels have no bfloat16 matrix
products.

Example (a run of `keras-bert finetune`):

    source = load_export_source("runs/sst2")
    path, card = export_onnx(source, "saved_models", "sst2")
    session = onnxruntime.InferenceSession(os.path.join(path, "model.onnx"))
"""

from __future__ import annotations

import logging
import os
import shutil

import tensorflow as tf

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError, KerasBertError
from keras_bert.export.card import MODEL_CARD, describe_signature, model_card
from keras_bert.export.saved_model import check_name
from keras_bert.export.signatures import ServingModule
from keras_bert.export.source import ExportSource
from keras_bert.export.versions import claim_version
from keras_bert.text.vocab import VOCAB_FILE

ONNX_FILE = "model.onnx"
DEFAULT_OPSET = 17
# The dynamic axes of the id inputs, named in the file.
_AXES = {False: ("batch", "seq"), True: ("batch", "choices", "seq")}


class OnnxConversionError(KerasBertError, RuntimeError):
    """tf2onnx left TensorFlow ops that ONNX has no operator for in the graph."""


def check_onnx_converter() -> None:
    """Raises `ArgumentError` unless tf2onnx and onnx (the `onnx` extra) import."""
    try:
        import onnx  # noqa: F401
        import tf2onnx  # noqa: F401
    except ImportError as e:
        raise ArgumentError(
            f"the ONNX export needs tf2onnx and onnx ({e}); install them with "
            "pip install \"keras_bert[onnx]\".", field="format") from None


def onnx_model(module: ServingModule, opset: int = DEFAULT_OPSET):
    """`module.serve_ids` as an `onnx.ModelProto`: inputs and outputs under the
    signature's names, the id inputs' axes named (batch, [choices,] seq)."""
    check_onnx_converter()
    import onnx
    import tf2onnx
    from tf2onnx import tf_loader

    function = module.serve_ids.get_concrete_function()
    specs = tf.nest.flatten(function.structured_input_signature)
    # The function's own inputs come first, then what it captures (the weights, and the
    # label names, a constant that the freezing below folds into the graph).
    inputs = [t.name for t in function.inputs[:len(specs)]]
    outputs = [t.name for t in function.outputs]
    rename = {t.name: key for key, t in function.structured_outputs.items()}
    rename.update({name: spec.name for name, spec in zip(inputs, specs)})
    tf_logger = logging.getLogger("tensorflow")
    level = tf_logger.level
    tf_logger.setLevel(logging.ERROR)  # tf2onnx's TF1 freezing calls warn of deprecation
    try:
        with tf.device("/cpu:0"):
            frozen = tf_loader.from_function(function, inputs, outputs)
            proto, _ = tf2onnx.convert.from_graph_def(
                frozen, name="serving_default", input_names=inputs, output_names=outputs,
                opset=opset, tensors_to_rename=rename)
    finally:
        tf_logger.setLevel(level)
    # tf2onnx keeps going past an op it cannot convert, leaving the TensorFlow op in.
    unknown = sorted({node.op_type for node in _nodes(proto.graph)
                      if not onnx.defs.has(node.op_type, node.domain)})
    if unknown:
        raise OnnxConversionError(f"tf2onnx {tf2onnx.__version__} left ops without an ONNX "
                                  f"operator (opset {opset}): {', '.join(unknown)}.")
    onnx.checker.check_model(proto)
    axes = _AXES[len(specs[0].shape) == 3]
    for value in proto.graph.input:
        for dim, axis in zip(value.type.tensor_type.shape.dim, axes):
            dim.dim_param = axis
    return proto


def _nodes(graph):
    for node in graph.node:
        yield node
        for attribute in node.attribute:  # the bodies of If and Loop
            for subgraph in [attribute.g, *attribute.graphs]:
                yield from _nodes(subgraph)


def export_onnx(source: ExportSource, output_dir: str | os.PathLike, name: str,
                precision: str = "float32", opset: int = DEFAULT_OPSET
                ) -> tuple[str, dict]:
    """Writes `source`'s `serving_default` as `output_dir/name/<next version>/model.onnx`.

    Args:
        source: from `load_export_source`, at float32.
        output_dir: the parent of the model directory (e.g. saved_models).
        name: the model name (directory under `output_dir`).
        precision: "float32" (the only one ONNX Runtime's CPU kernels serve).
        opset: the ONNX opset to convert to.

    Returns:
        (the version directory, the model card).
    """
    check_name(name)
    if precision != "float32" or source.model.dtype_policy.compute_dtype != "float32":
        raise ArgumentError(f"the ONNX export is float32 only (precision {precision!r}, "
                            f"model compute dtype {source.model.dtype_policy.compute_dtype}"
                            "): ONNX Runtime's CPU kernels have no bfloat16 matrix "
                            "products; load the source at float32.", field="precision")
    model_dir = os.path.join(os.fspath(output_dir), name)
    fileio.check_writable(model_dir, kind="directory", what="output_dir")
    check_onnx_converter()
    import onnx
    import tf2onnx

    module = ServingModule(source, text=False)
    proto = onnx_model(module, opset)
    signature = describe_signature(module.serve_ids.get_concrete_function())
    with claim_version(model_dir) as (version, directory):
        card = model_card(source, precision, {"serving_default": signature}, False,
                          version, name, text=False)
        card["format"] = "onnx"
        card["onnx"] = {"file": ONNX_FILE, "opset": opset, "ir_version": proto.ir_version,
                        "tf2onnx_version": tf2onnx.__version__,
                        "onnx_version": onnx.__version__,
                        "input_checks": "none: send ids as serving_default documents them"}
        entry = proto.metadata_props.add()
        entry.key, entry.value = MODEL_CARD, fileio.json_text(card)
        with open(os.path.join(directory, ONNX_FILE), "wb") as f:
            f.write(proto.SerializeToString())
        os.makedirs(os.path.join(directory, "assets"))
        shutil.copyfile(source.vocab_file, os.path.join(directory, "assets", VOCAB_FILE))
        extra = os.path.join(directory, "assets.extra")
        os.makedirs(extra)
        fileio.write_json(os.path.join(extra, MODEL_CARD), card)
    return os.path.join(model_dir, str(version)), card
