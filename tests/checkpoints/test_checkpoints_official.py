"""tf-models-official (TF2 Model Garden) checkpoints load into keras_bert's BertEncoder.

The reference is tf-models-official's own forward pass: its encoders are built, given
random weights and saved the way Model Garden saves them; keras_bert reads only the
checkpoint files.
"""

import json
import logging
import sys

import numpy as np
import pytest
import tensorflow as tf
from conftest import random_batch

from keras_bert import BertConfig
from keras_bert.checkpoints import CheckpointError, load_encoder, load_pretrainer, read_config

official = pytest.importorskip("official", reason="pip install keras_bert[official]")
pytestmark = pytest.mark.official

VOCAB, HIDDEN, LAYERS, HEADS, INTERMEDIATE, MAX_LEN, TYPES = 100, 32, 2, 4, 64, 64, 2
# What the encoders below are: tf-models-official's default activation is the tanh GELU.
EXPECTED = BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=LAYERS,
                      num_heads=HEADS, intermediate_size=INTERMEDIATE, hidden_act="gelu_tanh",
                      max_position_embeddings=MAX_LEN, type_vocab_size=TYPES)
GOOGLE_CONFIG = {"vocab_size": VOCAB, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
                 "num_attention_heads": HEADS, "intermediate_size": INTERMEDIATE,
                 "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                 "attention_probs_dropout_prob": 0.1, "max_position_embeddings": MAX_LEN,
                 "type_vocab_size": TYPES, "initializer_range": 0.02}


@pytest.fixture(scope="module")
def tfm():
    from official.nlp.modeling import models, networks

    return networks, models


def _tfm_encoder(networks, cls="BertEncoderV2", seed=0, **overrides):
    kwargs = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=LAYERS,
                  num_attention_heads=HEADS, inner_dim=INTERMEDIATE,
                  max_sequence_length=MAX_LEN, type_vocab_size=TYPES)
    if cls == "BertEncoder":
        kwargs["dict_outputs"] = True
    encoder = getattr(networks, cls)(**{**kwargs, **overrides})
    encoder(_inputs(random_batch(batch=1, seq=4, vocab=VOCAB)))  # creates the variables
    _randomize(encoder.weights, seed)
    return encoder


def _randomize(variables, seed):
    # Far from the initializers (LayerNorm gammas around 1, biases non-zero), so that a
    # variable mapped to the wrong place changes the outputs.
    rng = np.random.default_rng(seed)
    for v in variables:
        noise = rng.normal(0.0, 0.2, v.shape).astype(np.float32)
        v.assign(1.0 + noise if "gamma" in v.name else noise)


def _inputs(batch):
    return {k: tf.constant(v) for k, v in batch.items()}


def _batch():
    return random_batch(batch=4, seq=20, vocab=VOCAB, lengths=[20, 13, 7, 2], seed=3)


def _write_config(directory, config=GOOGLE_CONFIG):
    (directory / "bert_config.json").write_text(json.dumps(config))


def _assert_same_outputs(ours, reference, batch):
    theirs = reference(_inputs(batch), training=False)
    out = ours(batch)
    for key in ("sequence_output", "pooled_output"):
        diff = np.max(np.abs(np.asarray(out[key]) - np.asarray(theirs[key])))
        assert diff <= 1e-5, (key, diff)
    for ours_layer, their_layer in zip(out["encoder_outputs"], theirs["encoder_outputs"]):
        np.testing.assert_allclose(ours_layer, their_layer, atol=1e-5, rtol=0)


