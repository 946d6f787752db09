"""The import direction is a checked contract: data flows text -> ids -> instances ->
TFRecords -> model -> checkpoint -> training -> export -> tasks -> pipelines -> CLI
(export is family-agnostic; the tasks' families serve through it), and a
module may import only modules of its own stage or earlier ones (shared/GUIDE.md).
Every import is read from the source, lazy imports inside functions included, and the
module graph must have no cycle."""

import ast
import os

import pytest
from conftest import REPO

# The stages in the order data flows, each a folder of keras_bert/ (pipelines/ installs as
# keras_bert.pipelines); export comes before tasks (it writes any model kind's
# `ModelServing`, and each family's folder says how its model serves), and plotting
# sits after tasks. Only the facade, `__main__`
# and `cli` sit at the top of the package (the last stage).
STAGE_ORDER = [["core"], ["text"], ["metrics"], ["data"], ["model"], ["checkpoints"],
               ["training"], ["export"], ["tasks"], ["plotting"], ["pipelines"]]
TOP_MODULES = {"__init__.py", "__main__.py", "cli.py"}


def _stages() -> list[tuple[str, list[str]]]:
    """`STAGE_ORDER` checked against the folders on disk: every package folder of
    keras_bert/ is in exactly one stage."""
    root = os.path.join(REPO, "keras_bert")
    folders = {n for n in os.listdir(root)
               if os.path.isfile(os.path.join(root, n, "__init__.py"))}
    ordered = [f for stage in STAGE_ORDER for f in stage if f != "pipelines"]
    assert folders == set(ordered), (
        f"keras_bert/ folders {sorted(folders ^ set(ordered))} are not both on disk and in "
        "STAGE_ORDER of tests/house/test_import_layers.py; put each where it belongs in the data "
        "flow")
    return ([("+".join(stage), [f"keras_bert.{f}" for f in stage]) for stage in STAGE_ORDER]
            + [("cli", ["keras_bert.cli", "keras_bert.__main__"])])


STAGES = _stages()
# The package facade imports lazily by name (`keras_bert.__getattr__`), not by statement.
FACADE = "keras_bert"


def _modules() -> dict[str, str]:
    """module name -> source path, for keras_bert/ and pipelines/ (installed as
    keras_bert.pipelines)."""
    found = {}
    for top, package in (("keras_bert", "keras_bert"), ("pipelines", "keras_bert.pipelines")):
        root = os.path.join(REPO, top)
        for directory, _, names in os.walk(root):
            for name in names:
                if not name.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(directory, name), root)[:-3]
                parts = [] if rel == "__init__" else rel.replace(os.sep, ".").split(".")
                if parts and parts[-1] == "__init__":
                    parts = parts[:-1]
                found[".".join([package, *parts])] = os.path.join(directory, name)
    return found


MODULES = _modules()


def _stage(module: str) -> int:
    best = None
    for rank, (_, prefixes) in enumerate(STAGES):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (rank, len(prefix))
    if best is None:
        raise AssertionError(f"{module} is in no stage of tests/house/test_import_layers.py; add "
                             "it where it belongs in the data flow.")
    return best[0]


