"""keras-hub BERT presets in and out (keras_bert.checkpoints.keras_hub and
keras_hub_writing): presets written by keras-hub read into keras_bert with the same
outputs, and presets written by keras_bert loaded by keras-hub with the same outputs;
reading never imports keras-hub."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import REPO, VOCAB, minilm_path

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import keras_hub_writing as writing
from keras_bert.checkpoints.keras_hub import (
    is_keras_hub_preset,
    keras_hub_lower_case,
    keras_hub_vocab,
    load_keras_hub_encoder,
    read_keras_hub_config,
    read_keras_hub_task,
)
from keras_bert.checkpoints.keras_hub_writing import save_keras_hub_preset
from keras_bert.core.errors import ArgumentError, CheckpointError, OutputExistsError
from keras_bert.tasks.glue.model import BertClassifier, load_keras_hub_classifier

SEQ = 16
SIZES = dict(num_layers=2, num_heads=4, hidden_dim=32, intermediate_dim=64)


@pytest.fixture(scope="module")
def hub():
    return pytest.importorskip("keras_hub")


def _randomize(weights, seed):
    # Random values everywhere (LayerNorm gammas and betas too), so that a weight read
    # into the wrong place cannot go unseen.
    rng = np.random.default_rng(seed)
    for w in weights:
        w.assign(rng.normal(0.0, 0.3, tuple(w.shape)).astype("float32"))


def _batch(vocab_size, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab_size, (3, SEQ)).astype("int32")
    mask = np.ones((3, SEQ), "int32")
    mask[1, 9:] = 0
    segments = np.zeros((3, SEQ), "int32")
    segments[:, 6:] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": segments}


def _hub_inputs(batch):
    return {"token_ids": batch["input_word_ids"], "padding_mask": batch["input_mask"],
            "segment_ids": batch["input_type_ids"]}


def _assert_same_outputs(keras_bert_out, hub_out, batch, atol=1e-5):
    real = batch["input_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(keras_bert_out["sequence_output"])[real],
                               np.asarray(hub_out["sequence_output"])[real], atol=atol, rtol=0)
    np.testing.assert_allclose(np.asarray(keras_bert_out["pooled_output"]),
                               np.asarray(hub_out["pooled_output"]), atol=atol, rtol=0)


@pytest.fixture(scope="module")
def hub_classifier_preset(hub, tmp_path_factory):
    """A keras-hub BertTextClassifier preset (backbone, tokenizer over `VOCAB`, 3-class
    head) with random weights; (its directory, the keras-hub classifier)."""
    tokenizer = hub.models.BertTokenizer(vocabulary=list(VOCAB), lowercase=True)
    backbone = hub.models.BertBackbone(vocabulary_size=len(VOCAB), max_sequence_length=SEQ,
                                       **SIZES)
    preprocessor = hub.models.BertTextClassifierPreprocessor(tokenizer=tokenizer,
                                                             sequence_length=SEQ)
    classifier = hub.models.BertTextClassifier(backbone=backbone, preprocessor=preprocessor,
                                               num_classes=3)
    _randomize(classifier.weights, seed=1)
    directory = str(tmp_path_factory.mktemp("hub") / "classifier")
    classifier.save_to_preset(directory)
    return directory, classifier


@pytest.fixture(scope="module")
def hub_backbone_preset(hub, hub_classifier_preset, tmp_path_factory):
    """The same backbone and tokenizer saved as a backbone preset (no task)."""
    classifier = hub_classifier_preset[1]
    directory = str(tmp_path_factory.mktemp("hub") / "backbone")
    classifier.backbone.save_to_preset(directory)
    classifier.preprocessor.tokenizer.save_to_preset(directory)
    return directory, classifier.backbone


@pytest.fixture(scope="module")
def keras_bert_encoder():
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_layers=2, num_heads=4,
                        intermediate_size=64, hidden_act="gelu_tanh",
                        max_position_embeddings=SEQ)
    encoder = BertEncoder(config)
    _randomize(encoder.weights, seed=2)
    return encoder


# --- keras-hub presets into keras_bert ------------------------------------------------------

def test_backbone_preset_reads_with_keras_hubs_outputs(hub_backbone_preset):
    directory, backbone = hub_backbone_preset
    assert is_keras_hub_preset(directory)
    config = read_keras_hub_config(directory)
    assert (config.num_layers, config.hidden_size, config.num_heads, config.intermediate_size,
            config.vocab_size, config.max_position_embeddings) == (2, 32, 4, 64, len(VOCAB), SEQ)
    assert (config.hidden_act, config.layer_norm_eps) == ("gelu_tanh", 1e-12)
    encoder = load_keras_hub_encoder(directory, BertEncoder(config))
    batch = _batch(len(VOCAB))
    _assert_same_outputs(encoder(batch), backbone(_hub_inputs(batch)), batch)
    assert read_keras_hub_task(directory) is None


def test_backbone_preset_vocab_and_casing(hub_backbone_preset):
    directory = hub_backbone_preset[0]
    with open(keras_hub_vocab(directory), encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == VOCAB
    assert keras_hub_lower_case(directory) is True


def test_classifier_preset_reads_with_keras_hubs_logits(hub_classifier_preset):
    directory, classifier = hub_classifier_preset
    task = read_keras_hub_task(directory)
    assert (task.num_classes, task.sequence_length, task.activation) == (3, SEQ, "linear")
    assert task.kernel.shape == (32, 3) and task.bias.shape == (3,)
    model = load_keras_hub_classifier(directory)
    assert isinstance(model, BertClassifier)
    batch = _batch(len(VOCAB), seed=3)
    np.testing.assert_allclose(np.asarray(model(batch)),
                               np.asarray(classifier(_hub_inputs(batch))), atol=1e-5, rtol=0)


def test_other_models_and_tasks_are_refused(tmp_path):
    other = tmp_path / "gpt2"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({
        "module": "keras_hub.src.models.gpt2.gpt2_backbone", "class_name": "GPT2Backbone",
        "config": {}, "registered_name": "keras_hub>GPT2Backbone"}))
    assert is_keras_hub_preset(other)
    with pytest.raises(CheckpointError, match="GPT2Backbone"):
        read_keras_hub_config(other)
    task = tmp_path / "masked_lm"
    task.mkdir()
    (task / "task.json").write_text(json.dumps({"class_name": "BertMaskedLM", "config": {}}))
    with pytest.raises(CheckpointError, match="BertMaskedLM"):
        read_keras_hub_task(task)


def test_bfloat16_preset_reads_as_float32(hub, tmp_path):
    backbone = hub.models.BertBackbone(vocabulary_size=len(VOCAB), max_sequence_length=SEQ,
                                       dtype="bfloat16", **SIZES)
    backbone.save_to_preset(str(tmp_path / "bf16"))
    encoder = load_keras_hub_encoder(tmp_path / "bf16",
                                     BertEncoder(read_keras_hub_config(tmp_path / "bf16")))
    np.testing.assert_array_equal(encoder.pooler.dense.kernel.numpy(),
                                  np.asarray(backbone.pooled_dense.kernel, "float32"))


# --- keras_bert into keras-hub presets ------------------------------------------------------

def test_saved_encoder_loads_in_keras_hub_with_the_same_outputs(hub, keras_bert_encoder,
                                                                 vocab_file, tmp_path):
    directory = str(tmp_path / "preset")
    save_keras_hub_preset(keras_bert_encoder, directory, vocab_file, lower_case=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "skipping variables" of any kind
        backbone = hub.models.BertBackbone.from_preset(directory)
        tokenizer = hub.models.BertTokenizer.from_preset(directory)
    batch = _batch(len(VOCAB), seed=4)
    _assert_same_outputs(keras_bert_encoder(batch), backbone(_hub_inputs(batch)), batch)
    from keras_bert.text.tokenizer import BertTokenizer

    text = ["The Café data, modelled!", "naïve text"]
    ours = BertTokenizer(vocab_file, lower_case=True).tokenize(np.array(text)).to_list()
    assert [list(row) for row in tokenizer(text)] == ours
    assert read_keras_hub_config(directory) == keras_bert_encoder.config


def test_saved_classifier_loads_in_keras_hub_with_the_same_logits(hub, keras_bert_encoder,
                                                                   vocab_file, tmp_path):
    model = BertClassifier(keras_bert_encoder, num_classes=4)
    _randomize(model.get_layer("logits").weights, seed=5)
    directory = str(tmp_path / "classifier")
    save_keras_hub_preset(model, directory, vocab_file, sequence_length=SEQ)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        classifier = hub.models.BertTextClassifier.from_preset(directory)
    assert classifier.preprocessor.sequence_length == SEQ
    batch = _batch(len(VOCAB), seed=6)
    np.testing.assert_allclose(np.asarray(classifier(_hub_inputs(batch))),
                               np.asarray(model(batch)), atol=1e-5, rtol=0)
    assert read_keras_hub_task(directory).num_classes == 4


def test_minilm_saves_for_keras_hub_only_with_the_tanh_gelu(hub, tmp_path):
    from keras_bert.checkpoints import checkpoint_vocab, load_encoder

    path = minilm_path()
    minilm = load_encoder(path)
    directory = str(tmp_path / "minilm")
    with pytest.raises(ArgumentError, match="approximate_gelu") as raised:
        save_keras_hub_preset(minilm, directory, checkpoint_vocab(path))
    assert raised.value.field == "hidden_act" and not os.path.exists(directory)
    save_keras_hub_preset(minilm, directory, checkpoint_vocab(path), approximate_gelu=True)
    backbone = hub.models.BertBackbone.from_preset(directory)
    # keras-hub computes what keras_bert does with hidden_act="gelu_tanh".
    tanh = BertEncoder(minilm.config.replace(hidden_act="gelu_tanh"))
    tanh.set_weights(minilm.get_weights())
    batch = _batch(minilm.config.vocab_size, seed=7)
    _assert_same_outputs(tanh(batch), backbone(_hub_inputs(batch)), batch)


def test_save_is_atomic_and_refuses_a_non_empty_directory(keras_bert_encoder, vocab_file,
                                                          tmp_path, monkeypatch):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep").write_text("x")
    with pytest.raises(OutputExistsError, match="not empty"):
        save_keras_hub_preset(keras_bert_encoder, taken, vocab_file)
    assert os.listdir(taken) == ["keep"]

    def fail(path, arrays):
        raise OSError("disk full")

    monkeypatch.setattr(writing, "_write_h5", fail)
    with pytest.raises(OSError, match="disk full"):
        save_keras_hub_preset(keras_bert_encoder, tmp_path / "new", vocab_file)
    assert sorted(os.listdir(tmp_path)) == ["taken"]  # no preset, no temporary beside it


def test_unrepresentable_encoders_are_refused(vocab_file, tmp_path):
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_layers=1, num_heads=2,
                        intermediate_size=32, hidden_act="gelu_tanh", layer_norm_eps=1e-6)
    with pytest.raises(ArgumentError, match="epsilon"):
        save_keras_hub_preset(BertEncoder(config), tmp_path / "eps", vocab_file)
    relu = BertEncoder(config.replace(hidden_act="relu", layer_norm_eps=1e-12))
    with pytest.raises(ArgumentError, match="'relu'"):
        save_keras_hub_preset(relu, tmp_path / "relu", vocab_file)
    assert os.listdir(tmp_path) == []


# --- reading without keras-hub --------------------------------------------------------------

_WITHOUT_KERAS_HUB = r'''
import importlib.abc, json, sys

def refuse_keras_hub(name, path=None, target=None):
    if name.partition(".")[0] == "keras_hub":
        raise ImportError(f"{name}: keras_hub is blocked in this process")

sys.meta_path.insert(0, type("NoKerasHub", (importlib.abc.MetaPathFinder,),
                             {"find_spec": staticmethod(refuse_keras_hub)})())
import numpy as np
from keras_bert.checkpoints.keras_hub import (is_keras_hub_preset, keras_hub_lower_case,
    keras_hub_vocab, read_keras_hub_task)
from keras_bert.tasks.glue.model import load_keras_hub_classifier

preset = sys.argv[1]
batch = dict(np.load(sys.argv[2]))
model = load_keras_hub_classifier(preset)
np.save(sys.argv[3], np.asarray(model(batch)))
report = {"preset": is_keras_hub_preset(preset), "lower": keras_hub_lower_case(preset),
          "vocab": keras_hub_vocab(preset) is not None,
          "classes": read_keras_hub_task(preset).num_classes,
          "keras_hub_loaded": any(m.split(".")[0] == "keras_hub" for m in sys.modules)}
try:
    import keras_hub  # noqa: F401
    report["blocked"] = False
except ImportError:
    report["blocked"] = True
print(json.dumps(report))
'''


def test_reading_a_preset_needs_no_keras_hub(keras_bert_encoder, vocab_file, tmp_path):
    model = BertClassifier(keras_bert_encoder, num_classes=2)
    directory = str(tmp_path / "preset")
    save_keras_hub_preset(model, directory, vocab_file, lower_case=False)
    batch = _batch(len(VOCAB), seed=8)
    np.savez(tmp_path / "batch.npz", **batch)
    script = tmp_path / "read.py"
    script.write_text(_WITHOUT_KERAS_HUB)
    env = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, str(script), directory, str(tmp_path / "batch.npz"),
                           str(tmp_path / "logits.npy")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"preset": True, "lower": False, "vocab": True, "classes": 2,
                      "keras_hub_loaded": False, "blocked": True}
    np.testing.assert_allclose(np.load(tmp_path / "logits.npy"), np.asarray(model(batch)),
                               atol=1e-6, rtol=0)



def test_export_serves_a_keras_hub_classifier_preset_on_raw_text(hub_classifier_preset,
                                                                 tmp_path):
    """`keras-bert export --checkpoint PRESET_DIR` serves keras-hub's classifier with the
    tokenizer inside: serve_text's logits equal keras-hub's own `predict` on the same raw
    sentences (its preprocessor tokenizes them)."""
    import tensorflow as tf

    from keras_bert.cli import main

    directory, classifier = hub_classifier_preset
    words = [w for w in VOCAB if w.isalpha()]
    rng = np.random.default_rng(3)
    sentences = [" ".join(rng.choice(words, n).tolist()).capitalize()
                 for n in (1, 4, 9, 13)]
    assert main(["export", "--checkpoint", directory, "--output_dir", str(tmp_path),
                 "--name", "hub", "--nowarmup", "--quiet"]) == 0
    served = tf.saved_model.load(str(tmp_path / "hub" / "1")).signatures["serve_text"](
        text=tf.constant(sentences))
    expected = classifier.predict(np.array(sentences), verbose=0)
    np.testing.assert_allclose(served["logits"].numpy(), expected, atol=1e-4, rtol=0)
    assert [x.decode() for x in served["label"].numpy()] == [
        str(i) for i in np.argmax(expected, axis=-1)]
    # And in LiteRT, the tokenizer in the graph too.
    from keras_bert.export import LiteRTModel

    assert main(["export", "--checkpoint", directory, "--output_dir", str(tmp_path),
                 "--name", "hub_lite", "--format", "litert", "--quiet"]) == 0
    lite = LiteRTModel(tmp_path / "hub_lite" / "1").serve_text(text=sentences)
    np.testing.assert_allclose(lite["logits"], expected, atol=1e-4, rtol=0)
