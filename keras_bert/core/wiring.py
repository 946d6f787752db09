"""Where a later stage implements a method an earlier stage's class offers: one role
left, "finetuning_runs" (the checkpoints opener restores and loads fine-tuning runs
through the tasks stage), which the facade (`keras_bert/__init__.py`) names; it goes
with the rewrite of fine-tuning run loading, and this module with it.

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
