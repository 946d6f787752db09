"""`keras-bert export --format litert` and keras_bert.export.litert: LiteRT models.

The references are independent of the LiteRT code: `BertTokenizer.tokenize` (itself
checked against Google's FullTokenizer in test_tokenization.py) for every id, the Keras
models' own outputs on ids made by the package's tokenizer and packer, and the
SavedModel signatures' code (`ServingModule`, checked against `keras-bert predict` in
test_export*.py) for the tagger's and multiple choice's `serve_text`. The .tflite files
are also run by a README-style runner in a fresh process where keras_bert cannot be
imported. Models are tiny (2 layers, H=32) with random weights.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import random
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from clean_process import BLOCK_KERAS_BERT
from conftest import REPO, minilm_path
from export_support import (
    VOCAB,
    finetuned_run,
    keras_outputs,
    random_ids,
    rich_tokenizer,
    tiny_config,
)
from tokenization_refs import ALL_TEXTS, INVALID_UTF8

from keras_bert import BertEncoder
from keras_bert.checkpoints import save_encoder
from keras_bert.cli import main
from keras_bert.core.errors import ArgumentError, KerasBertError
from keras_bert.export import (
    LITERT_TEXT_OPS,
    LiteRTModel,
    LiteTokenizer,
    export_litert,
    litert,
    load_interpreter,
)
from keras_bert.export.signatures import ServingModule
from keras_bert.tasks.export_sources import load_export_source
from keras_bert.text.packing import pack_inputs

SEQ = 24
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TEXT_BYTES = [t.encode("utf-8") for t in [  # odd text of every kind
    "Hello, World! This is BERT.", "Café naïve résumé — ÅNGSTRÖM Straße",
    "北京欢迎你。東京タワー", "don't stop-believing... (really?!)", "", "   \t\n ",
    "zero\u200bwidth\u00adsoft nul\x00 ctrl\x07", "emoji 😀 and ΣΊΣΥΦΟΣ",
    " ".join(["long"] * 300) + " tail words", "MiXeD CaSe WoRdS 12345",
]] + [b"bad \xff\xfe utf8 \xc3(", b"\xe2\x82"]
PAIRS = [TEXT_BYTES[(i + 3) % len(TEXT_BYTES)] for i in range(len(TEXT_BYTES))]

def _export(checkpoint, output_dir, name, *extra):
    """`keras-bert export` -> (the version directory, the card it printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["export", "--checkpoint", str(checkpoint), "--output_dir",
                     str(output_dir), "--name", name, *extra])
    out = out.getvalue()
    assert code == 0, out
    card_text, _, last = out.rpartition("}\n")
    return last.split(" to ", 1)[1].strip(), json.loads(card_text + "}")


def _reference_ids(segments, lower_case, seq=SEQ):
    """Packed ids from the package's tokenizer and packer, cut to the longest input."""
    tok = rich_tokenizer(lower_case)
    packed = pack_inputs([tok.tokenize(tf.constant(s)) for s in segments], seq,
                         cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id)
    longest = int(tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1)))
    return {k: v.numpy()[:, :longest] for k, v in packed.items()}


SCRIPTS = {  # code point ranges of generated text, per script
    "cjk": [(0x4E00, 0x9FFF), (0x3040, 0x30FF), (0xAC00, 0xD7A3)],
    "cyrillic": [(0x400, 0x4FF)], "greek": [(0x370, 0x3FF), (0x1F00, 0x1FFF)],
    "arabic": [(0x600, 0x6FF)], "devanagari": [(0x900, 0x97F)], "thai": [(0xE00, 0xE7F)],
    "accents": [(0xC0, 0x24F), (0x1E00, 0x1EFF), (0x300, 0x36F)],
    "control_format": [(0, 0x1F), (0x7F, 0x9F), (0x200B, 0x200F), (0x2028, 0x202E),
                       (0x2060, 0x206F), (0xFEFF, 0xFEFF), (0xFFFD, 0xFFFD), (0xAD, 0xAD)],
    "symbols": [(0x2000, 0x2BFF), (0x3000, 0x303F), (0xFF00, 0xFFEF)],
    "astral": [(0x1F300, 0x1F6FF), (0x1D400, 0x1D7FF), (0x20000, 0x2A6DF)],
}


