"""`from_preset` of the task models (`TextFace.from_preset`): a task model of a class
with its preprocessor from any source, every argument checked before any weights load:
unknown keywords (with the closest known one), types and ranges, arguments that
contradict each other (`num_classes` and `label_names`, a `task` of another family, a
span labeler's lengths), and arguments that contradict a saved model (a `.keras` file or
a fine-tuning run: its classes, labels, task and casing; its lengths may change).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Sequence

import numpy as np

from keras_bert.core.errors import ArgumentError
from keras_bert.tasks import recipe
from keras_bert.tasks.base import FeatureSettings
from keras_bert.tasks.registry import get_task
from keras_bert.tasks.text_inputs import (
    FAMILY_MODELS,
    checked_keywords,
    decoded,
    positive_int,
)
from keras_bert.tasks.text_preprocessor import TextPreprocessor, classification_task

# The shortest `sequence_length` from_preset takes: [CLS], [SEP] (a pair's second
# [SEP]) and a few word pieces of text; a span labeler's holds a question and a passage.
MIN_SEQUENCE_LENGTH = 8
MIN_SPAN_SEQUENCE_LENGTH = 16
MIN_PASSAGE_TOKENS = 4  # word pieces of passage per window, at least
# SQuAD's lengths (run_squad's defaults), cut down for a short sequence.
SQUAD_QUERY_LENGTH = 64
SQUAD_DOC_STRIDE = 128

FROM_PRESET_KEYWORDS = ("num_classes", "label_names", "sequence_length", "lower_case",
                        "vocab_file", "task", "max_query_length", "doc_stride")


def _model_arguments(cls) -> tuple[str, ...]:
    """What `cls`'s constructor takes besides the encoder and its class count."""
    taken = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        for name, parameter in inspect.signature(klass.__init__).parameters.items():
            if parameter.kind in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
                continue
            if name not in ("self", "encoder", "num_classes", "num_choices", "inputs",
                            "outputs", "preprocessor", "units", "output", "encoder_inputs",
                            "head_name", "logits_shape") and name not in taken:
                taken.append(name)
        break  # the class's own constructor
    return tuple(taken)


def _kind(cls) -> str | None:
    """The family whose model `cls` is (None for models from_preset does not build)."""
    names = {klass.__name__ for klass in cls.__mro__}
    return next((family for family, (name, _) in FAMILY_MODELS.items() if name in names),
                None)


def _checked_label_names(label_names):
    if label_names is None:
        return None
    if isinstance(label_names, np.ndarray):
        label_names = decoded(label_names)
    if isinstance(label_names, (str, bytes, dict)) or not isinstance(label_names,
                                                                     (list, tuple)):
        raise ArgumentError("label_names must be a list of label names (strings), got "
                            f"{type(label_names).__name__} {label_names!r}.",
                            field="label_names")
    seen = {}
    for i, name in enumerate(label_names):
        if not isinstance(name, str) or not name.strip():
            raise ArgumentError(f"label_names[{i}] is {name!r}: a label name is a non-empty "
                                "string.", field="label_names")
        if name in seen:
            raise ArgumentError(f"label_names[{i}] {name!r} repeats label_names[{seen[name]}]"
                                "; give each label once.", field="label_names")
        seen[name] = i
    if len(label_names) < 2:
        raise ArgumentError(f"label_names holds {len(label_names)} name(s); a classifier or "
                            "tagger needs two or more (for a regression leave it out and "
                            "pass num_classes=1).", field="label_names")
    return list(label_names)


