"""`keras-bert export` of a multiple-choice (SWAG) model: both signatures.

The references are independent of the export code: `keras-bert predict --task swag`
(its CSV of predicted endings) and the Keras model's logits on the package's own SWAG
features (`SwagTask.features`, padded to max_seq_length). A choice's score depends on
that choice alone, so the expected outputs for another number of endings are columns
of the Keras model's [batch, 4] logits. The SavedModel runs in a fresh process where
keras_bert cannot be imported. The model is tiny (2 layers, H=32) with random weights;
its choice head is scaled up so that the choices' probabilities differ clearly.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import warnings

import numpy as np
import pytest
import tensorflow as tf
from clean_process import run_clean_process
from conftest import REPO

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import FINETUNE_CONFIG, FINETUNED_MODEL
from keras_bert.cli import main
from keras_bert.tasks.finetuning import FinetuneOptions
from keras_bert.tasks.multiple_choice.task import SwagExample, SwagTask
from keras_bert.text.tokenizer import BertTokenizer, VocabularyWarning

VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
SEQ = 24
LONG = " ".join(["long"] * 40) + " context words"
# sent1, sent2, ending0-3: short, unicode, longer than SEQ (truncated), empty fields.
ROWS = [
    ("The man walks to the store.", "He", "buys some milk.", "flies to the moon.",
     "sits down on the floor.", "opens the door."),
    ("Café naïve résumé — ÅNGSTRÖM Straße", "", "über alles", "naïve", "x", "Ω ω"),
    (LONG, "Then she", "runs away quickly now.", "sings", LONG, "waits."),
    ("北京欢迎你。東京タワー", "They", "walk.", "run!", "don't stop", "(really?!)"),
    ("", "", "a", "b", "c", "d"),
    ("emoji 😀 and ΣΊΣΥΦΟΣ", "MiXeD CaSe", "12345", "WoRdS", "tail words", "zero"),
]




@pytest.fixture(autouse=True)
def _seed_and_policy():
    """Replaces conftest's reseeding for this module: `tf.random.set_seed` clears
    TensorFlow's kernel cache, so every test would instantiate the loaded signatures
    again (seconds each). These tests draw no random numbers of their own."""
    yield


def _tokenizer():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        return BertTokenizer(VOCAB, lower_case=False)


def _config(vocab_size):
    return BertConfig.from_preset("tiny", vocab_size=vocab_size, max_position_embeddings=64,
                                  hidden_size=32, num_heads=4, intermediate_size=64)


def _swag_run(directory):
    """A SWAG run directory as `keras-bert finetune` writes it (its own file names and
    record), with a random-weight model whose choice head is scaled up."""
    task = SwagTask()
    model = task.build_model(BertEncoder(_config(_tokenizer().vocab_size)))
    head = model.get_layer("choice_score")
    kernel, bias = head.get_weights()
    head.set_weights([np.random.default_rng(5).normal(0, 40, kernel.shape).astype(np.float32),
                      bias])
    os.makedirs(directory)
    model.save(os.path.join(directory, FINETUNED_MODEL))
    shutil.copyfile(VOCAB, os.path.join(directory, "vocab.txt"))
    record = {"task": "swag", "task_config": {"task": "swag"},
              "options": dataclasses.asdict(FinetuneOptions(max_seq_length=SEQ)),
              "learning_rate": 2e-5, "seed": 1, "checkpoint": None, "preset": "tiny",
              "lower_case": False, "history": []}
    with open(os.path.join(directory, FINETUNE_CONFIG), "w") as f:
        json.dump(record, f)
    return model


def _write_swag_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["", "video-id", "fold-ind", "startphrase", "sent1", "sent2",
                         "gold-source", "ending0", "ending1", "ending2", "ending3"])
        for i, (sent1, sent2, *endings) in enumerate(rows):
            writer.writerow([f"id{i}", "v", "1", "s", sent1, sent2, "gold", *endings])


@pytest.fixture(scope="module")
def swag(tmp_path_factory):
    """The run directory, its Keras model and its export (path, card, loaded model)."""
    import io
    from contextlib import redirect_stdout

    import keras

    keras.utils.set_random_seed(11)
    root = tmp_path_factory.mktemp("swag")
    model = _swag_run(root / "run_swag")
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["export", "--checkpoint", str(root / "run_swag"), "--output_dir",
                     str(root / "saved_models"), "--name", "swag"])
    text = out.getvalue()
    assert code == 0, text
    card_text, _, last = text.rpartition("}\n")
    assert last.startswith("Exported multiple_choice to ")
    path = last.split(" to ", 1)[1].strip()
    return {"root": root, "run": str(root / "run_swag"), "model": model, "path": path,
            "card": json.loads(card_text + "}"), "loaded": tf.saved_model.load(path)}


def _keras_choice_logits(model, rows):
    """The Keras model's logits [len(rows), 4] on `SwagTask.features` of the rows."""
    from keras_bert.tasks.base import FeatureSettings

    examples = [SwagExample(str(i), r[0], r[1], tuple(r[2:])) for i, r in enumerate(rows)]
    features = SwagTask().features(examples, _tokenizer(), FeatureSettings(max_seq_length=SEQ))
    return np.asarray(model.predict_on_batch(features.inputs))


