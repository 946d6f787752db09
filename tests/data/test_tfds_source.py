"""Fine-tuning tasks read from tensorflow-datasets (keras_bert.tasks.tfds_source).

Nothing here reaches the network. `tfds.testing.mock_data(policy=USE_CODE)` stands in
for prepared data: the builders' own feature specs (from tfds's code, no metadata
files) with random records, or with our records through its `as_dataset_fn` hook.
One test writes a real prepared dataset (tfds's `SequentialWriter`) so the unmocked
reading path, its split names and its errors run too.
"""

import os
import re
import sys

import pytest
from conftest import REPO

tfds = pytest.importorskip("tensorflow_datasets", reason="tensorflow-datasets not installed")

import tensorflow as tf  # noqa: E402

from keras_bert.core.errors import (  # noqa: E402
    ArgumentError,
    DataError,
    InputNotFoundError,
    MismatchError,
)
from keras_bert.tasks.base import FeatureSettings  # noqa: E402
from keras_bert.tasks.glue.task import GLUE_TFDS_FEATURES, GlueExample  # noqa: E402
from keras_bert.tasks.registry import get_task  # noqa: E402
from keras_bert.tasks.squad import SquadExample  # noqa: E402
from keras_bert.tasks.tagging.task import NerExample  # noqa: E402
from keras_bert.tasks.tfds_source import tfds_examples, tfds_split_name  # noqa: E402

SETTINGS = FeatureSettings(max_seq_length=32)
SQUAD_SETTINGS = FeatureSettings(max_seq_length=32, doc_stride=8, max_query_length=8)
NER_TAGS = {"O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"}


def random_mock(num_examples=4):
    """tfds's random records, built from the dataset class's own features (no
    metadata files here, so USE_CODE; the data_dir given to tfds.builder is ignored)."""
    return tfds.testing.mock_data(num_examples=num_examples,
                                  policy=tfds.testing.MockPolicy.USE_CODE)


def records_mock(records, splits_seen):
    """mock_data serving `records` (encoded and decoded by the builder's features, as
    real prepared data is) for any split, noting the tfds split names asked for."""
    def as_dataset(builder, split, **kwargs):
        splits_seen.append(split)
        features = builder.info.features
        serialized = [features.serialize_example(r) for r in records]
        return tf.data.Dataset.from_tensor_slices(serialized).map(features.deserialize_example)

    return tfds.testing.mock_data(policy=tfds.testing.MockPolicy.USE_CODE,
                                  as_dataset_fn=as_dataset)


# --- GLUE ---------------------------------------------------------------------------


@pytest.mark.parametrize("task_name,name,split,pair", [
    ("sst2", "glue/sst2", "train", False),
    ("mnli", "glue/mnli", "dev_matched", True),
    ("stsb", "glue/stsb", "dev", True),
])
def test_glue_random_records_featurize(task_name, name, split, pair, tokenizer):
    task = get_task(task_name)
    with random_mock(4):
        examples = tfds_examples(task, name, split)
    assert len(examples) == 4
    assert all(isinstance(e, GlueExample) for e in examples)
    assert all(isinstance(e.text_a, str) and e.text_a for e in examples)
    assert all(isinstance(e.text_b, str) == pair for e in examples)
    assert [int(e.guid) for e in examples] == sorted(int(e.guid) for e in examples)
    if task.labels is None:
        assert all(isinstance(e.label, float) for e in examples)
    else:
        assert all(e.label in task.labels for e in examples)
    features = task.features(examples, tokenizer, SETTINGS)
    assert features.inputs["input_word_ids"].shape == (4, 32)
    assert features.labels.shape == (4,)
    assert (features.inputs["input_type_ids"].max() == 1) == pair


