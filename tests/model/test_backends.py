"""The model stage on every Keras 3 backend (issue 34): under JAX and PyTorch, without
TensorFlow.

Each check runs in a fresh process with KERAS_BACKEND set and TensorFlow and
tensorflow_text made unimportable (a `sys.meta_path` finder whose loader raises
ImportError, installed before keras_bert is imported; it records every attempt to load
them). There keras_bert loads the MiniLM checkpoint (Hugging Face layout) and must give
Hugging Face's own outputs (tests/fixtures/minilm_hf_reference.npz, written by
transformers, an independent reference); a keras_bert checkpoint round-trips; a Google
TF1 checkpoint raises a `CheckpointError` saying it needs TensorFlow; every task model
runs forward and one training step under JAX; `.keras` files move between TensorFlow
and JAX with the same outputs; and `benchmarks/accelerator.py --smoke` runs.
"""

import importlib.util
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from conftest import MINILM_REFERENCE, REPO, minilm_path

# The start of every child script: TensorFlow and tensorflow_text cannot be loaded.
# `find_spec` answers with a spec whose loader raises, so probes such as PyTorch's
# `importlib.util.find_spec("tensorflow")` (which only asks where it is) still work;
# LOADS lists each attempt to import them, with the file that tried.
BLOCK_TENSORFLOW = r'''
import importlib.abc, importlib.machinery, json, os, sys

LOADS = []

class _NoTensorFlow(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tensorflow_text"):
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec):
        frame = sys._getframe(1)
        while frame is not None and (frame.f_code.co_filename.startswith("<")
                                     or "importlib" in frame.f_code.co_filename):
            frame = frame.f_back
        LOADS.append([spec.name, frame.f_code.co_filename if frame is not None else "?"])
        raise ImportError(f"{spec.name} is blocked in this test")

    def exec_module(self, module):
        raise ImportError(f"{module.__name__} is blocked in this test")

sys.meta_path.insert(0, _NoTensorFlow())

def report(**result):
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "tensorflow_text"))
    print(json.dumps({"loads": LOADS, "loaded": loaded, **result}))
'''

# MiniLM from its Hugging Face files; a keras_bert checkpoint saved and loaded back; a
# Google checkpoint's error. argv: backend-independent paths (checkpoint, reference, tmp).
MINILM = r'''
import keras
import numpy as np
import keras_bert.model  # noqa: F401
from keras_bert import load_encoder, save_encoder

checkpoint, reference, tmp = sys.argv[1:4]
encoder = load_encoder(checkpoint)
ref = np.load(reference)
diffs = {}
for kind in ("single", "pair"):
    batch = {k: ref[f"{kind}_{k}"] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    out = encoder(batch)
    real = batch["input_mask"].astype(bool)
    seq = keras.ops.convert_to_numpy(out["sequence_output"])[real]
    pooled = keras.ops.convert_to_numpy(out["pooled_output"])
    diffs[kind] = [float(np.abs(seq - ref[f"{kind}_sequence_output"][real]).max()),
                   float(np.abs(pooled - ref[f"{kind}_pooled_output"]).max())]
save_encoder(encoder, os.path.join(tmp, "native"))
again = load_encoder(os.path.join(tmp, "native"))
same = all(np.array_equal(a, b) for a, b in zip(encoder.get_weights(), again.get_weights()))
loads_before_google = list(LOADS)
google = os.path.join(tmp, "google")
os.makedirs(google)
open(os.path.join(google, "bert_config.json"), "w").write("{}")
open(os.path.join(google, "bert_model.ckpt.index"), "wb").write(b"")
try:
    load_encoder(google)
    google_error = None
except Exception as e:  # noqa: BLE001
    google_error = [type(e).__name__, str(e)]
LOADS[:] = loads_before_google
report(backend=keras.backend.backend(), diffs=diffs, native_round_trip=same,
       google_error=google_error)
'''


