"""One opener says what an artifact is (`keras_bert.checkpoints.open_artifact`): export,
fine-tuning and the task models' `from_preset` ask it (`Artifact.kind`) and never test a
path's kind themselves, and the "as before" aliases of a run directory's file names are
gone (each name has one owner: `keras_bert.checkpoints.finetuning_runs`)."""

import ast
import glob
import os

import pytest
from conftest import REPO

# Where artifacts are opened: these ask the opener.
ASKERS = [os.path.join("keras_bert", "export"),
          os.path.join("keras_bert", "tasks", "finetuning"),
          os.path.join("keras_bert", "tasks", "keras_face.py")]
# The tests of a path's kind, and the readers that stand for one; the opener's own.
PATH_KIND_TESTS = {
    "is_finetuned_dir", "is_run_directory", "is_finetuning_run", "is_keras_hub_preset",
    "read_keras_hub_task", "find_run_directory", "is_training_checkpoint",
    "is_checkpoint_name", "detect_format", "describe_export",
}
# Old names of the fine-tuning run's files and of the opener, gone for good.
GONE = {"CONFIG_FILE", "MODEL_FILE", "resolve_checkpoint", "ResolvedCheckpoint"}


def _sources():
    for place in ASKERS:
        path = os.path.join(REPO, place)
        if path.endswith(".py"):
            yield path
            continue
        for directory, _, names in os.walk(path):
            yield from (os.path.join(directory, n) for n in sorted(names) if n.endswith(".py"))


def _names_used(path):
    """(name, line) of every name a module imports, calls or reads as an attribute."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield from ((alias.name, node.lineno) for alias in node.names)
            yield from ((alias.asname, node.lineno) for alias in node.names if alias.asname)
        elif isinstance(node, ast.Name):
            yield node.id, node.lineno
        elif isinstance(node, ast.Attribute):
            yield node.attr, node.lineno


@pytest.mark.parametrize("path", sorted(_sources()), ids=lambda p: os.path.relpath(p, REPO))
def test_export_and_finetuning_ask_the_opener(path):
    found = [f"line {line}: {name}" for name, line in _names_used(path)
             if name in PATH_KIND_TESTS | GONE]
    assert not found, (f"{os.path.relpath(path, REPO)} tests a path's kind itself (or uses "
                       f"a name that is gone): {found}; open it with open_artifact and ask "
                       "its kind")


def test_the_checker_sees_calls_imports_and_attributes(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from keras_bert.checkpoints.keras_hub import read_keras_hub_task\n"
                      "import keras_bert.tasks.finetuning.run_directory as rd\n"
                      "rd.is_run_directory('x')\nis_finetuned_dir('y')\n")
    names = {name for name, _ in _names_used(str(source))}
    assert {"read_keras_hub_task", "is_run_directory", "is_finetuned_dir"} <= names


def test_no_module_aliases_the_run_files_or_the_opener():
    # `from ... import FINETUNE_CONFIG as CONFIG_FILE` names a file twice: nowhere.
    bad = []
    for top in ("keras_bert", "pipelines"):
        for directory, _, names in os.walk(os.path.join(REPO, top)):
            for name in names:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(directory, name)
                bad += [f"{os.path.relpath(path, REPO)}:{line} {n}"
                        for n, line in _names_used(path) if n in GONE]
    assert not bad, bad


def test_run_directory_file_names_have_one_owner():
    # keras_bert.core.run_files names what the runs write; nothing else spells a name
    # of it as a module-level constant (a second spelling could drift from the first).
    from keras_bert.core import run_files

    names = {v for k, v in vars(run_files).items() if k.isupper() and isinstance(v, str)}
    owner = os.path.join(REPO, "keras_bert", "core", "run_files.py")
    spelled = []
    for root in ("keras_bert", "pipelines"):
        for path in glob.glob(os.path.join(REPO, root, "**", "*.py"), recursive=True):
            if path == owner:
                continue
            tree = ast.parse(open(path, encoding="utf-8").read())
            for node in tree.body:
                if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                        and node.value.value in names):
                    spelled.append(f"{os.path.relpath(path, REPO)}:{node.lineno}")
    assert not spelled, spelled
