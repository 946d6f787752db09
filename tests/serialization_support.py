"""`run_serialization_test`: the serialization checks every keras_bert layer and model
should pass, in the spirit of keras-hub's `TestCase.run_serialization_test`.

A helper module for the tests (not a test file itself).
"""

import inspect
import json
import os

import keras
import numpy as np


def sublayer_policies(obj) -> dict:
    """{attribute path: dtype policy name} of `obj` and every layer reachable from it.

    Walks the public attributes that hold layers (and lists, tuples or dicts of layers)
    plus a model's `layers`, so the keys ("encoder.embeddings.word_embeddings", ...)
    are the same for an object and its reloaded copy.
    """
    policies, seen = {}, set()

    def children(layer):
        found = dict(enumerate(getattr(layer, "layers", None) or []))
        found = {f"layers[{i}]": v for i, v in found.items()}
        for name, value in vars(layer).items():
            if name.startswith("_"):
                continue
            if isinstance(value, keras.layers.Layer):
                found[name] = value
            elif isinstance(value, (list, tuple)):
                found.update({f"{name}[{i}]": v for i, v in enumerate(value)
                              if isinstance(v, keras.layers.Layer)})
            elif isinstance(value, dict):
                found.update({f"{name}[{k!r}]": v for k, v in value.items()
                              if isinstance(v, keras.layers.Layer)})
        return found

    def walk(layer, path):
        if id(layer) in seen:
            return
        seen.add(id(layer))
        policies[path] = layer.dtype_policy.name
        for name, child in children(layer).items():
            walk(child, f"{path}.{name}")

    walk(obj, type(obj).__name__)
    return policies


def _call(obj, inputs, call_kwargs):
    kwargs = dict(call_kwargs or {})
    if "training" in inspect.signature(obj.call).parameters:
        kwargs.setdefault("training", False)
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    return [np.asarray(keras.ops.cast(y, "float32")) for y in
            keras.tree.flatten(obj(*args, **kwargs))]


def _same_outputs(expected, got, what):
    assert len(expected) == len(got), f"{what}: {len(got)} outputs, expected {len(expected)}"
    for i, (a, b) in enumerate(zip(expected, got)):
        np.testing.assert_array_equal(b, a, err_msg=f"{what}: output {i} differs")


def run_serialization_test(obj, inputs, tmp_path, *, call_kwargs=None,
                           from_config_kwargs=None, keras_file=True):
    """Checks that `obj` (a layer or model, already called/built) serializes losslessly.

    1. `get_config()` is JSON-serializable, and `type(obj).from_config(config)` gives an
       object with the same config, the same dtype policy for it and every sublayer, and
       (for a layer that holds no weights of its own yet) the same output shapes.
    2. Saving to a `.keras` file and loading it gives an object of the same type with the
       same config, the same dtype policy for it and every sublayer, and the same
       outputs on `inputs` (in inference mode).

    Args:
        obj: the layer or model.
        inputs: the call's input, or a tuple of positional call arguments.
        tmp_path: a directory for the `.keras` file (pytest's `tmp_path`).
        call_kwargs: extra keyword arguments of the call; `training=False` is added when
            the call takes `training`.
        from_config_kwargs: extra arguments of `from_config` (e.g. `embedding=` for
            `MaskedLMHead`).
        keras_file: False skips step 2 (for a layer that cannot be loaded on its own).

    Returns:
        The object loaded from the `.keras` file (or the `from_config` clone).
    """
    name = type(obj).__name__
    expected = _call(obj, inputs, call_kwargs)
    policies = sublayer_policies(obj)

    # 1. get_config -> from_config.
    config = obj.get_config()
    json.dumps(config)  # a .keras file stores it as JSON
    clone = type(obj).from_config(config, **(from_config_kwargs or {}))
    assert clone.get_config() == config, f"{name}: from_config(get_config()) changes the config"
    assert clone.dtype_policy.name == obj.dtype_policy.name, (
        f"{name}: from_config gives dtype policy {clone.dtype_policy.name}, "
        f"expected {obj.dtype_policy.name}")
    cloned = _call(clone, inputs, call_kwargs)
    assert [a.shape for a in cloned] == [a.shape for a in expected], f"{name}: output shapes"
    assert sublayer_policies(clone) == policies, f"{name}: from_config changes sublayer policies"
    if not keras_file:
        return clone

    # 2. .keras save and load.
    path = os.path.join(str(tmp_path), f"{name}.keras")
    keras.saving.save_model(obj, path)
    restored = keras.saving.load_model(path)
    assert type(restored) is type(obj)
    assert restored.get_config() == config, f"{name}: the .keras file changes the config"
    assert restored.dtype_policy.name == obj.dtype_policy.name, (
        f"{name}: loaded with dtype policy {restored.dtype_policy.name}, "
        f"saved with {obj.dtype_policy.name}")
    assert sublayer_policies(restored) == policies, (
        f"{name}: sublayer dtype policies change through a .keras file")
    _same_outputs(expected, _call(restored, inputs, call_kwargs), f"{name} loaded from .keras")
    return restored
