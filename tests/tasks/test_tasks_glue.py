import os

import keras
import numpy as np
import pytest
from conftest import REPO, SHARED_DATA

from keras_bert import BertConfig, BertEncoder, BertTokenizer
from keras_bert.core.errors import ArgumentError, DataError, InputNotFoundError
from keras_bert.tasks.base import FeatureSettings, feature_dataset, truncation_report
from keras_bert.tasks.glue.model import BertClassifier
from keras_bert.tasks.glue.task import GLUE_TASKS, GlueTask

DATA = os.path.join(REPO, "tests", "fixtures", "tasks", "glue")
SHARED_GLUE = os.path.join(SHARED_DATA, "glue")
needs_shared = pytest.mark.skipif(not os.path.isdir(SHARED_GLUE),
                                  reason=f"shared GLUE data not found at {SHARED_GLUE}")


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_registry():
    assert sorted(GLUE_TASKS) == sorted(
        ["cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli"])
    assert GLUE_TASKS["mnli"].labels == ("contradiction", "entailment", "neutral")
    assert GLUE_TASKS["qnli"].labels == GLUE_TASKS["rte"].labels == (
        "entailment", "not_entailment")
    assert GLUE_TASKS["stsb"].num_classes == 1 and GLUE_TASKS["stsb"].is_regression
    assert GLUE_TASKS["mnli"].dev_splits == ("dev_matched", "dev_mismatched")
    assert {t.family for t in GLUE_TASKS.values()} == {"glue"}
    for task in GLUE_TASKS.values():
        assert task.main_metric in task.metric_names
        assert GlueTask.from_config(task.config()) is task
    with pytest.raises(ArgumentError, match="differ"):
        GlueTask.from_config({"task": "rte", "labels": ["0", "1"]})
    GLUE_TASKS["rte"].restore(GLUE_TASKS["rte"].config())  # nothing to take back
    with pytest.raises(ArgumentError, match="not GLUE rte"):
        GLUE_TASKS["rte"].restore(GLUE_TASKS["mnli"].config())


def test_split_paths():
    mnli = GLUE_TASKS["mnli"]
    assert mnli.split_path(DATA, "dev_mismatched") == os.path.join(
        DATA, "MNLI", "dev_mismatched.tsv")
    # The task's own directory works as well as the GLUE root.
    assert mnli.split_path(os.path.join(DATA, "MNLI"), "train") == os.path.join(
        DATA, "MNLI", "train.tsv")
    assert mnli.split_path(DATA, "test") == os.path.join(DATA, "MNLI", "test_matched.tsv")
    assert mnli.submission_name("test_mismatched") == "MNLI-mm.tsv"
    assert GLUE_TASKS["stsb"].submission_name() == "STS-B.tsv"
    with pytest.raises(ArgumentError, match="no split 'dev'"):
        mnli.split_path(DATA, "dev")


def test_mnli_layouts():
    mnli = GLUE_TASKS["mnli"]
    train = mnli.read_examples(mnli.split_path(DATA, "train"))  # 12 columns
    dev = mnli.read_examples(mnli.split_path(DATA, "dev_matched"))  # 16 columns
    mismatched = mnli.read_examples(mnli.split_path(DATA, "dev_mismatched"))
    test = mnli.read_examples(mnli.split_path(DATA, "test_matched"), labelled=False)
    assert [len(x) for x in (train, dev, mismatched, test)] == [4, 3, 2, 2]
    assert train[0].text_a == "The river is cold in winter."
    assert train[0].text_b == "The water is warm all year."
    assert [e.label for e in train] == ["contradiction", "entailment", "neutral", "entailment"]
    assert dev[2].label == "neutral"  # gold_label, the last column, not label1..5
    assert train[3].text_a == 'They said " wait here and left.'  # quotes are text
    assert [e.guid for e in test] == ["0", "1"] and test[0].label is None
    with pytest.raises(DataError, match="no 'gold_label' label column"):
        mnli.read_examples(mnli.split_path(DATA, "test_matched"))
    # labelled=False ignores the label column of a train file.
    assert all(e.label is None for e in mnli.read_examples(mnli.split_path(DATA, "train"),
                                                          labelled=False))


