"""`keras_bert.model.tf_fast` against its `keras.ops` twins: every public function of the
module has a parity case here (a test fails when one is added without its case).

The twin of a fast path is the code the layer, loss or optimizer runs when
`tf_fast.ENABLED` is False, its form on JAX and PyTorch; `keras_ops_path()` turns that
switch off, so the same layer, with the same weights, computes both. Deterministic
values are compared in float32 (to ~1e-5) and under mixed_bfloat16 (to bfloat16's
precision), with and without padding; random ones (dropout) by their values and rate.
"""

import contextlib
import inspect

import keras
import numpy as np
import pytest

from keras_bert.model import tf_fast

if not tf_fast.ENABLED:
    pytest.skip("tf_fast runs on the TensorFlow backend only", allow_module_level=True)

import tensorflow as tf  # noqa: E402

from keras_bert.model.config import BertConfig  # noqa: E402
from keras_bert.model.encoder import INPUT_NAMES, BertEncoder  # noqa: E402
from keras_bert.model.layers import attention, transformer  # noqa: E402
from keras_bert.model.layers.attention import BertSelfAttention, attention_bias  # noqa: E402
from keras_bert.model.layers.dropout import BertDropout  # noqa: E402
from keras_bert.model.layers.heads import MaskedLMHead  # noqa: E402
from keras_bert.model.layers.transformer import TransformerBlock  # noqa: E402
from keras_bert.model.losses import sum_over_replicas  # noqa: E402
from keras_bert.training.optimization import AdamW  # noqa: E402

BATCH, SEQ, HIDDEN, HEADS, INTERMEDIATE, VOCAB = 2, 5, 8, 2, 16, 11
# Tolerances (rtol, atol) by compute dtype.
TOLERANCE = {"float32": (1e-5, 1e-5), "bfloat16": (2e-2, 2e-2)}
POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}

COVERED: set[str] = set()


def parity(*names):
    """Marks a test as the parity case of the named `tf_fast` functions."""
    COVERED.update(names)
    return lambda test: test


@contextlib.contextmanager
def keras_ops_path():
    """Runs the layers' `keras.ops` form (the one JAX and PyTorch run)."""
    tf_fast.ENABLED = False
    try:
        yield
    finally:
        tf_fast.ENABLED = True


def numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(x, "float32")))


def assert_close(fast, twin, dtype="float32"):
    rtol, atol = TOLERANCE[dtype]
    for a, b in zip(keras.tree.flatten(fast), keras.tree.flatten(twin)):
        np.testing.assert_allclose(numpy(a), numpy(b), rtol=rtol, atol=atol)


def both(call):
    """`call()` on the fast path and on its `keras.ops` twin."""
    fast = call()
    with keras_ops_path():
        twin = call()
    return fast, twin


