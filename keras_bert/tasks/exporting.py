"""`task_model.export(path)`: a task model with its preprocessor written as `keras-bert
export` writes a fine-tuned run (the same `ExportSource`, signatures, model card and
TF Serving layout), for a model built and trained in Python. The family's serving comes
from the model's task (`Task.serving`); the export stage writes it."""

from __future__ import annotations

import os
import tempfile

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError
from keras_bert.export.models import check_format
from keras_bert.export.source import ExportSource
from keras_bert.text.vocab import VOCAB_FILE


def export_source(model, vocab_file: str) -> ExportSource:
    """The `ExportSource` of a task model with a preprocessor, its vocabulary written
    to `vocab_file` (the SavedModel's asset)."""
    preprocessor = model.preprocessor
    if preprocessor is None:
        raise ArgumentError(
            f"this {type(model).__name__} has no preprocessor, so an export could not take "
            f"text: build it with {type(model).__name__}.from_preset(...).",
            field="preprocessor")
    serving = preprocessor.task.serving(preprocessor.settings)
    if serving is None:
        raise ArgumentError(f"a {preprocessor.task.name} model has no serving to export.",
                            field="model")
    serving.check_seq_length(preprocessor.sequence_length)
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.writelines(f"{token}\n" for token in preprocessor.tokenizer.vocabulary)
    return ExportSource(model, serving, preprocessor.tokenizer, vocab_file,
                        preprocessor.sequence_length, task=preprocessor.task.name)


def load_task_model_file(path: str, precision: str = "float32",
                         max_seq_length: int | None = None):
    """The task model saved in the `.keras` file `path` (`model.save`: an embedder, a
    classifier trained in Python), with its preprocessor, at `precision`, its
    `serve_text` length set to `max_seq_length` when given; `ArgumentError` for a file
    holding a model without a preprocessor (a bare encoder: export its checkpoint)."""
    import dataclasses

    from keras_bert.checkpoints.opener import open_artifact
    from keras_bert.export.source import checked_seq_length, export_policy
    from keras_bert.model.models import with_dtype_policy
    from keras_bert.tasks.registry import register_task_models

    register_task_models()  # the file names its class: defined, so registered, first
    model = open_artifact(path, keras_files=True).load()
    if getattr(model, "preprocessor", None) is None:
        raise ArgumentError(f"{path!r} holds a {type(model).__name__} without a "
                            "preprocessor, which cannot take text: save a task model made "
                            "with from_preset(...), or export the encoder's checkpoint.",
                            field="checkpoint")
    if max_seq_length is not None:
        checked_seq_length(max_seq_length, model.encoder.config, explicit=True)
        preprocessor = model.preprocessor
        preprocessor.settings = dataclasses.replace(preprocessor.settings,
                                                    max_seq_length=max_seq_length)
    if precision != "float32":
        preprocessor = model.preprocessor
        model = with_dtype_policy(model, export_policy(precision))
        model.preprocessor = preprocessor
    return model


def export(model, filepath, format: str = "tf_saved_model", **kwargs) -> str:
    """Writes `model` to `filepath/VERSION/` (see `TextFace.export`); `kwargs` go to
    `export_saved_model`, `export_litert` or `export_onnx` (e.g. `warmup=False`,
    `quantize="int8"`). Returns the version directory."""
    import keras

    if keras.backend.backend() != "tensorflow":
        raise ArgumentError("export writes TensorFlow SavedModels and needs the TensorFlow "
                            f"backend; KERAS_BACKEND is {keras.backend.backend()!r}: save the "
                            "model (.keras) and export it under TensorFlow.", field="format")
    format = check_format(format)
    filepath = os.path.abspath(os.fspath(filepath))
    output_dir, name = os.path.split(filepath)
    # Before the tracing and conversion (tens of seconds): a path nothing can be
    # written to (`/proc/x`, a read-only mount) fails now, naming it.
    fileio.check_writable(filepath, kind="directory", what="export path")
    with tempfile.TemporaryDirectory() as tmp:
        source = export_source(model, os.path.join(tmp, VOCAB_FILE))
        if format == "tf_saved_model":
            from keras_bert.export.saved_model import export_saved_model

            path, _ = export_saved_model(source, output_dir, name, **kwargs)
        elif format == "litert":
            from keras_bert.export.litert import export_litert

            path, _ = export_litert(source, output_dir, name, **kwargs)
        else:
            from keras_bert.export.onnx import export_onnx

            path, _ = export_onnx(source, output_dir, name, **kwargs)
    return path
