"""Checkpoint import and export: Google TF1, Hugging Face, tf-models-official (TF2 Model
Garden) and keras_bert's own directories, all matched to the model by Google's variable
names and shapes.

- `names`: each model variable under its google-research/bert name and Google shape;
  the mapping to Hugging Face keys.
- `matching`: assigning checkpoint arrays to those variables by name and shape,
  reporting unused variables, and unreadable files as `CheckpointError`.
- `google`: Google's TF1 checkpoints, read and written (`save_google_checkpoint`).
- `huggingface`: Hugging Face `config.json` + `model.safetensors`.
- `model_garden`: tf-models-official's object-based TF2 checkpoints of its encoders.
- `native`: keras_bert's own directory (`save_encoder`) and `keras-bert pretrain`'s
  training checkpoints (`RUN/checkpoints/ckpt-STEP`).
- `vocab`: `checkpoint_vocab`, the one rule for finding the vocab of a checkpoint or
  run directory; its casing; and the check that a vocab fits it.
- `loading`: format detection and the entry points `read_config`, `load_encoder`,
  `load_pretrainer`; `describe_export`, what an export given as a checkpoint is.
"""

from keras_bert.checkpoints.google import GOOGLE_CKPT, GOOGLE_CONFIG, save_google_checkpoint
from keras_bert.checkpoints.loading import (
    describe_export,
    load_encoder,
    load_pretrainer,
    read_config,
)
from keras_bert.checkpoints.model_garden import MODEL_GARDEN_PARAMS
from keras_bert.checkpoints.names import encoder_slots, google_to_hf_name, pretrainer_head_slots
from keras_bert.checkpoints.native import KERAS_BERT_CONFIG, KERAS_BERT_WEIGHTS, save_encoder
from keras_bert.checkpoints.vocab import (
    check_vocab_matches,
    checkpoint_lower_case,
    checkpoint_vocab,
)
from keras_bert.core.errors import CheckpointError

__all__ = [
    "GOOGLE_CKPT", "GOOGLE_CONFIG", "KERAS_BERT_CONFIG", "KERAS_BERT_WEIGHTS",
    "MODEL_GARDEN_PARAMS", "CheckpointError", "check_vocab_matches", "checkpoint_lower_case",
    "checkpoint_vocab", "describe_export", "encoder_slots", "google_to_hf_name", "load_encoder",
    "load_pretrainer", "pretrainer_head_slots", "read_config", "save_encoder",
    "save_google_checkpoint",
]
