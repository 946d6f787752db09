"""SQuAD v1.1/v2.0: reading, windowed features, run_squad decoding, evaluation, output."""

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import SHARED_DATA, minilm_path

from keras_bert import BertConfig, BertEncoder, BertTokenizer
from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.tasks.base import FeatureSettings, feature_dataset
from keras_bert.tasks.squad import (
    SQUAD_TASKS,
    NbestEntry,
    SquadExample,
    SquadPrediction,
    SquadTask,
    apply_threshold,
    best_threshold,
    max_context_windows,
    read_squad,
    window_spans,
)

SAMPLE = os.path.join(SHARED_DATA, "squad", "sample-v1.1.json")

VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
         + "the cafe opened in 1999 . who what when did open , ? ! « » angstrom won finally "
           "a b c d e f g h".split())

# Gold answers of the sample that no span of word pieces reproduces (id -> why).
UNREPRESENTABLE = {
    "573735e8c3c5551400e51e11": "starts inside the word 'Threat' (answer 'hreat Centric ...')",
}


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(VOCAB, lower_case=True)


def gold_logits(features, big=20.0):
    """Perfect logits: `big` at each window's gold start/end token ([CLS] when the
    window does not hold the answer), 0 elsewhere."""
    n, length = features.inputs["input_word_ids"].shape
    start, end = np.zeros((n, length)), np.zeros((n, length))
    rows = np.arange(n)
    start[rows, features.labels["start_logits"]] = big
    end[rows, features.labels["end_logits"]] = big
    return {"start_logits": start, "end_logits": end}


def example(qid, question, context, answer=None, start=None, impossible=False):
    if answer is not None and start is None:
        start = context.index(answer)
    return SquadExample(qid, question, context, (answer,) if answer else (), answer, start,
                        impossible)


def squad_json(qas, context="a b c d", version="1.1"):
    return {"version": version, "data": [{"title": "t", "paragraphs": [
        {"context": context, "qas": qas}]}]}


