"""The house rules of issue 33 that a reader trips over when they break: every module
named where a newcomer looks (README's map or its package's `__init__` docstring), no
function longer than a screen, the vocab file's name written once, the task families in
folders that hold their serving code, and commands that never rewrite the library's
messages. (The import direction, the top of the package and module sizes are checked in
tests/house/test_import_layers.py.)"""

import ast
import os
import re

import pytest
from conftest import REPO

ROOTS = {"keras_bert": "keras_bert", "pipelines": "keras_bert.pipelines"}
MAX_FUNCTION_LINES = 80


def _sources():
    for top in ROOTS:
        for directory, _, names in os.walk(os.path.join(REPO, top)):
            for name in sorted(names):
                if name.endswith(".py"):
                    yield os.path.join(directory, name)


def _body_lines(node) -> int:
    """A function's lines from its first statement after the docstring to its end."""
    body = node.body
    first = body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        if len(body) == 1:
            return 0
        first = body[1]
    return node.end_lineno - first.lineno + 1


def test_no_function_is_longer_than_a_screen():
    long = []
    for path in _sources():
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = _body_lines(node)
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{os.path.relpath(path, REPO)}:{node.lineno} {node.name} "
                                f"({lines} lines)")
    assert not long, "split into named steps: " + "; ".join(long)


def test_the_vocab_file_name_is_written_once():
    places = [f"{os.path.relpath(p, REPO)}:{i}" for p in _sources()
              for i, line in enumerate(open(p, encoding="utf-8"), 1) if '"vocab.txt"' in line]
    assert len(places) <= 2, ("use keras_bert.text.vocab.VOCAB_FILE and "
                              f"keras_bert.checkpoints.checkpoint_vocab: {places}")


def test_commands_never_rewrite_library_messages():
    found = [f"{os.path.relpath(p, REPO)}:{i}"
             for p in _sources() if os.sep + "pipelines" + os.sep in p
             for i, line in enumerate(open(p, encoding="utf-8"), 1)
             if re.search(r"str\([^)]*\)\.replace\(", line)]
    assert not found, f"name flags through pipelines/plumbing/field_flags.py instead: {found}"


@pytest.mark.parametrize("family", ["glue", "squad", "tagging", "multiple_choice"])
def test_each_task_family_is_one_folder_with_its_serving(family):
    folder = os.path.join(REPO, "keras_bert", "tasks", family)
    assert os.path.isfile(os.path.join(folder, "__init__.py"))
    assert not os.path.exists(folder + ".py")
    # GLUE's serve_text is the common one (tokenize, pack, run): it has no LiteRT module.
    for name in ("serving.py",) if family == "glue" else ("serving.py", "litert_serving.py"):
        assert os.path.isfile(os.path.join(folder, name)), (family, name)


def _docstrings(tree) -> set:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def test_export_names_no_family_or_model_kind():
    """export/ asks the model's `ModelServing` (from the task) and never branches on a
    family, task or kind name: adding a family adds a folder under tasks/, not a branch
    in export/. The names come from the registries themselves, so a new family or kind
    is checked too."""
    from keras_bert.tasks.export_sources import KINDS
    from keras_bert.tasks.registry import TASK_NAMES

    families = ("glue", "squad", "tagging", "multiple_choice", "ner", "swag")
    names = {*KINDS, *TASK_NAMES, *families}
    words = re.compile(r"\b(%s)\b" % "|".join(sorted(names - {"encoder"})), re.I)
    found = []
    folder = os.path.join(REPO, "keras_bert", "export")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(folder, name), encoding="utf-8").read())
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docstrings
                    and (node.value.strip().lower() in names or words.search(node.value))):
                found.append(f"export/{name}:{node.lineno}: {node.value[:60]!r}")
    assert not found, f"ask the model's ModelServing instead: {found}"


def test_every_module_is_named_in_readme_or_its_package_docstring():
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    missing = []
    for path in _sources():
        directory, name = os.path.split(path)
        module = name[:-3]
        if module in ("__init__", "__main__"):
            continue
        init = os.path.join(directory, "__init__.py")
        doc = ""
        if os.path.isfile(init) and init != path:
            doc = ast.get_docstring(ast.parse(open(init, encoding="utf-8").read())) or ""
        if not re.search(rf"`{re.escape(module)}(\.py)?`|\b{re.escape(module)}\.py\b", readme + doc):
            missing.append(os.path.relpath(path, REPO))
    assert not missing, f"name these in README's map or their package's docstring: {missing}"
