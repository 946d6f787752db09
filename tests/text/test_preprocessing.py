"""Packing, truncation and the BertPreprocessor layer."""

from __future__ import annotations

import csv
import itertools
import os
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text.packing import BertPreprocessor, pack_inputs, truncate_segments
from keras_bert.text.tokenizer import BertTokenizer, VocabularyWarning

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "tokenization")
GLUE_RTE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "glue",
                        "RTE", "dev.tsv")


@pytest.fixture(scope="module")
def tokenizer():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        return BertTokenizer(os.path.join(DATA, "vocab_rich.txt"), lower_case=True)


def _google_truncate(a: list, b: list, max_length: int):
    """google-research/bert's _truncate_seq_pair, as a rule: pop from the longer list."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_length:
        (a if len(a) > len(b) else b).pop()
    return a, b


def _google_pack(a, b, seq_length, cls_id, sep_id):
    """run_classifier.convert_single_example's layout (pads with 0)."""
    if b is None:
        a = a[:seq_length - 2]
        ids, types = [cls_id] + a + [sep_id], [0] * (len(a) + 2)
    else:
        a, b = _google_truncate(a, b, seq_length - 3)
        ids = [cls_id] + a + [sep_id] + b + [sep_id]
        types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    mask = [1] * len(ids)
    pad = seq_length - len(ids)
    return ids + [0] * pad, mask + [0] * pad, types + [0] * pad


def test_longest_first_equals_google_truncate_seq_pair():
    lengths = list(itertools.product(range(9), range(9)))
    a = tf.ragged.range([la for la, _ in lengths])
    b = tf.ragged.range([lb for _, lb in lengths]) + 100
    for budget in range(0, 19):
        got_a, got_b = truncate_segments([a, b], budget)
        for (la, lb), row_a, row_b in zip(lengths, got_a.to_list(), got_b.to_list()):
            want = _google_truncate(range(la), range(100, 100 + lb), budget)
            assert (row_a, row_b) == want, (la, lb, budget)


def test_other_truncations():
    a, b = tf.ragged.constant([[1, 2, 3, 4, 5, 6]]), tf.ragged.constant([[7, 8, 9]])
    assert [s.to_list() for s in truncate_segments([a], 4)] == [[[1, 2, 3, 4]]]
    assert [s.to_list() for s in truncate_segments([a, b], 5, "round_robin")] == [
        [[1, 2, 3]], [[7, 8]]]
    assert [s.to_list() for s in truncate_segments([a, b], 5, "waterfall")] == [
        [[1, 2, 3, 4, 5]], [[]]]
    three = truncate_segments([a, b, b], 6, "round_robin")
    assert [s.row_lengths().numpy().tolist() for s in three] == [[2], [2], [2]]
    with pytest.raises(ValueError, match="one or two segments"):
        truncate_segments([a, b, b], 6)
    with pytest.raises(ValueError, match="Unknown truncation"):
        truncate_segments([a], 6, "shortest")


def test_pack_inputs_layout():
    packed = pack_inputs([tf.ragged.constant([[7, 8, 9], [5]]), tf.ragged.constant([[4], []])],
                         seq_length=7, cls_id=2, sep_id=3, pad_id=0)
    assert {k: v.numpy().tolist() for k, v in packed.items()} == {
        "input_word_ids": [[2, 7, 8, 9, 3, 4, 3], [2, 5, 3, 3, 0, 0, 0]],
        "input_mask": [[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0]],
        "input_type_ids": [[0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 0, 0, 0]]}
    assert all(v.dtype == tf.int32 for v in packed.values())
    with pytest.raises(ValueError, match="no room"):
        pack_inputs([tf.ragged.constant([[1]])] * 2, seq_length=2, cls_id=2, sep_id=3)


