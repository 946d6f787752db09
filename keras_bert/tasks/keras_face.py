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

import logging
import math

import numpy as np
import tensorflow as tf

from keras_bert.core.errors import ArgumentError
from keras_bert.tasks import recipe
from keras_bert.tasks.base import feature_dataset
from keras_bert.tasks.text_inputs import (
    EVALUATE_KEYWORDS,
    FIT_KEYWORDS,
    PREDICT_KEYWORDS,
    checked_class_weight,
    checked_common,
    checked_inputs,
    checked_texts,
    checked_weights,
    decoded,
    flag,
    is_empty,
    is_text,
    positive_int,
    takes_text,
)
from keras_bert.tasks.text_preprocessor import (  # noqa: F401 (what keras_face offers)
    DEFAULT_BATCH_SIZE,
    TextPreprocessor,
    classification_task,
    feature_weights,
    features_dataset,
    materialize,
)
from keras_bert.tasks.text_presets import opened

# A reloaded model's compile state names the recipe's optimizer and schedule.
from keras_bert.training import optimization  # noqa: F401,I001

logger = logging.getLogger("keras_bert")



# --- the methods the task models delegate to -------------------------------------------
def preprocessor_of(model) -> TextPreprocessor:
    """`model`'s preprocessor; `ArgumentError` saying how to give it one."""
    if model.preprocessor is None:
        raise ArgumentError(
            f"this {type(model).__name__} has no preprocessor, so it takes token ids only: "
            f"build it with {type(model).__name__}.from_preset(...), or pass "
            "preprocessor=TextPreprocessor.for_task(...).", field="preprocessor")
    return model.preprocessor


def _labelled_examples(preprocessor, x, y, sample_weight, method):
    """(examples, per-example weights or None) of labelled raw inputs, checked."""
    from_dataset = isinstance(x, tf.data.Dataset)
    x, y, in_dataset = materialize(x, y)
    if from_dataset and sample_weight is not None:
        raise ArgumentError("x is a tf.data dataset: give its sample weights inside it, "
                            "as (text, label, sample_weight) elements.", field="sample_weight")
    x, y = checked_inputs(preprocessor.task, x, y, method=method, labelled=True)
    examples = preprocessor.task.text_examples(x, y)
    weights = checked_weights(in_dataset if from_dataset else sample_weight, len(examples))
    return examples, weights


def _with_targets(task, examples, weights, what: str):
    """The examples that have a training target (SQuAD answers found in their context),
    their weights, and a warning counting those left out."""
    keep = [getattr(e, "has_target", True) for e in examples]
    if all(keep):
        return examples, weights
    kept = [e for e, k in zip(examples, keep) if k]
    logger.warning("%d of %d %s question(s) have no answer that matches the context (at "
                   "its answer_start) and are left out.", len(examples) - len(kept),
                   len(examples), what)
    if weights is not None:
        weights = [w for w, k in zip(weights, keep) if k]
    return kept, weights


def _no_examples_left(count: int, method: str):
    return ArgumentError(
        f"{method}: none of the {count} question(s) has an answer found in its context "
        "(at its answer_start), so nothing is left to train on; give each answer as a "
        "text of its context.", field="y")


