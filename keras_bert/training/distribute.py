"""Choosing the `tf.distribute` strategy and the precision a run trains under.

`resolve_strategy` maps the strategy names to strategies: `one_device`, `mirrored`
(all local GPUs, else all local CPU devices), `multi_worker` (a
`MultiWorkerMirroredStrategy` over the cluster in `TF_CONFIG`), `tpu` (a `TPUStrategy`
through `TPUClusterResolver`) and `auto`, which picks from what it finds. Multi-worker
and TPU strategies configure the TF runtime, so resolve the strategy before running
any other TF op.

On the JAX and PyTorch backends tf.distribute does not apply (it places TF variables;
the model's are the backend's): `resolve_strategy` gives a `LocalDevices` instead,
which trains data parallel over every local device through `keras.distribution` when
there are several (JAX), else on the one device. `auto` and `one_device` keep their
meaning there; `mirrored`, `multi_worker`, `tpu` and a TPU address are refused with a
message that says what to use.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import urllib.parse

import keras
import tensorflow as tf

from keras_bert.core.errors import ArgumentError, Setting
from keras_bert.core.precision import (
    AUTO,
    FLOAT32,
    MIXED_BFLOAT16,
    MIXED_FLOAT16,
    TRAINING_PRECISIONS,
    check_precision,
)
from keras_bert.training.options import STRATEGIES

_TPU_CONNECT_TIMEOUT_S = 10.0


def cluster_from_tf_config() -> dict:
    """The `cluster` of the `TF_CONFIG` environment variable ({} when unset).

    Example:

    >>> os.environ.pop("TF_CONFIG", None) and None
    >>> cluster_from_tf_config()
    {}
    """
    text = os.environ.get("TF_CONFIG")
    if not text:
        return {}
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise ArgumentError(f"TF_CONFIG is not valid JSON: {e}", field="TF_CONFIG") from None
    return config.get("cluster", {})


def _num_workers(cluster: dict) -> int:
    return len(cluster.get("chief", [])) + len(cluster.get("worker", []))


def check_tpu_reachable(tpu: str, timeout: float = _TPU_CONNECT_TIMEOUT_S) -> None:
    """Raises ConnectionError when a `grpc://host:port` TPU address does not accept a
    TCP connection within `timeout` seconds (TF itself would wait much longer).
    Other forms (a Cloud TPU name, "local") are left to `TPUClusterResolver`.

    Example:

    >>> check_tpu_reachable("grpc://127.0.0.1:1", timeout=1.0)
    Traceback (most recent call last):
    ...
    ConnectionError: TPU grpc://127.0.0.1:1 is not reachable ...
    """
    if not tpu.startswith("grpc://"):
        return
    address = urllib.parse.urlparse(tpu)
    if not address.hostname or not address.port:
        raise ArgumentError(f"tpu {tpu!r} must look like grpc://HOST:PORT.", field="tpu")
    try:
        with socket.create_connection((address.hostname, address.port), timeout=timeout):
            pass
    except OSError as e:
        raise ConnectionError(
            f"TPU {tpu} is not reachable ({e}); check the tpu address and that the TPU is "
            "up and in the same network as this machine.") from None


def _tpu_strategy(tpu: str | None) -> tf.distribute.TPUStrategy:
    tpu = tpu or "local"
    check_tpu_reachable(tpu)
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as e:
        raise ConnectionError(f"Could not connect to TPU {tpu!r}: {e}") from None
    return tf.distribute.TPUStrategy(resolver)


class LocalDevices:
    """Where a run on the JAX or PyTorch backend trains: data parallel over `devices`
    through `keras.distribution.DataParallel` when there are several (the batch is
    split over them, the weights replicated; the gradient is the whole batch's), else
    on the one device. It answers what the training stage asks a tf.distribute
    strategy: `num_replicas_in_sync`, `scope()` (the distribution is in force inside:
    build the model and run `fit` there) and, through this module's functions, TPU,
    workers and chief (one process: always the chief).

    Example:

    >>> LocalDevices(["cpu:0"]).num_replicas_in_sync
    1
    """

    def __init__(self, devices: list[str]):
        self.devices = list(devices)
        self.distribution = None
        if len(self.devices) > 1:
            self.distribution = keras.distribution.DataParallel(devices=self.devices)

    @property
    def num_replicas_in_sync(self) -> int:
        return len(self.devices)

    def scope(self):
        if self.distribution is None:
            return contextlib.nullcontext()
        return self.distribution.scope()

    def __repr__(self) -> str:
        return f"LocalDevices({self.devices})"


def on_tensorflow() -> bool:
    """Whether Keras runs on the TensorFlow backend (tf.distribute applies)."""
    return keras.backend.backend() == "tensorflow"


def default_strategy():
    """The strategy in force: TF's current one, or one local device on other backends."""
    if on_tensorflow():
        return tf.distribute.get_strategy()
    return LocalDevices(_list_devices()[:1])


def has_accelerator() -> bool:
    """Whether the backend trains on a GPU or TPU here (TensorFlow's devices on the
    TensorFlow backend, the backend's own elsewhere)."""
    if on_tensorflow():
        return bool(tf.config.list_logical_devices("GPU")
                    or tf.config.list_logical_devices("TPU"))
    return not _list_devices()[0].startswith("cpu")


def fit_scope(strategy):
    """Where `fit` runs: inside a `LocalDevices`'s distribution (JAX shards each batch
    over the devices there); tf.distribute needs no scope around `fit`."""
    if isinstance(strategy, LocalDevices):
        return strategy.scope()
    return contextlib.nullcontext()


def _list_devices() -> list[str]:
    """The local devices of the backend, accelerators first ("gpu:0", ...)."""
    if keras.backend.backend() == "jax":  # keras.distribution is JAX's
        return keras.distribution.list_devices()
    import torch  # the PyTorch backend's

    return [f"cuda:{i}" for i in range(torch.cuda.device_count())] or ["cpu:0"]


def _local_devices(name: str, tpu: str | None) -> LocalDevices:
    backend = keras.backend.backend()
    if tpu:
        raise ArgumentError.advising(
            Setting("tpu", tpu), " names a TPU for tf.distribute, which the TensorFlow "
            f"backend has; KERAS_BACKEND is {backend!r}, where a TPU VM's cores are local "
            "devices: leave it out (training is data parallel over every local device).",
            field="tpu")
    if name not in ("auto", "one_device"):
        raise ArgumentError.advising(
            Setting("strategy", name), " is a tf.distribute strategy, which the TensorFlow "
            f"backend has; KERAS_BACKEND is {backend!r}, where training is data parallel "
            "over every local device (keras.distribution): use ", Setting("strategy", "auto"),
            " (", Setting("strategy", "one_device"), " for one device), or set "
            "KERAS_BACKEND=tensorflow.", field="strategy")
    devices = _list_devices()
    if backend != "jax" or name == "one_device":
        devices = devices[:1]  # keras.distribution is JAX's
    return LocalDevices(devices)


def resolve_strategy(name: str = "auto", tpu: str | None = None):
    """A `tf.distribute.Strategy` for a strategy name (on JAX and PyTorch: a
    `LocalDevices`, see the module docstring).

    Args:
        name: "one_device" (the first GPU, else the CPU), "mirrored" (all local GPUs,
            else all local logical CPU devices), "multi_worker" (needs `TF_CONFIG`),
            "tpu" (`tpu` is "local" on a TPU VM, a Cloud TPU name or grpc://HOST:PORT)
            or "auto": TPU when `tpu` is given, multi-worker when `TF_CONFIG` lists more
            than one worker, mirrored with several GPUs, else TF's default strategy.
        tpu: the TPU address for "tpu" (default "local").

    Raises:
        ArgumentError: an unknown name, "multi_worker" without a cluster in TF_CONFIG,
            or a `tpu` with a strategy other than "tpu"/"auto".
        ConnectionError: the TPU cannot be reached.

    Example:

    >>> resolve_strategy("one_device").num_replicas_in_sync
    1
    """
    if name not in STRATEGIES:
        raise ArgumentError(f"strategy must be one of {STRATEGIES}, got {name!r}.",
                            field="strategy")
    if not on_tensorflow():
        return _local_devices(name, tpu)
    if name == "auto":
        if tpu:
            name = "tpu"
        elif _num_workers(cluster_from_tf_config()) > 1:
            name = "multi_worker"
        elif len(tf.config.list_physical_devices("GPU")) > 1:
            name = "mirrored"
        else:
            return tf.distribute.get_strategy()
    elif tpu and name != "tpu":
        raise ArgumentError(f"tpu {tpu!r} was given with strategy {name!r}; use strategy "
                            "'tpu' (or 'auto').", field="strategy")
    if name == "tpu":
        return _tpu_strategy(tpu)
    if name == "multi_worker":
        if not _num_workers(cluster_from_tf_config()):
            raise ArgumentError("strategy 'multi_worker' needs the cluster in the TF_CONFIG "
                                "environment variable, e.g. {\"cluster\": {\"worker\": "
                                "[\"host1:port\", \"host2:port\"]}, \"task\": {\"type\": "
                                "\"worker\", \"index\": 0}}.", field="strategy")
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    devices = [d.name for d in (gpus or tf.config.list_logical_devices("CPU"))]
    return tf.distribute.MirroredStrategy(devices)


def is_tpu(strategy: tf.distribute.Strategy) -> bool:
    """Whether `strategy` runs on TPUs.

    Example:

    >>> is_tpu(tf.distribute.get_strategy())
    False
    """
    if isinstance(strategy, LocalDevices):
        return any(d.startswith("tpu") for d in strategy.devices)
    return isinstance(strategy, (tf.distribute.TPUStrategy,
                                 tf.distribute.experimental.TPUStrategy))


def num_workers(strategy: tf.distribute.Strategy) -> int:
    """How many processes (hosts) take part: 1 except under a multi-worker strategy.

    Example:

    >>> num_workers(tf.distribute.get_strategy())
    1
    """
    if isinstance(strategy, LocalDevices) or not isinstance(
            strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return 1
    return max(1, _num_workers(strategy.cluster_resolver.cluster_spec().as_dict()))


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the run's outputs (the chief, or worker 0 without one).

    Example:

    >>> is_chief(tf.distribute.get_strategy())
    True
    """
    if num_workers(strategy) == 1:
        return True
    resolver = strategy.cluster_resolver
    task_type, task_id = resolver.task_type, resolver.task_id
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return task_type == "chief" or (not has_chief and task_type == "worker" and task_id == 0)


def resolve_precision(name: str, strategy: tf.distribute.Strategy) -> str:
    """The Keras dtype policy for a `mixed_precision` name.

    "auto" is "mixed_bfloat16" on TPU, "mixed_float16" (Keras then adds dynamic loss
    scaling) on GPUs and "float32" on CPUs.

    Example:

    >>> resolve_precision("auto", tf.distribute.OneDeviceStrategy("/cpu:0"))
    'float32'
    """
    if check_precision(name, TRAINING_PRECISIONS, "mixed_precision") != AUTO:
        return name
    if is_tpu(strategy):
        return MIXED_BFLOAT16
    if isinstance(strategy, LocalDevices):
        return MIXED_FLOAT16 if any(d.startswith(("gpu", "cuda")) for d in strategy.devices
                                    ) else FLOAT32
    try:
        devices = strategy.extended.worker_devices
    except RuntimeError:  # TF's default strategy places ops on a GPU when there is one
        devices = [d.name for d in tf.config.list_logical_devices("GPU")]
    if any("GPU" in d.upper() for d in devices):
        return MIXED_FLOAT16
    return FLOAT32
