"""The task models check their arguments and inputs before any work (issue 46): every
bad case ends in the right result or in one `ArgumentError` naming the argument, item
or value at fault. Tiny random-weight models over tests/fixtures's vocabulary, built
once per module."""

from __future__ import annotations

import logging
import math
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
from export_support import VOCAB, rich_tokenizer, tiny_config

import keras_bert
from keras_bert.core.errors import ArgumentError
from keras_bert.tasks.keras_face import TextPreprocessor, classification_task
from keras_bert.tasks.registry import get_task
from keras_bert.text.packing import BertPreprocessor

TEXTS = ["a gripping and moving film", "dull , long and empty", "wonderful acting",
         "a waste of time", "the best story this year", "boring"]
LABELS = ["pos", "neg", "pos", "neg", "pos", "neg"]
PAIRS = (["a cat sits", "a man runs"], ["a dog sits", "someone runs"])


def _encoder(seed=0):
    keras.utils.set_random_seed(seed)
    return keras_bert.BertEncoder(tiny_config(rich_tokenizer(False).vocab_size))


@pytest.fixture(scope="module", autouse=True)
def eager():
    """Steps run eagerly: these tiny models train a step or two, and tracing them
    would take most of the time."""
    tf.config.run_functions_eagerly(True)
    yield
    tf.config.run_functions_eagerly(False)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """An encoder checkpoint with its vocab.txt: what `from_preset` builds new heads on."""
    path = str(tmp_path_factory.mktemp("ckpt") / "encoder")
    keras_bert.save_encoder(_encoder(), path)
    shutil.copyfile(VOCAB, os.path.join(path, "vocab.txt"))
    return path


