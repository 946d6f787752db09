"""Every fine-tuning task by its `--task` name, registered by the task families.

Each family folder under `keras_bert/tasks/` registers its names in its package
`__init__.py` with `register_task` on a small factory function that imports the
family's (TensorFlow-heavy) task module only when called:

    from keras_bert.tasks.registry import register_task

    @register_task("swag", order=40)
    def swag_task(name):
        from keras_bert.tasks.multiple_choice.task import SwagTask

        return SwagTask()

The registry finds the families itself (every subpackage of `keras_bert.tasks`, by
`pkgutil`), so adding a family is adding a folder. A family's `__init__.py` must stay
light (no TensorFlow, no Keras): the command line reads `TASK_NAMES` for its `--task`
choices before it loads TensorFlow.

`TASK_NAMES` lists the names by their `order` (then by registration): the nine GLUE
tasks, squad1, squad2, ner, swag, then your own labelled data, `classification` and
`tagging`, then sentence embeddings: `embedding` (your own pairs) and `sts`. A name registered with `listed=False` (`library`, what old demo runs saved)
opens saved runs but is not offered as a choice.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import TYPE_CHECKING

from keras_bert.core.errors import ArgumentError

if TYPE_CHECKING:  # tasks.base loads TensorFlow; the command line reads TASK_NAMES first
    from keras_bert.tasks.base import Task

# The nine GLUE tasks, in the paper's order (Table 1): the registry lists them first.
GLUE_NAMES = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli")

# A family folder's task model classes live in its `model` module.
FAMILY_MODELS_MODULE = "keras_bert.tasks.{family}.model"
# name -> (order, registration number, listed, factory)
_TASKS: dict[str, tuple[float, int, bool, Callable[[str], Task]]] = {}
_discovered = False


def register_task(*names: str, order: float = 100, listed: bool = True):
    """Registers the decorated `factory(name) -> Task` under each of `names` (a fresh
    task per call). `order` places the names in `TASK_NAMES` (lower first; ties in
    registration order); `listed=False` keeps a name out of `TASK_NAMES` (an alias
    that only opens saved runs). A name registered twice is an error.

    Example:

    >>> @register_task("doctest_echo", listed=False)
    ... def echo(name):
    ...     return name
    >>> get_task("doctest_echo")
    'doctest_echo'
    >>> _TASKS.pop("doctest_echo")[2]
    False
    """
    def decorate(factory: Callable[[str], Task]):
        for name in names:
            if name in _TASKS:
                raise ValueError(f"task name {name!r} is registered twice.")
            _TASKS[name] = (order, len(_TASKS), listed, factory)
        return factory

    return decorate


def _discover() -> None:
    """Imports every family package under keras_bert/tasks (light `__init__`s), which
    registers their names."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    import keras_bert.tasks

    for module in pkgutil.iter_modules(keras_bert.tasks.__path__):
        if module.ispkg:
            importlib.import_module(f"keras_bert.tasks.{module.name}")


def task_names(listed_only: bool = True) -> tuple[str, ...]:
    """The registered task names in `TASK_NAMES` order (with the unlisted aliases when
    `listed_only` is False)."""
    _discover()
    ranked = sorted(_TASKS.items(), key=lambda item: item[1][:2])
    return tuple(name for name, (_, _, listed, _) in ranked if listed or not listed_only)


def get_task(name: str) -> Task:
    """A fresh `Task` for a task name (one of `TASK_NAMES`).

    Example:

    >>> task = get_task("mrpc")
    >>> task.family, task.metric_names
    ('glue', ('accuracy', 'f1'))
    >>> get_task("mrcp")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: unknown task 'mrcp'; choose one of cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli, squad1, squad2, ner, swag, classification, tagging, embedding, sts.
    """
    _discover()
    if name not in _TASKS:
        raise ArgumentError(f"unknown task {name!r}; choose one of {', '.join(task_names())}.",
                            field="task")
    return _TASKS[name][3](name)


def __getattr__(attribute: str):
    # TASK_NAMES is computed on first use: the families register when they are found.
    if attribute == "TASK_NAMES":
        return task_names()
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


def task_model_class(family: str, name: str) -> type:
    """The task model class `name` of the family folder `family` (its `model` module).

    The GLUE and tagging tasks build their models through this: a task model's raw-text
    face (`keras_bert.tasks.keras_face`) makes their `Task` (the generic classification
    task, the tagger of `from_preset`), so their task modules importing the model module
    would close an import cycle; the family is found by name, as `get_task` finds tasks.

    Example:

    >>> task_model_class("glue", "BertClassifier").__name__
    'BertClassifier'
    """
    return getattr(importlib.import_module(FAMILY_MODELS_MODULE.format(family=family)), name)


MODEL_FAMILIES = ("glue", "squad", "tagging", "multiple_choice", "embedding")


def register_task_models() -> None:
    """Imports every family folder's `model` module, so each task model class is
    registered with Keras (it registers when it is defined) before a `.keras` file or a
    run's model.keras is opened; found by name, as `get_task` finds the families' tasks."""
    for family in MODEL_FAMILIES:
        importlib.import_module(FAMILY_MODELS_MODULE.format(family=family))