def generated_texts(per_script=60, seed=0):
    """Random strings of each script with spaces, ASCII and punctuation between; then
    random bytes (mostly invalid UTF-8), and words around the 200-character limit."""
    rng = random.Random(seed)
    texts = []
    for ranges in SCRIPTS.values():
        for _ in range(per_script):
            chars = []
            for _ in range(rng.randint(1, 30)):
                r = rng.random()
                if r < 0.3:
                    chars.append(rng.choice(" abcXYZ.,!?-'Σ"))
                else:
                    lo, hi = rng.choice(ranges)
                    chars.append(chr(rng.randint(lo, hi)))
            texts.append("".join(chars).encode("utf-8", "surrogatepass"))
    texts += [bytes(rng.randrange(256) for _ in range(rng.randint(0, 12))) for _ in range(200)]
    texts += [b"a" * 200 + b" b", b"a" * 201 + b" b", "é".encode() * 200, "é".encode() * 201,
              "\u4e00".encode() * 300, b"x" * 199 + " ΟΔΟΣ".encode()]
    return texts


# --- the tokenizer ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer_model():
    """A .tflite of `LiteTokenizer.tokenize` (the code every serve_text runs), cased and
    uncased, converted as `export_litert` converts."""
    tokenizers = {case: LiteTokenizer(rich_tokenizer(case)) for case in (False, True)}

    class Tokenize(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def tokenize(self, text):
            out = {}
            for case, tok in tokenizers.items():
                ids = tok.tokenize(text)  # one id more: LiteRT's Python API cannot
                # return an empty tensor
                out[f"{case}_ids"] = tf.concat([ids.flat_values, [-1]], axis=0)
                out[f"{case}_splits"] = ids.row_splits
            # SQuAD's character offsets (uncased: accents stripped, so they move)
            (ids,), (starts,), (ends,), _ = tokenizers[True].tokenize_with_offsets(text)
            for name, value in (("offset_ids", ids), ("starts", starts), ("ends", ends)):
                out[name] = tf.concat([value.flat_values, [-1]], axis=0)
            return out

    module = Tokenize()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [module.tokenize.get_concrete_function()], module)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True
    return converter.convert()


def _run_tokenizer(model, texts):
    interpreter = load_interpreter_from_content(model)
    out = interpreter.get_signature_runner()(text=np.array(texts, dtype=object))
    rows = {case: [out[f"{case}_ids"][a:b].tolist() for a, b in
                   zip(out[f"{case}_splits"][:-1], out[f"{case}_splits"][1:])]
            for case in (False, True)}
    splits = out["True_splits"]
    for name in ("offset_ids", "starts", "ends"):
        rows[name] = [out[name][a:b].tolist() for a, b in zip(splits[:-1], splits[1:])]
    return rows


def load_interpreter_from_content(model):
    import tensorflow_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    return InterpreterWithCustomOps(
        model_content=model,
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)


def test_litert_ids_equal_bert_tokenizer_on_reference_and_odd_text(tokenizer_model):
    """Google's reference texts (corpus, GLUE, SQuAD, every edge case, invalid UTF-8)
    and generated text of ten scripts, control characters, random bytes and overlong
    words: the LiteRT tokenizer gives BertTokenizer's ids for every one, cased and
    uncased, in one batch (and one by one for a few)."""
    texts = [t.encode("utf-8") for t in ALL_TEXTS] + INVALID_UTF8 + generated_texts()
    got = _run_tokenizer(tokenizer_model, texts)
    for case in (False, True):
        expected = rich_tokenizer(case).tokenize(tf.constant(texts)).to_list()
        wrong = [texts[i] for i in range(len(texts)) if got[case][i] != expected[i]]
        assert not wrong, f"lower_case={case}: {len(wrong)} differ, e.g. {wrong[:3]}"
    expected = rich_tokenizer(True).tokenize_with_offsets(tf.constant(texts), unit="char")
    for name, value in zip(("offset_ids", "starts", "ends"), expected):
        value = value.to_list()
        wrong = [texts[i] for i in range(len(texts)) if got[name][i] != value[i]]
        assert not wrong, f"{name}: {len(wrong)} differ, e.g. {wrong[:3]}"
    for text in [b"", b"   ", "ΣΑΣ ΟΔΟΣ.".encode(), b"\xe2\x82", "e\u0301\u0323".encode()]:
        one = _run_tokenizer(tokenizer_model, [text])
        assert one[True] == rich_tokenizer(True).tokenize(tf.constant([text])).to_list()


