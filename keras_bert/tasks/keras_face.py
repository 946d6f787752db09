"""The raw-text face of the task models (keras-hub's habits): `from_preset`, `fit`,
`evaluate` and `predict` on Python lists, numpy arrays or tf.data of strings, and one
call per family that returns what a person reads (`classify`, `answer`, `tag`,
`choose`), decoded by the same `Task.decode` the `keras-bert` commands use.

A task model built from an encoder alone takes ids, as before. One with a
`TextPreprocessor` (every model `from_preset` returns) also takes text: the
preprocessor holds the task (its labels), the vocabulary, the casing and the feature
settings, turns raw inputs into the task's examples (`Task.text_examples`) and those
into features (`Task.features`), which `feature_dataset` batches with dynamic padding:
each batch is cut to its longest sequence, as `keras-bert finetune` does. It is saved
inside the model's `.keras` file (vocabulary and all), so a reloaded model reads text.

Example:

>>> import keras_bert
>>> from keras_bert.model.config import BertConfig
>>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "movie"]
>>> encoder = keras_bert.BertEncoder(BertConfig.from_preset("tiny", vocab_size=len(vocab)))
>>> model = keras_bert.BertClassifier(
...     encoder, num_classes=2, preprocessor=TextPreprocessor.for_task(
...         classification_task(["neg", "pos"]), vocab, lower_case=True, sequence_length=16))
>>> model.compile()
>>> _ = model.fit(["good movie", "bad movie"] * 4, ["pos", "neg"] * 4, batch_size=4, verbose=0)
>>> [label for label, _ in model.classify(["good movie"])]  # doctest: +SKIP
['pos']
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.core.errors import ArgumentError
from keras_bert.tasks.base import FeatureSettings, Task, feature_dataset
from keras_bert.tasks.finetuning.scoring import predict_split
from keras_bert.tasks.registry import get_task
from keras_bert.text.tokenizer import BertTokenizer

# A reloaded model's compile state names the recipe's optimizer and schedule.
from keras_bert.training import optimization  # noqa: F401,I001

# The paper's fine-tuning recipe for `compile()` without arguments (§4, Appendix A.3):
# AdamW, weight decay 0.01 off LayerNorm and biases, 10% warmup then linear decay,
# global norm clipping 1.0; the peak rate is `BertTask.compile`'s (the top of Google's
# grid for the model's size: a short run on a few thousand rows needs it; MiniLM on
# 2,000 SST-2 rows: 0.65-0.74 held-out accuracy at 5e-5, 0.81-0.82 at 1e-4, 3 seeds).
RECIPE_WARMUP = 0.1
DEFAULT_BATCH_SIZE = 32


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
    def examples(self, x, y=None) -> list:
        """The task's examples of raw inputs `x` (and labels `y`)."""
        x, y = _materialize(x, y)
        return self.task.text_examples(x, y)

    def features(self, examples):
        return self.task.features(examples, self.tokenizer, self.settings)

    def dataset(self, x, y=None, batch_size: int | None = None, *, training: bool = False,
                shuffle: bool = True, epochs: int = 1, seed: int | None = None):
        """(tf.data of padded batches, steps per epoch, examples, features) for raw
        inputs; for training, the dataset holds every epoch (shuffled anew each one
        unless `shuffle=False`)."""
        examples = self.examples(x, y)
        if training:
            examples = self.task.training_examples(examples)
        features = self.features(examples)
        batch_size = batch_size or DEFAULT_BATCH_SIZE
        steps = math.ceil(len(features) / batch_size)
        if training and shuffle:
            dataset = feature_dataset(features, batch_size, training=True, seed=seed,
                                      epochs=epochs)
        else:
            dataset = feature_dataset(features, batch_size,
                                      with_labels=features.labels is not None)
            if training and epochs > 1:
                dataset = dataset.repeat(epochs)
        return dataset, steps, examples, features

    def predictions(self, model, x, y=None, batch_size: int | None = None) -> tuple:
        """(examples, features, decoded predictions) of `model` on raw inputs."""
        examples = self.examples(x, y)
        features = self.features(examples)
        predictions = predict_split(self.task, model, examples, features, self.settings,
                                    batch_size or DEFAULT_BATCH_SIZE)
        return examples, features, predictions