@pytest.mark.parametrize("name, split, count, first", [
    ("qqp", "train", 3, ("0", "How do I learn to cook rice?",
                         "What is the best way to cook rice?", "1")),
    ("qqp", "dev", 2, ("40", "What is the best way to cook rice?",
                       "How do I learn to cook rice?", "1")),
    ("qqp", "test", 3, ("0", "How do I learn to cook rice?",
                        "What is the best way to cook rice?", None)),
    ("qnli", "train", 2, ("0", "What color is the sky?", "On a clear day the sky looks blue.",
                          "entailment")),
    ("qnli", "test", 2, ("0", "What color is the sky?", "On a clear day the sky looks blue.",
                         None)),
    ("wnli", "dev", 2, ("0", "The cup did not fit in the bag because it was too big.",
                        "The cup was too big.", "1")),
    ("wnli", "test", 2, ("0", "The cup did not fit in the bag because it was too big.",
                         "The cup was too big.", None)),
    ("cola", "train", 4, ("0", "The dog barked.", None, "1")),  # no header
    ("cola", "test", 2, ("0", "The cat slept.", None, None)),  # header "index sentence"
    ("sst2", "test", 2, ("0", "a warm , funny film ", None, None)),
    ("mrpc", "test", 2, ("0", "The firm sold the unit .", "The unit was sold by the firm .",
                         None)),  # starts with a BOM
    ("stsb", "train", 4, ("0", "A dog runs in the park.", "A dog is running in a park.", 4.8)),
    ("stsb", "test", 1, ("0", "A man is cooking.", "A man cooks food.", None)),
    ("rte", "test", 1, ("0", "The bridge opened in 1990.", "The bridge is new.", None)),
])
def test_layouts(name, split, count, first):
    task = GLUE_TASKS[name]
    examples = task.read_examples(task.split_path(DATA, split), labelled=split != "test")
    assert len(examples) == count
    e = examples[0]
    assert (e.guid, e.text_a, e.text_b, e.label) == first


def test_cola_quote_and_headerless_rows():
    cola = GLUE_TASKS["cola"]
    examples = cola.read_examples(cola.split_path(DATA, "train"))
    assert examples[2].text_a == 'She said " hello.'
    assert [e.guid for e in examples] == ["0", "1", "2", "3"]  # row numbers
    assert [e.label for e in cola.read_examples(cola.split_path(DATA, "dev"))] == ["1", "0"]


def test_data_errors(tmp_path):
    rte = GLUE_TASKS["rte"]
    header = "index\tsentence1\tsentence2\tlabel\n"
    path = _write(tmp_path, "cols.tsv", header + "0\ta\tb\tentailment\n1\ta\tb\n")
    with pytest.raises(DataError, match=r"cols\.tsv:3: has 3 tab-separated columns, expected 4"):
        rte.read_examples(path)
    path = _write(tmp_path, "label.tsv", header + "0\ta\tb\tentailment\n1\ta\tb\tmaybe\n")
    with pytest.raises(DataError, match=r"label\.tsv:3: label 'maybe' is not one of"):
        rte.read_examples(path)
    assert len(rte.read_examples(path, labelled=False)) == 2  # labels ignored
    with pytest.raises(DataError, match="has no examples"):
        rte.read_examples(_write(tmp_path, "empty.tsv", header))
    with pytest.raises(DataError, match="is empty"):
        rte.read_examples(_write(tmp_path, "nothing.tsv", ""))
    with pytest.raises(DataError, match=r"nohead\.tsv:1: does not look like a GLUE rte file"):
        rte.read_examples(_write(tmp_path, "nohead.tsv", "0\ta\tb\tentailment\n"))
    stsb = GLUE_TASKS["stsb"]
    bad_score = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
                 "sentence2\tscore\n0\tg\tf\ty\to\ts\ts\ta\tb\thigh\n")
    with pytest.raises(DataError, match=r":2: score 'high' is not a number"):
        stsb.read_examples(_write(tmp_path, "score.tsv", bad_score))
    # STS-B scores are 0 to 5: one outside (or NaN) is refused, naming its line.
    header_stsb = bad_score.splitlines(keepends=True)[0]
    for bad in ("5.5", "-0.1", "nan", "inf"):
        rows = f"0\tg\tf\ty\to\ts\ts\ta\tb\t4.0\n1\tg\tf\ty\to\ts\ts\ta\tb\t{bad}\n"
        with pytest.raises(DataError, match=rf":3: score '{bad}' is outside GLUE stsb's "
                                            r"range 0 to 5"):
            stsb.read_examples(_write(tmp_path, "range.tsv", header_stsb + rows))
    rows = "0\tg\tf\ty\to\ts\ts\ta\tb\t0\n1\tg\tf\ty\to\ts\ts\ta\tb\t5.000\n"
    assert [e.label for e in stsb.read_examples(
        _write(tmp_path, "ends.tsv", header_stsb + rows))] == [0.0, 5.0]
    cola = GLUE_TASKS["cola"]
    with pytest.raises(DataError, match=r"cola\.tsv:2: has 3 tab-separated columns"):
        cola.read_examples(_write(tmp_path, "cola.tsv", "s\t1\t\tGood.\ns\t1\tBad.\n"))
    with pytest.raises(DataError, match=r"bytes\.tsv:2: not UTF-8"):
        path = tmp_path / "bytes.tsv"
        path.write_bytes(header.encode() + b"0\t\xff\tb\tentailment\n")
        rte.read_examples(str(path))
    with pytest.raises(InputNotFoundError):
        rte.read_examples(str(tmp_path / "missing.tsv"))


