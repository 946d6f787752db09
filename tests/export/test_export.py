"""`keras-bert export` and keras_bert.export: SavedModels for TF Serving and TF Hub.

The references are independent of the export code: the Keras models' own outputs on
ids made by the package's tokenizer and packer (what fine-tuning feeds), and Google's
FullTokenizer ids in tests/fixtures/tokenization. The SavedModels are checked in a fresh
process where keras_bert cannot be imported, through `saved_model_cli`, through their
warmup file, under concurrent load and through `hub.KerasLayer`. Models are tiny
(2 layers, H=32) with random weights: these test the plumbing and numerics, not
accuracy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from clean_process import run_clean_process
from conftest import minilm_path
from export_support import (
    VOCAB,
    finetuned_run,
    keras_outputs,
    random_ids,
    rich_tokenizer,
    tiny_config,
)

from keras_bert import BertEncoder
from keras_bert.checkpoints import FINETUNE_CONFIG, save_encoder
from keras_bert.cli import main
from keras_bert.text.packing import pack_inputs
from keras_bert.text.tokenizer import BertTokenizer

SEQ = 24
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]

TEXTS = [
    "Hello, World! This is BERT.",
    "Café naïve résumé — ÅNGSTRÖM Straße",
    "北京欢迎你。東京タワー",
    "don't stop-believing... (really?!)",
    "",
    "   \t\n ",
    "zero\u200bwidth\u00adsoft nul\x00 ctrl\x07",
    "emoji 😀 and ΣΊΣΥΦΟΣ",
    " ".join(["long"] * 300) + " tail words",
    "MiXeD CaSe WoRdS 12345",
]
TEXT_BYTES = [t.encode("utf-8") for t in TEXTS] + [b"bad \xff\xfe utf8 \xc3(", b"\xe2\x82"]
PAIRS = [TEXT_BYTES[(i + 3) % len(TEXT_BYTES)] for i in range(len(TEXT_BYTES))]
QUESTIONS = [b"Who wrote it?", b"Where is the tower?", b"", b"What " * 40]
PASSAGES = [b"It was written by Jane Austen in 1813.",
            "Die Türme stehen in 東京 and Paris, über dem Fluss.".encode(),
            b"Short passage.", b""]




def _export(capsys, checkpoint, output_dir, name, *extra):
    code = main(["export", "--checkpoint", str(checkpoint), "--output_dir", str(output_dir),
                 "--name", name, *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    card_text, _, last = out.rpartition("}\n")
    assert last.startswith("Exported ")
    path = last.split(" to ", 1)[1].strip()
    return path, json.loads(card_text + "}")


@pytest.fixture(scope="module")
def capsys_module():
    """Module-scoped stand-in for capsys (exports are shared by the tests)."""
    import io
    from contextlib import redirect_stdout

    class _Capture:
        def __init__(self):
            self.buffer = io.StringIO()

        def readouterr(self):
            value = self.buffer.getvalue()
            self.buffer.seek(0)
            self.buffer.truncate()
            return type("Captured", (), {"out": value})()

    capture = _Capture()
    with redirect_stdout(capture.buffer):
        yield capture


@pytest.fixture(scope="module")
def exports(tmp_path_factory, capsys_module):
    """One export of each kind, with the in-memory Keras models they came from."""
    import keras

    keras.utils.set_random_seed(7)
    root = tmp_path_factory.mktemp("export")
    out = root / "saved_models"
    size = rich_tokenizer(False).vocab_size
    made = {}

    encoder = BertEncoder(tiny_config(size))
    checkpoint = root / "tiny_uncased"
    save_encoder(encoder, checkpoint)
    shutil.copyfile(VOCAB, checkpoint / "vocab.txt")
    made["encoder"] = (encoder, *_export(capsys_module, checkpoint, out, "encoder",
                                         "--max_seq_length", str(SEQ)))

    runs = {"classifier": ("mrpc", {"task": "mrpc", "labels": ["0", "1"]}, {}),
            "regression": ("stsb", {"task": "stsb", "labels": None}, {}),
            "span_labeler": ("squad1", {"task": "squad1"},
                             {"max_query_length": 8, "max_answer_length": 5}),
            "tagger": ("ner", {"task": "ner", "labels": NER_LABELS}, {})}
    for kind, (task, config, options) in runs.items():
        model = finetuned_run(VOCAB, SEQ, root / f"run_{task}", task, BertEncoder(tiny_config(size)), config,
                               **options)
        made[kind] = (model, *_export(capsys_module, root / f"run_{task}", out, kind))
    return made


def _reference_ids(segments, lower_case, seq=SEQ, truncation="longest_first"):
    """Packed ids from the package's tokenizer and packer, cut to the longest input."""
    tok = rich_tokenizer(lower_case)
    packed = pack_inputs([tok.tokenize(tf.constant(s)) for s in segments], seq,
                         cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id,
                         truncation=truncation)
    longest = int(tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1)))
    return {k: v.numpy()[:, :longest] for k, v in packed.items()}


def _text_inputs(kind):
    if kind == "span_labeler":
        return {"text": QUESTIONS, "text_pair": PASSAGES}
    if kind in ("classifier", "regression"):  # MRPC and STS-B are pair tasks
        return {"text": TEXT_BYTES, "text_pair": PAIRS}
    return {"text": TEXT_BYTES}


