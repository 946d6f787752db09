"""`TextPreprocessor`, what a task model with raw text holds (`keras_bert.tasks.
keras_face`): the task (its labels), the vocabulary, the casing and the feature settings;
raw inputs -> checked examples (`keras_bert.tasks.text_inputs`) -> features -> tf.data
of dynamically padded batches (with sample weights when given), and outputs -> the
task's predictions. It is saved in the model's config (`get_config`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.core.errors import ArgumentError
from keras_bert.tasks.base import Features, FeatureSettings, Task, feature_dataset
from keras_bert.tasks.finetuning.scoring import predict_split
from keras_bert.tasks.registry import get_task
from keras_bert.tasks.text_inputs import checked_inputs, decoded
from keras_bert.text.tokenizer import BertTokenizer

DEFAULT_BATCH_SIZE = 32  # keras.Model.fit's

# Weights travel through `feature_dataset` as one more (rank 1) input.
_WEIGHT_KEY = "_sample_weight"



class TextPreprocessor:
    """Raw text -> a task model's inputs, and its outputs -> the task's predictions.

    Args:
        task: the `Task` (with its labels) whose examples, features and decoding apply.
        tokenizer: a `BertTokenizer` (vocabulary and casing).
        settings: the `FeatureSettings` (sequence length, SQuAD windows, ...).
    """

    def __init__(self, task: Task, tokenizer: BertTokenizer, settings: FeatureSettings):
        self.task = task
        self.tokenizer = tokenizer
        self.settings = settings

    @classmethod
    def for_task(cls, task: Task, vocabulary, lower_case: bool = True,
                 sequence_length: int = 128, **settings) -> TextPreprocessor:
        """A preprocessor of `task` with the vocabulary (a vocab.txt path or its tokens)."""
        return cls(task, BertTokenizer(vocabulary, lower_case=lower_case),
                   FeatureSettings(max_seq_length=sequence_length, **settings))

    @property
    def sequence_length(self) -> int:
        return self.settings.max_seq_length

    def get_config(self) -> dict:
        """Everything needed to rebuild it, the vocabulary included (a `.keras` file
        holds it in the model's config)."""
        return {"task": self.task.name, "task_config": self.task.config(),
                "vocabulary": list(self.tokenizer.vocabulary),
                "lower_case": self.tokenizer.lower_case,
                "settings": dataclasses.asdict(self.settings)}

    @classmethod
    def from_config(cls, config: dict) -> TextPreprocessor:
        task = get_task(config["task"])
        task.restore(config["task_config"])
        return cls(task, BertTokenizer(config["vocabulary"], lower_case=config["lower_case"]),
                   FeatureSettings(**config["settings"]))

    # --- raw inputs -> features -------------------------------------------------------
    def examples(self, x, y=None, *, method: str = "predict", labelled: bool = False) -> list:
        """The task's examples of raw inputs `x` (and labels `y`), checked at the door
        (`checked_inputs`): `labelled` requires labels."""
        x, y, _ = materialize(x, y)
        x, y = checked_inputs(self.task, x, y, method=method, labelled=labelled)
        return self.task.text_examples(x, y)

    def features(self, examples):
        return self.task.features(examples, self.tokenizer, self.settings)

    def dataset(self, x, y=None, batch_size: int | None = None, *, training: bool = False,
                shuffle: bool = True, epochs: int = 1, seed: int | None = None):
        """(tf.data of padded batches, steps per epoch, examples, features) for raw
        inputs; for training, the dataset holds every epoch (shuffled anew each one
        unless `shuffle=False`)."""
        examples = self.examples(x, y, method="fit" if training else "predict",
                                 labelled=training)
        if training:
            examples = self.task.training_examples(examples)
        return self.examples_dataset(examples, batch_size, training=training,
                                     shuffle=shuffle, epochs=epochs, seed=seed)

    def examples_dataset(self, examples, batch_size: int | None = None, *,
                         training: bool = False, shuffle: bool = True, epochs: int = 1,
                         seed: int | None = None, weights=None, class_weight=None):
        """`dataset` of examples; `weights` (one per example) and `class_weight`
        (class index -> weight) make it yield `(x, y, sample_weight)`."""
        features = self.features(examples)
        batch_size = batch_size or DEFAULT_BATCH_SIZE
        dataset = features_dataset(features, batch_size, training=training, shuffle=shuffle,
                                   epochs=epochs, seed=seed,
                                   weights=feature_weights(features, weights, class_weight))
        return dataset, math.ceil(len(features) / batch_size), examples, features

    def predictions(self, model, x, y=None, batch_size: int | None = None, *,
                    method: str = "predict") -> tuple:
        """(examples, features, decoded predictions) of `model` on raw inputs."""
        examples = self.examples(x, y, method=method)
        features = self.features(examples)
        predictions = predict_split(self.task, model, examples, features, self.settings,
                                    batch_size or DEFAULT_BATCH_SIZE)
        return examples, features, predictions


def features_dataset(features: Features, batch_size: int, *, training: bool = False,
                     shuffle: bool = True, epochs: int = 1, seed: int | None = None,
                     weights: np.ndarray | None = None, group_by_length: bool = False):
    """`feature_dataset` of `features` (for training: every epoch, shuffled anew each
    one unless `shuffle=False`); with per-feature `weights` it yields `(x, y,
    sample_weight)`; `group_by_length` draws shuffled training batches from runs of
    similar length (`feature_dataset`)."""
    batched = features
    if weights is not None:
        batched = dataclasses.replace(features, inputs={**features.inputs, _WEIGHT_KEY: weights})
    if training and shuffle:
        dataset = feature_dataset(batched, batch_size, training=True, seed=seed, epochs=epochs,
                                  group_by_length=group_by_length)
    else:
        dataset = feature_dataset(batched, batch_size, with_labels=features.labels is not None)
        if training and epochs > 1:
            dataset = dataset.repeat(epochs)
    return dataset if weights is None else dataset.map(_split_weights)

def feature_weights(features: Features, weights, class_weight):
    """Per feature (windows share their example's), its sample weight times its class's
    weight; None when neither is given."""
    if weights is None and class_weight is None:
        return None
    out = np.ones(len(features), np.float32)
    if weights is not None:
        out *= np.asarray(weights, np.float32)[features.example_index]
    if class_weight is not None:
        table = np.ones(max(class_weight) + 1, np.float32)
        for index, weight in class_weight.items():
            table[index] = weight
        labels = np.asarray(features.labels)
        out *= np.where(labels < len(table), table[np.minimum(labels, len(table) - 1)], 1.0)
    return out


def _split_weights(x, y):
    x = dict(x)
    return x, y, x.pop(_WEIGHT_KEY)


def classification_task(label_names: Sequence[str] | None = None, num_classes: int = 2,
                        pair: bool | None = False) -> Task:
    """The generic text classification task (regression with `num_classes=1`);
    `pair=None`: single texts or pairs, decided by the first `fit`."""
    from keras_bert.tasks.glue.classification import TextClassificationTask

    if label_names is None and num_classes > 1:
        label_names = [str(i) for i in range(num_classes)]
    return TextClassificationTask(label_names, pair=pair)


# --- raw inputs as Python lists ------------------------------------------------------
def materialize(x, y):
    """(x, y, sample weights or None) as Python lists: a tf.data of strings is read
    whole (elements or batches; `(text, label)` tuples carry labels, `(text, label,
    weight)` sample weights too, `{"text", "text_pair"}` dicts pairs); numpy arrays
    become lists."""
    weights = None
    if isinstance(x, tf.data.Dataset):
        if y is not None:
            raise ArgumentError("give labels inside the tf.data dataset ((text, label) "
                                "elements), not as y.", field="y")
        spec = x.element_spec
        parts = len(spec) if isinstance(spec, tuple) and not isinstance(spec[0], str) else 1
        if isinstance(spec, tuple) and parts not in (2, 3):
            raise ArgumentError(f"the tf.data dataset's elements are tuples of {parts}; give "
                                "texts, (text, label) or (text, label, sample_weight).",
                                field="x")
        labelled = isinstance(spec, tuple)
        text_spec = spec[0] if labelled else spec
        batched = tf.nest.flatten(text_spec)[0].shape.rank > 0
        columns = [[] for _ in range(parts)]
        for element in x.as_numpy_iterator():
            for column, part in zip(columns, element if labelled else (element,)):
                column.append(part)
        x = _concatenate(columns[0], batched)
        y = _concatenate(columns[1], batched) if parts > 1 else None
        weights = _concatenate(columns[2], batched) if parts > 2 else None
    return decoded(x), decoded(y), decoded(weights)


def _concatenate(parts: list, batched: bool):
    """Elements (or batches, when `batched`) of a dataset as one list (a dict of lists
    for dict elements)."""
    if parts and isinstance(parts[0], dict):
        return {k: _concatenate([p[k] for p in parts], batched) for k in parts[0]}
    if not batched:
        return list(parts)
    return [item for part in parts for item in list(part)]