def write(tmp_path, data, name="data.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


# --- the real sample --------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm_tokenizer():
    return BertTokenizer(os.path.join(minilm_path(), "vocab.txt"), lower_case=True)


@pytest.mark.parametrize("settings", [
    FeatureSettings(384, 128, 64, 384, 20),  # the paper's settings, long answers allowed
    FeatureSettings(64, 16, 16, 64, 20),  # many windows per question
], ids=["384", "64"])
def test_sample_gold_spans_decode_to_the_gold_text(settings, minilm_tokenizer):
    if not os.path.exists(SAMPLE):
        pytest.skip(f"no SQuAD sample at {SAMPLE}")
    from keras_bert.metrics import squad_evaluate

    task = SquadTask("squad1")
    # Every question is read (and would be evaluated); the 6 none of whose answers
    # matches the context at its answer_start have no gold span to decode.
    examples = task.read_examples(SAMPLE)
    stats = task.read_stats[SAMPLE]
    assert (stats.questions, stats.examples, len(stats.mismatched_answers)) == (221, 221, 19)
    assert len(stats.skipped_questions) == 6
    examples = task.training_examples(examples)
    assert len(examples) == 215
    assert not {e.qid for e in examples} & set(stats.skipped_questions)
    features = task.features(examples, minilm_tokenizer, settings)
    windows = np.bincount(features.example_index, minlength=len(examples))
    assert windows.min() >= 1 and (windows >= 2).sum() >= 5, "multi-window questions occur"

    predictions = task.decode(examples, features, gold_logits(features), settings)
    # An answer is reachable when a window holds it whole and is its start token's
    # max-context window (run_squad scores a start token only there).
    rows = np.arange(len(features))
    start = features.labels["start_logits"]
    held = (start > 0) & features.extra["token_is_max_context"][rows, start]
    reachable = np.zeros(len(examples), bool)
    reachable[features.example_index[held]] = True
    if settings.max_seq_length == 384:
        # Only answers longer than a whole window (these technical passages) are out.
        unreached = [e for e, ok in zip(examples, reachable) if not ok]
        assert [e.qid for e in unreached] == [
            "5737804dc3c5551400e51f12", "573786b51c4567190057449e", "573796edc3c5551400e51b31"]
        for e in unreached:
            assert len(minilm_tokenizer.tokenize(e.answer_text)) > 384 - 64 - 3
    assert (~reachable).sum() <= 0.15 * len(examples)

    wrong = {e.qid for e, p, ok in zip(examples, predictions, reachable)
             if ok and p.text != e.answer_text}
    expected_wrong = {qid for qid in UNREPRESENTABLE
                      if reachable[[e.qid for e in examples].index(qid)]}
    assert wrong == expected_wrong
    assert len(wrong) <= 2
    scored = [(e, p) for e, p, ok in zip(examples, predictions, reachable)
              if ok and e.qid not in UNREPRESENTABLE]
    metrics = squad_evaluate({e.qid: list(e.answers) for e, _ in scored},
                             {p.qid: p.text for _, p in scored})
    assert metrics["exact_match"] == 100.0 and metrics["f1"] == 100.0


# --- features ---------------------------------------------------------------------------


def test_windows_and_max_context():
    assert window_spans(8, 4, 2) == [(0, 4), (2, 4), (4, 4)]
    assert window_spans(0, 4, 2) == [(0, 0)]
    # c (2): 1.04 in window 0, 0.04 in window 1; d (3): 0.04 vs 1.04.
    assert max_context_windows(window_spans(8, 4, 2), 8).tolist() == [0, 0, 0, 1, 1, 2, 2, 2]


def test_features_layout(tokenizer):
    e = example("q", "who", "a b c d e f g h", "e f")
    f = SquadTask().features([e], tokenizer, FeatureSettings(8, 2, 1, 30, 20))
    assert len(f) == 3 and f.example_index.tolist() == [0, 0, 0]
    ids = f.inputs["input_word_ids"]
    cls, sep, who = tokenizer.cls_id, tokenizer.sep_id, tokenizer.token_to_id("who")
    assert ids[1].tolist() == [cls, who, sep] + [tokenizer.token_to_id(t) for t in "cdef"] + [sep]
    assert f.inputs["input_type_ids"][1].tolist() == [0, 0, 0, 1, 1, 1, 1, 1]
    # e f (tokens 4-5) lie wholly in windows 1 and 2 only.
    assert f.labels["start_logits"].tolist() == [0, 5, 3]
    assert f.labels["end_logits"].tolist() == [0, 6, 4]
    assert f.extra["token_char_start"][1].tolist() == [-1, -1, -1, 4, 6, 8, 10, -1]
    assert f.extra["token_is_max_context"][1].tolist() == [0, 0, 0, 0, 1, 1, 0, 0]


def test_settings_are_checked(tokenizer):
    with pytest.raises(ArgumentError, match="max_query_length"):
        SquadTask().features([example("q", "who", "a b")], tokenizer,
                             FeatureSettings(max_seq_length=64, max_query_length=64))


def test_unlabelled_examples_have_no_labels(tokenizer):
    f = SquadTask().features([example("q", "who", "a b")], tokenizer, FeatureSettings())
    assert f.labels is None and len(f) == 1


# --- decoding ---------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["café", "1999", "café   opened", "«Ångström»",
                                    "won, finally", "Ångström"])
def test_answers_come_from_the_original_text(answer, tokenizer):
    context = "The café   opened in 1999. «Ångström» won, finally!"
    e = example("q", "When did the café open?", context, answer)
    settings = FeatureSettings(16, 3, 8, 30, 20)  # several windows
    task = SquadTask("squad1")
    f = task.features([e], tokenizer, settings)
    assert len(f) > 1
    (p,) = task.decode([e], f, gold_logits(f), settings)
    assert p.text == answer


def test_start_is_scored_only_in_its_max_context_window(tokenizer):
    e = example("q", "who", "a b c d e f g h")
    settings = FeatureSettings(8, 2, 1, 30, 20)  # windows a-d, c-f, e-h
    f = SquadTask().features([e], tokenizer, settings)
    start, end = np.zeros((3, 8)), np.zeros((3, 8))
    # "c" is at position 5 of window 0 (its max-context window) and 3 of window 1.
    start[1, 3], end[1, 3] = 10.0, 10.0  # span "c" in window 1: ignored
    start[0, 5], end[0, 6] = 1.0, 1.0  # span "c d" in window 0
    (p,) = SquadTask().decode([e], f, {"start_logits": start, "end_logits": end}, settings)
    assert p.text == "c d"
    assert all(entry.text != "c" or entry.start_logit < 10 for entry in p.nbest)


