"""Fine-tuning a pretrained encoder on one task, as the paper does it (§4, Appendix A.3):
the task model on top of the encoder, every weight trained end to end with AdamW
(weight decay 0.01 except LayerNorm and biases), 10% linear warmup then linear decay,
batch 32, 3 epochs, and, for small tasks, the best of several restarts on dev.

- `options`: `FinetuneOptions`, the families' defaults, the checks against task and model.
- `inputs`: the task's splits (`TaskSource`) and the model to start from (`model_source`).
- `scoring`: predictions and official metrics of a model on a featurized split.
- `run`: `Finetuning`, which checks everything, trains with `model.fit` and writes the run.
- `run_directory`: the run directory's files and `load_finetuned`, which reads it back for
  `keras-bert evaluate`, `predict`, `export` and `attention`.
"""

from keras_bert.core.lazy import lazy_exports

# public name -> the module that defines it (loaded on first use).
_EXPORTS = {
    "DEFAULT_LEARNING_RATES": "keras_bert.tasks.finetuning.options",
    "DEFAULT_SEQ_LENGTH": "keras_bert.tasks.finetuning.options",
    "DEFAULT_SEQ_LENGTHS": "keras_bert.tasks.finetuning.options",
    "FEATURE_BASED_LEARNING_RATE": "keras_bert.tasks.finetuning.options",
    "FinetuneOptions": "keras_bert.tasks.finetuning.options",
    "FinetunedModel": "keras_bert.tasks.finetuning.run_directory",
    "Finetuning": "keras_bert.tasks.finetuning.run",
    "Split": "keras_bert.tasks.finetuning.run",
    "TaskSource": "keras_bert.tasks.finetuning.inputs",
    "check_output_dir": "keras_bert.tasks.finetuning.run_directory",
    "dev_metrics": "keras_bert.tasks.finetuning.scoring",
    "load_finetuned": "keras_bert.tasks.finetuning.run_directory",
    "metrics_summary": "keras_bert.tasks.finetuning.scoring",
    "model_source": "keras_bert.tasks.finetuning.inputs",
    "predict_split": "keras_bert.tasks.finetuning.scoring",
    "prediction_file": "keras_bert.tasks.finetuning.scoring",
    "score_split": "keras_bert.tasks.finetuning.scoring",
    "write_metrics": "keras_bert.tasks.finetuning.scoring",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