def test_glue_labels_by_name_and_split_names():
    # tfds's sst2 classes are ("negative", "positive"); the GLUE TSV labels "0", "1".
    seen = []
    records = [{"idx": 2, "sentence": "a dull film", "label": 0},
               {"idx": 0, "sentence": "a fine film", "label": 1},
               {"idx": 1, "sentence": "unlabelled", "label": -1}]
    with records_mock(records, seen):
        train = tfds_examples(get_task("sst2"), "glue/sst2", "dev")
        unlabelled = tfds_examples(get_task("sst2"), "glue/sst2", "train", labelled=False)
    assert train == [GlueExample("0", "a fine film", None, "1"),
                     GlueExample("1", "unlabelled", None, None),
                     GlueExample("2", "a dull film", None, "0")]
    assert [e.label for e in unlabelled] == [None, None, None]
    assert seen == ["validation", "train"]

    # MNLI's classes (entailment, neutral, contradiction) are in another order than
    # GlueTask's (contradiction, entailment, neutral): mapped by name, not index.
    seen = []
    records = [{"idx": i, "premise": f"p{i}", "hypothesis": f"h{i}", "label": label}
               for i, label in enumerate([0, 1, 2, -1])]
    with records_mock(records, seen):
        mnli = get_task("mnli")
        examples = tfds_examples(mnli, "glue/mnli", "dev_mismatched")
        tfds_examples(mnli, "glue/mnli", "test")
        tfds_examples(mnli, "glue/mnli", "test_mismatched")
    assert [e.label for e in examples] == ["entailment", "neutral", "contradiction", None]
    assert (examples[0].text_a, examples[0].text_b) == ("p0", "h0")
    assert mnli.label_array(examples[:3]).tolist() == [1, 2, 0]
    assert seen == ["validation_mismatched", "test_matched", "test_mismatched"]


def test_split_names():
    assert tfds_split_name(get_task("rte"), "test") == "test"
    assert tfds_split_name(get_task("mnli"), "test") == "test_matched"
    assert tfds_split_name(get_task("ner"), "valid[:5]") == "dev[:5]"
    with pytest.raises(ArgumentError, match="no split 'dev'.*dev_matched") as e:
        tfds_split_name(get_task("mnli"), "dev")
    assert e.value.field == "split"
    with pytest.raises(ArgumentError, match="no split 'test'"):
        tfds_split_name(get_task("squad1"), "test")


# --- SQuAD --------------------------------------------------------------------------


def test_squad_random_records(tokenizer):
    # Random answers never match their random context: no training target, so every
    # labelled v1.1 question is counted as skipped for training, as read_squad would,
    # and kept for evaluation.
    task = get_task("squad1")
    with random_mock(3):
        dev = tfds_examples(task, "squad/v1.1", "dev")
        stats = task.read_stats["squad/v1.1 (dev)"]
        assert (stats.questions, stats.examples, len(stats.skipped_questions)) == (3, 3, 3)
        assert not any(e.has_target for e in dev) and all(e.answers for e in dev)
        assert task.training_examples(dev) == []
        examples = tfds_examples(task, "squad/v1.1", "dev", labelled=False)
    assert len(examples) == 3 and all(isinstance(e, SquadExample) for e in examples)
    assert all(e.answers == () and e.answer_start is None for e in examples)
    assert task.features(examples, tokenizer, SQUAD_SETTINGS).labels is None


def test_squad_v1_targets(tokenizer):
    seen = []
    context = "Ann ran home. Bob stayed."
    records = [
        {"id": "q1", "title": "t", "context": context, "question": "Who ran?",
         "answers": {"text": ["Ann", "Ann ran"], "answer_start": [0, 0]}},
        # The first answer does not match at its start: the second one is the target.
        {"id": "q2", "title": "t", "context": context, "question": "Who stayed?",
         "answers": {"text": ["Bob", "Bob"], "answer_start": [3, 14]}},
    ]
    task = get_task("squad1")
    with records_mock(records, seen):
        examples = tfds_examples(task, "squad/v1.1", "train")
    assert seen == ["train"]
    by_id = {e.qid: e for e in examples}
    assert by_id["q1"] == SquadExample("q1", "Who ran?", context, ("Ann", "Ann ran"), "Ann", 0)
    assert (by_id["q2"].answer_text, by_id["q2"].answer_start) == ("Bob", 14)
    assert by_id["q2"].answers == ("Bob", "Bob")
    assert task.read_stats["squad/v1.1 (train)"].mismatched_answers == [("q2", 0)]
    features = task.features(examples, tokenizer, SQUAD_SETTINGS)
    assert set(features.labels) == {"start_logits", "end_logits"}
    assert features.inputs["input_word_ids"].shape[1] == 32


def test_squad_v2_impossible(tokenizer):
    seen = []
    context = "Ann ran home."
    empty = {"text": [], "answer_start": []}
    records = [
        {"id": "a", "title": "t", "context": context, "question": "Who ran?",
         "answers": {"text": ["Ann"], "answer_start": [0]}, "is_impossible": False,
         "plausible_answers": empty},
        {"id": "b", "title": "t", "context": context, "question": "Who flew?",
         "answers": empty, "is_impossible": True,
         "plausible_answers": {"text": ["Ann"], "answer_start": [0]}},
    ]
    task = get_task("squad2")
    with records_mock(records, seen):
        examples = tfds_examples(task, "squad/v2.0", "dev")
    assert seen == ["validation"]
    by_id = {e.qid: e for e in examples}
    assert by_id["a"].answer_text == "Ann" and not by_id["a"].is_impossible
    assert by_id["b"].is_impossible and by_id["b"].answers == () and by_id["b"].has_target
    features = task.features(examples, tokenizer, SQUAD_SETTINGS)
    assert features.labels["start_logits"][features.example_index == examples.index(
        by_id["b"])].tolist() == [0]
    with random_mock(3):  # random is_impossible flags: those questions are kept
        assert all(e.is_impossible for e in tfds_examples(task, "squad/v2.0", "train"))


