"""What the task models' raw-text methods check before any work
(`keras_bert.tasks.keras_face`): their inputs at the door (not empty, every text a
string of Unicode text, named by its index otherwise; a classifier's pairs shaped as
pairs; labels where they are needed) and their arguments (known
keywords, ranges, types, sample and class weights, callbacks). Each bad case raises one
`ArgumentError` naming the argument, item or value at fault and what to do.

Example:

>>> positive_int(0, "batch_size")
Traceback (most recent call last):
...
keras_bert.core.errors.ArgumentError: batch_size must be an integer >= 1, got 0.
>>> checked_texts(["a", None])
Traceback (most recent call last):
...
keras_bert.core.errors.ArgumentError: x[1] is None (NoneType), not a string: every text must be a string ("" for an empty one); replace or remove it.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.core.errors import ArgumentError
from keras_bert.tasks.base import Task

# Keras's own arguments that the raw-text methods pass on (or apply themselves).
FIT_KEYWORDS = ("verbose", "callbacks", "validation_split", "validation_data",
                "class_weight", "sample_weight", "initial_epoch", "steps_per_epoch",
                "validation_steps", "validation_batch_size", "validation_freq", "seed")
EVALUATE_KEYWORDS = ("verbose", "sample_weight", "steps", "callbacks", "return_dict")
PREDICT_KEYWORDS = ("verbose", "steps", "callbacks")
# Model inputs (ids) rather than text, in a dict.
ID_KEYS = ("input_word_ids", "input_ids", "token_ids")

# What each family's model is and takes as labels (messages).
FAMILY_MODELS = {"glue": ("BertClassifier", "a classifier"),
                 "squad": ("BertSpanLabeler", "a span labeler (extractive QA)"),
                 "tagging": ("BertTokenClassifier", "a tagger"),
                 "multiple_choice": ("BertMultipleChoice", "a multiple-choice model"),
                 "embedding": ("BertTextEmbedder", "a text embedder")}
LABEL_HINTS = {
    "glue": "one label per text: a label name or a class index (a number for regression)",
    "squad": "per question its answer: a text of its context, {'text': ..., "
             "'answer_start': ...}, or \"\" for no answer (squad2)",
    "tagging": "per sentence one tag per word (a list, or one string of tags separated "
               "by spaces)",
    "multiple_choice": "per context the index of its right ending"}


# --- what is text -----------------------------------------------------------------------
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
        if any(k in x for k in ID_KEYS):
            return False
        return bool(x) and all(is_text(v) for v in x.values())
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "USO" and (x.size == 0 or isinstance(x.flat[0], (str, bytes)))
    if isinstance(x, (list, tuple)):
        return bool(x) and all(is_text(v) for v in x)
    return False


def takes_text(x) -> bool:
    """Whether a model with a preprocessor reads `x` as raw text: text (`is_text`), or
    a list, tuple or dict (not of ids) with no numbers in it at all (empty, or holding
    None), or with a string anywhere in it: what is not text in it is then named by
    `checked_inputs` rather than fed to the model as ids."""
    if is_text(x):
        return True
    if isinstance(x, dict):
        return not any(k in x for k in ID_KEYS) and takes_text(list(x.values()))
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "USO"
    if isinstance(x, (list, tuple)):
        leaves = _leaves(x)
        return not leaves or any(isinstance(v, (str, bytes)) or v is None for v in leaves)
    return False


def _leaves(x) -> list:
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in _leaves(v)]
    if isinstance(x, np.ndarray):
        return x.ravel().tolist()
    return [x]


def decoded(value):
    """Python strings (and lists) of bytes, numpy and tensor values; bytes that are not
    UTF-8 read as U+FFFD (as the tokenizer reads them)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        return [decoded(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return type(value)(decoded(v) for v in value)
    if isinstance(value, dict):
        return {k: decoded(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


# --- checks at the door -----------------------------------------------------------------
def checked_texts(x, what: str = "x") -> None:
    """`ArgumentError` naming the first item of `x` (a string, or lists, tuples and
    dicts of them) that is not a string, or a string holding a lone surrogate (no
    Unicode text: it cannot be encoded as UTF-8)."""
    if isinstance(x, str):
        try:
            x.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ArgumentError(
                f"{what} holds a lone surrogate ({x[e.start]!r} at character {e.start}), "
                "which is not Unicode text and cannot be tokenized; fix or remove it (for "
                "text read with errors='surrogateescape', decode it with "
                "errors='replace').", field=what.split("[")[0]) from None
        return
    if isinstance(x, dict):
        for key, value in x.items():
            checked_texts(value, f"{what}[{key!r}]")
    elif isinstance(x, (list, tuple)):
        for i, value in enumerate(x):
            checked_texts(value, f"{what}[{i}]")
    else:
        raise ArgumentError(f"{what} is {x!r} ({type(x).__name__}), not a string: every "
                            "text must be a string (\"\" for an empty one); replace or "
                            "remove it.", field=what.split("[")[0])


def is_empty(x) -> bool:
    if isinstance(x, dict):
        return not x or all(isinstance(v, (list, tuple)) and not v for v in x.values())
    if isinstance(x, (list, tuple)):
        return not x or (isinstance(x, tuple) and all(
            isinstance(v, (list, tuple)) and not v for v in x))
    return False


def _checked_pairs(x) -> None:
    """A classifier's inputs: texts, pairs as (texts, text_pairs), or a list of
    (text, text_pair) tuples; `ArgumentError` for other tuples."""
    if isinstance(x, tuple) and x and not isinstance(x[0], str) and len(x) != 2:
        kinds = sorted({type(v).__name__ for v in x})
        raise ArgumentError(
            f"x is a tuple of {len(x)} {'/'.join(kinds)}s: pairs of texts are a tuple of "
            "two lists (texts, text_pairs), or {'text': [...], 'text_pair': [...]}; single "
            "texts are a list of strings.", field="x")
    if isinstance(x, list) and any(isinstance(v, (tuple, list)) for v in x):
        for i, v in enumerate(x):
            if not isinstance(v, (tuple, list)) or len(v) != 2:
                got = (f"a {type(v).__name__} of {len(v)} texts"
                       if isinstance(v, (tuple, list)) else repr(v))
                raise ArgumentError(
                    f"x[{i}] is {got}, where the other items are pairs: a pair is "
                    "(text, text_pair), two strings; give every item as a pair, or "
                    "single texts as strings.", field="x")


def _tag_strings(x, y):
    """A tagger's labels with a sentence's tags given as one string of tags separated
    by whitespace split into its tags, when their count is the sentence's word count
    (tags hold no whitespace); `ArgumentError` naming the sentence otherwise."""
    single = isinstance(x, str)
    sentences = [x] if single else list(x)
    labels = [y] if single else y
    if not isinstance(labels, (list, tuple)):
        return x, y
    labels = list(labels)
    for i, (sentence, tags) in enumerate(zip(sentences, labels)):
        if not isinstance(tags, str):
            continue
        words = sentence.split() if isinstance(sentence, str) else list(sentence)
        split = tags.split()
        if len(split) != len(words):
            raise ArgumentError(
                f"y[{i}] is one string, {tags!r}: {len(split)} tag(s) separated by "
                f"whitespace, but sentence {i} has {len(words)} word(s); give one tag per "
                "word, as a list of tags or one string of them separated by spaces.",
                field="y")
        labels[i] = split
    return sentences, labels


def checked_inputs(task: Task, x, y=None, *, method: str = "predict",
                   labelled: bool = False) -> tuple:
    """(x, y) as the task's `text_examples` takes them, after the checks every raw-text
    method makes before any work: `x` not empty, every text a string of Unicode text
    (named by its index otherwise), a classifier's pairs shaped as pairs, labels given
    when `labelled`, a tagger's tags given as one string per
    sentence are split on whitespace (when they match its words)."""
    if x is None:
        raise ArgumentError(f"{method}: x is missing; give the texts.", field="x")
    if is_empty(x):
        raise ArgumentError(f"{method}: x is empty; give at least one text.", field="x")
    checked_texts(x)
    family = getattr(task, "family", None)
    if family == "glue":
        _checked_pairs(x)
    if labelled and y is None and not getattr(task, "labels_optional", False):
        raise ArgumentError(
            f"{method} needs labels: pass y, {LABEL_HINTS.get(family, 'one per input')} "
            "(or a tf.data dataset of (text, label) elements).", field="y")
    # Labels that do not belong (NaN targets too) are the task's judgment
    # (`keras_bert.tasks.labels`), the same as in files.
    if y is not None:
        if family == "tagging":
            x, y = _tag_strings(x, y)
    return x, y


# --- argument checks --------------------------------------------------------------------
def checked_keywords(method: str, kwargs: dict, accepted: Sequence[str]) -> None:
    """`ArgumentError` naming the first keyword of `kwargs` that `method` does not
    take (with the closest it does take)."""
    for name in kwargs:
        if name not in accepted:
            close = difflib.get_close_matches(name, accepted, n=1, cutoff=0.6)
            raise ArgumentError(
                f"{method}: unknown argument {name!r}"
                + (f"; did you mean {close[0]!r}?" if close else ".")
                + f" It takes {', '.join(accepted)}.", field=name)


def positive_int(value, name: str, *, minimum: int = 1, optional: bool = True):
    """`value` as an int >= `minimum` (None when `optional`); `ArgumentError` naming
    `name` otherwise."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ArgumentError(f"{name} must be an integer >= {minimum}, got {value!r}.",
                            field=name)
    return int(value)


def flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentError(f"{name} must be True or False, got {value!r}.", field=name)
    return bool(value)


def checked_weights(weights, count: int, name: str = "sample_weight"):
    """Per example weights (finite, >= 0) as a float list of `count`."""
    if weights is None:
        return None
    if isinstance(weights, (str, bytes, dict)) or not isinstance(
            weights, (Sequence, np.ndarray)):
        raise ArgumentError(f"{name} must hold one number per input, got "
                            f"{type(weights).__name__}.", field=name)
    weights = decoded(weights)
    if len(weights) != count:
        raise ArgumentError(f"{count} inputs but {len(weights)} {name} values; give one "
                            "weight per input.", field=name)
    for i, w in enumerate(weights):
        if (isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w)
                or w < 0):
            raise ArgumentError(f"{name}[{i}] is {w!r}: a weight must be a finite number "
                                ">= 0.", field=name)
    return [float(w) for w in weights]


def checked_class_weight(class_weight, task: Task):
    """`class_weight` keyed by label names or class indices -> {class index: weight}."""
    if class_weight is None:
        return None
    labels = getattr(task, "labels", None)
    if getattr(task, "family", None) != "glue":
        raise ArgumentError(
            "class_weight weighs a classifier's classes; this model is "
            f"{FAMILY_MODELS.get(task.family, ('', 'not a classifier'))[1]}: give "
            "sample_weight (one weight per input) instead.", field="class_weight")
    if labels is None:
        raise ArgumentError("class_weight weighs classes, and this model is a regression "
                            "(num_classes=1): give sample_weight (one weight per input) "
                            "instead.", field="class_weight")
    if not isinstance(class_weight, dict):
        raise ArgumentError("class_weight must be a dict {label name or class index: "
                            f"weight}}, got {type(class_weight).__name__}.",
                            field="class_weight")
    out = {}
    for key, weight in class_weight.items():
        key = decoded(key)
        if isinstance(key, str) and labels and key in labels:
            index = labels.index(key)
        elif (not isinstance(key, bool) and isinstance(key, int) and labels
              and 0 <= key < len(labels)):
            index = key
        else:
            known = (f"one of the model's labels {list(labels)} or a class index 0-"
                     f"{len(labels) - 1}" if labels else "a label of the training data")
            raise ArgumentError(f"class_weight names {key!r}, which is not {known}.",
                                field="class_weight")
        if (isinstance(weight, bool) or not isinstance(weight, (int, float, np.number))
                or not math.isfinite(weight) or weight < 0):
            raise ArgumentError(f"class_weight[{key!r}] is {weight!r}: a weight must be a "
                                "finite number >= 0.", field="class_weight")
        if index in out:
            raise ArgumentError(f"class_weight names class {index} ({labels[index]!r}) "
                                "twice, by name and by index.", field="class_weight")
        out[index] = float(weight)
    return out


def checked_callbacks(callbacks):
    if callbacks is None:
        return None
    import keras

    if isinstance(callbacks, keras.callbacks.Callback):
        return [callbacks]
    if not isinstance(callbacks, (list, tuple)):
        raise ArgumentError("callbacks must be a list of keras.callbacks.Callback, got "
                            f"{type(callbacks).__name__}.", field="callbacks")
    for i, callback in enumerate(callbacks):
        if not isinstance(callback, keras.callbacks.Callback):
            raise ArgumentError(f"callbacks[{i}] is {callback!r}, not a "
                                "keras.callbacks.Callback.", field="callbacks")
    return list(callbacks)


def checked_common(method: str, kwargs: dict, accepted: Sequence[str], batch_size):
    named = {"fit": ("x", "y", "batch_size", "epochs", "shuffle"),
             "evaluate": ("x", "y", "batch_size")}.get(method, ("x", "batch_size"))
    checked_keywords(method, kwargs, named + tuple(accepted))
    if "callbacks" in kwargs:
        kwargs["callbacks"] = checked_callbacks(kwargs["callbacks"])
    for name in ("steps", "validation_steps", "validation_batch_size", "validation_freq"):
        if kwargs.get(name) is not None:
            kwargs[name] = positive_int(kwargs[name], name)
    return positive_int(batch_size, "batch_size")
