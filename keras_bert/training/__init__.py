"""Pretraining BERT with `model.fit` on tf.distribute strategies.

- `optimization`: BERT's AdamW (or LAMB), warmup + linear decay, clipping, accumulation.
- `MaskedLMLoss` / `pretraining_losses` (from `keras_bert.losses`): the masked-LM loss
  averaged over the global batch's real predictions.
- `distribute`: strategy names to `tf.distribute` strategies; mixed precision.
- `options`: `PretrainingOptions`, how to pretrain, checked when made.
- `validation`: data, vocab, config and batch checks that run before training.
- `building`: the model config, the `BertPretrainer` to start from, the training dataset.
- `run_directory`: what a run directory holds; resuming, extending or replacing its run.
- `callbacks`: fault-tolerant checkpoints, windowed metrics/TensorBoard, progress bar.
- `pretraining`: `Pretraining` and `run_pretraining`, the job behind `keras-bert pretrain`.
"""

from keras_bert.losses import MaskedLMLoss, pretraining_losses
from keras_bert.training.building import resolve_config
from keras_bert.training.callbacks import MetricsLogger, ProgressBar, TrainingCheckpoint
from keras_bert.training.distribute import resolve_precision, resolve_strategy
from keras_bert.training.optimization import AdamW, Lamb, LinearWarmupDecay, create_optimizer
from keras_bert.training.options import PretrainingOptions
from keras_bert.training.pretraining import Pretraining, run_pretraining
from keras_bert.training.validation import PretrainingDataInfo, inspect_pretraining_data

__all__ = [
    "AdamW", "Lamb", "LinearWarmupDecay", "MaskedLMLoss", "MetricsLogger", "Pretraining",
    "PretrainingDataInfo", "PretrainingOptions", "ProgressBar", "TrainingCheckpoint",
    "create_optimizer", "inspect_pretraining_data", "pretraining_losses", "resolve_config",
    "resolve_precision", "resolve_strategy", "run_pretraining",
]
