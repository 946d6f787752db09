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

from keras_bert.tasks.finetuning.inputs import TaskSource, model_source
from keras_bert.tasks.finetuning.options import (
    DEFAULT_LEARNING_RATES,
    DEFAULT_SEQ_LENGTH,
    DEFAULT_SEQ_LENGTHS,
    FEATURE_BASED_LEARNING_RATE,
    FinetuneOptions,
)
from keras_bert.tasks.finetuning.run import Finetuning, Split
from keras_bert.tasks.finetuning.run_directory import (
    CONFIG_FILE,
    METRICS_FILE,
    MODEL_FILE,
    FinetunedModel,
    check_output_dir,
    load_finetuned,
)
from keras_bert.tasks.finetuning.scoring import (
    dev_metrics,
    metrics_summary,
    predict_split,
    prediction_file,
    score_split,
)

__all__ = [
    "CONFIG_FILE", "DEFAULT_LEARNING_RATES", "DEFAULT_SEQ_LENGTH", "DEFAULT_SEQ_LENGTHS",
    "FEATURE_BASED_LEARNING_RATE", "METRICS_FILE", "MODEL_FILE", "FinetuneOptions",
    "FinetunedModel", "Finetuning", "Split", "TaskSource",
    "check_output_dir", "dev_metrics", "load_finetuned", "metrics_summary", "model_source",
    "predict_split", "prediction_file", "score_split",
]
