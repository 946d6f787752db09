"""CoreWordpiece and `BertTokenizer.core_ops()`: the tokenizer in core TensorFlow ops only.

References: tensorflow-text's FastWordpieceTokenizer (an independent implementation of the
same WordPiece), the default `BertTokenizer` (itself checked against google-research/bert
in test_tokenization.py) and Google's own reference ids (tests/fixtures/tokenization/).
"""

from __future__ import annotations

import os
import random
import sys
import types
import warnings

import pytest
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow.core.protobuf import saved_model_pb2
from tokenization_refs import DATA, INPUTS, comparable, ragged_ref

from keras_bert.core.errors import ArgumentError
from keras_bert.text.core_wordpiece import CoreWordpiece
from keras_bert.text.tokenizer import BertTokenizer, VocabularyWarning

SPEC = [tf.TensorSpec([None], tf.string)]


def _tokenizer(lower_case, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        return BertTokenizer(os.path.join(DATA, "vocab_rich.txt"), lower_case=lower_case,
                             **kwargs)


@pytest.fixture(scope="module", params=["uncased", "cased"])
def pair(request):
    tokenizer = _tokenizer(request.param == "uncased")
    return f"rich_{request.param}", tokenizer, tokenizer.core_ops()


def _all(tokenizer, texts):
    """ids, char offsets and byte offsets, as lists."""
    texts = tf.constant(texts, tf.string)
    _, char_starts, char_ends = tokenizer.tokenize_with_offsets(texts)
    _, byte_starts, byte_ends = tokenizer.tokenize_with_offsets(texts, unit="byte")
    return [t.to_list() for t in (tokenizer.tokenize(texts), char_starts, char_ends,
                                  byte_starts, byte_ends)]


# --- same tokens as the default tokenizer ----------------------------------------------------


def test_same_ids_and_offsets_on_google_reference_texts(pair):
    key, default, core = pair
    got = _all(core, INPUTS)
    assert got == _all(default, INPUTS)
    expected = ragged_ref(key)  # google-research/bert's FullTokenizer
    assert all(got[0][i] == expected[i] for i in range(len(INPUTS)) if comparable(i))
    assert sum(map(len, got[0])) > 100_000


EDGE = [
    "a" * 200, "a" * 201, "é" * 200, "é" * 201, "x" * 150 + "é" * 60,  # around the limit
    "∰∰ 🜁 ⌬ꙮ 𓀀𓀁", "qzxqzx😀 ☃☃ ∰q",  # all words [UNK]; some [UNK]
    "Ελληνικά και Русский язык", "العربية والفارسية", "हिन्दी भाषा", "ภาษาไทย",
    "日本語の文章と한국어 문장", "ΟΔΟΣ ὈΔΥΣΣΕΎΣ", "naïve Café", "",
]


def test_same_ids_and_offsets_on_edge_cases(pair):
    _, default, core = pair
    for texts in (EDGE, ["", "", ""], ["", " \u00a0 ", "\u200b"], []):
        assert _all(core, texts) == _all(default, texts), texts
    ids = core.tokenize(tf.constant(EDGE)).to_list()
    assert ids[1] == [core.unk_id] and ids[5] == [core.unk_id] * 4 and ids[-1] == []


def test_same_ids_and_offsets_with_a_short_word_limit():
    default = _tokenizer(True, max_chars_per_word=3)
    core = default.core_ops()
    texts = ["aaaa aaa", "éééé ééé", "ab"] + EDGE
    assert _all(core, texts) == _all(default, texts)


def _traced_op_types(tokenizer) -> set[str]:
    graph = tf.function(tokenizer.tokenize, input_signature=SPEC).get_concrete_function().graph
    graph_def = graph.as_graph_def()
    return {node.op for node in graph_def.node} | {
        node.op for function in graph_def.library.function for node in function.node_def}


def test_core_ops_leaves_the_default_tokenizer_as_it_is():
    default = _tokenizer(True)
    core = default.core_ops()
    assert core.get_config() == default.get_config()
    fast_ops = {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"}
    assert fast_ops <= _traced_op_types(default)
    assert not fast_ops & _traced_op_types(core)
    text = tf.constant(["The greatest!", "Café"])
    assert core.core_ops().tokenize(text).to_list() == default.tokenize(text).to_list()


# --- CoreWordpiece against tensorflow-text's FastWordpieceTokenizer --------------------------


def test_core_wordpiece_equals_fast_wordpiece_on_random_words():
    rng = random.Random(0)
    alphabet = "abcé日😀"
    vocab = ["[UNK]"] + sorted({"".join(rng.choices(alphabet, k=rng.randint(1, 4)))
                                for _ in range(60)})
    vocab += sorted({"##" + "".join(rng.choices(alphabet, k=rng.randint(1, 3)))
                     for _ in range(40)} - set(vocab))
    words = ["".join(rng.choices(alphabet, k=rng.randint(0, 12))) for _ in range(3000)]
    core = CoreWordpiece(vocab)
    fast = tf_text.FastWordpieceTokenizer(vocab, token_out_type=tf.int32,
                                          no_pretokenization=True, max_bytes_per_word=1000)
    got = [t.to_list() for t in core.tokenize_with_offsets(tf.constant(words))]
    assert got == [t.to_list() for t in fast.tokenize_with_offsets(tf.constant(words))]
    assert core.tokenize(tf.constant(words)).to_list() == got[0]
    unk, pieces = sum(row == [0] for row in got[0]), sum(len(row) > 1 for row in got[0])
    assert unk > 100 and pieces > 1000  # both outcomes are well covered
    dtypes = [(t.dtype, t.row_splits.dtype) for t in core.tokenize_with_offsets(["abc"])]
    assert dtypes == [(tf.int32, tf.int64), (tf.int64, tf.int64), (tf.int64, tf.int64)]


def test_core_wordpiece_vocabulary_rules():
    # Empty and repeated tokens (the last line wins, like FullTokenizer's dict), no "##".
    core = CoreWordpiece(["[UNK]", "", "ab", "c", "ab", ""], max_chars_per_word=4)
    assert core.tokenize(["ab", "abc", "c", "", "ababa"]).to_list() == [[4], [0], [3], [], [0]]
    assert core.tokenize_with_offsets(tf.constant(["ababa", "abc"]))[2].to_list() == [[5], [3]]
    with pytest.raises(ArgumentError, match="unknown_token") as caught:
        CoreWordpiece(["a", "##b"])
    assert caught.value.field == "unknown_token"
    with pytest.raises(ArgumentError, match="max_chars_per_word"):
        CoreWordpiece(["[UNK]"], max_chars_per_word=0)
    with pytest.raises(ArgumentError, match="1-D"):
        core.tokenize(tf.constant([["ab"]]))


# --- only core ops, in a SavedModel that TF Serving could load ------------------------------


def _tensorflow_text_ops() -> set[str]:
    """Every op the loaded tensorflow-text libraries register (from their op wrappers)."""
    names = set()
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("tensorflow_text"):
            continue
        for value in vars(module).values():
            if isinstance(value, types.ModuleType) and getattr(
                    value, "_IS_TENSORFLOW_PLUGIN", False):
                names |= {n for n in dir(value) if n[:1].isupper() and callable(
                    getattr(value, n)) and n not in ("Annotated", "Any", "List", "TypeVar")}
    return names


def _saved_op_types(path) -> set[str]:
    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    ops = set()
    for graph in saved.meta_graphs:
        ops |= {node.op for node in graph.graph_def.node}
        for function in graph.graph_def.library.function:
            ops |= {node.op for node in function.node_def}
    return ops


def _save(tokenizer, path):
    module = tf.Module()
    module.tokenizer = tokenizer
    module.ids = tf.function(lambda text: tokenizer.tokenize(text).to_tensor(-1),
                             input_signature=SPEC)
    module.offsets = tf.function(
        lambda text: [t.to_tensor(-1) for t in tokenizer.tokenize_with_offsets(text, "byte")],
        input_signature=SPEC)
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.ids})
    return str(path)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    default = _tokenizer(True)
    return default, _save(default.core_ops(), tmp_path_factory.mktemp("core_ops"))


