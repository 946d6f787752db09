"""Post-training quantization (`quantize`) and LoRA (`enable_lora`) of the encoder and
the task models.

Quantized: the int8 encoder must be, output for output, the float encoder whose kernels
and embeddings are replaced by their int8 values divided by their scales, each
recomputed here in numpy from the float weights (abs-max per output channel, Keras's
scheme), also when it was called eagerly and by `predict` before quantizing (the
traces made then hold the float weights); with Keras's default int8 (activations
quantized too), int4 and float8 the outputs must stay close to the float model's
(cosine, argmax labels of a classifier), and the kernels must really be quantized.
Modes the layers do not compute (GPTQ, AWQ) raise before any layer changes. The same
runs under JAX in a subprocess (with LoRA training).

LoRA: on a MiniLM-sized model the trainable weights are the query/value factors and
the head only (a small fraction), training moves the outputs and nothing frozen, the
encoder's fast path computes with the LoRA kernels, and a `.keras` file gives the same
outputs and the LoRA model back.
"""

import json
import os
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest
from conftest import REPO, minilm_path

from keras_bert import (
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertFeatureExtractor,
    BertPretrainer,
    load_encoder,
)
from keras_bert.core.errors import ArgumentError
from keras_bert.model.encoder import nothing_to_quantize_unsaid
from keras_bert.model.layers.attention import quantized

TINY = dict(vocab_size=1000, hidden_size=64, num_heads=4, intermediate_size=256,
            num_layers=2, max_position_embeddings=64)


