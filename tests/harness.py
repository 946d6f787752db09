"""The checks every keras_bert layer and model passes, in the spirit of keras-hub's
`TestCase`: a test gives the class, its init arguments and an input, and the harness
does the rest.

- `run_layer_test`: output shapes, weight counts, config round trip, gradients reaching
  every trainable weight, seeded determinism, and the mixed_bfloat16 precision check.
- `run_serialization_test`: `get_config`/`from_config` and a `.keras` file keep the
  config, every sublayer's dtype policy and the outputs.
- `run_model_saving_test`: a `.keras` file gives the same outputs (the saving half).
- `run_precision_test`: under mixed_bfloat16 the variables stay float32, the compute is
  bfloat16, and the outputs stay near the float32 object's with the same weights.
- `run_task_contract`: a registered fine-tuning task through the whole `Task` contract
  (read, features, build, decode, evaluate, serving, config round trip and, unless
  `full=False`, a training step, a `.keras` reload and a SavedModel export serving
  text).

A helper module for the tests (not a test file itself).
"""

import inspect
import json
import os

import keras
import numpy as np
import tensorflow as tf


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
    return run_model_saving_test(obj, inputs, tmp_path, call_kwargs=call_kwargs,
                                 expected=expected)


def run_model_saving_test(obj, inputs, tmp_path, *, call_kwargs=None, expected=None):
    """Saves `obj` to a `.keras` file and loads it: the same type, config, dtype policy
    for it and every sublayer, and the same outputs on `inputs` (inference mode).

    Returns the loaded object.
    """
    name = type(obj).__name__
    expected = _call(obj, inputs, call_kwargs) if expected is None else expected
    path = os.path.join(str(tmp_path), f"{name}.keras")
    keras.saving.save_model(obj, path)
    restored = keras.saving.load_model(path)
    assert type(restored) is type(obj)
    assert restored.get_config() == obj.get_config(), (
        f"{name}: the .keras file changes the config")
    assert restored.dtype_policy.name == obj.dtype_policy.name, (
        f"{name}: loaded with dtype policy {restored.dtype_policy.name}, "
        f"saved with {obj.dtype_policy.name}")
    assert sublayer_policies(restored) == sublayer_policies(obj), (
        f"{name}: sublayer dtype policies change through a .keras file")
    _same_outputs(expected, _call(restored, inputs, call_kwargs), f"{name} loaded from .keras")
    return restored


def _build(cls, init_kwargs, dtype=None):
    """`cls(**init_kwargs)`; `dtype` goes to the constructor, or to `init_kwargs(dtype)`
    when that is a function (a task model takes its policy from the encoder it builds)."""
    if callable(init_kwargs):
        return cls(**init_kwargs(dtype))
    kwargs = dict(init_kwargs)
    if dtype is not None:
        kwargs["dtype"] = dtype
    return cls(**kwargs)


def _shapes(outputs):
    return [tuple(a.shape) for a in outputs]


def _as_list(expected_output_shape):
    if isinstance(expected_output_shape, dict):
        return [tuple(expected_output_shape[k]) for k in sorted(expected_output_shape)]
    if expected_output_shape and isinstance(expected_output_shape[0], (tuple, list)):
        return [tuple(s) for s in expected_output_shape]
    return [tuple(expected_output_shape)]


def _training_outputs(obj, inputs, call_kwargs):
    kwargs = dict(call_kwargs or {})
    if "training" in inspect.signature(obj.call).parameters:
        kwargs["training"] = True
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    return keras.tree.flatten(obj(*args, **kwargs))


