"""`BertTextEmbedder.export(format="litert" | "onnx")` and `keras-bert export` of a saved
embedder: `embedding` [batch, width] float32, tokenizer inside the LiteRT model.

The real MiniLM folder's exports are compared with sentence-transformers' own
embeddings (tests/fixtures/embeddings/minilm_refs.npz, made by
scripts/make_embedding_refs.py; slow: the conversions take about 80 s). The tiny
models (2 layers, H=32, random weights) are compared with the Keras model's outputs,
itself checked against sentence-transformers in test_embedding.py. LiteRT runs in
`keras_bert.export.load_interpreter`'s interpreter (ai-edge-litert's, else TensorFlow's),
as in tests/export/test_export_litert.py; ONNX in onnxruntime (skipped without the
`onnx` extra).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from conftest import REPO, minilm_path
from export_support import VOCAB, tiny_config

import keras_bert
from keras_bert.cli import main
from keras_bert.export import LiteRTModel
from keras_bert.tasks.embedding.task import SentenceEmbeddingTask
from keras_bert.tasks.keras_face import TextPreprocessor

REFS = os.path.join(REPO, "tests", "fixtures", "embeddings", "minilm_refs.npz")
TOLERANCE = 1e-5
SEQ = 16
# Odd text too: accents, CJK, nothing left after cleaning, longer than SEQ (cut).
TEXTS = ["A man is playing a guitar.", "Café naïve résumé — ÅNGSTRÖM Straße",
         "北京欢迎你。東京タワー", "", "  \t ", "zero\u200bwidth nul\x00",
         " ".join(["long"] * 40) + " tail", "MiXeD CaSe 12345"]
POOLING = ["mean", "max", "cls", "lasttoken", "weightedmean", "mean_sqrt_len_tokens"]


def _onnx():
    pytest.importorskip("tf2onnx", reason="the onnx extra: pip install 'keras_bert[onnx]'")
    return pytest.importorskip("onnxruntime", reason="the onnx extra: pip install "
                                                     "'keras_bert[onnx]'")


def _cosine(a, b):
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


@pytest.fixture(scope="module")
def tiny():
    """Every pooling mode concatenated, a Dense (tanh) and Normalize."""
    keras.utils.set_random_seed(3)
    with open(VOCAB, encoding="utf-8") as f:
        vocab = f.read().splitlines()
    encoder = keras_bert.BertEncoder(tiny_config(len(vocab)))
    return keras_bert.BertTextEmbedder(
        encoder, pooling=POOLING, dense=[{"units": 24, "activation": "tanh"}],
        preprocessor=TextPreprocessor.for_task(SentenceEmbeddingTask(), vocab,
                                               lower_case=False, sequence_length=SEQ))


def test_litert_serves_encodes_embedding_with_the_tokenizer_inside(tiny, tmp_path):
    path = tiny.export(str(tmp_path / "lite"), format="litert")
    model = LiteRTModel(path)
    assert model.card["kind"] == "embedding" and model.card["quantize"] == "none"
    assert model.card["signatures"]["serve_text"]["outputs"] == {
        "embedding": {"dtype": "float32", "shape": [None, 24]}}
    expected = tiny.encode(TEXTS)
    got = model.serve_text(text=TEXTS)["embedding"]
    assert got.dtype == np.float32 and got.shape == expected.shape
    assert np.abs(got - expected).max() < TOLERANCE
    features = tiny.preprocessor.features(TEXTS).inputs
    ids = model.serving_default(**features)["embedding"]
    assert np.abs(ids - np.asarray(tiny(features))).max() < TOLERANCE
    one = model.serve_text(text=TEXTS[:1])["embedding"]  # batch 1: resized
    np.testing.assert_allclose(one, expected[:1], atol=TOLERANCE)


def test_onnx_gives_the_embedding_from_ids(tiny, tmp_path):
    ort = _onnx()
    path = tiny.export(str(tmp_path / "onnx"), format="onnx")
    session = ort.InferenceSession(os.path.join(path, "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["embedding"]
    features = tiny.preprocessor.features(TEXTS).inputs
    (got,) = session.run(["embedding"], {k: v.astype(np.int32) for k, v in features.items()})
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 24)
    assert np.abs(got - tiny.encode(TEXTS)).max() < TOLERANCE


def _export(*argv):
    """`keras-bert export ARGV --quiet` -> (exit code, its output)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = main(["export", *argv, "--quiet"])
        except SystemExit as e:
            code = e.code
    return code, out.getvalue()


