"""BertTokenizer against google-research/bert's FullTokenizer, and its in-graph behaviour.

The reference ids in tests/fixtures/tokenization/ were made by scripts/make_tokenization_refs.py
with Google's own tokenization.py (and cross-checked with Hugging Face tokenizers) on a few
thousand real sentences, hand-written Unicode edge cases and invalid UTF-8.
"""

from __future__ import annotations

import json
import os
import time
import unicodedata
import warnings

import pytest
import tensorflow as tf
from conftest import minilm_path
from tokenization_refs import (
    ALL_TEXTS,
    INPUTS,
    NUM_REAL,
    REFS,
    TEXTS,
    comparable,
    ragged_ref,
)

from keras_bert.core.errors import InputNotFoundError, VocabError
from keras_bert.text.basic_tokenizer import basic_tokenize
from keras_bert.text.tokenizer import BertTokenizer, VocabularyWarning
from keras_bert.text.vocab import load_vocab

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "tokenization")
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _minilm_vocab():
    return os.path.join(minilm_path(), "vocab.txt")


def _tokenizer(vocab_file, lower_case, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        return BertTokenizer(vocab_file, lower_case=lower_case, **kwargs)


@pytest.fixture(scope="module", params=["rich_uncased", "rich_cased", "minilm_uncased",
                                        "minilm_cased"])
def setting(request):
    vocab_name, casing = request.param.split("_")
    vocab = (os.path.join(DATA, "vocab_rich.txt") if vocab_name == "rich"
             else _minilm_vocab())
    return request.param, _tokenizer(vocab, casing == "uncased")


@pytest.fixture(scope="module")
def rich_uncased():
    return _tokenizer(os.path.join(DATA, "vocab_rich.txt"), True)


# --- exactness ------------------------------------------------------------------------------


def test_ids_equal_google_full_tokenizer(setting):
    key, tokenizer = setting
    expected = ragged_ref(key)
    got = tokenizer.tokenize(tf.constant(INPUTS)).to_list()
    wrong = [i for i in range(len(INPUTS)) if got[i] != expected[i] and comparable(i)]
    assert not wrong, "\n".join(
        f"{INPUTS[i][:80]!r}: google {expected[i][:12]} ours {got[i][:12]}"
        for i in wrong[:10])
    checked = sum(map(comparable, range(len(INPUTS))))
    assert checked >= len(INPUTS) - 10 and sum(map(len, got)) > 90_000


def test_normalize_equals_google_basic_tokenizer(setting):
    key, tokenizer = setting
    edge = TEXTS["edge"]
    expected = [s.decode("utf-8") for s in REFS[f"{key}_edge_normalized"]]
    got = [s.decode("utf-8") for s in tokenizer.normalize(tf.constant(edge)).numpy()]
    for i, (text, want, have) in enumerate(zip(edge, expected, got)):
        if comparable(NUM_REAL + i):
            assert have == want, f"{text!r}"


def test_exact_path_equals_fast_path(setting):
    # Printable-ASCII strings take FastBertTokenizer; a trailing no-break space (a
    # separator that yields no token) sends the same text through the exact path.
    _, tokenizer = setting
    ascii_texts = [t for t in ALL_TEXTS[:NUM_REAL] if t.isascii()][:800]
    fast = tokenizer.tokenize(tf.constant(ascii_texts)).to_list()
    exact = tokenizer.tokenize(tf.constant([t + "\u00a0" for t in ascii_texts])).to_list()
    assert fast == exact


@pytest.mark.parametrize("lower_case", [True, False])
def test_fast_path_on_every_pair_of_its_characters(lower_case):
    # The fast path admits printable ASCII, tab, newline and carriage return; on every
    # pair of them in context it must agree with the exact path (itself checked against
    # Google's code). A vocab of all single characters exposes every split.
    chars = [chr(c) for c in range(32, 127)] + ["\t", "\n", "\r"]
    visible = [c for c in chars if c.strip()]
    tok = _tokenizer(SPECIAL + visible + ["##" + c for c in visible], lower_case)
    texts = [f"A{a}{b}b" for a in chars for b in chars] + ["x" * 200, "x" * 201]
    fast = tok.tokenize(tf.constant(texts)).to_list()
    exact = tok.tokenize(tf.constant([t + "\u00a0" for t in texts])).to_list()
    assert fast == exact


# --- offsets and round trips ----------------------------------------------------------------


def test_offsets_equal_hugging_face():
    # References: HF's character offsets on every real text where its ids equal Google's.
    tokenizer = _tokenizer(_minilm_vocab(), True)
    rows = REFS["hf_offsets_rows"]
    splits = REFS["hf_offsets_splits"]
    texts = [ALL_TEXTS[i] for i in rows]
    _, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    for j, (s, e) in enumerate(zip(starts.to_list(), ends.to_list())):
        a, b = splits[j], splits[j + 1]
        assert s == REFS["hf_offsets_starts"][a:b].tolist(), texts[j][:80]
        assert e == REFS["hf_offsets_ends"][a:b].tolist(), texts[j][:80]


def _fold_sigma(text):
    return text.replace("ς", "σ")


def test_offsets_slice_back_to_the_source(rich_uncased):
    tokenizer = rich_uncased
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(ALL_TEXTS))
    sources, words = [], []
    for text, row, s, e in zip(ALL_TEXTS, ids.to_list(), starts.to_list(), ends.to_list()):
        assert all(0 <= a < b <= len(text) for a, b in zip(s, e)), text
        # Group the pieces into words; each word's span must normalize to the word.
        # (Pieces within a word may be out of order where NFD reorders marks.)
        spans = []
        for token_id, a, b in zip(row, s, e):
            piece = tokenizer.id_to_token(token_id)
            if piece.startswith("##") and spans:
                spans[-1][0] += piece[2:]
                spans[-1][1:] = min(spans[-1][1], a), max(spans[-1][2], b)
            else:
                spans.append([piece, a, b])
        assert [a for _, a, _ in spans] == sorted(a for _, a, _ in spans), text
        for word, a, b in spans:
            if word != "[UNK]":
                sources.append(text[a:b])
                words.append(word)
    normalized = tokenizer.normalize(tf.constant(sources)).numpy()
    assert len(words) > 50_000
    for source, word, have in zip(sources, words, normalized):
        assert _fold_sigma(have.decode("utf-8")) == _fold_sigma(word), source


