"""BERT pretraining (masked LM + next sentence) through `model.fit` on a tf.distribute
strategy (on JAX and PyTorch: over the local devices, see
`keras_bert.training.distribute.LocalDevices`): what `keras-bert pretrain` runs.

`Pretraining` checks everything that can be wrong before it writes anything: the output
directory, the data against the config, the vocab files against the data, the config and
the init checkpoint, the batch against the replicas, and the settings of a run the output
directory already holds. It then builds the `BertPretrainer` and BERT's optimizer under
the strategy's scope and resumes from the run's last checkpoint (weights, optimizer, step
and input position). `fit()` trains with periodic atomic checkpoints, TensorBoard logs
and a progress bar, and ends with the encoder saved in the run directory
(`keras_bert.load_encoder(output_dir)` loads it) and a `metrics.json` with the final
masked-LM and next-sentence accuracy and loss. What the run directory holds, and when a
rerun resumes, extends or replaces its run: `keras_bert.training.run_directory`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time

import keras
import tensorflow as tf

from keras_bert.core import fileio, input_files
from keras_bert.core.errors import ArgumentError
from keras_bert.core.run_files import LOGS, TRAIN_LOG
from keras_bert.data import inspection
from keras_bert.model.config import BertConfig
from keras_bert.model.losses import pretraining_losses
from keras_bert.training import distribute, preflight
from keras_bert.training.building import (
    build_dataset,
    build_pretrainer,
    check_masking_vocab,
    resolve_model_config,
)
from keras_bert.training.callbacks import MetricsLogger, ProgressBar, TrainingCheckpoint
from keras_bert.training.optimization import create_optimizer
from keras_bert.training.options import PretrainingOptions
from keras_bert.training.run_directory import RunDirectory, run_settings

logger = logging.getLogger("keras_bert")

# The most steps `steps_per_execution` chooses by itself: on TPU one host round trip per
# up to 1000 steps. On CPU 1: measured with `--config demo` of `git show
# 9273a48:benchmarks/pretraining_throughput.py` on a 2-core AVX2 CPU, 20 steps per
# execution trained the demo's tiny model no faster (steps per CPU second 1.76 against 1.93 at batch 64, 3.27 against
# 3.45 at batch 32): its step is arithmetic, and the host work around it is ~3%. A
# value given in the options is used as it is.
TPU_STEPS_PER_EXECUTION_CAP = 1000
CPU_GPU_STEPS_PER_EXECUTION_CAP = 1
# The default options (frozen: one instance serves every call).
_DEFAULT_OPTIONS = PretrainingOptions()


def _largest_divisor(n: int, cap: int) -> int:
    return max(d for d in range(1, min(n, cap) + 1) if n % d == 0)


def steps_per_execution(options: PretrainingOptions, tpu: bool, start_step: int = 0,
                        replicas: int = 1) -> int:
    """Training steps per `tf.function` call (Keras's `steps_per_execution`) for a run
    that starts at `start_step`: `options.steps_per_execution` if given (it must divide
    the checkpoint, logging and training-step counts), else the largest divisor of all
    three, and of `start_step`, up to `TPU_STEPS_PER_EXECUTION_CAP` on TPU and
    `CPU_GPU_STEPS_PER_EXECUTION_CAP` (1) elsewhere; 1 with several replicas off TPU
    (Keras 3's multi-step train loop fails under MirroredStrategy: "You must feed a
    value for placeholder tensor"). Callbacks run between executions, so
    every checkpoint and log step stays on its interval, and a run resumed at any saved
    step ends exactly at `num_train_steps`. A resumed run whose `start_step` the given
    value does not divide (it was stopped under another value) runs with their greatest
    common divisor.

    Raises:
        ArgumentError: the given value does not divide an interval (field
            "steps_per_execution").

    Example:

    >>> steps_per_execution(PretrainingOptions(num_train_steps=2000, num_warmup_steps=200,
    ...     save_checkpoints_steps=400, log_steps=100), tpu=True)
    100
    >>> steps_per_execution(PretrainingOptions(num_train_steps=2000, num_warmup_steps=200,
    ...     save_checkpoints_steps=400, log_steps=100), tpu=True, start_step=30)
    10
    >>> steps_per_execution(PretrainingOptions(num_train_steps=2000, num_warmup_steps=200,
    ...     save_checkpoints_steps=400, log_steps=100), tpu=False)
    1
    """
    intervals = [options.micro_steps(options.save_checkpoints_steps),
                 options.micro_steps(options.num_train_steps),
                 options.micro_steps(options.log_steps)]
    if options.steps_per_execution is not None:
        steps = options.steps_per_execution
        for name, interval in zip(("save_checkpoints_steps", "num_train_steps",
                                   "log_steps"), intervals):
            if interval % steps:
                raise ArgumentError(
                    f"{name} ({interval} steps) must be a multiple of steps_per_execution "
                    f"{steps}: checkpoints and logs happen between executions.",
                    field="steps_per_execution")
        if start_step % steps:
            logger.warning("Resuming at step %d, which steps_per_execution %d does not "
                           "divide: running %d steps per execution.", start_step, steps,
                           math.gcd(steps, start_step))
        return math.gcd(steps, start_step)
    if not tpu and replicas > 1:
        return 1
    cap = TPU_STEPS_PER_EXECUTION_CAP if tpu else CPU_GPU_STEPS_PER_EXECUTION_CAP
    return _largest_divisor(math.gcd(*intervals, start_step), cap)


def _build_from_element_spec(model: keras.Model, element_spec, strategy) -> None:
    """Makes `fit` build the compiled losses and metrics from the dataset's element spec.

    Under a strategy, Keras 3's TF trainer otherwise pulls one batch from a first
    iterator over the dataset just to learn its shapes, then trains from a second
    iterator. Besides skipping a batch, the second iterator over a seeded, reshuffling
    tf.data pipeline does not reliably replay the first one's order (the shuffle seeds
    are shared between iterators and the first one's prefetching advances them), which
    would make the data order, and so resumed and distributed runs, irreproducible. It
    also averages the nested batch in one `strategy.reduce`, which
    `MultiWorkerMirroredStrategy` rejects. Only shapes and dtypes are needed, and the
    element spec has them; this instance-level override passes it instead.
    """

    if not distribute.on_tensorflow():
        # JAX's and PyTorch's `fit` build from a batch only what is not built yet; the
        # loss and metric variables are made in the distribution, like the weights.
        with strategy.scope():
            model._symbolic_build(data_batch=element_spec)
        return

    def maybe_symbolic_build(iterator=None, data_batch=None):
        with model.distribute_strategy.scope():
            model._symbolic_build(data_batch=element_spec)

    model._maybe_symbolic_build = maybe_symbolic_build


def _return_vector_logs(model: keras.Model) -> None:
    """Lets `fit` log under `MultiWorkerMirroredStrategy`: Keras 3's TF trainer reduces
    every logged value over workers with `strategy.reduce("MEAN", value, axis=0)`, which
    fails on scalars ("Invalid reduction dimension 0 for input with 0 dimensions"). The
    step returns them as [1] tensors instead; they are global already (metric variables
    are aggregated over replicas), so the mean over workers is the same value."""
    train_step = model.train_step

    def train_step_with_vector_logs(data):
        return {name: tf.reshape(value, [1]) for name, value in train_step(data).items()}

    model.train_step = train_step_with_vector_logs


class Pretraining:
    """One pretraining run, set up and ready to `fit`.

    Creating it does everything that can fail before training, and writes nothing:
    checks that `output_dir` can be written, resolves the strategy, checks the data,
    config, vocab files, init checkpoint and batch against each other and the settings
    of a run `output_dir` already holds, builds the `BertPretrainer` and BERT's
    optimizer under the strategy's scope, and restores the run's last checkpoint.
    `fit()` then creates or updates the run directory, trains to `num_train_steps` and
    writes the outputs. `run_pretraining` does both; the object is there to inspect the
    model or the dataset in between.

    Args:
        input_file: comma-separated globs of TFRecords from `create-pretraining-data`.
        output_dir: the run directory (see `keras_bert.training.run_directory`); rerunning with the same
            directory and settings resumes from its last checkpoint.
        config: a `BertConfig`, a preset name or a config JSON; None: the
            `init_checkpoint`'s config, else "base".
        options: `PretrainingOptions`.
        vocab_file: the vocab.txt; checked against the embedding table, the data and
            the init checkpoint's vocab.txt, and copied into the run directory.
        strategy: a `tf.distribute.Strategy` or a name for `resolve_strategy` (on JAX
            and PyTorch: "auto" or "one_device", or a `LocalDevices`).
        tpu: the TPU for `strategy="tpu"`.
        init_checkpoint: weights to start from (Google, Hugging Face or keras_bert);
            a run that resumes from its own checkpoint only takes the config from it.
            A vocab.txt beside it is checked against the data and `vocab_file`.
        progress: show a progress bar.
        overwrite: when `output_dir` holds a run, start a new one in its place (its
            files are removed when `fit()` starts, not before), whatever its settings.
        resume: when `output_dir` holds a run whose settings differ only in
            `num_train_steps`, continue it to the new step count.

    Attributes:
        strategy, model, dataset: what `fit` uses.
        start_step, total_steps: the step restored (0 for a new run) and the last one,
            both in training steps (micro-batches).
        start_kind: "started", "resumed", "extended", "restarted" (a previous start
            saved nothing) or "overwrote".
        run_config: the settings recorded in `run_config.json`.

    Raises:
        OutputError: `output_dir` is a file or cannot be written.
        InputNotFoundError: no input file, vocab file or init checkpoint there.
        DataError: malformed or truncated TFRecords, a malformed config file.
        MismatchError: data that does not fit the config or options, vocabs that do not
            belong to the data or checkpoint, a config that is not the checkpoint's, or
            a run in `output_dir` with other settings.
        ArgumentError: an option out of range (named by its field), a batch that does
            not split over the replicas.
        ConnectionError: an unreachable TPU.

    Example:

    >>> run = Pretraining("data/*.tfrecord", "runs/tiny", "tiny",
    ...                   vocab_file="uncased_L-12_H-768_A-12/vocab.txt")  # doctest: +SKIP
    >>> run.start_step, run.model.count_params()  # doctest: +SKIP
    (0, 4416330)
    """

    def __init__(self, input_file: str, output_dir: str,
                 config: BertConfig | str | None = None,
                 options: PretrainingOptions = _DEFAULT_OPTIONS, *,
                 vocab_file: str | None = None,
                 strategy: tf.distribute.Strategy | str = "auto", tpu: str | None = None,
                 init_checkpoint: str | None = None, progress: bool = True,
                 overwrite: bool = False, resume: bool = False):
        if overwrite and resume:
            raise ArgumentError("overwrite and resume exclude each other: overwrite starts "
                                "a new run, resume continues the old one.", field="overwrite")
        output_dir = os.fspath(output_dir)
        vocab_file = vocab_file and os.fspath(vocab_file)
        init_checkpoint = init_checkpoint and os.fspath(init_checkpoint)
        fileio.check_writable(output_dir, kind="directory", what="output_dir")
        # Multi-worker and TPU strategies configure the runtime: before any other TF op.
        if isinstance(strategy, str):
            strategy = distribute.resolve_strategy(strategy, tpu)
        self.strategy = strategy
        self.options = options
        self.output_dir = output_dir
        self.progress = progress
        self.info = info = inspection.inspect_pretraining_data(input_file)
        preflight.check_data_flags(info, max_seq_length=options.max_seq_length,
                                    max_predictions_per_seq=options.max_predictions_per_seq)

        # The config, and everything it must agree with, before building anything.
        bert_config, vocab_source = self._check_config_and_vocab(config, init_checkpoint,
                                                                 vocab_file)

        replicas = strategy.num_replicas_in_sync
        per_replica = preflight.check_batch(options.train_batch_size, replicas,
                                             options.gradient_accumulation_steps)
        on_tpu = distribute.is_tpu(strategy)
        # Checked now; the resumed step (below) may lower it.
        steps_per_execution(options, on_tpu, replicas=replicas)
        next_sentence = (options.next_sentence if options.next_sentence is not None
                         else info.settings.get("next_sentence_prediction", True))
        max_predictions = (info.max_predictions_per_seq or options.max_predictions_per_seq
                           or info.settings.get("max_predictions_per_seq", 20))
        self.is_chief = distribute.is_chief(strategy)
        settings = run_settings(options, next_sentence, bert_config, info,
                                vocab_source and input_files.file_sha256(vocab_source), init_checkpoint)
        self.start_kind = self.run_directory.start_kind(settings, overwrite=overwrite,
                                                        resume=resume)
        self._replace_previous = self.start_kind in ("restarted", "overwrote")

        policy = distribute.resolve_precision(options.mixed_precision, strategy)
        self.model = model = self._compiled_model(bert_config, init_checkpoint,
                                                  next_sentence, policy)
        self.checkpoint = self._new_checkpoint()
        self._restore_start_step()
        # Set before `fit` builds its train function (Keras reads it there).
        model.steps_per_execution = execution_steps = steps_per_execution(
            options, on_tpu, self.start_step, replicas)
        self.micro_batch_size = options.train_batch_size // options.gradient_accumulation_steps
        self.dataset = build_dataset(
            info, model, self.micro_batch_size, max_predictions, seed=options.seed,
            shuffle_buffer_size=options.shuffle_buffer_size, skip_batches=self.start_step,
            vocab_file=vocab_file)
        _build_from_element_spec(model, self.dataset.element_spec, self.strategy)
        if on_tpu or model.jit_compile:
            preflight.check_static_shapes(self.dataset.element_spec)
        self.run_config = {
            "options": dataclasses.asdict(options), "bert_config": bert_config.to_dict(),
            "input_files": list(info.files), "data_settings": info.settings,
            "strategy": type(strategy).__name__, "num_replicas": replicas,
            "num_workers": distribute.num_workers(strategy),
            "per_replica_batch_size": per_replica, "steps_per_execution": execution_steps,
            "dtype_policy": policy, "jit_compile": bool(model.jit_compile),
            "init_checkpoint": init_checkpoint, "vocab_file": vocab_file,
            "settings": settings,
        }
        self._log_start(bert_config, replicas, policy, per_replica)

    def _check_config_and_vocab(self, config, init_checkpoint: str | None,
                                vocab_file: str | None) -> tuple[BertConfig, str | None]:
        """Resolves the model config and checks it, the data and the vocab files against
        each other, so that a mismatch fails before anything is built; sets
        `run_directory`. Returns the config and the vocab file the run records (the
        given one, else the init checkpoint's)."""
        info = self.info
        bert_config, config_source, checkpoint = resolve_model_config(
            config, init_checkpoint, vocab_file)
        preflight.check_data_fits_model(info, bert_config, config_source)
        checkpoint_vocab = checkpoint.vocab_file if checkpoint else None
        preflight.check_vocab(vocab_file, bert_config, info,
                               checkpoint_vocab=checkpoint_vocab,
                               pretrained=bool(init_checkpoint), config_source=config_source)
        vocab_source = vocab_file or checkpoint_vocab
        self.run_directory = RunDirectory(self.output_dir, vocab_source)
        if vocab_source and not info.vocab:
            logger.warning(
                "The TFRecords in %s have no pretraining_data*.json sidecar with the "
                "checksum of the vocab they were made with, so it cannot be checked against "
                "%s: make sure they were made with that vocab (token ids up to %d seen).",
                os.path.dirname(info.files[0]) or ".", vocab_source, info.max_token_id)
        check_masking_vocab(info, vocab_file)
        return bert_config, vocab_source

    def _compiled_model(self, bert_config: BertConfig, init_checkpoint: str | None,
                        next_sentence: bool, policy: str) -> keras.Model:
        """The `BertPretrainer` and its optimizer, built under the strategy's scope and
        the run's precision policy, which is then put back so that later models do not
        inherit it."""
        options, strategy = self.options, self.strategy
        previous_policy = keras.mixed_precision.global_policy()
        keras.mixed_precision.set_global_policy(policy)
        try:
            keras.utils.set_random_seed(options.seed)
            with strategy.scope():
                model = build_pretrainer(bert_config, init_checkpoint, next_sentence)
                optimizer = create_optimizer(
                    options.learning_rate, options.num_train_steps, options.num_warmup_steps,
                    optimizer=options.optimizer, weight_decay=options.weight_decay,
                    gradient_accumulation_steps=options.gradient_accumulation_steps)
                model.compile(optimizer=optimizer, loss=pretraining_losses(next_sentence),
                              metrics="auto",
                              jit_compile="auto" if options.jit_compile is None
                              else options.jit_compile)
                model.optimizer.build(model.trainable_variables)
        finally:
            # The layers keep their policy; later models should not inherit this one.
            keras.mixed_precision.set_global_policy(previous_policy)
        if distribute.num_workers(strategy) > 1:
            _return_vector_logs(model)
        return model

    def _restore_start_step(self) -> None:
        """Sets `start_step` (restored from the run's last checkpoint, 0 for a new run)
        and `total_steps`; a run can be extended but not shortened."""
        options = self.options
        # A run that replaces the directory's old one starts from step 0.
        self.start_step = 0 if self._replace_previous else self.checkpoint.restore()
        self.total_steps = options.micro_steps(options.num_train_steps)
        if self.start_step > self.total_steps:
            raise ArgumentError(
                f"num_train_steps {options.num_train_steps} ({self.total_steps} steps) is "
                f"below the step the run in {self.output_dir} has reached "
                f"({self.start_step}); a run can be extended, not shortened.",
                field="num_train_steps")

    def _log_start(self, bert_config: BertConfig, replicas: int, policy: str,
                   per_replica: int) -> None:
        """Logs the model, the replicas, the batch and whether the run starts or resumes."""
        options, strategy = self.options, self.strategy
        logger.info("Pretraining L%d/H%d on %d replica(s) (%s, %s): global batch %d (%d per "
                    "replica%s), %s at step %d of %d.", bert_config.num_layers,
                    bert_config.hidden_size, replicas, type(strategy).__name__, policy,
                    options.train_batch_size, per_replica,
                    f", {options.gradient_accumulation_steps} micro-batches per update"
                    if options.gradient_accumulation_steps > 1 else "",
                    "resuming" if self.start_step else "starting", self.start_step,
                    self.total_steps)

    def _new_checkpoint(self) -> TrainingCheckpoint:
        options = self.options
        return TrainingCheckpoint(
            self.run_directory.checkpoints, self.model,
            options.micro_steps(options.save_checkpoints_steps),
            max_to_keep=options.keep_checkpoints, strategy=self.strategy)

    def _prepare_output_dir(self) -> None:
        """Creates or updates the run directory (the chief's part of starting)."""
        self.run_directory.prepare(self.run_config, kind=self.start_kind,
                                   start_step=self.start_step,
                                   replace_previous=self._replace_previous)

    def fit(self, callbacks=()) -> dict:
        """Trains from `start_step` to the end; returns the final metrics (also written
        to `metrics.json`), or `{"preempted": True, "signal", "step", "checkpoint"}`
        when SIGTERM or SIGINT stopped the run after saving a checkpoint (`signal`: the
        signal's name, "SIGTERM" or "SIGINT"). `callbacks` are
        further Keras callbacks (the `batch` they get counts from `start_step`: add it
        for the global step).

        Raises:
            DataError: an input file turned out to be corrupted while training."""
        output_dir, options = self.output_dir, self.options
        metrics_path = self.run_directory.metrics
        if (not self._replace_previous and self.start_step >= self.total_steps
                and fileio.exists(metrics_path)):
            logger.info("%s already finished at step %d.", output_dir, self.start_step)
            return fileio.read_json(metrics_path)
        if self.is_chief:
            self._prepare_output_dir()
        if self._replace_previous:
            # The old checkpoints are gone: a manager that saw them must not track them.
            self.checkpoint = self._new_checkpoint()
            self._replace_previous = False
        metrics_logger = MetricsLogger(
            os.path.join(output_dir, LOGS, "train") if self.is_chief else None,
            min(options.micro_steps(options.log_steps), self.total_steps),
            jsonl_path=os.path.join(output_dir, TRAIN_LOG) if self.is_chief else None,
            global_batch_size=self.micro_batch_size, initial_step=self.start_step)
        progress = ProgressBar(self.total_steps, initial_step=self.start_step,
                               disable=not (self.progress and self.is_chief))
        started = time.monotonic()
        try:
            if self.start_step < self.total_steps:
                with distribute.fit_scope(self.strategy):
                    self.model.fit(
                        self.dataset, epochs=1,
                        steps_per_epoch=self.total_steps - self.start_step, verbose=0,
                        shuffle=False,
                        callbacks=[self.checkpoint, metrics_logger, progress, *callbacks])
        except tf.errors.DataLossError as e:
            raise inspection.data_loss_error(self.info.files, e) from e
        finally:
            # Also when fit raised (Keras then skips on_train_end).
            self.checkpoint.restore_signal_handlers()
        if self.checkpoint.preempted:
            return {"preempted": True, "signal": self.checkpoint.stop_signal,
                    "step": self.checkpoint.step,
                    "checkpoint": self.checkpoint.latest_checkpoint}
        metrics = {**metrics_logger.last, "step": options.num_train_steps,
                   "train_seconds": time.monotonic() - started,
                   "global_batch_size": options.train_batch_size,
                   "num_replicas": self.strategy.num_replicas_in_sync}
        if self.is_chief:
            self.run_directory.export_encoder(self.model.encoder)
            fileio.write_json(metrics_path, metrics)
        return metrics


def run_pretraining(input_file: str, output_dir: str,
                    config: BertConfig | str | None = None,
                    options: PretrainingOptions = _DEFAULT_OPTIONS, **kwargs) -> dict:
    """Pretrains BERT on TFRecords of masked-LM/NSP instances; resumes an interrupted run.

    `Pretraining(input_file, output_dir, config, options, **kwargs).fit()`: see
    `Pretraining` for the arguments (`overwrite`, `resume`, ...) and the errors raised
    before training starts.

    Returns:
        The final metrics (also in `output_dir/metrics.json`): `masked_lm_accuracy`,
        `masked_lm_loss`, `next_sentence_accuracy`, `next_sentence_loss`, `loss` over
        the last logging window, `step`, and throughput. A run stopped by SIGTERM or
        SIGINT returns `{"preempted": True, "signal": "SIGTERM" or "SIGINT", "step":
        ...}` after saving a checkpoint.

    Example:

    >>> metrics = run_pretraining("data/*.tfrecord", "runs/tiny", "tiny",
    ...     PretrainingOptions(num_train_steps=500, num_warmup_steps=50),
    ...     vocab_file="uncased_L-12_H-768_A-12/vocab.txt")  # doctest: +SKIP
    >>> metrics["masked_lm_accuracy"]  # doctest: +SKIP
    0.31
    """
    return Pretraining(input_file, output_dir, config, options, **kwargs).fit()
