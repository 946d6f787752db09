"""Runs the Examples in the public docstrings, so documentation cannot drift from code."""

import doctest
import importlib
import pkgutil

import pytest

import keras_bert
import keras_bert.pipelines

MODULES = sorted(
    m.name for path, prefix in ((keras_bert.__path__, "keras_bert."),
                                (keras_bert.pipelines.__path__, "keras_bert.pipelines."))
    for m in pkgutil.walk_packages(path, prefix) if not m.name.endswith("__main__"))
# Modules of an optional extra: their examples run where the extra is installed.
OPTIONAL = {"keras_bert.data.beam": "apache_beam", "keras_bert.tasks.embedding.beam": "apache_beam"}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name in OPTIONAL:
        pytest.importorskip(OPTIONAL[name])
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
