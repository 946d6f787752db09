"""Writing a SavedModel for TF Serving and TF Hub-style reuse: `export_saved_model`.

The SavedModel runs with TensorFlow and tensorflow-text alone (this package need not be
installed where it is served) and is written in TF Serving's layout
`OUTPUT_DIR/NAME/VERSION/`: every export is a new numeric version, claimed atomically
(concurrent exports get distinct versions), written to a hidden temporary directory and
renamed into place only once complete (`keras_bert.export.versions`).

It holds the signatures of `keras_bert.export.signatures` (`serving_default`, and
`serve_text` unless left out); an encoder export is also the TF Hub-style reusable
SavedModel of `keras_bert.export.hub`, with the matching preprocessor in
`VERSION/preprocessor/`. `assets.extra/keras_bert.json` is the model card (config, vocab
checksum, casing, lengths, label names, source, precision, export time) and
`assets.extra/tf_serving_warmup_requests` holds TF Serving warmup requests
(`PredictionLog` records; needs the `tensorflow-serving-api` extra).
"""

from __future__ import annotations

import dataclasses
import os
import re

import tensorflow as tf

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError
from keras_bert.core.precision import check_precision
from keras_bert.export.card import MODEL_CARD, describe_signature, model_card
from keras_bert.export.hub import PREPROCESSOR_DIR, HubEncoder, Preprocessor
from keras_bert.export.ops import serving_requirements, signature_ops
from keras_bert.export.signatures import ServingModule
from keras_bert.export.source import ExportSource
from keras_bert.export.versions import claim_version
from keras_bert.export.warmup import check_serving_api, write_warmup_requests

_NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def check_name(name: str) -> str:
    """A model name usable as TF Serving's model directory (not a version number)."""
    if not _NAME_PATTERN.fullmatch(name or "") or name.isdigit():
        raise ArgumentError(f"name {name!r} must be letters, digits, '_', '.' or '-' (not "
                            "only digits: those are versions).", field="name")
    return name


def export_saved_model(source: ExportSource, output_dir: str | os.PathLike, name: str,
                       precision: str = "float32", jit_compile: bool = False,
                       warmup: bool = True, text: bool = True,
                       serving_compatible: bool = False) -> tuple[str, dict]:
    """Writes `source` to `output_dir/name/<next version>/`, atomically.

    Args:
        source: from `load_export_source` (its model at `precision` already).
        output_dir: the TF Serving model base directory's parent (e.g. saved_models).
        name: the model name (directory under `output_dir`).
        precision: recorded in the model card ("float32" or "mixed_bfloat16").
        jit_compile: compile the model part of every signature with XLA.
        warmup: write `assets.extra/tf_serving_warmup_requests` (needs
            `tensorflow-serving-api`).
        text: add the `serve_text` signature. Without it the SavedModel has no
            tensorflow-text ops, for model servers built without them (the encoder's
            preprocessor SavedModel is written either way).
        serving_compatible: tokenize with TensorFlow core ops only (no tensorflow-text
            op in any signature or the preprocessor), so that any stock TF Serving
            loads the model; the ids are the same, tokenizing is slower.

    The model card's `ops` lists each signature's ops outside TensorFlow core with the
    first tensorflow-text and TF Serving releases that register them.

    Returns:
        (the version directory, the model card).
    """
    check_name(name)
    check_precision(precision)
    model_dir = os.path.join(os.fspath(output_dir), name)
    fileio.check_writable(model_dir, kind="directory", what="output_dir")
    if warmup:
        check_serving_api()
    if serving_compatible:
        source = dataclasses.replace(source, tokenizer=source.tokenizer.core_ops())
    module = (HubEncoder if source.serving.hub_reusable else ServingModule)(
        source, jit_compile, text)
    signatures = {"serving_default": module.serve_ids.get_concrete_function()}
    if text:
        signatures["serve_text"] = module.serve_text.get_concrete_function()
    described = {k: describe_signature(v) for k, v in signatures.items()}
    ops = serving_requirements({k: signature_ops(v) for k, v in signatures.items()})
    with claim_version(model_dir) as (version, directory):
        card = model_card(source, precision, described, jit_compile, version, name, text,
                          ops=ops, serving_compatible=serving_compatible)
        tf.saved_model.save(module, directory, signatures=signatures)
        extra = os.path.join(directory, "assets.extra")
        os.makedirs(extra, exist_ok=True)
        fileio.write_json(os.path.join(extra, MODEL_CARD), card)
        if warmup:
            write_warmup_requests(extra, source, name, text)
        if source.serving.hub_reusable:
            tf.saved_model.save(
                Preprocessor(source.tokenizer, source.vocab_file, source.max_seq_length),
                os.path.join(directory, PREPROCESSOR_DIR))
    return os.path.join(model_dir, str(version)), card