def test_nbest_is_sorted_with_probabilities(tokenizer):
    e = example("q", "who", "a b c d e f g h a b c d e f g h")
    settings = FeatureSettings(10, 3, 1, 4, 5)
    task = SquadTask("squad1")
    f = task.features([e], tokenizer, settings)
    rng = np.random.default_rng(0)
    logits = {"start_logits": rng.normal(size=(len(f), 10)),
              "end_logits": rng.normal(size=(len(f), 10))}
    (p,) = task.decode([e], f, logits, settings)
    scores = [n.start_logit + n.end_logit for n in p.nbest]
    assert len(p.nbest) == 5 and scores == sorted(scores, reverse=True)
    assert len({n.text for n in p.nbest}) == 5
    assert sum(n.probability for n in p.nbest) == pytest.approx(1.0)
    assert p.nbest[0].probability / p.nbest[1].probability == pytest.approx(
        np.exp(scores[0] - scores[1]))
    for n in p.nbest:
        assert n.text == e.context[n.char_start:n.char_end]
        assert len(n.text.split()) <= settings.max_answer_length
    assert p.text == p.nbest[0].text and p.null_odds is None
    # The same logits as per-batch rows cut to each batch's longest feature, or as the
    # ragged tensor model.predict returns for such batches, decode the same.
    batches = [{k: v[i:i + 2, :f.lengths[i:i + 2].max()] for k, v in logits.items()}
               for i in range(0, len(f), 2)]
    assert task.decode([e], f, batches, settings)[0] == p
    ragged = {k: tf.ragged.constant([row[:n] for row, n in zip(v, f.lengths)])
              for k, v in logits.items()}
    assert task.decode([e], f, ragged, settings)[0] == p


def test_v2_null_threshold(tokenizer):
    e = example("q", "who", "a b c d e f g h", impossible=True)
    settings = FeatureSettings(8, 2, 1, 30, 20)  # three windows
    f = SquadTask("squad2").features([e], tokenizer, settings)
    start, end = np.zeros((3, 8)), np.zeros((3, 8))
    start[:, 0] = end[:, 0] = [5.0, 1.0, 3.0]  # null score: the smallest, 2.0 (window 1)
    start[0, 4], end[0, 4] = 0.5, 0.5  # "b", score 1.0
    logits = {"start_logits": start, "end_logits": end}
    for threshold, text in [(0.5, ""), (0.99, ""), (1.0, "b"), (1.5, "b")]:
        (p,) = SquadTask("squad2", threshold).decode([e], f, logits, settings)
        assert p.null_odds == pytest.approx(1.0)
        assert (p.text, p.best_text) == (text, "b")
        assert p.answer_at(threshold) == text
    null = next(n for n in p.nbest if n.text == "")
    assert (null.start_logit, null.end_logit) == (1.0, 1.0)
    assert [q.text for q in apply_threshold([p], 0.0)] == [""]
    assert f.labels["start_logits"].tolist() == [0, 0, 0]


def test_decode_checks_outputs(tokenizer):
    e = example("q", "who", "a b")
    f = SquadTask().features([e], tokenizer, FeatureSettings())
    with pytest.raises(ArgumentError, match="start_logits"):
        SquadTask().decode([e], f, {"logits": np.zeros((1, 5))}, FeatureSettings())
    with pytest.raises(ArgumentError, match="rows"):
        SquadTask().decode([e], f, {"start_logits": np.zeros((2, 5)),
                                    "end_logits": np.zeros((2, 5))}, FeatureSettings())


# --- reading ----------------------------------------------------------------------------


def test_mismatched_answers_are_counted_and_skipped(tmp_path, caplog):
    context = "Ann ran home."
    path = write(tmp_path, squad_json([
        {"id": "ok", "question": "Who?", "answers": [{"text": "Ann", "answer_start": 0}]},
        {"id": "bad", "question": "Who?", "answers": [{"text": "Ann", "answer_start": 3}]},
        {"id": "second", "question": "Where?", "answers": [
            {"text": "home", "answer_start": 0}, {"text": "home", "answer_start": 8}]},
    ], context))
    task = SquadTask("squad1")
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        examples = task.read_examples(path)
    # Every question stays for evaluation; "bad" has no training target.
    assert [e.qid for e in examples] == ["ok", "bad", "second"]
    assert (examples[1].answers, examples[1].answer_start, examples[1].has_target) == (
        ("Ann",), None, False)
    assert (examples[2].answer_text, examples[2].answer_start) == ("home", 8)
    assert examples[2].answers == ("home", "home")
    assert [e.qid for e in task.training_examples(examples)] == ["ok", "second"]
    stats = task.read_stats[path]
    assert stats.mismatched_answers == [("bad", 0), ("second", 0)]
    assert stats.skipped_questions == ["bad"]
    assert stats.as_dict()["mismatched_answers"] == 2
    assert "answer_start=3" in caplog.text and "bad" in caplog.text