def test_tensorflow_texts_own_litert_tokenizer_differs_where_documented():
    """Why the LiteRT tokenizer is rebuilt from BertTokenizer's tables: tensorflow-text's
    LiteRT-kernel tokenizer (FastBertNormalize + FastWordpiece, as FastBertTokenizer
    runs them) gives other ids on these (NFKC folding, control characters, U+FFFD)."""
    import tensorflow_text as tf_text

    tok = rich_tokenizer(True)
    fast = tf_text.FastBertTokenizer(vocab=tok.vocabulary, token_out_type=tf.int32,
                                     lower_case_nfd_strip_accents=True)
    for text in ["ﬁne ﬂow", "a\x00b", "x\ufffdy", "Straße", "ＡＢＣ", "a\x07b"]:
        assert (fast.tokenize([text]).to_list() != tok.tokenize([text]).to_list()), text
    assert fast.tokenize(["Hello, World!"]).to_list() == tok.tokenize(
        ["Hello, World!"]).to_list()


# --- exports of every family -------------------------------------------------------------


def _flatbuffer_ops(path):
    """(builtin op codes, custom op names) of a .tflite file, read with TensorFlow's
    flatbuffer schema (not keras_bert's code)."""
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model(path)
    custom = {c.customCode.decode() for c in model.operatorCodes if c.customCode}
    return model, custom


CHOICES = {"text": [b"She opened the door", "Σοφία άνοιξε".encode(), b""],
           "text_pair": [b"and then", b"", b"x"],
           "endings": np.array([[b"walked in.", b"", b"sat down \xff", b"  \t"],
                                [b"left", b"came back " * 30, b"\n", b"ok"],
                                [b"", b" ", b"\t", b""]], dtype=object)}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Each family exported to LiteRT (through the command line: the classifier at
    float32, the SQuAD model at int8), with its Keras model and source."""
    import keras

    keras.utils.set_random_seed(11)
    root = tmp_path_factory.mktemp("litert")
    out = root / "models"
    size = rich_tokenizer(False).vocab_size
    runs = {"classifier": ("mrpc", {"task": "mrpc", "labels": ["0", "1"]}, {}),
            "span_labeler": ("squad1", {"task": "squad1"}, {"max_query_length": 8,
                                                            "doc_stride": 5}),
            "tagger": ("ner", {"task": "ner", "labels": NER_LABELS}, {"doc_stride": 5}),
            "multiple_choice": ("swag", {"task": "swag"}, {})}
    made = {}
    for kind, (task, config, options) in runs.items():
        run = root / f"run_{task}"
        model = finetuned_run(VOCAB, SEQ, run, task, BertEncoder(tiny_config(size)), config, **options)
        if kind in ("classifier", "span_labeler"):
            path, card = _export(run, out, kind, "--format", "litert")
            made[kind] = (model, path, card, load_export_source(run))
            if kind == "span_labeler":
                path, card = _export(run, out, kind, "--format", "litert",
                                     "--quantize", "dynamic_int8", "--noserve_text")
                made["span_labeler_int8"] = (model, path, card, None)
        else:  # the tagger reads long texts in windows of 16 (14 pieces), 5 apart
            source = load_export_source(run, max_seq_length=16 if kind == "tagger" else None)
            made[kind] = (model, *export_litert(source, out, kind), source)
    return made


def test_layout_card_and_ops(exports):
    """NAME/VERSION/model.tflite beside the SavedModel's card path; the card says what
    the file holds; the file's custom ops are tensorflow-text's LiteRT ones only (no
    Flex op), read from the flatbuffer itself."""
    for key, (_, path, card, _) in exports.items():
        assert sorted(os.listdir(path)) == ["assets.extra", "model.tflite"], key
        with open(os.path.join(path, "assets.extra", "keras_bert.json")) as f:
            assert json.load(f) == card
        assert card["format"] == "litert" and card["litert"]["flex_ops"] is False
        _, custom = _flatbuffer_ops(os.path.join(path, "model.tflite"))
        assert custom <= set(LITERT_TEXT_OPS), (key, custom)
        assert not any(op.startswith("Flex") for op in custom)
        assert sorted(custom) == card["litert"]["custom_ops"]
        text = key != "span_labeler_int8"  # exported with --noserve_text
        assert sorted(card["signatures"]) == (["serve_text", "serving_default"] if text
                                               else ["serving_default"])
        assert card["litert"]["serve_text"] is text
    assert exports["span_labeler"][2]["quantize"] == "none"
    assert exports["span_labeler_int8"][2]["quantize"] == "dynamic_int8"
    assert exports["span_labeler_int8"][1].endswith(os.path.join("span_labeler", "2"))


@pytest.mark.parametrize("key", ["classifier", "tagger", "span_labeler",
                                 "multiple_choice"])
def test_serving_default_equals_keras(exports, key):
    model, path, card, _ = exports[key]
    kind = card["kind"]
    ids = random_ids()
    if kind == "multiple_choice":
        ids = {k: np.stack([v, v[::-1], v, v[[1, 2, 0]]], axis=1) for k, v in ids.items()}
        logits = model.predict_on_batch(ids)
        expected = {"logits": logits, "probabilities": tf.nn.softmax(logits).numpy()}
    else:
        expected = keras_outputs(kind, model, ids)
    got = LiteRTModel(path).serving_default(**ids)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, atol=1e-5, rtol=0, err_msg=name)
    if kind == "tagger":
        tags = np.array(NER_LABELS)[np.argmax(expected["logits"], axis=-1)]
        assert got["labels"].astype(str).tolist() == np.where(
            ids["input_mask"] > 0, tags, "").tolist()


def test_classifier_serve_text_equals_keras_on_package_ids(exports):
    """Raw text (pairs, every odd case of TEXT_BYTES) through serve_text: the logits of
    the Keras model on BertTokenizer's packed ids, within 1e-4, and its labels."""
    model, path, _, _ = exports["classifier"]
    ids = _reference_ids([TEXT_BYTES, PAIRS], lower_case=False)
    expected = keras_outputs("classifier", model, ids)
    got = LiteRTModel(path).serve_text(text=TEXT_BYTES, text_pair=PAIRS)
    np.testing.assert_allclose(got["logits"], expected["logits"], atol=1e-4, rtol=0)
    assert got["label"].astype(str).tolist() == np.array(["0", "1"])[
        np.argmax(expected["logits"], axis=-1)].tolist()


