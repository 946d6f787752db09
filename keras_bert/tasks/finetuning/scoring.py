"""Scoring a fine-tuned model on a featurized split, as `Finetuning` does after every
epoch and `keras-bert evaluate` and `predict` do later: its decoded predictions, the
official metrics, the merged metrics of several dev splits, their one-line summary, and
the benchmark's submission file name for a split.
"""

from __future__ import annotations

import keras

from keras_bert.core import fileio
from keras_bert.tasks.base import (
    Features,
    FeatureSettings,
    Task,
    feature_dataset,
    length_order,
    restore_order,
)
from keras_bert.training.tracing import trace_predict_once


def predict_split(task: Task, model: keras.Model, examples, features: Features,
                  settings: FeatureSettings, batch_size: int, progress: bool = False) -> list:
    """`model`'s predictions on one featurized split, decoded into the task's terms;
    `progress` shows Keras's progress bar.

    The features are batched from shortest to longest, each batch cut to its longest
    sequence (little padding to compute), and all batches run on one trace of the
    predict step; the outputs are put back in the features' order before decoding."""
    order = length_order(features)
    dataset = feature_dataset(features, batch_size, with_labels=False, order=order)
    trace_predict_once(model, dataset)
    outputs = restore_order(model.predict(dataset, verbose=1 if progress else 0), order)
    return task.decode(examples, features, outputs, settings)


def score_split(task: Task, model: keras.Model, examples, features: Features,
                settings: FeatureSettings, batch_size: int, progress: bool = False) -> dict:
    """Predictions and, when the examples are labelled, official metrics of `model` on
    one featurized split: {"predictions": [...], "metrics": {...}}; `progress` shows
    Keras's progress bar."""
    predictions = predict_split(task, model, examples, features, settings, batch_size,
                                progress=progress)
    return {"predictions": predictions, "metrics": task.evaluate(examples, predictions)}


def dev_metrics(split_metrics: dict[str, dict]) -> dict:
    """The metrics of several dev splits as metrics.json holds them: the first split's
    at the top level, every further split's under its name (MNLI's `dev_mismatched`).

    Example:

    >>> dev_metrics({"dev_matched": {"accuracy": 0.8}, "dev_mismatched": {"accuracy": 0.7}})
    {'accuracy': 0.8, 'dev_mismatched': {'accuracy': 0.7}}
    """
    first, *others = split_metrics
    metrics = dict(split_metrics[first])
    for split in others:
        metrics[split] = split_metrics[split]
    return metrics


def metrics_summary(task: Task, metrics: dict) -> str:
    """The task's official metrics of `metrics`, in their order, as "name value" with
    four decimals, for one line of output."""
    return ", ".join(f"{k} {v:.4f}" for k, v in metrics.items() if k in task.metric_names)


def prediction_file(task: Task, split: str) -> str:
    """The submission file name of a split's predictions: GLUE `<task>.tsv` (MNLI's
    mismatched dev `mnli-mm.tsv`), SQuAD `predictions.json`, CoNLL `predictions.txt`,
    SWAG `predictions.csv`, embedding pairs `predictions.tsv`."""
    if task.family == "glue":
        return f"{task.name}-mm.tsv" if split.endswith("mismatched") else f"{task.name}.tsv"
    return {"squad": "predictions.json", "tagging": "predictions.txt",
            "multiple_choice": "predictions.csv", "embedding": "predictions.tsv"}[task.family]


def write_metrics(path: str, metrics: dict) -> None:
    """Writes metrics.json as strict JSON: a metric that is not a number (a correlation
    of constant predictions, say) is null, with its reason beside it."""
    fileio.write_json(path, fileio.strict_json(metrics, reason=(
        "not a number: the metric is undefined on these predictions (e.g. a correlation "
        "of constant predictions)")))
