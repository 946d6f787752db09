"""Callbacks for long `model.fit` runs: fault-tolerant checkpoints, windowed metrics
for TensorBoard, and a progress bar.

All three count steps globally: a run resumed at step 3000 logs, saves and shows
progress from 3000 on, not from 0 as Keras's own callbacks would after a restart. With
`steps_per_execution` N, Keras runs N steps per call of its train function and calls
`on_train_batch_end` once after them with the last step's index: the callbacks act at
the first execution end at or past each interval (exactly on it when N divides the
interval and the start step, as `keras_bert.training.pretraining.steps_per_execution`
chooses N).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import threading
import time

import keras
import tensorflow as tf
import tqdm

from keras_bert.checkpoints.training_runs import by_position
from keras_bert.core import fileio, stopping
from keras_bert.core.errors import ArgumentError, CheckpointError
from keras_bert.core.run_files import CHECKPOINT_PREFIX
from keras_bert.training import distribute

logger = logging.getLogger("keras_bert")



def sync_training_state(model: keras.Model) -> None:
    """Puts the training state back into `model`'s variables. During `fit` on JAX it
    lives in the trainer's arrays, and the variables are stale until it is synced; on
    TensorFlow and PyTorch the variables are the state and nothing is done."""
    sync = getattr(model, "jax_state_sync", None)
    if sync is not None:
        sync()


class _VariableMirror:
    """TF variables that mirror a Keras model's and optimizer's variables on a backend
    other than TensorFlow, so that `tf.train.Checkpoint` writes them under the keys
    and in the dtypes a TensorFlow-backend run writes: a random seed state is uint32
    on JAX and int64 on TensorFlow. `pull` copies the Keras values in before a save;
    `push` copies restored values back out."""

    def __init__(self, model: keras.Model):
        self._pairs = []
        self.model = self._mirror(model.variables)
        self.optimizer = self._mirror(model.optimizer.variables)

    def _mirror(self, variables) -> dict:
        mirrored = {}
        for key, variable in by_position(variables).items():
            dtype = "int64" if "int" in str(variable.dtype) else str(variable.dtype)
            copy = tf.Variable(tf.zeros(variable.shape, dtype), trainable=False)
            self._pairs.append((variable, copy))
            mirrored[key] = copy
        return mirrored

    def pull(self) -> None:
        for variable, copy in self._pairs:
            copy.assign(keras.ops.convert_to_numpy(variable.value).astype(
                copy.dtype.as_numpy_dtype))

    def push(self) -> None:
        for variable, copy in self._pairs:
            variable.assign(copy.numpy().astype(keras.backend.standardize_dtype(
                variable.dtype)))


class TrainingCheckpoint(keras.callbacks.Callback):
    """Saves the whole training state every `save_steps` steps and resumes from it.

    The state is every model variable (weights and the dropout seed states), every
    optimizer variable (moments, step counter, accumulators, loss scale) and the step,
    which is also the position in a deterministic input pipeline (`restore` returns
    it; skip that many batches). Checkpoints are `tf.train.CheckpointManager` files
    `ckpt-STEP.*` in `directory`: TF writes them under temporary names and updates the
    `checkpoint` index file by an atomic rename, so a job killed at any moment leaves
    the last complete checkpoint as the latest one. The last `max_to_keep` are kept.

    On SIGTERM (a preemption notice) or SIGINT (Ctrl-C), the current step (with
    `steps_per_execution` N: the current N steps) finishes, a checkpoint is saved and
    training stops; `preempted` is then True and `stop_signal`
    names the signal ("SIGTERM" or "SIGINT"). A second SIGINT before the step ends
    raises `KeyboardInterrupt` at once (no checkpoint). A SIGINT that the process
    ignores (a background job's) stays ignored. Under a multi-worker strategy SIGTERM
    goes through `tf.distribute.experimental.PreemptionCheckpointHandler`, which agrees
    on one step with every worker, and SIGINT is left to Python (it stops only the
    worker it reaches); only the chief writes to `directory` (the others save to a
    temporary directory, as tf.distribute requires all of them to save). A final
    checkpoint is written when training ends.

    Args:
        directory: where checkpoints go.
        model: the compiled model; its optimizer must be built (`optimizer.build`).
        save_steps: save every this many steps.
        max_to_keep: checkpoints kept.
        strategy: the strategy the model was built under (default: the current one).

    Example:

    >>> import numpy as np, tempfile
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> model.optimizer.build(model.trainable_variables)
    >>> ckpt = TrainingCheckpoint(tempfile.mkdtemp(), model, save_steps=2)
    >>> ckpt.restore()  # nothing saved yet: start at step 0
    0
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2, verbose=0,
    ...               callbacks=[ckpt])
    >>> ckpt.restore()
    4
    """

    def __init__(self, directory: str, model: keras.Model, save_steps: int, *,
                 max_to_keep: int = 3, strategy: tf.distribute.Strategy | None = None):
        super().__init__()
        if save_steps < 1:
            raise ArgumentError(f"save_steps must be >= 1, got {save_steps}.",
                                field="save_steps")
        if model.optimizer is None or not model.optimizer.built:
            raise ValueError("TrainingCheckpoint needs a compiled model whose optimizer is "
                             "built: call model.optimizer.build(model.trainable_variables).")
        self.directory = directory
        self.save_steps = save_steps
        self.preempted = False
        self.stop_signal: str | None = None
        self._strategy = strategy or distribute.default_strategy()
        self._mirror = None
        if distribute.on_tensorflow():
            saved_model = by_position(model.variables)
            saved_optimizer = by_position(model.optimizer.variables)
        else:
            # JAX and PyTorch variables are not TF's: TF variables mirror them, in the
            # dtypes the TensorFlow backend has, so that the files are the same.
            self._mirror = _VariableMirror(model)
            saved_model, saved_optimizer = self._mirror.model, self._mirror.optimizer
        self._checkpoint = tf.train.Checkpoint(model=saved_model, optimizer=saved_optimizer)
        self._manager = tf.train.CheckpointManager(
            self._checkpoint, directory, max_to_keep=max_to_keep,
            checkpoint_name=CHECKPOINT_PREFIX)
        self._scratch = None
        self._write_manager = self._manager
        if not distribute.is_chief(self._strategy):
            self._scratch = tempfile.mkdtemp(prefix="keras_bert-worker-checkpoint-")
            self._write_manager = tf.train.CheckpointManager(
                self._checkpoint, self._scratch, max_to_keep=1,
                checkpoint_name=CHECKPOINT_PREFIX)
        self._initial_step = self._step = self._saved_step = 0
        self._deferral = None
        self._preemption_handler = None

    # --- resuming -----------------------------------------------------------------------
    @property
    def step(self) -> int:
        """The training step the model is at (as far as the callback has seen)."""
        return self._step

    @property
    def latest_checkpoint(self) -> str | None:
        """The path prefix of the newest complete checkpoint, or None."""
        return self._manager.latest_checkpoint

    def restore(self) -> int:
        """Loads the newest checkpoint, if any, and returns its step (0 without one)."""
        path = self._manager.latest_checkpoint
        if path is None:
            self._initial_step = self._step = self._saved_step = 0
            return 0
        saved = {name for name, _ in tf.train.list_variables(path)}
        missing = [f"{group}/{key}" for group in ("model", "optimizer")
                   for key in getattr(self._checkpoint, group)
                   if f"{group}/{key}/.ATTRIBUTES/VARIABLE_VALUE" not in saved]
        if missing:
            raise CheckpointError(
                f"{path} does not hold this model's training state ({len(missing)} "
                f"variables missing, e.g. {missing[:3]}): was it written with another "
                "config, optimizer, precision or gradient accumulation? Use another "
                "output_dir, or overwrite the run.")
        self._checkpoint.restore(path).assert_existing_objects_matched()
        if self._mirror is not None:
            self._mirror.push()
        step = int(path.rsplit("-", 1)[1])
        self._initial_step = self._step = self._saved_step = step
        logger.info("Restored %s: resuming at step %d.", path, step)
        return step

    def save(self) -> str | None:
        """Writes a checkpoint of the current step (once per step)."""
        if self._step == self._saved_step and self._manager.latest_checkpoint:
            return self._manager.latest_checkpoint
        if self._mirror is not None:
            sync_training_state(self.model)
            self._mirror.pull()
        path = self._write_manager.save(checkpoint_number=self._step)
        self._saved_step = self._step
        return path

    # --- termination --------------------------------------------------------------------
    def _stop(self):
        self.preempted = True
        self.stop_signal = self.stop_signal or "SIGTERM"
        self.model.stop_training = True

    def _install_termination_handling(self):
        if distribute.num_workers(self._strategy) > 1:
            config = tf.distribute.experimental.TerminationConfig(
                exit_fn=self._stop, save_fn=self.save)
            self._preemption_handler = tf.distribute.experimental.PreemptionCheckpointHandler(
                self._strategy.cluster_resolver, self._manager, termination_config=config)
            return
        if threading.current_thread() is not threading.main_thread():
            logger.warning("Training outside the main thread: SIGTERM and SIGINT will not "
                           "save a checkpoint before the process ends.")
            return
        # The signal is only noted (keras_bert.core.stopping): the step boundary below
        # saves and stops; a second Ctrl-C stops at once, without saving.
        self._deferral = contextlib.ExitStack()
        self._deferral.enter_context(stopping.deferred())

    def restore_signal_handlers(self):
        """Puts back the handlers that were installed before training started."""
        if self._deferral is not None:
            self._deferral.close()
            self._deferral = None

    # --- callback hooks ---------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._step = self._initial_step
        self._install_termination_handling()

    def on_train_batch_end(self, batch, logs=None):
        previous, self._step = self._step, self._initial_step + batch + 1
        if self._preemption_handler is not None:
            self._preemption_handler.save_checkpoint_if_preempted()
        elif stopping.requested() is not None:
            self.stop_signal = stopping.requested()
            path = self.save()
            logger.warning("%s: saved %s at step %d; stopping.", self.stop_signal, path,
                           self._step)
            self._stop()
        if self._step // self.save_steps > previous // self.save_steps:
            self.save()

    def on_train_end(self, logs=None):
        try:
            if not self.preempted:
                self.save()
        finally:
            self.restore_signal_handlers()
        self._preemption_handler = None
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)


class MetricsLogger(keras.callbacks.Callback):
    """Every `log_steps` steps: the metrics averaged over those steps, the learning rate
    and the throughput go to TensorBoard (`log_dir`) and to a JSON-lines file; then the
    metrics are reset so the next window starts fresh. `last` holds the latest record.

    Keras's metrics are means since the start of the epoch; resetting them per window
    makes each logged value describe the recent steps, and the last window is the final
    accuracy and loss of the run.

    Args:
        log_dir: TensorBoard directory (None: no event files).
        log_steps: steps per window.
        jsonl_path: the JSON-lines file (None: none).
        global_batch_size: sequences per step, for `examples_per_second`.
        initial_step: the step training resumes at.

    Example:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> log = MetricsLogger(None, log_steps=2, global_batch_size=2)
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2, verbose=0,
    ...               callbacks=[log])
    >>> log.last["step"], sorted(log.last)[:3]
    (4, ['examples_per_second', 'learning_rate', 'loss'])
    """

    def __init__(self, log_dir: str | None, log_steps: int, *, jsonl_path: str | None = None,
                 global_batch_size: int | None = None, initial_step: int = 0):
        super().__init__()
        if log_steps < 1:
            raise ArgumentError(f"log_steps must be >= 1, got {log_steps}.", field="log_steps")
        self.log_dir = log_dir
        self.log_steps = log_steps
        self.jsonl_path = jsonl_path
        self.global_batch_size = global_batch_size
        self.initial_step = initial_step
        self.last: dict = {}
        self._writer = None

    def on_train_begin(self, logs=None):
        if self.log_dir:
            self._writer = tf.summary.create_file_writer(self.log_dir)
        self._window_start = self.initial_step
        self._window_time = time.monotonic()
        self._step = self.initial_step
        self._batch_logs: dict = {}

    def on_train_batch_end(self, batch, logs=None):
        previous, self._step = self._step, self.initial_step + batch + 1
        self._batch_logs = dict(logs or {})
        if self._step // self.log_steps > previous // self.log_steps:
            self._log(self._step)

    def on_train_end(self, logs=None):
        if self._step > self._window_start:
            self._log(self._step)
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _log(self, step: int):
        elapsed = max(time.monotonic() - self._window_time, 1e-9)
        steps = step - self._window_start
        record = {"step": step}
        record.update({k: float(v) for k, v in sorted(self._batch_logs.items())})
        # On JAX the optimizer's step (the rate's) and the metrics live in the trainer's
        # state: synced first, the reset below reaches the next steps too.
        sync_training_state(self.model)
        record["learning_rate"] = float(keras.ops.convert_to_numpy(
            self.model.optimizer.learning_rate))
        record["steps_per_second"] = steps / elapsed
        if self.global_batch_size:
            record["examples_per_second"] = steps * self.global_batch_size / elapsed
        self.last = record
        if self._writer is not None:
            with self._writer.as_default():
                for name, value in record.items():
                    if name != "step":
                        tf.summary.scalar(name, value, step=step)
            self._writer.flush()
        if self.jsonl_path:
            with open(self.jsonl_path, "a", encoding="utf-8") as f:
                f.write(fileio.json_text(record, sort_keys=False) + "\n")
        self.model.reset_metrics()
        self._window_start = step
        self._window_time = time.monotonic()
        self._batch_logs = {}


class ProgressBar(keras.callbacks.Callback):
    """A tqdm progress bar over the global steps, showing the logged loss and masked-LM
    and next-sentence accuracies; a resumed run starts the bar at `initial_step`.

    Example:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> bar = ProgressBar(total_steps=10, initial_step=6, disable=True)
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2, verbose=0,
    ...               callbacks=[bar])
    """

    _SHOWN = {"loss": "loss", "masked_lm_accuracy": "mlm_acc",
              "next_sentence_accuracy": "nsp_acc"}

    def __init__(self, total_steps: int, *, initial_step: int = 0, disable: bool = False,
                 description: str = "pretrain"):
        super().__init__()
        self.total_steps = total_steps
        self.initial_step = initial_step
        self.disable = disable
        self.description = description
        self._bar = None

    def on_train_begin(self, logs=None):
        self._bar = tqdm.tqdm(total=self.total_steps, initial=self.initial_step,
                              unit="step", desc=self.description, dynamic_ncols=True,
                              disable=self.disable)

    def on_train_batch_end(self, batch, logs=None):
        step = self.initial_step + batch + 1
        shown = {short: f"{float(logs[name]):.4f}" for name, short in self._SHOWN.items()
                 if logs and name in logs}
        self._bar.set_postfix(shown, refresh=False)
        self._bar.update(step - self._bar.n)

    def on_train_end(self, logs=None):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