@pytest.mark.parametrize("data, message", [
    ("{\"data\": [", "not valid JSON"),
    ({"version": "1.1"}, "missing field 'data'"),
    ({"data": [{"title": "t"}]}, "data[0]: missing field 'paragraphs'"),
    ({"data": [{"paragraphs": [{"qas": []}]}]}, "data[0].paragraphs[0]: missing field 'context'"),
    (squad_json([{"question": "q", "answers": []}]),
     "data[0].paragraphs[0].qas[0]: missing field 'id'"),
    (squad_json([{"id": "x", "question": "q", "answers": [{"text": "a", "answer_start": "0"}]}]),
     "answer_start must be an integer"),
    (squad_json([{"id": "x", "question": "q", "answers": [{"answer_start": 0}]}]),
     "answers[0]: missing field 'text'"),
    (squad_json([{"id": "x", "question": "q", "answers": []}]), "has no answers"),
    (squad_json([{"id": "x", "question": "q", "answers": [], "is_impossible": True}]),
     "squad2"),
    (squad_json([{"id": "x", "question": "q", "answers": [{"text": "a", "answer_start": 0}]}] * 2),
     "appears twice"),
])
def test_malformed_files_raise_data_error(data, message, tmp_path):
    path = write(tmp_path, data)
    with pytest.raises(DataError) as error:
        SquadTask("squad1").read_examples(path)
    assert message in str(error.value) and path in str(error.value)
    if isinstance(data, str):
        assert error.value.line == 1


def test_v2_and_unlabelled_reading(tmp_path):
    path = write(tmp_path, squad_json([
        {"id": "no", "question": "q", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "b", "answer_start": 2}]},
        {"id": "yes", "question": "q", "answers": [{"text": "b", "answer_start": 2}],
         "is_impossible": False},
    ], version="v2.0"))
    examples, stats = read_squad(path, version_2=True)
    assert [(e.answers, e.is_impossible, e.has_target) for e in examples] == [
        ((), True, True), (("b",), False, True)]
    unlabelled = SquadTask("squad2").read_examples(path, labelled=False)
    assert [(e.answers, e.is_impossible, e.has_target) for e in unlabelled] == [
        ((), False, False)] * 2


# --- evaluation, output, the task -------------------------------------------------------


def test_v2_threshold_when_answering_nothing_is_best():
    # Two unanswerable questions and one whose best span is wrong, every null odds
    # negative (each span beats its [CLS] score). By hand: answering nothing scores
    # 2/3; answering in increasing order of null odds never beats it, so the official
    # search keeps its initial threshold 0.0, at which every question is answered
    # (score 0). The τ saved must be one that realizes 2/3: below every null odds.
    examples = [example("q1", "who", "b c", impossible=True),
                example("q2", "who", "b c", impossible=True),
                example("q3", "who", "b c", "b")]
    predictions = [SquadPrediction("q1", "c", "c", -2.0, ()),
                   SquadPrediction("q2", "c", "c", -1.0, ()),
                   SquadPrediction("q3", "c", "c", -3.0, ())]
    task = SquadTask("squad2")
    metrics = task.evaluate(examples, predictions)
    assert metrics["best_f1_thresh"] == 0.0  # the official script's number
    assert metrics["best_f1"] == pytest.approx(200 / 3)
    assert metrics["best_threshold"] < -3.0
    tuned, tuned_metrics = task.tune_on_dev(examples, predictions, metrics)
    assert [p.text for p in tuned] == ["", "", ""]
    assert tuned_metrics["f1"] == pytest.approx(200 / 3)
    assert tuned_metrics["exact_match"] == pytest.approx(200 / 3)


