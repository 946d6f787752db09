"""keras_bert.model.layers: every layer through the harness (shapes, weights, config, gradients,
seeded determinism, mixed_bfloat16), then what each layer must compute."""

import keras
import numpy as np
import pytest
from harness import run_layer_test

from keras_bert.model.layers import (
    BertEmbeddings,
    BertPooler,
    BertSelfAttention,
    MaskedLMHead,
    TransformerBlock,
    attention_bias,
    gather_positions,
)
from keras_bert.model.layers.dropout import BertDropout

BATCH, SEQ, WIDTH, VOCAB = 2, 6, 16, 30


def _hidden(seed=0):
    return np.random.default_rng(seed).normal(size=(BATCH, SEQ, WIDTH)).astype("float32")


def _mask():
    mask = np.ones((BATCH, SEQ), "int32")
    mask[1, SEQ // 2:] = 0
    return mask


def _ids(seed=0):
    return np.random.default_rng(seed).integers(0, VOCAB, size=(BATCH, SEQ)).astype("int32")


def _positions():
    return np.array([[1, 2, 0], [3, 5, 4]], "int32")


def _tied_head(dtype):
    embedding = keras.layers.Embedding(VOCAB, WIDTH, dtype=dtype or "float32")
    embedding.build()
    return {"embedding": embedding, "hidden_act": "relu", "dtype": dtype or "float32"}


# (class, init arguments, inputs, expected output shape, trainable weights, extras)
CASES = {
    "BertEmbeddings": (BertEmbeddings, {"vocab_size": VOCAB, "hidden_size": WIDTH,
                                        "max_position_embeddings": 16},
                       (_ids(), np.zeros((BATCH, SEQ), "int32")), (BATCH, SEQ, WIDTH), 5, {}),
    "BertSelfAttention": (BertSelfAttention, {"num_heads": 2, "head_size": 8},
                          (_hidden(), attention_bias(_mask())), (BATCH, SEQ, WIDTH), 8, {}),
    "TransformerBlock": (TransformerBlock, {"num_heads": 2, "intermediate_size": 32,
                                            "hidden_act": "gelu_tanh"},
                         (_hidden(), attention_bias(_mask())), (BATCH, SEQ, WIDTH), 16, {}),
    "BertPooler": (BertPooler, {"hidden_size": WIDTH}, _hidden(), (BATCH, WIDTH), 2, {}),
    # The head's own weights (transform, LayerNorm, output bias) plus the tied table.
    "MaskedLMHead": (MaskedLMHead, _tied_head, (_hidden(), _positions()), (BATCH, 3, VOCAB),
                     6, {"from_config_kwargs": lambda head: {"embedding": head.embedding}}),
}


@pytest.mark.parametrize("kind", list(CASES))
def test_layer_harness(kind):
    cls, init_kwargs, inputs, shape, trainable, extras = CASES[kind]
    run_layer_test(cls, init_kwargs, inputs, expected_output_shape=shape,
                   expected_num_trainable_weights=trainable, **extras)


def test_preprocessor_goes_through_the_harness(tokenizer):
    # Strings in, int32 ids out: no weights, so no gradient or precision check.
    from keras_bert.text.packing import BertPreprocessor

    texts = np.array(["Anna visited Oslo.", "The cat sat on the mat, twice."])
    layer = run_layer_test(BertPreprocessor, {"tokenizer": tokenizer, "seq_length": 8}, texts,
                           expected_output_shape=[(2, 8)] * 3, frozen=True,
                           expected_num_trainable_weights=0, run_precision_check=False)
    out = {k: np.asarray(v) for k, v in layer(texts).items()}
    assert (out["input_word_ids"][:, 0] == tokenizer.cls_id).all()
    assert out["input_mask"][0].tolist() == [1] * int(out["input_mask"][0].sum()) + [0] * (
        8 - int(out["input_mask"][0].sum()))


def test_every_public_layer_goes_through_the_harness():
    import keras_bert.model.layers

    public = {name for name in keras_bert.model.layers.__all__
              if isinstance(getattr(keras_bert.model.layers, name), type)}
    assert public == set(CASES)


def test_embeddings_sum_word_segment_and_position_then_normalize():
    layer = BertEmbeddings(vocab_size=VOCAB, hidden_size=WIDTH, max_position_embeddings=16,
                           dropout=0.0)
    ids, types = _ids(), np.random.default_rng(1).integers(0, 2, (BATCH, SEQ)).astype("int32")
    got = np.asarray(layer(ids, types))
    word = layer.word_embeddings.embeddings.numpy()[ids]
    segment = layer.token_type_embeddings.embeddings.numpy()[types]
    position = layer.position_embeddings.numpy()[:SEQ][None]
    total = word + segment + position
    mean, var = total.mean(-1, keepdims=True), total.var(-1, keepdims=True)
    expected = (total - mean) / np.sqrt(var + 1e-12)  # gamma 1, beta 0 at initialization
    np.testing.assert_allclose(got, expected, atol=1e-4)


def test_embeddings_refuse_sequences_longer_than_the_position_table():
    layer = BertEmbeddings(vocab_size=VOCAB, hidden_size=WIDTH, max_position_embeddings=4)
    with pytest.raises(Exception, match="4"):
        layer(_ids(), np.zeros((BATCH, SEQ), "int32"))


def test_attention_ignores_padded_keys():
    # Changing the hidden states of padded positions must not change the real ones.
    layer = BertSelfAttention(num_heads=2, head_size=8, dropout=0.0)
    bias = attention_bias(_mask())
    x = _hidden()
    y = x.copy()
    y[1, SEQ // 2:] += 100.0
    out_x, out_y = np.asarray(layer(x, bias)), np.asarray(layer(y, bias))
    np.testing.assert_allclose(out_y[1, :SEQ // 2], out_x[1, :SEQ // 2], atol=1e-5)
    np.testing.assert_allclose(out_y[0], out_x[0], atol=1e-6)


def test_attention_probabilities_are_a_distribution_over_real_keys():
    layer = BertSelfAttention(num_heads=2, head_size=8, dropout=0.0)
    _, probs = layer(_hidden(), attention_bias(_mask()), return_probs=True)
    probs = np.asarray(probs)
    assert probs.shape == (BATCH, 2, SEQ, SEQ)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    assert np.all(probs[1, :, :, SEQ // 2:] < 1e-6)


def test_attention_masks_exactly_under_mixed_precision():
    # The scores meet the bias in float32: padded keys get exactly zero weight also
    # when the layer computes in bfloat16 and the scores are large.
    layer = BertSelfAttention(num_heads=2, head_size=8, dropout=0.0, dtype="mixed_bfloat16")
    _, probs = layer(_hidden() * 30.0, attention_bias(_mask()), return_probs=True)
    probs = np.asarray(keras.ops.cast(probs, "float32"))
    assert np.all(probs[1, :, :, SEQ // 2:] == 0.0)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=2e-2)


def test_transformer_block_is_post_layer_norm():
    # Post-LN (the paper's): every output position is LayerNorm-ed (gamma 1, beta 0).
    block = TransformerBlock(num_heads=2, intermediate_size=32, dropout=0.0)
    out = np.asarray(block(_hidden(), attention_bias(_mask())))
    np.testing.assert_allclose(out.mean(-1), 0.0, atol=1e-4)
    np.testing.assert_allclose(out.std(-1), 1.0, atol=1e-2)


def test_pooler_is_tanh_dense_of_the_first_token():
    pooler = BertPooler(hidden_size=WIDTH)
    x = _hidden()
    got = np.asarray(pooler(x))
    kernel, bias = (w.numpy() for w in pooler.dense.weights)
    np.testing.assert_allclose(got, np.tanh(x[:, 0] @ kernel + bias), atol=1e-5)
    x[:, 1:] = 0.0
    np.testing.assert_allclose(np.asarray(pooler(x)), got, atol=1e-6)


def test_masked_lm_head_scores_only_gathered_positions_against_the_tied_table():
    head = MaskedLMHead(**_tied_head(None))
    x, positions = _hidden(), _positions()
    logits = np.asarray(head(x, positions))
    assert logits.shape == (BATCH, 3, VOCAB)
    # Only the gathered positions matter.
    y = x.copy()
    y[0, 3:] += 5.0  # row 0 gathers positions 1, 2, 0
    np.testing.assert_allclose(np.asarray(head(y, positions))[0], logits[0], atol=1e-5)
    # The decoder is the embedding table: a change there changes the logits.
    head.embedding.embeddings.assign(head.embedding.embeddings * 2.0)
    assert not np.allclose(np.asarray(head(x, positions)), logits)


def test_gather_positions_picks_rows():
    seq = np.arange(2 * 4 * 3, dtype="float32").reshape(2, 4, 3)
    got = np.asarray(gather_positions(seq, np.array([[3, 0], [1, 1]], "int32")))
    np.testing.assert_array_equal(got, np.stack([seq[0, [3, 0]], seq[1, [1, 1]]]))


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_bert_dropout_keeps_the_rate_and_scales(rate):
    layer = BertDropout(rate, seed=3)
    y = np.asarray(layer(np.ones((64, 512), "float32"), training=True))
    kept = y != 0
    assert abs(1 - kept.mean() - rate) < 0.01
    np.testing.assert_allclose(y[kept], 1 / (1 - rate), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(layer(np.ones((4, 8)), training=False)), 1.0)


def test_bert_dropout_config_round_trip():
    layer = BertDropout(0.2, seed=5, name="d")
    clone = BertDropout.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
