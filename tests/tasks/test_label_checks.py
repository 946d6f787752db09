"""Labels that do not belong (issue 46), on the Python path: the task models' `fit` and
`evaluate` on raw text, and the task objects' file readers, judge a label, a tag or a
score with the same function (`keras_bert.tasks.labels`), naming the index in Python
and the file and line in files. The commands' side is
tests/pipelines/test_own_data_labels.py. Tiny random-weight encoders: every refusal
comes before any training."""

from __future__ import annotations

import logging

import keras
import pytest
from export_support import VOCAB, rich_tokenizer, tiny_config

import keras_bert
from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.tasks.base import FeatureSettings
from keras_bert.tasks.glue.classification import TextClassificationTask
from keras_bert.tasks.keras_face import TextPreprocessor, classification_task
from keras_bert.tasks.registry import get_task
from keras_bert.tasks.tagging.task import NerTask

TEXTS = ["a gripping film", "dull and long", "wonderful acting", "a waste of time"]
TAGS = ("O", "B-PER", "I-PER")


def _encoder():
    keras.utils.set_random_seed(0)
    return keras_bert.BertEncoder(tiny_config(rich_tokenizer(False).vocab_size))


def _classifier(label_names=None, num_classes=2):
    task = classification_task(label_names, num_classes)
    model = task.build_model(_encoder())
    model.preprocessor = TextPreprocessor.for_task(task, VOCAB, lower_case=False,
                                                   sequence_length=16)
    model.compile()
    return model


def _tagger(labels=TAGS):
    task = NerTask(labels=labels)  # what BertTokenClassifier.from_preset(label_names=) builds
    model = task.build_model(_encoder())
    model.preprocessor = TextPreprocessor.for_task(task, VOCAB, lower_case=False,
                                                   sequence_length=16)
    model.compile()
    return model


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- the tagger ------------------------------------------------------------------------


def test_a_tag_the_tagger_does_not_know_is_refused_naming_it():
    tagger = _tagger()
    sentences = ["Ann ran", "Bob went to Paris"]
    tags = [["B-PER", "O"], ["B-PER", "O", "O", "B-LOC"]]
    for call in (tagger.fit, tagger.evaluate):
        with pytest.raises(ArgumentError) as caught:
            call(sentences, tags, verbose=0)
        message = str(caught.value)
        assert "'B-LOC'" in message and "sentence 1, word 3" in message, message
        assert "['O', 'B-PER', 'I-PER']" in message and "label_names" in message, message
        assert caught.value.field == "y"
    # Tags as class indices are the tags of those indices.
    examples = tagger.preprocessor.examples(["Ann ran"], [[1, 0]])
    assert examples[0].tags == ("B-PER", "O")
    with pytest.raises(ArgumentError, match=r"tag 3 is not one of .* \(sentence 0, word 1\)"):
        tagger.preprocessor.examples(["Ann ran"], [[1, 3]])


def test_tag_files_refuse_a_tag_train_never_had_naming_file_and_line(tmp_path):
    task = get_task("tagging")
    train = task.read_examples(_write(tmp_path / "train.txt", "Dogs NOUN\nbark VERB\n"))
    task.features(train, rich_tokenizer(False), FeatureSettings(max_seq_length=16))
    dev = _write(tmp_path / "dev.txt", "Cats NOUN\nsleep VERB\n\nRain NOUN\nfalls ADV\n")
    with pytest.raises(DataError, match=r"dev\.txt:5: tag 'ADV' is not one of the tagger's "
                                        r"tags \['NOUN', 'VERB'\]"):
        task.read_examples(dev)
    # Prediction input: tags may be left out, but those given must belong too.
    assert len(task.read_examples(_write(tmp_path / "w.txt", "Cats\nsleep\n"),
                                  labelled=False)) == 1
    with pytest.raises(DataError, match=r"dev\.txt:5: tag 'ADV'"):
        task.read_examples(dev, labelled=False)
    # The same judgment as the Python path: the task's raw-text examples.
    with pytest.raises(ArgumentError, match=r"tag 'ADV' is not one of the tagger's tags "
                                            r"\['NOUN', 'VERB'\] \(sentence 0, word 1\)"):
        task.text_examples(["Rain falls"], [["NOUN", "ADV"]])