def run_layer_test(cls, init_kwargs, input_data, *, expected_output_shape,
                   expected_num_trainable_weights=None, expected_num_non_trainable_weights=0,
                   call_kwargs=None, from_config_kwargs=None, frozen=False,
                   no_gradient=(), run_precision_check=True):
    """The checks every layer (and model) passes, given its class and init arguments.

    1. `cls(**init_kwargs)` called on `input_data` gives outputs of
       `expected_output_shape` (a shape, a list of shapes, or {output name: shape} for
       dict outputs, by sorted name), with the expected numbers of weights.
    2. `from_config(get_config())` rebuilds it with the same config and output shapes.
    3. In training mode, the gradient of the outputs' sum reaches every trainable weight
       and is finite (a frozen object, `frozen=True`, has no trainable weight at all;
       weights whose path contains a string of `no_gradient` are left out: e.g. the
       pooler of an encoder whose task reads only the sequence output).
    4. Under one seed, two objects start from the same weights and give the same
       outputs; one object gives the same inference output twice.
    5. `run_precision_test` (unless `run_precision_check=False`).

    Args:
        cls: the layer or model class.
        init_kwargs: its init arguments, or a function of a dtype policy name (None
            for the default) returning them, for arguments that must be fresh objects
            built with that policy, such as an encoder.
        input_data: the call's input, or a tuple of positional call arguments.
        from_config_kwargs: extra `from_config` arguments, or a function of the object
            returning them (e.g. the embedding a `MaskedLMHead` is tied to).

    Returns:
        The float32 object.
    """
    name = cls.__name__
    keras.utils.set_random_seed(1)
    obj = _build(cls, init_kwargs)
    outputs = _call(obj, input_data, call_kwargs)
    assert _shapes(outputs) == _as_list(expected_output_shape), (
        f"{name}: output shapes {_shapes(outputs)}, expected {expected_output_shape}")
    if expected_num_trainable_weights is not None:
        assert len(obj.trainable_weights) == expected_num_trainable_weights, (
            f"{name}: {len(obj.trainable_weights)} trainable weights, expected "
            f"{expected_num_trainable_weights}")
    if expected_num_non_trainable_weights is not None:
        assert len(obj.non_trainable_weights) == expected_num_non_trainable_weights, (
            f"{name}: {len(obj.non_trainable_weights)} non-trainable weights, expected "
            f"{expected_num_non_trainable_weights}")

    config = obj.get_config()
    json.dumps(config)
    if callable(from_config_kwargs):
        from_config_kwargs = from_config_kwargs(obj)
    clone = cls.from_config(config, **(from_config_kwargs or {}))
    assert clone.get_config() == config, f"{name}: from_config(get_config()) changes the config"
    assert _shapes(_call(clone, input_data, call_kwargs)) == _shapes(outputs), (
        f"{name}: from_config changes the output shapes")

    with tf.GradientTape() as tape:
        loss = sum(tf.reduce_sum(tf.cast(y, "float32"))
                   for y in _training_outputs(obj, input_data, call_kwargs))
    if frozen:
        assert not obj.trainable_weights, f"{name}: frozen, yet it has trainable weights"
    else:
        assert obj.trainable_weights, f"{name}: no trainable weights"
        grads = tape.gradient(loss, [w.value for w in obj.trainable_weights])
        missing = [w.path for w, g in zip(obj.trainable_weights, grads) if g is None
                   and not any(part in w.path for part in no_gradient)]
        assert not missing, f"{name}: no gradient reaches {missing}"
        assert all(np.all(np.isfinite(np.asarray(tf.convert_to_tensor(g))))
                   for g in grads if g is not None), (
            f"{name}: a gradient is not finite")

    keras.utils.set_random_seed(7)
    first = _build(cls, init_kwargs)
    first_out = _call(first, input_data, call_kwargs)
    keras.utils.set_random_seed(7)
    second = _build(cls, init_kwargs)
    _same_outputs(first_out, _call(second, input_data, call_kwargs),
                  f"{name}: two objects built under one seed")
    _same_outputs(first_out, _call(first, input_data, call_kwargs),
                  f"{name}: the same inference call twice")

    if run_precision_check:
        run_precision_test(cls, init_kwargs, input_data, call_kwargs=call_kwargs,
                           reference=obj)
    return obj


def run_precision_test(cls, init_kwargs, input_data, *, call_kwargs=None, reference=None,
                       rtol=0.05):
    """Under `dtype="mixed_bfloat16"`: the config records the policy, every variable is
    float32, the object computes in bfloat16, and with the float32 object's weights its
    outputs stay within bfloat16 rounding of the float32 outputs (`rtol` of the largest
    magnitude of each output).

    Returns the mixed-precision object.
    """
    name = cls.__name__
    reference = _build(cls, init_kwargs) if reference is None else reference
    expected = _call(reference, input_data, call_kwargs)
    mixed = _build(cls, init_kwargs, dtype="mixed_bfloat16")
    _call(mixed, input_data, call_kwargs)  # builds it
    assert mixed.dtype_policy.name == "mixed_bfloat16", name
    assert mixed.compute_dtype == "bfloat16", f"{name}: computes in {mixed.compute_dtype}"
    assert all(v.dtype == "float32" for v in mixed.weights), (
        f"{name}: mixed_bfloat16 keeps its variables in float32")
    assert sublayer_policies(mixed).keys() == sublayer_policies(reference).keys()
    mixed.set_weights(reference.get_weights())
    got = _call(mixed, input_data, call_kwargs)
    for i, (a, b) in enumerate(zip(expected, got)):
        scale = max(float(np.max(np.abs(a))), 1e-3)
        np.testing.assert_allclose(b, a, atol=rtol * scale, rtol=0,
                                   err_msg=f"{name}: mixed_bfloat16 output {i}")
    return mixed


# --- the fine-tuning task contract ------------------------------------------------------