def classification_task(label_names: Sequence[str] | None = None, num_classes: int = 2,
                        pair: bool = False) -> Task:
    """The generic text classification task (regression with `num_classes=1`)."""
    from keras_bert.tasks.glue.classification import TextClassificationTask

    if label_names is None and num_classes > 1:
        label_names = [str(i) for i in range(num_classes)]
    return TextClassificationTask(label_names, pair=pair)


# --- inputs ---------------------------------------------------------------------------
def is_text(x) -> bool:
    """Whether `x` holds raw text (strings) rather than model inputs (ids)."""
    if isinstance(x, str):
        return True
    if isinstance(x, tf.data.Dataset):
        spec = x.element_spec
        first = spec[0] if isinstance(spec, tuple) else spec
        leaves = tf.nest.flatten(first)
        return bool(leaves) and all(s.dtype == tf.string for s in leaves)
    if isinstance(x, dict):
        if any(k in x for k in ("input_word_ids", "input_ids", "token_ids")):
            return False
        return bool(x) and all(is_text(v) for v in x.values())
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "USO" and (x.size == 0 or isinstance(x.flat[0], (str, bytes)))
    if isinstance(x, (list, tuple)):
        return bool(x) and all(is_text(v) for v in x)
    return False


def _decoded(value):
    """Python strings (and lists) of bytes, numpy and tensor values."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray):
        return [_decoded(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return type(value)(_decoded(v) for v in value)
    if isinstance(value, dict):
        return {k: _decoded(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _materialize(x, y):
    """Raw inputs as Python lists: a tf.data of strings is read whole (elements or
    batches; `(text, label)` tuples carry labels, `{"text", "text_pair"}` dicts pairs);
    numpy arrays become lists."""
    if isinstance(x, tf.data.Dataset):
        if y is not None:
            raise ArgumentError("give labels inside the tf.data dataset ((text, label) "
                                "elements), not as y.", field="y")
        spec = x.element_spec
        labelled = isinstance(spec, tuple) and len(spec) == 2
        text_spec = spec[0] if labelled else spec
        batched = tf.nest.flatten(text_spec)[0].shape.rank > 0
        texts, labels = [], []
        for element in x.as_numpy_iterator():
            text, label = element if labelled else (element, None)
            texts.append(text)
            labels.append(label)
        x = _concatenate(texts, batched)
        y = _concatenate(labels, batched) if labelled else None
    return _decoded(x), _decoded(y)


def _concatenate(parts: list, batched: bool):
    """Elements (or batches, when `batched`) of a dataset as one list (a dict of lists
    for dict elements)."""
    if parts and isinstance(parts[0], dict):
        return {k: _concatenate([p[k] for p in parts], batched) for k in parts[0]}
    if not batched:
        return list(parts)
    return [item for part in parts for item in list(part)]


# --- the methods the task models delegate to -------------------------------------------
def _preprocessor(model) -> TextPreprocessor:
    if model.preprocessor is None:
        raise ArgumentError(
            f"this {type(model).__name__} has no preprocessor, so it takes token ids only: "
            f"build it with {type(model).__name__}.from_preset(...), or pass "
            "preprocessor=TextPreprocessor.for_task(...).", field="preprocessor")
    return model.preprocessor


def fit(model, x, y=None, *, batch_size=None, epochs=1, shuffle=True,
        validation_data=None, seed=None, **kwargs):
    """`keras.Model.fit` on raw text (see the module docstring); a model compiled with
    the recipe (`compile()` without an optimizer) gets its schedule sized now."""
    preprocessor = _preprocessor(model)
    dataset, steps, _, _ = preprocessor.dataset(x, y, batch_size, training=True,
                                                shuffle=shuffle, epochs=epochs, seed=seed)
    if getattr(model, "_recipe_pending", False):
        size_recipe(model, steps * epochs)
    if validation_data is not None:  # (texts, labels), or a tf.data of them
        vx, vy = (validation_data if isinstance(validation_data, tuple)
                  and len(validation_data) == 2 else (validation_data, None))
        if is_text(vx):
            validation_data = preprocessor.dataset(vx, vy, batch_size)[0]
    return model.fit(dataset, epochs=epochs, steps_per_epoch=steps, shuffle=False,
                     validation_data=validation_data, **kwargs)


def evaluate(model, x, y=None, *, batch_size=None, **kwargs):
    """`keras.Model.evaluate` on raw text with labels."""
    dataset = _preprocessor(model).dataset(x, y, batch_size)[0]
    return model.evaluate(dataset, **kwargs)


def predict(model, x, *, batch_size=None, **kwargs):
    """`keras.Model.predict` on raw text: the model's outputs, one row per feature in
    input order (a SQuAD passage longer than the sequence has several windows)."""
    dataset = _preprocessor(model).dataset(x, None, batch_size)[0]
    return model.predict(dataset, **kwargs)


def size_recipe(model, total_steps: int) -> None:
    """Compiles `model` with the paper's recipe sized for `total_steps` updates."""
    from keras_bert.training.optimization import create_optimizer

    total = max(1, int(total_steps))
    optimizer = create_optimizer(model._recipe_learning_rate, num_train_steps=total,
                                 num_warmup_steps=int(total * RECIPE_WARMUP))
    # An explicit optimizer: `compile` clears the pending recipe.
    model.compile(optimizer=optimizer, loss=model._recipe_loss, metrics=model._recipe_metrics)


