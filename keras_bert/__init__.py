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

import os as _os

_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from keras_bert.checkpoints import (  # noqa: E402
    CheckpointError,
    load_encoder,
    load_pretrainer,
    read_config,
    save_encoder,
    save_google_checkpoint,
)
from keras_bert.config import PRESETS, BertConfig  # noqa: E402
from keras_bert.data import (  # noqa: E402
    MaskedLmMasker,
    PretrainingDataError,
    PretrainingDataOptions,
    create_pretraining_data,
    pretraining_dataset,
)
from keras_bert.encoder import BertEncoder  # noqa: E402
from keras_bert.models import (  # noqa: E402
    BertClassifier,
    BertFeatureExtractor,
    BertMultipleChoice,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
)
from keras_bert.preprocessing import BertPreprocessor, pack_inputs, truncate_segments  # noqa: E402
from keras_bert.tokenization import (  # noqa: E402
    BertTokenizer,
    VocabularyWarning,
    basic_tokenize,
    load_vocab,
)
from keras_bert.training import Pretraining, PretrainingOptions, run_pretraining  # noqa: E402
from keras_bert.vocab import learn_vocab, reserved_tokens, write_vocab  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "PRESETS", "BertClassifier", "BertConfig", "BertEncoder", "BertFeatureExtractor",
    "BertMultipleChoice", "BertPreprocessor", "BertPretrainer", "BertSpanLabeler",
    "BertTokenClassifier", "BertTokenizer", "CheckpointError", "MaskedLmMasker",
    "Pretraining", "PretrainingDataError", "PretrainingDataOptions", "PretrainingOptions",
    "VocabularyWarning", "run_pretraining",
    "create_pretraining_data", "pretraining_dataset",
    "__version__", "basic_tokenize", "learn_vocab", "load_encoder", "load_pretrainer",
    "load_vocab", "pack_inputs", "read_config", "reserved_tokens", "save_encoder", "save_google_checkpoint",
    "truncate_segments", "write_vocab",
]
