"""Vocabulary learning (keras_bert.text.vocab_learning) and the `keras-bert vocab` command."""

from __future__ import annotations

import gzip
import os

import pytest
import tensorflow as tf

from keras_bert.cli import main
from keras_bert.core.errors import ArgumentError, DataError, InputNotFoundError, VocabError
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.vocab import load_vocab
from keras_bert.text.vocab_learning import learn_vocab, reserved_tokens, write_vocab

CORPUS = """The quick brown fox jumps over the lazy dog.
A quick movement of the enemy will jeopardize six gunboats!

Über café façades, naïve résumés; ΟΔΟΣ and 日本語 too.
Jumping foxes jumped quickly over lazier dogs.
"""


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(CORPUS * 30, encoding="utf-8")
    return str(path)


def test_reserved_tokens_in_google_order():
    assert reserved_tokens(0) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    google = reserved_tokens(994)  # bert-base-uncased's first 999 lines
    assert [google.index(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [
        0, 100, 101, 102, 103]
    assert google[1] == "[unused0]" and google[99] == "[unused98]"
    assert google[104] == "[unused99]" and google[-1] == "[unused993]"
    with pytest.raises(ValueError, match="num_unused"):
        reserved_tokens(-1)


@pytest.mark.parametrize("lower_case", [True, False])
def test_learned_vocab_has_the_size_and_covers_the_corpus(corpus, lower_case):
    vocab = learn_vocab(corpus, vocab_size=300, lower_case=lower_case, num_unused=3,
                        min_count=1, progress=False)
    assert len(vocab) == 300 and len(set(vocab)) == 300
    assert vocab[:8] == ["[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]", "[CLS]",
                         "[SEP]", "[MASK]"]
    tokenizer = BertTokenizer(vocab, lower_case=lower_case)
    lines = [line for line in CORPUS.splitlines() if line]
    ids = tokenizer.tokenize(lines)
    assert tokenizer.unk_id not in ids.flat_values.numpy()
    words = tokenizer.normalize(lines).numpy()
    assert tokenizer.detokenize(ids).numpy().tolist() == words.tolist()
    assert ("quick" in vocab) and (("Über" in vocab) != lower_case)


def test_small_corpus_fills_up_with_unused_slots(corpus):
    vocab = learn_vocab(corpus, vocab_size=2000, num_unused=3, min_count=1, progress=False)
    assert len(vocab) == 2000 and vocab[4:8] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert vocab[8] == "[unused3]" and sum(t.startswith("[unused") for t in vocab) > 1000


def test_gzip_globs_and_max_lines(tmp_path, corpus):
    with gzip.open(tmp_path / "more.txt.gz", "wt", encoding="utf-8") as f:
        f.write("zebra zebras zebra\n" * 50)
    both = learn_vocab(f"{corpus},{tmp_path}/*.gz", vocab_size=200, min_count=1,
                       num_unused=0, progress=False)
    assert "zebra" in both
    first = learn_vocab(f"{tmp_path}/*.gz,{corpus}", vocab_size=200, min_count=1,
                        num_unused=0, max_lines=10, progress=False)
    assert "zebra" in first and "quick" not in first


def test_learn_vocab_errors(tmp_path, corpus):
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        learn_vocab(str(tmp_path / "nothing-here*.txt"), vocab_size=1000, progress=False)
    with pytest.raises(InputNotFoundError, match=r"is a directory.*\*"):
        learn_vocab(str(tmp_path), vocab_size=1000, progress=False)
    with pytest.raises(ValueError, match="no room"):
        learn_vocab(corpus, vocab_size=5, num_unused=0, progress=False)
    (tmp_path / "blank.txt").write_text("\n\n  \n", encoding="utf-8")
    with pytest.raises(DataError, match="No words"):
        learn_vocab(str(tmp_path / "blank.txt"), vocab_size=1000, progress=False)
    with pytest.raises(ValueError, match="single-character pieces"):
        learn_vocab(corpus, vocab_size=20, num_unused=0, min_count=1, progress=False)


@pytest.mark.parametrize("field, value", [
    ("max_lines", 0), ("max_lines", -1), ("vocab_size", 0), ("vocab_size", 104),
    ("num_unused", -1), ("min_count", 0), ("max_unique_chars", 0), ("max_token_length", 0),
    ("num_iterations", 0), ("vocab_size", 1000.0), ("lower_case", "yes")])
def test_learn_vocab_arguments_out_of_range_name_the_field(corpus, field, value):
    # max_lines=0 used to read nothing and report an empty corpus (issue 13).
    with pytest.raises(ArgumentError, match=field) as caught:
        learn_vocab(corpus, **{"vocab_size": 1000, field: value}, progress=False)
    assert caught.value.field == field and "--" not in str(caught.value)


def test_learn_vocab_reads_a_remote_corpus(corpus):
    # Any tf.io.gfile filesystem: ram:// stands in for gs://.
    remote = "ram://test_learn_vocab/corpus.txt"
    tf.io.gfile.makedirs("ram://test_learn_vocab")
    with open(corpus, "rb") as f, tf.io.gfile.GFile(remote, "wb") as g:
        g.write(f.read())
    kwargs = {"vocab_size": 200, "num_unused": 3, "min_count": 1, "progress": False}
    assert learn_vocab("ram://test_learn_vocab/*.txt", **kwargs) == learn_vocab(corpus, **kwargs)


def test_write_vocab_is_atomic_and_reads_back(tmp_path):
    path = tmp_path / "out" / "vocab.txt"
    write_vocab(["[PAD]", "[UNK]", "a", "##b"], path)
    write_vocab(["[PAD]", "[UNK]", "c"], path)  # replaces the file
    assert load_vocab(str(path)) == ["[PAD]", "[UNK]", "c"]
    assert os.listdir(tmp_path / "out") == ["vocab.txt"]
    with pytest.raises(ValueError, match="whitespace"):
        write_vocab(["[PAD]", " a"], tmp_path / "bad.txt")
    assert not tf.io.gfile.glob(str(tmp_path / "bad.txt*"))
    with pytest.raises(VocabError, match="'a' is at ids 1 and 3"):
        write_vocab(["[PAD]", "a", "b", "a"], tmp_path / "repeated.txt")
    assert not (tmp_path / "repeated.txt").exists()


def test_vocab_command(tmp_path, corpus, capsys):
    output = tmp_path / "vocab.txt"
    code = main(["vocab", "--input_file", corpus, "--output_file", str(output),
                 "--vocab_size", "250", "--num_unused", "5", "--min_count", "1",
                 "--no-do_lower_case", "--no-progress"])
    assert code == 0
    tokens = load_vocab(str(output))
    assert len(tokens) == 250 and tokens[6] == "[UNK]" and "The" in tokens
    assert "Wrote 250 tokens" in capsys.readouterr().out
    code = main(["vocab", "--input_file", str(tmp_path / "missing.txt"),
                 "--output_file", str(tmp_path / "x.txt"), "--no-progress"])
    assert code == 2 and "missing.txt" in capsys.readouterr().err
    assert not (tmp_path / "x.txt").exists()
