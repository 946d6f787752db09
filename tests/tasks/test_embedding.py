"""`keras_bert.BertTextEmbedder` against sentence-transformers' own embeddings
(tests/fixtures/embeddings/minilm_refs.npz, made by scripts/make_embedding_refs.py) of
the installed all-MiniLM-L6-v2 folder and copies of it with other modules."""

import json
import os

import checkpoint_names_support as support
import keras
import numpy as np
import pytest
from conftest import REPO, minilm_path

import keras_bert
from keras_bert.core.errors import ArgumentError, CheckpointError

REFS = os.path.join(REPO, "tests", "fixtures", "embeddings", "minilm_refs.npz")
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def refs():
    return np.load(REFS)


@pytest.fixture(scope="module")
def sentences(refs):
    return [str(s) for s in refs["sentences"]]


@pytest.fixture(scope="module")
def shipped():
    return keras_bert.BertTextEmbedder.from_preset(minilm_path())


def _copy(folder, tmp_path, name, *, pooling=None, modules=None, prompts=None,
          drop=(), model_type=None):
    """A copy of the MiniLM folder (its files linked) with some files rewritten."""
    copy = tmp_path / name
    copy.mkdir()
    for entry in os.listdir(folder):
        if entry not in drop and entry != "1_Pooling" and entry != "config.json":
            os.symlink(os.path.join(folder, entry), copy / entry)
    (copy / "1_Pooling").mkdir()
    with open(os.path.join(folder, "1_Pooling", "config.json")) as f:
        config = json.load(f)
    if pooling is not None:
        config = {"word_embedding_dimension": 384, **{k: False for k in config if
                                                      k.startswith("pooling_mode")},
                  **pooling}
    (copy / "1_Pooling" / "config.json").write_text(json.dumps(config))
    with open(os.path.join(folder, "config.json")) as f:
        model_config = json.load(f)
    if model_type is not None:
        model_config["model_type"] = model_type
    (copy / "config.json").write_text(json.dumps(model_config))
    if modules is not None:
        os.unlink(copy / "modules.json")
        (copy / "modules.json").write_text(json.dumps(modules))
    if prompts is not None:
        os.unlink(copy / "config_sentence_transformers.json")
        (copy / "config_sentence_transformers.json").write_text(json.dumps(
            {"prompts": prompts, "default_prompt_name": None, "similarity_fn_name": "cosine"}))
    return str(copy)


SHIPPED_MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize",
     "type": "sentence_transformers.models.Normalize"}]


def test_the_shipped_folder_equals_sentence_transformers(shipped, refs, sentences):
    assert shipped.pooling == ["mean"] and shipped.normalize
    assert shipped.preprocessor.sequence_length == 256
    got = shipped.encode(sentences, batch_size=7)
    assert got.dtype == np.float32 and got.shape == refs["mean"].shape
    assert np.abs(got - refs["mean"]).max() < TOLERANCE
    # One text gives one vector; the order of the inputs is kept.
    np.testing.assert_allclose(shipped.encode(sentences[3]), refs["mean"][3], atol=TOLERANCE)
    np.testing.assert_allclose(shipped.encode(sentences[::-1])[::-1], got, atol=TOLERANCE)


@pytest.mark.parametrize("mode", ["max", "cls"])
def test_max_and_cls_pooling_equal_sentence_transformers(mode, refs, sentences, tmp_path):
    flag = {"max": "pooling_mode_max_tokens", "cls": "pooling_mode_cls_token"}[mode]
    folder = _copy(minilm_path(), tmp_path, mode, pooling={flag: True})
    model = keras_bert.BertTextEmbedder.from_preset(folder)
    assert model.pooling == [mode]
    assert np.abs(model.encode(sentences) - refs[mode]).max() < TOLERANCE


