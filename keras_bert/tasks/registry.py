"""Every fine-tuning task by its `--task` name."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from keras_bert.core.errors import ArgumentError

if TYPE_CHECKING:  # tasks.base loads TensorFlow; the command line reads TASK_NAMES first
    from keras_bert.tasks.base import Task

GLUE_NAMES = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli")
TASK_NAMES = (*GLUE_NAMES, "squad1", "squad2", "ner", "swag")
# The inputs of the tasks that read long ones in windows (`keras_bert.tasks.windows`)
# rather than truncate them, as help texts name them.
WINDOWED_INPUTS = "SQuAD passages and NER sentences"


def get_task(name: str) -> Task:
    """A fresh `Task` for a task name (one of `TASK_NAMES`).

    Example:

    >>> task = get_task("mrpc")
    >>> task.family, task.metric_names
    ('glue', ('accuracy', 'f1'))
    >>> get_task("mrcp")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: unknown task 'mrcp'; choose one of cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli, squad1, squad2, ner, swag.
    """
    if name in GLUE_NAMES:
        from keras_bert.tasks.glue.task import GLUE_TASKS

        return copy.deepcopy(GLUE_TASKS[name])
    if name in ("squad1", "squad2"):
        from keras_bert.tasks.squad import SquadTask

        return SquadTask(name)
    if name == "ner":
        from keras_bert.tasks.tagging.task import NerTask

        return NerTask()
    if name == "swag":
        from keras_bert.tasks.multiple_choice.task import SwagTask

        return SwagTask()
    if name == "classification":  # your own labels: a saved model's config restores them
        from keras_bert.tasks.glue.classification import TextClassificationTask

        return TextClassificationTask(None)
    if name == "library":  # the demo's derived task: only saved runs are opened by name
        from keras_bert.tasks.glue.library import LibraryTask

        return LibraryTask.saved()
    raise ArgumentError(f"unknown task {name!r}; choose one of {', '.join(TASK_NAMES)}.",
                        field="task")