@pytest.fixture(scope="module")
def classifier(checkpoint):
    """`from_preset` without `task=`: single texts and pairs alike until a fit."""
    model = keras_bert.BertClassifier.from_preset(checkpoint, label_names=["neg", "pos"],
                                                  sequence_length=32, lower_case=False)
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved classifier (.keras) of the labels neg and pos, sequence length 32."""
    path = str(tmp_path_factory.mktemp("saved") / "clf.keras")
    keras_bert.BertClassifier(_encoder(), num_classes=2, preprocessor=(
        TextPreprocessor.for_task(classification_task(["neg", "pos"]), VOCAB,
                                  lower_case=False, sequence_length=32))).save(path)
    return path


@pytest.fixture(scope="module")
def regressor():
    model = keras_bert.BertClassifier(_encoder(), num_classes=1, preprocessor=(
        TextPreprocessor.for_task(classification_task(None, num_classes=1), VOCAB,
                                  lower_case=False, sequence_length=32)))
    model.compile()
    return model


@pytest.fixture(scope="module")
def tagger():
    task = get_task("ner")
    task.restore({"task": "ner", "labels": ["O", "B-PER", "I-PER", "B-LOC"]})
    model = task.build_model(_encoder())
    model.preprocessor = TextPreprocessor(task, rich_tokenizer(False),
                                          keras_bert.FinetuneOptions(
                                              max_seq_length=32).feature_settings())
    model.compile()
    return model


@pytest.fixture(scope="module")
def labeler(checkpoint):
    return keras_bert.BertSpanLabeler.from_preset(checkpoint, sequence_length=32,
                                                  lower_case=False)


def _raises(call, *names):
    """`call()` raises one ArgumentError whose message holds every one of `names`."""
    with pytest.raises(ArgumentError) as info:
        call()
    for name in names:
        assert name in str(info.value), (name, str(info.value))
    return info.value


# --- from_preset's arguments --------------------------------------------------------------


@pytest.mark.parametrize("kwargs, names", [
    ({"num_clases": 5}, ["'num_clases'", "did you mean 'num_classes'"]),
    ({"seqence_length": 32}, ["'seqence_length'", "'sequence_length'"]),
    ({"num_classes": 0}, ["num_classes", ">= 1", "0"]),
    ({"num_classes": -3}, ["num_classes", "-3"]),
    ({"num_classes": 2.5}, ["num_classes", "2.5"]),
    ({"num_classes": True}, ["num_classes"]),
    ({"sequence_length": 0}, ["sequence_length", "0"]),
    ({"sequence_length": -1}, ["sequence_length", "-1"]),
    ({"sequence_length": 2}, ["sequence_length 2", ">= 8"]),
    ({"sequence_length": 65}, ["sequence_length 65", "64 positions"]),
    ({"sequence_length": "32"}, ["sequence_length", "'32'"]),
    ({"label_names": ["a", "b", "c"], "num_classes": 2}, ["num_classes=2", "3 names"]),
    ({"label_names": ["a", "b", "a"]}, ["label_names[2]", "'a'", "repeats"]),
    ({"label_names": "neg pos"}, ["label_names", "str"]),
    ({"label_names": ["a", None]}, ["label_names[1]", "None"]),
    ({"label_names": ["only"]}, ["label_names", "1 name"]),
    ({"label_names": ["a", "b"], "num_classes": 1}, ["num_classes=1", "2 names"]),
    ({"task": "ner"}, ["'ner'", "tagger", "BertTokenClassifier"]),
    ({"task": "squad1"}, ["'squad1'", "BertSpanLabeler"]),
    ({"task": "nope"}, ["unknown task 'nope'"]),
    ({"task": "sst2", "num_classes": 3}, ["'sst2'", "num_classes=3"]),
    ({"max_query_length": 8}, ["max_query_length", "BertClassifier"]),
    ({"lower_case": "yes"}, ["lower_case", "'yes'"]),
    ({"dropout": 0.1, "foo": 1}, ["'foo'"]),
])
def test_classifier_from_preset_refuses_bad_arguments(checkpoint, kwargs, names):
    _raises(lambda: keras_bert.BertClassifier.from_preset(checkpoint, **kwargs), *names)


def test_classifier_from_preset_keeps_good_arguments(checkpoint):
    regression = keras_bert.BertClassifier.from_preset(checkpoint, num_classes=1,
                                                       sequence_length=8, dropout=0.0)
    assert regression.num_classes == 1 and regression.preprocessor.sequence_length == 8
    three = keras_bert.BertClassifier.from_preset(checkpoint, num_classes=3,
                                                  label_names=("a", "b", "c"))
    assert three.num_classes == 3 and three.preprocessor.sequence_length == 64
    sst2 = keras_bert.BertClassifier.from_preset(checkpoint, task="sst2", num_classes=2)
    assert sst2.preprocessor.task.name == "sst2"


@pytest.mark.parametrize("cls, kwargs, names", [
    ("BertSpanLabeler", {"num_classes": 5}, ["num_classes", "leave it out"]),
    ("BertSpanLabeler", {"label_names": ["a", "b"]}, ["label_names"]),
    ("BertSpanLabeler", {"task": "sst2"}, ["'sst2'", "BertClassifier"]),
    ("BertSpanLabeler", {"sequence_length": 12}, ["sequence_length 12", ">= 16"]),
    ("BertSpanLabeler", {"sequence_length": 32, "max_query_length": 30},
     ["max_query_length 30", "sequence_length 32", "<= 25"]),
    ("BertSpanLabeler", {"max_query_length": 0}, ["max_query_length", ">= 1"]),
    ("BertSpanLabeler", {"doc_stride": -2}, ["doc_stride", "-2"]),
    ("BertMultipleChoice", {"num_classes": 4}, ["num_classes", "BertMultipleChoice"]),
    ("BertTokenClassifier", {"num_classes": 1, "label_names": ["O"]}, ["label_names"]),
    ("BertTokenClassifier", {"num_classes": 3, "label_names": ["O", "B-X"]},
     ["num_classes=3", "2 names"]),
    ("BertTokenClassifier", {"task": "swag"}, ["'swag'", "BertMultipleChoice"]),
])
def test_other_models_refuse_bad_arguments(checkpoint, cls, kwargs, names):
    _raises(lambda: getattr(keras_bert, cls).from_preset(checkpoint, **kwargs), *names)


def test_a_span_labelers_lengths_fit_a_short_sequence(labeler, checkpoint):
    settings = labeler.preprocessor.settings
    assert settings.max_seq_length == 32
    assert settings.max_query_length + 3 + 4 <= 32 and 1 <= settings.doc_stride <= 32
    context = "The lighthouse was built in 1871 by a stonemason named Oskar Lind . " * 3
    got = labeler.answer(["Who built the lighthouse ?", "When ?"], [context, context])
    assert len(got) == 2 and all(isinstance(a, str) for a in got)
    chosen = keras_bert.BertSpanLabeler.from_preset(checkpoint, sequence_length=48,
                                                    max_query_length=10, doc_stride=5)
    assert (chosen.preprocessor.settings.max_query_length,
            chosen.preprocessor.settings.doc_stride) == (10, 5)
    full = keras_bert.BertSpanLabeler.from_preset(checkpoint)  # 64 positions
    assert full.preprocessor.settings.max_query_length == 30


@pytest.mark.parametrize("kwargs, names", [
    ({"num_classes": 3}, ["2 classes", "num_classes=3"]),
    ({"label_names": ["bad", "good"]}, ["['neg', 'pos']", "label_names=['bad', 'good']"]),
    ({"task": "sst2"}, ["'classification'", "task='sst2'"]),
    ({"dropout": 0.2}, ["saved model", "dropout"]),
    ({"vocab_file": VOCAB}, ["saved model", "vocab_file"]),
    ({"sequence_length": 100}, ["sequence_length 100", "64 positions"]),
])
def test_a_saved_model_refuses_what_contradicts_it(saved, kwargs, names):
    _raises(lambda: keras_bert.BertClassifier.from_preset(saved, **kwargs), *names)


def test_a_saved_model_takes_what_agrees_with_it(saved):
    shorter = keras_bert.BertClassifier.from_preset(saved, num_classes=2,
                                                    label_names=["neg", "pos"],
                                                    task="classification", lower_case=False,
                                                    sequence_length=16)
    assert shorter.preprocessor.sequence_length == 16
    assert len(shorter.classify(TEXTS)) == len(TEXTS)
    _raises(lambda: keras_bert.BertClassifier.from_preset(saved, lower_case=True),
            "lower_case=False")


# --- the methods' arguments ----------------------------------------------------------


@pytest.mark.parametrize("method, kwargs, names", [
    ("fit", {"batch_size": 0}, ["batch_size", ">= 1", "0"]),
    ("fit", {"batch_size": 2.0}, ["batch_size"]),
    ("fit", {"epochs": 0}, ["epochs"]),
    ("fit", {"shuffle": "yes"}, ["shuffle"]),
    ("fit", {"epoch": 2}, ["'epoch'", "did you mean 'epochs'"]),
    ("fit", {"validation_split": 1.5}, ["validation_split", "1.5"]),
    ("fit", {"validation_split": 0.2, "validation_data": (TEXTS, LABELS)},
     ["validation_split or validation_data"]),
    ("fit", {"steps_per_epoch": 0}, ["steps_per_epoch"]),
    ("fit", {"callbacks": ["not a callback"]}, ["callbacks[0]"]),
    ("fit", {"class_weight": {"maybe": 2.0}}, ["class_weight", "'maybe'"]),
    ("fit", {"class_weight": {5: 2.0}}, ["class_weight", "5"]),
    ("fit", {"class_weight": {"pos": -1}}, ["class_weight['pos']", "-1"]),
    ("fit", {"sample_weight": [1.0, 2.0]}, ["6 inputs but 2 sample_weight"]),
    ("fit", {"sample_weight": [1, 1, 1, float("nan"), 1, 1]}, ["sample_weight[3]", "nan"]),
    ("evaluate", {"batch_size": -1}, ["batch_size", "-1"]),
    ("evaluate", {"retrun_dict": True}, ["'retrun_dict'", "'return_dict'"]),
    ("predict", {"batch_size": 0}, ["batch_size"]),
    ("predict", {"y": LABELS}, ["'y'"]),
])
def test_methods_refuse_bad_arguments(classifier, method, kwargs, names):
    args = (TEXTS,) if method == "predict" else (TEXTS, LABELS)
    _raises(lambda: getattr(classifier, method)(*args, verbose=0, **kwargs), *names)


@pytest.mark.parametrize("call, names", [
    (lambda m: m.classify(TEXTS, batch_size=0), ["batch_size"]),
    (lambda m: m.enable_lora(0), ["rank", "0"]),
    (lambda m: m.enable_lora(2.5), ["rank", "2.5"]),
    (lambda m: m.enable_lora("4"), ["rank"]),
    (lambda m: m.export("/tmp/wt-x", warmpu=False), ["'warmpu'", "'warmup'"]),
    (lambda m: m.export(None), ["filepath"]),
])
def test_model_calls_refuse_bad_arguments(classifier, call, names):
    _raises(lambda: call(classifier), *names)


def test_other_calls_refuse_bad_arguments(labeler, tagger):
    _raises(lambda: labeler.answer("Who?", "Ann ran.", batch_size=0), "batch_size")
    _raises(lambda: labeler.answer(["Who?", "Where?"], ["Ann ran."]), "2 questions",
            "1 contexts")
    _raises(lambda: tagger.tag(["Ann ran"], batch_size=-5), "batch_size")


# --- inputs at the door -----------------------------------------------------------------


@pytest.mark.parametrize("method, x, y, names", [
    ("fit", [], [], ["x is empty"]),
    ("fit", (), None, ["x is empty"]),
    ("fit", {"text": [], "text_pair": []}, [], ["x is empty"]),
    ("fit", TEXTS, None, ["fit needs labels", "y"]),
    ("evaluate", TEXTS, None, ["evaluate needs labels"]),
    ("fit", ["good", None, "bad"], [0, 1, 0], ["x[1]", "None"]),
    ("fit", ["good", 3, "bad"], [0, 1, 0], ["x[1]", "3"]),
    ("predict", ["good", "bad", None], None, ["x[2]", "None"]),
    ("predict", {"text": ["a", "b"], "text_pair": ["c", None]}, None,
     ["x['text_pair'][1]"]),
    ("predict", (["a"], ["b"], ["c"]), None, ["tuple of 3", "(texts, text_pairs)"]),
    ("predict", [("a", "b"), ("a", "b", "c")], None, ["x[1]", "3 texts"]),
    ("predict", ["fine", "bad \ud800 text"], None, ["x[1]", "surrogate"]),
    ("fit", TEXTS, LABELS[:4], ["6 inputs but 4 labels"]),
    ("fit", TEXTS[:2], LABELS, ["2 inputs but 6 labels"]),
])
def test_inputs_are_checked_at_the_door(classifier, method, x, y, names):
    args = (x,) if method == "predict" else (x, y)
    _raises(lambda: getattr(classifier, method)(*args, verbose=0), *names)


def test_classify_checks_its_texts(classifier):
    _raises(lambda: classifier.classify([]), "x is empty")
    _raises(lambda: classifier.classify(["a", None]), "x[1]")
    _raises(lambda: classifier.classify((["a"], ["b"], ["c"])), "tuple of 3")


@pytest.mark.parametrize("target", [float("nan"), float("inf"), -math.inf])
def test_regression_targets_must_be_finite(regressor, target):
    y = [1.0, 2.0, target, 0.5, 3.0, 4.0]
    _raises(lambda: regressor.fit(TEXTS, y, verbose=0), "y[2]", "finite")
    _raises(lambda: regressor.fit(TEXTS, np.array(y), verbose=0), "y[2]")


def test_a_tagger_takes_tags_as_one_string_when_unambiguous(tagger):
    sentences = ["Ann lives in Paris", "Bob ran"]
    history = tagger.fit(sentences, ["B-PER O O B-LOC", ["B-PER", "O"]], batch_size=2,
                         verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    one = tagger.preprocessor.examples("Ann ran", "B-PER O", labelled=True)
    assert [e.tags for e in one] == [("B-PER", "O")]  # one sentence, one string of tags
    _raises(lambda: tagger.fit(sentences, ["B-PER O", ["B-PER", "O"]], verbose=0),
            "y[0]", "2 tag(s)", "4 word(s)")
    _raises(lambda: tagger.fit(sentences, ["BPER", "O O"], verbose=0), "y[0]")
    _raises(lambda: tagger.fit(["Ann", None], [["B-PER"], ["O"]], verbose=0), "x[1]")


def test_a_span_labeler_skips_answers_not_in_their_context(labeler, caplog):
    questions = ["Who ran ?", "Where ?", "Who sang ?"]
    contexts = ["Ann ran home .", "Bob sat in Paris .", "Carl sang ."]
    answers = ["Ann", "London", "Carl"]  # London is not in its context
    labeler.compile()
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        history = labeler.fit({"question": questions, "context": contexts}, answers,
                              batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert any("1 of 3" in r.getMessage() for r in caplog.records)
    _raises(lambda: labeler.fit({"question": questions[1:2], "context": contexts[1:2]},
                                ["London"], verbose=0), "none of the 1", "context")
    _raises(lambda: labeler.fit({"question": questions, "context": contexts},
                                [1, "Bob", "Carl"], verbose=0), "answer 1", "question 0")


# --- pairs and Keras's own arguments on raw text -------------------------------------


def test_pairs_work_on_a_classifier_from_preset(checkpoint):
    model = keras_bert.BertClassifier.from_preset(checkpoint, num_classes=2,
                                                  sequence_length=32, lower_case=False)
    single = model.classify(["a cat sits"])
    assert len(single) == 1
    got = model.classify(PAIRS)
    assert len(got) == 2 and all(label in ("0", "1") for label, _ in got)
    a = model.predict(PAIRS, verbose=0)
    b = model.predict({"text": PAIRS[0], "text_pair": PAIRS[1]}, verbose=0)
    np.testing.assert_allclose(a, b, atol=1e-6)
    model.fit(PAIRS, [0, 1], batch_size=2, verbose=0)  # decides: pairs
    model.evaluate({"text": PAIRS[0], "text_pair": PAIRS[1]}, [0, 1], verbose=0)
    _raises(lambda: model.classify(["a single text"]), "pairs")
    # Saved with the model (a .keras file holds the preprocessor's config).
    again = TextPreprocessor.from_config(model.preprocessor.get_config())
    assert again.task.pair is True
    _raises(lambda: again.examples(["a single text"]), "pairs")
    singles = keras_bert.BertClassifier(model.encoder, num_classes=2, preprocessor=(
        TextPreprocessor.from_config(model.preprocessor.get_config())))
    singles.preprocessor.task.restore({"task": "classification", "pair": None})
    assert singles.preprocessor.task.pair is True  # a saved decision stays


def test_keras_arguments_work_on_raw_text(classifier):
    trained = classifier
    seen = []

    class Count(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)

    history = trained.fit(TEXTS, LABELS, batch_size=2, epochs=2, steps_per_epoch=5,
                          callbacks=[Count()], verbose=0)
    assert len(history.history["loss"]) == 2 and len(seen) == 10
    history = trained.fit(TEXTS, LABELS, batch_size=2, validation_split=0.34,
                          sample_weight=[1, 2, 1, 0.5, 1, 1], verbose=0)
    assert "val_loss" in history.history and "val_accuracy" in history.history
    for class_weight in ({"pos": 2.0, "neg": 0.5}, {1: 2.0, 0: 0.5}):
        history = trained.fit(TEXTS, LABELS, batch_size=3, class_weight=class_weight,
                              verbose=0)
        assert np.isfinite(history.history["loss"]).all()
    history = trained.fit(TEXTS, LABELS, batch_size=3, verbose=0,
                          validation_data=(TEXTS[:2], LABELS[:2], [1.0, 2.0]))
    assert "val_loss" in history.history
    weighted = trained.evaluate(TEXTS, LABELS, sample_weight=[0, 0, 0, 0, 0, 1],
                                return_dict=True, verbose=0)
    alone = trained.evaluate(TEXTS[-1:], LABELS[-1:], return_dict=True, verbose=0)
    # Keras averages weighted losses over the batch: one input of six counts.
    assert weighted["loss"] * 6 == pytest.approx(alone["loss"], rel=1e-4)
    dataset = tf.data.Dataset.from_tensor_slices((TEXTS, [1, 0, 1, 0, 1, 0],
                                                  [1.0] * 6)).batch(3)
    assert np.isfinite(trained.evaluate(dataset, return_dict=True, verbose=0)["loss"])
    _raises(lambda: trained.fit(dataset, sample_weight=[1] * 6, verbose=0),
            "sample_weight", "inside")


def test_keras_arguments_refused_where_they_do_not_apply(regressor, tagger):
    _raises(lambda: regressor.fit(TEXTS, [1.0] * 6, class_weight={0: 1.0}, verbose=0),
            "class_weight", "regression")
    _raises(lambda: tagger.fit(["Ann ran"], [["B-PER", "O"]], class_weight={"O": 0.5},
                               verbose=0), "class_weight", "sample_weight")
    _raises(lambda: regressor.fit(TEXTS[:1], [1.0], validation_split=0.2, verbose=0),
            "validation_split", "no input to train on")


# --- BertPreprocessor takes Python lists ---------------------------------------------


def test_bert_preprocessor_takes_python_lists():
    pre = BertPreprocessor(rich_tokenizer(False), seq_length=16)
    texts = ["Hello world"] * 8
    batch = pre(texts)
    assert batch["input_word_ids"].shape == (8, 16)
    np.testing.assert_array_equal(batch["input_word_ids"],
                                  pre(tf.constant(texts))["input_word_ids"])
    pairs = pre((["Hello", "world"], ["world", "Hello"]))
    np.testing.assert_array_equal(
        pairs["input_word_ids"],
        pre((tf.constant(["Hello", "world"]), tf.constant(["world", "Hello"])))["input_word_ids"])
    assert pre(["Hello", "world"])["input_word_ids"].shape == (2, 16)  # a batch, not a pair
    with pytest.raises(ValueError, match=r"inputs\[1\]"):
        pre(["Hello", None])
    with pytest.raises(ValueError, match="3 texts but 2"):
        pre((["a", "b", "c"], ["d", "e"]))
    with pytest.raises(ValueError, match="empty"):
        pre([])


def test_text_to_a_model_without_preprocessor_says_how_to_get_one(classifier):
    ids_only = keras_bert.BertClassifier(classifier.encoder, num_classes=2)
    for call in (lambda: ids_only.fit(TEXTS, [0, 1] * 3, verbose=0),
                 lambda: ids_only.predict(["a", None], verbose=0)):
        _raises(call, "no preprocessor", "from_preset")