def _keras_logits_of(model, sent1, sent2, endings):
    """The Keras logits of any number of endings: four at a time (padded with dummy
    endings), the columns of the real ones kept."""
    padded = list(endings) + ["pad"] * (-len(endings) % 4)
    rows = [(sent1, sent2, *padded[i:i + 4]) for i in range(0, len(padded), 4)]
    return _keras_choice_logits(model, rows).reshape(-1)[:len(endings)]


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _random_ids(batch=3, choices=4, seq=11, vocab=6000, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, seq + 1, (batch, choices))
    lengths[0, 0] = seq
    mask = (np.arange(seq) < lengths[..., None]).astype(np.int32)
    ids = rng.integers(5, vocab, (batch, choices, seq)).astype(np.int32) * mask
    types = ((np.arange(seq) >= lengths[..., None] // 2) * mask).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def _serve_text(swag, rows):
    return swag["loaded"].signatures["serve_text"](
        text=tf.constant([r[0] for r in rows]), text_pair=tf.constant([r[1] for r in rows]),
        endings=tf.constant([list(r[2:]) for r in rows]))


# --- a process without keras_bert, and `keras-bert predict` ------------------------------


@pytest.fixture(scope="module")
def clean_results(swag):
    """serve_text on ROWS and serving_default on random ids (4 and 5 choices), run in
    a fresh process that cannot import keras_bert."""
    root = swag["root"]
    jobs, arrays = {}, {}
    for key, ids in (("ids4", _random_ids()), ("ids5", _random_ids(choices=5, seed=1))):
        jobs[key] = (swag["path"], "serving_default", sorted(ids))
        arrays.update({f"{key}|{k}": v for k, v in ids.items()})
    jobs["text"] = (swag["path"], "serve_text", ["endings", "text", "text_pair"])
    arrays["text|text"] = np.array([r[0] for r in ROWS], dtype=object)
    arrays["text|text_pair"] = np.array([r[1] for r in ROWS], dtype=object)
    arrays["text|endings"] = np.array([list(r[2:]) for r in ROWS], dtype=object)
    return run_clean_process(root, jobs, arrays)


def test_clean_process_cannot_import_keras_bert(clean_results):
    assert clean_results[0] == {"blocked": True, "keras_bert_modules": []}


def test_serve_text_agrees_with_keras_bert_predict(swag, clean_results, tmp_path, capsys):
    """The label is `keras-bert predict --task swag`'s prediction; the probabilities are
    the softmax of the Keras model's logits on the package's SWAG features."""
    _, got = clean_results
    data, output = tmp_path / "swag.csv", tmp_path / "predictions.csv"
    _write_swag_csv(data, ROWS)
    code = main(["predict", "--model", swag["run"], "--task", "swag", "--input", str(data),
                 "--output", str(output)])
    assert code == 0, capsys.readouterr().err
    with open(output, newline="") as f:
        predicted = list(csv.DictReader(f))
    assert [p["index"] for p in predicted] == [f"id{i}" for i in range(len(ROWS))]
    assert got["text|label"].dtype == np.int32
    assert got["text|label"].tolist() == [int(p["prediction"]) for p in predicted]
    logits = _keras_choice_logits(swag["model"], ROWS)
    np.testing.assert_allclose(got["text|logits"], logits, atol=1e-5, rtol=0)
    np.testing.assert_allclose(got["text|probabilities"], _softmax(logits), atol=1e-5, rtol=0)
    # The choices' probabilities differ by far more than the tolerance.
    assert np.ptp(got["text|probabilities"], axis=1).min() > 1e-3
    assert len(set(got["text|label"].tolist())) > 1


@pytest.mark.parametrize("key", ["ids4", "ids5"])
def test_serving_default_equals_keras_on_random_ids(swag, clean_results, key):
    """4 choices: the Keras model itself; 5 choices (it was built for 4): each choice's
    logit is the Keras model's on that choice's ids (the first 4, then the last with 3
    of the others beside it)."""
    _, got = clean_results
    ids = _random_ids() if key == "ids4" else _random_ids(choices=5, seed=1)
    model = swag["model"]
    if key == "ids4":
        logits = np.asarray(model.predict_on_batch(ids))
    else:
        first = np.asarray(model.predict_on_batch({k: v[:, :4] for k, v in ids.items()}))
        last = np.asarray(model.predict_on_batch({k: v[:, 1:] for k, v in ids.items()}))
        logits = np.concatenate([first, last[:, 3:]], axis=1)
    np.testing.assert_allclose(got[f"{key}|logits"], logits, atol=1e-5, rtol=0)
    np.testing.assert_allclose(got[f"{key}|probabilities"], _softmax(logits), atol=1e-5,
                               rtol=0)
    assert got[f"{key}|label"].dtype == np.int32
    assert got[f"{key}|label"].tolist() == np.argmax(logits, axis=1).tolist()


# --- any number of endings, empty endings ------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 5])
def test_serve_text_takes_any_number_of_endings(swag, count):
    endings = ["buys some milk.", "flies to the moon.", "sits down.", "opens the door.",
               "sings a song", "runs"][:count]
    rows = [("The man walks to the store.", "He", *endings),
            (LONG, "", *endings[::-1])]
    got = _serve_text(swag, rows)
    assert got["logits"].shape == (2, count) and got["label"].shape == (2,)
    for b, (sent1, sent2, *row_endings) in enumerate(rows):
        logits = _keras_logits_of(swag["model"], sent1, sent2, row_endings)
        np.testing.assert_allclose(got["logits"][b], logits, atol=1e-5, rtol=0)
        np.testing.assert_allclose(got["probabilities"][b], _softmax(logits), atol=1e-5,
                                   rtol=0)
        assert int(got["label"][b]) == int(np.argmax(logits))


def test_empty_endings_are_never_chosen(swag):
    """An empty (or blank) ending is absent: probability 0, never the label, and the
    others' probabilities are the softmax over the present ones; a row without any
    ending answers label -1 with probabilities 0, and the other rows their answers."""
    contexts = [r[0] for r in ROWS] + ["A dog barks.", "Rain falls.", "She smiles."]
    rows = [(c, "It", "", a, "  ", b) for c in contexts
            for a, b in (("walks home.", "sings."), ("runs", "It"))]
    # The Keras model's score of each choice; an absent ending's choice is "It " alone.
    keras_logits = _keras_choice_logits(swag["model"], rows)
    absent = np.array([True, False, True, False])
    absent_best = np.argmax(keras_logits, axis=1) % 2 == 0
    assert absent_best.any() and not absent_best.all()  # the cases this test is about
    rows.append(("Nothing to choose.", "He", "", "", "", ""))
    got = _serve_text(swag, rows)
    probabilities, labels = got["probabilities"].numpy(), got["label"].numpy()
    np.testing.assert_allclose(got["logits"].numpy()[:-1], keras_logits, atol=1e-5, rtol=0)
    assert (probabilities[:-1][:, absent] == 0).all()
    np.testing.assert_allclose(probabilities[:-1][:, ~absent],
                               _softmax(keras_logits[:, ~absent]), atol=1e-5, rtol=0)
    present_best = np.argmax(keras_logits[:, ~absent], axis=1)
    assert labels[:-1].tolist() == np.array([1, 3])[present_best].tolist()
    assert labels[-1] == -1 and (probabilities[-1] == 0).all()
    assert np.isfinite(got["logits"].numpy()).all()
    none = _serve_text(swag, [("", "", ""), ("x", "y", " ")])
    assert none["label"].numpy().tolist() == [-1, -1]
    assert none["probabilities"].numpy().tolist() == [[0.0], [0.0]]


def test_an_empty_batch_gives_empty_outputs(swag):
    fn = swag["loaded"].signatures["serve_text"]
    got = fn(text=tf.constant([], tf.string), text_pair=tf.constant([], tf.string),
             endings=tf.zeros([0, 4], tf.string))
    assert got["probabilities"].shape == (0, 4) and got["label"].shape == (0,)


# --- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("case,message", [
    ("text_scalar", "text must be a 1-D batch of strings"),
    ("text_matrix", "text must be a 1-D batch of strings"),
    ("pair_matrix", "text_pair must be a 1-D batch of strings"),
    ("pair_size", "text_pair must hold one string per text"),
    ("endings_vector", "endings must be a 2-D batch of strings"),
    ("endings_scalar", "endings must be a 2-D batch of strings"),
    ("endings_rank3", "endings must be a 2-D batch of strings"),
    ("endings_rows", "endings must hold one row of endings per text"),
    ("no_endings", "endings must hold at least one ending"),
])
def test_serve_text_rejects_other_ranks_naming_the_input(swag, case, message):
    inputs = {"text": tf.constant(["ctx", "ctx2"]), "text_pair": tf.constant(["He", "She"]),
              "endings": tf.constant([["a", "b"], ["c", "d"]])}
    bad = {"text_scalar": {"text": tf.constant("ctx")},
           "text_matrix": {"text": tf.constant([["ctx"], ["ctx2"]])},
           "pair_matrix": {"text_pair": tf.constant([["He"], ["She"]])},
           "pair_size": {"text_pair": tf.constant(["He"])},
           "endings_vector": {"endings": tf.constant(["a", "b"])},
           "endings_scalar": {"endings": tf.constant("a")},
           "endings_rank3": {"endings": tf.constant([[["a"]], [["b"]]])},
           "endings_rows": {"endings": tf.constant([["a", "b"]])},
           "no_endings": {"endings": tf.zeros([2, 0], tf.string)}}[case]
    fn = swag["loaded"].signatures["serve_text"]
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        fn(**{**inputs, **bad})
    assert fn(**inputs)["label"].shape == (2,)  # the next request still answers


