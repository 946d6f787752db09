"""Runs the Examples in the public docstrings, so documentation cannot drift from code."""

import doctest
import importlib
import pkgutil

import pytest

import keras_bert

MODULES = sorted(m.name for m in pkgutil.walk_packages(keras_bert.__path__, "keras_bert.")
                 if not m.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
