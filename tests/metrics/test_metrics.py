import math

import numpy as np
import pytest

from keras_bert.core.errors import ArgumentError
from keras_bert.metrics import (
    accuracy,
    f1_score,
    glue_metrics,
    matthews_corrcoef,
    ner_chunks,
    ner_span_metrics,
    normalize_answer,
    pearson,
    spearmanr,
    squad_evaluate,
    squad_exact_match,
    squad_f1,
)

# --- classification ---------------------------------------------------------------------

def test_accuracy_and_errors():
    assert accuracy([1, 0, 1, 1], [1, 1, 1, 0]) == 0.5
    assert accuracy(["a", "b"], ["a", "b"]) == 1.0
    with pytest.raises(ArgumentError, match="length"):
        accuracy([1, 0], [1])
    with pytest.raises(ArgumentError, match="empty"):
        accuracy([], [])


def test_f1_hand_computed():
    labels = [1, 1, 1, 1, 0, 0, 0, 0, 0, 1]
    guesses = [1, 1, 0, 0, 1, 0, 0, 0, 0, 1]  # TP 3, FN 2, FP 1
    precision, recall = 3 / 4, 3 / 5
    assert f1_score(labels, guesses) == pytest.approx(2 * precision * recall / (precision + recall))
    # The other class as positive: TP 4, FN 1, FP 2.
    assert f1_score(labels, guesses, positive=0) == pytest.approx(8 / 11)
    assert f1_score([0, 0], [0, 0]) == 0.0  # no positive anywhere: 0 as sklearn


def test_mcc_hand_worked_confusion_matrix():
    # TP 6, TN 3, FP 1, FN 2.
    labels = [1] * 6 + [0] * 3 + [0] + [1] * 2
    guesses = [1] * 6 + [0] * 3 + [1] + [0] * 2
    expected = (6 * 3 - 1 * 2) / math.sqrt((6 + 1) * (6 + 2) * (3 + 1) * (3 + 2))
    assert matthews_corrcoef(labels, guesses) == pytest.approx(expected)
    assert matthews_corrcoef(labels, [1 - g for g in guesses]) == pytest.approx(-expected)
    assert matthews_corrcoef([0, 1, 1], [1, 1, 1]) == 0.0  # undefined: 0 as sklearn
    assert matthews_corrcoef([1, 1], [1, 1]) == 0.0
    assert matthews_corrcoef(["0", "1", "1"], ["0", "1", "1"]) == pytest.approx(1.0)


def test_pearson_and_spearman_hand_computed():
    assert pearson([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # x - mean: (-1, 0, 1); y - mean: (-7/3, -1/3, 8/3): r = 5 / sqrt(2 * 38/3).
    assert pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(5 / math.sqrt(2 * 38 / 3))
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))
    # Ties share the mean rank: x ranks (1, 2.5, 2.5, 4), y ranks (1, 3, 2, 4).
    assert spearmanr([10, 20, 20, 30], [1, 3, 2, 4]) == pytest.approx(
        pearson([1, 2.5, 2.5, 4], [1, 3, 2, 4]))
    assert spearmanr([1, 2, 3, 4], [1, 8, 27, 64]) == pytest.approx(1.0)  # monotone
    assert spearmanr([5.0, 5.0, 1.0], [3, 3, 0]) == pytest.approx(1.0)
    with pytest.raises(ArgumentError):
        pearson([1], [2])


def test_against_scipy():
    stats = pytest.importorskip("scipy.stats", reason="scipy is the independent reference")
    distance = pytest.importorskip("scipy.spatial.distance")
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.normal(size=30)
        y = x + rng.normal(size=30)
        assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
        xi, yi = rng.integers(0, 5, 40), rng.integers(0, 5, 40)  # many ties
        assert spearmanr(xi, yi) == pytest.approx(stats.spearmanr(xi, yi)[0], abs=1e-12)
        labels, guesses = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
        # Binary MCC is the phi coefficient: Pearson's r of the 0/1 vectors.
        assert matthews_corrcoef(labels, guesses) == pytest.approx(
            stats.pearsonr(labels, guesses)[0], abs=1e-12)
        # Binary F1 is the Dice coefficient of the positive sets.
        assert f1_score(labels, guesses) == pytest.approx(
            1 - distance.dice(labels.astype(bool), guesses.astype(bool)), abs=1e-12)


