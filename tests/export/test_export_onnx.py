"""keras_bert.export.onnx: the id signature (`serving_default`) as an ONNX model.

The references are independent of the export code: the Keras models' own outputs
(`predict_on_batch`) on random ids, label names picked from their logits in numpy, and
for the classifier the SavedModel's `serving_default`. Every model.onnx is also run in a
fresh process where neither keras_bert nor tensorflow can be imported. Models are tiny
(2 layers, H=32) with random weights. Skipped without tf2onnx and onnxruntime (the
`onnx` extra).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("tf2onnx", reason="the onnx extra: pip install 'keras_bert[onnx]'")
ort = pytest.importorskip("onnxruntime", reason="the onnx extra: pip install "
                                                "'keras_bert[onnx]'")

import tensorflow as tf  # noqa: E402
from conftest import REPO  # noqa: E402
from export_support import keras_outputs  # noqa: E402

from keras_bert import BertConfig, BertEncoder  # noqa: E402
from keras_bert.core.errors import ArgumentError, OutputExistsError  # noqa: E402
from keras_bert.core.input_files import file_sha256  # noqa: E402
from keras_bert.export import export_saved_model  # noqa: E402
from keras_bert.export import onnx as onnx_export  # noqa: E402
from keras_bert.export.source import ExportSource  # noqa: E402
from keras_bert.tasks.export_sources import serving_class  # noqa: E402
from keras_bert.tasks.registry import get_task  # noqa: E402
from keras_bert.text.tokenizer import BertTokenizer, VocabularyWarning  # noqa: E402

VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
SEQ = 24
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
# kind -> (task, task config, its ModelServing's fields)
TASKS = {
    "classifier": ("mrpc", {"task": "mrpc", "labels": ["0", "1"]},
                   {"label_names": ("0", "1"), "pair": True}),
    "regression": ("stsb", {"task": "stsb", "labels": None}, {"pair": True}),
    "span_labeler": ("squad1", {"task": "squad1"}, {"pair": True}),
    "tagger": ("ner", {"task": "ner", "labels": NER_LABELS},
               {"label_names": tuple(NER_LABELS)}),
    "multiple_choice": ("swag", {"task": "swag"}, {"num_choices": 4}),
}
KINDS = ["encoder", *TASKS]


@pytest.fixture(autouse=True)
def _seed_and_policy():
    """Replaces conftest's reseeding: `tf.random.set_seed` clears TensorFlow's kernel
    cache. These tests draw no random numbers of their own through TensorFlow."""
    yield


def _tokenizer():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        return BertTokenizer(VOCAB, lower_case=False)


def _source(kind):
    tok = _tokenizer()
    encoder = BertEncoder(BertConfig.from_preset(
        "tiny", vocab_size=tok.vocab_size, max_position_embeddings=64, hidden_size=32,
        num_heads=4, intermediate_size=64))
    if kind == "encoder":
        return ExportSource(encoder, serving_class(kind)(), tok, VOCAB, SEQ)
    name, config, fields = TASKS[kind]
    task = get_task(name)
    task.restore(config)
    return ExportSource(task.build_model(encoder), serving_class(kind)(**fields), tok, VOCAB,
                        SEQ, task=name)


def _ids(shape, seed):
    """Random ids with rows of different lengths (padding masked) and two segments."""
    rng = np.random.default_rng(seed)
    seq = shape[-1]
    lengths = rng.integers(2, seq + 1, shape[:-1])
    lengths.flat[0] = seq
    mask = (np.arange(seq) < lengths[..., None]).astype(np.int32)
    ids = rng.integers(5, 400, shape).astype(np.int32) * mask
    types = ((np.arange(seq) >= lengths[..., None] // 2) * mask).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def _shapes(kind):
    return [(1, 4, 5), (3, 4, 11)] if kind == "multiple_choice" else [(1, 5), (3, 11)]


def _expected(kind, model, inputs):
    """The Keras model's outputs as serving_default names them; labels picked in numpy."""
    out = {k: np.asarray(v) for k, v in keras_outputs(kind, model, inputs).items()}
    if kind == "classifier":
        out["label"] = np.array(["0", "1"])[np.argmax(out["logits"], axis=-1)]
    elif kind == "multiple_choice":  # the index of the best ending
        out["probabilities"] = tf.nn.softmax(out["logits"]).numpy()
        out["label"] = np.argmax(out["logits"], axis=-1)
    elif kind == "tagger":
        labels = np.array(NER_LABELS)[np.argmax(out["logits"], axis=-1)]
        out["labels"] = np.where(inputs["input_mask"] > 0, labels, "")
    return out


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """One ONNX export of each family, with the Keras model it came from."""
    import keras

    keras.utils.set_random_seed(7)
    out = tmp_path_factory.mktemp("onnx") / "models"
    os.makedirs(out / "classifier" / "1")  # an earlier version: the export is 2
    (out / "classifier" / "1" / "model.onnx").write_bytes(b"")
    made = {}
    for kind in KINDS:
        source = _source(kind)
        path, card = onnx_export.export_onnx(source, out, kind)
        made[kind] = (source, path, card)
    return made