def test_byte_offsets_match_char_offsets(rich_uncased):
    texts = [t for t in ALL_TEXTS if not t.isascii()][:300]
    _, char_s, char_e = rich_uncased.tokenize_with_offsets(tf.constant(texts))
    _, byte_s, byte_e = rich_uncased.tokenize_with_offsets(tf.constant(texts), unit="byte")
    for text, cs, ce, bs, be in zip(texts, char_s.to_list(), char_e.to_list(),
                                    byte_s.to_list(), byte_e.to_list()):
        assert bs == [len(text[:i].encode("utf-8")) for i in cs]
        assert be == [len(text[:i].encode("utf-8")) for i in ce]


def test_offsets_on_invalid_utf8(rich_uncased):
    # FullTokenizer decodes with errors="ignore"; we decode invalid bytes to U+FFFD
    # (one character each), which cleaning deletes: same ids, offsets into the input.
    text = b"caf\xe9 ok \xf0\x9f\x98 \xc3\xa9t\xc3\xa9"
    ids, starts, ends = rich_uncased.tokenize_with_offsets(tf.constant([text]), unit="byte")
    assert ids.to_list() == rich_uncased.tokenize([text.decode("utf-8", "ignore")]).to_list()
    spans = []
    for a, b in zip(starts.to_list()[0], ends.to_list()[0]):
        if spans and spans[-1][1] == a:
            spans[-1][1] = b
        else:
            spans.append([a, b])
    assert [text[a:b] for a, b in spans] == [b"caf", b"ok", "été".encode()]


def test_detokenize_inverts_tokenize(rich_uncased):
    tokenizer = rich_uncased
    ids = tokenizer.tokenize(tf.constant(ALL_TEXTS))
    restored = tokenizer.detokenize(ids).numpy()
    normalized = tokenizer.normalize(tf.constant(ALL_TEXTS)).numpy()
    clean = [i for i, row in enumerate(ids.to_list()) if tokenizer.unk_id not in row]
    assert len(clean) > 0.9 * len(ALL_TEXTS)
    for i in clean:
        assert restored[i] == normalized[i], ALL_TEXTS[i][:80]


