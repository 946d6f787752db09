"""LiteRT `serve_text` on odd input never takes its process down (issue 32).

Every family (encoder, pair classifier, tagger, SQuAD, multiple choice) is exported
cased and uncased (tiny, random weights) and fed text with nothing left after cleaning
("", NUL, zero-width and blank characters, alone or beside real text), empty questions
and passages, all-blank endings and a batch of 0 strings. The .tflite files run in a
child process under ai_edge_litert's interpreter, TensorFlow's own (the README runner's;
also without its XNNPACK delegate) and `LiteRTModel`: a kernel that kills its process
(the uncased tokenizer's ScatterNd divided by the size of its empty output: SIGFPE)
fails the test naming the signal and the case it ran. Every answer equals the SavedModel
serve_text's (`ServingModule`) on the same input. Then one `LiteRTModel` shared by 8
threads gives exactly its serial results (a LiteRT interpreter alone corrupts memory).
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
from export_support import (
    VOCAB,
    exit_report,
    finetuned_run,
    rich_tokenizer,
    run_python,
    tiny_config,
)

from keras_bert import BertEncoder
from keras_bert.checkpoints import save_encoder
from keras_bert.export import export_litert
from keras_bert.export.signatures import ServingModule
from keras_bert.tasks.export_sources import load_export_source

# Each of these alone has no character left after BertTokenizer's cleaning.
BLANKS = ["", "\x00", "\u200b", " ", "\u3000", "\t\n\u00ad\ufeff\x07"]
REAL = ["Café naïve e\u0301\u0323 ΣΑΣ ΟΔΟΣ.", "北京 don't-stop!", "Where is the tower?"]
# The fine-tuned families: task, its config and options.
TASKS = {"classifier": ("mrpc", {"task": "mrpc", "labels": ["0", "1"]}, {}),
         "tagger": ("ner", {"task": "ner", "labels": ["O", "B-PER", "I-PER"]},
                    {"doc_stride": 5}),
         "span_labeler": ("squad1", {"task": "squad1"}, {"max_query_length": 8,
                                                         "doc_stride": 5}),
         "multiple_choice": ("swag", {"task": "swag"}, {})}
KINDS = ("encoder", *TASKS)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """(kind, lower_case) -> (version directory, ExportSource): every family, cased
    and uncased (the same weights, the other tokenizer), float32."""
    keras.utils.set_random_seed(7)
    root = tmp_path_factory.mktemp("litert_odd")
    size = rich_tokenizer(False).vocab_size
    checkpoint = root / "encoder"
    save_encoder(BertEncoder(tiny_config(size)), checkpoint)
    shutil.copyfile(VOCAB, checkpoint / "vocab.txt")
    sources = {"encoder": load_export_source(checkpoint, max_seq_length=24, lower_case=False)}
    for kind, (task, config, options) in TASKS.items():
        run = root / f"run_{task}"
        finetuned_run(VOCAB, 24, run, task, BertEncoder(tiny_config(size)), config, **options)
        sources[kind] = load_export_source(run, max_seq_length=16 if kind == "tagger" else None)
    made = {}
    for kind, source in sources.items():
        for lower_case in (False, True):
            cased = dataclasses.replace(source, tokenizer=rich_tokenizer(lower_case))
            path, _ = export_litert(cased, root / "models", f"{kind}_{int(lower_case)}")
            made[kind, lower_case] = (path, cased)
    return made


def _strings(values, rank=1):
    array = np.array([v.encode() for v in np.ravel(values)], dtype=object)
    return array.reshape(np.shape(values)) if array.size else np.zeros(
        np.shape(values) if np.ndim(values) == rank else [0] * rank, object)


def odd_cases(names):
    """case -> inputs (name -> array of UTF-8 bytes) for a signature taking `names`."""
    cases = {}
    for i, blank in enumerate(BLANKS):  # every input blank: no character in the batch
        cases[f"blank_{i}"] = {n: [[blank, blank]] if n == "endings" else [blank]
                               for n in names}
    mixed = BLANKS + REAL
    # blank beside real text, in every pairing (question/passage, context/ending)
    cases["mixed"] = {n: mixed[3 * k:] + mixed[:3 * k] for k, n in enumerate(names)
                      if n != "endings"}
    if "endings" in names:
        cases["mixed"]["endings"] = [[mixed[i], mixed[-1 - i]] for i in range(len(mixed))]
        cases["blank_endings"] = {"text": REAL, "text_pair": REAL,
                                  "endings": [BLANKS[:3], BLANKS[3:], BLANKS[1:4]]}
        cases["no_endings"] = {"text": ["a"], "text_pair": ["b"], "endings": np.zeros((1, 0))}
    cases["batch_0"] = {n: np.zeros((0, 2)) if n == "endings" else [] for n in names}
    return {case: {n: _strings(v, 2 if n == "endings" else 1) for n, v in inputs.items()}
            for case, inputs in cases.items()}


# Runs jobs {casing: [model path, [case names]]} under each runner; inputs in
# sys.argv[1] + ".npz" as "case|name"; outputs to sys.argv[2] as "runner|casing|case|name";
# prints each case before running it, then {"runners": [...], "errors": {key: message}}.
ODD_RUNNER = r'''
import json, sys
import numpy as np
import tensorflow_text
from ai_edge_litert import interpreter as litert
from tensorflow.lite.python import interpreter as tflite  # the README runner's
from keras_bert.export import LiteRTModel

def bare(module, **options):
    def load(path):
        return module.InterpreterWithCustomOps(
            model_path=path + "/model.tflite",
            custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
            **options).get_signature_runner("serve_text")
    return load

RUNNERS = {"ai_edge_litert": bare(litert), "tf.lite": bare(tflite),
           "tf.lite, no XNNPACK": bare(tflite, experimental_op_resolver_type=
                                       tflite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES),
           "LiteRTModel": lambda path: LiteRTModel(path).serve_text}
jobs = json.load(open(sys.argv[1]))
inputs = np.load(sys.argv[1] + ".npz", allow_pickle=True)
results, errors = {}, {}
for runner, load in RUNNERS.items():
    for casing, (path, cases) in jobs.items():
        run = load(path)
        for case, names in cases:
            key = f"{runner}|{casing}|{case}"
            print("running", key, flush=True)
            try:
                out = run(**{n: inputs[f"{case}|{n}"] for n in names})
            except Exception as e:
                errors[key] = f"{type(e).__name__}: {e}"
                continue
            results.update({f"{key}|{k}": v for k, v in out.items()})
np.savez(sys.argv[2], **results)
print(json.dumps({"runners": list(RUNNERS), "errors": errors}))
'''


def run_odd_cases(root, jobs, cases):
    """`ODD_RUNNER` in a child process: (its last line, its outputs); a crash (a kernel
    killing the process) fails here, naming the signal and the case."""
    arrays = {f"{case}|{n}": v for case, inputs in cases.items() for n, v in inputs.items()}
    np.savez(root / "jobs.json.npz", **arrays)
    (root / "jobs.json").write_text(json.dumps(jobs))
    proc = run_python(root, ODD_RUNNER, root / "jobs.json", root / "out.npz")
    assert proc.returncode == 0, exit_report(proc)
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    with np.load(root / "out.npz", allow_pickle=True) as out:
        return report, dict(out)


def assert_same(got, expected, what):
    """LiteRT outputs equal the SavedModel's: strings and ints exactly, floats within
    1e-4 (other kernels); sequence outputs at real positions; the tagger's padding
    word column (LiteRT returns no zero-size tensor) cut as `LiteRTModel` cuts it."""
    assert sorted(got) == sorted(expected), what
    if "num_words" in got:
        got = {k: v[:, :max(got["num_words"].max(), 0)] if v.ndim == 2 else v
               for k, v in got.items()}
    for name, value in expected.items():
        value = value.numpy()
        if name in ("sequence_output", "encoder_outputs"):
            mask = got["input_mask"] > 0
            mask = mask[:, :, None] if name == "sequence_output" else mask[:, None, :, None]
            got[name], value = np.where(mask, got[name], 0), np.where(mask, value, 0)
        if value.dtype.kind == "f":
            np.testing.assert_allclose(got[name], value, atol=1e-4, rtol=0,
                                       err_msg=f"{what}: {name}")
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=f"{what}: {name}")


@pytest.mark.parametrize("kind", KINDS)
def test_odd_text_never_kills_the_process_and_answers_as_the_saved_model(
        exports, tmp_path, kind):
    """Cased and uncased, under each runner: blank text (alone: no character in the
    whole batch; and beside real text), empty question and passage, all-blank endings
    answer what the SavedModel serve_text answers; a batch of 0 gives 0 rows from a
    bare interpreter and `ArgumentError` from `LiteRTModel` (as its checks say); a
    multiple-choice batch of no endings fails the call (LiteRT's FloorDiv refuses the
    division by 0; the SavedModel rejects it too), never the process."""
    names = exports[kind, False][1].text_inputs
    cases = odd_cases(names)
    jobs = {str(case): [path, [[c, list(names)] for c in cases]]
            for (k, case), (path, _) in exports.items() if k == kind}
    report, got = run_odd_cases(tmp_path, jobs, cases)
    runners, errors = report["runners"], report["errors"]
    for lower_case in (False, True):
        source = exports[kind, lower_case][1]
        module = ServingModule(source)
        for case, inputs in cases.items():
            if case in ("batch_0", "no_endings"):
                continue
            expected = module.serve_text({n: tf.constant(v) for n, v in inputs.items()})
            for runner in runners:
                key = f"{runner}|{lower_case}|{case}"
                assert key not in errors, errors.get(key)
                outputs = {k.rsplit("|", 1)[1]: v for k, v in got.items()
                           if k.startswith(key + "|")}
                assert_same(outputs, expected, key)
        for runner in runners:
            key = f"{runner}|{lower_case}|batch_0"
            if runner == "LiteRTModel":
                assert errors[key].startswith("ArgumentError"), errors.get(key)
            else:
                assert key not in errors, errors[key]
                rows = [v.shape[0] for k, v in got.items() if k.startswith(key + "|")]
                assert rows and set(rows) == {0}, (key, rows)
            if kind == "multiple_choice":
                key = f"{runner}|{lower_case}|no_endings"
                error = "ArgumentError" if runner == "LiteRTModel" else "RuntimeError"
                assert errors[key].startswith(error), errors.get(key)


THREADS = r'''
import sys, threading
import numpy as np
from keras_bert.export import LiteRTModel

inputs = np.load(sys.argv[1], allow_pickle=True)
calls = sorted({k.split("|")[0] for k in inputs}, key=int)
calls = [{n: inputs[f"{c}|{n}"] for n in ("text", "text_pair")} for c in calls]
model = LiteRTModel(sys.argv[2])
results = {f"serial|{i}|{k}": v for i, c in enumerate(calls)
           for k, v in model.serve_text(**c).items()}

def work(t):
    for j in range(len(calls)):
        i = (j + 3 * t) % len(calls)  # the threads call different shapes at once
        results.update({f"{t}|{i}|{k}": v for k, v in model.serve_text(**calls[i]).items()})

threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
np.savez(sys.argv[3], **results)
'''


def test_one_litert_model_shared_by_8_threads_gives_the_serial_results(exports, tmp_path):
    """8 threads share one `LiteRTModel` of the uncased SQuAD export, 20 calls each of
    batches of 1 to 4 questions over passages of 1 to 5 windows (blank ones among
    them), in a child process (without the model's lock, the interpreter frees memory
    twice or segfaults): every output equals the serial call's, exactly."""
    rng = np.random.default_rng(0)
    words = "the tower stands in paris over river and many people visit it".split()
    arrays = {}
    for i in range(20):
        batch = 1 + i % 4
        questions = [" ".join(rng.choice(words, 4)) for _ in range(batch)]
        passages = [" ".join(rng.choice(words, 5 + 7 * (i % 5))) for _ in range(batch)]
        if i % 6 == 0:
            questions[0], passages[-1] = BLANKS[i % len(BLANKS)], ""
        arrays[f"{i}|text"], arrays[f"{i}|text_pair"] = _strings(questions), _strings(passages)
    np.savez(tmp_path / "calls.npz", **arrays)
    proc = run_python(tmp_path, THREADS, tmp_path / "calls.npz",
                      exports["span_labeler", True][0], tmp_path / "out.npz")
    assert proc.returncode == 0, exit_report(proc)
    with np.load(tmp_path / "out.npz", allow_pickle=True) as out:
        out = dict(out)
    names = ("answer", "answer_start", "answer_end", "score", "has_answer")
    assert sum(out[f"serial|{i}|has_answer"].sum() for i in range(20)) > 0
    for t in range(8):
        for i in range(20):
            for name in names:
                np.testing.assert_array_equal(out[f"{t}|{i}|{name}"], out[f"serial|{i}|{name}"],
                                              err_msg=f"thread {t}, call {i}: {name}")
