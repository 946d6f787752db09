"""tf.distribute: MirroredStrategy over two logical CPU devices and
MultiWorkerMirroredStrategy with two worker processes on loopback train exactly what one
device trains; the strategy resolver, including the TPU path as far as it goes without
a TPU."""

import json
import os
import signal
import socket
import time

import numpy as np
import pytest
import tensorflow as tf
from training_support import (
    finish_process,
    latest_step,
    replica_weights,
    start_process,
    tiny_config_dict,
    write_pretraining_records,
)

from keras_bert import BertConfig
from keras_bert.pipelines.plumbing import EXIT_TERMINATED
from keras_bert.training import Pretraining, PretrainingOptions, distribute
from keras_bert.training.pretraining import steps_per_execution as _steps_per_execution

# Two replicas: a global batch of 8 is 4 per replica. Dropout is off in the tiny config
# and the masked-LM predictions per sequence vary (1 or 2), so the replicas' shares of
# the masked-LM loss differ and only a global average matches one device.
OPTIONS = dict(train_batch_size=8, num_train_steps=5, num_warmup_steps=1, learning_rate=5e-3,
               save_checkpoints_steps=5, log_steps=5, seed=7)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_pretraining_records(str(tmp_path_factory.mktemp("data")), num_examples=96)


@pytest.fixture(scope="module")
def single_device(data, tmp_path_factory):
    """The reference: the same run on one device, in this process."""
    run = Pretraining(data, str(tmp_path_factory.mktemp("single")),
                      BertConfig.from_dict(tiny_config_dict()), PretrainingOptions(**OPTIONS),
                      strategy="one_device", progress=False)
    metrics = run.fit()
    weights = {path: values[0] for path, values in
               replica_weights(run.model, run.strategy).items()}
    return weights, metrics


def spawn(spec, directory, name, env=None):
    spec_path = os.path.join(directory, f"{name}.json")
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    return start_process(spec_path, env)


def load_replicas(path):
    replicas = {}
    with np.load(path) as archive:
        for key in archive.files:
            name, _ = key.rsplit("::", 1)
            replicas.setdefault(name, []).append(archive[key])
    return replicas


def assert_matches_single_device(replicas, metrics, single_device):
    weights, reference_metrics = single_device
    assert replicas.keys() == weights.keys()
    for name, values in replicas.items():
        for value in values[1:]:  # every replica holds the same weights
            np.testing.assert_array_equal(value, values[0], err_msg=name)
        np.testing.assert_allclose(values[0], weights[name], atol=1e-5, rtol=0, err_msg=name)
    assert not np.allclose(weights["masked_lm/output_bias"], 0)  # training moved them
    for key in ("masked_lm_loss", "masked_lm_accuracy", "next_sentence_loss",
                "next_sentence_accuracy", "loss"):
        np.testing.assert_allclose(metrics[key], reference_metrics[key], atol=1e-5, err_msg=key)


def test_mirrored_over_two_cpu_devices_equals_one_device(data, single_device, tmp_path):
    spec = {"input_file": data, "output_dir": str(tmp_path / "run"),
            "config": tiny_config_dict(), "options": OPTIONS, "strategy": "mirrored",
            "logical_cpus": 2, "weights_out": str(tmp_path / "weights.npz")}
    metrics = finish_process(spawn(spec, str(tmp_path), "mirrored"), timeout=120)
    replicas = load_replicas(spec["weights_out"])
    assert all(len(v) == 2 for v in replicas.values())
    assert metrics["num_replicas"] == 2
    assert_matches_single_device(replicas, metrics, single_device)


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow  # long (CI time); its neighbours cover the default run
def test_multi_worker_on_loopback_equals_one_device(data, single_device, tmp_path):
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    processes = []
    for index in range(2):
        spec = {"input_file": data, "output_dir": str(tmp_path / "run"),
                "config": tiny_config_dict(), "options": OPTIONS, "strategy": "multi_worker",
                "weights_out": str(tmp_path / f"weights-{index}.npz")}
        tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        processes.append(spawn(spec, str(tmp_path), f"worker-{index}",
                               env={"TF_CONFIG": json.dumps(tf_config)}))
    deadline = time.monotonic() + 150
    results = [finish_process(p, timeout=max(1, deadline - time.monotonic())) for p in processes]
    for index, metrics in enumerate(results):
        replicas = load_replicas(str(tmp_path / f"weights-{index}.npz"))
        assert metrics["num_replicas"] == 2
        assert_matches_single_device(replicas, metrics, single_device)
    # Only the chief (worker 0) wrote the run's outputs, and exactly once.
    assert os.path.isfile(tmp_path / "run" / "metrics.json")
    assert sorted(os.listdir(tmp_path / "run" / "checkpoints")) == [
        "checkpoint", "ckpt-5.data-00000-of-00001", "ckpt-5.index"]


