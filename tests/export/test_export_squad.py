"""The SQuAD `serve_text`: windows over passages of any length, decoded in the graph as
`keras-bert predict` decodes them (keras_bert.tasks.squad.serving).

The reference is the package's prediction path: `squad_features` (run_squad's windows,
in numpy) and `decode_squad` (run_squad's n-best rules, in Python) on the Keras model's
logits; the exported graph shares no code with them but the tokenizer.
"""

from __future__ import annotations

import os
import random
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import REPO

from keras_bert import BertConfig, BertEncoder
from keras_bert.export import ExportSource
from keras_bert.export.signatures import ServingModule
from keras_bert.tasks.base import FeatureSettings
from keras_bert.tasks.squad import SquadExample, decode_squad, squad_features
from keras_bert.tasks.squad.model import BertSpanLabeler
from keras_bert.tasks.squad.serving import BLANK_PATTERN, SpanServing
from keras_bert.text.tokenizer import BertTokenizer, VocabularyWarning

VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
SETTINGS = FeatureSettings(max_seq_length=24, max_query_length=6, max_answer_length=5,
                           doc_stride=5, n_best_size=20)
WORDS = ("the tower stands in paris and tokyo über dem Fluss , written by jane austen in "
         "1813 . who wrote it 東京 naïve").split()


def _tokenizer():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        return BertTokenizer(VOCAB, lower_case=False)


def _module(model, settings=SETTINGS, threshold=None):
    serving = SpanServing(max_query_length=settings.max_query_length,
                          max_answer_length=settings.max_answer_length,
                          n_best_size=settings.n_best_size, doc_stride=settings.doc_stride,
                          null_score_diff_threshold=threshold)
    source = ExportSource(model, serving, _tokenizer(), VOCAB, settings.max_seq_length)
    return ServingModule(source)


def _predict(model, questions, passages, settings=SETTINGS, version_2=False, threshold=0.0):
    examples = [SquadExample(f"q{i}", q, p) for i, (q, p) in enumerate(zip(questions, passages))]
    features = squad_features(examples, _tokenizer(), settings)
    outputs = model.predict(features.inputs, verbose=0, batch_size=64)
    return features, decode_squad(examples, features, outputs, settings, version_2=version_2,
                                  null_score_diff_threshold=threshold)


def _serve(module, questions, passages):
    out = module.serve_text({"text": tf.constant(questions), "text_pair": tf.constant(passages)})
    return {k: v.numpy() for k, v in out.items()}


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(11)
    config = BertConfig.from_preset("tiny", vocab_size=_tokenizer().vocab_size,
                                    max_position_embeddings=64, hidden_size=32, num_heads=4,
                                    intermediate_size=64)
    return BertSpanLabeler(BertEncoder(config))


@pytest.fixture(scope="module")
def cases():
    """Questions and passages: empty, one word, shorter than a window, many windows."""
    rng = random.Random(0)
    questions, passages = [], []
    for n in (0, 1, 3, 12, 30, 70, 150):
        for _ in range(3):
            passages.append(" ".join(rng.choice(WORDS) for _ in range(n)))
            questions.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9))))
    questions += ["", "who wrote it ?", "  \u3000 ", "tower"]  # empty and blank questions
    passages += ["the tower stands in paris .", "\t \u00a0", "the tower", "paris"]
    return questions, passages


@pytest.fixture(scope="module")
def module_v1(model):
    return _module(model)