def _inputs(batch, seq=24, vocab=1000, seed=0):
    rng = np.random.default_rng(seed)
    mask = (np.arange(seq)[None] < rng.integers(seq // 2, seq + 1, (batch, 1))).astype("int32")
    return {"input_word_ids": (rng.integers(5, vocab, (batch, seq)) * mask).astype("int32"),
            "input_mask": mask,
            "input_type_ids": (np.arange(seq)[None] >= seq // 2).astype("int32") * mask}


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def _cosine(a, b):
    a, b = np.ravel(a).astype("float64"), np.ravel(b).astype("float64")
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def _quantize(model, *args, **kwargs):
    with warnings.catch_warnings():  # LayerNorm, dropout: "no `quantize` method"
        warnings.simplefilter("ignore")
        model.quantize(*args, **kwargs)


def _projections(encoder):
    """Every Dense/EinsumDense of the encoder with the kernel axes it sums over."""
    layers = [(encoder.pooler.dense, (0,))]
    for block in encoder.transformer_layers:
        attention = block.attention
        layers += [(attention.query, (0,)), (attention.key, (0,)), (attention.value, (0,)),
                   (attention.output_dense, (0, 1)), (block.intermediate, (0,)),
                   (block.output_dense, (0,))]
    return layers


def _int8(weights, axes):
    """Keras's int8 abs-max scheme, written out: values and the float they stand for."""
    scale = 127.0 / (np.max(np.abs(weights), axis=axes, keepdims=True) + keras.config.epsilon())
    values = np.clip(np.round(weights * scale), -127, 127)
    return values.astype("int8"), (values / scale).astype("float32")


def test_int8_encoder_is_the_float_encoder_with_dequantized_weights():
    encoder = BertEncoder(BertConfig.from_preset("tiny", **TINY))
    x = _inputs(16)
    eager_float = _numpy(encoder(x)["sequence_output"])          # traces the eager call
    predict_float = encoder.predict(x, verbose=0)["sequence_output"]  # and predict
    np.testing.assert_allclose(predict_float, eager_float, atol=1e-5)

    # The twin: a float encoder holding the int8 weights' float values.
    twin = BertEncoder.from_config(encoder.get_config())
    twin.set_weights(encoder.get_weights())
    expected_ints = []
    for (layer, axes), (twin_layer, _) in zip(_projections(encoder), _projections(twin)):
        ints, floats = _int8(_numpy(layer.kernel), axes)
        twin_layer.kernel.assign(floats)
        expected_ints.append(ints)
    for name in ("word_embeddings", "token_type_embeddings"):
        ints, floats = _int8(_numpy(getattr(encoder.embeddings, name).embeddings), (-1,))
        getattr(twin.embeddings, name).embeddings.assign(floats)
        expected_ints.append(ints)

    # Weights only: Keras's default int8 also quantizes each layer's inputs.
    _quantize(encoder, config=keras.quantizers.Int8QuantizationConfig(
        activation_quantizer=None))
    stored = [_numpy(layer.kernel) for layer, _ in _projections(encoder)]
    stored += [_numpy(getattr(encoder.embeddings, name).embeddings)
               for name in ("word_embeddings", "token_type_embeddings")]
    assert all(w.dtype == np.int8 for w in stored)
    for got, want in zip(stored, expected_ints):
        np.testing.assert_array_equal(got, want)

    want = twin(x)
    for output in ("sequence_output", "pooled_output"):
        eager = _numpy(encoder(x)[output])
        predicted = encoder.predict(x, verbose=0)[output]
        np.testing.assert_allclose(eager, _numpy(want[output]), atol=2e-5)
        np.testing.assert_allclose(predicted, _numpy(want[output]), atol=2e-5)
    # ...which is not the float encoder's output (the traces were dropped).
    assert np.abs(_numpy(encoder(x)["sequence_output"]) - eager_float).max() > 1e-3


def test_default_int8_classifier_agrees_with_the_float_one():
    keras.utils.set_random_seed(3)
    encoder = BertEncoder(BertConfig.from_preset("tiny", **TINY))
    model = BertClassifier(encoder, num_classes=3)
    # A head that separates the classes as a fine-tuned one does (random init is tiny).
    head = model.get_layer("logits")
    head.kernel.assign(keras.random.normal(head.kernel.shape, seed=3))
    x = _inputs(200, seed=1)
    labels_float = model.predict(x, verbose=0).argmax(-1)
    sequence_float = _numpy(encoder(x)["sequence_output"])

    _quantize(model, "int8")
    assert all(str(layer.kernel.dtype) == "int8" for layer, _ in _projections(encoder))
    assert str(head.kernel.dtype) == "int8"
    labels_int8 = model.predict(x, verbose=0).argmax(-1)
    agreement = float(np.mean(labels_int8 == labels_float))
    # Random weights put some inputs near a class boundary (0.985 to 1.0 over seeds); the
    # bug this guards against agreed on 59%. The fine-tuned MiniLM's 99.5% on SST-2 is
    # benchmarks/recipe.py's.
    assert agreement >= 0.95, agreement
    assert len(set(labels_float.tolist())) == 3  # the labels are not all one class
    cosine = _cosine(_numpy(encoder(x)["sequence_output"]), sequence_float)
    assert cosine > 0.99, cosine


def test_quantizing_the_encoder_alone_retraces_its_task_models():
    encoder = BertEncoder(BertConfig.from_preset("tiny", **TINY))
    model = BertClassifier(encoder, num_classes=3)
    x = _inputs(8)
    before = model.predict(x, verbose=0)
    _quantize(encoder, "int8")
    after = model.predict(x, verbose=0)
    assert np.abs(after - before).max() > 1e-4
    np.testing.assert_allclose(after, _numpy(model(x)), atol=1e-5)


def test_int8_masked_lm_head_reads_the_quantized_tied_table():
    model = BertPretrainer(BertEncoder(BertConfig.from_preset("tiny", **TINY)))
    x = {**_inputs(8), "masked_lm_positions": np.tile(np.arange(1, 6, dtype="int32"), (8, 1))}
    logits_float = _numpy(model(x)["masked_lm"])
    _quantize(model, "int8")
    assert quantized(model.masked_lm.embedding, model.masked_lm.transform)
    logits = _numpy(model(x)["masked_lm"])
    assert _cosine(logits, logits_float) > 0.99
    agreement = np.mean(logits.argmax(-1) == logits_float.argmax(-1))
    assert agreement > 0.9, agreement


@pytest.mark.parametrize("mode, min_cosine", [("int4", 0.98), ("float8", 0.99)])
def test_int4_and_float8_stay_close_to_float(mode, min_cosine):
    encoder = BertEncoder(BertConfig.from_preset("tiny", **TINY))
    x = _inputs(16)
    float_out = _numpy(encoder(x)["sequence_output"])
    _quantize(encoder, mode)
    query = encoder.transformer_layers[0].attention.query
    assert query.quantization_mode == mode
    if mode == "int4":  # two int4 values packed in a byte: [H, H / 2] int8
        assert str(query._kernel.dtype) == "int8" and query._kernel.shape == (64, 32)
    else:  # Keras's float8 rounds the float kernel in its call, with scales it keeps
        assert str(query.kernel_scale.dtype) == "float32"
    cosine = _cosine(_numpy(encoder(x)["sequence_output"]), float_out)
    assert min_cosine < cosine < 1 - 1e-7, cosine


@pytest.mark.parametrize("mode", ["gptq", "awq"])
def test_calibrated_modes_are_refused_before_any_change(mode):
    model = BertClassifier(BertEncoder(BertConfig.from_preset("tiny", **TINY)))
    config = {"gptq": keras.quantizers.GPTQConfig,
              "awq": keras.quantizers.AWQConfig}[mode](["some text"], lambda text: [[2, 3]])
    for target in (model, model.encoder):
        with pytest.raises(ArgumentError, match=f"mode='{mode}'.*'int8', 'int4', 'float8'"):
            target.quantize(mode, config=config)
        with pytest.raises(ArgumentError, match=f"mode='{mode}'.*'int8', 'int4', 'float8'"):
            target.quantize(mode)  # before Keras's own check (which asks for a config)
    assert not any(quantized(layer) for layer in model._flatten_layers()
                   if hasattr(layer, "quantization_mode"))


def test_an_unknown_mode_lists_only_the_modes_keras_bert_offers():
    model = BertClassifier(BertEncoder(BertConfig.from_preset("tiny", **TINY)))
    for target in (model, model.encoder):
        with pytest.raises(ArgumentError) as caught:
            target.quantize("int2")
        message = str(caught.value)
        assert "mode='int2'" in message and "'int8', 'int4', 'float8'" in message
        assert "gptq" not in message and "awq" not in message
        assert caught.value.field == "mode"


def test_quantize_warns_only_of_layers_with_weights_it_leaves_float():
    """Keras warns of every layer without a `quantize` method; inputs, LayerNorm and
    dropout have nothing to quantize, so a correct run prints nothing. A layer kind
    that holds a kernel and cannot be quantized still warns."""

    class OwnDense(keras.layers.Layer):
        def build(self, shape):
            self.kernel = self.add_weight(shape=(shape[-1], 2), name="kernel")

        def call(self, x):
            return x @ self.kernel

    for make in (lambda: BertClassifier(BertEncoder(BertConfig.from_preset("tiny", **TINY))),
                 lambda: BertEncoder(BertConfig.from_preset("tiny", **TINY))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            make().quantize("int8")
        assert [str(w.message) for w in caught if issubclass(w.category, UserWarning)] == []
    encoder = BertEncoder(BertConfig.from_preset("tiny", **TINY))
    inputs = {k: keras.Input((None,), dtype="int32", name=k) for k in _inputs(1)}
    model = BertClassifier(encoder)
    extra = keras.Model(inputs, OwnDense()(model(inputs)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with nothing_to_quantize_unsaid(extra):
            extra.quantize("int8")
    messages = [str(w.message) for w in caught]
    assert any("OwnDense" in m for m in messages), messages
    assert not any("LayerNormalization" in m or "InputLayer" in m for m in messages)


def _lora_classifier():
    config = BertConfig.from_preset("tiny", vocab_size=30522, hidden_size=384, num_heads=12,
                                    intermediate_size=1536, num_layers=2,
                                    max_position_embeddings=128)
    return BertClassifier(BertEncoder(config), num_classes=2)


def test_lora_trains_only_the_factors_and_the_head_and_survives_a_keras_file(tmp_path):
    model = _lora_classifier()
    model.enable_lora(4)
    encoder = model.encoder
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    fraction = trainable / model.count_params()
    assert fraction <= 0.02, fraction
    names = {w.path for w in model.trainable_weights}
    assert names == {f"{layer.path}/{name}" for block in encoder.transformer_layers
                     for layer in (block.attention.query, block.attention.value)
                     for name in ("lora_kernel_a", "lora_kernel_b")} | {
        "logits/kernel", "logits/bias"}

    x, y = _inputs(32, seq=16, vocab=30522), np.arange(32) % 2
    before = model.predict(x, verbose=0)
    frozen = {w.path: _numpy(w).copy() for w in model.non_trainable_weights}
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    after = model.predict(x, verbose=0)
    assert np.abs(after - before).max() > 1e-3
    for w in model.non_trainable_weights:
        np.testing.assert_array_equal(_numpy(w), frozen[w.path], err_msg=w.path)

    # The eager call (TensorFlow's fast path reads `kernel`) uses the LoRA kernels: it
    # is the output of a plain encoder holding the merged kernels.
    plain = BertEncoder(encoder.config)
    values = {w.path: _numpy(w) for w in encoder.weights}
    for w in plain.weights:
        w.assign(values[w.path])
    for block, plain_block in zip(encoder.transformer_layers, plain.transformer_layers):
        for name in ("query", "value"):
            layer = getattr(block.attention, name)
            merged = (_numpy(layer._kernel) + layer.lora_alpha / layer.lora_rank
                      * _numpy(layer.lora_kernel_a) @ _numpy(layer.lora_kernel_b))
            assert np.abs(merged - _numpy(layer._kernel)).max() > 0  # the factors moved
            getattr(plain_block.attention, name).kernel.assign(merged)
    np.testing.assert_allclose(_numpy(encoder(x)["sequence_output"]),
                               _numpy(plain(x)["sequence_output"]), atol=1e-4)

    path = str(tmp_path / "lora.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), after, atol=1e-5)
    assert loaded.encoder.lora_rank == 4
    assert len(loaded.trainable_weights) == len(model.trainable_weights)


def test_lora_arguments_and_frozen_models_are_refused():
    encoder = BertEncoder(BertConfig.from_preset("tiny", **TINY))
    with pytest.raises(ArgumentError, match="positive integer"):
        encoder.enable_lora(0)
    with pytest.raises(ArgumentError, match="BertFeatureExtractor"):
        BertFeatureExtractor(encoder, layers=(-1,)).enable_lora(4)
    assert encoder.lora_rank is None and encoder.trainable_weights
    encoder.enable_lora(2)
    with pytest.raises(ArgumentError, match="already enabled"):
        encoder.enable_lora(2)


def test_lora_after_an_eager_call_retraces_it():
    encoder = BertEncoder(BertConfig.from_preset("tiny", **TINY))
    x = _inputs(4)
    before = _numpy(encoder(x)["sequence_output"])
    encoder.enable_lora(2)
    for block in encoder.transformer_layers:
        block.attention.value.lora_kernel_b.assign(
            keras.random.normal(block.attention.value.lora_kernel_b.shape, seed=1))
    assert np.abs(_numpy(encoder(x)["sequence_output"]) - before).max() > 1e-3


@pytest.mark.slow  # 24 s; test_default_int8_classifier_agrees_with_the_float_one checks int8 by default
def test_minilm_int8_stays_close_to_float():
    encoder = load_encoder(minilm_path())
    x = _inputs(16, seq=32, vocab=encoder.config.vocab_size, seed=2)
    float_out = _numpy(encoder(x)["sequence_output"])
    _quantize(encoder, "int8")
    cosine = _cosine(_numpy(encoder(x)["sequence_output"]), float_out)
    assert cosine > 0.99, cosine


# Under JAX: int8 and float outputs, and one LoRA training step. argv: nothing.
JAX_SCRIPT = r'''
import json
import warnings
import keras
import numpy as np
from keras_bert import BertClassifier, BertConfig, BertEncoder

config = BertConfig.from_preset("tiny", vocab_size=1000, hidden_size=64, num_heads=4,
                                intermediate_size=256, num_layers=2)
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = {"input_word_ids": rng.integers(5, 1000, (200, 24)).astype("int32"),
     "input_mask": np.ones((200, 24), "int32"), "input_type_ids": np.zeros((200, 24), "int32")}
def cosine(a, b):
    a, b = a.ravel().astype("float64"), b.ravel().astype("float64")
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
model = BertClassifier(BertEncoder(config), num_classes=3)
head = model.get_layer("logits")
head.kernel.assign(keras.random.normal(head.kernel.shape, seed=3))
seq_float = keras.ops.convert_to_numpy(model.encoder(x)["sequence_output"])
labels_float = model.predict(x, verbose=0).argmax(-1)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    model.quantize("int8")
seq = keras.ops.convert_to_numpy(model.encoder(x)["sequence_output"])
results = {"cosine": cosine(seq, seq_float),
           "agreement": float(np.mean(model.predict(x, verbose=0).argmax(-1) == labels_float)),
           "dtype": str(model.encoder.transformer_layers[0].attention.query.kernel.dtype)}

lora = BertClassifier(BertEncoder(config), num_classes=2)
lora.enable_lora(4)
frozen = [keras.ops.convert_to_numpy(w).copy() for w in lora.non_trainable_weights]
before = lora.predict(x, verbose=0)
lora.compile(optimizer=keras.optimizers.Adam(1e-2))
lora.fit(x, np.arange(200) % 2, batch_size=50, epochs=1, verbose=0)
results["lora_moved"] = float(np.abs(lora.predict(x, verbose=0) - before).max())
results["frozen_kept"] = all(np.array_equal(a, keras.ops.convert_to_numpy(w))
                             for a, w in zip(frozen, lora.non_trainable_weights))
results["backend"] = keras.backend.backend()
print(json.dumps(results))
'''


@pytest.mark.slow  # 29 s; test_keras_face's jax case trains, saves and reloads under JAX by default
def test_quantize_and_lora_under_jax():
    pytest.importorskip("jax")
    env = {**os.environ, "KERAS_BACKEND": "jax", "CUDA_VISIBLE_DEVICES": "",
           "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", JAX_SCRIPT], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-5000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results["backend"] == "jax", results
    assert results["dtype"] == "int8", results
    assert results["cosine"] > 0.99 and results["agreement"] >= 0.95, results
    assert results["lora_moved"] > 1e-3 and results["frozen_kept"], results