def test_v2_tune_on_dev_applies_the_best_threshold():
    # q1's span is right (null odds 0.5), q2 is unanswerable (null odds 1.5): by hand the
    # best τ answers q1 and not q2, i.e. 0.5 <= τ < 1.5; at τ = 0 both are "no answer"
    # (EM 50), at the official best threshold 0.5 both are right (EM 100).
    examples = [example("q1", "who", "a b", "b"), example("q2", "who", "a b", impossible=True)]
    predictions = apply_threshold([SquadPrediction("q1", "", "b", 0.5, ()),
                                   SquadPrediction("q2", "", "a", 1.5, ())], 0.0)
    task = SquadTask("squad2")
    metrics = task.evaluate(examples, predictions)
    assert (metrics["exact_match"], metrics["best_exact"], metrics["best_threshold"]) == (
        50.0, 100.0, 0.5)
    tuned, tuned_metrics = task.tune_on_dev(examples, predictions, metrics)
    assert [p.text for p in tuned] == ["b", ""]
    assert tuned_metrics["exact_match"] == tuned_metrics["f1"] == 100.0
    assert tuned_metrics["best_threshold"] == 0.5
    # v1.1 has nothing to tune.
    v1 = SquadTask("squad1")
    v1_predictions = [SquadPrediction("q1", "a", "a", None, ())]
    v1_metrics = v1.evaluate(examples[:1], v1_predictions)
    assert v1.tune_on_dev(examples[:1], v1_predictions, v1_metrics) == (v1_predictions,
                                                                         v1_metrics)


def test_v2_evaluate_reports_the_best_threshold():
    examples = [example("q1", "who", "a b", "b"), example("q2", "who", "a b", impossible=True)]
    predictions = [SquadPrediction("q1", "b", "b", -1.0, ()),
                   SquadPrediction("q2", "", "a", 2.0, ())]
    metrics = SquadTask("squad2").evaluate(examples, predictions)
    assert metrics["exact_match"] == metrics["f1"] == 100.0
    assert metrics["best_threshold"] == metrics["best_f1_thresh"] == -1.0
    assert best_threshold(examples, predictions)["best_f1"] == 100.0
    assert metrics["HasAns_exact"] == metrics["NoAns_exact"] == 100.0
    v1 = SquadTask("squad1").evaluate(examples[:1], [SquadPrediction("q1", "a", "a", None, ())])
    assert (v1["exact_match"], v1["f1"]) == (0.0, 0.0) and "best_threshold" not in v1


def test_task_interface(tmp_path):
    assert set(SQUAD_TASKS) == {"squad1", "squad2"}
    task = SQUAD_TASKS["squad2"](null_score_diff_threshold=-1.5)
    assert (task.name, task.family, task.version_2) == ("squad2", "squad", True)
    assert task.split_path("/d", "train") == os.path.join("/d", "train-v2.0.json")
    assert SQUAD_TASKS["squad1"]().split_path("/d", "dev") == os.path.join("/d", "dev-v1.1.json")
    with pytest.raises(ArgumentError):
        task.split_path("/d", "test")
    assert SquadTask.from_config(task.config()).null_score_diff_threshold == -1.5
    # v1.1 writes no null_odds.json.
    p = SquadPrediction("q1", "a", "a", None, (NbestEntry("a", 1.0, 2.0, 3.0, 0, 1),))
    SquadTask("squad1").write_predictions([example("q1", "who", "a b", "a")], [p],
                                          str(tmp_path / "predictions.json"))
    assert sorted(os.listdir(tmp_path)) == ["nbest_predictions.json", "predictions.json"]
    assert json.loads((tmp_path / "nbest_predictions.json").read_text()) == {
        "q1": [{"text": "a", "probability": 1.0, "start_logit": 2.0, "end_logit": 3.0}]}