def fit(model, x, y=None, *, batch_size=None, epochs=1, shuffle=True, **kwargs):
    """`keras.Model.fit` on raw text (see the module docstring); a model compiled with
    the recipe (`compile()` without an optimizer) gets its schedule sized now.

    Keras's own arguments work on raw text: `sample_weight` (one per input),
    `class_weight` (label names or class indices), `validation_split` (the last
    inputs, as Keras takes them), `validation_data` (texts and labels, or a tf.data),
    `steps_per_epoch`, `callbacks`, `initial_epoch`, `verbose`; `seed` orders the
    shuffled inputs."""
    batch_size = checked_common("fit", kwargs, FIT_KEYWORDS, batch_size)
    epochs = positive_int(epochs, "epochs", optional=False)
    shuffle = flag(shuffle, "shuffle")
    seed = kwargs.pop("seed", None)
    if seed is not None:
        seed = positive_int(seed, "seed", minimum=0)
    steps_per_epoch = positive_int(kwargs.pop("steps_per_epoch", None), "steps_per_epoch")
    if kwargs.get("initial_epoch") is not None:
        kwargs["initial_epoch"] = positive_int(kwargs["initial_epoch"], "initial_epoch",
                                               minimum=0)
    validation_split = kwargs.pop("validation_split", None)
    validation_data = kwargs.pop("validation_data", None)
    if validation_split is not None and validation_split != 0:
        if (isinstance(validation_split, bool) or not isinstance(validation_split, (int, float))
                or not 0 < validation_split < 1):
            raise ArgumentError("validation_split must be a fraction between 0 and 1 "
                                f"(exclusive), got {validation_split!r}.",
                                field="validation_split")
        if validation_data is not None:
            raise ArgumentError("give validation_split or validation_data, not both.",
                                field="validation_split")
    preprocessor = preprocessor_of(model)
    task = preprocessor.task
    class_weight = checked_class_weight(kwargs.pop("class_weight", None), task)
    examples, weights = _labelled_examples(preprocessor, x, y, kwargs.pop("sample_weight",
                                                                          None), "fit")
    validation = None
    if validation_split:  # Keras's rule: the last inputs, before any shuffling
        first = int(len(examples) * (1 - validation_split))
        if not 0 < first < len(examples):
            raise ArgumentError(
                f"validation_split={validation_split} of {len(examples)} inputs leaves "
                f"{'no input to train on' if first == 0 else 'no input to validate on'}; "
                "give more inputs or another fraction.", field="validation_split")
        validation = (examples[first:], None if weights is None else weights[first:])
        examples, weights = examples[:first], None if weights is None else weights[:first]
    count = len(examples)
    order = {id(e): i for i, e in enumerate(examples)}
    train = task.training_examples(examples)
    if weights is not None:
        weights = [weights[order[id(e)]] for e in train]
    if not train:
        raise _no_examples_left(count, "fit")
    features = preprocessor.features(train)
    batch_size = batch_size or DEFAULT_BATCH_SIZE
    if validation is not None:
        val_examples, val_weights = _with_targets(task, *validation, "validation")
        validation_data = (preprocessor.examples_dataset(
            val_examples, batch_size, weights=val_weights, class_weight=class_weight)[0]
            if val_examples else None)
    elif validation_data is not None:
        validation_data = _validation_dataset(preprocessor, validation_data, batch_size,
                                              kwargs.get("validation_batch_size"))
    return fit_features(model, features, batch_size=batch_size, epochs=epochs,
                        shuffle=shuffle, seed=seed, steps_per_epoch=steps_per_epoch,
                        weights=feature_weights(features, weights, class_weight),
                        validation_data=validation_data, **kwargs)


def fit_features(model, features, *, batch_size: int = DEFAULT_BATCH_SIZE, epochs=1,
                 shuffle: bool = True, seed: int | None = None,
                 steps_per_epoch: int | None = None, weights=None,
                 group_by_length: bool = recipe.GROUP_BY_LENGTH, **kwargs):
    """Trains `model` on featurized examples: what `fit` on raw text and `keras-bert
    finetune` both do. The batches are shuffled each epoch from `seed` (None: the seed
    `keras.utils.set_random_seed` set, else a random one), drawn from runs of similar
    length (`group_by_length`, the recipe's) and cut to their longest sequence; a model
    compiled with `compile()` gets the recipe's schedule sized for this run. `epochs` may
    be fractional (the last epoch stops early); `kwargs` go to `keras.Model.fit`."""
    steps = math.ceil(len(features) / batch_size)
    total = (steps_per_epoch or steps) * epochs
    whole_epochs = max(1, math.ceil(epochs))
    if whole_epochs != epochs:  # fractional: the last epoch stops early
        total = max(1, round(steps * epochs))
        steps_per_epoch = min(steps, total)
    total = int(total)
    # The dataset holds every epoch's batches (Keras reads on across epochs).
    data_epochs = whole_epochs if steps_per_epoch is None else math.ceil(
        max(steps_per_epoch, steps) * whole_epochs / steps)
    dataset = features_dataset(features, batch_size, training=True, shuffle=shuffle,
                               epochs=data_epochs, seed=_data_seed(seed), weights=weights,
                               group_by_length=group_by_length)
    if whole_epochs != epochs:
        dataset = dataset.take(total)
    if getattr(model, "_recipe_pending", False):
        size_recipe(model, total)
    if getattr(model, "optimizer", None) is not None and not model.optimizer.built:
        # Its variables made now, not in the first train step: a tf.function that
        # creates variables is traced twice (MiniLM: the first step 4.4 s sooner).
        model.optimizer.build(model.trainable_variables)
    return model.fit(dataset, epochs=whole_epochs, steps_per_epoch=steps_per_epoch or steps,
                     shuffle=False, **kwargs)


