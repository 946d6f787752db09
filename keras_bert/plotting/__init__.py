"""Pictures of a model and of a training run: attention heat maps and training curves.

- `attention`: `attention_maps` (an encoder's attention probabilities on one input) and
  `attention_summary` (per head: attention to [CLS], [SEP], neighbours; entropy).
- `curves`: `read_training_curves`, the loss and metric curves a run directory holds.
- `drawing`: the figures and the PNG files (`write_attention_plots`,
  `write_training_plots`); matplotlib, an optional extra, is imported only to draw.
- `options`: `AttentionOptions` and `PlotOptions`, what `keras-bert attention` and
  `keras-bert plot` are asked for, declared once.
"""

from keras_bert.plotting.attention import (
    AttentionMaps,
    attention_maps,
    attention_summary,
    format_summary_table,
)
from keras_bert.plotting.curves import (
    FINETUNE_CONFIG,
    LOGS,
    TRAIN_LOG,
    TrainingCurves,
    read_training_curves,
)
from keras_bert.plotting.drawing import (
    ATTENTION_PROBS_FILE,
    ATTENTION_SUMMARY_FILE,
    TRAINING_CURVES_FILE,
    PlottingUnavailableError,
    attention_figure,
    attention_png_name,
    figure_png,
    training_curves_figure,
    write_attention_plots,
    write_files,
    write_training_plots,
)

__all__ = [
    "ATTENTION_PROBS_FILE", "ATTENTION_SUMMARY_FILE", "FINETUNE_CONFIG", "LOGS",
    "TRAINING_CURVES_FILE", "TRAIN_LOG", "AttentionMaps", "PlottingUnavailableError",
    "TrainingCurves", "attention_figure", "attention_maps", "attention_png_name",
    "attention_summary", "figure_png", "format_summary_table", "read_training_curves",
    "training_curves_figure", "write_attention_plots", "write_files", "write_training_plots",
]
