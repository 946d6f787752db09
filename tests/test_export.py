"""`keras-bert export` and keras_bert.export: SavedModels for TF Serving and TF Hub.

The references are independent of the export code: the Keras models' own outputs on
ids made by the package's tokenizer and packer (what fine-tuning feeds), and Google's
FullTokenizer ids in tests/data/tokenization. The SavedModels are checked in a fresh
process where keras_bert cannot be imported, through `saved_model_cli`, through their
warmup file, under concurrent load and through `hub.KerasLayer`. Models are tiny
(2 layers, H=32) with random weights: these test the plumbing and numerics, not
accuracy.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
import tensorflow as tf
from conftest import REPO

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import save_encoder
from keras_bert.cli import main
from keras_bert.preprocessing import pack_inputs
from keras_bert.tasks.finetuning import CONFIG_FILE, MODEL_FILE, FinetuneOptions
from keras_bert.tasks.registry import get_task
from keras_bert.tokenization import BertTokenizer, VocabularyWarning

VOCAB = os.path.join(REPO, "tests", "data", "tokenization", "vocab_rich.txt")
SEQ = 24
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]

TEXTS = [
    "Hello, World! This is BERT.",
    "Café naïve résumé — ÅNGSTRÖM Straße",
    "北京欢迎你。東京タワー",
    "don't stop-believing... (really?!)",
    "",
    "   \t\n ",
    "zero\u200bwidth\u00adsoft nul\x00 ctrl\x07",
    "emoji 😀 and ΣΊΣΥΦΟΣ",
    " ".join(["long"] * 300) + " tail words",
    "MiXeD CaSe WoRdS 12345",
]
TEXT_BYTES = [t.encode("utf-8") for t in TEXTS] + [b"bad \xff\xfe utf8 \xc3(", b"\xe2\x82"]
PAIRS = [TEXT_BYTES[(i + 3) % len(TEXT_BYTES)] for i in range(len(TEXT_BYTES))]
QUESTIONS = [b"Who wrote it?", b"Where is the tower?", b"", b"What " * 40]
PASSAGES = [b"It was written by Jane Austen in 1813.",
            "Die Türme stehen in 東京 and Paris, über dem Fluss.".encode(),
            b"Short passage.", b""]

# A fresh process where keras_bert cannot be imported: it loads each SavedModel with
# tensorflow and tensorflow_text only and runs the requested signatures.
CLEAN_PROCESS = r'''
import importlib.abc, json, sys

class _NoKerasBert(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "keras_bert" or name.startswith("keras_bert."):
            raise ImportError("keras_bert is not available in this process")

sys.meta_path.insert(0, _NoKerasBert())
repo = sys.argv[3]
sys.path = [p for p in sys.path if p and not p.startswith(repo)]
try:
    import keras_bert  # noqa: F401
    blocked = False
except ImportError:
    blocked = True

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

jobs = json.load(open(sys.argv[1]))
inputs = np.load(sys.argv[1] + ".npz", allow_pickle=True)
results = {}
loaded = {}
for key, (path, signature, names) in jobs.items():
    if path not in loaded:
        loaded[path] = tf.saved_model.load(path)
    obj = loaded[path]
    args = {n: tf.constant(inputs[key + "|" + n]) for n in names}
    if signature == "tokenize":
        ids = obj.tokenize(args["text"])
        results[key + "|values"] = ids.flat_values.numpy()
        results[key + "|splits"] = ids.row_splits.numpy()
        continue
    for name, value in obj.signatures[signature](**args).items():
        results[key + "|" + name] = value.numpy()
np.savez(sys.argv[2], **results)
print(json.dumps({"blocked": blocked,
                  "keras_bert_modules": sorted(m for m in sys.modules
                                               if m.startswith("keras_bert"))}))
'''


def _config(vocab_size):
    return BertConfig.from_preset("tiny", vocab_size=vocab_size, max_position_embeddings=64,
                                  hidden_size=32, num_heads=4, intermediate_size=64)


def _tokenizer(lower_case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        return BertTokenizer(VOCAB, lower_case=lower_case)


def _finetuned_run(directory, task_name, encoder, task_config, **options):
    """A run directory as `keras-bert finetune` writes it (its own file names and
    record), with a random-weight head: building it here keeps the test fast."""
    task = get_task(task_name)
    task.restore(task_config)
    model = task.build_model(encoder)
    os.makedirs(directory)
    model.save(os.path.join(directory, MODEL_FILE))
    shutil.copyfile(VOCAB, os.path.join(directory, "vocab.txt"))
    record = {"task": task_name, "task_config": task_config,
              "options": dataclasses.asdict(FinetuneOptions(max_seq_length=SEQ, **options)),
              "learning_rate": 2e-5, "seed": 1, "checkpoint": None, "preset": "tiny",
              "lower_case": False, "history": []}
    with open(os.path.join(directory, CONFIG_FILE), "w") as f:
        json.dump(record, f)
    return model


def _export(capsys, checkpoint, output_dir, name, *extra):
    code = main(["export", "--checkpoint", str(checkpoint), "--output_dir", str(output_dir),
                 "--name", name, *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    card_text, _, last = out.rpartition("}\n")
    assert last.startswith("Exported ")
    path = last.split(" to ", 1)[1].strip()
    return path, json.loads(card_text + "}")


@pytest.fixture(scope="module")
def capsys_module():
    """Module-scoped stand-in for capsys (exports are shared by the tests)."""
    import io
    from contextlib import redirect_stdout

    class _Capture:
        def __init__(self):
            self.buffer = io.StringIO()

        def readouterr(self):
            value = self.buffer.getvalue()
            self.buffer.seek(0)
            self.buffer.truncate()
            return type("Captured", (), {"out": value})()

    capture = _Capture()
    with redirect_stdout(capture.buffer):
        yield capture


@pytest.fixture(scope="module")
def exports(tmp_path_factory, capsys_module):
    """One export of each kind, with the in-memory Keras models they came from."""
    import keras

    keras.utils.set_random_seed(7)
    root = tmp_path_factory.mktemp("export")
    out = root / "saved_models"
    size = _tokenizer(False).vocab_size
    made = {}

    encoder = BertEncoder(_config(size))
    checkpoint = root / "tiny_uncased"
    save_encoder(encoder, checkpoint)
    shutil.copyfile(VOCAB, checkpoint / "vocab.txt")
    made["encoder"] = (encoder, *_export(capsys_module, checkpoint, out, "encoder",
                                         "--max_seq_length", str(SEQ)))

    runs = {"classifier": ("mrpc", {"task": "mrpc", "labels": ["0", "1"]}, {}),
            "regression": ("stsb", {"task": "stsb", "labels": None}, {}),
            "span_labeler": ("squad1", {"task": "squad1"},
                             {"max_query_length": 8, "max_answer_length": 5}),
            "tagger": ("ner", {"task": "ner", "labels": NER_LABELS}, {})}
    for kind, (task, config, options) in runs.items():
        model = _finetuned_run(root / f"run_{task}", task, BertEncoder(_config(size)), config,
                               **options)
        made[kind] = (model, *_export(capsys_module, root / f"run_{task}", out, kind))
    return made


def _reference_ids(segments, lower_case, seq=SEQ, truncation="longest_first"):
    """Packed ids from the package's tokenizer and packer, cut to the longest input."""
    tok = _tokenizer(lower_case)
    packed = pack_inputs([tok.tokenize(tf.constant(s)) for s in segments], seq,
                         cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id,
                         truncation=truncation)
    longest = int(tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1)))
    return {k: v.numpy()[:, :longest] for k, v in packed.items()}