def _squad_reference(model, lower_case, version_2=False, threshold=0.0):
    """`keras-bert predict`'s answers to QUESTIONS about PASSAGES (its windows and
    run_squad decoding in numpy, on the Keras model's logits)."""
    from keras_bert.tasks.base import FeatureSettings
    from keras_bert.tasks.squad import SquadExample, decode_squad, squad_features

    examples = [SquadExample(f"q{i}", q.decode("utf-8"), p.decode("utf-8"))
                for i, (q, p) in enumerate(zip(QUESTIONS, PASSAGES))]
    settings = FeatureSettings(max_seq_length=SEQ, max_query_length=8, max_answer_length=5)
    features = squad_features(examples, rich_tokenizer(lower_case), settings)
    outputs = model.predict(features.inputs, verbose=0)
    return decode_squad(examples, features, outputs, settings, version_2=version_2,
                        null_score_diff_threshold=threshold)


def _text_reference(kind, model, lower_case):
    inputs = _text_inputs(kind)
    if kind == "span_labeler":
        answers = [p.text for p in _squad_reference(model, lower_case)]
        return None, {"answer": np.array([a.encode("utf-8") for a in answers], dtype=object)}
    ids = _reference_ids([inputs[k] for k in sorted(inputs)], lower_case)
    return ids, {k: np.asarray(v) for k, v in keras_outputs(kind, model, ids).items()}


# --- a process without keras_bert ---------------------------------------------------------


@pytest.fixture(scope="module")
def clean_results(exports, tmp_path_factory):
    """Runs every signature of every export (and the preprocessor's tokenize on Google's
    reference texts) in a fresh process that cannot import keras_bert."""
    from tokenization_refs import INPUTS

    root = tmp_path_factory.mktemp("clean")
    jobs, arrays = {}, {}
    for kind, (_, path, _) in exports.items():
        ids = random_ids()
        jobs[f"{kind}|ids"] = (path, "serving_default", sorted(ids))
        arrays.update({f"{kind}|ids|{k}": v for k, v in ids.items()})
        text = _text_inputs(kind)
        jobs[f"{kind}|text"] = (path, "serve_text", sorted(text))
        arrays.update({f"{kind}|text|{k}": np.array(v, dtype=object) for k, v in text.items()})
    jobs["pre|tokenize"] = (os.path.join(exports["encoder"][1], "preprocessor"), "tokenize",
                            ["text"])
    arrays["pre|tokenize|text"] = np.array(INPUTS, dtype=object)
    return run_clean_process(root, jobs, arrays)


def test_clean_process_cannot_import_keras_bert(clean_results):
    report, _ = clean_results
    assert report == {"blocked": True, "keras_bert_modules": []}


@pytest.mark.parametrize("kind", ["encoder", "classifier", "regression", "span_labeler",
                                  "tagger"])
def test_clean_process_ids_signature_equals_keras(exports, clean_results, kind):
    _, got = clean_results
    model = exports[kind][0]
    expected = keras_outputs(kind, model, random_ids())
    for name, value in expected.items():
        np.testing.assert_allclose(got[f"{kind}|ids|{name}"], value, atol=1e-5, rtol=0,
                                   err_msg=f"{kind} serving_default {name}")
    if kind == "classifier":
        labels = np.array(["0", "1"])[np.argmax(expected["logits"], axis=-1)]
        assert got["classifier|ids|label"].astype(str).tolist() == labels.tolist()
    if kind == "tagger":
        mask = random_ids()["input_mask"]
        tags = np.array(NER_LABELS)[np.argmax(expected["logits"], axis=-1)]
        assert got["tagger|ids|labels"].astype(str).tolist() == np.where(mask > 0, tags,
                                                                         "").tolist()


@pytest.mark.parametrize("kind", ["encoder", "classifier", "regression", "span_labeler"])
def test_clean_process_text_signature_equals_keras_on_package_ids(exports, clean_results,
                                                                  kind):
    _, got = clean_results
    model, _, card = exports[kind]
    ids, expected = _text_reference(kind, model, card["lower_case"])
    if kind == "span_labeler":  # answers: test_span_answer_is_predicts_answer
        return
    for name, value in expected.items():
        np.testing.assert_allclose(got[f"{kind}|text|{name}"], value, atol=1e-5, rtol=0,
                                   err_msg=f"{kind} serve_text {name}")
    if kind == "encoder":  # the ids themselves: the mask shows lengths and truncation
        np.testing.assert_array_equal(got["encoder|text|input_mask"], ids["input_mask"])
        assert ids["input_mask"].sum(axis=1).max() == SEQ  # the long text was cut
    if kind == "classifier":
        labels = np.array(["0", "1"])[np.argmax(expected["logits"], axis=-1)]
        assert got["classifier|text|label"].astype(str).tolist() == labels.tolist()


def test_clean_process_tagger_text_equals_in_process(exports, clean_results):
    """The tagger's serve_text (a label per word, checked against `keras-bert predict`
    in tests/export/test_export_tagging.py) gives the same without keras_bert."""
    _, got = clean_results
    here = tf.saved_model.load(exports["tagger"][1]).signatures["serve_text"](
        text=tf.constant(TEXT_BYTES))
    for name, value in here.items():
        np.testing.assert_array_equal(got[f"tagger|text|{name}"], value.numpy(), err_msg=name)
    assert got["tagger|text|num_words"].tolist() == [
        len(t.decode("utf-8", "replace").split()) for t in TEXT_BYTES]


