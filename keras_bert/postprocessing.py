"""Moved to `keras_bert.tasks.squad`; this keeps `keras_bert.postprocessing` imports working."""

from keras_bert.tasks.squad import SpanPrediction, best_span  # noqa: F401