def _data_seed(seed: int | None) -> int | None:
    """`seed`, else the one `keras.utils.set_random_seed` set (so that a seeded process
    trains alike whichever way it is called), else None (a random order)."""
    if seed is not None:
        return seed
    from keras.src.backend.common import global_state

    return global_state.get_global_attribute("global_random_seed")


def _validation_dataset(preprocessor, validation_data, batch_size, validation_batch_size):
    """`fit`'s validation_data: (texts, labels[, sample weights]) or a tf.data of
    them, on raw text, as a dataset; anything else (ids) as it is."""
    if isinstance(validation_data, tf.data.Dataset):
        if not is_text(validation_data):
            return validation_data
        vx, vy, vw = validation_data, None, None
    elif isinstance(validation_data, (tuple, list)) and len(validation_data) in (2, 3):
        vx, vy = validation_data[0], validation_data[1]
        vw = validation_data[2] if len(validation_data) == 3 else None
        if not takes_text(vx):
            return validation_data
    else:
        raise ArgumentError("validation_data must be (texts, labels), (texts, labels, "
                            "sample_weight) or a tf.data dataset of (text, label) "
                            f"elements, got {type(validation_data).__name__}"
                            + (f" of {len(validation_data)}" if isinstance(
                                validation_data, (tuple, list)) else "") + ".",
                            field="validation_data")
    try:
        examples, weights = _labelled_examples(preprocessor, vx, vy, vw, "validation_data")
    except ArgumentError as e:
        raise ArgumentError(f"validation_data: {e}", field="validation_data") from None
    examples, weights = _with_targets(preprocessor.task, examples, weights, "validation")
    return preprocessor.examples_dataset(examples, validation_batch_size or batch_size,
                                         weights=weights)[0]


def evaluate(model, x, y=None, *, batch_size=None, **kwargs):
    """`keras.Model.evaluate` on raw text with labels (and `sample_weight`)."""
    batch_size = checked_common("evaluate", kwargs, EVALUATE_KEYWORDS, batch_size)
    preprocessor = preprocessor_of(model)
    examples, weights = _labelled_examples(preprocessor, x, y,
                                           kwargs.pop("sample_weight", None), "evaluate")
    count = len(examples)
    examples, weights = _with_targets(preprocessor.task, examples, weights, "evaluated")
    if not examples:
        raise _no_examples_left(count, "evaluate")
    dataset = preprocessor.examples_dataset(examples, batch_size, weights=weights)[0]
    return model.evaluate(dataset, **kwargs)


def predict(model, x, *, batch_size=None, **kwargs):
    """`keras.Model.predict` on raw text: the model's outputs, one row per feature in
    input order (a SQuAD passage longer than the sequence has several windows)."""
    batch_size = checked_common("predict", kwargs, PREDICT_KEYWORDS, batch_size)
    preprocessor = preprocessor_of(model)
    examples = preprocessor.examples(x, method="predict")
    dataset = preprocessor.examples_dataset(examples, batch_size)[0]
    return model.predict(dataset, **kwargs)


