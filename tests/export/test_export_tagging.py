"""`serve_text` of an exported NER model against `keras-bert predict`.

A tiny random-weight tagger (2 layers, H=32) is written as a `keras-bert finetune` run
directory with a short `max_seq_length` and `doc_stride`, exported with `keras-bert
export`, and asked for the labels of sentences; the reference is `keras-bert predict`
run on the same sentences written as a CoNLL file (one word per line, the words of
Python's `str.split()`). Both run in this process; tests/export/test_export.py runs the
exported signatures where keras_bert cannot be imported.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import random
import shutil
import warnings

import pytest
import tensorflow as tf
from conftest import REPO

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import FINETUNE_CONFIG, FINETUNED_MODEL
from keras_bert.cli import main
from keras_bert.tasks.finetuning import FinetuneOptions
from keras_bert.tasks.registry import get_task
from keras_bert.tasks.tagging.serving import split_words, whitespace_code_points
from keras_bert.text.tokenizer import BertTokenizer, VocabularyWarning

VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
SEQ, STRIDE = 16, 5  # 14 pieces to a window, starts 5 apart

LONG = ("The unbelievably overcomplicated negotiations between Kraftwerk Industries "
        "and the municipality of Ouagadougou dragged on throughout September , while "
        "spokeswoman Anneliese Brandtmeyer-Okonkwo repeatedly insisted that nothing "
        "extraordinary had happened at Schloss Neuschwanstein or in Reykjavík .")
SENTENCES = [
    "Anna Berg visited Oslo .",
    "EU rejects German call to boycott British lamb .",
    LONG,
    "Café naïve résumé — ÅNGSTRÖM Straße in 北京欢迎你。 near 東京タワー 😀 ok",
    "visited \u200b Oslo \x07 \ufffd \x00 \u00ad and back",  # words of dropped characters
    "\t  Anna\u3000visited \u00a0 Oslo\u2028again\x85.\x1c\x0bend \n ",
    "",
    " \t\n\u2003 ",
    "x",
]


def _config(vocab_size):
    return BertConfig.from_preset("tiny", vocab_size=vocab_size, max_position_embeddings=64,
                                  hidden_size=32, num_heads=4, intermediate_size=64)


def _finetuned_run(directory, **options):
    """A NER run directory as `keras-bert finetune` writes it, with random weights
    (tests/export/test_export.py's helper, for this task)."""
    import keras

    keras.utils.set_random_seed(11)
    task = get_task("ner")
    task.restore({"task": "ner", "labels": LABELS})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        size = BertTokenizer(VOCAB, lower_case=False).vocab_size
    model = task.build_model(BertEncoder(_config(size)))
    os.makedirs(directory)
    model.save(os.path.join(directory, FINETUNED_MODEL))
    shutil.copyfile(VOCAB, os.path.join(directory, "vocab.txt"))
    record = {"task": "ner", "task_config": task.config(),
              "options": dataclasses.asdict(FinetuneOptions(**options)),
              "learning_rate": 5e-5, "seed": 1, "checkpoint": None, "preset": "tiny",
              "lower_case": False, "history": []}
    with open(os.path.join(directory, FINETUNE_CONFIG), "w") as f:
        json.dump(record, f)


@pytest.fixture(autouse=True)
def _seed_and_policy():
    """Replaces conftest's: its reseeding before every test makes TensorFlow instantiate
    the loaded signatures anew (3-4 s a test). These tests draw no random numbers; the
    weights come from `_finetuned_run`'s own seed."""
    yield


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    """(the run directory, the loaded SavedModel, its model card)."""
    root = tmp_path_factory.mktemp("ner_export")
    run = root / "run_ner"
    _finetuned_run(run, max_seq_length=SEQ, doc_stride=STRIDE)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["export", "--checkpoint", str(run), "--output_dir", str(root / "saved"),
                     "--name", "ner", "--nowarmup"])
    printed = out.getvalue()
    assert code == 0, printed
    card_text, _, last = printed.rpartition("}\n")
    path = last.split(" to ", 1)[1].strip()
    return run, tf.saved_model.load(path), json.loads(card_text + "}")


def _predict(run, sentences, tmp_path):
    """`keras-bert predict`'s tag per word of each sentence with words (its CoNLL
    input holds one word per line; a sentence without words cannot be written)."""
    conll = tmp_path / "input.txt"
    with open(conll, "w", encoding="utf-8") as f:
        for sentence in sentences:
            if sentence.split():
                f.write("".join(word + "\n" for word in sentence.split()) + "\n")
    output = tmp_path / "predictions.txt"
    assert main(["predict", "--model", str(run), "--task", "ner", "--input", str(conll),
                 "--output", str(output)]) == 0
    blocks = output.read_text(encoding="utf-8").split("\n\n")
    assert blocks[-1] == ""
    tagged = iter([[line.rsplit(" ", 1) for line in block.split("\n")]
                   for block in blocks[:-1]])
    return [next(tagged) if sentence.split() else [] for sentence in sentences]