def classify(model, texts, batch_size=None) -> list[tuple]:
    """Per input, (label name, its probability); regression: (score, None)."""
    preprocessor = _preprocessor(model)
    single = isinstance(texts, str)
    examples = preprocessor.examples([texts] if single else texts)
    features = preprocessor.features(examples)
    dataset = feature_dataset(features, batch_size or DEFAULT_BATCH_SIZE, with_labels=False)
    logits = np.asarray(model.predict(dataset, verbose=0), np.float64)
    labels = preprocessor.task.decode(examples, features, logits, preprocessor.settings)
    if model.num_classes == 1:
        out = [(float(score), None) for score in labels]
    else:
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities = (shifted / shifted.sum(axis=-1, keepdims=True)).max(axis=-1)
        out = list(zip(labels, probabilities.astype(float).tolist()))
    return out[0] if single else out


def answer(model, questions, contexts, batch_size=None) -> list[str]:
    """Per question, the answer text from its context ("" for no answer, SQuAD v2)."""
    single = isinstance(questions, str)
    x = {"question": [questions] if single else questions,
         "context": [contexts] if single else contexts}
    _, _, predictions = _preprocessor(model).predictions(model, x, batch_size=batch_size)
    texts = [p.text for p in predictions]
    return texts[0] if single else texts


def tag(model, texts, batch_size=None) -> list[list[tuple[str, str]]]:
    """Per text (a sentence, split on whitespace, or a list of its words), (word,
    label) pairs; one text (a string) gives one list."""
    single = isinstance(texts, str)
    examples, _, predictions = _preprocessor(model).predictions(
        model, [texts] if single else texts, batch_size=batch_size)
    out = [list(zip(e.words, tags)) for e, tags in zip(examples, predictions)]
    return out[0] if single else out


def choose(model, contexts, endings, batch_size=None) -> list[int]:
    """Per context, the index of its most likely ending (and the ending's text)."""
    single = isinstance(contexts, str)
    x = {"context": [contexts] if single else contexts,
         "endings": [endings] if single else endings}
    examples, _, predictions = _preprocessor(model).predictions(model, x,
                                                                batch_size=batch_size)
    out = [(int(p), e.endings[int(p)]) for e, p in zip(examples, predictions)]
    return out[0] if single else out


# --- from_preset ------------------------------------------------------------------------
def from_preset(cls, source, **kwargs):
    """A task model of class `cls` with its preprocessor, compiled (its saved compile
    state, else the recipe: `compile()`); see `_opened` and `TextFace.from_preset`."""
    model = _opened(cls, source, **kwargs)
    if not model.compiled:
        model.compile()
    return model


