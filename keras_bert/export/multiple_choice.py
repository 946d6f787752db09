"""`serve_text` of a multiple-choice (SWAG) model."""

from __future__ import annotations


def serve_choices(module, inputs):
    raise NotImplementedError("multiple-choice serve_text is not built yet")