@pytest.mark.parametrize("case,message", [
    ("id_too_large", "vocabulary size"), ("type_id", "type_vocab_size"),
    ("mask_value", "only 0 and 1"), ("shape_mismatch", "shape of input_word_ids"),
    ("too_long", "positions"), ("empty", "sequence length 0"),
    ("no_choices", "0 choices"), ("choice_mask_zero", "every choice of input_mask"),
])
def test_serving_default_rejects_bad_ids(swag, case, message):
    inputs = _random_ids()
    if case == "id_too_large":
        inputs["input_word_ids"][0, 1, 1] = _tokenizer().vocab_size
    elif case == "type_id":
        inputs["input_type_ids"][2, 3, 0] = 2
    elif case == "mask_value":
        inputs["input_mask"][1, 0, 0] = 3
    elif case == "shape_mismatch":
        inputs["input_type_ids"] = inputs["input_type_ids"][:, :3]
    elif case == "too_long":
        inputs = {k: np.tile(v, (1, 1, 6)) for k, v in inputs.items()}  # 66 > 64
    elif case == "empty":
        inputs = {k: v[..., :0] for k, v in inputs.items()}
    elif case == "no_choices":
        inputs = {k: v[:, :0] for k, v in inputs.items()}
    else:
        inputs["input_mask"][1, 2] = 0  # one choice of one example: no token
    fn = swag["loaded"].signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        fn(**{k: tf.constant(v) for k, v in inputs.items()})
    assert fn(**{k: tf.constant(v) for k, v in _random_ids().items()})["label"].shape == (3,)