def test_a_dense_module_equals_sentence_transformers(refs, sentences, tmp_path):
    from safetensors.numpy import save_file

    modules = [*SHIPPED_MODULES[:2],
               {"idx": 2, "name": "2", "path": "2_Dense",
                "type": "sentence_transformers.models.Dense"},
               {**SHIPPED_MODULES[2], "idx": 3, "name": "3"}]
    folder = _copy(minilm_path(), tmp_path, "dense", modules=modules)
    dense = os.path.join(folder, "2_Dense")
    os.mkdir(dense)
    with open(os.path.join(dense, "config.json"), "w") as f:
        json.dump({"in_features": 384, "out_features": 32, "bias": True,
                   "activation_function": "torch.nn.modules.activation.Tanh"}, f)
    save_file({"linear.weight": refs["dense_weight"], "linear.bias": refs["dense_bias"]},
              os.path.join(dense, "model.safetensors"))
    model = keras_bert.BertTextEmbedder.from_preset(folder)
    assert np.abs(model.encode(sentences) - refs["dense"]).max() < TOLERANCE


def test_encode_query_applies_the_folders_prompt(refs, sentences, tmp_path):
    folder = _copy(minilm_path(), tmp_path, "query", prompts={"query": "query: "})
    model = keras_bert.BertTextEmbedder.from_preset(folder)
    query = model.encode_query(sentences)
    assert np.abs(query - refs["query"]).max() < TOLERANCE
    np.testing.assert_allclose(model.encode(sentences, prompt="query: "), query, atol=1e-6)
    # No document prompt in the folder: encode_documents is plain encode.
    assert np.abs(model.encode_documents(sentences) - refs["mean"]).max() < TOLERANCE
    with pytest.raises(ArgumentError, match="'passage' is not one of the model's prompts"):
        model.encode(sentences[:1], prompt_name="passage")


def test_truncate_dim_cuts_as_sentence_transformers_does(shipped, refs, sentences):
    cut = shipped.encode(sentences, truncate_dim=64)
    assert cut.shape == (len(sentences), 64)
    assert np.abs(cut - refs["truncate_64"]).max() < TOLERANCE
    unit = shipped.encode(sentences, truncate_dim=64, normalize_embeddings=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=-1), 1.0, atol=1e-6)
    with pytest.raises(ArgumentError, match="truncate_dim"):
        keras_bert.BertTextEmbedder.from_preset(minilm_path(), truncate_dim=0)


def test_similarity_is_the_folders_cosine(shipped, refs):
    a, b = refs["mean"][:3], refs["mean"][3:8]
    sims = shipped.similarity(a, b)
    assert sims.shape == (3, 5)
    np.testing.assert_allclose(sims, a @ b.T, atol=1e-6)


@pytest.mark.parametrize("kind", ["unknown module", "non-BERT transformer"])
def test_a_module_it_cannot_compute_is_refused_with_one_line(kind, tmp_path):
    if kind == "unknown module":
        modules = [*SHIPPED_MODULES, {"idx": 3, "name": "3", "path": "3_LSTM",
                                      "type": "sentence_transformers.models.LSTM"}]
        folder = _copy(minilm_path(), tmp_path, "lstm", modules=modules)
        expected = "module 3 ('sentence_transformers.models.LSTM')"
    else:
        folder = _copy(minilm_path(), tmp_path, "roberta", model_type="roberta")
        expected = "module 0 ('sentence_transformers.models.Transformer') is a roberta"
    with pytest.raises(CheckpointError) as error:
        keras_bert.BertTextEmbedder.from_preset(folder)
    message = str(error.value)
    assert expected in message and len(message.splitlines()) == 1, message


def test_a_plain_bert_checkpoint_gets_mean_pooling_and_normalize(refs, sentences, tmp_path):
    folder = _copy(minilm_path(), tmp_path, "plain",
                   drop=("modules.json", "sentence_bert_config.json",
                         "config_sentence_transformers.json"))
    model = keras_bert.BertTextEmbedder.from_preset(folder)
    assert model.pooling == ["mean"] and model.normalize
    assert model.preprocessor.sequence_length == 512
    assert np.abs(model.encode(sentences) - refs["mean"]).max() < TOLERANCE