def _glue_pairs():
    if not os.path.exists(GLUE_RTE):
        pytest.skip(f"GLUE RTE data not found at {GLUE_RTE}")
    with open(GLUE_RTE, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [r[1] for r in rows], [r[2] for r in rows]


@pytest.mark.parametrize("seq_length", [16, 64])
def test_preprocessor_equals_google_convert_single_example(tokenizer, seq_length):
    first, second = _glue_pairs()
    pre = BertPreprocessor(tokenizer, seq_length=seq_length)
    cls_id, sep_id = tokenizer.cls_id, tokenizer.sep_id
    a_ids = tokenizer.tokenize(first).to_list()
    b_ids = tokenizer.tokenize(second).to_list()
    pairs = pre((tf.constant(first), tf.constant(second)))
    singles = pre(tf.constant(first))
    for i in range(len(first)):
        for out, b in ((pairs, b_ids[i]), (singles, None)):
            want = _google_pack(a_ids[i], b, seq_length, cls_id, sep_id)
            got = tuple(out[k][i].numpy().tolist()
                        for k in ("input_word_ids", "input_mask", "input_type_ids"))
            assert got == want, first[i][:60]


def test_preprocessor_inputs(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=8)
    batch = pre(tf.constant(["Hello there!", "Ok"]))
    assert {k: v.shape for k, v in batch.items()} == {
        "input_word_ids": (2, 8), "input_mask": (2, 8), "input_type_ids": (2, 8)}
    single = pre(tf.constant("Hello there!"))
    assert single["input_word_ids"].shape == (8,)
    np.testing.assert_array_equal(single["input_word_ids"], batch["input_word_ids"][0])
    assert pre([tf.constant(["Ok"])])["input_word_ids"].numpy().tolist() == \
        batch["input_word_ids"][1:].numpy().tolist()
    with pytest.raises(ValueError, match="one or two segments"):
        pre((tf.constant(["a"]),) * 3)
    with pytest.raises(ValueError, match="all be scalars or all be vectors"):
        pre((tf.constant("a"), tf.constant(["b"])))


def test_preprocessor_errors(tokenizer):
    with pytest.raises(ValueError, match=r"lacks \['\[CLS\]', '\[SEP\]'\]"):
        BertPreprocessor(BertTokenizer(["[PAD]", "[UNK]", "hello"]))
    with pytest.raises(ValueError, match="seq_length"):
        BertPreprocessor(tokenizer, seq_length=2)
    with pytest.raises(ValueError, match="Unknown truncation"):
        BertPreprocessor(tokenizer, truncation="middle")
    with pytest.raises(TypeError, match="BertTokenizer"):
        BertPreprocessor("vocab.txt")


def test_preprocessor_in_model_fit(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=16)
    texts = ["a great movie", "a bad movie", "great fun", "so bad"] * 4
    labels = [1, 0, 1, 0] * 4
    dataset = (tf.data.Dataset.from_tensor_slices((texts, labels)).batch(4)
               .map(lambda x, y: (pre(x), y)))
    inputs = {name: keras.Input(shape=(16,), dtype="int32", name=name)
              for name in ("input_word_ids", "input_mask", "input_type_ids")}
    embedded = keras.layers.Embedding(tokenizer.vocab_size, 8)(inputs["input_word_ids"])
    logits = keras.layers.Dense(2)(keras.layers.GlobalAveragePooling1D()(embedded))
    model = keras.Model(inputs, logits)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(dataset, epochs=2, shuffle=False, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_preprocessor_survives_keras_save_and_load(tokenizer, tmp_path):
    vocab_copy = tmp_path / "vocab.txt"
    vocab_copy.write_text("\n".join(tokenizer.vocabulary) + "\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        pre = BertPreprocessor(BertTokenizer(str(vocab_copy)), seq_length=12,
                               truncation="round_robin")
    text = keras.Input(shape=(), dtype="string", name="text")
    model = keras.Model(text, pre(text))
    sentences = tf.constant(["Hello, wörld!", "日本語 ΟΔΟΣ"])
    expected = model(sentences)
    model.save(tmp_path / "pre.keras")
    vocab_copy.unlink()  # the vocabulary travels inside the .keras file
    loaded = keras.saving.load_model(tmp_path / "pre.keras")
    got = loaded(sentences)
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])
    layer = next(la for la in loaded.layers if isinstance(la, BertPreprocessor))
    assert layer.truncation == "round_robin" and layer.seq_length == 12
    clone = BertPreprocessor.from_config(pre.get_config())
    np.testing.assert_array_equal(clone(sentences)["input_word_ids"],
                                  expected["input_word_ids"])
