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