def test_save_and_load_give_equal_embeddings(shipped, sentences, tmp_path):
    path = str(tmp_path / "embedder.keras")
    shipped.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is keras_bert.BertTextEmbedder
    assert loaded.preprocessor.sequence_length == 256
    np.testing.assert_array_equal(loaded.encode(sentences), shipped.encode(sentences))
    again = keras_bert.BertTextEmbedder.from_preset(path, truncate_dim=16, sequence_length=8)
    assert again.encode(sentences[:2]).shape == (2, 16)
    assert again.preprocessor.sequence_length == 8


hf_cache = support.hf_cache


def test_an_hf_name_follows_the_cached_folders_modules(hf_cache, refs, sentences, tmp_path):
    # hf://ORG/NAME resolves to its snapshot, whose 1_Pooling/config.json (fetched with
    # the folder's files, remote.SENTENCE_TRANSFORMERS_FILES) says cls.
    folder = _copy(minilm_path(), tmp_path, "cls", pooling={"pooling_mode_cls_token": True})
    repo = hf_cache / "models--org--minilm-cls"
    os.makedirs(repo / "refs")
    (repo / "refs" / "main").write_text(support.MAIN_COMMIT)
    os.makedirs(repo / "snapshots")
    os.symlink(folder, repo / "snapshots" / support.MAIN_COMMIT)
    model = keras_bert.BertTextEmbedder.from_preset("hf://org/minilm-cls")
    assert model.pooling == ["cls"]
    assert np.abs(model.encode(sentences[:8]) - refs["cls"][:8]).max() < TOLERANCE


def test_export_serves_the_embedding_in_a_process_with_tensorflow_only(shipped, refs,
                                                                       sentences, tmp_path):
    from clean_process import run_clean_process

    version = shipped.export(str(tmp_path / "embedder"), warmup=False)
    report, out = run_clean_process(
        tmp_path, {"text": [version, "serve_text", ["text"]]},
        {"text|text": np.array(sentences, dtype=object)})
    assert report == {"blocked": True, "keras_bert_modules": []}
    assert np.abs(out["text|embedding"] - refs["mean"]).max() < TOLERANCE


def test_encode_after_quantize_uses_the_quantized_weights():
    # encode's trace is kept on the model; quantize replaces the variables it held.
    from keras_bert.tasks.embedding.task import SentenceEmbeddingTask
    from keras_bert.tasks.keras_face import TextPreprocessor

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "movie"]
    encoder = keras_bert.BertEncoder(keras_bert.BertConfig.from_preset("tiny", vocab_size=8))
    model = keras_bert.BertTextEmbedder(encoder, preprocessor=TextPreprocessor.for_task(
        SentenceEmbeddingTask(), vocab, sequence_length=16))
    texts = ["good movie", "bad bad movie"]
    before = model.encode(texts)
    model.quantize("int8")
    after = model.encode(texts)
    features = model.preprocessor.features(texts)
    want = np.asarray(model(features.inputs))
    assert np.abs(after - before).max() > 1e-6  # not the float trace
    np.testing.assert_allclose(after, want, atol=1e-5)


def test_forward_batches_keeps_order_with_batches_in_flight():
    # Later batches finish first (shorter sleeps); the rows still come back in order,
    # and no more than `in_flight` batches run at once.
    import threading
    import time

    import tensorflow as tf

    from keras_bert.tasks.embedding.encoding import forward_batches

    running, most, lock = [0], [0], threading.Lock()

    def forward(batch):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02 * (6 - int(batch[0])))
        with lock:
            running[0] -= 1
        return tf.constant(batch * 10)

    got = forward_batches(forward, [np.array([i, i]) for i in range(6)], in_flight=2)
    assert [row.tolist() for row in got] == [[10 * i, 10 * i] for i in range(6)]
    assert most[0] == 2
    assert forward_batches(forward, []) == []