def test_tagger_serve_text_equals_the_saved_models(exports):
    """Words, offsets and labels (long texts read in overlapping windows) equal the
    SavedModel serve_text's (`ServingModule`, checked against `keras-bert predict`)."""
    _, path, _, source = exports["tagger"]
    expected = ServingModule(source).serve_text({"text": tf.constant(TEXT_BYTES)})
    got = LiteRTModel(path).serve_text(text=TEXT_BYTES)
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value.numpy(), err_msg=name)
    assert got["num_words"].tolist() == [
        len(t.decode("utf-8", "replace").split()) for t in TEXT_BYTES]
    empty = LiteRTModel(path).serve_text(text=["", " \t"])
    assert empty["words"].shape == (2, 0) and empty["num_words"].tolist() == [0, 0]


def test_multiple_choice_serve_text_equals_keras(exports):
    """Each choice packed as `[CLS] text [SEP] text_pair + " " + ending [SEP]` by the
    package's tokenizer and packer, scored by the Keras model; absent ("" or
    whitespace) endings get no probability and are never the label."""
    model, path, _, _ = exports["multiple_choice"]
    endings = CHOICES["endings"]
    batch, count = endings.shape
    contexts = [t for t in CHOICES["text"] for _ in range(count)]
    seconds = [p + b" " + e for p, row in zip(CHOICES["text_pair"], endings) for e in row]
    ids = _reference_ids([contexts, seconds], lower_case=False)
    logits = model.predict_on_batch({k: v.reshape(batch, count, -1) for k, v in ids.items()})
    present = np.array([[bool(e.strip()) for e in row] for row in endings])
    got = LiteRTModel(path).serve_text(**CHOICES)
    np.testing.assert_allclose(got["logits"], logits, atol=1e-5)
    masked = np.where(present, logits, -np.inf)
    with np.errstate(invalid="ignore"):  # a row of no ending: all -inf, probabilities 0
        probabilities = np.where(present, np.exp(masked - masked.max(1, keepdims=True)), 0)
        probabilities = np.nan_to_num(probabilities / probabilities.sum(1, keepdims=True))
    np.testing.assert_allclose(got["probabilities"], probabilities, atol=1e-6)
    labels = np.where(present.any(1), masked.argmax(1), -1)
    assert got["label"].tolist() == labels.tolist() and labels[-1] == -1


def _squad_cases(tokenizer, seed=0):
    """Questions and passages as bytes: random vocabulary words from none to many
    windows, TEXT_BYTES' odd text (non-Latin, control characters, invalid UTF-8, words
    over the length limit, blank), and empty or blank questions beside real ones."""
    rng = random.Random(seed)
    words = [t for t in tokenizer.vocabulary if t.isalpha() and not t.startswith("[")]
    questions, passages = [], []
    for n in (0, 1, 3, 12, 30, 70):
        for _ in range(3):
            passages.append(" ".join(rng.choice(words) for _ in range(n)).encode())
            questions.append(" ".join(rng.choice(words)
                                      for _ in range(rng.randint(0, 9))).encode())
    for i, text in enumerate(TEXT_BYTES):
        questions.append(TEXT_BYTES[(i + 5) % len(TEXT_BYTES)][:60])
        passages.append(text + b" " + " ".join(rng.choice(words) for _ in range(8)).encode())
    questions += [b"", b" \xe3\x80\x80 ", b"tower", b"who \xff"]
    passages += [passages[4], passages[5], b"\t \xc2\xa0", "\u00e9".encode() * 250 + b" end"]
    return questions, passages


