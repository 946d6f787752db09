"""`task_model.export(...)` checks where and how it writes before any work (issue 46):
a destination nothing can be written to fails at once naming it (not with a raw
FileNotFoundError after the tracing), the command line's `saved_model` is accepted
beside Python's `tf_saved_model`, and an unknown format names the accepted ones."""

from __future__ import annotations

import os
import time

import keras
import pytest
from export_support import VOCAB, rich_tokenizer, tiny_config

import keras_bert
import keras_bert.export.saved_model as saved_model
import keras_bert.tasks.exporting as export_models
from keras_bert.core.errors import ArgumentError, OutputError
from keras_bert.tasks.keras_face import TextPreprocessor, classification_task


@pytest.fixture(scope="module")
def classifier():
    keras.utils.set_random_seed(0)
    encoder = keras_bert.BertEncoder(tiny_config(rich_tokenizer(False).vocab_size))
    preprocessor = TextPreprocessor.for_task(classification_task(["neg", "pos"]), VOCAB,
                                             lower_case=False, sequence_length=16)
    return keras_bert.BertClassifier(encoder, num_classes=2, preprocessor=preprocessor)


def _no_work(monkeypatch):
    """Fails the test if the export starts its work (the source, the tracing)."""
    def started(*args, **kwargs):
        raise AssertionError("the export started its work before checking the path")

    monkeypatch.setattr(export_models, "export_source", started)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
@pytest.mark.parametrize("path", ["/proc/x", "/proc/keras_bert/deeper/model"])
def test_an_unwritable_destination_fails_before_any_work(classifier, monkeypatch, path):
    _no_work(monkeypatch)
    started = time.monotonic()
    with pytest.raises(OutputError, match=f"export path '{path}' cannot be written"):
        classifier.export(path)
    assert time.monotonic() - started < 2


def test_a_file_as_destination_fails_before_any_work(classifier, monkeypatch, tmp_path):
    _no_work(monkeypatch)
    target = tmp_path / "model"
    target.write_text("not a directory")
    with pytest.raises(OutputError, match="is a file; give a directory path"):
        classifier.export(str(target))
    with pytest.raises(OutputError, match="cannot be created"):
        classifier.export(str(target / "sub"))


@pytest.mark.parametrize("spelling", ["tf_saved_model", "saved_model"])
def test_both_spellings_of_the_saved_model_format_export_one(classifier, monkeypatch,
                                                           tmp_path, spelling):
    calls = []

    def fake(source, output_dir, name, **kwargs):
        calls.append((output_dir, name, source.task))
        return os.path.join(output_dir, name, "1"), {}

    monkeypatch.setattr(saved_model, "export_saved_model", fake)
    path = classifier.export(str(tmp_path / "clf"), format=spelling)
    assert path == str(tmp_path / "clf" / "1")
    assert calls == [(str(tmp_path), "clf", "classification")]


@pytest.mark.parametrize("format", ["tflite", "SavedModel", None, 3])
def test_an_unknown_format_names_the_accepted_ones(classifier, monkeypatch, tmp_path, format):
    _no_work(monkeypatch)
    with pytest.raises(ArgumentError) as caught:
        classifier.export(str(tmp_path / "clf"), format=format)
    message = str(caught.value)
    assert caught.value.field == "format" and repr(format) in message
    for name in ("'tf_saved_model'", "'saved_model'", "'litert'", "'onnx'"):
        assert name in message
    assert os.listdir(tmp_path) == []