def _serve(saved, sentences):
    out = saved.signatures["serve_text"](text=tf.constant(sentences, tf.string))
    return {k: v.numpy() for k, v in out.items()}


def _python_words(text):
    """`text.split()` with each word's code point span, by a loop over the text."""
    words, start = [], None
    for i, char in enumerate(text + " "):
        if char.isspace() and start is not None:
            words.append((text[start:i], start, i))
            start = None
        elif not char.isspace() and start is None:
            start = i
    assert [w for w, _, _ in words] == text.split()
    return words


def test_serve_text_labels_equal_predict_word_for_word(tagger, tmp_path):
    run, saved, card = tagger
    expected = _predict(run, SENTENCES, tmp_path)
    got = _serve(saved, SENTENCES)
    assert set(got) == {"words", "labels", "word_start", "word_end", "num_words"}
    most = max(len(s.split()) for s in SENTENCES)
    assert got["words"].shape == got["labels"].shape == (len(SENTENCES), most)
    for b, sentence in enumerate(SENTENCES):
        n = len(sentence.split())
        assert got["num_words"][b] == n
        words = [w.decode("utf-8") for w in got["words"][b, :n]]
        labels = [t.decode("utf-8") for t in got["labels"][b, :n]]
        assert [[w, t] for w, t in zip(words, labels)] == expected[b], sentence
        spans = list(zip(words, got["word_start"][b, :n].tolist(),
                         got["word_end"][b, :n].tolist()))
        assert spans == _python_words(sentence)
        # Padding.
        assert got["words"][b, n:].tolist() == got["labels"][b, n:].tolist() == [b""] * (
            most - n)
        assert got["word_start"][b, n:].tolist() == got["word_end"][b, n:].tolist() == [
            -1] * (most - n)
    # The comparison means something: several labels, and the long sentence windowed.
    assert len({t for sentence in expected for _, t in sentence}) > 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        tok = BertTokenizer(VOCAB, lower_case=False)
    pieces = sum(max(1, int(tf.size(tok.tokenize(w)))) for w in LONG.split())
    assert pieces > (SEQ - 2) + 2 * STRIDE  # at least three windows
    assert card["kind"] == "tagger" and card["max_seq_length"] == SEQ


def test_a_sentence_alone_and_in_a_batch_get_the_same_labels(tagger):
    _, saved, _ = tagger
    batch = _serve(saved, SENTENCES)
    for b in (0, 2, 5):
        alone = _serve(saved, SENTENCES[b:b + 1])
        n = alone["num_words"][0]
        assert alone["labels"][0].tolist() == batch["labels"][b, :n].tolist()


def test_empty_sentences(tagger):
    _, saved, _ = tagger
    got = _serve(saved, ["", "  \t", "\u3000"])
    assert got["num_words"].tolist() == [0, 0, 0]
    assert got["words"].shape == got["labels"].shape == got["word_start"].shape == (3, 0)
    got = _serve(saved, [])
    assert got["num_words"].shape == (0,) and got["words"].shape == (0, 0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="1-D batch"):
        saved.signatures["serve_text"](text=tf.constant("Anna visited Oslo"))


def test_invalid_utf8_is_read_as_replacement_characters(tagger):
    """Offsets count a U+FFFD per invalid sequence (as the tokenizer does); words are
    valid UTF-8."""
    _, saved, _ = tagger
    got = _serve(saved, [b"Oslo \xff\xfe x\xc3( end"])
    text = b"Oslo \xff\xfe x\xc3( end".decode("utf-8", errors="replace")
    assert [w.decode("utf-8") for w in got["words"][0]] == text.split()
    assert list(zip(got["word_start"][0].tolist(), got["word_end"][0].tolist())) == [
        (s, e) for _, s, e in _python_words(text)]


def test_split_words_is_str_split():
    """The graph's word split against Python's on random strings of words and every
    character `str.isspace()` calls whitespace (and some it does not)."""
    rng = random.Random(0)
    alphabet = ([chr(c) for c in whitespace_code_points()]
                + ["a", "é", "北", "😀", "\u200b", "\x00", "\ufeff", "\u180e", "-"])
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
             for _ in range(2000)]
    words, starts, ends = split_words(tf.constant(texts))
    for text, w, s, e in zip(texts, words.to_list(), starts.to_list(), ends.to_list()):
        assert list(zip([x.decode("utf-8") for x in w], s, e)) == _python_words(text), text