def _random_ids(batch=3, seq=11, vocab=6000, seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.array([seq - 3 * i for i in range(batch)])
    mask = (np.arange(seq)[None] < lengths[:, None]).astype(np.int32)
    ids = rng.integers(5, vocab, (batch, seq)).astype(np.int32) * mask
    types = ((np.arange(seq)[None] >= lengths[:, None] // 2) * mask).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def _keras_outputs(kind, model, inputs):
    out = model(inputs, training=False)
    if kind == "encoder":
        return {"pooled_output": out["pooled_output"],
                "sequence_output": out["sequence_output"],
                "encoder_outputs": np.stack([np.asarray(x) for x in out["encoder_outputs"]],
                                            axis=1)}
    if kind == "classifier":
        return {"logits": out, "probabilities": tf.nn.softmax(out)}
    if kind == "regression":
        return {"score": np.asarray(out)[:, 0]}
    if kind == "span_labeler":
        return dict(out)
    return {"logits": out}


def _text_inputs(kind):
    if kind == "span_labeler":
        return {"text": QUESTIONS, "text_pair": PASSAGES}
    if kind in ("classifier", "regression"):  # MRPC and STS-B are pair tasks
        return {"text": TEXT_BYTES, "text_pair": PAIRS}
    return {"text": TEXT_BYTES}


def _text_reference(kind, model, lower_case):
    inputs = _text_inputs(kind)
    if kind == "span_labeler":
        tok = _tokenizer(lower_case)
        questions = tok.tokenize(tf.constant(QUESTIONS))[:, :8]
        packed = pack_inputs([questions, tok.tokenize(tf.constant(PASSAGES))], SEQ,
                             cls_id=tok.cls_id, sep_id=tok.sep_id, pad_id=tok.pad_id,
                             truncation="waterfall")
        longest = int(tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1)))
        ids = {k: v.numpy()[:, :longest] for k, v in packed.items()}
    else:
        ids = _reference_ids([inputs[k] for k in sorted(inputs)], lower_case)
    return ids, {k: np.asarray(v) for k, v in _keras_outputs(kind, model, ids).items()}


# --- a process without keras_bert ---------------------------------------------------------


@pytest.fixture(scope="module")
def clean_results(exports, tmp_path_factory):
    """Runs every signature of every export (and the preprocessor's tokenize on Google's
    reference texts) in a fresh process that cannot import keras_bert."""
    from test_tokenization import INPUTS

    root = tmp_path_factory.mktemp("clean")
    jobs, arrays = {}, {}
    for kind, (_, path, _) in exports.items():
        ids = _random_ids()
        jobs[f"{kind}|ids"] = (path, "serving_default", sorted(ids))
        arrays.update({f"{kind}|ids|{k}": v for k, v in ids.items()})
        text = _text_inputs(kind)
        jobs[f"{kind}|text"] = (path, "serve_text", sorted(text))
        arrays.update({f"{kind}|text|{k}": np.array(v, dtype=object) for k, v in text.items()})
    jobs["pre|tokenize"] = (os.path.join(exports["encoder"][1], "preprocessor"), "tokenize",
                            ["text"])
    arrays["pre|tokenize|text"] = np.array(INPUTS, dtype=object)
    job_file = str(root / "jobs.json")
    with open(job_file, "w") as f:
        json.dump(jobs, f)
    np.savez(job_file + ".npz", **arrays)
    script = root / "clean_process.py"
    script.write_text(CLEAN_PROCESS)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-I", str(script), job_file, str(root / "out.npz"),
                           REPO], capture_output=True, text=True, cwd=root, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    with np.load(root / "out.npz", allow_pickle=True) as out:
        return report, dict(out)


