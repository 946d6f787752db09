"""`keras-bert pretrain` and `keras-bert finetune` on the JAX (and PyTorch) backend, in
real processes: a JAX run killed with kill -9 and stopped by SIGTERM resumes from its
checkpoints to exactly the weights of an uninterrupted JAX run; its run directory loads,
and its checkpoints resume, under TensorFlow (this pytest process); data parallel over
two JAX devices computes what one device does; mixed precision trains; tf.distribute
flags are refused before any work; every task family fine-tunes under JAX, and a model
fine-tuned there predicts and exports under TensorFlow; PyTorch pretrains. Accuracy at
scale: benchmarks/backend_training.py."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import REPO
from training_support import (
    assert_same_weights,
    finish_process,
    kill_9_after_a_checkpoint,
    latest_step,
    saved_weights,
    start_process,
    tiny_config_dict,
    wait_for_checkpoint,
    write_config,
    write_pretraining_records,
    write_spec,
)

from keras_bert.pipelines.plumbing import EXIT_TERMINATED

pytest.importorskip("jax", reason='pip install -e ".[jax]"')

OPTIONS = dict(train_batch_size=16, num_train_steps=600, num_warmup_steps=60,
               learning_rate=2e-3, save_checkpoints_steps=25, log_steps=100, seed=3)
CONFIG = tiny_config_dict(hidden_dropout=0.1, attention_dropout=0.1)
TASK_DATA = os.path.join(REPO, "tests", "fixtures", "tasks")
VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")


def backend_env(backend, **extra):
    return {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2",
            "PYTHONPATH": REPO, **extra}


def run_script(backend, script, cwd, timeout=300, **env):
    """Runs `script` under KERAS_BACKEND=backend; its last stdout line is JSON."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=cwd,
                          env=backend_env(backend, **env), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_pretraining_records(str(tmp_path_factory.mktemp("data")), num_examples=256)


def spec_for(data, directory, name):
    return write_spec(directory, name, input_file=data, config=CONFIG, options=OPTIONS,
                      strategy="auto", backend="jax")


@pytest.fixture(scope="module")
def uninterrupted(data, tmp_path_factory):
    """An uninterrupted JAX run: its spec and final weights."""
    spec_path, spec = spec_for(data, str(tmp_path_factory.mktemp("reference")), "run")
    result = finish_process(start_process(spec_path), timeout=200)
    assert result["start_step"] == 0 and result["step"] == 600
    return spec, saved_weights(spec["weights_out"])


def test_jax_run_killed_and_stopped_resumes_to_the_uninterrupted_weights(
        data, uninterrupted, tmp_path):
    spec_path, spec = spec_for(data, str(tmp_path), "run")
    killed_at = kill_9_after_a_checkpoint(spec_path, spec["output_dir"])
    assert 25 <= killed_at < 600 and killed_at % 25 == 0

    process = start_process(spec_path)
    wait_for_checkpoint(process, spec["output_dir"], after=killed_at)
    process.send_signal(signal.SIGTERM)
    stopped = finish_process(process, timeout=150, expected_code=EXIT_TERMINATED)
    assert stopped["start_step"] == killed_at
    assert stopped["preempted"] and killed_at < stopped["step"] < 600
    assert latest_step(spec["output_dir"]) == stopped["step"]  # saved where it stopped

    finished = finish_process(start_process(spec_path), timeout=150)
    assert finished["start_step"] == stopped["step"] and finished["step"] == 600
    # Exactly the uninterrupted run's weights: dropout is on, so its seeds were restored.
    assert_same_weights(spec["weights_out"], uninterrupted[1])


def test_jax_run_directory_loads_and_continues_under_tensorflow(data, uninterrupted):
    import keras

    import keras_bert
    from keras_bert import BertConfig
    from keras_bert.checkpoints import load_pretrainer
    from keras_bert.training import Pretraining, PretrainingOptions

    assert keras.backend.backend() == "tensorflow"
    spec, reference = uninterrupted
    run_dir = spec["output_dir"]
    encoder = keras_bert.load_encoder(run_dir)
    trained = {k.split("::")[0]: v for k, v in reference.items()}
    for variable in encoder.trainable_variables:
        np.testing.assert_array_equal(variable.numpy(), trained[variable.path],
                                      err_msg=variable.path)
    last = load_pretrainer(os.path.join(run_dir, "checkpoints", "ckpt-600"))
    for a, b in zip(last.encoder.get_weights(), encoder.get_weights()):
        np.testing.assert_array_equal(a, b)

    # The JAX run's checkpoint (weights, Adam moments, seeds, step) goes on under TF.
    options = PretrainingOptions(**{**OPTIONS, "num_train_steps": 610})
    run = Pretraining(data, run_dir, BertConfig.from_dict(CONFIG), options, progress=False,
                      resume=True)
    assert (run.start_kind, run.start_step) == ("extended", 600)
    assert int(run.model.optimizer.iterations.numpy()) == 600
    metrics = run.fit()
    assert metrics["step"] == 610 and np.isfinite(metrics["masked_lm_loss"])