def _resolve(name: str) -> str | None:
    """The project module an imported dotted name refers to (None if external)."""
    if name.startswith("pipelines"):
        name = "keras_bert." + name  # the source tree's name for keras_bert.pipelines
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: str) -> list[tuple[str, int]]:
    """(imported project module, line) for every import statement, nested ones too."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import name` may import the submodule pkg.name.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            resolved = _resolve(target)
            if resolved and resolved != module:
                found.append((resolved, node.lineno))
    return found


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def test_only_the_facade_the_command_and_main_sit_at_the_top():
    root = os.path.join(REPO, "keras_bert")
    loose = {n for n in os.listdir(root) if n.endswith(".py")}
    assert loose <= TOP_MODULES, (f"{sorted(loose - TOP_MODULES)} at the top of keras_bert/: "
                                  "put each module in the folder of its stage")


def test_every_module_has_a_stage():
    for module in MODULES:
        if module != FACADE:
            _stage(module)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != FACADE))
def test_imports_point_to_earlier_stages(module):
    bad = []
    for target, line in GRAPH[module]:
        if target == FACADE:
            bad.append(f"line {line}: imports the package facade `keras_bert`; import from "
                       "the module that defines the name")
        elif _stage(target) > _stage(module):
            bad.append(f"line {line}: imports {target} (stage {STAGES[_stage(target)][0]}), "
                       f"a later stage than {STAGES[_stage(module)][0]}")
    assert not bad, f"{module}:\n  " + "\n  ".join(bad)


def test_no_import_cycles():
    edges = {m: sorted({t for t, _ in GRAPH[m] if t != FACADE}) for m in MODULES}
    # A package's __init__ re-exporting its submodules is a facade, not a dependency of
    # those submodules on each other; cycles through it are still real cycles.
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in edges.get(node, []):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles:\n  " + "\n  ".join(" -> ".join(c) for c in cycles)


def test_pipelines_never_import_the_cli():
    for module, imports in GRAPH.items():
        if module.startswith("keras_bert.pipelines"):
            assert all(not t.startswith("keras_bert.cli") for t, _ in imports), module


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    # The contract is only as good as the parser: a lazy import inside a function and a
    # relative import must both be found.
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from keras_bert.cli import main\n"
                      "from ..core.fileio import write_json\n")
    found = {t for t, _ in _imports("keras_bert.data.m", str(source))}
    assert found == {"keras_bert.cli", "keras_bert.core.fileio"}


def test_only_the_beam_runners_import_the_beam_modules():
    # keras_bert.data.beam and keras_bert.tasks.embedding.beam need the optional `beam`
    # extra (apache-beam): `import keras_bert` must never load them; only
    # `create-pretraining-data --runner beam` and `encode --output_dir` do (the second
    # through the first, for its Beam flag check).
    importers = {module for module, imports in GRAPH.items()
                 if any(target == "keras_bert.data.beam" for target, _ in imports)}
    assert importers == {"keras_bert.pipelines.create_pretraining_data",
                         "keras_bert.tasks.embedding.beam"}
    importers = {module for module, imports in GRAPH.items()
                 if any(target == "keras_bert.tasks.embedding.beam" for target, _ in imports)}
    assert importers == {"keras_bert.pipelines.embedding.encode"}


def _private_imports(module: str, path: str) -> list[str]:
    """`from other_project_module import _name` statements of a module."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            base = ".".join(anchor[:len(anchor) - node.level + 1] + ([base] if base else []))
        target = _resolve(base)
        if target and target != module:
            found += [f"line {node.lineno}: {alias.name} from {target}" for alias in node.names
                      if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_module_imports_another_modules_private_names():
    # A name another module needs is part of its owner's interface: give it a public name.
    bad = {module: found for module, path in MODULES.items()
           if (found := _private_imports(module, path))}
    assert not bad, "\n".join(f"{m}: {', '.join(f)}" for m, f in sorted(bad.items()))


def test_no_module_over_500_lines():
    # One responsibility a file; a module that outgrows this splits along its stages.
    long = {module: n for module, path in MODULES.items()
            if (n := sum(1 for _ in open(path, encoding="utf-8"))) > 500}
    assert not long, long


def _test_files():
    tests_dir = os.path.join(REPO, "tests")
    for root, dirs, files in os.walk(tests_dir):
        dirs[:] = sorted(d for d in dirs if d not in ("fixtures", "__pycache__"))
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                yield os.path.relpath(path, tests_dir), path


def test_no_test_module_imports_another():
    # Shared fixtures live in conftest.py and shared helpers in tests/*_support.py,
    # harness.py and tokenization_refs.py, never in a test module.
    bad = []
    for name, path in _test_files():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            targets = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                       [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{name}:{node.lineno} imports {t}" for t in targets
                    if t.split(".")[-1].startswith("test_")]
    assert not bad, bad


def test_tests_sit_in_stage_folders():
    # tests/ holds the shared fixtures and helpers at its top (at most 8 Python files) and
    # the tests themselves in one folder per stage of STAGE_ORDER, plus house/ for the
    # rules of the tree; pytest imports test modules by file name, so names stay unique.
    tests_dir = os.path.join(REPO, "tests")
    top = [n for n in os.listdir(tests_dir) if n.endswith(".py")]
    assert len(top) <= 8, sorted(top)
    assert not [n for n in top if n.startswith("test_")], sorted(top)
    stages = {s for group in STAGE_ORDER for s in group} | {"house"}
    folders = {os.path.dirname(name) for name, _ in _test_files() if "/" in name}
    assert folders <= stages, folders - stages
    assert len(folders - {"house"}) >= 6, folders
    names = [os.path.basename(name) for name, _ in _test_files()]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