def test_clean_process_cannot_import_keras_bert(clean_results):
    report, _ = clean_results
    assert report == {"blocked": True, "keras_bert_modules": []}


@pytest.mark.parametrize("kind", ["encoder", "classifier", "regression", "span_labeler",
                                  "tagger"])
def test_clean_process_ids_signature_equals_keras(exports, clean_results, kind):
    _, got = clean_results
    model = exports[kind][0]
    expected = _keras_outputs(kind, model, _random_ids())
    for name, value in expected.items():
        np.testing.assert_allclose(got[f"{kind}|ids|{name}"], value, atol=1e-5, rtol=0,
                                   err_msg=f"{kind} serving_default {name}")
    if kind == "classifier":
        labels = np.array(["0", "1"])[np.argmax(expected["logits"], axis=-1)]
        assert got["classifier|ids|label"].astype(str).tolist() == labels.tolist()
    if kind == "tagger":
        mask = _random_ids()["input_mask"]
        tags = np.array(NER_LABELS)[np.argmax(expected["logits"], axis=-1)]
        assert got["tagger|ids|labels"].astype(str).tolist() == np.where(mask > 0, tags,
                                                                         "").tolist()


@pytest.mark.parametrize("kind", ["encoder", "classifier", "regression", "span_labeler",
                                  "tagger"])