def test_detokenize_options(rich_uncased):
    tok = rich_uncased
    padded = tf.constant([[tok.cls_id, tok.token_to_id("the"), tok.sep_id, tok.pad_id]])
    assert tok.detokenize(padded).numpy().tolist() == [b"[CLS] the [SEP] [PAD]"]
    assert tok.detokenize(padded, skip_special_tokens=True).numpy().tolist() == [b"the"]
    assert tok.detokenize(tf.constant([tok.token_to_id("the")])).numpy() == b"the"
    with pytest.raises(tf.errors.InvalidArgumentError, match="outside the vocabulary"):
        tok.detokenize(tf.constant([[tok.vocab_size]]))


# --- shapes and execution contexts ------------------------------------------------------------


MIXED = ["Hello, world!", "naïve café", "", "日本語", "ΟΔΟΣ 😀"]


def test_shapes_and_input_types(rich_uncased):
    tok = rich_uncased
    batch = tok.tokenize(tf.constant(MIXED)).to_list()
    assert tok.tokenize(MIXED).to_list() == batch
    assert tok.tokenize([t.encode("utf-8") for t in MIXED]).to_list() == batch
    scalar = tok.tokenize("naïve café")
    assert isinstance(scalar, tf.Tensor) and scalar.numpy().tolist() == batch[1]
    grid = tok.tokenize(tf.constant([MIXED[:2], MIXED[3:]]))
    assert grid.shape[:2] == [2, 2] and grid.to_list() == [batch[:2], batch[3:]]
    nested = tok.tokenize(tf.ragged.constant([MIXED[:3], MIXED[3:]]))
    assert nested.to_list() == [batch[:3], batch[3:]]
    assert tok.tokenize(tf.constant([], tf.string)).to_list() == []
    assert tok.tokenize(tf.constant(MIXED)).dtype == tf.int32


def test_tf_function_dataset_and_saved_model(rich_uncased, tmp_path):
    tok = rich_uncased
    expected = tok.tokenize(tf.constant(MIXED)).to_list()
    graph_fn = tf.function(tok.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    assert graph_fn(tf.constant(MIXED)).to_list() == expected
    assert graph_fn(tf.constant(MIXED[:1])).to_list() == expected[:1]  # all-ASCII batch
    dataset = tf.data.Dataset.from_tensor_slices(MIXED).batch(2).map(tok.tokenize)
    assert [row for batch in dataset for row in batch.to_list()] == expected

    module = tf.Module()
    module.tokenizer = tok
    module.serve = tf.function(
        lambda text: tok.tokenize(text).to_tensor(default_value=-1),
        input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "tokenizer"))
    loaded = tf.saved_model.load(str(tmp_path / "tokenizer"))
    served = loaded.serve(tf.constant(MIXED)).numpy().tolist()
    assert [[i for i in row if i >= 0] for row in served] == expected


def test_degenerate_inputs(rich_uncased):
    tok = rich_uncased
    empty = ["", " ", "\t\n\r ", "\x00\x01\x7f", "\u200b\ufeff\u00ad", "\u3000\u00a0"]
    assert tok.tokenize(tf.constant(empty)).to_list() == [[]] * len(empty)
    assert tok.normalize(tf.constant(empty)).numpy().tolist() == [b""] * len(empty)
    with pytest.raises(TypeError, match="expects strings"):
        tok.tokenize(tf.constant([1, 2]))
    with pytest.raises(ValueError, match='"char" or "byte"'):
        tok.tokenize_with_offsets("x", unit="word")


@pytest.mark.parametrize("unit", ["hello world. ", "héllo wörld. "])
def test_one_megabyte_strings(rich_uncased, unit):
    tok = rich_uncased
    repeats = (1 << 20) // len(unit.encode("utf-8"))
    start = time.perf_counter()
    ids = tok.tokenize(tf.constant([unit * repeats, unit]))
    seconds = time.perf_counter() - start
    big, small = ids.to_list()
    assert big == small * repeats
    assert seconds < 30


