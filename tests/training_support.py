"""Helpers shared by the training, distribution and fault-tolerance tests (no tests here).

`write_pretraining_records` writes small TFRecords in google-research/bert's schema
from a synthetic language that a tiny BERT learns in a few hundred steps: segment A is a
run of consecutive token ids, segment B continues the run (NSP label 0) or starts
elsewhere (label 1), so masked tokens follow from their neighbours and the NSP label
from the junction. The module also runs as a script, the training process the
multi-process tests start.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
FIRST_WORD = 5


def tiny_config_dict(vocab_size=64, **overrides):
    """A BertConfig dict small enough for CPU tests; no dropout, so distributed and
    single-device runs compute the same thing."""
    config = {"vocab_size": vocab_size, "hidden_size": 32, "num_layers": 2, "num_heads": 4,
              "intermediate_size": 64, "max_position_embeddings": 64,
              "hidden_dropout": 0.0, "attention_dropout": 0.0}
    config.update(overrides)
    return config


def write_vocab(path, vocab_size=64):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [f"w{i}" for i in range(vocab_size - len(tokens))]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return path


def synthetic_examples(num_examples, seq_length=16, max_predictions=4, vocab_size=64, seed=0):
    """Feature arrays of `num_examples` instances (see the module docstring)."""
    rng = np.random.default_rng(seed)
    words = vocab_size - FIRST_WORD
    out = {name: [] for name in ("input_ids", "input_mask", "segment_ids",
                                 "masked_lm_positions", "masked_lm_ids",
                                 "masked_lm_weights", "next_sentence_labels")}
    for _ in range(num_examples):
        length = int(rng.integers(seq_length // 2, seq_length + 1))
        len_a = int(rng.integers(2, length - 3))
        len_b = length - 3 - len_a
        start = int(rng.integers(words))
        is_random = int(rng.random() < 0.5)
        start_b = int(rng.integers(words)) if is_random else start + len_a
        a = [FIRST_WORD + (start + i) % words for i in range(len_a)]
        b = [FIRST_WORD + (start_b + i) % words for i in range(len_b)]
        tokens = [CLS, *a, SEP, *b, SEP]
        segments = [0] * (len_a + 2) + [1] * (len_b + 1)
        candidates = [i for i, t in enumerate(tokens) if t not in (CLS, SEP)]
        count = min(max_predictions, max(1, round(0.15 * len(tokens))))
        positions = sorted(rng.choice(candidates, size=count, replace=False).tolist())
        labels = [tokens[p] for p in positions]
        for p in positions:
            tokens[p] = MASK
        pad = seq_length - length
        pad_p = max_predictions - count
        out["input_ids"].append(tokens + [PAD] * pad)
        out["input_mask"].append([1] * length + [0] * pad)
        out["segment_ids"].append(segments + [0] * pad)
        out["masked_lm_positions"].append(positions + [0] * pad_p)
        out["masked_lm_ids"].append(labels + [0] * pad_p)
        out["masked_lm_weights"].append([1.0] * count + [0.0] * pad_p)
        out["next_sentence_labels"].append([is_random])
    return {k: np.asarray(v, "float32" if k == "masked_lm_weights" else "int64")
            for k, v in out.items()}


def write_records(path, features, drop=()):
    """Writes feature arrays as tf.train.Example records, leaving out `drop`."""
    import tensorflow as tf

    with tf.io.TFRecordWriter(path) as writer:
        for i in range(len(features["input_ids"])):
            feature = {}
            for name, values in features.items():
                if name in drop:
                    continue
                row = values[i].tolist()
                if values.dtype == np.float32:
                    feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=row))
                else:
                    feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=row))
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return path


def write_pretraining_records(directory, num_examples=256, num_files=2, seq_length=16,
                              max_predictions=4, vocab_size=64, seed=0):
    """Writes `num_files` TFRecord files of synthetic instances; returns the glob."""
    os.makedirs(directory, exist_ok=True)
    features = synthetic_examples(num_examples, seq_length, max_predictions, vocab_size, seed)
    for shard in range(num_files):
        part = {k: v[shard::num_files] for k, v in features.items()}
        write_records(os.path.join(directory, f"part-{shard:05d}.tfrecord"), part)
    return os.path.join(directory, "*.tfrecord")


def write_config(path, **overrides):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tiny_config_dict(**overrides), f)
    return path


def replica_weights(model, strategy):
    """{variable path: [value on each local replica]} of a model's trainable weights
    (on JAX and PyTorch: [the value])."""
    if not hasattr(strategy, "experimental_local_results"):
        import keras

        return {v.path: [keras.ops.convert_to_numpy(v.value)]
                for v in model.trainable_variables}
    return {v.path: [np.asarray(x) for x in strategy.experimental_local_results(v.value)]
            for v in model.trainable_variables}


def latest_step(run_dir):
    """The step of a run's newest complete checkpoint, from TF's `checkpoint` state file
    (read without TensorFlow, while another process writes it)."""
    import re

    try:
        with open(os.path.join(run_dir, "checkpoints", "checkpoint"), encoding="utf-8") as f:
            match = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"', f.read(), re.M)
    except FileNotFoundError:
        return 0
    return int(match.group(1)) if match else 0


def wait_for_checkpoint(process, run_dir, after=0, timeout=120):
    """Waits until the run in `run_dir` has a checkpoint past step `after`; fails the
    test (killing `process`) when the process ends or `timeout` seconds pass first."""
    import time

    import pytest

    deadline = time.monotonic() + timeout
    while latest_step(run_dir) <= after:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no checkpoint after step {after}:\n"
                        f"{process.communicate()[0][-3000:]}")
        time.sleep(0.01)


def saved_weights(path):
    """The {name: array} a training process saved to `weights_out`."""
    with np.load(path) as archive:
        return {k: archive[k] for k in archive.files}


def kill_9_after_a_checkpoint(spec_path, run_dir):
    """Starts the training process of `spec_path`, kills it with SIGKILL once it has saved
    a checkpoint, and returns the step of its last checkpoint."""
    import signal

    process = start_process(spec_path)
    wait_for_checkpoint(process, run_dir)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL, "the run finished before it was killed"
    return latest_step(run_dir)


def assert_same_weights(path, reference):
    """The weights a training process saved at `path` are exactly `reference`."""
    resumed = saved_weights(path)
    assert resumed.keys() == reference.keys()
    for name, value in resumed.items():
        np.testing.assert_array_equal(value, reference[name], err_msg=name)


def write_spec(directory, name, **fields):
    """Writes the JSON spec of a training process (see `main`) to DIRECTORY/NAME.json,
    with its output_dir DIRECTORY/NAME and weights_out DIRECTORY/NAME.npz; returns the
    path and the spec."""
    spec = {"output_dir": os.path.join(directory, name),
            "weights_out": os.path.join(directory, f"{name}.npz"), **fields}
    path = os.path.join(directory, f"{name}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    return path, spec


def start_process(spec_path, env=None):
    """Starts this module as a training process on the JSON spec at `spec_path`."""
    import subprocess

    return subprocess.Popen([sys.executable, os.path.abspath(__file__), spec_path],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})})


def finish_process(process, timeout, expected_code=0):
    """Waits for a process from `start_process`; returns its last output line's JSON."""
    import subprocess

    import pytest

    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"training process did not finish within {timeout} s:\n{output[-3000:]}")
    assert process.returncode == expected_code, output[-3000:]
    return json.loads(output.strip().splitlines()[-1])


