"""Pretraining BERT with `model.fit` on tf.distribute strategies.

- `optimization`: BERT's AdamW (or LAMB), warmup + linear decay, clipping, accumulation.
- `MaskedLMLoss` / `pretraining_losses` (from `keras_bert.model.losses`): the masked-LM loss
  averaged over the global batch's real predictions.
- `distribute`: strategy names to `tf.distribute` strategies; mixed precision.
- `options`: `PretrainingOptions`, how to pretrain, checked when made.
- `preflight`: checks that run before training: the data (as
  `keras_bert.data.inspection` reads it) against the options, config and vocab; the batch.
- `building`: the model config, the `BertPretrainer` to start from, the training dataset.
- `run_directory`: what a run directory holds; resuming, extending or replacing its run.
- `callbacks`: fault-tolerant checkpoints, windowed metrics/TensorBoard, progress bar.
- `pretraining`: `Pretraining` and `run_pretraining`, the job behind `keras-bert pretrain`.
- `tracing`: how often and how long Keras traces the step functions (`TraceClock`).
"""

from keras_bert.core.lazy import lazy_exports

# public name -> the module that defines it (loaded on first use).
_EXPORTS = {
    "AdamW": "keras_bert.training.optimization",
    "Lamb": "keras_bert.training.optimization",
    "LinearWarmupDecay": "keras_bert.training.optimization",
    "MaskedLMLoss": "keras_bert.model.losses",
    "MetricsLogger": "keras_bert.training.callbacks",
    "Pretraining": "keras_bert.training.pretraining",
    "PretrainingDataInfo": "keras_bert.data.inspection",
    "PretrainingOptions": "keras_bert.training.options",
    "ProgressBar": "keras_bert.training.callbacks",
    "TrainingCheckpoint": "keras_bert.training.callbacks",
    "create_optimizer": "keras_bert.training.optimization",
    "inspect_pretraining_data": "keras_bert.data.inspection",
    "pretraining_losses": "keras_bert.model.losses",
    "resolve_config": "keras_bert.training.building",
    "resolve_precision": "keras_bert.training.distribute",
    "resolve_strategy": "keras_bert.training.distribute",
    "run_pretraining": "keras_bert.training.pretraining",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
