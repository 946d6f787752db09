"""Exactly one module installs a SIGTERM (or any other) signal handler:
`keras_bert/core/stopping.py`, the one way the commands stop on SIGTERM and Ctrl-C.
Elsewhere `signal.signal` may only put back the default (`SIG_DFL`) or ignore a signal
(`SIG_IGN`), as the pretraining-data workers do. Read from the source by `ast`, every
spelling of the call (`import signal as s`, `from signal import signal`) included."""

import ast
import os

from conftest import REPO

ROOTS = ("keras_bert", "pipelines")
INSTALLER = os.path.join("keras_bert", "core", "stopping.py")
ALLOWED_HANDLERS = {"SIG_DFL", "SIG_IGN"}


def _installs(tree) -> list[int]:
    """The lines of `tree` that install a handler other than SIG_DFL / SIG_IGN:
    `signal.signal(signum, handler)` however `signal` was imported, and an asyncio
    loop's `add_signal_handler`."""
    modules, functions, constants = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name == "signal")
        elif isinstance(node, ast.ImportFrom) and node.module == "signal":
            for alias in node.names:
                if alias.name == "signal":
                    functions.add(alias.asname or alias.name)
                elif alias.name in ALLOWED_HANDLERS:
                    constants.add(alias.asname or alias.name)

    def is_allowed(handler) -> bool:
        if isinstance(handler, ast.Attribute):
            return (handler.attr in ALLOWED_HANDLERS and isinstance(handler.value, ast.Name)
                    and handler.value.id in modules)
        return isinstance(handler, ast.Name) and handler.id in constants

    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "add_signal_handler":
            lines.append(node.lineno)
            continue
        is_signal = ((isinstance(func, ast.Attribute) and func.attr == "signal"
                      and isinstance(func.value, ast.Name) and func.value.id in modules)
                     or (isinstance(func, ast.Name) and func.id in functions))
        if not is_signal:
            continue
        handler = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "handler"), None)
        if handler is None or not is_allowed(handler):
            lines.append(node.lineno)
    return lines


def _sources():
    for top in ROOTS:
        for directory, _, names in os.walk(os.path.join(REPO, top)):
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    yield os.path.relpath(path, REPO), path


def test_only_core_stopping_installs_signal_handlers():
    installers = {}
    for rel, path in _sources():
        with open(path, encoding="utf-8") as f:
            lines = _installs(ast.parse(f.read(), filename=rel))
        if lines:
            installers[rel] = lines
    assert INSTALLER in installers, (
        f"{INSTALLER} installs no signal handler any more; update this test")
    others = {rel: lines for rel, lines in installers.items() if rel != INSTALLER}
    assert not others, (
        f"signal handlers installed outside {INSTALLER} (file: lines): {others}; stop on "
        "a signal through keras_bert.core.stopping (stop_on_signals / deferred) instead. "
        "Only signal.SIG_DFL or signal.SIG_IGN may be set elsewhere.")


def test_the_checker_sees_every_spelling():
    installs = [
        "import signal\nsignal.signal(signal.SIGTERM, lambda *a: None)",
        "import signal as s\ns.signal(s.SIGTERM, handler)",
        "from signal import signal as install, SIGTERM\ninstall(SIGTERM, handler)",
        "import signal\nsignal.signal(signal.SIGTERM, handler=previous)",
        "import signal\nsignal.signal(signal.SIGTERM, previous or signal.SIG_DFL)",
        "loop.add_signal_handler(15, stop)",
    ]
    for source in installs:
        assert _installs(ast.parse(source)) != [], source
    defaults = [
        "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_DFL)",
        "import signal as s\ns.signal(s.SIGINT, s.SIG_IGN)",
        "from signal import signal, SIGTERM, SIG_DFL\nsignal(SIGTERM, SIG_DFL)",
        "import signal\nsignal.getsignal(signal.SIGTERM)\nsignal.pthread_sigmask(0, [])",
    ]
    for source in defaults:
        assert _installs(ast.parse(source)) == [], source
