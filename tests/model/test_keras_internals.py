"""The private Keras/TF hooks keras_bert relies on are still there, with the parameters it
expects, and its overrides still take effect.

An upgrade of Keras or TensorFlow that removes or changes one of them fails here, with a
message naming the hook, the versions and the keras_bert code that depends on it, instead
of failing somewhere deep in a training run (or not failing and silently doing the
wrong thing). Where they are used:

- keras_bert/training/pretraining.py: `_build_from_element_spec` replaces a model's
  `_maybe_symbolic_build` by one that calls `_symbolic_build(data_batch=element_spec)`;
  `_return_vector_logs` wraps the instance's `train_step`. On JAX and PyTorch it calls
  `_symbolic_build(data_batch=element_spec)` before `fit`.
- keras_bert/training/callbacks.py: on JAX, `sync_training_state` calls the model's
  `jax_state_sync` (the JAX trainer's state back into the variables) before a
  checkpoint or a metrics reset.
- keras_bert/training/optimization.py: `_ClipSummedGradients` overrides the optimizer's
  `_clip_gradients` and `_backend_update_step` and calls `_all_reduce_sum_gradients`,
  `_distributed_tf_update_step`, `_distribution_strategy` and
  `tf.__internal__.distribute.interim.maybe_merge_call`; `Lamb` overrides
  `_apply_weight_decay` and `update_step` and reads `_use_weight_decay`,
  `_get_variable_index`, `_momentums` and `_velocities`.
- keras_bert/text/packing.py: `BertPreprocessor` sets the layer attributes
  `_convert_input_args` and `_allow_non_tensor_positional_args`.
"""

import inspect

import keras
import numpy as np
import pytest
import tensorflow as tf

VERSIONS = f"Keras {keras.__version__}, TensorFlow {tf.__version__}"


def _qualname(owner, name):
    prefix = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", None) \
        or type(owner).__name__
    return f"{prefix}.{name}"


def require_hook(owner, name, params=None, *, used_by):
    """Returns `owner.name`; fails naming the hook, the versions and `used_by` when it is
    gone or when its parameter names (`self` included for methods) are not `params`."""
    hook = _qualname(owner, name)
    if not hasattr(owner, name):
        pytest.fail(f"Private hook `{hook}` no longer exists in {VERSIONS}; {used_by} "
                    "overrides or calls it and must be adapted (or cap the version in "
                    "setup.py).")
    value = getattr(owner, name)
    if params is not None:
        got = list(inspect.signature(value).parameters)
        if got != list(params):
            pytest.fail(f"Private hook `{hook}` changed its signature in {VERSIONS}: "
                        f"parameters {got}, {used_by} expects {list(params)}.")
    return value


OPTIMIZATION = "keras_bert/training/optimization.py"
PRETRAINING = "keras_bert/training/pretraining.py"


# --- keras_bert/training/pretraining.py -----------------------------------------------


def test_maybe_symbolic_build_hook():
    require_hook(keras.Model, "_maybe_symbolic_build", ["self", "iterator", "data_batch"],
                 used_by=f"{PRETRAINING} (_build_from_element_spec)")


def test_symbolic_build_hook():
    require_hook(keras.Model, "_symbolic_build", ["self", "iterator", "data_batch"],
                 used_by=f"{PRETRAINING} (_build_from_element_spec)")


def test_jax_state_sync_hook():
    pytest.importorskip("jax")
    from keras.src.backend.jax.trainer import JAXTrainer

    require_hook(JAXTrainer, "jax_state_sync", ["self"],
                 used_by="keras_bert/training/callbacks.py (sync_training_state)")


def test_train_step_hook():
    require_hook(keras.Model, "train_step", ["self", "data"],
                 used_by=f"{PRETRAINING} (_return_vector_logs)")
    require_hook(keras.Model, "make_train_function", ["self", "force"],
                 used_by=f"{PRETRAINING} (_return_vector_logs: the instance's train_step "
                         "must be looked up when the train function is made)")