def test_clean_process_preprocessor_tokenize_equals_google(clean_results):
    """The exported in-graph tokenizer gives Google FullTokenizer's ids (uncased)."""
    from tokenization_refs import INPUTS, comparable, ragged_ref

    _, got = clean_results
    values, splits = got["pre|tokenize|values"], got["pre|tokenize|splits"]
    ids = [values[a:b].tolist() for a, b in zip(splits[:-1], splits[1:])]
    expected = ragged_ref("rich_uncased")
    wrong = [i for i in range(len(INPUTS)) if ids[i] != expected[i] and comparable(i)]
    assert not wrong and len(ids) == len(INPUTS) and sum(map(len, ids)) > 50_000


def test_span_answer_is_predicts_answer(exports, clean_results):
    """`answer` from serve_text (SQuAD v1.1 model), in a process without keras_bert: the
    answer `keras-bert predict` decodes (its windows and run_squad's n-best rules in
    numpy), "" for an empty question or passage; the character offsets locate it."""
    _, got = clean_results
    model, _, card = exports["span_labeler"]
    expected = [p.text for p in _squad_reference(model, card["lower_case"])]
    assert got["span_labeler|text|answer"].astype(object).tolist() == [
        a.encode("utf-8") for a in expected]
    assert any(expected), "no answer at all: the check would be empty"
    for b, answer in enumerate(expected):
        start, end = (int(got[f"span_labeler|text|answer_{k}"][b]) for k in ("start", "end"))
        passage = PASSAGES[b].decode("utf-8")
        assert (passage[start:end], bool(answer)) == (answer, start >= 0)


def test_squad2_answer_is_empty_when_the_null_score_wins(exports, tmp_path, capsys):
    """SQuAD v2.0: "" when the smallest [CLS] score - best span score > the run's
    null_score_diff_threshold; a threshold between the examples' margins gives answers
    to some and none to the others, as `keras-bert predict` decodes them."""
    import keras

    keras.utils.set_random_seed(3)
    run = tmp_path / "run_squad2"
    model = finetuned_run(VOCAB, SEQ, run, "squad2", BertEncoder(tiny_config(rich_tokenizer(False).vocab_size)),
                           {"task": "squad2", "null_score_diff_threshold": 0.0},
                           max_query_length=8, max_answer_length=5)
    # The last passage is empty (never an answer) and the third question too.
    margins = [p.null_odds for p in _squad_reference(model, False, version_2=True)][:2]
    assert abs(margins[0] - margins[1]) > 1e-3, margins
    threshold = sum(margins) / 2
    with open(run / FINETUNE_CONFIG) as f:
        record = json.load(f)
    record["task_config"]["null_score_diff_threshold"] = threshold
    with open(run / FINETUNE_CONFIG, "w") as f:
        json.dump(record, f)
    path, card = _export(capsys, run, tmp_path / "out", "squad2", "--nowarmup")
    out = tf.saved_model.load(path).signatures["serve_text"](
        text=tf.constant(QUESTIONS), text_pair=tf.constant(PASSAGES))
    expected = [p.text for p in _squad_reference(model, False, True, threshold)]
    assert [a.decode() for a in out["answer"].numpy()] == expected
    assert out["has_answer"].numpy().tolist() == [bool(a) for a in expected]
    assert [bool(a) for a in expected[:2]] == [m <= threshold for m in margins]


# --- the command: layout, model card, bad input -----------------------------------------


def test_tf_serving_layout_and_model_card(exports):
    model, path, card = exports["classifier"]
    assert os.path.basename(path) == "1" and os.path.basename(os.path.dirname(path)) == (
        "classifier")
    assert {"saved_model.pb", "variables", "assets", "assets.extra"} <= set(os.listdir(path))
    with open(os.path.join(path, "assets.extra", "keras_bert.json")) as f:
        assert json.load(f) == card  # the printed card is the stored one
    import hashlib

    with open(VOCAB, "rb") as f:
        assert card["vocab_sha256"] == hashlib.sha256(f.read()).hexdigest()
    assert card["config"] == model.encoder.config.to_dict()
    assert card["label_names"] == ["0", "1"] and card["lower_case"] is False
    assert card["max_seq_length"] == SEQ and card["precision"] == "float32"
    assert card["task"] == "mrpc" and card["kind"] == "classifier"
    assert card["source_checkpoint"].endswith("run_mrpc") and card["export_time"]
    assert set(card["signatures"]) == {"serving_default", "serve_text"}
    ids_spec = {"dtype": "int32", "shape": [None, None]}
    assert card["signatures"]["serving_default"]["inputs"] == {
        "input_mask": ids_spec, "input_type_ids": ids_spec, "input_word_ids": ids_spec}
    text_spec = {"dtype": "string", "shape": [None]}
    any_text = {"dtype": "string", "shape": None}  # any shape; rank 1 checked in the graph
    assert card["signatures"]["serve_text"]["inputs"] == {"text": any_text,
                                                          "text_pair": any_text}
    assert card["signatures"]["serve_text"]["outputs"]["label"] == text_spec
    assert "longer than max_seq_length" in card["text_truncation"]
    assert "max_query_length" in exports["span_labeler"][2]["text_truncation"]
    assert exports["encoder"][2]["lower_case"] is True
    assert exports["tagger"][2]["label_names"] == NER_LABELS
    # The vocab travels with the SavedModel, which is relocatable.
    with open(os.path.join(path, "assets", "vocab.txt"), "rb") as a, open(VOCAB, "rb") as b:
        assert a.read() == b.read()


