"""The task registry: names registered by decorator in each family folder's light
`__init__`, found by the registry itself (a new family is a new folder), in their
order, with unlisted aliases and the error for an unknown name."""

import sys

import pytest

import keras_bert.tasks
from keras_bert.core.errors import ArgumentError
from keras_bert.tasks import registry
from keras_bert.tasks.glue.classification import TextClassificationTask
from keras_bert.tasks.registry import TASK_NAMES, get_task, register_task, task_names


def test_registry_names_order_aliases_and_errors():
    assert TASK_NAMES == ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli",
                          "squad1", "squad2", "ner", "swag", "classification", "tagging",
                          "embedding", "sts")
    assert task_names(listed_only=False)[-1] == "library"
    assert type(get_task("library")) is TextClassificationTask
    assert get_task("sst2") is not get_task("sst2")  # a fresh task per call
    with pytest.raises(ArgumentError, match=r"unknown task 'nope'; choose one of cola, .*"
                                            r"classification, tagging, embedding, sts\.$"):
        get_task("nope")
    with pytest.raises(ValueError, match="registered twice"):
        register_task("ner")(lambda name: None)



def test_a_new_family_is_a_new_folder(tmp_path, monkeypatch):
    family = tmp_path / "my_family"
    family.mkdir()
    (family / "__init__.py").write_text(
        '"""A family of one task."""\n\n'
        "from keras_bert.tasks.registry import register_task\n\n\n"
        '@register_task("my_task", order=55)\n'
        "def my_task(name):\n"
        "    return ('a task', name)\n", encoding="utf-8")
    monkeypatch.setattr(keras_bert.tasks, "__path__", [*keras_bert.tasks.__path__,
                                                         str(tmp_path)])
    monkeypatch.setattr(registry, "_discovered", False)
    try:
        assert task_names()[-5:-2] == ("classification", "my_task", "tagging")
        assert get_task("my_task") == ("a task", "my_task")
    finally:
        registry._TASKS.pop("my_task", None)
        sys.modules.pop("keras_bert.tasks.my_family", None)
    assert "my_task" not in task_names()
