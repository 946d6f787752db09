import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import random_batch

from keras_bert import BertConfig, BertEncoder
from keras_bert.model.layers import (
    BertEmbeddings,
    BertPooler,
    BertSelfAttention,
    MaskedLMHead,
    TransformerBlock,
)


def test_output_structure(tiny_config):
    encoder = BertEncoder(tiny_config)
    out = encoder(random_batch())
    assert set(out) == {"sequence_output", "pooled_output", "encoder_outputs"}
    assert tuple(out["sequence_output"].shape) == (3, 12, 32)
    assert tuple(out["pooled_output"].shape) == (3, 32)
    assert len(out["encoder_outputs"]) == tiny_config.num_layers
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])


def test_appending_padding_keeps_real_positions(tiny_config):
    encoder = BertEncoder(tiny_config)
    short = random_batch(seq=10, lengths=[10, 7, 4])
    padded = {k: np.pad(v, ((0, 0), (0, 14))) for k, v in short.items()}
    a, b = encoder(short), encoder(padded)
    mask = short["input_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(b["sequence_output"])[:, :10][mask],
                               np.asarray(a["sequence_output"])[mask], atol=1e-5)
    np.testing.assert_allclose(b["pooled_output"], a["pooled_output"], atol=1e-5)


def test_attention_mask_really_masks(tiny_config):
    encoder = BertEncoder(tiny_config, output_attentions=True)
    batch = random_batch(lengths=[12, 6, 3])
    out = encoder(batch)
    mask = batch["input_mask"].astype(bool)
    for probs in out["attention_probs"]:
        probs = np.asarray(probs)
        assert probs.shape == (3, tiny_config.num_heads, 12, 12)
        np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
        assert np.all(probs.transpose(0, 3, 1, 2)[~mask] == 0.0)
    # Garbage in padded slots must not leak into real positions.
    noisy = dict(batch, input_word_ids=np.where(mask, batch["input_word_ids"], 33),
                 input_type_ids=np.where(mask, batch["input_type_ids"], 1))
    np.testing.assert_allclose(np.asarray(encoder(noisy)["sequence_output"])[mask],
                               np.asarray(out["sequence_output"])[mask], atol=1e-6)
    # And without the mask they would have leaked: the test can fail.
    unmasked = dict(noisy, input_mask=np.ones_like(batch["input_mask"]))
    assert not np.allclose(np.asarray(encoder(unmasked)["sequence_output"])[mask],
                           np.asarray(out["sequence_output"])[mask], atol=1e-3)


def test_dropout_only_in_training(tiny_config):
    encoder = BertEncoder(tiny_config)
    batch = random_batch()
    a = encoder(batch, training=False)["sequence_output"]
    b = encoder(batch, training=False)["sequence_output"]
    c = encoder(batch, training=True)["sequence_output"]
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_too_long_input_is_rejected(tiny_config):
    encoder = BertEncoder(tiny_config.replace(max_position_embeddings=8))
    with pytest.raises(ValueError, match="max_position_embeddings=8"):
        encoder(random_batch(seq=12))


def test_jit_compile_matches_eager(tiny_config):
    encoder = BertEncoder(tiny_config)
    batch = random_batch()
    eager = encoder(batch)["sequence_output"]
    xla = tf.function(lambda x: encoder(x)["sequence_output"], jit_compile=True)(batch)
    np.testing.assert_allclose(xla, eager, atol=1e-5)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision(tiny_config, policy):
    reference = BertEncoder(tiny_config, output_attentions=True)
    encoder = BertEncoder(tiny_config, output_attentions=True, dtype=policy)
    encoder.set_weights(reference.get_weights())
    batch = random_batch(lengths=[12, 6, 3])
    out, ref = encoder(batch), reference(batch)
    half = policy.split("_")[1]
    assert out["sequence_output"].dtype == half
    assert all(v.dtype == "float32" for v in encoder.weights)
    mask = batch["input_mask"].astype(bool)
    got = np.asarray(tf.cast(out["sequence_output"], tf.float32))[mask]
    np.testing.assert_allclose(got, np.asarray(ref["sequence_output"])[mask], atol=0.1)
    # The float32 softmax gives exact zeros on padding even in half precision.
    probs = np.asarray(tf.cast(out["attention_probs"][0], tf.float32))
    assert np.all(probs.transpose(0, 3, 1, 2)[~mask] == 0.0)


def test_global_mixed_policy(tiny_config):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    encoder = BertEncoder(tiny_config)
    assert encoder(random_batch())["pooled_output"].dtype == "bfloat16"


def test_keras_file_round_trip(tiny_config, tmp_path):
    encoder = BertEncoder(tiny_config, output_attentions=True)
    batch = random_batch()
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, BertEncoder) and restored.config == tiny_config
    for a, b in zip(tf.nest.flatten(encoder(batch)), tf.nest.flatten(restored(batch))):
        np.testing.assert_array_equal(a, b)


def test_bad_config_type():
    with pytest.raises(TypeError, match="BertConfig"):
        BertEncoder("base")


@pytest.mark.parametrize("layer", [
    BertEmbeddings(vocab_size=10, hidden_size=8, max_position_embeddings=16),
    BertSelfAttention(num_heads=2, head_size=4, dropout=0.2),
    TransformerBlock(num_heads=2, intermediate_size=16, hidden_act="gelu_tanh"),
    BertPooler(hidden_size=8),
])
def test_layer_get_config_round_trip(layer):
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config


def test_masked_lm_head_config_needs_embedding():
    emb = keras.layers.Embedding(10, 8)
    head = MaskedLMHead(emb, hidden_act="relu")
    clone = MaskedLMHead.from_config(head.get_config(), embedding=emb)
    assert clone.get_config() == head.get_config()
    with pytest.raises(ValueError, match="embedding"):
        MaskedLMHead.from_config(head.get_config())


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh"])
def test_gelu_matches_its_formula_eager_and_in_graphs(name):
    # References: Hugging Face's "gelu" (x * Phi(x) with erf) and google-research/bert's
    # tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in float64 numpy.
    import math

    from keras_bert.model.layers import get_activation

    x = np.linspace(-8, 8, 2001)
    if name == "gelu":
        expected = x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    else:
        expected = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    fn = get_activation(name)
    x32 = tf.constant(x, tf.float32)
    for got in (fn(x32), tf.function(fn)(x32), tf.function(fn, jit_compile=True)(x32)):
        np.testing.assert_allclose(np.asarray(got), expected, atol=2e-6, rtol=1e-6)


def test_exact_and_tanh_gelu_differ(tiny_config):
    batch = random_batch()
    exact = BertEncoder(tiny_config)
    approx = BertEncoder(tiny_config.replace(hidden_act="gelu_tanh"))
    approx.set_weights(exact.get_weights())
    diff = np.abs(np.asarray(exact(batch)["sequence_output"])
                  - np.asarray(approx(batch)["sequence_output"])).max()
    assert 0 < diff < 0.05


def test_config_preset_builds_named_model():
    encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=100))
    assert encoder.name == "bert_encoder"
    assert encoder.word_embeddings.input_dim == 100