@pytest.mark.parametrize("version_2", [False, True])
def test_serve_text_answers_are_predicts_answers(model, module_v1, cases, version_2):
    questions, passages = cases
    threshold = 0.5 if version_2 else None
    features, predictions = _predict(model, questions, passages, version_2=version_2,
                                     threshold=threshold or 0.0)
    windows = np.bincount(features.example_index, minlength=len(questions))
    assert windows.max() >= 10 and (windows == 1).sum() >= 10  # many windows, and one
    got = _serve(_module(model, threshold=threshold) if version_2 else module_v1, questions,
                 passages)
    # predict's "empty" is run_squad's placeholder where no span is valid: no answer here.
    expected = ["" if p.text == "empty" else p.text for p in predictions]
    assert [a.decode("utf-8") for a in got["answer"]] == expected
    assert got["has_answer"].tolist() == [bool(a) for a in expected]
    answered = [b for b, a in enumerate(expected) if a]
    assert len(answered) >= len(expected) // 3
    for b in range(len(expected)):  # the offsets cut the answer from the passage
        start, end = int(got["answer_start"][b]), int(got["answer_end"][b])
        assert passages[b][start:end] == expected[b] if expected[b] else start == end == -1
    best = [p.nbest[0] for p in predictions]
    for b in answered:
        if not version_2 or best[b].text:
            np.testing.assert_allclose(got["score"][b], best[b].start_logit + best[b].end_logit,
                                       atol=1e-4)


def test_empty_question_or_passage_gets_no_answer_in_a_batch_with_answers(module_v1):
    module = module_v1
    got = _serve(module, ["who wrote it ?", "", "who wrote it ?", " \u2003"],
                 ["written by jane austen .", "written by jane austen .", " ", "jane"])
    assert got["answer"].tolist()[1:] == [b"", b"", b""]
    assert got["answer"][0] != b"" and got["has_answer"].tolist() == [True, False, False, False]
    only_empty = _serve(module, ["who", "who"], ["", "\t"])
    assert only_empty["answer"].tolist() == [b"", b""]


def test_blank_pattern_is_pythons_whitespace():
    """A question of only characters `str.strip()` removes has no text, in the graph too."""
    chars = [chr(c) for c in range(0x3100) if c not in range(0xD800, 0xE000)]
    blank = tf.strings.regex_full_match(tf.constant(chars), BLANK_PATTERN).numpy()
    assert [c for c, b in zip(chars, blank) if b] == [c for c in chars if not c.strip()]


class _PointingModel(keras.Model):
    """Start logit 8 on token `start_id`, end logit 8 on `end_id`, 0 elsewhere."""

    def __init__(self, encoder, start_id, end_id):
        super().__init__(name="pointing_model")
        self.encoder = encoder
        self._ids = (start_id, end_id)

    def call(self, inputs, training=False):
        ids = inputs["input_word_ids"]
        return {"start_logits": 8.0 * tf.cast(ids == self._ids[0], tf.float32),
                "end_logits": 8.0 * tf.cast(ids == self._ids[1], tf.float32)}


def test_answer_across_window_boundaries(model):
    """20 one-piece words, a 1-piece question, 16 positions: 12 passage tokens a window,
    starts 0, 4, 8. A model points at a start word and an end word; the span is found
    in the window where its start has the most context, as run_squad decodes it: across
    window 0's end (window 1 holds it), with its start's best window the last, at the
    passage's first and at its last tokens."""
    tok = _tokenizer()
    vocab = [t for t in tok.vocabulary if t.isalpha() and t.islower() and len(t) > 3]
    words, start_word, end_word, question = vocab[:20], vocab[20], vocab[21], vocab[30]
    cases = [(9, 12), (14, 17), (0, 2), (17, 19)]
    passages, expected = [], []
    for first, last in cases:
        marked = list(words)
        marked[first], marked[last] = start_word, end_word
        passages.append(" ".join(marked))
        expected.append(" ".join(marked[first:last + 1]))
    assert tok.tokenize(tf.constant(passages)).row_lengths().numpy().tolist() == [20] * 4
    pointing = _PointingModel(model.encoder, tok.token_to_id(start_word),
                              tok.token_to_id(end_word))
    settings = FeatureSettings(max_seq_length=16, max_query_length=4, max_answer_length=5,
                               doc_stride=4, n_best_size=20)
    features, predictions = _predict(pointing, [question] * 4, passages, settings)
    assert len(features) == 12  # three windows each
    assert [p.text for p in predictions] == expected
    got = _serve(_module(pointing, settings), [question] * 4, passages)
    assert [a.decode() for a in got["answer"]] == expected
    assert [p[s:e] for p, s, e in zip(passages, got["answer_start"], got["answer_end"])] == (
        expected)