def _tiny_model():
    inputs = keras.Input((4,), name="x")
    model = keras.Model(inputs, keras.layers.Dense(2, name="dense")(inputs))
    model.compile(optimizer=keras.optimizers.SGD(0.1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    return model


def _tiny_dataset():
    x = np.random.default_rng(0).normal(size=(8, 4)).astype("float32")
    y = np.arange(8) % 2
    return tf.data.Dataset.from_tensor_slices((x, y, np.ones(8, "float32"))).batch(4)


def test_pretraining_overrides_take_effect_in_fit():
    from keras_bert.training.pretraining import _build_from_element_spec, _return_vector_logs

    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = _tiny_model()
    dataset = _tiny_dataset()
    calls = {"build": [], "step": [], "symbolic": []}

    _build_from_element_spec(model, dataset.element_spec, strategy)
    build = model._maybe_symbolic_build

    def spy_build(iterator=None, data_batch=None):
        calls["build"].append(iterator)
        return build(iterator=iterator, data_batch=data_batch)

    model._maybe_symbolic_build = spy_build
    _return_vector_logs(model)
    step = model.train_step

    def spy_step(data):
        logs = step(data)
        calls["step"].append({k: tuple(v.shape) for k, v in logs.items()})
        return logs

    model.train_step = spy_step
    symbolic_build = model._symbolic_build

    def spy_symbolic_build(iterator=None, data_batch=None):
        calls["symbolic"].append(data_batch)
        return symbolic_build(iterator=iterator, data_batch=data_batch)

    model._symbolic_build = spy_symbolic_build
    history = model.fit(dataset, epochs=1, steps_per_epoch=1, verbose=0)
    assert calls["build"], (f"{VERSIONS}: fit no longer calls the model's "
                            f"`_maybe_symbolic_build` ({PRETRAINING} overrides it)")
    assert calls["step"], (f"{VERSIONS}: fit no longer calls the instance's `train_step` "
                           f"({PRETRAINING} wraps it)")
    assert all(shape == (1,) for shape in calls["step"][0].values()), calls["step"]
    assert {"loss", "accuracy"} <= set(history.history)
    # The losses and metrics were built from the element spec, not from a pulled batch.
    assert calls["symbolic"] == [dataset.element_spec], calls["symbolic"]


# --- keras_bert/training/optimization.py ----------------------------------------------


@pytest.mark.parametrize("name, params", [
    ("_clip_gradients", ["self", "grads"]),
    ("_backend_update_step", ["self", "grads", "trainable_variables", "learning_rate"]),
    ("_all_reduce_sum_gradients", ["self", "grads_and_vars"]),
    ("_distributed_tf_update_step", ["self", "distribution", "grads_and_vars",
                                     "learning_rate"]),
    ("_apply_weight_decay", ["self", "variables"]),
    ("_use_weight_decay", ["self", "variable"]),
    ("_get_variable_index", ["self", "variable"]),
    ("update_step", ["self", "gradient", "variable", "learning_rate"]),
])
def test_optimizer_hook(name, params):
    for cls in (keras.optimizers.AdamW, keras.optimizers.Lamb):
        require_hook(cls, name, params, used_by=OPTIMIZATION)


def test_optimizer_attributes():
    variable = keras.Variable(np.ones(2, "float32"))
    for cls in (keras.optimizers.AdamW, keras.optimizers.Lamb):
        optimizer = cls(learning_rate=0.1)
        require_hook(optimizer, "_distribution_strategy",
                     used_by=f"{OPTIMIZATION} (_ClipSummedGradients)")
        optimizer.build([variable])
        for name in ("_momentums", "_velocities"):
            slots = require_hook(optimizer, name, used_by=f"{OPTIMIZATION} (Lamb.update_step)")
            assert len(slots) == 1, f"{VERSIONS}: `{cls.__name__}.{name}` changed its layout"


def test_maybe_merge_call_hook():
    owner = tf
    for part in ("__internal__", "distribute", "interim"):
        owner = require_hook(owner, part, used_by=f"{OPTIMIZATION} (_ClipSummedGradients)")
    require_hook(owner, "maybe_merge_call", ["fn", "strategy", "args", "kwargs"],
                 used_by=f"{OPTIMIZATION} (_ClipSummedGradients)")


def test_clip_summed_gradients_override_takes_effect(monkeypatch):
    from keras_bert.training import optimization

    class ClipSGD(optimization._ClipSummedGradients, keras.optimizers.SGD):
        pass

    calls = []
    update = optimization._ClipSummedGradients._backend_update_step

    def spy(self, grads, trainable_variables, learning_rate):
        calls.append(len(grads))
        return update(self, grads, trainable_variables, learning_rate)

    monkeypatch.setattr(optimization._ClipSummedGradients, "_backend_update_step", spy)
    # Clipped once, to the global norm 1: [3, 4] -> [0.6, 0.8].
    w = keras.Variable([0.0, 0.0])
    ClipSGD(learning_rate=1.0, global_clipnorm=1.0).apply([tf.constant([3.0, 4.0])], [w])
    assert calls == [1], f"{VERSIONS}: Optimizer.apply no longer calls _backend_update_step"
    np.testing.assert_allclose(w.numpy(), [-0.6, -0.8], atol=1e-6)

    # And in a 1-step fit with keras_bert's AdamW.
    model = _tiny_model()
    model.compile(optimizer=optimization.AdamW(learning_rate=0.1, global_clipnorm=1.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [v.numpy() for v in model.trainable_weights]
    model.fit(_tiny_dataset(), epochs=1, steps_per_epoch=1, verbose=0)
    assert calls[1:] and set(calls[1:]) == {2}, (
        f"{VERSIONS}: fit does not reach _backend_update_step")
    assert not np.allclose(before[0], model.trainable_weights[0].numpy())


def test_lamb_overrides_take_effect(monkeypatch):
    from keras_bert.training import optimization

    calls = []
    keras_decay = keras.optimizers.Lamb._apply_weight_decay

    def spy(self, variables):
        calls.append(len(variables))
        return keras_decay(self, variables)

    monkeypatch.setattr(keras.optimizers.Lamb, "_apply_weight_decay", spy)
    # The docstring example of keras_bert's Lamb: decay inside the trust ratio only.
    optimizer = optimization.Lamb(learning_rate=0.1, weight_decay=0.01)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    kernel = keras.Variable([3.0, 4.0], name="kernel")
    bias = keras.Variable([3.0, 4.0], name="bias")
    grads = [tf.constant([0.5, 0.5])] * 2
    optimizer.apply(grads, [kernel, bias])
    assert calls == [], (f"{VERSIONS}: Keras' own weight decay ran although "
                         f"{OPTIMIZATION} overrides Lamb._apply_weight_decay")
    np.testing.assert_allclose(kernel.numpy(), [2.6482, 3.6447], atol=1e-4)
    # Excluded from decay: no trust ratio, a plain Adam-like step of lr * sign(g).
    np.testing.assert_allclose(bias.numpy(), [2.9, 3.9], atol=1e-4)


# --- keras_bert/text/packing.py ------------------------------------------------------


def test_layer_input_conversion_flags():
    layer = keras.layers.Layer()
    for name in ("_convert_input_args", "_allow_non_tensor_positional_args"):
        require_hook(layer, name, used_by="keras_bert/text/packing.py (BertPreprocessor)")

    class Strings(keras.layers.Layer):
        def __init__(self):
            super().__init__(trainable=False)
            self._convert_input_args = False
            self._allow_non_tensor_positional_args = True

        def call(self, inputs):
            assert isinstance(inputs, list), type(inputs)
            return tf.strings.length(tf.constant(inputs))

    try:
        lengths = Strings()(["ab", "c"])
    except Exception as e:
        pytest.fail(f"{VERSIONS}: a layer with _convert_input_args=False and "
                    "_allow_non_tensor_positional_args=True no longer gets its string "
                    f"inputs untouched (BertPreprocessor relies on it): {e!r}")
    np.testing.assert_array_equal(lengths, [2, 1])