def _checked_arguments(cls, family, num_classes, label_names, sequence_length, lower_case,
                       vocab_file, task, max_query_length, doc_stride, kwargs):
    """The checks of from_preset's arguments that need no model: types, ranges, and
    which arguments `cls` takes at all."""
    accepted = FROM_PRESET_KEYWORDS + _model_arguments(cls)
    checked_keywords(f"{cls.__name__}.from_preset", kwargs, accepted)
    label_names = _checked_label_names(label_names)
    if task is not None:
        if not isinstance(task, str):
            raise ArgumentError(f"task must be a task name (a string), got {task!r}.",
                                field="task")
        task_family = get_task(task).family
        if task_family != family:
            name, what = FAMILY_MODELS.get(task_family, ("?", "another model"))
            raise ArgumentError(
                f"task {task!r} builds {what} ({name}), not a {cls.__name__}: use "
                f"{name}.from_preset(source, task={task!r}, ...).", field="task")
    if family in ("squad", "multiple_choice"):
        what = ("predicts answer spans" if family == "squad"
                else "scores each context's endings")
        for name, value in (("num_classes", num_classes), ("label_names", label_names)):
            if value is not None:
                raise ArgumentError(f"a {cls.__name__} {what}: it has no classes, so "
                                    f"{name} does not apply; leave it out.", field=name)
    if num_classes is not None:
        minimum = 2 if family == "tagging" else 1
        if (isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer))
                or num_classes < minimum):
            raise ArgumentError(
                f"num_classes must be an integer >= {minimum}"
                + (" (1 is a regression)" if minimum == 1 else " (a tagger's tags)")
                + f", got {num_classes!r}.", field="num_classes")
        num_classes = int(num_classes)
        if label_names is not None and len(label_names) != num_classes:
            raise ArgumentError(
                f"num_classes={num_classes} but label_names holds {len(label_names)} names "
                f"{label_names}; give one of them (the class count is the number of "
                "label names).", field="num_classes")
    if sequence_length is not None:
        sequence_length = positive_int(sequence_length, "sequence_length")
        minimum = MIN_SPAN_SEQUENCE_LENGTH if family == "squad" else MIN_SEQUENCE_LENGTH
        if sequence_length < minimum:
            raise ArgumentError(
                f"sequence_length {sequence_length} is too short: it counts word pieces "
                f"with [CLS] and [SEP], and {cls.__name__} needs at least {minimum} to "
                "hold them and some text" + (" (a question and a passage)"
                                              if family == "squad" else "")
                + f"; pass sequence_length >= {minimum}.", field="sequence_length")
    for name, value in (("max_query_length", max_query_length), ("doc_stride", doc_stride)):
        if value is None:
            continue
        if family != "squad" and not (name == "doc_stride" and family == "tagging"):
            raise ArgumentError(f"{name} sets a span labeler's windows (doc_stride also a "
                                f"tagger's); a {cls.__name__} does not take it.", field=name)
        positive_int(value, name)
    if lower_case is not None and not isinstance(lower_case, (bool, np.bool_)):
        raise ArgumentError(f"lower_case must be True or False, got {lower_case!r}.",
                            field="lower_case")
    if vocab_file is not None and not isinstance(vocab_file, (str, os.PathLike)):
        raise ArgumentError(f"vocab_file must be a path, got {vocab_file!r}.",
                            field="vocab_file")
    return num_classes, label_names, sequence_length