def test_truncated_examples_are_counted_and_reported(tokenizer):
    mnli = GLUE_TASKS["mnli"]
    examples = mnli.read_examples(mnli.split_path(DATA, "train"))
    for seq in (8, 16, 128):
        features = mnli.features(examples, tokenizer, FeatureSettings(max_seq_length=seq))
        full = [len(tokenizer.tokenize(e.text_a).numpy()) + len(
            tokenizer.tokenize(e.text_b).numpy()) + 3 for e in examples]
        expected = [max(0, n - seq) for n in full]
        assert features.extra["truncated_tokens"].tolist() == expected
        message, large = truncation_report(features, seq)
        cut = sum(1 for n in expected if n)
        if cut:
            assert message.startswith(f"{cut} of {len(examples)} examples") and large
            assert "raise --max_seq_length" in message
        else:
            assert message == f"no example was cut to max_seq_length {seq}" and not large


def test_pair_features(tokenizer):
    mnli = GLUE_TASKS["mnli"]
    examples = mnli.read_examples(mnli.split_path(DATA, "train"))
    features = mnli.features(examples, tokenizer, FeatureSettings(max_seq_length=16))
    ids = features.inputs["input_word_ids"]
    assert ids.shape == (4, 16) and ids.dtype == np.int32
    for i, example in enumerate(examples):
        a = tokenizer.tokenize(example.text_a).numpy().tolist()
        b = tokenizer.tokenize(example.text_b).numpy().tolist()
        while len(a) + len(b) > 13:  # google-research/bert: pop from the longer, b on ties
            (a if len(a) > len(b) else b).pop()
        expected = [tokenizer.cls_id, *a, tokenizer.sep_id, *b, tokenizer.sep_id]
        n = len(expected)
        assert ids[i, :n].tolist() == expected and not ids[i, n:].any()
        assert features.inputs["input_type_ids"][i].tolist() == (
            [0] * (len(a) + 2) + [1] * (len(b) + 1) + [0] * (16 - n))
        assert features.inputs["input_mask"][i].sum() == n == features.lengths[i]
    assert features.labels.tolist() == [0, 1, 2, 1] and features.labels.dtype == np.int32
    assert features.example_index.tolist() == [0, 1, 2, 3]


def test_single_sentence_and_regression_features(tokenizer):
    cola = GLUE_TASKS["cola"]
    features = cola.features(cola.read_examples(cola.split_path(DATA, "train")), tokenizer,
                             FeatureSettings(max_seq_length=12))
    assert not features.inputs["input_type_ids"].any()
    first = [tokenizer.cls_id, *tokenizer.tokenize("The dog barked.").numpy().tolist(),
             tokenizer.sep_id]
    assert features.inputs["input_word_ids"][0, :len(first)].tolist() == first
    stsb = GLUE_TASKS["stsb"]
    features = stsb.features(stsb.read_examples(stsb.split_path(DATA, "train")), tokenizer,
                             FeatureSettings(max_seq_length=12))
    assert features.labels.dtype == np.float32
    np.testing.assert_allclose(features.labels, [4.8, 0.0, 3.25, 4.4])
    test = stsb.read_examples(stsb.split_path(DATA, "test"), labelled=False)
    assert stsb.features(test, tokenizer, FeatureSettings(max_seq_length=12)).labels is None


def test_decode_evaluate_write(tmp_path):
    qqp = GLUE_TASKS["qqp"]
    examples = qqp.read_examples(qqp.split_path(DATA, "train"))  # labels 1, 0, 1
    features = qqp.features(examples, _simple_tokenizer(), FeatureSettings(max_seq_length=8))
    predictions = qqp.decode(examples, features, np.array([[0.1, 2.0], [1.0, 0.0], [3, 1]]))
    assert predictions == ["1", "0", "0"]
    assert qqp.evaluate(examples, predictions) == pytest.approx({"accuracy": 2 / 3, "f1": 2 / 3})
    path = str(tmp_path / "QQP.tsv")
    qqp.write_predictions(examples, predictions, path)
    assert open(path).read() == "index\tprediction\n0\t1\n1\t0\n2\t0\n"
    with pytest.raises(ArgumentError, match="shaped"):
        qqp.decode(examples, features, np.zeros((3, 3)))


