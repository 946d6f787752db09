"""SWAG's blank-ending rule (`keras_bert.tasks.multiple_choice.task`), the same in every path
that answers a multiple-choice example from text: `keras-bert predict` (and `evaluate`),
the SavedModel's `serve_text` and the LiteRT `serve_text`.

A blank ending (no word pieces: "", whitespace of any kind, zero-width characters) is
no candidate: probability 0, never the label; all blank: label -1. The model is tiny
(2 layers, H=32, random weights) with its choice head aimed so that a blank ending's
choice outscores every other by 5 or more (and the other endings used differ by 0.2 or
more, far beyond the paths' float differences): a path that lets a blank ending win,
or takes a zero-width or non-ASCII space for text, fails. The tokenizer is cased.
"""

from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from export_support import VOCAB, finetuned_run, rich_tokenizer, tiny_config

from keras_bert import BertEncoder
from keras_bert.checkpoints import FINETUNED_MODEL
from keras_bert.cli import main
from keras_bert.tasks.base import FeatureSettings
from keras_bert.tasks.multiple_choice.task import (
    BLANK_ENDINGS,
    SwagExample,
    SwagTask,
    blank_endings,
)

SEQ = 24
CONTEXT, START = "The man walks to the store.", "He"
POOL = ("buys some milk.", "flies to the moon.", "sits down.", "opens the door.",
        "sings a song.", "runs away.", "waits.", "laughs loudly.", "eats an apple.",
        "falls asleep.", "reads a book.")  # with "", three rows of four endings
# Blank endings of every kind: ASCII whitespace, Unicode spaces (ideographic,
# no-break), zero-width characters (U+200B ZERO WIDTH SPACE, U+FEFF, U+2060).
SPACES = " \t\n "
UNICODE_SPACES = "\u3000\u00a0"
ZERO_WIDTH = "\u200b"
ZERO_WIDTHS = "\ufeff\u200b\u2060"


@pytest.fixture(autouse=True)
def _seed_and_policy():
    """Replaces conftest's reseeding (it clears TensorFlow's kernel cache, so the loaded
    signatures would be instantiated again for each test); no test draws numbers."""
    yield


def _features(rows):
    examples = [SwagExample(str(i), *r[:2], tuple(r[2:])) for i, r in enumerate(rows)]
    return SwagTask().features(examples, rich_tokenizer(False),
                               FeatureSettings(max_seq_length=SEQ))


def _keras_logits(model, rows):
    """The Keras model's logits [len(rows), 4] on `SwagTask.features` of the rows."""
    return np.asarray(model.predict_on_batch(_features(rows).inputs))


def _aim_head(model):
    """Points the choice head at what sets the blank choice (`[CLS] CONTEXT [SEP] START
    [SEP]`) apart from POOL's: it outscores each by at least 5; returns POOL's scores."""
    rows = [(CONTEXT, START, *(["", *POOL])[i:i + 4]) for i in range(0, len(POOL) + 1, 4)]
    flat = {k: v.reshape(-1, v.shape[-1]) for k, v in _features(rows).inputs.items()}
    pooled = np.asarray(model.encoder(flat, training=False)["pooled_output"])
    blank, others = pooled[0], pooled[1:len(POOL) + 1]
    direction = blank - others.mean(axis=0)
    margins = (blank - others) @ direction
    assert (margins > 0).all()
    head = model.get_layer("choice_score")
    kernel, bias = head.get_weights()
    head.set_weights([(direction * 5 / margins.min()).reshape(kernel.shape)
                      .astype(np.float32), np.zeros_like(bias)])
    return _keras_logits(model, rows).reshape(-1)[1:len(POOL) + 1]


