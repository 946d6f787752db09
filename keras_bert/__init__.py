"""keras_bert: BERT (Devlin et al., 2019) for TensorFlow/Keras.

The public API:

- `BertConfig`, `BertEncoder`: the network.
- Task models: `BertPretrainer`, `BertClassifier`, `BertSpanLabeler`,
  `BertTokenClassifier`, `BertMultipleChoice`, `BertFeatureExtractor`,
  `BertTextEmbedder` (sentence embeddings, sentence-transformers folders).
- `load_encoder`, `load_pretrainer`: weights from Hugging Face, Google, keras-hub
  presets or keras_bert checkpoints, by path or by name (`hf://ORG/NAME`, Google's
  release names); `save_google_checkpoint` writes Google's TF1 format,
  `save_keras_hub_preset` a keras-hub preset.
- `BertTokenizer` (google-research/bert's FullTokenizer ids, in-graph),
  `BertPreprocessor` (strings -> encoder inputs), `learn_vocab` (WordPiece vocab.txt).
- `create_pretraining_data`, `pretraining_dataset` (keras_bert.data): masked-LM/NSP
  TFRecords and the tf.data reader that feeds `BertPretrainer`.
- `Finetuning`, `FinetuneOptions`, `load_finetuned` (keras_bert.tasks.finetuning): the
  paper's tasks fine-tuned through `model.fit`, scored with the official metrics.
- `export_saved_model`, `load_export_source` (keras_bert.export): SavedModels for TF
  Serving (`serving_default` ids, `serve_text` raw text) and TF Hub-style reuse.
- `attention_maps`, `attention_summary`, `read_training_curves` (keras_bert.plotting):
  attention heat maps and training curves (drawing needs the `plot` extra, matplotlib).

`import keras_bert` is light and the same in every process (the `keras-bert` command
included): each name above loads its module, and TensorFlow, on first use.

Keras classes register when they are defined (`@keras.saving.register_keras_serializable(
package="keras_bert")`, as keras-hub's do), so Keras finds one in a `.keras` file once
its module is imported. The rule: when `import keras_bert` finds Keras already imported,
it imports the modules that define keras_bert's Keras classes right away (the task
models of `keras_bert.tasks.task_models`, the encoder and its layers, the optimizer's
schedule), so

    import keras, keras_bert
    model = keras.saving.load_model("classifier.keras")

works in a fresh process; otherwise (Keras not imported yet: `import keras_bert` stays
light) they are imported with the first name used from here once Keras is imported.
`load_finetuned` loads a fine-tuning run directory.
"""

import sys

from keras_bert.core.lazy import lazy_exports

__version__ = "0.1.0"

# public name -> the module that defines it.
_EXPORTS = {
    "load_encoder": "keras_bert.checkpoints",
    "load_pretrainer": "keras_bert.checkpoints",
    "read_config": "keras_bert.checkpoints",
    "save_encoder": "keras_bert.checkpoints",
    "save_google_checkpoint": "keras_bert.checkpoints",
    "save_keras_hub_preset": "keras_bert.checkpoints",
    "CheckpointError": "keras_bert.core.errors",
    "KerasBertError": "keras_bert.core.errors",
    "UserInputError": "keras_bert.core.errors",
    "PRESETS": "keras_bert.model.config",
    "BertConfig": "keras_bert.model.config",
    "MaskedLmMasker": "keras_bert.data",
    "export_saved_model": "keras_bert.export",
    "load_export_source": "keras_bert.tasks.export_sources",
    "PretrainingDataError": "keras_bert.data",
    "PretrainingDataOptions": "keras_bert.data",
    "create_pretraining_data": "keras_bert.data",
    "pretraining_dataset": "keras_bert.data",
    "BertEncoder": "keras_bert.model.encoder",
    "BertPretrainer": "keras_bert.model.models",
    "BertClassifier": "keras_bert.tasks.glue.model",
    "BertFeatureExtractor": "keras_bert.tasks.task_model",
    "BertMultipleChoice": "keras_bert.tasks.multiple_choice.model",
    "BertSpanLabeler": "keras_bert.tasks.squad.model",
    "BertTokenClassifier": "keras_bert.tasks.tagging.model",
    "BertTextEmbedder": "keras_bert.tasks.embedding.model",
    "TextPreprocessor": "keras_bert.tasks.keras_face",
    "attention_maps": "keras_bert.plotting",
    "attention_summary": "keras_bert.plotting",
    "read_training_curves": "keras_bert.plotting",
    "BertPreprocessor": "keras_bert.text.packing",
    "pack_inputs": "keras_bert.text.packing",
    "truncate_segments": "keras_bert.text.packing",
    "BertTokenizer": "keras_bert.text.tokenizer",
    "VocabularyWarning": "keras_bert.text.tokenizer",
    "basic_tokenize": "keras_bert.text.basic_tokenizer",
    "load_vocab": "keras_bert.text.vocab",
    "FinetuneOptions": "keras_bert.tasks.finetuning",
    "Finetuning": "keras_bert.tasks.finetuning",
    "load_finetuned": "keras_bert.tasks.finetuning",
    "Pretraining": "keras_bert.training",
    "PretrainingOptions": "keras_bert.training",
    "run_pretraining": "keras_bert.training",
    "learn_vocab": "keras_bert.text.vocab_learning",
    "reserved_tokens": "keras_bert.text.vocab_learning",
    "write_vocab": "keras_bert.text.vocab_learning",
}

__all__ = sorted(_EXPORTS) + ["__version__"]
_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS)


def __getattr__(name: str):
    value = _lazy_getattr(name)
    if not _registered and "keras" in sys.modules:
        _register_keras_classes()
    return value


_registered = False


def _register_keras_classes():
    """Imports the modules that define keras_bert's Keras classes (the task models, the
    encoder and its layers, the optimizer's schedule): each class registers when it is
    defined, and `keras.saving.load_model` then finds it. They import Keras, not
    TensorFlow."""
    global _registered
    _registered = True
    import keras_bert.model.encoder  # noqa: F401
    import keras_bert.model.models  # noqa: F401
    import keras_bert.tasks.task_models  # noqa: F401
    import keras_bert.training.optimization  # noqa: F401


# `import keras, keras_bert`: Keras is there, so register now (see the module docstring).
if "keras" in sys.modules:
    _register_keras_classes()