def size_recipe(model, total_steps: int) -> None:
    """Compiles `model` with the recipe (`keras_bert.tasks.recipe.optimizer`) sized for
    `total_steps` updates, at the peak rate `compile()` chose."""
    # An explicit optimizer: `compile` clears the pending recipe.
    model.compile(optimizer=recipe.optimizer(model._recipe_learning_rate, total_steps),
                  loss=model._recipe_loss, metrics=model._recipe_metrics)


def classify(model, texts, batch_size=None) -> list[tuple]:
    """Per input, (label name, its probability); regression: (score, None)."""
    batch_size = positive_int(batch_size, "batch_size")
    preprocessor = preprocessor_of(model)
    single = isinstance(texts, str)
    examples = preprocessor.examples([texts] if single else texts, method="classify")
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


def _paired(method, first, second, names):
    """Two lists of equal length (`names` for messages), checked."""
    for value, name in zip((first, second), names):
        if value is None or is_empty(value):
            raise ArgumentError(f"{method}: {name} is {'missing' if value is None else 'empty'}.",
                                field=name)
        if not isinstance(value, (list, tuple)):
            raise ArgumentError(f"{method}: give {names[0]} and {names[1]} both as one item "
                                f"or both as lists; got {type(value).__name__} for {name}.",
                                field=name)
        checked_texts(value, name)
    if len(first) != len(second):
        raise ArgumentError(f"{method}: {len(first)} {names[0]} but {len(second)} "
                            f"{names[1]}; give one per item.", field=names[1])
    return list(first), list(second)


def answer(model, questions, contexts, batch_size=None) -> list[str]:
    """Per question, the answer text from its context ("" for no answer, SQuAD v2)."""
    batch_size = positive_int(batch_size, "batch_size")
    preprocessor = preprocessor_of(model)
    questions, contexts = decoded(questions), decoded(contexts)
    single = isinstance(questions, str)
    questions, contexts = _paired("answer", [questions] if single else questions,
                                  [contexts] if single else contexts,
                                  ("questions", "contexts"))
    x = {"question": questions, "context": contexts}
    _, _, predictions = preprocessor.predictions(model, x, batch_size=batch_size,
                                                 method="answer")
    texts = [p.text for p in predictions]
    return texts[0] if single else texts


def tag(model, texts, batch_size=None) -> list[list[tuple[str, str]]]:
    """Per text (a sentence, split on whitespace, or a list of its words), (word,
    label) pairs; one text (a string) gives one list."""
    batch_size = positive_int(batch_size, "batch_size")
    preprocessor = preprocessor_of(model)
    texts = decoded(texts)
    single = isinstance(texts, str)
    examples, _, predictions = preprocessor.predictions(
        model, [texts] if single else texts, batch_size=batch_size, method="tag")
    out = [list(zip(e.words, tags)) for e, tags in zip(examples, predictions)]
    return out[0] if single else out


def choose(model, contexts, endings, batch_size=None) -> list[int]:
    """Per context, the index of its most likely ending (and the ending's text)."""
    batch_size = positive_int(batch_size, "batch_size")
    preprocessor = preprocessor_of(model)
    contexts, endings = decoded(contexts), decoded(endings)
    single = isinstance(contexts, str)
    contexts, endings = _paired("choose", [contexts] if single else contexts,
                                [endings] if single else endings, ("contexts", "endings"))
    for i, options in enumerate(endings):
        if not isinstance(options, (list, tuple)):
            raise ArgumentError(f"choose: endings[{i}] is {options!r}; give each context "
                                "its list of 2-4 endings (endings is a list of lists).",
                                field="endings")
    x = {"context": contexts, "endings": endings}
    examples, _, predictions = preprocessor.predictions(model, x, batch_size=batch_size,
                                                        method="choose")
    out = [(int(p), e.endings[int(p)]) for e, p in zip(examples, predictions)]
    return out[0] if single else out


# --- from_preset ------------------------------------------------------------------------
def from_preset(cls, source, **kwargs):
    """A task model of class `cls` with its preprocessor, compiled (its saved compile
    state, else the recipe: `compile()`); see `keras_bert.tasks.text_presets.opened` and
    `TextFace.from_preset`."""
    model = opened(cls, source, **kwargs)
    if not model.compiled:
        model.compile()
    return model