# The tensorflow-text ops serve_text may use by default (registered by stock TF Serving
# 2.12 and later); everything else must be TensorFlow core.
SERVE_TEXT_TEXT_OPS = {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"}


@pytest.mark.parametrize("kind", ["encoder", "classifier", "regression", "span_labeler",
                                  "tagger"])
def test_exported_graph_ops_are_core_or_listed_in_the_card(exports, kind):
    """Every op in the written SavedModel is a TensorFlow core op (`tf.raw_ops`) or one of
    the two tokenizer ops, only in serve_text; the model card lists exactly those, with
    the versions that register them."""
    from keras_bert.export.ops import all_saved_model_ops, core_op_names, saved_model_ops

    _, path, card = exports[kind]
    core = core_op_names()
    outside = all_saved_model_ops(path) - core
    if kind == "encoder":  # and its TF Hub-style preprocessor
        outside |= all_saved_model_ops(os.path.join(path, "preprocessor")) - core
    assert outside <= SERVE_TEXT_TEXT_OPS, outside
    per_signature = saved_model_ops(path)
    assert per_signature["serving_default"] <= core
    listed = card["ops"]["outside_tensorflow_core"]
    assert listed["serving_default"] == []
    assert {e["op"] for e in listed["serve_text"]} == per_signature["serve_text"] - core
    assert all(e["package"] == "tensorflow-text" and e["first_tf_serving"]
               for e in listed["serve_text"])
    assert card["ops"]["oldest_stock_tf_serving"] == "2.12.0"
    assert "RoundRobinTrim" not in str(all_saved_model_ops(path))


def test_serving_compatible_export_has_only_core_ops_and_the_same_answers(exports, tmp_path,
                                                                        capsys):
    """`--serving_compatible`: no op outside TensorFlow core anywhere in the SavedModel
    (what any stock TF Serving registers), the card says so, and serve_text gives the
    default export's outputs (odd text included: invalid UTF-8, accents, CJK)."""
    from keras_bert.export.ops import all_saved_model_ops, core_op_names

    _, default_path, card = exports["classifier"]
    path, compatible = _export(capsys, card["source_checkpoint"], tmp_path / "out", "mrpc",
                               "--serving_compatible", "--nowarmup")
    assert all_saved_model_ops(path) <= core_op_names()
    assert compatible["serving_compatible"] is True
    assert compatible["ops"]["tensorflow_core_only"] is True
    assert compatible["ops"]["outside_tensorflow_core"]["serve_text"] == []
    inputs = {k: tf.constant(v) for k, v in _text_inputs("classifier").items()}
    got = tf.saved_model.load(path).signatures["serve_text"](**inputs)
    want = tf.saved_model.load(default_path).signatures["serve_text"](**inputs)
    np.testing.assert_allclose(got["logits"].numpy(), want["logits"].numpy(), atol=1e-6)
    assert got["label"].numpy().tolist() == want["label"].numpy().tolist()


def test_new_version_per_export_never_overwrites(exports, tmp_path, capsys):
    _, path, card = exports["regression"]
    target = tmp_path / "models"
    shutil.copytree(os.path.dirname(path), target / "stsb")
    before = {n: os.path.getmtime(target / "stsb" / "1" / n) for n in ("saved_model.pb",)}
    os.makedirs(target / "stsb" / "7")  # an unrelated newer version directory
    new_path, new_card = _export(capsys, card["source_checkpoint"], target, "stsb",
                                 "--nowarmup")
    assert new_path == str(target / "stsb" / "8") and new_card["version"] == 8
    assert sorted(os.listdir(target / "stsb")) == ["1", "7", "8"]  # no temporaries left
    assert os.path.getmtime(target / "stsb" / "1" / "saved_model.pb") == before[
        "saved_model.pb"]
    assert not os.path.exists(os.path.join(new_path, "assets.extra", "tf_serving_warmup_"
                                           "requests"))


@pytest.mark.parametrize("case", ["missing_checkpoint", "not_a_checkpoint", "output_is_file",
                                  "bad_precision", "bad_name", "long_max_seq_length"])
def test_cli_bad_input_exits_2_with_one_line_and_writes_nothing(exports, tmp_path, capsys,
                                                                case):
    run_dir = exports["classifier"][2]["source_checkpoint"]
    out = tmp_path / "out"
    args = ["export", "--checkpoint", run_dir, "--output_dir", str(out)]
    expected = {"missing_checkpoint": "does-not-exist", "not_a_checkpoint": "empty",
                "output_is_file": "is a file", "bad_precision": "precision",
                "bad_name": "name", "long_max_seq_length": "max_seq_length"}[case]
    if case == "missing_checkpoint":
        args[2] = str(tmp_path / "does-not-exist")
    elif case == "not_a_checkpoint":
        (tmp_path / "empty").mkdir()
        args[2] = str(tmp_path / "empty")
    elif case == "output_is_file":
        out.write_text("x")
    elif case == "bad_precision":
        args += ["--precision", "float16"]
    elif case == "bad_name":
        args += ["--name", "123"]
    else:
        args += ["--max_seq_length", "65"]
    try:
        code = main(args)
    except SystemExit as e:  # argparse's own errors (the --precision choices)
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) <= 2 and expected in err[-1], err  # argparse adds a usage line
    if case != "output_is_file":
        assert not out.exists() or os.listdir(out) == []