def run_without_tensorflow(backend, script, *args, timeout=300, others_may_try=False):
    """Runs BLOCK_TENSORFLOW + `script` under KERAS_BACKEND=`backend`; its last line of
    output as a dict, with its whole output under "stdout". No TensorFlow module may be
    loaded, and nothing may try to import one (with `others_may_try`: nothing of this
    repository; keras-hub, for one, tries and goes on without)."""
    env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": "",
           "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", BLOCK_TENSORFLOW + script, *map(str, args)],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["loaded"] == [], result
    if others_may_try:
        # REPO + os.sep: a virtualenv beside the checkout may share its name's prefix.
        mine = [load for load in result["loads"] if load[1].startswith(REPO + os.sep)]
        assert not mine, result
    else:
        assert result["loads"] == [], result
    return {**result, "stdout": proc.stdout}


def _needs(module):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install keras_bert[{module}])")


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_minilm_loads_without_tensorflow_and_matches_hugging_face(backend, tmp_path):
    _needs(backend)
    result = run_without_tensorflow(backend, MINILM, minilm_path(), MINILM_REFERENCE, tmp_path)
    assert result["backend"] == backend
    for kind, (seq, pooled) in result["diffs"].items():
        # JAX / torch against Hugging Face's stored outputs: up to 3.2e-6 on a 2-core
        # AVX512 EPYC (default ISA only; measured with `git show
        # 9273a48:benchmarks/runtime_spread.py`, rows in its results/ file of that
        # commit), and passed at this bound on AVX2 EPYCs and an AMX Xeon in earlier CI
        # runs. It is the parity the project claims, so it stays at 1e-5.
        assert seq < 1e-5 and pooled < 1e-5, (kind, seq, pooled)
    assert result["native_round_trip"]
    kind, message = result["google_error"]
    assert kind == "CheckpointError" and "needs TensorFlow" in message, result["google_error"]


# Every task model on a tiny config: forward, then one step of its default compile()
# (the loss must be finite and the weights must move). argv: nothing.
TASK_MODELS = r'''
import keras
import numpy as np
from keras_bert import (BertClassifier, BertConfig, BertEncoder, BertFeatureExtractor,
                        BertMultipleChoice, BertPretrainer, BertSpanLabeler,
                        BertTokenClassifier)

keras.utils.set_random_seed(1)
config = BertConfig.from_preset("tiny", vocab_size=64, max_position_embeddings=32,
                                hidden_size=32, num_heads=4, intermediate_size=64,
                                num_layers=1)
rng = np.random.default_rng(0)
batch, seq = 4, 12

def inputs(shape=(batch, seq)):
    return {"input_word_ids": rng.integers(5, 64, shape).astype("int32"),
            "input_mask": np.ones(shape, "int32"), "input_type_ids": np.zeros(shape, "int32")}

def labels(high, shape=(batch,)):
    return rng.integers(0, high, shape).astype("int32")

x_pre = {**inputs(), "masked_lm_positions": np.tile(np.arange(1, 4, dtype="int32"), (batch, 1))}
cases = {
    "pretrainer": (BertPretrainer, {}, x_pre,
                   {"masked_lm": labels(64, (batch, 3)), "next_sentence": labels(2)}),
    "classifier": (BertClassifier, {"num_classes": 3}, inputs(), labels(3)),
    "regression": (BertClassifier, {"num_classes": 1}, inputs(),
                   rng.normal(size=(batch, 1)).astype("float32")),
    "span_labeler": (BertSpanLabeler, {}, inputs(),
                     {"start_logits": labels(seq), "end_logits": labels(seq)}),
    "tagger": (BertTokenClassifier, {"num_classes": 5}, inputs(), labels(5, (batch, seq))),
    "multiple_choice": (BertMultipleChoice, {"num_choices": 3}, inputs((batch, 3, seq)),
                        labels(3)),
}
results = {}
for name, (cls, kwargs, x, y) in cases.items():
    model = cls(BertEncoder(config), **kwargs)
    out = model(x)
    before = [keras.ops.convert_to_numpy(w).copy() for w in model.trainable_weights]
    model.compile(optimizer=keras.optimizers.AdamW(1e-3))
    logs = model.train_on_batch(x, y, return_dict=True)
    moved = sum(not np.array_equal(a, keras.ops.convert_to_numpy(b))
                for a, b in zip(before, model.trainable_weights))
    shapes = {k: list(v.shape) for k, v in out.items()} if isinstance(out, dict) \
        else list(out.shape)
    results[name] = {"loss": float(logs["loss"]), "moved": moved,
                     "weights": len(before), "shapes": shapes}
features = BertFeatureExtractor(BertEncoder(config), layers=(-1,))(inputs())
results["feature_extractor"] = {"shapes": list(features.shape)}
report(results=results)
'''


