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
- `keras_hub`: keras-hub BERT presets (backbone and `BertTextClassifier`), read without
  keras-hub.
- `keras_hub_writing`: keras_bert encoders and classifiers written as keras-hub presets
  (`save_keras_hub_preset`).
- `remote`: checkpoints by name (`resolve_checkpoint_name`): `hf://ORG/NAME[@REVISION]`
  through huggingface_hub's cache, and Google's release names, handed to `google_release`.
- `google_release`: Google's release names (`uncased_L-12_H-768_A-12`, ...), their table
  (`GOOGLE_RELEASES`), and each downloaded once to keras_bert's cache and checked.
- `native`: keras_bert's own directory (`save_encoder`) and `keras-bert pretrain`'s
  training checkpoints (`RUN/checkpoints/ckpt-STEP`).
- `training_runs`: a `keras-bert pretrain` run directory read back (its run_config.json,
  its newest training checkpoint).
- `finetuning_runs`: a `keras-bert finetune` run directory read back: its file names
  (`FINETUNE_CONFIG`, `FINETUNED_MODEL`: their one owner), whether a path is one (asked
  by the opener only), its record and its encoder's config, read without its weights.
- `sentence_transformers`: sentence-transformers folders (`modules.json`: a BERT
  Transformer, Pooling, Dense, Normalize; prompts, similarity) read without torch, a
  module it cannot compute refused by name.
- `vocab`: `checkpoint_vocab`, the one rule for finding the vocab of a checkpoint or
  run directory; its casing; and the check that a vocab fits it.
- `loading`: format detection (`detect_format`) and the entry points `read_config`,
  `load_encoder`, `load_pretrainer`; `describe_export`, what an export given as a
  checkpoint is.
- `opener`: `open_artifact`, the one opener of an artifact by path or name (any kind
  above, a keras-hub task preset, a fine-tuning run directory, a `.keras` file) -> an
  `Artifact`: what it is (`kind`), its config (before any weights load), vocab file,
  casing, labels, tokenizer and `load()`. Nothing else asks what kind a path is.
"""

from keras_bert.checkpoints.finetuning_runs import read_finetuning_record
from keras_bert.checkpoints.google import GOOGLE_CKPT, GOOGLE_CONFIG, save_google_checkpoint
from keras_bert.checkpoints.keras_hub_writing import save_keras_hub_preset
from keras_bert.checkpoints.loading import (
    describe_export,
    load_encoder,
    load_pretrainer,
    read_config,
)
from keras_bert.checkpoints.model_garden import MODEL_GARDEN_PARAMS
from keras_bert.checkpoints.names import encoder_slots, google_to_hf_name, pretrainer_head_slots
from keras_bert.checkpoints.native import KERAS_BERT_CONFIG, KERAS_BERT_WEIGHTS, save_encoder
from keras_bert.checkpoints.opener import KINDS, Artifact, open_artifact
from keras_bert.checkpoints.remote import resolve_checkpoint_name
from keras_bert.checkpoints.vocab import (
    check_vocab_matches,
    checkpoint_lower_case,
    checkpoint_vocab,
)
from keras_bert.core.errors import CheckpointError
from keras_bert.core.run_files import FINETUNE_CONFIG, FINETUNED_MODEL

__all__ = [
    "FINETUNED_MODEL", "FINETUNE_CONFIG", "GOOGLE_CKPT", "GOOGLE_CONFIG", "KERAS_BERT_CONFIG",
    "KERAS_BERT_WEIGHTS", "KINDS", "MODEL_GARDEN_PARAMS", "Artifact", "CheckpointError",
    "check_vocab_matches", "checkpoint_lower_case", "checkpoint_vocab", "describe_export",
    "encoder_slots", "google_to_hf_name", "load_encoder",
    "load_pretrainer", "open_artifact", "pretrainer_head_slots", "read_config",
    "read_finetuning_record", "resolve_checkpoint_name", "save_encoder",
    "save_google_checkpoint", "save_keras_hub_preset",
]