@pytest.mark.slow
def test_multi_worker_sigterm_stops_every_worker_at_one_saved_step(data, tmp_path):
    """PreemptionCheckpointHandler: a SIGTERM to one worker makes both save at the same
    step and stop; restarted, both resume there."""
    run_dir = str(tmp_path / "run")
    options = dict(OPTIONS, num_train_steps=400, save_checkpoints_steps=25, log_steps=25)

    def start_workers():
        workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
        processes = []
        for index in range(2):
            spec = {"input_file": data, "output_dir": run_dir, "config": tiny_config_dict(),
                    "options": options, "strategy": "multi_worker"}
            tf_config = {"cluster": {"worker": workers},
                         "task": {"type": "worker", "index": index}}
            processes.append(spawn(spec, str(tmp_path), f"worker-{index}",
                                   env={"TF_CONFIG": json.dumps(tf_config)}))
        return processes

    processes = start_workers()
    deadline = time.monotonic() + 120
    while latest_step(run_dir) == 0 and time.monotonic() < deadline:
        assert all(p.poll() is None for p in processes)
        time.sleep(0.05)
    processes[1].send_signal(signal.SIGTERM)  # the non-chief worker is preempted
    stopped = []
    for process in processes:
        output, _ = process.communicate(timeout=120)
        assert process.returncode == EXIT_TERMINATED, output[-3000:]
        stopped.append(json.loads(output.strip().splitlines()[-1]))
    step = stopped[0]["step"]
    assert stopped[1]["step"] == step and 0 < step < 400
    assert latest_step(run_dir) == step

    results = [finish_process(p, timeout=150) for p in start_workers()]
    assert [r["start_step"] for r in results] == [step, step]
    assert all(r["step"] == 400 for r in results)


# --- the resolver ---------------------------------------------------------------------

def test_named_strategies(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert isinstance(distribute.resolve_strategy("one_device"), tf.distribute.OneDeviceStrategy)
    mirrored = distribute.resolve_strategy("mirrored")
    assert isinstance(mirrored, tf.distribute.MirroredStrategy)
    assert mirrored.num_replicas_in_sync == len(tf.config.list_logical_devices("CPU"))
    assert distribute.resolve_strategy("auto") is tf.distribute.get_strategy()
    with pytest.raises(ValueError, match="must be one of"):
        distribute.resolve_strategy("horovod")
    with pytest.raises(ValueError, match="needs the cluster in the TF_CONFIG"):
        distribute.resolve_strategy("multi_worker")
    with pytest.raises(ValueError, match="use strategy 'tpu'"):
        distribute.resolve_strategy("mirrored", tpu="grpc://10.0.0.2:8470")


def test_auto_picks_multi_worker_from_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 0}}))
    monkeypatch.setattr(tf.distribute, "MultiWorkerMirroredStrategy", lambda: "mwms")
    assert distribute.resolve_strategy("auto") == "mwms"
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        distribute.resolve_strategy("auto")