def run_task_contract(name, data_dir, tmp_path, *, tokenizer, encoder_config, settings,
                      full=True, max_examples=8):
    """Runs the registered task `name` on the tiny data in `data_dir` (its own layout)
    through every step `keras-bert finetune / evaluate / predict / export` takes.

    Always: read the train and first dev split (and the dev split unlabelled) ->
    `features` (with labels for training) -> `build_model` -> predict and `decode` (one
    prediction per dev example) -> `evaluate` (every one of `metric_names`) ->
    `serving` -> `config()` through JSON restores a fresh `get_task(name)` that decodes
    the same outputs alike -> `write_predictions`.

    With `full`, also: fit one step (before predicting) -> the model saved as `.keras`
    in a run directory as `keras-bert finetune` writes it, reloaded, is the same model
    (same class, config and weights) -> that run exported as a SavedModel (from the
    reloaded file) whose `serve_text` answers a batch of text.
    Returns the dev metrics.
    """
    import dataclasses

    from keras_bert.model.encoder import BertEncoder
    from keras_bert.tasks.base import feature_dataset
    from keras_bert.tasks.registry import get_task

    task = get_task(name)
    train = task.training_examples(
        task.read_examples(task.split_path(data_dir, "train")))[:max_examples]
    dev_path = task.split_path(data_dir, task.dev_splits[0])
    dev = task.read_examples(dev_path)
    unlabelled = task.read_examples(dev_path, labelled=False)
    assert train and dev and len(unlabelled) == len(dev), name
    features = task.features(train, tokenizer, settings)
    assert features.labels is not None and len(features) >= len(train), name
    dev_features = task.features(dev, tokenizer, settings)

    model = task.build_model(BertEncoder(encoder_config))
    # Eager: tracing the train and predict steps would cost more than one step of each.
    model.compile(optimizer="sgd", run_eagerly=True)
    if full:
        history = model.fit(feature_dataset(features, 4, training=True, seed=0), epochs=1,
                            steps_per_epoch=1, verbose=0)
        assert np.isfinite(history.history["loss"][-1]), name
    outputs = model.predict(feature_dataset(dev_features, 8, with_labels=False), verbose=0)
    predictions = task.decode(dev, dev_features, outputs, settings)
    assert len(predictions) == len(dev), name
    metrics = task.evaluate(dev, predictions)
    assert set(task.metric_names) <= set(metrics) and task.main_metric in metrics, (
        name, metrics)
    serving = task.serving(settings)
    assert serving is not None and serving.text_inputs, name

    # The saved config restores a fresh task that decodes the same outputs alike.
    config = json.loads(json.dumps(task.config()))
    fresh = get_task(config["task"])
    fresh.restore(config)
    fresh_dev = fresh.read_examples(dev_path)
    fresh_features = fresh.features(fresh_dev, tokenizer, settings)
    again = fresh.decode(fresh_dev, fresh_features, outputs, settings)
    if predictions and isinstance(predictions[0], np.ndarray):  # embeddings
        np.testing.assert_array_equal(np.stack(again), np.stack(predictions), err_msg=name)
    else:
        assert again == predictions, name
    fresh.write_predictions(unlabelled, predictions, os.path.join(tmp_path, "predictions.out"))
    if not full:
        return metrics

    from keras_bert.checkpoints import FINETUNE_CONFIG, FINETUNED_MODEL, open_artifact
    from keras_bert.export import export_saved_model
    from keras_bert.tasks.export_sources import load_export_source
    from keras_bert.tasks.finetuning import FinetuneOptions
    from keras_bert.tasks.finetuning.run_directory import load_run

    # A run directory as `keras-bert finetune` writes it: reload, then export.
    run = os.path.join(tmp_path, "run")
    os.makedirs(run)
    model.save(os.path.join(run, FINETUNED_MODEL))
    with open(os.path.join(run, "vocab.txt"), "w", encoding="utf-8") as f:
        f.writelines(f"{token}\n" for token in tokenizer.vocabulary)
    options = FinetuneOptions(max_seq_length=settings.max_seq_length,
                              doc_stride=settings.doc_stride,
                              max_query_length=settings.max_query_length,
                              max_answer_length=settings.max_answer_length,
                              n_best_size=settings.n_best_size)
    record = {"task": name, "task_config": config, "options": dataclasses.asdict(options),
              "learning_rate": 2e-5, "seed": 1, "checkpoint": None, "preset": "tiny",
              "lower_case": tokenizer.lower_case, "history": []}
    with open(os.path.join(run, FINETUNE_CONFIG), "w") as f:
        json.dump(record, f)
    # The opener says what the run is; the run's task comes back from the record.
    artifact = open_artifact(run)
    assert artifact.kind == "finetuning_run", name
    assert load_run(artifact).task.config() == config, name
    reloaded = keras.models.load_model(os.path.join(run, FINETUNED_MODEL), compile=False)
    assert type(reloaded) is type(model) and reloaded.get_config() == model.get_config()
    for ours, theirs in zip(model.get_weights(), reloaded.get_weights(), strict=True):
        np.testing.assert_array_equal(theirs, ours, err_msg=name)

    version, _ = export_saved_model(load_export_source(run), os.path.join(tmp_path, "out"),
                                    "model", warmup=False)
    saved = tf.saved_model.load(version)
    text = {input_name: tf.constant([["a b c", "d e"]] if rank == 2 else ["a b c d"])
            for input_name, rank in serving.text_ranks.items()}
    served = saved.signatures["serve_text"](**text)
    assert served and all(int(v.shape[0]) == 1 for v in served.values()), (name, served)
    return metrics