def test_long_words_become_unk(rich_uncased):
    tok = rich_uncased
    a = tok.token_to_id("a")
    for text, n in (("a" * 200, 200), ("a" * 201, 201), ("é" * 200, 200), ("é" * 201, 201)):
        row = tok.tokenize(text).numpy().tolist()
        assert (row == [tok.unk_id]) == (n > 200), (text[:3], n)
    assert tok.tokenize("a" * 200).numpy().tolist()[0] == a
    short = _tokenizer(tok.vocabulary, True, max_chars_per_word=3)
    assert short.tokenize(["aaaa aaa", "éééé ééé"]).to_list() == [
        [tok.unk_id] + tok.tokenize("aaa").numpy().tolist(),
        [tok.unk_id] + tok.tokenize("ééé").numpy().tolist()]


def test_basic_tokenize():
    assert basic_tokenize(["Héllo, WORLD! 日本"]).to_list() == [
        [b"hello", b",", b"world", b"!", b"\xe6\x97\xa5", b"\xe6\x9c\xac"]]
    assert basic_tokenize("Héllo", lower_case=False).numpy().tolist() == ["Héllo".encode()]


# --- vocabularies -----------------------------------------------------------------------------


def _write(tmp_path, lines, name="vocab.txt"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_vocab_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        BertTokenizer(str(tmp_path / "missing.txt"))
    with pytest.raises(InputNotFoundError, match="is a directory.*vocab.txt"):
        load_vocab(str(tmp_path))
    with pytest.raises(ValueError, match="empty"):
        BertTokenizer(_write(tmp_path, ["", "  "]))
    with pytest.raises(VocabError, match="empty"):
        load_vocab(_write(tmp_path, [], name="nothing.txt"))
    with pytest.raises(VocabError, match="empty"):
        BertTokenizer([])
    with pytest.raises(ValueError, match=r"no '\[UNK\]' token"):
        BertTokenizer(_write(tmp_path, ["[PAD]", "hello"]))
    with pytest.raises(ValueError, match="word pieces besides"):
        BertTokenizer(SPECIAL)
    (tmp_path / "latin1.txt").write_bytes(b"[UNK]\ncaf\xe9\n")
    with pytest.raises(ValueError, match="line 2"):
        BertTokenizer(str(tmp_path / "latin1.txt"))
    with pytest.raises(TypeError, match="vocab_file"):
        BertTokenizer(123)
    with pytest.raises(TypeError, match="lower_case"):
        BertTokenizer(SPECIAL, lower_case="yes")


def test_vocab_casing_warnings(tmp_path):
    cased = SPECIAL + ["The", "Cat", "the", "cat"]
    with pytest.warns(VocabularyWarning, match="looks cased"):
        BertTokenizer(cased, lower_case=True)
    with pytest.warns(VocabularyWarning, match="looks uncased"):
        BertTokenizer(SPECIAL + ["the", "cat"], lower_case=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BertTokenizer(cased, lower_case=False)
        BertTokenizer(SPECIAL + ["the", "cat"], lower_case=True)
        BertTokenizer.from_config(BertTokenizer(cased, lower_case=False).get_config()
                                  | {"lower_case": True})


def test_vocab_file_like_google(tmp_path):
    # Lines are stripped, as FullTokenizer strips them.
    # Only "\n" ends a line (readline), so a U+2028 inside a token stays in it.
    path = _write(tmp_path, SPECIAL + ["  hello  ", "world", "##s", "x\u2028y"])
    tok = BertTokenizer(path)
    assert load_vocab(path)[5] == "hello"
    assert tok.token_to_id("hello") == 5
    assert tok.tokenize("hello worlds").numpy().tolist() == [5, 6, 7]
    with pytest.raises(KeyError, match="not in the vocabulary"):
        tok.token_to_id("nope")
    assert tok.id_to_token(6) == "world" and tok.vocab_size == 9
    assert tok.id_to_token(8) == "x\u2028y"


def test_repeated_tokens_are_refused(tmp_path):
    # FullTokenizer would give a repeated token the id of its last line, silently
    # shifting ids (issue 13); here it is an error naming the token and its lines.
    path = _write(tmp_path, SPECIAL + ["  hello  ", "world", "hello", "##s"])
    with pytest.raises(VocabError, match=r"vocab.txt:8: the token 'hello' is on lines 6 and 8"):
        load_vocab(path)
    with pytest.raises(VocabError, match="'hello' is on lines 6 and 8"):
        BertTokenizer(path)
    # A repeated special token is named first, whatever comes before it.
    path = _write(tmp_path, SPECIAL + ["a", "a", "[SEP]", "b", "b"], name="special.txt")
    with pytest.raises(VocabError, match=r"'\[SEP\]' is on lines 4 and 8 \(2 more tokens are "
                                         r"repeated, e.g. 'a'\)") as caught:
        load_vocab(path)
    assert caught.value.path == path and caught.value.line == 8
    assert isinstance(caught.value, ValueError)
    # A list of tokens is held to the same rule (ids instead of lines).
    with pytest.raises(VocabError, match=r"'\[PAD\]' is at ids 0 and 6"):
        BertTokenizer(SPECIAL + ["hello", "[PAD]"])
    # Blank lines are no tokens: never repeats.
    tok = BertTokenizer(_write(tmp_path, SPECIAL + ["", "hello", "", "x"], name="blank.txt"))
    assert tok.token_to_id("hello") == 6 and tok.vocab_size == 9


@pytest.mark.parametrize("vocab", ["rich", "minilm"])
def test_the_vocabularies_we_test_with_have_no_repeats(vocab):
    path = os.path.join(DATA, "vocab_rich.txt") if vocab == "rich" else _minilm_vocab()
    tokens = load_vocab(path)  # would raise on a repeat
    assert len(set(tokens)) == len(tokens) > 5000


def test_config_round_trip(rich_uncased):
    config = rich_uncased.get_config()
    assert json.loads(json.dumps(config)) == config
    clone = BertTokenizer.from_config(config)
    assert clone.vocabulary == rich_uncased.vocabulary and clone.lower_case
    assert clone.tokenize(MIXED).to_list() == rich_uncased.tokenize(MIXED).to_list()


# --- exhaustive check against Google's code (needs bert-tensorflow) ------------------------


@pytest.mark.slow
@pytest.mark.parametrize("lower_case", [True, False])
def test_every_code_point_equals_google_basic_tokenizer(lower_case):
    tokenization = pytest.importorskip(
        "bert.tokenization", reason="pip install --no-deps bert-tensorflow==1.0.4")
    if not hasattr(tokenization, "BasicTokenizer"):
        pytest.skip("`bert` is not google-research/bert's package")
    tokenization.FLAGS.mark_as_parsed()  # its preserve_unused_tokens flag: False
    basic = tokenization.BasicTokenizer(do_lower_case=lower_case)
    tok = _tokenizer(SPECIAL + ["a"], lower_case)
    code_points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for template in ("{}", "A{}b", "x{0}{0}Σ", "ΑΣ{}"):
        texts = [template.format(chr(c)) for c in code_points]
        for start in range(0, len(texts), 1 << 16):
            chunk = texts[start:start + (1 << 16)]
            got = tok.normalize(tf.constant(chunk)).numpy()
            for text, have in zip(chunk, got):
                assert have.decode("utf-8") == " ".join(basic.tokenize(text)), repr(text)


def test_the_ideograph_shortcut_of_the_tables_is_what_the_full_rules_give():
    # BasicTokenizerTables takes CJK ideographs (most assigned code points) by a shortcut:
    # each must be what the per-character rules make of it, in this Python's Unicode.
    from keras_bert.text import unicode_tables as ut

    plain = 0
    for low, high in ut.CJK_RANGES:
        for cp in range(low, high + 1):
            ch = chr(cp)
            if not ut.is_plain_ideograph(cp, ch, unicodedata.category(ch)):
                continue
            plain += 1
            padded = f" {ch} "
            stage1 = ut.clean_and_pad(ch)
            assert stage1 == padded
            assert "".join(ut.strip_mark_pad_punctuation(c) for c in stage1) == padded
            assert ut.strip_mark_pad_punctuation(ch) == ch
            assert not ut.is_removed(ch) and not ut.is_separator(ch)
            assert ut.sigma_class(ch) == ut.OTHER and unicodedata.combining(ch) == 0
    assert plain > 80_000
    # The compatibility ideographs decompose (NFD) and take the full rules.
    assert not ut.is_plain_ideograph(0xF900, "\uf900", "Lo")
