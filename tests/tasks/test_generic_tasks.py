"""Your own labelled data through the task objects: `classification` (TSV/CSV with a
header, label names learnt from the training file) and `tagging` (CoNLL-style, any tag
set), their file conventions, errors, saved configs and the registry's names for them.
The end-to-end run (features, model, export) is tests/tasks/test_task_contract.py's."""

import os

import pytest
from export_support import rich_tokenizer

from keras_bert.core.errors import ArgumentError, DataError, InputNotFoundError
from keras_bert.tasks.base import FeatureSettings
from keras_bert.tasks.glue.table import table_path, write_table
from keras_bert.tasks.registry import get_task
from keras_bert.tasks.tagging.generic import TaggingTask

SETTINGS = FeatureSettings(max_seq_length=16)


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_classification_learns_sorted_labels_from_training_tsv(tmp_path):
    task = get_task("classification")
    train = task.read_examples(_write(tmp_path / "train.tsv", "id\ttext\tlabel\n"
                                      "a\tfine\tpos\nb\tbad\tneg\n\nc\tok\tmeh\n"))
    assert [(e.guid, e.text_a, e.text_b, e.label) for e in train] == [
        ("a", "fine", None, "pos"), ("b", "bad", None, "neg"), ("c", "ok", None, "meh")]
    features = task.features(train, rich_tokenizer(False), SETTINGS)
    assert task.labels == ("meh", "neg", "pos") and features.labels.tolist() == [2, 1, 0]
    assert task.num_classes == 3 and task.config() == {
        "task": "classification", "labels": ["meh", "neg", "pos"], "pair": False}
    with pytest.raises(DataError, match=r"dev.tsv:3: label 'great' is not one of the labels "
                                        r"learnt from the training data"):
        task.read_examples(_write(tmp_path / "dev.tsv", "label\ttext\npos\tx\ngreat\ty\n"))
    with pytest.raises(DataError, match="holds text pairs, but the task classifies single"):
        task.read_examples(_write(tmp_path / "p.tsv", "text_a\ttext_b\tlabel\nx\ty\tpos\n"))


def test_classification_reads_csv_pairs_with_quoting(tmp_path):
    task = get_task("classification")
    path = _write(tmp_path / "train.csv",
                  'text_a,text_b,label\n"a, b","say ""hi""\nthere",yes\nc,d,no\n')
    examples = task.read_examples(path)
    assert [(e.guid, e.text_a, e.text_b, e.label) for e in examples] == [
        ("0", "a, b", 'say "hi"\nthere', "yes"), ("1", "c", "d", "no")]
    assert task.pair is True and task.serving(SETTINGS).pair
    unlabelled = task.read_examples(_write(tmp_path / "test.csv", "text_a,text_b\ne,f\n"),
                                    labelled=False)
    assert unlabelled[0].label is None
    with pytest.raises(DataError, match=r"test.csv:1: has no 'label' column"):
        task.read_examples(str(tmp_path / "test.csv"))


def test_glue_column_names_read_too_and_write_table_round_trips(tmp_path):
    path = str(tmp_path / "train.tsv")
    write_table(path, [("one", "x"), ("two", "y")])
    assert [e.text_a for e in get_task("classification").read_examples(path)] == ["one", "two"]
    glue_layout = _write(tmp_path / "g.tsv", "sentence1\tsentence2\tlabel\na\tb\tx\n")
    assert get_task("classification").read_examples(glue_layout)[0].text_b == "b"
    with pytest.raises(ValueError, match="tab or a line break"):
        write_table(path, [("a\tb", "x")])