def test_end_to_end_tiny_model(tokenizer, tmp_path):
    examples = [
        example("q1", "When did the café open?", "The café opened in 1999. " * 3, "1999"),
        example("q2", "What opened?", "a b c d e f g h. The café opened.", impossible=True),
        example("q3", "Who?", "a b c", "b"),
    ]
    task = SquadTask("squad2")
    settings = FeatureSettings(24, 4, 8, 10, 5)
    features = task.features(examples, tokenizer, settings)
    assert len(features) > len(examples)
    model = task.build_model(BertEncoder(BertConfig.from_preset("tiny",
                                                                vocab_size=len(VOCAB))))
    model.compile()
    history = model.fit(feature_dataset(features, 2, training=True, seed=0), steps_per_epoch=2,
                        epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    outputs = model.predict(feature_dataset(features, 2, with_labels=False), verbose=0)
    predictions = task.decode(examples, features, outputs, settings)
    assert [p.qid for p in predictions] == ["q1", "q2", "q3"]
    metrics = task.evaluate(examples, predictions)
    assert 0.0 <= metrics["exact_match"] <= 100.0 and 0.0 <= metrics["f1"] <= 100.0
    assert np.isfinite(metrics["best_threshold"])
    path = tmp_path / "out" / "predictions.json"
    task.write_predictions(examples, predictions, str(path))
    assert sorted(os.listdir(path.parent)) == [
        "nbest_predictions.json", "null_odds.json", "predictions.json"]
    answers = json.loads(path.read_text())
    nbest = json.loads((path.parent / "nbest_predictions.json").read_text())
    odds = json.loads((path.parent / "null_odds.json").read_text())
    assert set(answers) == set(nbest) == set(odds) == {"q1", "q2", "q3"}
    assert all(isinstance(a, str) for a in answers.values())
    for qid, entries in nbest.items():
        assert entries and all(set(n) == {"text", "probability", "start_logit", "end_logit"}
                               for n in entries)
        assert sum(n["probability"] for n in entries) == pytest.approx(1.0)
        assert isinstance(odds[qid], float)


@pytest.mark.parametrize("version_2", [False, True])
def test_empty_passage_or_question_gets_no_answer_and_a_warning(tmp_path, tokenizer, caplog,
                                                                version_2):
    path = str(tmp_path / "dev.json")
    paragraphs = [{"context": "the cafe opened in 1999 .",
                   "qas": [{"id": "ok", "question": "when did the cafe open ?"},
                           {"id": "no_question", "question": "  "}]},
                  {"context": " \t", "qas": [{"id": "no_passage",
                                              "question": "when did the cafe open ?"}]}]
    with open(path, "w") as f:
        json.dump({"version": "2.0", "data": [{"title": "t", "paragraphs": paragraphs}]}, f)
    task = SQUAD_TASKS["squad2" if version_2 else "squad1"]()
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        examples = task.read_examples(path, labelled=False)
    warned = [r.getMessage() for r in caplog.records if "get no answer" in r.getMessage()]
    assert len(warned) == 1 and "2 question(s)" in warned[0]
    assert "no_question" in warned[0] and "no_passage" in warned[0] and "ok" not in warned[0]
    settings = FeatureSettings(max_seq_length=24, max_query_length=8, doc_stride=8)
    features = task.features(examples, tokenizer, settings)
    # Logits that make every position a confident span start and end.
    n, seq = features.inputs["input_word_ids"].shape
    logits = np.tile(np.linspace(5.0, 1.0, seq), (n, 1))
    predictions = task.decode(examples, features, {"start_logits": logits,
                                                   "end_logits": logits}, settings)
    by_id = {p.qid: p for p in predictions}
    assert by_id["ok"].best_text != ""  # a real question still gets a span
    for qid in ("no_question", "no_passage"):
        assert by_id[qid].text == "" and by_id[qid].best_text == ""
        assert [e.text for e in by_id[qid].nbest] == [""]
        assert by_id[qid].null_odds == (float("inf") if version_2 else None)


def test_questions_cut_to_max_query_length_are_counted(tokenizer):
    from keras_bert.tasks.base import truncation_report

    examples = [SquadExample("long", "when did the cafe open ? when did it open ?",
                             "the cafe opened in 1999 ."),
                SquadExample("short", "who won ?", "the cafe opened in 1999 .")]
    settings = FeatureSettings(max_seq_length=24, max_query_length=4, doc_stride=8)
    features = SQUAD_TASKS["squad1"]().features(examples, tokenizer, settings)
    full = len(tokenizer.tokenize(examples[0].question).numpy())
    assert features.extra["truncated_tokens"].tolist() == [full - 4, 0]
    message, large = truncation_report(features, 24)
    assert message.startswith("1 of 2 examples (50.0%) were cut to max_query_length 4")
    assert large and "raise --max_query_length" in message
