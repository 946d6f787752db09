"""Exporting an encoder or a fine-tuned task model for serving and reuse.

- `source`: `load_export_source` reads a checkpoint or fine-tuned run into an
  `ExportSource` (the model at its precision, the tokenizer, lengths, label names).
- `signatures`: `ServingModule`, the `serving_default` (ids) and `serve_text` (raw
  text, tokenized in-graph) signatures; the families whose `serve_text` does more
  keep it in their folder (`keras_bert.tasks.squad.serving`, `tasks.tagging.serving`,
  `tasks.multiple_choice.serving`).
- `hub`: the TF Hub pair: the reusable encoder SavedModel and its preprocessor.
- `warmup`: TF Serving warmup requests (needs the `tensorflow-serving-api` extra).
- `ops`: which ops a signature needs outside TensorFlow core, and the first
  tensorflow-text and TF Serving releases that register them.
- `card`: `model_card`, the JSON record of an export (`assets.extra/keras_bert.json`).
- `saved_model`: `export_saved_model`, writing all of it as `OUTPUT_DIR/NAME/VERSION/`.
- `versions`: `claim_version`, the next VERSION claimed atomically (concurrent exports
  get distinct ones; the temporaries of dead exports are removed).
- `litert`: `export_litert`, the LiteRT (TensorFlow Lite) model
  `OUTPUT_DIR/NAME/VERSION/model.tflite` with the same signatures and card (weights
  float32, int8 or float16), and `LiteRTModel` to run one; BERT's tokenizer in
  LiteRT's ops is `keras_bert.text.litert_ops`, and each family's LiteRT `serve_text`
  its folder's `litert_serving`.
- `onnx`: `export_onnx`, the ids signature as `OUTPUT_DIR/NAME/VERSION/model.onnx`
  through tf2onnx (the `onnx` extra, imported only when converting).
"""

from keras_bert.export.card import MODEL_CARD, model_card
from keras_bert.export.hub import PREPROCESSOR_DIR
from keras_bert.export.litert import (
    LITERT_FILE,
    QUANTIZATIONS,
    LiteRTModel,
    export_litert,
    load_interpreter,
)
from keras_bert.export.onnx import ONNX_FILE, check_onnx_converter, export_onnx
from keras_bert.export.ops import all_saved_model_ops, saved_model_ops, serving_requirements
from keras_bert.export.saved_model import check_name, export_saved_model
from keras_bert.export.source import (
    DEFAULT_SEQ_LENGTH,
    KINDS,
    ExportSource,
    load_export_source,
)
from keras_bert.export.versions import claim_version, next_version
from keras_bert.export.warmup import (
    WARMUP_FILE,
    check_serving_api,
    serving_api_available,
    warmup_requests,
)
from keras_bert.text.litert_ops import LITERT_TEXT_OPS, LiteTokenizer

__all__ = [
    "DEFAULT_SEQ_LENGTH", "KINDS", "LITERT_FILE", "LITERT_TEXT_OPS", "MODEL_CARD",
    "PREPROCESSOR_DIR", "QUANTIZATIONS", "LiteRTModel", "LiteTokenizer", "export_litert",
    "load_interpreter", "ONNX_FILE", "check_onnx_converter", "export_onnx",
    "WARMUP_FILE", "ExportSource", "all_saved_model_ops", "check_name", "check_serving_api",
    "export_saved_model", "load_export_source", "model_card",
    "claim_version", "next_version", "saved_model_ops", "serving_api_available",
    "serving_requirements", "warmup_requests",
]