@pytest.mark.parametrize("cls", ["BertEncoderV2", "BertEncoder"])
def test_encoder_checkpoint_matches_tf_models_official(tfm, cls, tmp_path, monkeypatch):
    networks, _ = tfm
    reference = _tfm_encoder(networks, cls)
    prefix = tf.train.Checkpoint(encoder=reference).save(str(tmp_path / "ckpt" / "ckpt"))
    names = [n for n, _ in tf.train.list_variables(prefix)]
    assert any(n.startswith("encoder/") and n.endswith("/.ATTRIBUTES/VARIABLE_VALUE")
               for n in names)
    _write_config(tmp_path / "ckpt")
    assert read_config(prefix) == EXPECTED
    encoder = load_encoder(prefix)
    assert encoder.config == EXPECTED
    batch = _batch()
    assert (batch["input_mask"] == 0).any() and batch["input_type_ids"].max() == 1
    _assert_same_outputs(encoder, reference, batch)
    # The directory form (tf.train.latest_checkpoint) loads the same, and reading needs
    # no tf-models-official.
    monkeypatch.setitem(sys.modules, "official", None)
    again = load_encoder(tmp_path / "ckpt")
    for a, b in zip(encoder.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_pretrainer_checkpoint_under_a_model_prefix(tfm, tmp_path):
    # Model Garden pretraining saves the whole BertPretrainerV2: the encoder sits under
    # model/encoder_network/, and its word embeddings are saved once, as the MLM head's
    # tied embedding_table.
    networks, models = tfm
    pretrainer = models.BertPretrainerV2(encoder_network=_tfm_encoder(networks))
    batch = _batch()
    pretrainer(dict(_inputs(batch), masked_lm_positions=tf.zeros((4, 2), tf.int32)))
    _randomize(pretrainer.masked_lm.weights, seed=1)
    prefix = tf.train.Checkpoint(model=pretrainer).save(str(tmp_path / "ckpt" / "ckpt"))
    names = [n for n, _ in tf.train.list_variables(prefix)]
    assert any(n.startswith("model/encoder_network/_transformer_layers/") for n in names)
    assert not any("/_embedding_layer/" in n for n in names)
    assert any(n.startswith("model/masked_lm/embedding_table/") for n in names)
    _write_config(tmp_path / "ckpt")
    encoder = load_encoder(tmp_path / "ckpt")
    _assert_same_outputs(encoder, pretrainer.encoder_network, batch)
    with pytest.raises(CheckpointError, match="load_encoder"):
        load_pretrainer(tmp_path / "ckpt")


def test_model_garden_params_yaml(tfm, tmp_path):
    # The config Model Garden writes into an experiment's model_dir, and the encoder
    # tf-models-official builds from that same config.
    pytest.importorskip("yaml")
    from official.core import config_definitions, train_utils
    from official.nlp.configs import bert, encoders
    from official.nlp.tasks import masked_lm

    bert_config = encoders.BertEncoderConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE, hidden_activation="relu", dropout_rate=0.05,
        max_position_embeddings=MAX_LEN, type_vocab_size=TYPES)
    encoder_config = encoders.EncoderConfig(type="bert", bert=bert_config)
    experiment = config_definitions.ExperimentConfig(
        task=masked_lm.MaskedLMConfig(model=bert.PretrainerConfig(encoder=encoder_config)))
    reference = encoders.build_encoder(encoder_config)
    reference(_inputs(random_batch(batch=1, seq=4, vocab=VOCAB)))
    _randomize(reference.weights, seed=2)
    model_dir = tmp_path / "model_dir"
    train_utils.serialize_config(experiment, str(model_dir))
    tf.train.Checkpoint(encoder=reference).save(str(model_dir / "ckpt"))
    expected = EXPECTED.replace(hidden_act="relu", hidden_dropout=0.05)
    assert read_config(model_dir) == expected
    encoder = load_encoder(model_dir)
    assert encoder.config == expected
    _assert_same_outputs(encoder, reference, _batch())


def test_config_read_off_the_shapes_without_a_config_file(tfm, tmp_path, caplog):
    networks, _ = tfm
    reference = _tfm_encoder(networks, max_sequence_length=48, type_vocab_size=16)
    prefix = tf.train.Checkpoint(model=reference).save(str(tmp_path / "ckpt"))
    expected = EXPECTED.replace(max_position_embeddings=48, type_vocab_size=16)
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        assert read_config(prefix) == expected
    assert any("gelu_tanh" in r.getMessage() and "variable shapes" in r.getMessage()
               for r in caplog.records)
    _assert_same_outputs(load_encoder(prefix), reference, _batch())


def test_mis_shaped_variable_names_both_shapes(tfm, tmp_path):
    networks, _ = tfm
    reference = _tfm_encoder(networks, inner_dim=INTERMEDIATE + 1)
    prefix = tf.train.Checkpoint(encoder=reference).save(str(tmp_path / "ckpt"))
    _write_config(tmp_path)
    with pytest.raises(CheckpointError) as err:
        load_encoder(prefix)
    message = str(err.value)
    assert "encoder/_transformer_layers/0/_intermediate_dense/kernel" in message
    assert "(32, 65)" in message and "(32, 64)" in message


def test_missing_variable_is_named(tfm, tmp_path):
    # An encoder-shaped object graph whose pooler lacks its bias.
    networks, _ = tfm
    reference = _tfm_encoder(networks)
    partial = tf.Module()
    for name in ("_embedding_layer", "_position_embedding_layer", "_type_embedding_layer",
                 "_embedding_norm_layer", "_transformer_layers"):
        setattr(partial, name, getattr(reference, name))
    partial._pooler_layer = tf.Module()
    partial._pooler_layer.kernel = reference._pooler_layer.kernel
    prefix = tf.train.Checkpoint(encoder=partial).save(str(tmp_path / "ckpt"))
    _write_config(tmp_path)
    with pytest.raises(CheckpointError, match="'encoder/_pooler_layer/bias' is missing"):
        load_encoder(prefix)


def test_a_tf2_checkpoint_without_an_encoder_is_refused(tmp_path):
    prefix = tf.train.Checkpoint(weights=tf.Variable(tf.zeros((3, 2)))).save(
        str(tmp_path / "ckpt"))
    with pytest.raises(CheckpointError, match="no tf-models-official BERT encoder"):
        read_config(prefix)
