"""The model card: the JSON record of what an export holds and where it came from.

`model_card` gives the record (config, vocab checksum, casing, lengths, label names,
source, precision, signatures, export time, versions) that an export writes beside its
model, `assets.extra/keras_bert.json` in a SavedModel; `describe_signature` gives a
signature's entry (input and output dtypes and shapes).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import os

import tensorflow as tf

from keras_bert.checkpoints.loading import MODEL_CARD  # noqa: F401 (the card's file name, named here too)
from keras_bert.core import input_files
from keras_bert.export.source import ExportSource


def model_card(source: ExportSource, precision: str, signatures: dict, jit_compile: bool,
               version: int, name: str, text: bool = True, ops: dict | None = None,
               serving_compatible: bool = False) -> dict:
    """The `assets.extra/keras_bert.json` record of an export; `ops` is
    `keras_bert.export.ops.serving_requirements` of its signatures."""
    try:
        version_of_package = importlib.metadata.version("keras_bert")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        version_of_package = None
    return {
        "name": name, "version": version, "kind": source.kind, "task": source.task,
        "source_checkpoint": os.path.abspath(source.source) if source.source else None,
        "config": source.config.to_dict(),
        "vocab_size": source.tokenizer.vocab_size,
        "vocab_sha256": input_files.file_sha256(source.vocab_file),
        "lower_case": source.tokenizer.lower_case,
        "max_seq_length": source.max_seq_length,
        "label_names": None if source.label_names is None else list(source.label_names),
        **source.serving.card_fields(),
        "text_inputs": list(source.text_inputs) if text else [],
        "text_truncation": text_truncation(source) if text else None,
        "precision": precision, "xla": jit_compile,
        "signatures": signatures,
        "ops": ops, "serving_compatible": serving_compatible,
        "export_time": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "keras_bert_version": version_of_package, "tensorflow_version": tf.__version__,
    }


def text_truncation(source: ExportSource) -> str:
    """What `serve_text` does with a text longer than the model takes, for the card."""
    return source.serving.truncation(source.max_seq_length)


def describe_signature(fn) -> dict:
    """A concrete function's inputs and outputs: {name: {"dtype", "shape"}} each."""
    def spec(s):
        if s.shape.rank is None:  # any shape, checked in the graph (text inputs)
            return {"dtype": s.dtype.name, "shape": None}
        return {"dtype": s.dtype.name, "shape": [None if d is None else int(d)
                                                 for d in s.shape.as_list()]}

    args, kwargs = fn.structured_input_signature
    inputs = kwargs or args[0]  # the signature's one dict argument
    return {"inputs": {k: spec(v) for k, v in sorted(inputs.items())},
            "outputs": {k: spec(v) for k, v in sorted(fn.structured_outputs.items())}}