def _cases(scores):
    """{name: (row, blank mask)}: endings of POOL whose scores differ by 0.2 or more,
    blank ones where the name says; in a `*_win(s)` row a blank ending scores highest."""
    picked = []
    for ending, score in zip(POOL, scores):
        if all(abs(score - s) >= 0.2 for _, s in picked):
            picked.append((ending, score))
    assert len(picked) >= 4, picked
    a, b, c, d = (e for e, _ in picked[:4])
    rows = {"no_blank": (a, b, c, d),
            "empty_wins": (a, "", b, c),
            "spaces_win": (a, b, SPACES, c),
            "unicode_spaces_win": (a, UNICODE_SPACES, b, c),
            "zero_width_wins": (ZERO_WIDTH, a, b, c),
            "zero_widths_win": (a, b, c, ZERO_WIDTHS),
            "all_blank": ("", SPACES, ZERO_WIDTH, UNICODE_SPACES),
            "all_empty": ("", "", "", "")}
    blank_texts = {"", SPACES, UNICODE_SPACES, ZERO_WIDTH, ZERO_WIDTHS}
    return {name: ((CONTEXT, START, *endings), np.array([e in blank_texts for e in endings]))
            for name, endings in rows.items()}


@pytest.fixture(scope="module")
def swag(tmp_path_factory):
    """The cases, their expected labels and probabilities (the rule applied to the Keras
    model's logits), a fine-tuned run, its SavedModel and its LiteRT model."""
    import keras

    from keras_bert.export import export_litert, export_saved_model
    from keras_bert.tasks.export_sources import load_export_source

    keras.utils.set_random_seed(11)
    root = tmp_path_factory.mktemp("blank_endings")
    run = root / "run_swag"
    model = finetuned_run(VOCAB, SEQ, run, "swag",
                          BertEncoder(tiny_config(rich_tokenizer(False).vocab_size)),
                          {"task": "swag"})
    cases = _cases(_aim_head(model))
    model.save(os.path.join(run, FINETUNED_MODEL))
    names = list(cases)
    rows = [cases[n][0] for n in names]
    blank = np.stack([cases[n][1] for n in names])
    logits = _keras_logits(model, rows)
    # The cases this file is about: a blank ending would win where the name says so.
    wins = np.array([n.endswith(("_wins", "_win")) for n in names])
    assert (blank[wins, np.argmax(logits[wins], axis=1)]).all()
    masked = np.where(blank, -np.inf, logits)
    labels = np.where(blank.all(axis=1), -1, np.argmax(masked, axis=1))
    with np.errstate(invalid="ignore"):
        e = np.where(blank, 0.0, np.exp(masked - masked.max(axis=1, keepdims=True)))
        probabilities = np.nan_to_num(e / e.sum(axis=1, keepdims=True))

    source = load_export_source(run)
    saved, _ = export_saved_model(source, root / "saved", "swag", warmup=False)
    lite, _ = export_litert(load_export_source(run), root / "lite", "swag")
    return {"root": root, "run": str(run), "names": names, "rows": rows, "blank": blank,
            "labels": labels, "probabilities": probabilities, "saved": saved, "lite": lite}


def _write_swag_csv(path, rows, labels=None):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["", "video-id", "fold-ind", "startphrase", "sent1", "sent2",
                         "gold-source", "ending0", "ending1", "ending2", "ending3",
                         *(["label"] if labels is not None else [])])
        for i, (sent1, sent2, *endings) in enumerate(rows):
            label = [] if labels is None else [labels[i]]
            writer.writerow([f"id{i}", "v", "1", "s", sent1, sent2, "gold", *endings, *label])


def _read_predictions(path):
    with open(path, newline="", encoding="utf-8") as f:
        return [(r["index"], int(r["prediction"])) for r in csv.DictReader(f)]


def test_blank_endings_are_those_of_no_word_pieces(swag):
    tokenizer = rich_tokenizer(False)
    endings = [x for row in swag["rows"] for x in row[2:]]
    assert blank_endings(tokenizer, endings).tolist() == swag["blank"].reshape(-1).tolist()
    examples = [SwagExample(str(i), *r[:2], tuple(r[2:])) for i, r in enumerate(swag["rows"])]
    features = SwagTask().features(examples, tokenizer, FeatureSettings(max_seq_length=SEQ))
    assert features.extra[BLANK_ENDINGS].tolist() == swag["blank"].tolist()