def test_features_never_train_an_unknown_tag_as_ignore(tmp_path):
    from keras_bert.tasks.tagging.generic import TaggingTask
    from keras_bert.tasks.tagging.task import NerExample

    settings = FeatureSettings(max_seq_length=8)
    with pytest.raises(ArgumentError, match=r"tag 'ADV' is not one of the tagger's tags "
                                            r"\['NOUN', 'VERB'\] \(example 0 \(line 4\)\)"):
        TaggingTask(["NOUN", "VERB"]).features(
            [NerExample(("Rain", "falls"), ("NOUN", "ADV"), line=3)], rich_tokenizer(False),
            settings)
    # CoNLL-2003 (`ner`): a dev chunk-start tag train lacks (IOB1's rare B-) is read and
    # scored as a wrong prediction, as conlleval does; raw text still refuses it.
    ner = NerTask(["O", "I-PER"])
    dev = ner.read_examples(_write(tmp_path / "valid.txt", "Ann B-PER\nran O\n"))
    assert ner.features(dev, rich_tokenizer(False), settings).extra["unknown_tags"] == 1
    with pytest.raises(ArgumentError, match="tag 'B-PER'"):
        ner.text_examples(["Ann ran"], [["B-PER", "O"]])


# --- the classifier --------------------------------------------------------------------


def test_label_names_a_numbered_classifier_lacks_are_refused_with_the_hint():
    model = _classifier(num_classes=2)  # labels "0" and "1"
    with pytest.raises(ArgumentError) as caught:
        model.fit(TEXTS, ["neg", "pos", "pos", "neg"], verbose=0)
    message = str(caught.value)
    assert "'neg'" in message and "'pos'" in message and "['0', '1']" in message, message
    assert "label_names=['neg', 'pos']" in message and "y[0]" in message, message
    # Class indices 0..n-1 (and the names "0", "1") are its labels.
    examples = model.preprocessor.examples(TEXTS, [0, 1, "1", 0])
    assert [e.label for e in examples] == ["0", "1", "1", "0"]
    with pytest.raises(ArgumentError, match=r"label 2 is neither one of .* \(y\[3\]\)"):
        model.preprocessor.examples(TEXTS, [0, 1, 1, 2])
    named = _classifier(["neg", "pos"])
    assert [e.label for e in named.preprocessor.examples(TEXTS, ["neg", 1, "pos", 0])] == [
        "neg", "pos", "pos", "neg"]


@pytest.mark.parametrize("bad,words", [
    (float("nan"), ["score nan is not a finite number", "y[2]"]),
    (float("inf"), ["score inf is not a finite number", "y[2]"]),
    ("high", ["score 'high' is not a number", "y[2]"]),
])
def test_a_regression_refuses_targets_that_are_not_finite_numbers(bad, words):
    task = classification_task(None, num_classes=1)
    for word in words:
        with pytest.raises(ArgumentError, match=word.replace("[", r"\[").replace("]", r"\]")):
            task.text_examples(TEXTS[:3], [1.0, 2.5, bad])
    assert [e.label for e in task.text_examples(TEXTS[:2], [1, "2.5"])] == [1.0, 2.5]


def test_the_regressor_model_refuses_nan_before_training():
    model = _classifier(num_classes=1)
    with pytest.raises(ArgumentError, match=r"score nan is not a finite number \(y\[1\]\)"):
        model.fit(TEXTS[:2], [0.5, float("nan")], verbose=0)


def test_regression_files_refuse_nan_naming_file_and_line(tmp_path):
    task = TextClassificationTask(None)  # a regression, as a saved run restores it
    for bad, word in (("nan", "not a finite number"), ("-inf", "not a finite number"),
                      ("high", "not a number")):
        path = _write(tmp_path / "dev.tsv", f"text\tlabel\na\t1.5\nb\t{bad}\n")
        with pytest.raises(DataError, match=rf"dev\.tsv:3: score '{bad}' is {word}"):
            task.read_examples(path)


def test_mixed_label_kinds_warn_naming_both(tmp_path, caplog):
    path = _write(tmp_path / "train.tsv", "text\tlabel\na\t0\nb\t1\nc\tneg\nd\tpos\n")
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        get_task("classification").read_examples(path)
    assert "train.tsv mixes numeric labels (0, 1) with names (neg, pos): they become 4 " \
           "classes" in caplog.text
    caplog.clear()
    task = TextClassificationTask.from_data()  # labels learnt from y
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        task.text_examples(TEXTS, [0, 1, "neg", "pos"])
    assert "y mixes numeric labels (0, 1) with names (neg, pos)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        get_task("classification").read_examples(
            _write(tmp_path / "ok.tsv", "text\tlabel\na\tneg\nb\tpos\n"))
        TextClassificationTask.from_data().text_examples(TEXTS[:2], [0, 1])
    assert "mixes" not in caplog.text