@pytest.mark.parametrize("text,message", [
    ("", "is empty"),
    ("words\tlabel\na\tb\n", "has no text column"),
    ("text\tlabel\n", "has a header but no rows"),
    ("text\tlabel\na\t\n", "empty label"),
])
def test_classification_file_mistakes(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        get_task("classification").read_examples(_write(tmp_path / "train.tsv", text))


def test_split_files_tsv_or_csv(tmp_path):
    with pytest.raises(InputNotFoundError, match="no train.tsv or train.csv"):
        table_path(str(tmp_path), "train")
    _write(tmp_path / "train.csv", "text,label\na,b\n")
    assert get_task("classification").split_path(str(tmp_path), "train").endswith("train.csv")
    _write(tmp_path / "train.tsv", "text\tlabel\na\tb\n")
    with pytest.raises(DataError, match="both train.tsv and train.csv"):
        table_path(str(tmp_path), "train")
    with pytest.raises(ArgumentError, match="no split 'valid'"):
        get_task("classification").split_path(str(tmp_path), "valid")


def test_a_split_that_is_a_directory_is_named_as_one(tmp_path):
    from keras_bert.tasks.finetuning.inputs import TaskSource

    (tmp_path / "train.tsv").mkdir()
    source = TaskSource(get_task("classification"), str(tmp_path), None, None)
    with pytest.raises(InputNotFoundError, match="train.tsv, which is a directory") as caught:
        source.read("train")
    assert "missing" not in str(caught.value)
    with pytest.raises(InputNotFoundError, match="is missing: no .*dev.tsv"):
        source.read("dev")


def test_classification_needs_two_labels_and_restores_saved_runs():
    task = get_task("classification")
    examples = task.text_examples(["a", "b"], ["x", "x"])
    with pytest.raises(DataError, match="one label only"):
        task.features(examples, rich_tokenizer(False), SETTINGS)
    with pytest.raises(ArgumentError, match="no label names yet"):
        get_task("classification").build_model(None)
    # A demo run saved before the generic task named its task "library".
    old = get_task("library")
    old.restore({"task": "library", "labels": ["stdlib", "numpy"]})
    assert old.labels == ("stdlib", "numpy") and old.num_classes == 2
    regression = get_task("classification")  # what BertClassifier.from_preset saves
    regression.restore({"task": "classification", "labels": None, "pair": True})
    assert regression.is_regression and regression.pair
    with pytest.raises(ArgumentError, match="not 'classification'"):
        get_task("classification").restore({"task": "sst2", "labels": ["0", "1"]})


def test_tagging_any_tag_set_metrics_and_config(tmp_path):
    task = get_task("tagging")
    assert type(task) is TaggingTask and task.family == "tagging"
    train = task.read_examples(_write(tmp_path / "train.txt",
                                      "Dogs x NN\nbark x VB\n\n-DOCSTART- -X- O\n\n"
                                      "Cats\tx\tNN\n"))
    assert [(e.words, e.tags, e.line) for e in train] == [
        (("Dogs", "bark"), ("NN", "VB"), 1), (("Cats",), ("NN",), 6)]
    task.features(train, rich_tokenizer(False), SETTINGS)
    assert task.labels == ("NN", "VB") and task.metric_names == ("accuracy",)
    assert task.evaluate(train, [["NN", "NN"], ["NN"]]) == {"accuracy": pytest.approx(2 / 3)}
    restored = get_task("tagging")
    restored.restore(task.config())
    assert restored.labels == ("NN", "VB") and restored.config() == {
        "task": "tagging", "labels": ["NN", "VB"]}
    entities = TaggingTask(["O", "B-X", "I-X"])
    assert entities.main_metric == "f1" and "f1" in entities.evaluate(
        entities.text_examples(["a b"], [["B-X", "O"]]), [["B-X", "O"]])
    with pytest.raises(DataError, match=r"bad.txt:2: has 2 columns, expected 3"):
        get_task("tagging").read_examples(_write(tmp_path / "bad.txt", "a B c\nd E\n"))
    with pytest.raises(ArgumentError, match="no split 'valid'"):
        task.split_path(str(tmp_path), "valid")
    assert os.path.basename(task.split_path("d", "dev")) == "dev.txt"
    with pytest.raises(ArgumentError, match="cannot be read from tensorflow-datasets"):
        task.tfds_layout()
