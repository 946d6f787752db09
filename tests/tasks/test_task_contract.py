"""Every registered task through the whole `Task` contract (`harness.run_task_contract`):
read, features, build, a training step, decode, evaluate, serving, config round trip,
`.keras` reload and SavedModel export serving text.

Parametrized over the registry itself, so a new family is covered as soon as its
folder registers a name; it needs tiny data in its own layout under
tests/fixtures/tasks/ (`DATA` maps names to folders; by default
`tests/fixtures/tasks/<name>`). The first name of each distinct `Task` class runs the
whole contract by default; the others (the GLUE names sharing `GlueTask`, squad2)
run the cheap half (no training step, reload or export) by default and the whole
under `-m slow`. Tiny model
(2 layers, H=32) and tokenizer vocabulary (vocab_rich.txt): plumbing, not accuracy.
"""

import os

import pytest
from conftest import REPO
from export_support import rich_tokenizer, tiny_config
from harness import run_task_contract

from keras_bert.tasks.base import FeatureSettings
from keras_bert.tasks.registry import TASK_NAMES, get_task

TASK_DATA = os.path.join(REPO, "tests", "fixtures", "tasks")
# The data folder of the names whose folder is not tests/fixtures/tasks/<name>.
DATA = {**{name: "glue" for name in ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli",
                                     "rte", "wnli")},
        "squad1": "squad", "squad2": "squad", "ner": "conll2003", "sts": "glue/STS-B"}
SETTINGS = FeatureSettings(max_seq_length=32, doc_stride=16, max_query_length=8,
                           max_answer_length=5, n_best_size=5)


def _first_of_each_class():
    seen, first = set(), []
    for name in TASK_NAMES:
        kind = type(get_task(name))
        if kind not in seen:
            seen.add(kind)
            first.append(name)
    return first


FULL = _first_of_each_class()
CASES = [pytest.param(name, True, id=f"{name}-full") if name in FULL else
         pytest.param(name, False, id=f"{name}-cheap") for name in TASK_NAMES]
CASES += [pytest.param(name, True, id=f"{name}-full", marks=pytest.mark.slow)
          for name in TASK_NAMES if name not in FULL]


@pytest.fixture(scope="module")
def tokenizer():
    return rich_tokenizer(False)


@pytest.mark.parametrize("name,full", CASES)
def test_registered_task_contract(name, full, tokenizer, tmp_path):
    data_dir = os.path.join(TASK_DATA, DATA.get(name, name))
    assert os.path.isdir(data_dir), (
        f"task {name!r} has no tiny data: add it in the task's layout under {data_dir} "
        "(or map the name in DATA)")
    metrics = run_task_contract(name, data_dir, str(tmp_path), tokenizer=tokenizer,
                                encoder_config=tiny_config(tokenizer.vocab_size),
                                settings=SETTINGS, full=full)
    assert metrics


def test_every_distinct_task_class_runs_the_whole_contract_by_default():
    assert FULL == ["cola", "squad1", "ner", "swag", "classification", "tagging", "embedding",
                    "sts"]