def main(argv):
    """Runs one `Pretraining` from a JSON spec and saves every local replica's weights.

    Used as `python tests/training_support.py SPEC.json`: the spec holds
    `input_file`, `output_dir`, `config`, `options` (PretrainingOptions fields),
    `strategy`, optional `backend` (the Keras backend; default TensorFlow),
    `logical_cpus` (split the CPU into that many devices first),
    `deterministic` (op determinism) and `weights_out` (an .npz path).
    """
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    import tensorflow as tf

    # The spec's backend (before Keras is imported; TensorFlow still reads the data).
    os.environ["KERAS_BACKEND"] = spec.get("backend", "tensorflow")
    if spec.get("logical_cpus"):
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * spec["logical_cpus"])
    if spec.get("deterministic"):
        tf.config.experimental.enable_op_determinism()
    from keras_bert import BertConfig
    from keras_bert.pipelines.plumbing import EXIT_TERMINATED
    from keras_bert.training import Pretraining, PretrainingOptions

    run = Pretraining(spec["input_file"], spec["output_dir"],
                      BertConfig.from_dict(spec["config"]),
                      PretrainingOptions(**spec["options"]), strategy=spec["strategy"],
                      progress=False)
    metrics = run.fit()
    if spec.get("weights_out"):
        weights = replica_weights(run.model, run.strategy)
        np.savez(spec["weights_out"], **{f"{k}::{i}": v for k, values in weights.items()
                                         for i, v in enumerate(values)})
    print(json.dumps({"start_step": run.start_step, **metrics}), flush=True)
    return EXIT_TERMINATED if metrics.get("preempted") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