@pytest.mark.slow  # CI time; tests/training/test_backend_training.py trains every family on JAX
def test_every_task_model_runs_and_trains_a_step_under_jax():
    _needs("jax")
    results = run_without_tensorflow("jax", TASK_MODELS, others_may_try=True)["results"]
    assert results["pretrainer"]["shapes"] == {"masked_lm": [4, 3, 64], "next_sentence": [4, 2]}
    assert results["multiple_choice"]["shapes"] == [4, 3]
    assert results["feature_extractor"]["shapes"] == [4, 12, 32]
    for name, result in results.items():
        if name != "feature_extractor":
            assert np.isfinite(result["loss"]), (name, result)
            # The pooler gets no gradient from the MLM and span heads; everything else moves.
            assert result["moved"] >= result["weights"] - 2, (name, result)


# .keras files across backends: loads the TensorFlow-saved files in argv[1] and checks
# their outputs; saves its own with their outputs for TensorFlow to check; and loads the
# .keras files of the old package layout (tests/fixtures/keras_files_c0e3879).
KERAS_FILES = r'''
import glob
import keras
import numpy as np
import keras_bert.tasks.task_models  # noqa: F401
from keras_bert import BertClassifier, BertConfig, BertEncoder, BertPretrainer

folder, old = sys.argv[1:3]

def outputs(model, x):
    out = model.predict_on_batch(x)
    out = out if isinstance(out, dict) else {"out": out}
    return {k: keras.ops.convert_to_numpy(v) for k, v in out.items()}

def worst(model, arrays, prefix):
    x = {k.split("|")[-1]: arrays[k] for k in arrays.files if k.startswith(prefix + "input|")}
    expected = {k.split("|")[-1]: arrays[k] for k in arrays.files
                if k.startswith(prefix) and "|input|" not in k}
    got = outputs(model, x)
    assert sorted(got) == sorted(expected), (sorted(got), sorted(expected))
    return max(float(np.abs(got[k] - v).max()) for k, v in expected.items())

diffs = {}
saved = np.load(os.path.join(folder, "tensorflow.npz"))
for path in sorted(glob.glob(os.path.join(folder, "tensorflow_*.keras"))):
    name = os.path.basename(path)[len("tensorflow_"):-len(".keras")]
    diffs[name] = worst(keras.saving.load_model(path), saved, name + "|")
arrays = np.load(os.path.join(old, "outputs.npz"))
for path in sorted(glob.glob(os.path.join(old, "*.keras"))):
    name = os.path.basename(path)[:-len(".keras")]
    diffs["old_" + name] = worst(keras.saving.load_model(path), arrays, name + "|")

keras.utils.set_random_seed(2)
config = BertConfig.from_preset("tiny", vocab_size=64, max_position_embeddings=32,
                                hidden_size=32, num_heads=4, intermediate_size=64)
rng = np.random.default_rng(1)
x = {"input_word_ids": rng.integers(5, 64, (3, 10)).astype("int32"),
     "input_mask": np.ones((3, 10), "int32"), "input_type_ids": np.zeros((3, 10), "int32")}
mine = {"classifier": (BertClassifier(BertEncoder(config), num_classes=3), x),
        "pretrainer": (BertPretrainer(BertEncoder(config)),
                       {**x, "masked_lm_positions": np.array([[1, 2]] * 3, "int32")})}
written = {}
for name, (model, inputs) in mine.items():
    model.save(os.path.join(folder, f"{keras.backend.backend()}_{name}.keras"))
    written.update({f"{name}|input|{k}": v for k, v in inputs.items()})
    written.update({f"{name}|{k}": v for k, v in outputs(model, inputs).items()})
np.savez(os.path.join(folder, keras.backend.backend() + ".npz"), **written)
report(diffs=diffs)
'''