def test_glue_metrics_names():
    assert set(glue_metrics("cola", [1, 0, 1], [1, 0, 0])) == {"matthews_corrcoef"}
    for task in ("sst2", "mnli", "qnli", "rte", "wnli"):
        assert set(glue_metrics(task, [1, 0], [1, 1])) == {"accuracy"}
    for task in ("mrpc", "qqp"):
        assert glue_metrics(task, ["1", "0", "1"], ["1", "1", "1"]) == pytest.approx(
            {"accuracy": 2 / 3, "f1": 0.8})
    stsb = glue_metrics("STS-B", [0.0, 2.5, 5.0], [0.5, 2.0, 4.0])
    assert set(stsb) == {"pearson", "spearmanr"} and stsb["spearmanr"] == pytest.approx(1.0)
    assert glue_metrics("SST-2", [1], [1]) == {"accuracy": 1.0}
    with pytest.raises(ArgumentError, match="Unknown GLUE task"):
        glue_metrics("squad", [1], [1])


# --- SQuAD -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, normalized", [
    ("The  Cat!", "cat"),
    ("an apple, a day", "apple day"),
    ("Theory of the mind", "theory of mind"),  # "the" only as a whole word
    ("A-ha", "aha"),  # punctuation goes before articles: "a-ha" -> "aha", not " ha"
    ("the", ""),
    ("  Hello\tWorld \n", "hello world"),
    ("«Café»", "«café»"),  # only ASCII punctuation is removed
    ("THE END.", "end"),
])
def test_normalize_answer(text, normalized):
    assert normalize_answer(text) == normalized


def test_exact_match_and_f1():
    assert squad_exact_match("The Eiffel Tower!", ["eiffel tower", "tower"]) == 1.0
    assert squad_exact_match("Eiffel", ["eiffel tower"]) == 0.0
    # Precision 2/3, recall 2/2 against the first gold; 1/3, 1/1 against the second.
    assert squad_f1("big red ball", ["red ball", "ball"]) == pytest.approx(0.8)
    assert squad_f1("cat", ["dog"]) == 0.0
    # Repeated tokens count as a bag: "a a b" vs "a b": common 2 -> p 2/3 r 1.
    assert squad_f1("x x y", ["x y"]) == pytest.approx(0.8)
    # Unanswerable: only an empty prediction is right.
    assert (squad_exact_match("", []), squad_f1("", [])) == (1.0, 1.0)
    assert (squad_exact_match("Paris", []), squad_f1("Paris", [])) == (0.0, 0.0)
    # A gold answer that normalizes to nothing is dropped (v2.0 script).
    assert squad_f1("", ["the"]) == 1.0 and squad_f1("cat", ["The", "cat"]) == 1.0
    assert squad_f1("", ["cat"]) == 0.0
    with pytest.raises(ArgumentError, match="list"):
        squad_f1("cat", "cat")


def test_squad_v1_evaluate():
    gold = {"a": ["Denver Broncos", "Broncos"], "b": ["1990"], "c": ["blue sky"]}
    result = squad_evaluate(gold, {"a": "the Broncos", "b": "in 1990", "c": "red sky"})
    assert result["exact_match"] == pytest.approx(100 / 3)
    # f1: a 1, b 2/3 (p 1/2 r 1), c 1/2.
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1 / 2) / 3)
    assert result["total"] == 3
    assert not any(k.startswith(("HasAns", "NoAns", "best")) for k in result)
    with pytest.raises(ArgumentError, match="no prediction"):
        squad_evaluate(gold, {"a": "x"})


