"""Where a later stage implements a method an earlier stage's class offers, and what
runs once a module is imported.

The task models are defined in the model stage, which imports no later stage; their
raw-text face (`from_preset`, `fit` on strings, `classify`, ...) needs the checkpoints
and tasks stages, and `export()` the export stage. The facade (`keras_bert/__init__.py`,
above every stage) names here the module that provides each role, and the method loads
it on first use, so the stages still import one way.

`after_import(name, callback)` calls `callback()` once the module `name` has been
imported, at once if it already is: the facade registers keras_bert's Keras classes
when Keras arrives, without importing Keras itself.

Example:

>>> provide("example_role", "json")
>>> provider("example_role").__name__
'json'
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable

_PROVIDERS: dict[str, str] = {}


def provide(role: str, module: str) -> None:
    """Names `module` (a full module name) as the provider of `role`."""
    _PROVIDERS[role] = module


def provider(role: str):
    """The module that provides `role`, imported."""
    module = _PROVIDERS.get(role)
    if module is None:
        raise RuntimeError(f"nothing provides {role!r}: import keras_bert (the package "
                           "facade wires the stages together) before using it.")
    return importlib.import_module(module)


def after_import(name: str, callback: Callable[[], None]) -> None:
    """Calls `callback()` right after the module `name` is first imported (now, if it
    already is)."""
    if name in sys.modules:
        callback()
        return
    sys.meta_path.insert(0, _AfterImport(name, callback))


def initializing(package: str) -> bool:
    """Whether a submodule of `package` (`package.*`) is being imported right now."""
    return any(getattr(getattr(module, "__spec__", None), "_initializing", False)
               for name, module in list(sys.modules.items())
               if name.startswith(package + "."))


class _AfterImport:
    """A meta path finder that wraps the loader of one module so that `callback` runs
    after it. It stays in place until that import runs: a mere
    `importlib.util.find_spec(name)` (TensorFlow makes one for Keras) also asks it."""

    def __init__(self, name: str, callback: Callable[[], None]):
        self.name, self.callback, self.searching = name, callback, False

    def find_spec(self, name, path=None, target=None):
        if name != self.name or self.searching:
            return None
        self.searching = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.searching = False
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_call(module):
            exec_module(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            self.callback()

        spec.loader.exec_module = exec_then_call
        return spec