def random(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def padded_bias(padded):
    mask = np.ones((BATCH, SEQ), "int32")
    if padded:
        mask[0, 3:] = 0
        mask[1, 1:] = 0
    return attention_bias(mask)


def randomize(layer, seed=1):
    """Nonzero weights everywhere (biases and LayerNorm too) so no term hides."""
    rng = np.random.default_rng(seed)
    for weight in layer.weights:
        if "int" not in str(weight.dtype):
            weight.assign(rng.normal(scale=0.3, size=weight.shape).astype("float32"))


def test_every_public_function_has_a_parity_case():
    public = {name for name, value in inspect.getmembers(tf_fast, inspect.isfunction)
              if not name.startswith("_") and value.__module__ == tf_fast.__name__}
    assert public == COVERED, (
        f"tf_fast functions without a parity case: {sorted(public - COVERED)}; "
        f"cases naming no tf_fast function: {sorted(COVERED - public)}")


@parity("dense_rows")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("scale", [None, 0.5])
def test_dense_rows(dtype, scale):
    rows = tf.cast(random(6, HIDDEN), dtype)
    kernel, bias = random(HIDDEN, HEADS, 3, seed=1), random(HEADS, 3, seed=2)
    fast, twin = both(lambda: attention.dense_rows(rows, kernel, bias, dtype, scale))
    assert fast.shape == twin.shape == (6, HEADS * 3)
    assert fast.dtype == twin.dtype
    assert_close(fast, twin, dtype)


@parity("gelu", "gelu_tanh")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("name", ["gelu", "gelu_tanh"])
def test_gelu(name, graph, dtype):
    x = tf.cast(np.linspace(-6, 6, 61, dtype="float32"), dtype)
    activation = getattr(transformer, name)

    def call():  # traced anew on each path
        return (tf.function(activation, autograph=False) if graph else activation)(x)

    fast, twin = both(call)
    assert fast.dtype == twin.dtype
    assert_close(fast, twin, dtype)


@parity("dropout_threshold", "keep_mask")
@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_keep_mask_matches_keras_dropout(rate):
    # Keras drops an element with probability `rate` and scales the kept ones by
    # 1 / (1 - rate); the 16-bit mask does the same within 2**-17 of the rate.
    assert abs(tf_fast.dropout_threshold(rate) / 65536 - rate) <= 2.0 ** -17
    n = 20_000
    mask = tf_fast.keep_mask((n,), rate, tf.constant([3, 4]), "float32").numpy()
    twin = keras.layers.Dropout(rate, seed=3)(np.ones(n, "float32"), training=True)
    twin = numpy(twin)
    for values in (mask, twin):
        np.testing.assert_allclose(sorted(set(values.tolist())), [0.0, 1 / (1 - rate)],
                                   rtol=1e-6)
    dropped, twin_dropped = np.mean(mask == 0), np.mean(twin == 0)
    spread = 4 * (rate * (1 - rate) / n) ** 0.5
    assert abs(dropped - rate) < spread and abs(twin_dropped - rate) < spread


@parity("bert_dropout")
@pytest.mark.parametrize("rate", [0.3, 1.0])
def test_bert_dropout(rate):
    x = np.abs(random(64, 64)) + 1.0
    layer = BertDropout(rate, seed=5)
    fast, twin = both(lambda: layer(x, training=True))
    if rate >= 1:
        assert not np.any(numpy(fast)) and not np.any(numpy(twin))
        return
    for y in (numpy(fast), numpy(twin)):
        kept = y != 0
        np.testing.assert_allclose(y[kept], x[kept] / (1 - rate), rtol=1e-6)
        assert abs(1 - kept.mean() - rate) < 0.03
    # Not training: both are the identity.
    assert_close(*both(lambda: layer(x, training=False)))
    np.testing.assert_array_equal(numpy(layer(x, training=False)), x)


@parity("self_attention")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded"])
@pytest.mark.parametrize("return_probs", [False, True])
def test_self_attention(dtype, padded, return_probs):
    keras.mixed_precision.set_global_policy(POLICIES[dtype])
    layer = BertSelfAttention(num_heads=HEADS, head_size=HIDDEN // HEADS)
    x, bias = random(BATCH, SEQ, HIDDEN), padded_bias(padded)
    layer.build(x.shape)
    randomize(layer)
    fast, twin = both(lambda: layer(x, bias, training=False, return_probs=return_probs))
    assert_close(fast, twin, dtype)
    if return_probs:
        probs = numpy(fast[1])
        if padded:  # padded keys get no attention on either path
            assert np.all(probs[1, :, :, 1:] < 1e-3)
        np.testing.assert_allclose(probs.sum(-1), 1.0, atol=TOLERANCE[dtype][1])


@parity("feed_forward")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_tanh", "relu"])
def test_feed_forward(hidden_act, dtype):
    keras.mixed_precision.set_global_policy(POLICIES[dtype])
    block = TransformerBlock(num_heads=HEADS, intermediate_size=INTERMEDIATE,
                             hidden_act=hidden_act)
    x = random(BATCH, SEQ, HIDDEN)
    block.build(x.shape)
    randomize(block)
    x = tf.cast(x, block.compute_dtype)
    assert_close(*both(lambda: block._feed_forward(x, False)), dtype)
    for padded in (False, True):  # the whole block: attention + feed-forward
        bias = padded_bias(padded)
        assert_close(*both(lambda: block(x, bias, training=False)), dtype)  # noqa: B023


@parity("masked_lm_logits")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_masked_lm_logits(dtype):
    keras.mixed_precision.set_global_policy(POLICIES[dtype])
    embedding = keras.layers.Embedding(VOCAB, HIDDEN)
    embedding.build()
    head = MaskedLMHead(embedding)
    head.build()
    randomize(embedding, seed=2)
    randomize(head, seed=3)
    x = random(BATCH, SEQ, HIDDEN)
    positions = np.array([[0, 2, 4], [1, 1, 0]], "int32")
    fast, twin = both(lambda: head(x, positions))
    assert fast.dtype == twin.dtype == "float32"
    assert fast.shape == twin.shape == (BATCH, 3, VOCAB)
    rtol, atol = TOLERANCE[dtype]
    np.testing.assert_allclose(numpy(fast), numpy(twin), rtol=rtol, atol=atol * 10)


def tiny_encoder(dtype="float32"):
    keras.mixed_precision.set_global_policy(POLICIES[dtype])
    config = BertConfig.from_preset("tiny", vocab_size=VOCAB, max_position_embeddings=16,
                                    hidden_size=HIDDEN, num_heads=HEADS,
                                    intermediate_size=INTERMEDIATE)
    encoder = BertEncoder(config)
    rng = np.random.default_rng(4)
    inputs = {"input_word_ids": rng.integers(0, VOCAB, (BATCH, SEQ)).astype("int32"),
              "input_mask": np.ones((BATCH, SEQ), "int32"),
              "input_type_ids": rng.integers(0, 2, (BATCH, SEQ)).astype("int32")}
    inputs["input_mask"][1, 2:] = 0
    encoder(inputs)
    randomize(encoder, seed=5)
    return encoder, inputs


@parity("eager_inference")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_eager_inference(dtype):
    encoder, inputs = tiny_encoder(dtype)
    fast, twin = both(lambda: encoder(inputs))
    assert encoder in tf_fast._COMPILED_CALLS  # the fast call did run
    assert set(fast) == set(twin)
    assert_close(fast, twin, dtype)
    # Where it does not apply it answers None and the encoder takes Keras's call.
    assert tf_fast.eager_inference(encoder, list(inputs.values()), INPUT_NAMES, None) is None
    with tf.init_scope():
        assert tf_fast.eager_inference(encoder, {"input_word_ids": inputs["input_word_ids"]},
                                       INPUT_NAMES, None) is None


@parity("forget_compiled_call")
def test_forget_compiled_call_after_enable_lora():
    # The compiled call was traced with the projections' kernels as they were; LoRA
    # makes a kernel the base kernel plus the low-rank product, which a stale trace
    # would leave out.
    encoder, inputs = tiny_encoder()
    encoder(inputs)
    assert encoder in tf_fast._COMPILED_CALLS
    encoder.enable_lora(2)  # calls forget_compiled_call
    assert encoder not in tf_fast._COMPILED_CALLS
    for block in encoder.transformer_layers:
        for projection in (block.attention.query, block.attention.value):
            randomize(projection, seed=6)
    fast, twin = both(lambda: encoder(inputs))
    assert encoder in tf_fast._COMPILED_CALLS
    assert_close(fast, twin)
    tf_fast.forget_compiled_call(encoder)
    tf_fast.forget_compiled_call(encoder)  # twice, or never compiled: nothing to drop
    assert encoder not in tf_fast._COMPILED_CALLS


@parity("sum_over_replicas")
def test_sum_over_replicas():
    value = tf.constant(random(3))
    assert_close(*both(lambda: sum_over_replicas(value)))
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    fast, twin = both(lambda: strategy.run(sum_over_replicas, (value,)))
    assert_close(fast, twin)
    assert_close(fast, value)


@parity("dense_gradient")
def test_dense_gradient():
    # An embedding lookup's gradient: one slice per token, repeated rows summed.
    table = tf.Variable(random(VOCAB, HIDDEN))
    ids = tf.constant([1, 4, 1, 1, 7])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(table, ids) * random(5, HIDDEN, seed=1))
    gradient = tape.gradient(loss, table)
    assert isinstance(gradient, tf.IndexedSlices)
    twin = np.zeros((VOCAB, HIDDEN), "float32")
    np.add.at(twin, gradient.indices.numpy(), gradient.values.numpy())
    np.testing.assert_allclose(tf_fast.dense_gradient(gradient).numpy(), twin, rtol=1e-6,
                               atol=1e-6)
    dense = tf.constant(twin)
    assert tf_fast.dense_gradient(dense) is dense


def adam_steps(global_clipnorm=None, amsgrad=False):
    """Variables after AdamW updates of random gradients, some with a global norm far
    over 1 and some far under it (Adam's step does not change when every gradient is
    scaled alike: only clipping some steps and not others shows)."""
    variables = [keras.Variable(random(4, 3, seed=1)), keras.Variable(random(3, seed=2))]
    optimizer = AdamW(learning_rate=0.05, weight_decay=0.01, global_clipnorm=global_clipnorm,
                      amsgrad=amsgrad)
    for step, scale in enumerate([0.05, 5.0, 0.05, 5.0]):
        grads = [tf.constant(scale * random(*v.shape, seed=10 * step + i))
                 for i, v in enumerate(variables)]
        optimizer.apply(grads, variables)
    return [v.numpy() for v in variables]


@parity("fused_adam_update")
@pytest.mark.parametrize("amsgrad", [False, True])
def test_fused_adam_update(amsgrad):
    fast, twin = both(lambda: adam_steps(amsgrad=amsgrad))
    assert_close(fast, twin)
    variable = keras.Variable(np.zeros(2, "float32"))
    optimizer = keras.optimizers.Adam(amsgrad=True)
    optimizer.build([variable])  # amsgrad: not the fused kernel's arithmetic
    assert not tf_fast.fused_adam_update(optimizer, tf.ones(2), variable, 0.1)
    np.testing.assert_array_equal(variable.numpy(), 0.0)


@parity("clip_summed_and_apply")
def test_clip_summed_and_apply():
    # One replica: the clipped sum is Keras's own global_clipnorm.
    fast, twin = both(lambda: adam_steps(global_clipnorm=1.0))
    assert_close(fast, twin)
    unclipped = adam_steps()
    assert not np.allclose(fast[0], unclipped[0])  # the clipping did something
