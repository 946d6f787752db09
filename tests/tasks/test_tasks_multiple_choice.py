import csv
import os

import keras
import numpy as np
import pytest
from conftest import REPO

from keras_bert import BertConfig, BertEncoder
from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.tasks.base import FeatureSettings, feature_dataset
from keras_bert.tasks.multiple_choice.model import BertMultipleChoice
from keras_bert.tasks.multiple_choice.task import SwagExample, SwagTask

DATA = os.path.join(REPO, "tests", "fixtures", "tasks", "swag")
HEADER = (",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,"
          "ending3,label\n")


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_read_swag():
    task = SwagTask()
    train = task.read_examples(task.split_path(DATA, "train"))
    assert len(train) == 3
    first = train[0]
    assert first.id == "4021" and first.label == 0
    assert first.context == "A woman stands at the stove, stirring a pot."  # quoted comma
    assert first.start == "She"
    assert first.endings[2] == 'sings to the "pot" loudly.'  # doubled quotes
    assert first.choices()[0] == "She adds salt and tastes the soup."
    assert [e.label for e in train] == [0, 1, 2]
    test = task.read_examples(task.split_path(DATA, "test"), labelled=False)
    assert [e.id for e in test] == ["4021", "4022"] and test[0].label is None
    assert task.split_path(DATA, "dev").endswith("val.csv")
    with pytest.raises(DataError, match="no 'label' column"):
        task.read_examples(task.split_path(DATA, "test"))


def test_read_errors(tmp_path):
    task = SwagTask()
    row = "7,v,1,s,Ctx.,He,gold,a,b,c,d,{}\n"
    with pytest.raises(DataError, match=r"fields\.csv:3: has 11 fields, expected 12"):
        task.read_examples(_write(tmp_path, "fields.csv",
                                  HEADER + row.format(0) + "8,v,1,s,Ctx.,He,gold,a,b,c,d\n"))
    with pytest.raises(DataError, match=r"label\.csv:2: label '4' is not one of 0-3"):
        task.read_examples(_write(tmp_path, "label.csv", HEADER + row.format(4)))
    with pytest.raises(DataError, match="has no examples"):
        task.read_examples(_write(tmp_path, "empty.csv", HEADER))
    with pytest.raises(DataError, match=r"header\.csv:1: .*lacks \['ending3'\]"):
        task.read_examples(_write(tmp_path, "header.csv", "sent1,sent2,ending0,ending1,ending2\n"))
    # A quoted field over two lines: the error names the line the row starts on.
    text = HEADER + '1,v,1,s,"two\nlines",He,gold,a,b,c,d,0\n2,v,1,s,Ctx,He,gold,a,b,c\n'
    with pytest.raises(DataError, match=r"multi\.csv:4: has 10 fields"):
        task.read_examples(_write(tmp_path, "multi.csv", text))
    with pytest.raises(ArgumentError, match="no split"):
        task.split_path(DATA, "validation")


def test_features(tokenizer):
    task = SwagTask()
    examples = task.read_examples(task.split_path(DATA, "train"))
    features = task.features(examples, tokenizer, FeatureSettings(max_seq_length=20))
    ids = features.inputs["input_word_ids"]
    assert ids.shape == (3, 4, 20) and ids.dtype == np.int32
    for i, example in enumerate(examples):
        context = tokenizer.tokenize(example.context).numpy().tolist()
        for k, choice in enumerate(example.choices()):
            a, b = list(context), tokenizer.tokenize(choice).numpy().tolist()
            while len(a) + len(b) > 17:
                (a if len(a) > len(b) else b).pop()
            expected = [tokenizer.cls_id, *a, tokenizer.sep_id, *b, tokenizer.sep_id]
            assert ids[i, k, :len(expected)].tolist() == expected
            assert not ids[i, k, len(expected):].any()
            assert features.inputs["input_type_ids"][i, k].tolist() == (
                [0] * (len(a) + 2) + [1] * (len(b) + 1) + [0] * (20 - len(expected)))
    assert features.lengths.tolist() == features.inputs["input_mask"].sum(-1).max(-1).tolist()
    assert features.labels.tolist() == [0, 1, 2]
    unlabelled = task.features([SwagExample("x", "A.", "B", ("c", "d", "e", "f"))], tokenizer,
                               FeatureSettings(max_seq_length=8))
    assert unlabelled.labels is None


def test_decode_evaluate_write(tmp_path, tokenizer):
    task = SwagTask()
    examples = task.read_examples(task.split_path(DATA, "train"))
    features = task.features(examples, tokenizer, FeatureSettings(max_seq_length=8))
    logits = np.array([[3, 1, 0, 0], [0, 0, 5, 1], [0, 0, 2, 1]], np.float32)
    predictions = task.decode(examples, features, logits)
    assert predictions == [0, 2, 2]
    assert task.evaluate(examples, predictions) == {"accuracy": pytest.approx(2 / 3)}
    path = str(tmp_path / "swag.csv")
    task.write_predictions(examples, predictions, path)
    with open(path, newline="") as f:
        assert list(csv.reader(f)) == [["index", "prediction"], ["4021", "0"], ["4022", "2"],
                                       ["4023", "2"]]
    with pytest.raises(ArgumentError, match="outputs"):
        task.decode(examples, features, logits[:, :3])


def test_end_to_end(tmp_path, tokenizer):
    task = SwagTask()
    settings = FeatureSettings(max_seq_length=24)
    train = task.features(task.read_examples(task.split_path(DATA, "train")), tokenizer,
                          settings)
    encoder = BertEncoder(BertConfig.from_preset(
        "tiny", vocab_size=tokenizer.vocab_size, hidden_size=32, num_heads=4,
        intermediate_size=64, max_position_embeddings=64))
    model = task.build_model(encoder)
    assert isinstance(model, BertMultipleChoice) and model.num_choices == 4
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit(feature_dataset(train, 2, training=True, seed=0), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    dev_examples = task.read_examples(task.split_path(DATA, "dev"))
    dev = task.features(dev_examples, tokenizer, settings)
    outputs = model.predict(feature_dataset(dev, len(dev), with_labels=False), verbose=0)
    assert outputs.shape == (2, 4)
    predictions = task.decode(dev_examples, dev, outputs, settings)
    assert all(p in range(4) for p in predictions)
    assert set(task.evaluate(dev_examples, predictions)) == {"accuracy"}
    path = str(tmp_path / "val_predictions.csv")
    task.write_predictions(dev_examples, predictions, path)
    lines = open(path).read().splitlines()
    assert lines == ["index,prediction"] + [f"{e.id},{p}" for e, p in zip(dev_examples,
                                                                         predictions)]


def test_a_blank_line_keeps_the_rows_after_it_in_their_place(tmp_path, caplog):
    import logging

    header = "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3\n"
    row = "v,1,s,Ctx {}.,He,gold,a,b,c,d\n"
    text = header + row.format(0) + "\n" + row.format(2) + row.format(3) + "\n"
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        examples = SwagTask().read_examples(_write(tmp_path, "in.csv", text), labelled=False)
    assert [(e.id, e.context) for e in examples] == [("0", "Ctx 0."), ("2", "Ctx 2."),
                                                     ("3", "Ctx 3.")]
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "line(s) 3 are blank" in warned[0]