# --- CoNLL-2003 ---------------------------------------------------------------------


def test_conll2003(tokenizer):
    seen = []
    # tfds's ner classes: O B-PER I-PER B-ORG I-ORG B-LOC I-LOC B-MISC I-MISC.
    records = [{"tokens": ["EU", "rejects", "German", "call"], "ner": [3, 0, 7, 0],
                "pos": [0, 0, 0, 0], "chunks": [0, 0, 0, 0]},
               {"tokens": ["Peter", "Blackburn"], "ner": [1, 2], "pos": [0, 0],
                "chunks": [0, 0]}]
    task = get_task("ner")
    with records_mock(records, seen):
        examples = tfds_examples(task, "conll2003", "dev")
        words = tfds_examples(task, "conll2003/conll2003:1.0.0", "test", labelled=False)
    assert seen == ["dev", "test"]
    assert examples == [NerExample(("EU", "rejects", "German", "call"),
                                   ("B-ORG", "O", "B-MISC", "O")),
                        NerExample(("Peter", "Blackburn"), ("B-PER", "I-PER"))]
    assert [e.tags for e in words] == [None, None]
    features = task.features(examples, tokenizer, SETTINGS)
    assert set(task.labels) <= NER_TAGS
    word_label = features.labels[0, features.extra["word_positions"][0]]
    assert task.labels[word_label] == "B-ORG"


def test_conll2003_random_records():
    # tfds's random mock draws each sequence's length independently, so its tokens and
    # tags disagree in length: a clear error when labelled, the words when not.
    task = get_task("ner")
    with random_mock(3):
        with pytest.raises(DataError, match=r"conll2003 \(train\): record 0 has \d+ "
                                            r"tokens but \d+ ner tags"):
            tfds_examples(task, "conll2003", "train")
        examples = tfds_examples(task, "conll2003", "train", labelled=False)
    assert examples and all(isinstance(e, NerExample) and e.tags is None for e in examples)
    assert all(isinstance(w, str) for e in examples for w in e.words)


# --- errors and a real prepared dataset ---------------------------------------------


def test_name_must_match_task():
    with pytest.raises(ArgumentError, match="'glue/mrpc' does not hold task sst2.*"
                                            "'glue/sst2'") as e:
        tfds_examples(get_task("sst2"), "glue/mrpc", "train")
    assert e.value.field == "name"
    with pytest.raises(ArgumentError, match="'squad/v2.0' does not hold task squad1"):
        tfds_examples(get_task("squad1"), "squad/v2.0", "train")
    with pytest.raises(ArgumentError, match="SWAG is not in tensorflow-datasets"):
        tfds_examples(get_task("swag"), "swag", "train")


def test_prepared_dataset_and_unprepared_one(tmp_path):
    data_dir = str(tmp_path)
    # An empty data_dir, no mock: not prepared, and nothing is downloaded.
    with pytest.raises(InputNotFoundError, match=f"'glue/sst2' is not prepared in "
                                                 f"{re.escape(data_dir)}.*tfds build glue/sst2"):
        tfds_examples(get_task("sst2"), "glue/sst2", "train", data_dir=data_dir)
    with pytest.raises(ArgumentError, match="cannot open 'glue/sst2:9.9.9'"):
        tfds_examples(get_task("sst2"), "glue/sst2:9.9.9", "train", data_dir=data_dir)

    # Prepare glue/sst2 offline from our own records, the way tfds stores it.
    builder = tfds.builder("glue/sst2", data_dir=data_dir)
    os.makedirs(builder.data_dir)
    writer = tfds.core.SequentialWriter(builder.info, max_examples_per_shard=10)
    writer.initialize_splits(["train", "test"])
    writer.add_examples({
        "train": [{"idx": i, "sentence": f"s{i}", "label": i % 2} for i in (3, 0, 2, 1)],
        "test": [{"idx": 0, "sentence": "t0", "label": -1}]})
    writer.close_splits(["train", "test"])

    examples = tfds_examples(get_task("sst2"), "glue/sst2", "train", data_dir=data_dir)
    assert [(e.guid, e.text_a, e.label) for e in examples] == [
        ("0", "s0", "0"), ("1", "s1", "1"), ("2", "s2", "0"), ("3", "s3", "1")]
    head = tfds_examples(get_task("sst2"), "glue/sst2", "train[:2]", data_dir=data_dir)
    assert len(head) == 2
    test = tfds_examples(get_task("sst2"), "glue/sst2", "test", data_dir=data_dir)
    assert test == [GlueExample("0", "t0", None, None)]
    with pytest.raises(ArgumentError, match="no split 'validation'.*'dev'") as e:
        tfds_examples(get_task("sst2"), "glue/sst2", "dev", data_dir=data_dir)
    assert e.value.field == "split"
    with pytest.raises(InputNotFoundError, match="'glue/cola' is not prepared"):
        tfds_examples(get_task("cola"), "glue/cola", "train", data_dir=data_dir)