def test_serving_default_takes_only_rank_3_ids(swag):
    ids = {k: tf.constant(v[0]) for k, v in _random_ids().items()}  # [choices, seq]
    with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError)):
        swag["loaded"].signatures["serving_default"](**ids)


# --- model card, warmup ------------------------------------------------------------------


def test_model_card_and_signatures(swag):
    card = swag["card"]
    assert card["kind"] == "multiple_choice" and card["task"] == "swag"
    assert card["text_inputs"] == ["text", "text_pair", "endings"]
    assert card["max_seq_length"] == SEQ and card["label_names"] is None
    ids_spec = {"dtype": "int32", "shape": [None, None, None]}
    ids = card["signatures"]["serving_default"]
    assert ids["inputs"] == {n: ids_spec for n in ("input_mask", "input_type_ids",
                                                   "input_word_ids")}
    any_text = {"dtype": "string", "shape": None}
    text = card["signatures"]["serve_text"]
    assert text["inputs"] == {n: any_text for n in ("endings", "text", "text_pair")}
    for outputs in (ids["outputs"], text["outputs"]):
        assert outputs == {"label": {"dtype": "int32", "shape": [None]},
                           "logits": {"dtype": "float32", "shape": [None, None]},
                           "probabilities": {"dtype": "float32", "shape": [None, None]}}
    # Only the tokenizer's tensorflow-text ops, which stock TF Serving 2.12 registers.
    from keras_bert.export.ops import core_op_names, saved_model_ops

    ops = saved_model_ops(swag["path"])
    assert not ops["serving_default"] - core_op_names()
    assert ops["serve_text"] - core_op_names() == {"FastBertNormalize",
                                                   "FastWordpieceTokenizeWithOffsets"}
    assert card["ops"]["oldest_stock_tf_serving"] == "2.12.0"


def test_warmup_file_parses_and_its_requests_run(swag):
    from tensorflow_serving.apis import prediction_log_pb2

    loaded, seen = swag["loaded"], {}
    warmup = os.path.join(swag["path"], "assets.extra", "tf_serving_warmup_requests")
    for record in tf.data.TFRecordDataset(warmup):
        request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
        assert request.model_spec.name == "swag"
        signature = request.model_spec.signature_name
        inputs = {k: tf.constant(tf.make_ndarray(v)) for k, v in request.inputs.items()}
        outputs = loaded.signatures[signature](**inputs)
        batch = next(iter(inputs.values())).shape[0]
        assert outputs["logits"].shape == (batch, 4) and outputs["label"].shape == (batch,)
        seen.setdefault(signature, set()).add(
            tuple(sorted((k, tuple(v.shape)) for k, v in inputs.items())))
    assert set(seen) == {"serving_default", "serve_text"}
    assert all(len(shapes) >= 2 for shapes in seen.values()), seen
    assert all(dict(shapes)["endings"][1:] == (4,) for shapes in seen["serve_text"])