def _settings(settings: FeatureSettings, family, positions: int, sequence_length=None,
              max_query_length=None, doc_stride=None, fresh: bool = False) -> FeatureSettings:
    """`settings` with the lengths asked for, checked together: within the model's
    `positions`; a span labeler's question and a passage window both fit (`fresh`: its
    defaults scaled to the sequence)."""
    length = sequence_length or settings.max_seq_length
    if length > positions:
        raise ArgumentError(f"sequence_length {length} exceeds the model's {positions} "
                            f"positions; pass sequence_length <= {positions}.",
                            field="sequence_length")
    changes = {"max_seq_length": length}
    if family == "squad":
        query = max_query_length or (min(SQUAD_QUERY_LENGTH, (length - 3) // 2) if fresh
                                     else settings.max_query_length)
        window = length - 3 - query
        if window < MIN_PASSAGE_TOKENS:
            most = length - 3 - MIN_PASSAGE_TOKENS
            raise ArgumentError(
                f"max_query_length {query} leaves {max(window, 0)} word piece(s) of passage "
                f"in sequence_length {length} ([CLS] question [SEP] passage [SEP]); pass "
                f"max_query_length <= {most}" + (" (the saved run's is "
                                                  f"{settings.max_query_length})"
                                                  if not fresh and not max_query_length
                                                  else "")
                + f" or sequence_length >= {query + 3 + MIN_PASSAGE_TOKENS}.",
                field="max_query_length" if max_query_length else "sequence_length")
        stride = doc_stride or (min(SQUAD_DOC_STRIDE, max(1, window // 2)) if fresh
                                else settings.doc_stride)
        changes.update(max_query_length=query, doc_stride=stride)
    elif doc_stride:
        changes["doc_stride"] = doc_stride
    return dataclasses.replace(settings, **changes)


def opened(cls, source, *, num_classes: int | None = None,
            sequence_length: int | None = None, label_names: Sequence[str] | None = None,
            lower_case: bool | None = None, vocab_file=None, task: str | None = None,
            max_query_length: int | None = None, doc_stride: int | None = None, **kwargs):
    """A task model of class `cls` with its preprocessor from any source `load_encoder`
    takes (a checkpoint path of any format, `hf://`, a Google release name, a keras-hub
    preset, a pretraining run), a `keras-bert finetune` run directory (its head,
    labels, casing and sequence length) or a saved `.keras` file; see
    `BertTask.from_preset`. Every argument is checked before any weights load."""
    from keras_bert.checkpoints.opener import open_artifact

    family = _kind(cls)
    if family is None:
        raise ArgumentError(f"{cls.__name__}.from_preset is not available; use load_encoder "
                            "and build it.", field="cls")
    num_classes, label_names, sequence_length = _checked_arguments(
        cls, family, num_classes, label_names, sequence_length, lower_case, vocab_file,
        task, max_query_length, doc_stride, kwargs)
    if not isinstance(source, (str, os.PathLike)):
        raise ArgumentError(f"source must be a path or a checkpoint name, got "
                            f"{type(source).__name__}.", field="source")
    source = os.fspath(source)
    artifact = open_artifact(source, vocab_file=vocab_file, lower_case=lower_case,
                             keras_files=True)
    lengths = dict(sequence_length=sequence_length, max_query_length=max_query_length,
                   doc_stride=doc_stride)
    if artifact.kind in ("keras_file", "finetuning_run"):
        for name, value in (("vocab_file", vocab_file), *kwargs.items()):
            if value is not None:
                raise ArgumentError(
                    f"{source!r} is a saved model, which keeps its own "
                    f"{'vocabulary' if name == 'vocab_file' else name}: leave {name} out "
                    "(to start a new head, give a checkpoint).", field=name)
        if artifact.kind == "keras_file":
            model = _checked(cls, artifact.load(), source)
            if model.preprocessor is None:
                raise ArgumentError(f"{source!r} holds a {type(model).__name__} without a "
                                    "preprocessor (it takes ids): load it with "
                                    "keras.saving.load_model.", field="source")
            preprocessor = model.preprocessor
        else:
            from keras_bert.tasks.finetuning.run_directory import load_run

            model = _checked(cls, load_run(artifact).model, source)
            preprocessor = model.preprocessor
        _check_saved(model, preprocessor, source, num_classes, label_names, task, lower_case)
        preprocessor.settings = _settings(preprocessor.settings, family,
                                          model.encoder.config.max_position_embeddings,
                                          **lengths)
        model.preprocessor = preprocessor
        return model
    artifact.check_vocab()
    hub_task = _keras_hub_classifier_task(cls, artifact, num_classes, label_names)
    if hub_task is not None:  # a keras-hub BertTextClassifier preset keeps its head
        if kwargs:
            name = next(iter(kwargs))
            raise ArgumentError(f"{source!r} is a keras-hub classifier, which keeps its "
                                f"head: leave {name} out.", field=name)
        model = cls.from_keras_hub_preset(artifact.local_path)
        labels = label_names or list(artifact.labels)
        positions = model.encoder.config.max_position_embeddings
        settings = FeatureSettings(max_seq_length=hub_task.sequence_length
                                   or recipe.sequence_length(family, positions))
        settings = _settings(settings, family, positions, sequence_length=sequence_length)
        model.preprocessor = TextPreprocessor(
            classification_task(labels, len(labels), pair=None), artifact.tokenizer(),
            settings)
        return model
    encoder = artifact.load_encoder()
    positions = encoder.config.max_position_embeddings
    settings = _settings(FeatureSettings(max_seq_length=recipe.sequence_length(family,
                                                                               positions)),
                         family,
                         positions, fresh=True, **lengths)
    the_task = _new_task(cls, task, num_classes, label_names)
    model = the_task.build_model(encoder, **kwargs)
    if not isinstance(model, cls):
        raise ArgumentError(f"task {the_task.name!r} builds a {type(model).__name__}, not "
                            f"a {cls.__name__}.", field="task")
    model.preprocessor = TextPreprocessor(the_task, artifact.tokenizer(), settings)
    return model


def _check_saved(model, preprocessor, source, num_classes, label_names, task, lower_case):
    """Refuses arguments that differ from what the saved model holds (equal ones are
    fine): its classes, label names, task and casing."""
    saved_task = preprocessor.task
    labels = getattr(saved_task, "labels", None)
    labels = None if labels is None else list(labels)
    what = f"{source!r} holds a fine-tuned {type(model).__name__}"
    remedy = ("leave it out to use the saved model as it is, or fine-tune a new head from a "
              "checkpoint (from_preset of the encoder it started from)")
    saved_classes = getattr(model, "num_classes", None)
    if num_classes is not None and num_classes != saved_classes:
        raise ArgumentError(f"{what} of {saved_classes} classes"
                            + (f" {labels}" if labels else "") + f", not num_classes="
                            f"{num_classes}: {remedy}.", field="num_classes")
    if label_names is not None and label_names != labels:
        raise ArgumentError(f"{what} with the labels {labels}, not label_names="
                            f"{label_names}: {remedy}.", field="label_names")
    if task is not None and task != saved_task.name:
        raise ArgumentError(f"{what} of task {saved_task.name!r}, not task={task!r}: "
                            f"{remedy}.", field="task")
    if lower_case is not None and bool(lower_case) != preprocessor.tokenizer.lower_case:
        raise ArgumentError(f"{what} whose tokenizer has lower_case="
                            f"{preprocessor.tokenizer.lower_case}, as it was trained: leave "
                            "lower_case out.", field="lower_case")


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
    """The task of a new head (arguments checked by `_checked_arguments`)."""
    family = _kind(cls)
    if name is not None:
        task = get_task(name)
        if label_names is not None:
            task.restore({**task.config(), "labels": list(label_names)})
        classes = getattr(task, "num_classes", None) if getattr(task, "labels", ()) else None
        if num_classes is not None and classes is not None and num_classes != classes:
            raise ArgumentError(f"task {name!r} has {classes} classes "
                                f"{list(task.labels) if task.labels else ''}, not "
                                f"num_classes={num_classes}; leave num_classes out.",
                                field="num_classes")
        return task
    if family == "glue":
        if label_names is not None:
            return classification_task(label_names, len(label_names), pair=None)
        classes = 2 if num_classes is None else num_classes
        return classification_task(None, classes, pair=None)
    if family == "squad":
        return get_task("squad1")
    if family == "tagging":
        if label_names is None:
            raise ArgumentError("a tagger needs its label names: label_names=[\"O\", "
                                "\"B-PER\", \"I-PER\", ...].", field="label_names")
        from keras_bert.tasks.tagging.task import NerTask

        return NerTask(labels=label_names)
    return get_task("swag")


def _checked(cls, model, source):
    if not isinstance(model, cls):
        raise ArgumentError(f"{source!r} holds a {type(model).__name__}, not a "
                            f"{cls.__name__}; open it with {type(model).__name__}.from_preset.",
                            field="source")
    return model