def test_squad_v2_no_answer_and_best_threshold():
    gold = {"a": ["x"], "b": [], "c": ["y z"], "d": []}
    predictions = {"a": "x", "b": "w", "c": "y", "d": ""}
    na_probs = {"a": 0.1, "b": 0.5, "c": 0.3, "d": 0.9}
    result = squad_evaluate(gold, predictions, na_probs)
    # exact a 1, b 0, c 0, d 1; f1 c = 2/3 (p 1, r 1/2).
    assert result["exact_match"] == pytest.approx(50.0)
    assert result["f1"] == pytest.approx(100 * (1 + 0 + 2 / 3 + 1) / 4)
    assert result["HasAns_exact"] == pytest.approx(50.0)
    assert result["HasAns_f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert (result["HasAns_total"], result["NoAns_total"]) == (2, 2)
    assert result["NoAns_exact"] == result["NoAns_f1"] == pytest.approx(50.0)
    # Threshold walk from "no answer everywhere" (score 2 = the unanswerable ones):
    # answer a (0.1): +1 -> 3; c (0.3): exact +0, f1 +2/3; b (0.5): -1 (non-empty
    # prediction); d (0.9): +0 (empty prediction).
    assert result["best_exact"] == pytest.approx(75.0)
    assert result["best_exact_thresh"] == pytest.approx(0.1)
    assert result["best_f1"] == pytest.approx(100 * (3 + 2 / 3) / 4)
    assert result["best_f1_thresh"] == pytest.approx(0.3)
    # A threshold below b's 0.5 turns b's prediction into "no answer", which is right.
    strict = squad_evaluate(gold, predictions, na_probs, na_prob_thresh=0.4)
    assert strict["exact_match"] == pytest.approx(75.0)
    assert "best_f1" not in squad_evaluate(gold, predictions)


# --- NER ----------------------------------------------------------------------------------

def test_chunks_iob1_and_bio():
    # IOB1: I- continues or starts; B- only separates two same-type chunks.
    assert ner_chunks(["I-PER", "I-PER", "B-PER", "O", "I-LOC"]) == [
        (0, 1, "PER"), (2, 2, "PER"), (4, 4, "LOC")]
    # BIO: the same reading.
    assert ner_chunks(["B-PER", "I-PER", "B-PER", "O", "B-LOC"]) == [
        (0, 1, "PER"), (2, 2, "PER"), (4, 4, "LOC")]
    # An I- after O or after another type starts a chunk (conlleval, not seqeval strict).
    assert ner_chunks(["O", "I-ORG", "I-ORG", "I-LOC", "B-LOC", "I-LOC"]) == [
        (1, 2, "ORG"), (3, 3, "LOC"), (4, 5, "LOC")]
    assert ner_chunks(["B-MISC", "B-MISC"]) == [(0, 0, "MISC"), (1, 1, "MISC")]
    assert ner_chunks(["O", "O"]) == []
    # IOBES: E- ends and S- is a chunk of its own.
    assert ner_chunks(["B-PER", "E-PER", "S-LOC", "I-LOC", "E-LOC"]) == [
        (0, 1, "PER"), (2, 2, "LOC"), (3, 4, "LOC")]
    with pytest.raises(ArgumentError, match="not 'O'"):
        ner_chunks(["PER"])


def test_span_metrics_hand_computed():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    guess = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "B-PER"]]
    # gold chunks 3; guessed 4; correct 2 (PER 0-1, ORG in sentence 2).
    result = ner_span_metrics(gold, guess)
    assert result == pytest.approx({"precision": 0.5, "recall": 2 / 3, "f1": 4 / 7})
    # A chunk that only overlaps does not count.
    assert ner_span_metrics([["B-PER", "I-PER"]], [["B-PER", "O"]])["f1"] == 0.0
    # Chunks end at sentence boundaries.
    assert ner_span_metrics([["I-PER"], ["I-PER"]], [["I-PER"], ["I-PER"]])["f1"] == 1.0
    # IOB1 gold against BIO predictions of the same entities: all correct.
    iob1 = [["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]]
    bio = [["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]]
    assert ner_span_metrics(iob1, bio)["f1"] == 1.0
    assert ner_span_metrics([["O"]], [["O"]]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    with pytest.raises(ArgumentError, match="Sentence 0"):
        ner_span_metrics([["O", "O"]], [["O"]])


def _conlleval_reference(gold_sentences, guessed_sentences):
    """conlleval.pl's counting loop, transcribed for B/I/O tags: an independent check
    of the chunk-set implementation."""

    def end(prev_tag, tag, prev_type, kind):
        return ((prev_tag, tag) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O")}
                or (prev_tag != "O" and prev_type != kind))

    def start(prev_tag, tag, prev_type, kind):
        return ((prev_tag, tag) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I")}
                or (tag != "O" and prev_type != kind))

    def split(tag):
        return tuple(tag.split("-", 1)) if "-" in tag else (tag, "")

    correct = found_gold = found_guessed = 0
    for gold, guessed in zip(gold_sentences, guessed_sentences):
        in_correct = False
        last_c, last_ct, last_g, last_gt = "O", "", "O", ""
        for c_full, g_full in zip(list(gold) + ["O"], list(guessed) + ["O"]):
            c, ct = split(c_full)
            g, gt = split(g_full)
            if in_correct:
                if end(last_c, c, last_ct, ct) and end(last_g, g, last_gt, gt) \
                        and last_gt == last_ct:
                    in_correct = False
                    correct += 1
                elif end(last_c, c, last_ct, ct) != end(last_g, g, last_gt, gt) or gt != ct:
                    in_correct = False
            if start(last_c, c, last_ct, ct) and start(last_g, g, last_gt, gt) and gt == ct:
                in_correct = True
            found_gold += start(last_c, c, last_ct, ct)
            found_guessed += start(last_g, g, last_gt, gt)
            last_c, last_ct, last_g, last_gt = c, ct, g, gt
    return correct, found_gold, found_guessed


def test_span_metrics_match_conlleval_counting_on_random_tags():
    rng = np.random.default_rng(0)
    tags = ["O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    for _ in range(200):
        lengths = rng.integers(1, 8, size=3)
        gold = [[tags[i] for i in rng.integers(0, len(tags), n)] for n in lengths]
        guess = [[tags[i] for i in rng.integers(0, len(tags), n)] for n in lengths]
        correct, found_gold, found_guessed = _conlleval_reference(gold, guess)
        result = ner_span_metrics(gold, guess)
        assert result["precision"] == pytest.approx(
            correct / found_guessed if found_guessed else 0.0)
        assert result["recall"] == pytest.approx(correct / found_gold if found_gold else 0.0)


def test_against_scikit_learn_and_seqeval():
    sklearn_metrics = pytest.importorskip("sklearn.metrics", reason="independent reference")
    seqeval_metrics = pytest.importorskip("seqeval.metrics", reason="independent reference")
    rng = np.random.default_rng(1)
    for _ in range(20):
        labels, guesses = rng.integers(0, 3, 60), rng.integers(0, 3, 60)
        assert matthews_corrcoef(labels, guesses) == pytest.approx(
            sklearn_metrics.matthews_corrcoef(labels, guesses), abs=1e-12)
        assert f1_score(labels, guesses, positive=1) == pytest.approx(
            sklearn_metrics.f1_score(labels == 1, guesses == 1), abs=1e-12)
    # seqeval's default mode reads chunks as conlleval does (IOB1 and BIO alike).
    tags = ["O", "O", "B-PER", "I-PER", "I-LOC", "B-LOC", "I-ORG"]
    for _ in range(50):
        lengths = rng.integers(1, 9, size=4)
        gold = [[tags[i] for i in rng.integers(0, len(tags), n)] for n in lengths]
        guess = [[tags[i] for i in rng.integers(0, len(tags), n)] for n in lengths]
        result = ner_span_metrics(gold, guess)
        assert result["f1"] == pytest.approx(seqeval_metrics.f1_score(gold, guess), abs=1e-12)
        assert result["precision"] == pytest.approx(
            seqeval_metrics.precision_score(gold, guess), abs=1e-12)
