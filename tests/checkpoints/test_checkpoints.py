import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import MINILM_REFERENCE, minilm_path, random_batch

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import (
    CheckpointError,
    google_to_hf_name,
    load_encoder,
    load_pretrainer,
    read_config,
    save_encoder,
    save_google_checkpoint,
)
from keras_bert.model.models import BertPretrainer

# --- Hugging Face parity on a real checkpoint --------------------------------------------

@pytest.fixture(scope="module")
def minilm():
    return load_encoder(minilm_path())


@pytest.mark.parametrize("kind", ["single", "pair"])
def test_minilm_matches_hugging_face_transformers(minilm, kind):
    # Reference arrays come from transformers.BertModel (scripts/make_hf_reference.py).
    ref = np.load(MINILM_REFERENCE)
    batch = {k: ref[f"{kind}_{k}"] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    assert (batch["input_mask"] == 0).any(), "reference must include padding"
    if kind == "pair":
        assert batch["input_type_ids"].max() == 1
    out = minilm(batch)
    real = batch["input_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(out["sequence_output"])[real],
                               ref[f"{kind}_sequence_output"][real], atol=1e-4, rtol=0)
    np.testing.assert_allclose(out["pooled_output"], ref[f"{kind}_pooled_output"],
                               atol=1e-4, rtol=0)


def test_minilm_config_read_from_hf(minilm):
    cfg = minilm.config
    assert (cfg.num_layers, cfg.hidden_size, cfg.num_heads, cfg.intermediate_size) == (6, 384, 12, 1536)
    assert cfg.hidden_act == "gelu"


def test_minilm_through_google_format_is_exact(minilm, tmp_path):
    save_google_checkpoint(minilm, tmp_path / "google")
    again = load_encoder(tmp_path / "google")
    assert again.config == minilm.config
    for a, b in zip(minilm.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)


# --- Google TF1 checkpoints ------------------------------------------------------------

def _google_weights(cfg, seed=0):
    """Known weights under google-research/bert's names and TF1 shapes."""
    rng = np.random.default_rng(seed)
    h, i, v = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32) * 0.05

    w = {"bert/embeddings/word_embeddings": r(v, h),
         "bert/embeddings/token_type_embeddings": r(cfg.type_vocab_size, h),
         "bert/embeddings/position_embeddings": r(cfg.max_position_embeddings, h),
         "bert/embeddings/LayerNorm/gamma": 1 + r(h), "bert/embeddings/LayerNorm/beta": r(h),
         "bert/pooler/dense/kernel": r(h, h), "bert/pooler/dense/bias": r(h),
         "cls/predictions/transform/dense/kernel": r(h, h),
         "cls/predictions/transform/dense/bias": r(h),
         "cls/predictions/transform/LayerNorm/gamma": 1 + r(h),
         "cls/predictions/transform/LayerNorm/beta": r(h),
         "cls/predictions/output_bias": r(v),
         "cls/seq_relationship/output_weights": r(2, h),
         "cls/seq_relationship/output_bias": r(2)}
    for n in range(cfg.num_layers):
        p = f"bert/encoder/layer_{n}"
        for name, shape in [("attention/self/query", (h, h)), ("attention/self/key", (h, h)),
                            ("attention/self/value", (h, h)), ("attention/output/dense", (h, h)),
                            ("intermediate/dense", (h, i)), ("output/dense", (i, h))]:
            w[f"{p}/{name}/kernel"] = r(*shape)
            w[f"{p}/{name}/bias"] = r(shape[1])
        for ln in ("attention/output/LayerNorm", "output/LayerNorm"):
            w[f"{p}/{ln}/gamma"] = 1 + r(h)
            w[f"{p}/{ln}/beta"] = r(h)
    return w