def _assert_same_answers(got, expected, passages):
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        value = value.numpy()
        if value.dtype.kind == "f":
            np.testing.assert_allclose(got[name], value, atol=1e-5, rtol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=name)
    for b, answer in enumerate(got["answer"]):  # the offsets cut the answer out
        start, end = got["answer_start"][b], got["answer_end"][b]
        text = passages[b].decode("utf-8", "replace")
        assert answer.decode("utf-8") == (text[start:end] if got["has_answer"][b] else "")


def test_squad_serve_text_equals_the_saved_models(exports):
    """Answers over passages of any length (many windows 5 pieces apart), odd and
    invalid text, empty and blank questions: every output equals the SavedModel
    serve_text's (`ServingModule`, checked against `keras-bert predict`)."""
    _, path, _, source = exports["span_labeler"]
    questions, passages = _squad_cases(source.tokenizer)
    inputs = {"text": tf.constant(questions), "text_pair": tf.constant(passages)}
    expected = ServingModule(source).serve_text(inputs)
    got = LiteRTModel(path).serve_text(text=questions, text_pair=passages)
    _assert_same_answers(got, expected, passages)
    assert 10 <= got["has_answer"].sum() < len(questions)


class _TableModel(keras.Model):
    """Start and end logits looked up per token id."""

    def __init__(self, encoder, start, end):
        super().__init__(name="table_model")
        self.encoder = encoder
        self._start = tf.constant(start, tf.float32)
        self._end = tf.constant(end, tf.float32)

    def call(self, inputs, training=False):
        ids = inputs["input_word_ids"]
        return {"start_logits": tf.gather(self._start, ids),
                "end_logits": tf.gather(self._end, ids)}


def test_squad_v2_and_scores_that_tie_in_float32(exports, tmp_path):
    """SQuAD v2.0 (null score threshold 0.5), and two spans whose float32 sums tie
    (1 + 1e-8 and 1 + 3e-8 both round to 1.0): the SavedModel adds them in float64 and
    answers the later, larger one; so does LiteRT, which has no float64."""
    _, _, _, source = exports["span_labeler"]
    tok = source.tokenizer
    rng = np.random.default_rng(3)
    start = rng.uniform(-3, 1.5, tok.vocab_size).astype(np.float32)
    end = rng.uniform(-3, 1.5, tok.vocab_size).astype(np.float32)
    words = [t for t in tok.vocabulary if t.isalpha() and t.islower() and len(t) > 3]
    a, b1, c, b2, *filler = words[:40]
    start[:] = np.minimum(start, 0.0)
    end[:] = np.minimum(end, 0.0)
    start[tok.token_to_id(a)] = start[tok.token_to_id(c)] = 1.0
    end[tok.token_to_id(b1)], end[tok.token_to_id(b2)] = 1e-8, 3e-8
    tie = " ".join([a, b1, *filler[:30], c, b2]).encode()
    encoder = exports["span_labeler"][0].encoder
    tied = dataclasses.replace(source, model=_TableModel(encoder, start, end),
                               serving=dataclasses.replace(source.serving,
                                                           null_score_diff_threshold=0.5))
    path, _ = export_litert(tied, tmp_path, "tie")
    questions, passages = _squad_cases(tok, seed=1)
    questions, passages = [b"which", *questions], [tie, *passages]
    expected = ServingModule(tied).serve_text({"text": tf.constant(questions),
                                               "text_pair": tf.constant(passages)})
    got = LiteRTModel(path).serve_text(text=questions, text_pair=passages)
    _assert_same_answers(got, expected, passages)
    assert got["answer"][0].decode() == f"{c} {b2}" and got["score"][0] == np.float32(1.0)
    text = [q.decode("utf-8", "replace").strip() and p.decode("utf-8", "replace").strip()
            for q, p in zip(questions, passages)]
    by_null = [i for i in range(len(questions)) if text[i] and not got["has_answer"][i]]
    assert by_null and got["has_answer"].sum() >= 5


