"""Package facades that load a name's module on first use.

A package `__init__` re-exports its public names from the submodules that define them;
with `lazy_exports` it does so on first access, so that importing one light submodule
(an options dataclass, a list of names) does not load the package's TensorFlow-heavy
siblings. The `keras-bert` command relies on this to print its help at once.

Example (in a package's `__init__.py`):

    from keras_bert.core.lazy import lazy_exports

    _EXPORTS = {"Pretraining": "keras_bert.training.pretraining", ...}
    __all__ = sorted(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
"""

from __future__ import annotations

import importlib
import sys


def lazy_exports(package: str, exports: dict[str, str]):
    """`(__getattr__, __dir__)` for the package `package`, whose public name `name` is
    defined in the module `exports[name]` (a full module name)."""

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