def _write_tf1_checkpoint(directory, cfg, weights):
    """Writes a checkpoint the way google-research/bert does: TF1 variables + Saver."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "bert_config.json"), "w") as f:
        json.dump(cfg.to_google_dict(), f)
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(value, name=name) for name, value in weights.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, os.path.join(directory, "bert_model.ckpt"), write_meta_graph=False)
    return os.path.join(directory, "bert_model.ckpt")


@pytest.fixture
def google_cfg(tiny_config):
    return tiny_config.replace(hidden_act="gelu_tanh")


def test_google_checkpoint_loads_bit_exactly(google_cfg, tmp_path):
    weights = _google_weights(google_cfg)
    prefix = _write_tf1_checkpoint(tmp_path / "ckpt", google_cfg, weights)
    model = load_pretrainer(prefix)  # the prefix form
    h, a = google_cfg.hidden_size, google_cfg.num_heads
    enc = model.encoder
    np.testing.assert_array_equal(enc.word_embeddings.embeddings.numpy(),
                                  weights["bert/embeddings/word_embeddings"])
    q = enc.transformer_layers[1].attention.query.kernel.numpy()
    np.testing.assert_array_equal(q.reshape(h, h), weights["bert/encoder/layer_1/attention/self/query/kernel"])
    assert q.shape == (h, a, h // a)
    out = enc.transformer_layers[0].attention.output_dense.kernel.numpy()
    np.testing.assert_array_equal(out.reshape(h, h), weights["bert/encoder/layer_0/attention/output/dense/kernel"])
    np.testing.assert_array_equal(model.next_sentence_head.kernel.numpy().T,
                                  weights["cls/seq_relationship/output_weights"])
    np.testing.assert_array_equal(model.masked_lm.output_bias.numpy(),
                                  weights["cls/predictions/output_bias"])
    # Export and read back with TF's own checkpoint reader: every tensor bit-identical.
    save_google_checkpoint(model, tmp_path / "export")
    reader = tf.train.load_checkpoint(str(tmp_path / "export" / "bert_model.ckpt"))
    assert set(reader.get_variable_to_shape_map()) == set(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value, err_msg=name)
    # The directory form loads the same.
    again = load_pretrainer(tmp_path / "export")
    for x, y in zip(model.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(x, y)


def test_mlm_head_recovers_token_through_tied_embeddings(tmp_path):
    # Rows of a Sylvester-Hadamard matrix (minus the all-ones row) as word embeddings,
    # with attention and feed-forward weights zero, make every hidden state equal to its
    # token's embedding; with an identity transform the tied decoder must then score the
    # token itself highest by a margin of H.
    h, v = 32, 24
    hadamard = np.array([[1.0]])
    while hadamard.shape[0] < h:
        hadamard = np.block([[hadamard, hadamard], [hadamard, -hadamard]])
    cfg = BertConfig(vocab_size=v, hidden_size=h, num_layers=2, num_heads=4, intermediate_size=64,
                     hidden_act="gelu_tanh", max_position_embeddings=16)
    w = {k: np.zeros_like(x) for k, x in _google_weights(cfg).items()}
    for k in w:
        if k.endswith("gamma"):
            w[k][:] = 1.0
    w["bert/embeddings/word_embeddings"] = hadamard[1:v + 1].astype(np.float32)
    w["cls/predictions/transform/dense/kernel"] = np.eye(h, dtype=np.float32)
    prefix = _write_tf1_checkpoint(tmp_path / "ckpt", cfg, w)
    model = load_pretrainer(prefix)
    tokens = np.array([[3, 17, 9, 21, 5, 11]], "int32")
    x = {"input_word_ids": tokens, "input_mask": np.ones_like(tokens),
         "input_type_ids": np.zeros_like(tokens), "masked_lm_positions": np.array([[1, 3, 4]], "int32")}
    logits = np.asarray(model(x)["masked_lm"])[0]
    np.testing.assert_array_equal(logits.argmax(-1), [17, 21, 5])
    assert np.all(np.sort(logits, -1)[:, -1] - np.sort(logits, -1)[:, -2] > h / 4)
    # The decoder has no matrix of its own: after reversing the embedding table, token t
    # is embedded as the old row v-1-t; a decoder with its own copy of the old table
    # would now predict v-1-t, the tied one still predicts t.
    table = model.encoder.word_embeddings.embeddings
    table.assign(table.numpy()[::-1])
    np.testing.assert_array_equal(np.asarray(model(x)["masked_lm"])[0].argmax(-1), [17, 21, 5])


def test_mis_shaped_variable_names_both_shapes(google_cfg, tmp_path):
    weights = _google_weights(google_cfg)
    weights["bert/encoder/layer_1/intermediate/dense/kernel"] = np.zeros((32, 65), np.float32)
    prefix = _write_tf1_checkpoint(tmp_path / "ckpt", google_cfg, weights)
    with pytest.raises(CheckpointError) as err:
        load_encoder(prefix)
    msg = str(err.value)
    assert "bert/encoder/layer_1/intermediate/dense/kernel" in msg
    assert "(32, 65)" in msg and "(32, 64)" in msg


def test_missing_variable_is_named(google_cfg, tmp_path):
    weights = _google_weights(google_cfg)
    del weights["bert/pooler/dense/bias"]
    prefix = _write_tf1_checkpoint(tmp_path / "ckpt", google_cfg, weights)
    with pytest.raises(CheckpointError, match="bert/pooler/dense/bias"):
        load_encoder(prefix)


def test_unused_variables_are_reported(google_cfg, tmp_path, caplog):
    weights = _google_weights(google_cfg)
    weights["bert/encoder/layer_0/attention/self/query/adam_m"] = np.zeros((32, 32), np.float32)
    weights["mystery/extra_head/kernel"] = np.zeros((3,), np.float32)
    prefix = _write_tf1_checkpoint(tmp_path / "ckpt", google_cfg, weights)
    with caplog.at_level(logging.INFO, logger="keras_bert"):
        load_encoder(prefix)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("mystery/extra_head/kernel" in m for m in warnings)
    assert any("optimizer" in r.getMessage() for r in caplog.records)
    # Heads that an encoder does not use are listed too, at INFO level.
    assert any("cls/predictions/output_bias" in r.getMessage() for r in caplog.records)


def test_keras_bert_directory_round_trip(tiny_config, tmp_path):
    encoder = BertEncoder(tiny_config)
    save_encoder(encoder, str(tmp_path / "saved"))
    restored = load_encoder(tmp_path / "saved")
    batch = random_batch()
    np.testing.assert_array_equal(encoder(batch)["sequence_output"],
                                  restored(batch)["sequence_output"])
    with pytest.raises(FileExistsError):
        save_encoder(encoder, tmp_path / "saved")


def test_failed_save_leaves_nothing(tiny_config, tmp_path, monkeypatch):
    encoder = BertEncoder(tiny_config)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(encoder, "save_weights", boom)
    with pytest.raises(OSError):
        save_encoder(encoder, tmp_path / "out")
    assert os.listdir(tmp_path) == []


def test_overwrite_replaces_only_a_complete_checkpoint(tiny_config, tmp_path, monkeypatch):
    first, second = BertEncoder(tiny_config), BertEncoder(tiny_config)
    batch = random_batch()
    save_encoder(first, tmp_path / "saved")
    # A failing overwrite keeps the old checkpoint intact and leaves no temporaries.
    monkeypatch.setattr(second, "save_weights", lambda *a, **k: (_ for _ in ()).throw(
        OSError("disk full")))
    with pytest.raises(OSError):
        save_encoder(second, tmp_path / "saved", overwrite=True)
    assert os.listdir(tmp_path) == ["saved"]
    np.testing.assert_array_equal(load_encoder(tmp_path / "saved")(batch)["sequence_output"],
                                  first(batch)["sequence_output"])
    monkeypatch.undo()
    save_encoder(second, str(tmp_path / "saved"), overwrite=True)
    assert os.listdir(tmp_path) == ["saved"]
    np.testing.assert_array_equal(load_encoder(tmp_path / "saved")(batch)["sequence_output"],
                                  second(batch)["sequence_output"])


def test_read_config_of_every_format(google_cfg, tmp_path):
    encoder = BertEncoder(google_cfg)
    save_encoder(encoder, tmp_path / "ours")
    prefix = save_google_checkpoint(encoder, tmp_path / "google")
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps(google_cfg.to_hf_dict()))
    (hf / "model.safetensors").write_bytes(b"")  # read_config must not open the weights
    for path in (tmp_path / "ours", tmp_path / "google", prefix, hf):
        assert read_config(path) == google_cfg, path


def test_not_a_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="no BERT checkpoint"):
        load_encoder(tmp_path)
    with pytest.raises(FileNotFoundError, match="No checkpoint"):
        load_encoder(tmp_path / "missing")


def test_hf_names():
    assert google_to_hf_name("bert/embeddings/LayerNorm/gamma") == "bert.embeddings.LayerNorm.weight"
    assert google_to_hf_name("bert/embeddings/word_embeddings", "") == "embeddings.word_embeddings.weight"
    assert google_to_hf_name("bert/encoder/layer_11/output/dense/bias") == "bert.encoder.layer.11.output.dense.bias"
    assert google_to_hf_name("cls/seq_relationship/output_weights") == "cls.seq_relationship.weight"


def test_hf_pretraining_checkpoint_with_heads(google_cfg, tmp_path):
    # A BertForPreTraining-style safetensors file built from known Google-layout weights.
    from safetensors.numpy import save_file

    weights = _google_weights(google_cfg)
    tensors = {}
    for name, value in weights.items():
        key = google_to_hf_name(name)
        dense_kernel = name.endswith("/kernel")
        tensors[key] = np.ascontiguousarray(value.T if dense_kernel else value)
    tensors["cls.predictions.decoder.weight"] = weights["bert/embeddings/word_embeddings"]
    d = tmp_path / "hf"
    d.mkdir()
    save_file(tensors, str(d / "model.safetensors"))
    (d / "config.json").write_text(json.dumps(google_cfg.to_hf_dict()))
    model = load_pretrainer(d)
    google = load_pretrainer(_write_tf1_checkpoint(tmp_path / "g", google_cfg, weights))
    for x, y in zip(model.get_weights(), google.get_weights()):
        np.testing.assert_array_equal(x, y)


def test_pretrainer_round_trip_model_outputs(tiny_config, tmp_path):
    model = BertPretrainer(BertEncoder(tiny_config.replace(hidden_act="relu")))
    save_google_checkpoint(model, tmp_path / "g")
    again = load_pretrainer(tmp_path / "g")
    x = dict(random_batch(), masked_lm_positions=np.array([[1, 2]] * 3, "int32"))
    for key in ("masked_lm", "next_sentence"):
        np.testing.assert_array_equal(model(x)[key], again(x)[key])


def _write_vocab(path, tokens):
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return str(path)


def test_a_vocab_of_the_right_size_but_not_the_models_is_refused(tmp_path):
    # Issue 13: a vocab of the checkpoint's size that is not its own gives wrong ids; the
    # vocab.txt beside the checkpoint tells them apart, line by line.
    from keras_bert.checkpoints import check_vocab_matches
    from keras_bert.core.errors import MismatchError

    model = tmp_path / "model"
    model.mkdir()
    own = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a"]
    _write_vocab(model / "vocab.txt", own)
    other = _write_vocab(tmp_path / "other.txt", own[:7] + ["a", "the"])
    with pytest.raises(MismatchError) as error:
        check_vocab_matches(other, 9, "the model 'm'", checkpoint=str(model))
    message = str(error.value)
    assert "line 8" in message and "other.txt" in message and str(model / "vocab.txt") in message
    # A copy of the model's vocab, and new words in its [unusedN] slots, are its vocab.
    copy = _write_vocab(tmp_path / "copy.txt", own)
    extended = _write_vocab(tmp_path / "extended.txt", own[:1] + ["covid", "mrna"] + own[3:])
    for vocab in (copy, extended, str(model / "vocab.txt")):
        assert check_vocab_matches(vocab, 9, "the model 'm'", checkpoint=str(model)) == 9
    # Without a vocab beside the checkpoint only the size can be compared.
    bare = tmp_path / "bare"
    bare.mkdir()
    assert check_vocab_matches(other, 9, "the model 'm'", checkpoint=str(bare)) == 9
    with pytest.raises(MismatchError, match="has 9 tokens but the model 'm' has 10"):
        check_vocab_matches(other, 10, "the model 'm'", checkpoint=str(bare))
