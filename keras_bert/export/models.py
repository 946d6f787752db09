"""The export formats a model's `export(format=...)` takes (`FORMATS`, and the command
line's spelling of the SavedModel) and their check; `keras_bert.tasks.exporting.export`
writes them."""

from __future__ import annotations

from keras_bert.core.errors import ArgumentError

FORMATS = ("tf_saved_model", "litert", "onnx")
# `keras-bert export --format` spells the SavedModel "saved_model": both are accepted.
FORMAT_ALIASES = {"saved_model": "tf_saved_model"}


def check_format(format) -> str:
    """The export format `format` names (`FORMATS`, or an alias), or an
    `ArgumentError` listing the accepted names.

    Example:

    >>> check_format("saved_model"), check_format("litert")
    ('tf_saved_model', 'litert')
    >>> check_format("tflite")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: export(format='tflite') is not a format: use 'tf_saved_model' (also spelled 'saved_model', as `keras-bert export --format` does), 'litert' or 'onnx'.
    """
    name = FORMAT_ALIASES.get(format, format) if isinstance(format, str) else format
    if name in FORMATS:
        return name
    aliases = {canonical: alias for alias, canonical in FORMAT_ALIASES.items()}
    names = [repr(f) + (f" (also spelled {aliases[f]!r}, as `keras-bert export --format` "
                        "does)" if f in aliases else "") for f in FORMATS]
    raise ArgumentError(f"export(format={format!r}) is not a format: use "
                        f"{', '.join(names[:-1])} or {names[-1]}.", field="format")
