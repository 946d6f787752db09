"""keras_bert: BERT (Devlin et al., 2019) for TensorFlow/Keras.

The public API:

- `BertConfig`, `BertEncoder`: the network.
- Task models: `BertPretrainer`, `BertClassifier`, `BertSpanLabeler`,
  `BertTokenClassifier`, `BertMultipleChoice`, `BertFeatureExtractor`.
- `load_encoder`, `load_pretrainer`: weights from Hugging Face, Google or keras_bert
  checkpoints; `save_google_checkpoint` writes Google's TF1 format.
- `BertTokenizer` (google-research/bert's FullTokenizer ids, in-graph),
  `BertPreprocessor` (strings -> encoder inputs), `learn_vocab` (WordPiece vocab.txt).
- `create_pretraining_data`, `pretraining_dataset` (keras_bert.data): masked-LM/NSP
  TFRecords and the tf.data reader that feeds `BertPretrainer`.
"""

import importlib as _importlib

__version__ = "0.1.0"

# public name -> the module that defines it (imported on first use: `import keras_bert`
# stays quick, and a program can configure TensorFlow before anything loads it).
_EXPORTS = {
    "load_encoder": "keras_bert.checkpoints",
    "load_pretrainer": "keras_bert.checkpoints",
    "read_config": "keras_bert.checkpoints",
    "save_encoder": "keras_bert.checkpoints",
    "save_google_checkpoint": "keras_bert.checkpoints",
    "CheckpointError": "keras_bert.errors",
    "KerasBertError": "keras_bert.errors",
    "UserInputError": "keras_bert.errors",
    "PRESETS": "keras_bert.config",
    "BertConfig": "keras_bert.config",
    "MaskedLmMasker": "keras_bert.data",
    "PretrainingDataError": "keras_bert.data",
    "PretrainingDataOptions": "keras_bert.data",
    "create_pretraining_data": "keras_bert.data",
    "pretraining_dataset": "keras_bert.data",
    "BertEncoder": "keras_bert.encoder",
    "BertClassifier": "keras_bert.models",
    "BertFeatureExtractor": "keras_bert.models",
    "BertMultipleChoice": "keras_bert.models",
    "BertPretrainer": "keras_bert.models",
    "BertSpanLabeler": "keras_bert.models",
    "BertTokenClassifier": "keras_bert.models",
    "BertPreprocessor": "keras_bert.preprocessing",
    "pack_inputs": "keras_bert.preprocessing",
    "truncate_segments": "keras_bert.preprocessing",
    "BertTokenizer": "keras_bert.tokenization",
    "VocabularyWarning": "keras_bert.tokenization",
    "basic_tokenize": "keras_bert.tokenization",
    "load_vocab": "keras_bert.tokenization",
    "Pretraining": "keras_bert.training",
    "PretrainingOptions": "keras_bert.training",
    "run_pretraining": "keras_bert.training",
    "learn_vocab": "keras_bert.vocab",
    "reserved_tokens": "keras_bert.vocab",
    "write_vocab": "keras_bert.vocab",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