def _opened(cls, source, *, num_classes: int | None = None,
                sequence_length: int | None = None, label_names: Sequence[str] | None = None,
                lower_case: bool | None = None, vocab_file=None, task: str | None = None,
                **kwargs):
    """A task model of class `cls` with its preprocessor from any source `load_encoder`
    takes (a checkpoint path of any format, `hf://`, a Google release name, a keras-hub
    preset, a pretraining run), a `keras-bert finetune` run directory (its head,
    labels, casing and sequence length) or a saved `.keras` file; see
    `BertTask.from_preset`."""
    from keras_bert.checkpoints.opener import open_artifact

    source = os.fspath(source)
    artifact = open_artifact(source, vocab_file=vocab_file, lower_case=lower_case,
                             keras_files=True)
    if artifact.kind == "keras_file":
        return _checked(cls, artifact.load(), source)
    if artifact.kind == "finetuning_run":
        return _from_run(cls, artifact, sequence_length)
    artifact.check_vocab()
    hub_task = _keras_hub_classifier_task(cls, artifact, num_classes, label_names)
    if hub_task is not None:  # a keras-hub BertTextClassifier preset keeps its head
        model = artifact.load()
        length = sequence_length or hub_task.sequence_length or 512
        labels = label_names or list(artifact.labels)
        model.preprocessor = TextPreprocessor(classification_task(labels, len(labels)),
                                              artifact.tokenizer(),
                                              FeatureSettings(max_seq_length=length))
        return model
    encoder = artifact.load_encoder()
    length = sequence_length or min(512, encoder.config.max_position_embeddings)
    if length > encoder.config.max_position_embeddings:
        raise ArgumentError(f"sequence_length {length} exceeds the model's "
                            f"{encoder.config.max_position_embeddings} positions.",
                            field="sequence_length")
    the_task = _new_task(cls, task, num_classes, label_names)
    model = the_task.build_model(encoder, **kwargs)
    if not isinstance(model, cls):
        raise ArgumentError(f"task {the_task.name!r} builds a {type(model).__name__}, not "
                            f"a {cls.__name__}.", field="task")
    model.preprocessor = TextPreprocessor(the_task, artifact.tokenizer(),
                                          FeatureSettings(max_seq_length=length))
    return model


def _keras_hub_classifier_task(cls, artifact, num_classes, label_names):
    """The task of a keras-hub `BertTextClassifier` preset opened as a `BertClassifier`
    (None for anything else); the classes asked for must be its own."""
    if cls.__name__ != "BertClassifier" or artifact.kind != "keras_hub_task":
        return None
    hub_task = artifact.hub_task
    asked = len(label_names) if label_names is not None else num_classes
    if asked is not None and asked != hub_task.num_classes:
        raise ArgumentError(f"{artifact.path!r} is a keras-hub classifier of "
                            f"{hub_task.num_classes} classes, not {asked}; leave num_classes "
                            "out to keep its head, or load its backbone alone "
                            "(load_encoder).", field="num_classes")
    return hub_task


def _new_task(cls, name, num_classes, label_names):
    kind = cls.__name__
    if name is not None:
        task = get_task(name)
        if label_names is not None:
            task.restore({**task.config(), "labels": list(label_names)})
        return task
    if kind == "BertClassifier":
        classes = len(label_names) if label_names is not None else (num_classes or 2)
        return classification_task(label_names, classes)
    if kind == "BertSpanLabeler":
        return get_task("squad1")
    if kind in ("BertTokenClassifier", "BertNerTagger"):
        if label_names is None:
            raise ArgumentError("a tagger needs its label names: label_names=[\"O\", "
                                "\"B-PER\", \"I-PER\", ...].", field="label_names")
        from keras_bert.tasks.tagging.task import NerTask

        return NerTask(labels=label_names)
    if kind == "BertMultipleChoice":
        return get_task("swag")
    raise ArgumentError(f"{kind}.from_preset is not available; use load_encoder and build "
                        "it.", field="cls")


def _from_run(cls, artifact, sequence_length):
    path = artifact.path
    run = artifact.finetuned()
    settings = run.settings
    if sequence_length is not None and sequence_length != settings.max_seq_length:
        settings = dataclasses.replace(settings, max_seq_length=sequence_length)
    model = _checked(cls, run.model, path)
    model.preprocessor = TextPreprocessor(run.task, run.tokenizer, settings)
    return model


def _checked(cls, model, source):
    if not isinstance(model, cls):
        raise ArgumentError(f"{source!r} holds a {type(model).__name__}, not a "
                            f"{cls.__name__}; open it with {type(model).__name__}.from_preset.",
                            field="source")
    return model
