"""Where a later stage implements a method an earlier stage's class offers.

The task models are defined in the model stage, which imports no later stage; their
raw-text face (`from_preset`, `fit` on strings, `classify`, ...) needs the checkpoints
and tasks stages, and `export()` the export stage. The facade (`keras_bert/__init__.py`,
above every stage) names here the module that provides each role, and the method loads
it on first use, so the stages still import one way.

Example:

>>> provide("example_role", "json")
>>> provider("example_role").__name__
'json'
"""

from __future__ import annotations

import importlib

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