@pytest.mark.slow  # 28 s; the default suite keeps the JAX fine-tuning and resume tests
def test_data_parallel_over_two_jax_devices_and_mixed_precision(data, tmp_path):
    script = f"""
        import json, keras, numpy as np
        from keras_bert import BertConfig
        from keras_bert.training import Pretraining, PretrainingOptions
        config = BertConfig.from_dict({tiny_config_dict()!r})
        def run(name, strategy="one_device", **options):
            options = PretrainingOptions(**{{**dict(train_batch_size=16, num_train_steps=6,
                num_warmup_steps=1, learning_rate=1e-3, save_checkpoints_steps=3,
                log_steps=3, seed=1), **options}})
            run = Pretraining({data!r}, {str(tmp_path)!r} + "/" + name, config, options,
                              strategy=strategy, progress=False)
            return run, run.fit()
        two, two_metrics = run("two_devices", "auto")
        one, one_metrics = run("one_device")
        difference = max(float(np.max(np.abs(keras.ops.convert_to_numpy(a.value)
                                             - keras.ops.convert_to_numpy(b.value))))
                         for a, b in zip(two.model.trainable_variables,
                                         one.model.trainable_variables))
        kernel = two.model.trainable_variables[3].value
        clipped = one.model.optimizer._clip_gradients([keras.ops.convert_to_tensor([3.0, 4.0])])
        f16, f16_metrics = run("float16", mixed_precision="mixed_float16")
        bf16, bf16_metrics = run("bfloat16", mixed_precision="mixed_bfloat16")
        print(json.dumps({{
            "replicas": [two.strategy.num_replicas_in_sync, one.strategy.num_replicas_in_sync],
            "sharding_devices": len(kernel.sharding.device_set),
            "difference": difference,
            "clipped_norm": float(np.linalg.norm(keras.ops.convert_to_numpy(clipped[0]))),
            "losses": [two_metrics["masked_lm_loss"], one_metrics["masked_lm_loss"]],
            "float16": [type(f16.model.optimizer).__name__, f16.run_config["dtype_policy"],
                        f16_metrics["masked_lm_loss"]],
            "bfloat16": [bf16.run_config["dtype_policy"], bf16_metrics["masked_lm_loss"],
                         bf16.model.encoder.compute_dtype]}}))
    """
    result = run_script("jax", script, tmp_path,
                        XLA_FLAGS="--xla_force_host_platform_device_count=2")
    assert result["replicas"] == [2, 1]
    assert result["sharding_devices"] == 2  # the weights are replicated on both devices
    assert result["difference"] < 1e-4, result
    assert abs(result["losses"][0] - result["losses"][1]) < 1e-4, result
    # BERT's global-norm clipping (1.0) applies on JAX too (it once applied only on TF).
    assert abs(result["clipped_norm"] - 1.0) < 1e-5, result
    optimizer, policy, loss = result["float16"]
    assert optimizer == "LossScaleOptimizer" and policy == "mixed_float16" and np.isfinite(loss)
    policy, loss, compute = result["bfloat16"]
    assert policy == "mixed_bfloat16" and compute == "bfloat16" and np.isfinite(loss)


def test_tf_distribute_flags_stop_under_jax_before_any_work(data, tmp_path):
    config = write_config(str(tmp_path / "bert_config.json"))
    script = f"""
        import contextlib, io, json, sys
        from keras_bert.cli import main
        base = ["pretrain", "--input_file", {data!r}, "--config", {config!r},
                "--train_batch_size", "8", "--num_train_steps", "2",
                "--num_warmup_steps", "1", "--noprogress"]
        results = []
        for extra in (["--strategy", "mirrored"], ["--strategy", "tpu"],
                      ["--tpu", "local"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(base + ["--output_dir", {str(tmp_path / "refused")!r}, *extra])
            results.append([code, err.getvalue()])
        print(json.dumps(results))
    """
    results = run_script("jax", script, tmp_path)
    for code, err in results:
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, err
        assert lines[0].startswith("keras-bert pretrain: error: ") and "'jax'" in lines[0]
    assert "error: --strategy=mirrored is a tf.distribute strategy" in results[0][1]
    assert "use --strategy=auto (--strategy=one_device for one device)" in results[0][1]
    assert "error: --tpu=local names a TPU for tf.distribute" in results[2][1]
    assert not (tmp_path / "refused").exists()