def _run(path, inputs):
    session = ort.InferenceSession(os.path.join(path, "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, inputs)))


def _assert_equal(got, expected, what):
    assert sorted(got) == sorted(expected), what
    for name, value in expected.items():
        value = np.asarray(value)
        if value.dtype.kind in "OSU":
            assert got[name].astype(str).tolist() == value.astype(str).tolist(), (
                f"{what} {name}")
        else:
            np.testing.assert_allclose(got[name], value, atol=1e-4, rtol=0,
                                       err_msg=f"{what} {name}")


@pytest.mark.parametrize("kind", KINDS)
def test_onnx_equals_keras(exports, kind):
    """Every output of serving_default, under its name, at two batch and sequence sizes
    (the axes are dynamic); label names as the Keras logits pick them."""
    source, path, _ = exports[kind]
    for seed, shape in enumerate(_shapes(kind)):
        ids = _ids(shape, seed)
        expected = _expected(kind, source.model, ids)
        _assert_equal(_run(path, ids), expected, f"{kind} {shape}")


def test_onnx_equals_saved_model(exports, tmp_path):
    """The classifier's ONNX model and SavedModel serve the same outputs."""
    source, path, _ = exports["classifier"]
    saved, _ = export_saved_model(source, tmp_path, "classifier", warmup=False, text=False)
    ids = _ids((4, 13), 5)
    signature = tf.saved_model.load(saved).signatures["serving_default"]
    expected = {k: v.numpy() for k, v in signature(**{k: tf.constant(v)
                                                      for k, v in ids.items()}).items()}
    _assert_equal(_run(path, ids), expected, "classifier vs SavedModel")


def test_ids_past_the_vocabulary_fail_in_onnx_runtime(exports):
    """tf2onnx drops the SavedModel's input checks (as the module says); an id past the
    vocabulary still fails, in the embedding's Gather."""
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

    _, path, _ = exports["classifier"]
    ids = _ids((1, 5), 0)
    ids["input_word_ids"][0, 1] = _tokenizer().vocab_size
    with pytest.raises(InvalidArgument, match="out of data bounds"):
        _run(path, ids)


def test_file_layout_versions_and_card(exports):
    """OUTPUT_DIR/NAME/VERSION/model.onnx with the vocabulary and the model card (also in
    the file's metadata); versions continue after the highest one there."""
    source, path, card = exports["classifier"]
    assert os.path.basename(path) == "2"
    assert sorted(os.listdir(path)) == ["assets", "assets.extra", "model.onnx"]
    with open(os.path.join(path, "assets.extra", "keras_bert.json")) as f:
        assert json.load(f) == card
    assert card["format"] == "onnx" and card["version"] == 2 and card["kind"] == "classifier"
    assert card["label_names"] == ["0", "1"] and card["text_inputs"] == []
    assert card["vocab_sha256"] == file_sha256(os.path.join(path, "assets", "vocab.txt"))
    assert card["signatures"]["serving_default"]["inputs"]["input_word_ids"] == {
        "dtype": "int32", "shape": [None, None]}
    assert set(card["signatures"]["serving_default"]["outputs"]) == {
        "label", "logits", "probabilities"}
    session = ort.InferenceSession(os.path.join(path, "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    assert json.loads(session.get_modelmeta().custom_metadata_map["keras_bert.json"]) == card
    assert {i.name: i.shape for i in session.get_inputs()} == {
        n: ["batch", "seq"] for n in ("input_word_ids", "input_mask", "input_type_ids")}
    assert all(i.type == "tensor(int32)" for i in session.get_inputs())
    choice = exports["multiple_choice"][1]
    choice_session = ort.InferenceSession(os.path.join(choice, "model.onnx"),
                                          providers=["CPUExecutionProvider"])
    assert choice_session.get_inputs()[0].shape == ["batch", "choices", "seq"]


def _cli_takes_onnx() -> bool:
    import argparse

    from keras_bert.pipelines import export as pipeline

    parser = argparse.ArgumentParser()
    pipeline.add_arguments(parser)
    try:
        parser.parse_args(["--checkpoint", "x", "--format", "onnx"])
    except SystemExit:
        return False
    return True


def test_cli_export_format_onnx(tmp_path, capsys):
    """`keras-bert export --format onnx` writes NAME/1/model.onnx from an encoder
    checkpoint, serving the Keras encoder's outputs."""
    if not _cli_takes_onnx():
        pytest.skip("keras-bert export has no --format onnx yet")
    import shutil

    from keras_bert.checkpoints import save_encoder
    from keras_bert.cli import main

    source = _source("encoder")
    save_encoder(source.model, tmp_path / "ckpt")
    shutil.copyfile(VOCAB, tmp_path / "ckpt" / "vocab.txt")
    code = main(["export", "--checkpoint", str(tmp_path / "ckpt"), "--format", "onnx",
                 "--output_dir", str(tmp_path / "out"), "--name", "enc"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.rstrip().endswith(f"to {tmp_path / 'out' / 'enc' / '1'}")
    ids = _ids((2, 9), 3)
    _assert_equal(_run(str(tmp_path / "out" / "enc" / "1"), ids),
                  _expected("encoder", source.model, ids), "keras-bert export --format onnx")


def _fake_proto():
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    return helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])


def test_failed_write_leaves_nothing(exports, tmp_path, monkeypatch):
    """An error while writing leaves no version directory and no temporary one."""
    source = exports["regression"][0]
    monkeypatch.setattr(onnx_export, "onnx_model", lambda module, opset: _fake_proto())

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(onnx_export.shutil, "copyfile", fail)
    with pytest.raises(OSError, match="disk full"):
        onnx_export.export_onnx(source, tmp_path, "m")
    assert os.listdir(tmp_path) == []  # nor the model directory the export created


def test_version_directory_is_never_overwritten(exports, tmp_path, monkeypatch):
    source = exports["regression"][0]
    monkeypatch.setattr(onnx_export, "onnx_model", lambda module, opset: _fake_proto())
    monkeypatch.setattr("keras_bert.export.versions.next_version", lambda model_dir: 1)
    os.makedirs(tmp_path / "m" / "1")
    (tmp_path / "m" / "1" / "model.onnx").write_bytes(b"old")
    with pytest.raises(OutputExistsError):
        onnx_export.export_onnx(source, tmp_path, "m")
    assert (tmp_path / "m" / "1" / "model.onnx").read_bytes() == b"old"


def test_bfloat16_and_bad_names_are_refused(exports, tmp_path):
    source = exports["regression"][0]
    with pytest.raises(ArgumentError, match="float32 only") as info:
        onnx_export.export_onnx(source, tmp_path, "m", precision="mixed_bfloat16")
    assert info.value.field == "precision"
    with pytest.raises(ArgumentError) as info:
        onnx_export.export_onnx(source, tmp_path, "12")
    assert info.value.field == "name"
    assert not os.path.exists(tmp_path / "m")


def test_missing_converter_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tf2onnx", None)  # import fails as if not installed
    with pytest.raises(ArgumentError, match=r"keras_bert\[onnx\]") as info:
        onnx_export.check_onnx_converter()
    assert info.value.field == "format"


def test_converter_is_imported_lazily():
    """No module-level import of the converter or runtimes: `import keras_bert` works
    without the extra."""
    tree = ast.parse(open(onnx_export.__file__, encoding="utf-8").read())
    top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    names = {alias.name for node in top for alias in node.names} | {
        node.module for node in top if isinstance(node, ast.ImportFrom)}
    assert not {n for n in names if n and n.split(".")[0] in
                ("onnx", "tf2onnx", "onnxruntime")}


CLEAN_ONNX = r'''
import importlib.abc, json, sys

class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("keras_bert", "tensorflow", "keras"):
            raise ImportError(name + " is not available in this process")

sys.meta_path.insert(0, _Blocked())
sys.path = [p for p in sys.path if p and p != sys.argv[3] and not p.startswith(sys.argv[3] + "/")]
import numpy as np
import onnxruntime as ort

jobs = json.load(open(sys.argv[1]))
arrays = np.load(sys.argv[1] + ".npz")
results = {}
for kind, path in jobs.items():
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: arrays[kind + "|" + i.name] for i in session.get_inputs()}
    for output, value in zip([o.name for o in session.get_outputs()], session.run(None, feed)):
        results[kind + "|" + output] = value
np.savez(sys.argv[2], **results)
print(json.dumps({"modules": sorted(m for m in sys.modules
                                    if m.split(".")[0] in ("keras_bert", "tensorflow"))}))
'''


def test_clean_process_without_tensorflow_or_keras_bert(exports, tmp_path):
    """Every model.onnx loads and runs in a fresh process with onnxruntime and numpy
    only, giving the Keras models' outputs."""
    jobs, arrays, expected = {}, {}, {}
    for kind, (source, path, _) in exports.items():
        ids = _ids(_shapes(kind)[1], 11)
        jobs[kind] = os.path.join(path, "model.onnx")
        arrays.update({f"{kind}|{k}": v for k, v in ids.items()})
        expected[kind] = _expected(kind, source.model, ids)
    job_file = tmp_path / "jobs.json"
    job_file.write_text(json.dumps(jobs))
    np.savez(str(job_file) + ".npz", **arrays)
    (tmp_path / "clean.py").write_text(CLEAN_ONNX)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-I", str(tmp_path / "clean.py"), str(job_file),
                           str(tmp_path / "out.npz"), REPO], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"modules": []}
    with np.load(tmp_path / "out.npz", allow_pickle=True) as out:
        got = dict(out)
    for kind, outputs in expected.items():
        _assert_equal({k.split("|")[1]: v for k, v in got.items() if k.startswith(kind + "|")},
                      outputs, f"{kind} in a clean process")