def test_int8_is_smaller_quantizes_the_embeddings_and_stays_close(exports):
    model, float_path, _, _ = exports["span_labeler"]
    int8_path = exports["span_labeler_int8"][1]
    sizes = [os.path.getsize(os.path.join(p, "model.tflite")) for p in (float_path, int8_path)]
    weights = 4 * sum(int(np.prod(w.shape)) for w in model.weights)
    assert sizes[0] - sizes[1] > 0.7 * weights  # int8 weights: 3 bytes of 4 saved
    flat, _ = _flatbuffer_ops(os.path.join(int8_path, "model.tflite"))
    vocab, hidden = model.encoder.config.vocab_size, model.encoder.config.hidden_size
    int8 = 9  # TensorType.INT8
    shapes = {tuple(t.shape) for g in flat.subgraphs for t in g.tensors if t.type == int8}
    assert (vocab, hidden) in shapes  # the word embedding table itself is int8
    ids = random_ids()
    expected = keras_outputs("span_labeler", model, ids)
    got = LiteRTModel(int8_path).serving_default(**ids)
    for name, value in expected.items():
        assert np.abs(got[name] - value).max() < 0.05 * np.abs(value).max(), name


# --- a process without keras_bert --------------------------------------------------------

RUNNER = BLOCK_KERAS_BERT + r'''
# --- the README runner: tensorflow + tensorflow-text (or ai-edge-litert), no keras_bert
import numpy as np
import tensorflow_text
try:
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
except ImportError:
    from tensorflow.lite.python.interpreter import InterpreterWithCustomOps

def load(version_dir):
    card = json.load(open(os.path.join(version_dir, "assets.extra", "keras_bert.json")))
    interpreter = InterpreterWithCustomOps(
        model_path=os.path.join(version_dir, "model.tflite"),
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)
    return interpreter, card
# ---

jobs = json.load(open(sys.argv[1]))
results = {}
for key, (path, signature, inputs) in jobs.items():
    interpreter, card = load(path)
    run = interpreter.get_signature_runner(signature)
    out = run(**{k: np.array([t.encode() for t in v], dtype=object) if signature ==
                 "serve_text" else np.array(v, np.int32) for k, v in inputs.items()})
    results[key] = {k: [x.decode() for x in v] if v.dtype == object else v.tolist()
                    for k, v in out.items()}
    results[key]["label_names"] = card["label_names"]
print(json.dumps({"blocked": blocked, "results": results}))
'''


def test_readme_runner_classifies_in_a_process_without_keras_bert(exports, tmp_path):
    """The README runner (tensorflow + tensorflow-text + ai-edge-litert) classifies raw
    sentences with the label names of the card, answers questions and runs the int8
    model's ids, where keras_bert cannot be imported; the same outputs as in this
    process."""
    sentences = {"text": ["A gripping, beautiful film.", "Ça ne marche pas du tout…"],
                 "text_pair": ["It is.", "Σ"]}
    ids = {k: v.tolist() for k, v in random_ids().items()}
    questions = {"text": ["Where is the tower?", "Qui?"],
                 "text_pair": ["The tower stands in Paris, über dem Fluss.", "Σ x y"]}
    jobs = {"classify": (exports["classifier"][1], "serve_text", sentences),
            "int8_ids": (exports["span_labeler_int8"][1], "serving_default", ids),
            "answer": (exports["span_labeler"][1], "serve_text", questions)}
    expected = {"classify": LiteRTModel(jobs["classify"][0]).serve_text(**sentences),
                "int8_ids": LiteRTModel(jobs["int8_ids"][0]).serving_default(**ids),
                "answer": LiteRTModel(jobs["answer"][0]).serve_text(**questions)}
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    (tmp_path / "runner.py").write_text(RUNNER)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-I", str(tmp_path / "runner.py"),
                           str(tmp_path / "jobs.json"), "", REPO], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["blocked"] is True
    got = report["results"]
    assert got["classify"]["label_names"] == ["0", "1"]
    assert got["classify"]["label"] == expected["classify"]["label"].astype(str).tolist()
    assert got["answer"]["answer"] == [a.decode() for a in expected["answer"]["answer"]]
    for key in jobs:
        for name, value in expected[key].items():
            if value.dtype != object:
                np.testing.assert_allclose(got[key][name], value, atol=1e-6, err_msg=name)


# --- mistakes ----------------------------------------------------------------------------