def test_label_names_are_checked(monkeypatch):
    # As if tfds's sst2 had other class names: a clear error naming both sets.
    monkeypatch.setitem(GLUE_TFDS_FEATURES, "sst2", (("sentence",), {"bad": "0", "good": "1"}))
    with random_mock(2), pytest.raises(MismatchError, match=r"label names \['negative', "
                                                        r"'positive'\].*\['bad', 'good'\]"):
        tfds_examples(get_task("sst2"), "glue/sst2", "train")


def test_every_glue_task_maps_its_tfds_labels(tmp_path):
    """Each GLUE builder's real class names (from tfds's code) map onto the task's
    label strings, every label reached."""
    for task_name, (text_features, mapping) in GLUE_TFDS_FEATURES.items():
        info = tfds.builder(f"glue/{task_name}", data_dir=str(tmp_path)).info
        assert set(text_features) | {"idx", "label"} == set(info.features.keys())
        task = get_task(task_name)
        if mapping is None:
            assert task.labels is None and not hasattr(info.features["label"], "names")
            continue
        names = info.features["label"].names
        assert sorted(names) == sorted(mapping)
        assert sorted(mapping[n] for n in names) == sorted(task.labels)
    # WNLI lists its classes the other way round from RTE and QNLI.
    assert GLUE_TFDS_FEATURES["wnli"][1] == {"not_entailment": "0", "entailment": "1"}


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)  # import fails
    with pytest.raises(InputNotFoundError, match=r'pip install -e "\.\[datasets\]"'):
        tfds_examples(get_task("sst2"), "glue/sst2", "train")


# --- through the command line --------------------------------------------------------


def test_finetune_and_evaluate_with_tfds_through_the_cli(tmp_path):
    import json

    from keras_bert.cli import main

    seen = []
    records = [{"idx": i, "sentence": s, "label": i % 2} for i, s in enumerate(
        ["a dull film", "a warm , funny film", "bad acting", "a great cast", "boring"])]
    vocab = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
    out = tmp_path / "sst2"
    with records_mock(records, seen):
        assert main(["finetune", "--task", "sst2", "--tfds", "glue/sst2", "--output_dir",
                     str(out), "--preset", "tiny", "--vocab_file", vocab,
                     "--do_lower_case=false", "--max_seq_length", "16",
                     "--num_train_epochs", "1", "--noprogress"]) == 0
        assert seen == ["train", "validation"]
        metrics = json.loads((out / "metrics.json").read_text())
        rows = (out / "sst2.tsv").read_text().splitlines()
        assert rows == ["index\tprediction"] + [f"{i}\t{r.split(chr(9))[1]}"
                                                for i, r in enumerate(rows[1:])]
        assert len(rows) == 6 and {r.split("\t")[1] for r in rows[1:]} <= {"0", "1"}
        record = json.loads((out / "finetune_config.json").read_text())
        assert record["tfds"] == "glue/sst2" and record["data_dir"] is None
        assert main(["evaluate", "--model", str(out), "--task", "sst2", "--tfds", "glue/sst2",
                     "--noprogress"]) == 0
    assert json.loads((out / "metrics.json").read_text())["accuracy"] == metrics["accuracy"]
    # --data_dir and --tfds together are a usage error.
    assert main(["finetune", "--task", "sst2", "--tfds", "glue/sst2", "--data_dir",
                 str(tmp_path), "--output_dir", str(tmp_path / "x"), "--preset", "tiny",
                 "--vocab_file", vocab]) == 2