def test_the_command_exports_a_saved_embedder_file_with_int8_weights(tiny, tmp_path):
    saved = str(tmp_path / "minilm_like.keras")
    tiny.save(saved)
    # In a fresh process, as a user runs it: nothing has registered the model's class yet.
    proc = subprocess.run(
        [sys.executable, "-m", "keras_bert", "export", "--checkpoint", saved, "--output_dir",
         str(tmp_path / "out"), "--format", "litert", "--quantize", "dynamic_int8",
         "--max_seq_length", "8", "--quiet"],
        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    path = str(tmp_path / "out" / "minilm_like" / "1")  # named after the file
    assert f"Exported embedding to {path}" in proc.stdout
    model = LiteRTModel(path)
    assert model.card["max_seq_length"] == 8 and model.card["quantize"] == "dynamic_int8"
    short = keras_bert.BertTextEmbedder.from_preset(saved, sequence_length=8)
    got = model.serve_text(text=TEXTS)["embedding"]
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1.0, atol=1e-5)
    assert _cosine(got, short.encode(TEXTS)).min() > 0.98
    code, out = _export("--checkpoint", saved, "--output_dir", str(tmp_path / "out"),
                        "--format", "litert", "--vocab_file", VOCAB)
    assert code == 2 and "--vocab_file is for encoder checkpoints" in out
    assert sorted(os.listdir(tmp_path / "out" / "minilm_like")) == ["1"]


def test_the_command_refuses_a_saved_model_without_a_preprocessor(tmp_path):
    encoder = keras_bert.BertEncoder(tiny_config(50))
    saved = str(tmp_path / "bare.keras")
    keras_bert.BertTextEmbedder(encoder).save(saved)
    code, out = _export("--checkpoint", saved, "--output_dir", str(tmp_path / "out"),
                        "--format", "litert")
    assert code == 2 and "without a preprocessor" in out, out
    assert not os.path.exists(tmp_path / "out" / "bare")


@pytest.fixture(scope="module")
def minilm():
    refs = np.load(REFS)
    embedder = keras_bert.BertTextEmbedder.from_preset(minilm_path())
    return embedder, refs, [str(s) for s in refs["sentences"]]


@pytest.mark.slow
def test_minilm_litert_equals_sentence_transformers_and_int8_stays_close(minilm, tmp_path):
    embedder, refs, sentences = minilm
    got = {}
    for quantize in ("none", "dynamic_int8"):
        path = embedder.export(str(tmp_path / quantize), format="litert", quantize=quantize)
        got[quantize] = LiteRTModel(path).serve_text(text=sentences)["embedding"]
    assert np.abs(got["none"] - refs["mean"]).max() < TOLERANCE  # 3.1e-7 measured
    # int8 weights: 0.9916 at least (mean 0.998) measured on these 40 sentences.
    assert _cosine(got["dynamic_int8"], got["none"]).min() >= 0.99


@pytest.mark.slow
def test_minilm_onnx_equals_sentence_transformers(minilm, tmp_path):
    ort = _onnx()
    embedder, refs, sentences = minilm
    path = embedder.export(str(tmp_path / "onnx"), format="onnx")
    card = json.load(open(os.path.join(path, "assets.extra", "keras_bert.json")))
    assert card["kind"] == "embedding" and card["format"] == "onnx"
    session = ort.InferenceSession(os.path.join(path, "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    features = embedder.preprocessor.features(sentences).inputs
    (got,) = session.run(["embedding"], {k: v.astype(np.int32) for k, v in features.items()})
    assert np.abs(got - refs["mean"]).max() < TOLERANCE  # 2.5e-7 measured

