"""keras_bert: BERT (Devlin et al., 2019) for TensorFlow/Keras.

The public API:

- `BertConfig`, `BertEncoder`: the network.
- Task models: `BertPretrainer`, `BertClassifier`, `BertSpanLabeler`,
  `BertTokenClassifier`, `BertMultipleChoice`, `BertFeatureExtractor`.
- `load_encoder`, `load_pretrainer`: weights from Hugging Face, Google or keras_bert
  checkpoints; `save_google_checkpoint` writes Google's TF1 format.
"""

import os as _os

_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from keras_bert.checkpoints import (  # noqa: E402
    CheckpointError,
    load_encoder,
    load_pretrainer,
    save_encoder,
    save_google_checkpoint,
)
from keras_bert.config import PRESETS, BertConfig  # noqa: E402
from keras_bert.encoder import BertEncoder  # noqa: E402
from keras_bert.models import (  # noqa: E402
    BertClassifier,
    BertFeatureExtractor,
    BertMultipleChoice,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
)

__version__ = "0.1.0"

__all__ = [
    "PRESETS", "BertClassifier", "BertConfig", "BertEncoder", "BertFeatureExtractor",
    "BertMultipleChoice", "BertPretrainer", "BertSpanLabeler", "BertTokenClassifier",
    "CheckpointError", "__version__", "load_encoder", "load_pretrainer", "save_encoder",
    "save_google_checkpoint",
]