def test_clean_process_text_signature_equals_keras_on_package_ids(exports, clean_results,
                                                                  kind):
    _, got = clean_results
    model, _, card = exports[kind]
    ids, expected = _text_reference(kind, model, card["lower_case"])
    for name, value in expected.items():
        np.testing.assert_allclose(got[f"{kind}|text|{name}"], value, atol=1e-5, rtol=0,
                                   err_msg=f"{kind} serve_text {name}")
    if kind == "encoder":  # the ids themselves: the mask shows lengths and truncation
        np.testing.assert_array_equal(got["encoder|text|input_mask"], ids["input_mask"])
        assert ids["input_mask"].sum(axis=1).max() == SEQ  # the long text was cut
    if kind == "classifier":
        labels = np.array(["0", "1"])[np.argmax(expected["logits"], axis=-1)]
        assert got["classifier|text|label"].astype(str).tolist() == labels.tolist()


def test_clean_process_preprocessor_tokenize_equals_google(clean_results):
    """The exported in-graph tokenizer gives Google FullTokenizer's ids (uncased)."""
    from test_tokenization import INPUTS, _comparable, _ragged_ref

    _, got = clean_results
    values, splits = got["pre|tokenize|values"], got["pre|tokenize|splits"]
    ids = [values[a:b].tolist() for a, b in zip(splits[:-1], splits[1:])]
    expected = _ragged_ref("rich_uncased")
    wrong = [i for i in range(len(INPUTS)) if ids[i] != expected[i] and _comparable(i)]
    assert not wrong and len(ids) == len(INPUTS) and sum(map(len, ids)) > 50_000


def test_span_answer_is_the_best_span_of_the_passage(exports, clean_results):
    """`answer` from serve_text (SQuAD v1.1 model): the best-scoring span (start <= end,
    at most max_answer_length tokens, inside the passage) as passage text, "" when
    there is no passage; decoded here in Python from the Keras logits and the
    package's character offsets."""
    _, got = clean_results
    model, _, card = exports["span_labeler"]
    ids, expected = _text_reference("span_labeler", model, card["lower_case"])
    tok = _tokenizer(card["lower_case"])
    answers = []
    for b, passage in enumerate(PASSAGES):
        text = passage.decode("utf-8")
        _, starts, ends = tok.tokenize_with_offsets(tf.constant([text]))
        starts, ends = starts[0].numpy(), ends[0].numpy()
        mask, types = ids["input_mask"][b], ids["input_type_ids"][b]
        inside = [i for i in range(len(mask)) if mask[i] and types[i]][:-1]  # not [SEP]
        start, end = expected["start_logits"][b], expected["end_logits"][b]
        spans = [(start[i] + end[j], i, j) for i in inside for j in inside if 0 <= j - i < 5]
        if not spans:
            answers.append("")
            continue
        _, i, j = max(spans)
        first = inside[0]
        answers.append(text[starts[i - first]:ends[j - first]])
    assert got["span_labeler|text|answer"].astype(object).tolist() == [
        a.encode("utf-8") for a in answers]
    assert any(answers), "no answer at all: the check would be empty"