@pytest.mark.parametrize("flags, message", [
    (["--quantize", "dynamic_int8"], "--quantize dynamic_int8 is not for --format "
                                     "saved_model: it takes int8, int4, float8"),
    (["--format", "litert", "--precision", "mixed_bfloat16"], "--precision is for --format "
                                                              "saved_model"),
    (["--format", "litert", "--xla"], "--xla is for --format saved_model"),
    (["--format", "litert", "--warmup"], "--warmup is for --format saved_model"),
    (["--format", "litert", "--serving_compatible"], "--serving_compatible is for"),
])
def test_cli_flag_mistakes_exit_2_and_write_nothing(exports, tmp_path, capsys, flags, message):
    run = os.path.dirname(exports["classifier"][2]["source_checkpoint"] + "/")
    code = main(["export", "--checkpoint", run, "--output_dir", str(tmp_path / "out"),
                 "--name", "x", *flags])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1
    assert not os.path.exists(tmp_path / "out" / "x")


def test_cli_rejects_an_unknown_quantization(exports, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--checkpoint", exports["classifier"][2]["source_checkpoint"],
              "--format", "litert", "--quantize", "int2", "--output_dir", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "invalid choice: 'int2'" in capsys.readouterr().err


def test_cli_refuses_keras_quantization_for_litert(exports, tmp_path, capsys):
    # int4 is the model's Keras quantization, for a SavedModel; LiteRT quantizes itself.
    assert main(["export", "--checkpoint", exports["classifier"][2]["source_checkpoint"],
                 "--format", "litert", "--quantize", "int4", "--output_dir",
                 str(tmp_path)]) == 2
    assert ("--quantize int4 is not for --format litert: it takes dynamic_int8, float16"
            in capsys.readouterr().err)


@pytest.mark.parametrize("signature, inputs, field", [
    ("serve_text", {"text": [[b"a"]]}, "text"),
    ("serve_text", {"text": []}, "text"),
    ("serve_text", {"text": [b"a", b"b"], "text_pair": [b"a"]}, "text_pair"),
    ("serve_text", {"text": [1]}, "text"),
    ("serve_text", {"text": [b"a"], "text_pair": [b"b"], "extra": [b"c"]}, "inputs"),
    ("serving_default", {"input_word_ids": [[2, 99999, 3]], "input_mask": [[1, 1, 1]],
                         "input_type_ids": [[0, 0, 0]]}, "input_word_ids"),
    ("serving_default", {"input_word_ids": [[2, 5, 3]], "input_mask": [[1, 2, 1]],
                         "input_type_ids": [[0, 0, 0]]}, "input_mask"),
    ("serving_default", {"input_word_ids": [[2, 5, 3]], "input_mask": [[0, 0, 0]],
                         "input_type_ids": [[0, 0, 0]]}, "input_mask"),
    ("serving_default", {"input_word_ids": [[2, 5, 3]], "input_mask": [[1, 1]],
                         "input_type_ids": [[0, 0, 0]]}, "input_mask"),
    ("serving_default", {"input_word_ids": [[2] * 65], "input_mask": [[1] * 65],
                         "input_type_ids": [[0] * 65]}, "input_word_ids"),
    ("serving_default", {"input_word_ids": [2, 5], "input_mask": [1, 1],
                         "input_type_ids": [0, 0]}, "input_word_ids"),
    ("serve_ids", {}, "signature"),
])
def test_litert_model_checks_inputs_naming_the_field(exports, signature, inputs, field):
    model = LiteRTModel(exports["classifier"][1])
    if "text" in inputs and "text_pair" not in inputs and field != "inputs":
        inputs = {**inputs, "text_pair": inputs["text"]}
    with pytest.raises(ArgumentError) as error:
        model.run(signature, **inputs)
    assert error.value.field == field, str(error.value)


def test_out_of_range_ids_fail_the_call_without_keras_bert_checks(exports):
    """What the card says of a runner that skips the checks: LiteRT's gather refuses
    an id outside the vocabulary (the call fails; no output)."""
    interpreter = load_interpreter(os.path.join(exports["classifier"][1],
                                                "model.tflite"))
    runner = interpreter.get_signature_runner("serving_default")
    ok = {"input_word_ids": np.array([[2, 5, 3]], np.int32),
          "input_mask": np.ones((1, 3), np.int32), "input_type_ids": np.zeros((1, 3), np.int32)}
    assert runner(**ok)["logits"].shape == (1, 2)
    with pytest.raises(RuntimeError, match="gather index out of bounds"):
        runner(**{**ok, "input_word_ids": np.array([[2, 10 ** 6, 3]], np.int32)})


def test_a_failed_conversion_leaves_no_version_behind(exports, tmp_path, monkeypatch):
    """The export refuses a model with an op LiteRT cannot run (here: the audit is made
    to see one) and leaves no directory, temporary or not."""
    source = exports["tagger"][3]
    monkeypatch.setattr(litert, "custom_ops_of", lambda model: ["FlexStringJoin"])
    with pytest.raises(KerasBertError, match="FlexStringJoin"):
        export_litert(source, tmp_path, "tagger", text=False)
    assert os.listdir(tmp_path) == []


def test_bad_quantize_and_name_are_argument_errors(exports, tmp_path):
    source = exports["tagger"][3]
    with pytest.raises(ArgumentError, match="quantize"):
        export_litert(source, tmp_path, "x", quantize="int8")
    with pytest.raises(ArgumentError, match="name"):
        export_litert(source, tmp_path, "12")
    bfloat16 = load_export_source(source.source, precision="mixed_bfloat16")
    with pytest.raises(ArgumentError, match="float32") as error:
        export_litert(bfloat16, tmp_path, "x")
    assert error.value.field == "precision" and os.listdir(tmp_path) == []


# --- slow: the other quantization, regression, the real MiniLM ---------------------------


@pytest.mark.slow
def test_float16_and_regression_exports(tmp_path):
    import keras

    keras.utils.set_random_seed(3)
    run = tmp_path / "run_stsb"
    model = finetuned_run(VOCAB, SEQ, run, "stsb", BertEncoder(tiny_config(rich_tokenizer(False).vocab_size)),
                           {"task": "stsb", "labels": None})
    source = load_export_source(run)
    ids = _reference_ids([TEXT_BYTES, PAIRS], lower_case=False)
    expected = keras_outputs("regression", model, ids)["score"]
    for quantize, tolerance in (("none", 1e-4), ("float16", 2e-2)):
        path, card = export_litert(source, tmp_path / "out", "stsb", quantize=quantize)
        got = LiteRTModel(path).serve_text(text=TEXT_BYTES, text_pair=PAIRS)["score"]
        np.testing.assert_allclose(got, expected, atol=tolerance, rtol=0, err_msg=quantize)
        assert card["quantize"] == quantize


@pytest.mark.slow
def test_minilm_int8_is_at_most_035_of_the_float_variables(tmp_path):
    """The issue's size bound on the real MiniLM-L6-H384 (22.7M parameters): the int8
    .tflite against the float SavedModel's variables; the int8 pooled output stays
    close to the SavedModel's on raw text."""
    from keras_bert.export import export_saved_model

    source = load_export_source(minilm_path(), max_seq_length=128)
    saved, _ = export_saved_model(source, tmp_path, "sm", warmup=False)
    variables = sum(os.path.getsize(os.path.join(saved, "variables", f))
                    for f in os.listdir(os.path.join(saved, "variables")))
    path, _ = export_litert(source, tmp_path, "lite", quantize="dynamic_int8")
    ratio = os.path.getsize(os.path.join(path, "model.tflite")) / variables
    assert ratio <= 0.35, ratio
    texts = [b"A man is playing a guitar.", "Café naïve — ΣΑΣ 北京".encode(), b""]
    expected = tf.saved_model.load(saved).signatures["serve_text"](text=tf.constant(texts))
    got = LiteRTModel(path).serve_text(text=texts)
    a, b = got["pooled_output"], expected["pooled_output"].numpy()
    cosine = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    assert cosine.min() > 0.99, cosine


@pytest.mark.slow
def test_encoder_serve_text_equals_keras_uncased(tmp_path):
    import keras

    keras.utils.set_random_seed(5)
    encoder = BertEncoder(tiny_config(rich_tokenizer(False).vocab_size))
    checkpoint = tmp_path / "tiny_uncased"
    save_encoder(encoder, checkpoint)
    shutil.copyfile(VOCAB, checkpoint / "vocab.txt")
    path, _ = export_litert(load_export_source(checkpoint, lower_case=True), tmp_path, "enc")
    ids = _reference_ids([TEXT_BYTES], lower_case=True, seq=64)  # the model's positions
    expected = keras_outputs("encoder", encoder, ids)
    model = LiteRTModel(path)
    got = model.serve_text(text=TEXT_BYTES)
    np.testing.assert_array_equal(got["input_mask"], ids["input_mask"])
    real = ids["input_mask"][:, :, None] > 0
    np.testing.assert_allclose(got["pooled_output"], expected["pooled_output"], atol=1e-4)
    np.testing.assert_allclose(np.where(real, got["sequence_output"], 0),
                               np.where(real, expected["sequence_output"], 0), atol=1e-4)
    ids = random_ids()
    for name, value in keras_outputs("encoder", encoder, ids).items():
        np.testing.assert_allclose(model.serving_default(**ids)[name], value, atol=1e-5)