def _save_tensorflow_models(folder):
    """A tiny classifier and pretrainer saved here on TensorFlow, with their inputs and
    outputs in tensorflow.npz (keys "name|input|k" and "name|output")."""
    from keras_bert import BertClassifier, BertConfig, BertEncoder, BertPretrainer

    config = BertConfig.from_preset("tiny", vocab_size=64, max_position_embeddings=32,
                                    hidden_size=32, num_heads=4, intermediate_size=64)
    rng = np.random.default_rng(3)
    x = {"input_word_ids": rng.integers(5, 64, (2, 9)).astype("int32"),
         "input_mask": np.array([[1] * 9, [1] * 6 + [0] * 3], "int32"),
         "input_type_ids": np.zeros((2, 9), "int32")}
    models = {"classifier": (BertClassifier(BertEncoder(config), num_classes=3), x),
              "pretrainer": (BertPretrainer(BertEncoder(config)),
                             {**x, "masked_lm_positions": np.array([[1, 3], [2, 0]], "int32")})}
    arrays = {}
    for name, (model, inputs) in models.items():
        model.save(os.path.join(folder, f"tensorflow_{name}.keras"))
        out = model.predict_on_batch(inputs)
        out = out if isinstance(out, dict) else {"out": out}
        arrays.update({f"{name}|input|{k}": v for k, v in inputs.items()})
        arrays.update({f"{name}|{k}": np.asarray(v) for k, v in out.items()})
    np.savez(os.path.join(folder, "tensorflow.npz"), **arrays)


@pytest.mark.slow  # 19 s; test_keras_face's jax case saves under JAX and reloads by default
def test_keras_files_move_between_tensorflow_and_jax(tmp_path):
    _needs("jax")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the test process saves on TensorFlow")
    import keras_bert.tasks.task_models  # noqa: F401  (registers the classes)

    _save_tensorflow_models(tmp_path)
    old = os.path.join(REPO, "tests", "fixtures", "keras_files_c0e3879")
    diffs = run_without_tensorflow("jax", KERAS_FILES, tmp_path, old, others_may_try=True)["diffs"]
    assert {"classifier", "pretrainer", "old_pretrainer", "old_classifier"} <= set(diffs)
    assert max(diffs.values()) < 1e-5, diffs
    # And back: JAX's files on TensorFlow.
    arrays = np.load(tmp_path / "jax.npz")
    for name in ("classifier", "pretrainer"):
        model = keras.saving.load_model(tmp_path / f"jax_{name}.keras")
        x = {k.split("|")[-1]: arrays[k] for k in arrays.files if k.startswith(f"{name}|input|")}
        out = model.predict_on_batch(x)
        out = out if isinstance(out, dict) else {"out": out}
        for key, value in out.items():
            np.testing.assert_allclose(np.asarray(value), arrays[f"{name}|{key}"], atol=1e-5,
                                       rtol=0, err_msg=f"{name} {key}")


def test_accelerator_benchmark_smoke_runs_on_jax_without_tensorflow():
    _needs("jax")
    script = ("import runpy; sys.argv = ['accelerator.py', '--smoke'];"
              f"runpy.run_path({os.path.join(REPO, 'benchmarks', 'accelerator.py')!r},"
              " run_name='__main__'); report()")
    out = run_without_tensorflow("jax", script, others_may_try=True)["stdout"]
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")][:-1]
    ours = [r for r in rows if r.get("impl") == "keras_bert"]
    assert len(ours) == 1 and ours[0]["seq_per_s"] > 0 and np.isfinite(ours[0]["final_loss"])
    assert ours[0]["device"] == "cpu" and ours[0]["mfu"] is None
    assert not [r for r in rows if "error" in r], rows
    assert [r["seq_per_s"] for r in rows if "anchor" in r] == [485.6, 96.5]


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax")
def test_commands_on_another_backend_stop_with_one_line(tmp_path):
    """The commands that serve, read and export through TensorFlow models (all but
    pretrain and finetune): under KERAS_BACKEND=jax they stop before any work, exit 2,
    with one line saying so."""
    env = {**os.environ, "KERAS_BACKEND": "jax", "TF_CPP_MIN_LOG_LEVEL": "2",
           "PYTHONPATH": REPO}
    proc = subprocess.run([sys.executable, "-m", "keras_bert", "encode", "--model",
                           minilm_path(), "a sentence"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "KERAS_BACKEND is 'jax'" in lines[0], proc.stderr[-2000:]
    assert "under jax, keras-bert runs finetune and pretrain" in lines[0]
    assert proc.stdout == ""