def _simple_tokenizer():
    return BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s"])


@needs_shared
@pytest.mark.parametrize("name, split, count", [
    ("cola", "train", 8551), ("cola", "dev", 1043), ("sst2", "train", 67349),
    ("mrpc", "dev", 408), ("stsb", "dev", 1500), ("rte", "dev", 277),
])
def test_real_glue_files(name, split, count):
    task = GLUE_TASKS[name]
    path = task.split_path(SHARED_GLUE, split)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not in the shared data")
    examples = task.read_examples(path)
    assert len(examples) == count
    if task.labels:
        assert {e.label for e in examples} == set(task.labels)
    else:
        assert all(0.0 <= e.label <= 5.0 for e in examples)
    if task.name == "mrpc":  # the BOM before "Quality" must not hide the header
        assert examples[0].text_b.startswith('" The foodservice pie business')


@needs_shared
def test_real_mrpc_features(tokenizer):
    mrpc = GLUE_TASKS["mrpc"]
    examples = mrpc.read_examples(mrpc.split_path(SHARED_GLUE, "dev"))
    features = mrpc.features(examples, tokenizer, FeatureSettings(max_seq_length=64))
    assert features.inputs["input_word_ids"].shape == (408, 64)
    assert (features.inputs["input_word_ids"][:, 0] == tokenizer.cls_id).all()
    assert (features.lengths <= 64).all() and features.labels.shape == (408,)


def _tiny_encoder(tokenizer):
    return BertEncoder(BertConfig.from_preset(
        "tiny", vocab_size=tokenizer.vocab_size, hidden_size=32, num_heads=4,
        intermediate_size=64, max_position_embeddings=64))


@pytest.mark.parametrize("name, dev_split", [("mnli", "dev_mismatched"), ("stsb", "dev")])
def test_end_to_end(tmp_path, tokenizer, name, dev_split):
    task = GLUE_TASKS[name]
    settings = FeatureSettings(max_seq_length=32)
    train = task.features(task.read_examples(task.split_path(DATA, "train")), tokenizer,
                          settings)
    model = task.build_model(_tiny_encoder(tokenizer))
    assert isinstance(model, BertClassifier) and model.num_classes == task.num_classes
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit(feature_dataset(train, 2, training=True, seed=1), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])

    dev_examples = task.read_examples(task.split_path(DATA, dev_split))
    dev = task.features(dev_examples, tokenizer, settings)
    outputs = model.predict(feature_dataset(dev, len(dev), with_labels=False), verbose=0)
    assert outputs.shape == (len(dev_examples), task.num_classes)
    predictions = task.decode(dev_examples, dev, outputs, settings)
    if task.labels:
        assert set(predictions) <= set(task.labels)
    else:
        assert all(isinstance(p, float) for p in predictions)
    metrics = task.evaluate(dev_examples, predictions)
    assert set(metrics) == set(task.metric_names)
    path = str(tmp_path / "predictions.tsv")
    task.write_predictions(dev_examples, predictions, path)
    lines = open(path).read().splitlines()
    assert lines[0] == "index\tprediction" and len(lines) == len(dev_examples) + 1
    assert [line.split("\t")[0] for line in lines[1:]] == [e.guid for e in dev_examples]
    if not task.labels:
        assert [float(line.split("\t")[1]) for line in lines[1:]] == pytest.approx(
            predictions, abs=1e-4)


def test_a_blank_line_keeps_the_rows_after_it_in_their_place(tmp_path, caplog):
    # Rows are numbered by their place in the file, blank ones included, so predictions
    # keyed by that number still match the input rows; the blank line is named.
    import logging

    cola = GLUE_TASKS["cola"]
    path = _write(tmp_path, "in.tsv", "s\t1\t\tGood.\n\ns\t0\t*\tBad one.\ns\t1\t\tFine.\n\n")
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        examples = cola.read_examples(path, labelled=False)
    assert [(e.guid, e.text_a) for e in examples] == [("0", "Good."), ("2", "Bad one."),
                                                      ("3", "Fine.")]
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "line(s) 2 are blank" in warned[0]