def test_unreachable_tpu_fails_fast_with_a_clear_error():
    port = free_ports(1)[0]  # nothing listens there
    start = time.monotonic()
    with pytest.raises(ConnectionError, match=f"TPU grpc://127.0.0.1:{port} is not reachable"):
        distribute.resolve_strategy("tpu", tpu=f"grpc://127.0.0.1:{port}")
    assert time.monotonic() - start < 5
    with pytest.raises(ValueError, match="grpc://HOST:PORT"):
        distribute.resolve_strategy("tpu", tpu="grpc://nohost")


def test_tpu_resolver_wiring(monkeypatch):
    calls = []

    class FakeResolver:
        def __init__(self, tpu):
            calls.append(("resolver", tpu))

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", FakeResolver)
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster",
                        lambda r: calls.append(("connect", type(r).__name__)))
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system",
                        lambda r: calls.append(("initialize", type(r).__name__)))
    monkeypatch.setattr(tf.distribute, "TPUStrategy",
                        lambda r: calls.append(("strategy", type(r).__name__)) or "tpu-strategy")
    assert distribute.resolve_strategy("auto", tpu="my-tpu") == "tpu-strategy"
    assert calls == [("resolver", "my-tpu"), ("connect", "FakeResolver"),
                     ("initialize", "FakeResolver"), ("strategy", "FakeResolver")]
    calls.clear()
    distribute.resolve_strategy("tpu")  # on a TPU VM
    assert calls[0] == ("resolver", "local")

    def refuse(tpu):
        raise ValueError("Please provide a TPU Name to connect to.")

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", refuse)
    with pytest.raises(ConnectionError, match="Could not connect to TPU 'my-tpu'"):
        distribute.resolve_strategy("tpu", tpu="my-tpu")


def test_tpu_defaults_bfloat16_and_many_steps_per_execution(monkeypatch):
    monkeypatch.setattr(distribute, "is_tpu", lambda strategy: True)
    assert distribute.resolve_precision("auto", object()) == "mixed_bfloat16"
    options = PretrainingOptions(num_train_steps=100_000, save_checkpoints_steps=1000,
                                 log_steps=100)
    assert _steps_per_execution(options, tpu=True) == 100
    assert _steps_per_execution(options, tpu=False) == 1
    assert _steps_per_execution(options, tpu=False, replicas=2) == 1  # Mirrored
    assert _steps_per_execution(PretrainingOptions(save_checkpoints_steps=5000,
                                                   log_steps=5000), tpu=True) == 1000


def test_precision_names():
    cpu = tf.distribute.OneDeviceStrategy("/cpu:0")
    assert distribute.resolve_precision("auto", cpu) == "float32"
    assert distribute.resolve_precision("auto", tf.distribute.get_strategy()) == "float32"
    assert distribute.resolve_precision("mixed_float16", cpu) == "mixed_float16"
    with pytest.raises(ValueError, match="mixed_precision"):
        distribute.resolve_precision("half", cpu)


def test_global_batch_not_divisible_by_replicas_fails_before_training(data, tmp_path):
    class TwoReplicas:
        num_replicas_in_sync = 2

    with pytest.raises(ValueError, match="train_batch_size 7 is not divisible by the 2 "):
        Pretraining(data, str(tmp_path / "run"), BertConfig.from_dict(tiny_config_dict()),
                    PretrainingOptions(train_batch_size=7, num_train_steps=2,
                                       num_warmup_steps=0), strategy=TwoReplicas())
    assert not (tmp_path / "run").exists()


def test_mixed_float16_wraps_the_optimizer_for_loss_scaling(data, tmp_path):
    import keras

    run = Pretraining(data, str(tmp_path / "run"), BertConfig.from_dict(tiny_config_dict()),
                      PretrainingOptions(train_batch_size=8, num_train_steps=2,
                                         num_warmup_steps=0, mixed_precision="mixed_float16"),
                      progress=False)
    assert isinstance(run.model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert run.model.encoder.dtype_policy.name == "mixed_float16"
    assert keras.mixed_precision.global_policy().name == "float32"  # restored
    assert np.isfinite(run.fit()["masked_lm_loss"])
