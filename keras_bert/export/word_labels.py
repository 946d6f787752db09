"""`serve_text` of a tagger (NER) model."""

from __future__ import annotations

from keras_bert.export.signatures import string_batches


def serve_words(module, inputs):
    """Per-token labels of the packed text (to be replaced by per-word labels)."""
    inputs = string_batches(inputs)
    packed = module.pack([module.source.tokenizer.tokenize(inputs["text"])])
    return module.model_outputs(packed)