def test_saved_graph_has_only_core_ops(saved, tmp_path):
    text_ops = _tensorflow_text_ops()
    assert {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"} <= text_ops
    ops = _saved_op_types(saved[1])
    assert {"LookupTableFindV2", "While", "UnicodeDecodeWithOffsets"} <= ops
    assert not ops & text_ops
    assert [op for op in sorted(ops) if not hasattr(tf.raw_ops, op)] == []
    # The check sees a tensorflow-text op where there is one (in a function library).
    fast = tf_text.FastWordpieceTokenizer(["[UNK]", "a", "##b"], no_pretokenization=True)
    module = tf.Module()
    module.fn = tf.function(lambda words: fast.tokenize(words).to_tensor(-1),
                            input_signature=SPEC)
    tf.saved_model.save(module, str(tmp_path))
    assert "FastWordpieceTokenizeWithOffsets" in _saved_op_types(tmp_path) & text_ops


def test_loaded_saved_model_gives_the_same_ids(saved):
    default, core_path = saved
    loaded = tf.saved_model.load(core_path)
    texts = INPUTS[:400] + EDGE
    expected = _all(default, texts)
    served = loaded.signatures["serving_default"](text=tf.constant(texts))
    ids = next(iter(served.values())).numpy().tolist()
    assert [[i for i in row if i >= 0] for row in ids] == expected[0]
    _, starts, ends = [t.numpy().tolist() for t in loaded.offsets(tf.constant(texts))]
    assert [[s for s in row if s >= 0] for row in starts] == expected[3]
    assert [[e for e in row if e >= 0] for row in ends] == expected[4]