def test_predict_follows_the_rule_and_writes_minus_one(swag, tmp_path, capsys):
    data, output = tmp_path / "swag.csv", tmp_path / "predictions.csv"
    _write_swag_csv(data, swag["rows"])
    code = main(["predict", "--model", swag["run"], "--task", "swag", "--input", str(data),
                 "--output", str(output)])
    assert code == 0, capsys.readouterr().err
    got = _read_predictions(output)
    assert [i for i, _ in got] == [f"id{k}" for k in range(len(swag["rows"]))]
    assert dict(zip(swag["names"], [p for _, p in got])) == dict(
        zip(swag["names"], swag["labels"].tolist()))


def test_evaluate_counts_no_answer_wrong(swag, tmp_path, capsys):
    """Gold: the expected label, 0 where there is none: accuracy is 1 but for the two
    rows whose endings are all blank, which get -1 in the dev predictions."""
    data = tmp_path / "data"
    data.mkdir()
    gold = np.maximum(swag["labels"], 0).tolist()
    _write_swag_csv(data / "val.csv", swag["rows"], gold)
    code = main(["evaluate", "--model", swag["run"], "--task", "swag", "--data_dir",
                 str(data), "--output_dir", str(tmp_path / "out"), "--noprogress"])
    assert code == 0, capsys.readouterr().err
    with open(tmp_path / "out" / "metrics.json") as f:
        accuracy = json.load(f)["accuracy"]
    n = len(gold)
    assert accuracy == pytest.approx((n - 2) / n)
    got = [p for _, p in _read_predictions(tmp_path / "out" / "predictions.csv")]
    assert got == swag["labels"].tolist()
    assert SwagTask().evaluate([SwagExample("a", "c", "s", ("w",) * 4, 0)], [-1]) == {
        "accuracy": 0.0}


def _check_serve_text(swag, got):
    names = swag["names"]
    assert np.asarray(got["label"]).dtype == np.int32
    assert dict(zip(names, np.asarray(got["label"]).tolist())) == dict(
        zip(names, swag["labels"].tolist()))
    probabilities = np.asarray(got["probabilities"])
    assert (probabilities[swag["blank"]] == 0).all()
    # Against the Keras model's probabilities (TensorFlow): the SavedModel's and LiteRT's
    # (XNNPACK) differ by up to 4.6e-5 absolute, 1.1e-4 relative on a 2-core AVX512 AMD
    # EPYC (worst with ONEDNN_MAX_CPU_ISA=AVX2; 1.44e-5 with TF_ENABLE_ONEDNN_OPTS=0, as
    # on a 2-core AMX Xeon): `git show 9273a48:benchmarks/runtime_spread.py` and its
    # results/runtime_spread_amd-epyc-2core-avx512.jsonl.
    # rtol is ~10x the worst relative difference. Other CPUs were emulated on the
    # TensorFlow side only (ONEDNN_MAX_CPU_ISA can lower the ISA, not add AMX); LiteRT
    # ran this CPU's XNNPACK kernels, which have no such override.
    np.testing.assert_allclose(probabilities, swag["probabilities"], atol=1e-5, rtol=1e-3)


def test_saved_model_serve_text_follows_the_rule(swag):
    rows = swag["rows"]
    got = tf.saved_model.load(swag["saved"]).signatures["serve_text"](
        text=tf.constant([r[0] for r in rows]), text_pair=tf.constant([r[1] for r in rows]),
        endings=tf.constant([list(r[2:]) for r in rows]))
    _check_serve_text(swag, {k: v.numpy() for k, v in got.items()})


def test_litert_serve_text_follows_the_rule(swag):
    from keras_bert.export import LiteRTModel

    rows = swag["rows"]
    got = LiteRTModel(swag["lite"]).serve_text(
        text=np.array([r[0].encode() for r in rows], dtype=object),
        text_pair=np.array([r[1].encode() for r in rows], dtype=object),
        endings=np.array([[e.encode() for e in r[2:]] for r in rows], dtype=object))
    _check_serve_text(swag, got)