def test_cli_refuses_a_vocab_of_the_right_size_but_another_model(exports, tmp_path, capsys):
    # Same size, other tokens: the ids would be silently wrong (issue 13's case 2).
    checkpoint = exports["encoder"][2]["source_checkpoint"]
    with open(os.path.join(checkpoint, "vocab.txt"), encoding="utf-8") as f:
        tokens = f.read().splitlines()
    last, before = len(tokens) - 1, len(tokens) - 2
    tokens[last], tokens[before] = tokens[before], tokens[last]
    foreign = tmp_path / "other_vocab.txt"
    foreign.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    code = main(["export", "--checkpoint", checkpoint, "--output_dir", str(out),
                 "--vocab_file", str(foreign)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "other_vocab.txt" in err[0], err
    assert not out.exists() or os.listdir(out) == []


def test_without_serving_api_the_export_skips_warmup_unless_asked(exports, tmp_path, capsys,
                                                                   monkeypatch):
    # A plain `pip install keras_bert` has no tensorflow-serving-api: the default export
    # still works and says what it left out; an explicit --warmup is a usage error.
    monkeypatch.setitem(sys.modules, "tensorflow_serving.apis.prediction_log_pb2", None)
    checkpoint = exports["regression"][2]["source_checkpoint"]
    out = tmp_path / "out"
    # (The command prints warnings as one stderr line; pytest records them instead.)
    with pytest.warns(UserWarning, match="tensorflow-serving-api"):
        code = main(["export", "--checkpoint", checkpoint, "--output_dir", str(out),
                     "--name", "stsb", "--noserve_text"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert os.path.isfile(out / "stsb" / "1" / "saved_model.pb")
    assert not os.path.exists(out / "stsb" / "1" / "assets.extra" / "tf_serving_warmup_requests")
    code = main(["export", "--checkpoint", checkpoint, "--output_dir", str(out),
                 "--name", "stsb", "--warmup"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "tensorflow-serving-api" in err[0], err
    assert sorted(os.listdir(out / "stsb")) == ["1"]


# --- warmup, saved_model_cli ---------------------------------------------------------------


def test_warmup_file_parses_and_its_requests_run(exports):
    from tensorflow_serving.apis import prediction_log_pb2

    for kind in ("encoder", "classifier", "span_labeler"):
        _, path, card = exports[kind]
        loaded = tf.saved_model.load(path)
        seen = {}
        warmup = os.path.join(path, "assets.extra", "tf_serving_warmup_requests")
        for record in tf.data.TFRecordDataset(warmup):
            log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
            request = log.predict_log.request
            assert request.model_spec.name == kind
            signature = request.model_spec.signature_name
            inputs = {k: tf.constant(tf.make_ndarray(v)) for k, v in request.inputs.items()}
            outputs = loaded.signatures[signature](**inputs)
            batch = next(iter(inputs.values())).shape[0]
            assert all(v.shape[0] == batch for v in outputs.values())
            seen.setdefault(signature, set()).add(tuple(next(iter(inputs.values())).shape))
        assert set(seen) == {"serving_default", "serve_text"}
        assert all(len(shapes) >= 2 for shapes in seen.values()), seen


def _saved_model_cli(*args):
    """saved_model_cli in a process that registers tensorflow-text's ops first (what the
    TF Serving model server has built in); keras_bert is not on its path."""
    code = ("import sys, tensorflow_text; from tensorflow.python.tools import "
            "saved_model_cli; sys.argv[0] = 'saved_model_cli'; saved_model_cli.main()")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-I", "-c", code, *args], capture_output=True,
                          text=True, env=env, cwd="/", timeout=300)


def test_saved_model_cli_show_all_lists_signatures(exports):
    _, path, _ = exports["classifier"]
    exe = shutil.which("saved_model_cli")
    command = [exe] if exe else [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]
    proc = subprocess.run([*command, "show", "--dir", path, "--all"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout
    import re

    def block(name):
        match = re.search(rf"signature_def\['{name}'\]:(.*?)Method name is: (\S+)", text,
                          re.S)
        assert match, f"no signature {name} in:\n{text[:3000]}"
        assert match.group(2) == "tensorflow/serving/predict"
        return match.group(1)

    ids = block("serving_default")
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        assert re.search(rf"inputs\['{name}'\] tensor_info:\s+dtype: DT_INT32\s+"
                         r"shape: \(-1, -1\)", ids), ids
    serve_text = block("serve_text")
    for name in ("text", "text_pair"):
        assert re.search(rf"inputs\['{name}'\] tensor_info:\s+dtype: DT_STRING\s+"
                         r"shape: unknown_rank", serve_text), serve_text
    for block_text in (ids, serve_text):
        assert re.search(r"outputs\['probabilities'\] tensor_info:\s+dtype: DT_FLOAT\s+"
                         r"shape: \(-1, 2\)", block_text)
        assert re.search(r"outputs\['label'\] tensor_info:\s+dtype: DT_STRING\s+"
                         r"shape: \(-1\)", block_text)


def test_saved_model_cli_run_predicts_text(exports):
    model, path, card = exports["classifier"]
    proc = _saved_model_cli("run", "--dir", path, "--tag_set", "serve", "--signature_def",
                            "serve_text", "--input_exprs",
                            'text=["a fine film", "dull"];text_pair=["good", "bad!"]')
    assert proc.returncode == 0, proc.stderr[-3000:]
    ids = _reference_ids([[b"a fine film", b"dull"], [b"good", b"bad!"]], False)
    labels = np.argmax(np.asarray(model(ids, training=False)), axis=-1)
    import re

    match = re.search(r"Result for output key label:\s*\n\[(.*?)\]", proc.stdout, re.S)
    assert match, proc.stdout[-2000:]
    assert re.findall(r"b'(\d)'", match.group(1)) == [str(i) for i in labels]
    assert "Result for output key probabilities" in proc.stdout


# --- serving-time input, load ----------------------------------------------------------------


def test_span_answer_of_an_empty_passage_or_question_is_empty(exports):
    # One example's empty passage (or question) must not fail the request: it gets "",
    # the others their answers; a batch of empty passages answers "" for each.
    model, path, _ = exports["span_labeler"]
    fn = tf.saved_model.load(path).signatures["serve_text"]
    questions = tf.constant(["who ran ?", "who ran ?", "  "])
    passages = tf.constant(["ann ran home .", " ", "ann ran home ."])
    answers = fn(text=questions, text_pair=passages)["answer"].numpy().tolist()
    alone = fn(text=questions[:1], text_pair=passages[:1])["answer"].numpy().tolist()
    assert answers[1:] == [b"", b""] and answers[0] == alone[0]
    empty = fn(text=tf.constant(["who ran ?", "who"]), text_pair=tf.constant(["", "\t"]))
    assert empty["answer"].numpy().tolist() == [b"", b""]


@pytest.mark.parametrize("text,pair,message", [
    ("a fine film", "good", "text must be a 1-D batch of strings"),
    ([["a fine film"]], [["good"]], "text must be a 1-D batch of strings"),
    (["a fine film"], "good", "text_pair must be a 1-D batch of strings"),
    (["a fine film", "dull"], ["good"], "text_pair must hold one string per text"),
])
def test_serve_text_rejects_other_ranks_naming_the_input(loaded_classifier, text, pair,
                                                         message):
    fn = loaded_classifier.signatures["serve_text"]
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        fn(text=tf.constant(text), text_pair=tf.constant(pair))
    # A [batch] request still answers.
    assert fn(text=tf.constant(["a fine film"]),
              text_pair=tf.constant(["good"]))["label"].shape == (1,)


@pytest.fixture(scope="module")
def loaded_classifier(exports):
    return tf.saved_model.load(exports["classifier"][1])


@pytest.mark.parametrize("case,message", [
    ("id_too_large", "vocabulary size"), ("id_negative", "input_word_ids must be >= 0"),
    ("type_id", "type_vocab_size"), ("mask_value", "only 0 and 1"),
    ("shape_mismatch", "shape of input_word_ids"), ("too_long", "positions"),
    ("empty", "sequence length 0"), ("mask_all_zero", "row of 0s marks no token"),
])
def test_serving_default_rejects_bad_ids(loaded_classifier, case, message):
    inputs = random_ids()
    vocab_size = rich_tokenizer(False).vocab_size
    if case == "id_too_large":
        inputs["input_word_ids"][0, 1] = vocab_size  # one past the end: not wrapped
    elif case == "id_negative":
        inputs["input_word_ids"][1, 0] = -1
    elif case == "type_id":
        inputs["input_type_ids"][0, 2] = 2
    elif case == "mask_value":
        inputs["input_mask"][0, 0] = 3
    elif case == "shape_mismatch":
        inputs["input_mask"] = inputs["input_mask"][:, :-1]
    elif case == "empty":
        inputs = {k: v[:, :0] for k, v in inputs.items()}
    elif case == "mask_all_zero":
        inputs["input_mask"][1] = 0
    else:
        inputs = {k: np.tile(v, (1, 6)) for k, v in inputs.items()}  # 66 > 64 positions
    fn = loaded_classifier.signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        fn(**{k: tf.constant(v) for k, v in inputs.items()})
    # The process (a server) goes on answering.
    good = fn(**{k: tf.constant(v) for k, v in random_ids().items()})
    assert good["probabilities"].shape == (3, 2)


@pytest.mark.parametrize("case", ["int64_ids", "float_ids", "rank_1", "rank_3",
                                  "ids_for_text", "missing_pair"])
def test_wrong_dtype_or_rank_is_an_error(loaded_classifier, case):
    ids = {k: tf.constant(v) for k, v in random_ids().items()}
    if case == "int64_ids":
        call = ("serving_default", {**ids, "input_word_ids": tf.cast(ids["input_word_ids"],
                                                                      tf.int64)})
    elif case == "float_ids":
        call = ("serving_default", {**ids, "input_mask": tf.cast(ids["input_mask"],
                                                                 tf.float32)})
    elif case == "rank_1":
        call = ("serving_default", {k: v[0] for k, v in ids.items()})
    elif case == "rank_3":
        call = ("serving_default", {k: v[None] for k, v in ids.items()})
    elif case == "ids_for_text":
        call = ("serve_text", {"text": tf.constant([1, 2]), "text_pair": tf.constant([1, 2])})
    else:
        call = ("serve_text", {"text": tf.constant(["a"])})
    signature, inputs = call
    with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError)):
        loaded_classifier.signatures[signature](**inputs)


def test_serve_text_edge_cases_are_defined(exports, loaded_classifier):
    """Empty strings give [CLS] [SEP] [SEP]; very long texts are cut to max_seq_length
    (the same ids and outputs as the package's packer); an empty batch gives empty
    outputs; invalid UTF-8 reads like the package's tokenizer (lenient decoding)."""
    model = exports["classifier"][0]
    fn = loaded_classifier.signatures["serve_text"]
    long = ("word " * 5000).encode()
    for texts, pairs in (([b"", b""], [b"", b"x"]), ([long, b"short"], [b"b", long]),
                         ([b"\xff\xfe", b"caf\xc3"], [b"\xc3\xa9t\xc3\xa9", b"\x80"])):
        got = fn(text=tf.constant(texts), text_pair=tf.constant(pairs))
        ids = _reference_ids([texts, pairs], False)
        expected = np.asarray(model(ids, training=False))
        np.testing.assert_allclose(got["logits"], expected, atol=1e-5, rtol=0)
    assert ids["input_mask"].shape[1] <= SEQ
    assert _reference_ids([[long], [b"b"]], False)["input_mask"].sum() == SEQ
    empty = fn(text=tf.constant([], tf.string), text_pair=tf.constant([], tf.string))
    assert empty["logits"].shape == (0, 2) and empty["label"].shape == (0,)


def test_concurrent_serve_text_requests_match_sequential(loaded_classifier):
    """8 threads x 250 requests on one loaded serve_text signature: all succeed, each
    output identical to the sequential call on the same input."""
    fn = loaded_classifier.signatures["serve_text"]
    requests = [(TEXT_BYTES[i % len(TEXT_BYTES):][:1 + i % 3],
                 PAIRS[i % len(PAIRS):][:1 + i % 3]) for i in range(len(TEXT_BYTES) * 3)]
    requests = [(a, b[:len(a)]) for a, b in requests if len(b) >= len(a)]
    sequential = [fn(text=tf.constant(a), text_pair=tf.constant(b))["probabilities"].numpy()
                  for a, b in requests]
    failures, mismatches = [], []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(250):
            i = int(rng.integers(len(requests)))
            try:
                a, b = requests[i]
                got = fn(text=tf.constant(a), text_pair=tf.constant(b))["probabilities"]
                if not np.array_equal(got.numpy(), sequential[i]):
                    mismatches.append(i)
            except Exception as e:  # collected: an exception in a thread is otherwise lost
                failures.append(repr(e))

    import threading

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures and not mismatches, (failures[:3], mismatches[:10])


# --- TF Hub-style reuse, bfloat16 ------------------------------------------------------------


def test_hub_keras_layer_encoder_and_preprocessor_fine_tune(exports):
    """The encoder and its preprocessor load with hub.KerasLayer into a new (tf_keras)
    model, give the Keras encoder's outputs, and train one step end to end."""
    hub = pytest.importorskip("tensorflow_hub")
    tf_keras = pytest.importorskip("tf_keras", reason="tensorflow-hub's KerasLayer is a "
                                   "tf_keras (Keras 2) layer")
    import tensorflow_text  # noqa: F401  (the preprocessor's ops)

    encoder, path, _ = exports["encoder"]
    preprocessor = hub.load(os.path.join(path, "preprocessor"))
    tokenize = hub.KerasLayer(preprocessor.tokenize)
    pack = hub.KerasLayer(preprocessor.bert_pack_inputs, arguments={"seq_length": SEQ})
    bert = hub.KerasLayer(path, trainable=True)
    text = tf_keras.Input(shape=(), dtype=tf.string)
    pair = tf_keras.Input(shape=(), dtype=tf.string)
    packed = pack([tokenize(text), tokenize(pair)])
    outputs = bert(packed)
    logits = tf_keras.layers.Dense(2)(outputs["pooled_output"])
    model = tf_keras.Model([text, pair], {"logits": logits, **packed,
                                          "pooled_output": outputs["pooled_output"],
                                          "sequence_output": outputs["sequence_output"]})
    texts, pairs = TEXT_BYTES[:8], PAIRS[:8]
    got = model([tf.constant(texts), tf.constant(pairs)])
    tok = rich_tokenizer(True)
    ids = {k: v.numpy() for k, v in pack_inputs(
        [tok.tokenize(tf.constant(texts)), tok.tokenize(tf.constant(pairs))], SEQ,
        cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id).items()}
    for name in ids:
        np.testing.assert_array_equal(got[name], ids[name])
    expected = encoder(ids, training=False)
    for name in ("pooled_output", "sequence_output"):
        np.testing.assert_allclose(got[name], expected[name], atol=1e-5, rtol=0)

    assert len(bert.trainable_weights) == len(encoder.trainable_weights)
    before = [w.numpy().copy() for w in bert.trainable_weights]
    train = tf_keras.Model([text, pair], logits)
    train.compile(optimizer=tf_keras.optimizers.Adam(1e-2),
                  loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = train.fit([tf.constant(texts), tf.constant(pairs)],
                        tf.constant([0, 1] * 4), batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    changed = sum(not np.array_equal(b, w.numpy()) for b, w in zip(before,
                                                                  bert.trainable_weights))
    assert changed > len(before) // 2  # the encoder itself was fine-tuned


def test_mixed_bfloat16_export_computes_in_bfloat16_with_float32_outputs(
        exports, tmp_path, capsys):
    model, _, card = exports["classifier"]
    path, bf16_card = _export(capsys, card["source_checkpoint"], tmp_path, "bf16",
                              "--precision", "mixed_bfloat16", "--nowarmup")
    assert bf16_card["precision"] == "mixed_bfloat16"
    loaded = tf.saved_model.load(path)
    fn = loaded.signatures["serving_default"]
    assert "DT_BFLOAT16" in str(fn.graph.as_graph_def())
    assert all(spec.dtype == tf.float32 for name, spec in fn.structured_outputs.items()
               if name != "label")
    ids = random_ids()
    got = fn(**{k: tf.constant(v) for k, v in ids.items()})
    expected = np.asarray(tf.nn.softmax(model(ids, training=False)))
    assert got["probabilities"].dtype == tf.float32
    error = np.abs(got["probabilities"].numpy() - expected).max()
    assert 0 < error < 2e-2  # bfloat16 rounding: close, but not the float32 graph


@pytest.mark.slow
def test_real_minilm_checkpoint_export_matches_keras_in_a_clean_process(tmp_path, capsys):
    """The installed Hugging Face MiniLM-L6-H384 checkpoint: exported through the
    command, both signatures in a process without keras_bert equal the Keras encoder
    on the package's ids, and the preprocessor gives Google's uncased ids."""
    checkpoint = minilm_path()
    from tokenization_refs import INPUTS, comparable, ragged_ref

    from keras_bert.checkpoints import load_encoder

    path, card = _export(capsys, checkpoint, tmp_path / "out", "minilm", "--nowarmup",
                         "--max_seq_length", "64")
    assert card["lower_case"] is True and card["config"]["num_layers"] == 6
    jobs = {"enc|ids": (path, "serving_default", ["input_mask", "input_type_ids",
                                                  "input_word_ids"]),
            "enc|text": (path, "serve_text", ["text"]),
            "pre|tokenize": (os.path.join(path, "preprocessor"), "tokenize", ["text"])}
    ids = random_ids(vocab=30522)
    arrays = {**{f"enc|ids|{k}": v for k, v in ids.items()},
              "enc|text|text": np.array(TEXT_BYTES, dtype=object),
              "pre|tokenize|text": np.array(INPUTS, dtype=object)}
    report, got = run_clean_process(tmp_path, jobs, arrays, timeout=600)
    assert report["blocked"] is True
    encoder = load_encoder(checkpoint)
    tok = BertTokenizer(os.path.join(checkpoint, "vocab.txt"), lower_case=True)
    packed = pack_inputs([tok.tokenize(tf.constant(TEXT_BYTES))], 64, cls_id=tok.cls_id,
                         sep_id=tok.sep_id, pad_id=tok.pad_id)
    longest = int(tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1)))
    text_ids = {k: v.numpy()[:, :longest] for k, v in packed.items()}
    for key, inputs in (("enc|ids", ids), ("enc|text", text_ids)):
        out = encoder.predict_on_batch(inputs)
        for name in ("pooled_output", "sequence_output"):
            np.testing.assert_allclose(got[f"{key}|{name}"], out[name], atol=1e-5, rtol=0,
                                       err_msg=f"{key} {name}")
    values, splits = got["pre|tokenize|values"], got["pre|tokenize|splits"]
    pieces = [values[a:b].tolist() for a, b in zip(splits[:-1], splits[1:])]
    expected = ragged_ref("minilm_uncased")
    assert not [i for i in range(len(INPUTS)) if pieces[i] != expected[i] and comparable(i)]


def test_ids_only_export_runs_without_tensorflow_text(exports, tmp_path, capsys):
    """--noserve_text: only serving_default, and a graph free of tensorflow-text ops, so
    a model server built without them loads it: saved_model_cli run works in a process
    that never imports tensorflow_text."""
    from tensorflow_serving.apis import prediction_log_pb2

    model, _, card = exports["classifier"]
    path, ids_card = _export(capsys, card["source_checkpoint"], tmp_path, "ids_only",
                             "--noserve_text")
    assert set(ids_card["signatures"]) == {"serving_default"} and not ids_card["text_inputs"]
    signatures = {prediction_log_pb2.PredictionLog.FromString(r.numpy()).predict_log.request
                  .model_spec.signature_name for r in tf.data.TFRecordDataset(
                      os.path.join(path, "assets.extra", "tf_serving_warmup_requests"))}
    assert signatures == {"serving_default"}
    ids = random_ids(batch=1)
    code = ("import sys; from tensorflow.python.tools import saved_model_cli; "
            "sys.argv[0] = 'saved_model_cli'; saved_model_cli.main(); "
            "assert 'tensorflow_text' not in sys.modules")
    expr = ";".join(f"{k}={v.tolist()}" for k, v in ids.items())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-I", "-c", code, "run", "--dir", path,
                           "--tag_set", "serve", "--signature_def", "serving_default",
                           "--input_exprs", expr], capture_output=True, text=True, env=env,
                          cwd="/", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import re

    match = re.search(r"Result for output key probabilities:\s*\n\[\[(.*?)\]\]", proc.stdout,
                      re.S)
    assert match, proc.stdout[-2000:]
    expected = np.asarray(tf.nn.softmax(model.predict_on_batch(ids)))[0]
    np.testing.assert_allclose([float(x) for x in match.group(1).split()], expected,
                               atol=1e-5)
