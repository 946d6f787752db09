"""Exporting an encoder or a fine-tuned task model for serving and reuse.

- `source`: `ExportSource`, what every export is made of (the model at its precision,
  the tokenizer, lengths, label names); `keras_bert.load_export_source`
  (`keras_bert.tasks.export_sources`) reads a checkpoint or fine-tuned run into one.
- `serving`: `ModelServing`, what export asks of a model kind (each family's folder
  under `keras_bert.tasks` serves its own; `keras_bert.tasks.export_sources` lists the
  kinds, `KINDS`).
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
- `options`: `ExportOptions`, what `keras-bert export` is asked for, declared once
  (its flags are made from them).

The names below load their module on first use (`keras_bert.core.lazy`): reading the
options loads no TensorFlow.
"""

from keras_bert.core.lazy import lazy_exports

_EXPORTS = {
    "MODEL_CARD": "keras_bert.export.card",
    "model_card": "keras_bert.export.card",
    "PREPROCESSOR_DIR": "keras_bert.export.hub",
    "LITERT_FILE": "keras_bert.export.litert",
    "QUANTIZATIONS": "keras_bert.export.litert",
    "LiteRTModel": "keras_bert.export.litert",
    "export_litert": "keras_bert.export.litert",
    "load_interpreter": "keras_bert.export.litert",
    "ONNX_FILE": "keras_bert.export.onnx",
    "check_onnx_converter": "keras_bert.export.onnx",
    "export_onnx": "keras_bert.export.onnx",
    "all_saved_model_ops": "keras_bert.export.ops",
    "saved_model_ops": "keras_bert.export.ops",
    "serving_requirements": "keras_bert.export.ops",
    "FORMATS": "keras_bert.export.options",
    "QUANTIZE": "keras_bert.export.options",
    "ExportOptions": "keras_bert.export.options",
    "check_name": "keras_bert.export.saved_model",
    "export_saved_model": "keras_bert.export.saved_model",
    "DEFAULT_SEQ_LENGTH": "keras_bert.export.source",
    "ModelServing": "keras_bert.export.serving",
    "ExportSource": "keras_bert.export.source",
    "claim_version": "keras_bert.export.versions",
    "next_version": "keras_bert.export.versions",
    "WARMUP_FILE": "keras_bert.export.warmup",
    "check_serving_api": "keras_bert.export.warmup",
    "serving_api_available": "keras_bert.export.warmup",
    "warmup_requests": "keras_bert.export.warmup",
    "LITERT_TEXT_OPS": "keras_bert.text.litert_ops",
    "LiteTokenizer": "keras_bert.text.litert_ops",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