FAMILIES = [  # task, data directory, extra flags, a prediction file the run writes
    ("qnli", os.path.join("glue", "QNLI"), ["--num_train_epochs", "2", "--learning_rate",
                                            "1e-3"], "qnli.tsv"),
    ("squad2", "squad", ["--max_query_length", "16", "--doc_stride", "16"],
     "predictions.json"),
    ("ner", "conll2003", [], "predictions.txt"),
    ("swag", "swag", [], "predictions.csv"),
]


def test_every_family_finetunes_under_jax_and_predicts_and_exports_under_tensorflow(
        tmp_path):
    from keras_bert.cli import main

    script = f"""
        import json
        from keras_bert.cli import main
        codes = {{}}
        for task, directory, extra, _ in {FAMILIES!r}:
            codes[task] = main(["finetune", "--task", task, "--data_dir",
                                {TASK_DATA!r} + "/" + directory,
                                "--output_dir", {str(tmp_path)!r} + "/" + task,
                                "--preset", "tiny", "--vocab_file", {VOCAB!r},
                                "--do_lower_case=false", "--max_seq_length", "48",
                                "--num_train_epochs", "1", "--train_batch_size", "8",
                                "--noprogress", *extra])
        print(json.dumps(codes))
    """
    codes = run_script("jax", script, tmp_path, timeout=600)
    assert codes == {task: 0 for task, *_ in FAMILIES}, codes
    for task, _, _, written in FAMILIES:
        assert (tmp_path / task / written).is_file(), task
        assert (tmp_path / task / "model.keras").is_file(), task

    data = os.path.join(TASK_DATA, "glue", "QNLI")
    run_dir = tmp_path / "qnli"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    # Lengths rounded up to multiples of 16 (max_seq_length 48): a few compiled shapes,
    # not one per batch.
    assert metrics["traces"]["train_step"]["traces"] <= 4, metrics["traces"]

    # TensorFlow reads the JAX run: the same dev predictions, and a SavedModel.
    dev = os.path.join(data, "dev.tsv")
    out = tmp_path / "predictions.tsv"
    assert main(["predict", "--model", str(run_dir), "--task", "qnli", "--input", dev,
                 "--output", str(out), "--quiet"]) == 0
    predicted = [line.split("\t")[1] for line in out.read_text().splitlines()[1:]]
    with open(dev, encoding="utf-8") as f:
        labels = [line.rstrip("\n").split("\t")[-1] for line in f.readlines()[1:]]
    accuracy = sum(p == y for p, y in zip(predicted, labels)) / len(labels)
    assert abs(accuracy - metrics["accuracy"]) <= 1 / len(labels) + 1e-9, (accuracy, metrics)
    # The dev predictions the JAX run wrote (qnli.tsv), against TensorFlow's.
    written = [line.split("\t")[1] for line in
               (run_dir / "qnli.tsv").read_text().splitlines()[1:]]
    assert np.mean([a == b for a, b in zip(written, predicted)]) >= 0.9
    assert main(["export", "--checkpoint", str(run_dir), "--output_dir",
                 str(tmp_path / "saved"), "--quiet"]) == 0
    assert (tmp_path / "saved" / "qnli" / "1" / "saved_model.pb").is_file()


@pytest.mark.slow  # CI time: PyTorch is not the accelerator road here
def test_pretrain_command_under_torch_loads_under_tensorflow(data, tmp_path):
    pytest.importorskip("torch")
    import keras_bert

    config = write_config(str(tmp_path / "bert_config.json"))
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "keras_bert", "pretrain", "--input_file", data,
         "--output_dir", str(run_dir), "--config", config, "--train_batch_size", "8",
         "--num_train_steps", "4", "--num_warmup_steps", "1", "--save_checkpoints_steps", "2",
         "--log_steps", "2", "--noprogress"],
        capture_output=True, text=True, timeout=300, env=backend_env("torch"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Trained to step 4: masked-LM accuracy" in proc.stdout
    assert "LocalDevices" in proc.stderr
    assert keras_bert.load_encoder(str(run_dir)).config.hidden_size == 32
