"""BERT pretraining (masked LM + next sentence) through `model.fit` on a tf.distribute
strategy: what `keras-bert pretrain` runs.

`run_pretraining` checks the data against the config before anything trains, builds the
`BertPretrainer` and BERT's optimizer under the strategy's scope, resumes from the run's
last checkpoint (weights, optimizer, step and input position), trains with periodic
atomic checkpoints, TensorBoard logs and a progress bar, and ends with the encoder saved
in the run directory (`keras_bert.load_encoder(output_dir)` loads it) and a
`metrics.json` with the final masked-LM and next-sentence accuracy and loss.

Run directory layout::

    output_dir/
      keras_bert_config.json, encoder.weights.h5   the trained encoder
      metrics.json                                 final metrics (last logging window)
      run_config.json                              options, model config, data, strategy
      train_log.jsonl                              one JSON line per logging window
      checkpoints/ckpt-STEP.*                      training state, for resuming
      logs/train/                                  TensorBoard event files
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import shutil
import tempfile
import time

import keras
import tensorflow as tf

from keras_bert.checkpoints import (
    KERAS_BERT_CONFIG,
    CheckpointError,
    load_encoder,
    load_pretrainer,
    read_config,
    save_encoder,
)
from keras_bert.config import PRESETS, BertConfig
from keras_bert.data.masking import MaskedLmMasker
from keras_bert.data.tfrecords import pretraining_dataset
from keras_bert.encoder import BertEncoder
from keras_bert.losses import pretraining_losses
from keras_bert.models import BertPretrainer
from keras_bert.training import distribute, validation
from keras_bert.training.callbacks import (
    MetricsLogger,
    ProgressBar,
    TrainingCheckpoint,
    write_json,
)
from keras_bert.training.optimization import OPTIMIZERS, create_optimizer

logger = logging.getLogger("keras_bert")

# The exit status of a run stopped by SIGTERM after saving (128 + SIGTERM, the code
# schedulers read as "terminated, restart me").
PREEMPTED_EXIT_CODE = 143
_MAX_STEPS_PER_EXECUTION = 1000


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """How to pretrain; the defaults are the paper's (Appendix A.2) where it gives one.

    Args:
        train_batch_size: sequences per optimizer update, over all replicas (global).
        max_seq_length, max_predictions_per_seq: None takes them from the TFRecords;
            a value that differs from the data is an error.
        num_train_steps: optimizer updates.
        num_warmup_steps: updates of linear learning-rate warmup.
        learning_rate: the peak learning rate.
        optimizer: "adamw" (BERT's) or "lamb" (for large batches).
        weight_decay: decoupled weight decay, not applied to LayerNorm and biases.
        gradient_accumulation_steps: micro-batches per update; each micro-batch is
            `train_batch_size / gradient_accumulation_steps` sequences. The step
            options count updates; the progress bar, the checkpoint numbers and the
            `step` of train_log.jsonl count micro-batches.
        steps_per_execution: steps per `tf.function` call (Keras's
            `steps_per_execution`); None: 1, or on TPU the largest divisor of the
            checkpoint and logging intervals up to 1000.
        save_checkpoints_steps: updates between checkpoints.
        keep_checkpoints: checkpoints kept.
        log_steps: updates per logging window (TensorBoard, train_log.jsonl).
        jit_compile: compile the train step with XLA; None lets Keras decide.
        mixed_precision: "auto" (bfloat16 on TPU, float16 with loss scaling on GPU,
            float32 on CPU), "float32", "mixed_float16" or "mixed_bfloat16".
        seed: seeds the initialization, dropout and the input order.
        shuffle_buffer_size: records in the input shuffle buffer.
        next_sentence: train the NSP head; None: as the data was made (its sidecar),
            else True.

    Example:

    >>> PretrainingOptions(num_train_steps=1000, num_warmup_steps=100).learning_rate
    0.0001
    """

    train_batch_size: int = 32
    max_seq_length: int | None = None
    max_predictions_per_seq: int | None = None
    num_train_steps: int = 100_000
    num_warmup_steps: int = 10_000
    learning_rate: float = 1e-4
    optimizer: str = "adamw"
    weight_decay: float = 0.01
    gradient_accumulation_steps: int = 1
    steps_per_execution: int | None = None
    save_checkpoints_steps: int = 1000
    keep_checkpoints: int = 3
    log_steps: int = 100
    jit_compile: bool | None = None
    mixed_precision: str = "auto"
    seed: int = 12345
    shuffle_buffer_size: int = 10_000
    next_sentence: bool | None = None

    def __post_init__(self):
        problems = []
        for name in ("train_batch_size", "num_train_steps", "gradient_accumulation_steps",
                     "save_checkpoints_steps", "keep_checkpoints", "log_steps",
                     "shuffle_buffer_size"):
            if getattr(self, name) < 1:
                problems.append(f"--{name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_seq_length", "max_predictions_per_seq", "steps_per_execution"):
            value = getattr(self, name)
            if value is not None and value < 1:
                problems.append(f"--{name} must be >= 1, got {value}")
        if not 0 <= self.num_warmup_steps <= self.num_train_steps:
            problems.append(f"--num_warmup_steps must be in [0, --num_train_steps="
                            f"{self.num_train_steps}], got {self.num_warmup_steps}")
        if self.learning_rate <= 0:
            problems.append(f"--learning_rate must be > 0, got {self.learning_rate}")
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"--optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.mixed_precision not in distribute.PRECISIONS:
            problems.append(f"--mixed_precision must be one of {distribute.PRECISIONS}, got "
                            f"{self.mixed_precision!r}")
        if problems:
            raise ValueError("Invalid pretraining options: " + "; ".join(problems) + ".")

    def micro_steps(self, updates: int) -> int:
        """Training steps (micro-batches) for a number of optimizer updates."""
        return updates * self.gradient_accumulation_steps


def resolve_config(config: BertConfig | str | None, vocab_file: str | None = None
                   ) -> BertConfig:
    """A `BertConfig` from a config, a preset name or a config file.

    A preset takes the vocab's size when `vocab_file` is given (a preset describes the
    architecture, not a vocab); a config file is used exactly as written.

    Example:

    >>> resolve_config("tiny").num_layers
    2
    """
    if isinstance(config, BertConfig):
        return config
    config = config or "base"
    if os.path.isfile(config):
        return BertConfig.from_json_file(config)
    if config in PRESETS:
        overrides = {"vocab_size": validation.vocab_size_of(vocab_file)} if vocab_file else {}
        return BertConfig.from_preset(config, **overrides)
    raise ValueError(f"--config {config!r} is neither a preset ({sorted(PRESETS)}) nor a "
                     "config file.")


def _steps_per_execution(options: PretrainingOptions, tpu: bool) -> int:
    intervals = [options.micro_steps(options.save_checkpoints_steps),
                 options.micro_steps(options.num_train_steps),
                 options.micro_steps(options.log_steps)]
    if options.steps_per_execution is not None:
        steps = options.steps_per_execution
        for name, interval in zip(("--save_checkpoints_steps", "--num_train_steps",
                                   "--log_steps"), intervals):
            if interval % steps:
                raise ValueError(
                    f"{name} ({interval} steps) must be a multiple of --steps_per_execution "
                    f"{steps}: checkpoints and logs happen between executions.")
        return steps
    if not tpu:
        return 1
    steps = math.gcd(*intervals)
    return max(d for d in range(1, min(steps, _MAX_STEPS_PER_EXECUTION) + 1) if steps % d == 0)


def _build_pretrainer(config: BertConfig | None, init_checkpoint: str | None,
                      next_sentence: bool) -> BertPretrainer:
    if not init_checkpoint:
        return BertPretrainer(BertEncoder(config), next_sentence=next_sentence)
    # Check the config before reading any weights.
    checkpoint_config = read_config(init_checkpoint)
    if config is not None and config != checkpoint_config:
        differs = {k: (v, getattr(checkpoint_config, k))
                   for k, v in config.to_dict().items()
                   if getattr(checkpoint_config, k) != v}
        raise ValueError(f"--config differs from --init_checkpoint's config in {differs} "
                         "(given, checkpoint); leave --config out to use the checkpoint's.")
    try:
        loaded = load_pretrainer(init_checkpoint)
    except CheckpointError as e:
        logger.info("%s; starting the pretraining heads from scratch.", e)
        loaded = BertPretrainer(load_encoder(init_checkpoint), next_sentence=next_sentence)
    if loaded.next_sentence == next_sentence:
        return loaded
    model = BertPretrainer(loaded.encoder, next_sentence=next_sentence)
    model.masked_lm.set_weights(loaded.masked_lm.get_weights())
    return model


def _build_from_element_spec(model: keras.Model, element_spec) -> None:
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


def _export_encoder(encoder: BertEncoder, output_dir: str) -> None:
    """Saves the encoder into `output_dir` itself (beside the run's other files), each
    file renamed into place complete, the config last since it marks the directory as a
    keras_bert checkpoint."""
    staging = tempfile.mkdtemp(prefix=".encoder-", dir=output_dir)
    try:
        target = os.path.join(staging, "encoder")
        save_encoder(encoder, target)
        for name in sorted(os.listdir(target), key=lambda n: n == KERAS_BERT_CONFIG):
            os.replace(os.path.join(target, name), os.path.join(output_dir, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def build_dataset(info: validation.PretrainingDataInfo, model: BertPretrainer,
                  batch_size: int, max_predictions_per_seq: int, *, seed: int,
                  shuffle_buffer_size: int = 10_000, skip_batches: int = 0,
                  vocab_file: str | None = None) -> tf.data.Dataset:
    """The training input: `(x, y, sample_weight)` batches of `batch_size` sequences
    (the global micro-batch; the strategy splits it over replicas), shuffled by `seed`
    and starting after `skip_batches` batches, so a resumed run continues where the
    interrupted one stopped. Unmasked files (dynamic masking) are masked here with the
    sidecar's settings, which needs the vocab.

    Multi-worker runs shard the data by batch (`AutoShardPolicy.DATA`): every worker
    reads the same global batch and keeps its replicas' part of it, so a step sees the
    same examples for any number of workers.

    Example:

    >>> info = validation.inspect_pretraining_data("data/*.tfrecord")  # doctest: +SKIP
    >>> x, y, sample_weight = next(iter(build_dataset(info, model, 32, 20,
    ...                                               seed=1)))  # doctest: +SKIP
    >>> sorted(y)  # doctest: +SKIP
    ['masked_lm', 'next_sentence']
    """
    masker = None
    if info.dynamic_masking:
        if not vocab_file:
            raise ValueError(f"{info.files[0]} holds unmasked instances (dynamic masking); "
                             "pass --vocab_file so they can be masked while training.")
        masker = MaskedLmMasker(
            vocab_file, max_predictions_per_seq=max_predictions_per_seq,
            masked_lm_prob=info.settings.get("masked_lm_prob", 0.15),
            whole_word_mask=info.settings.get("do_whole_word_mask", False))
    dataset = pretraining_dataset(
        list(info.files), batch_size, max_seq_length=info.max_seq_length,
        max_predictions_per_seq=max_predictions_per_seq, is_training=True, masker=masker,
        seed=seed, shuffle_buffer_size=shuffle_buffer_size, drop_remainder=True,
        skip_batches=skip_batches)
    dataset = dataset.map(model.split_features, num_parallel_calls=tf.data.AUTOTUNE)
    data_options = tf.data.Options()
    data_options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA)
    return dataset.with_options(data_options)


class Pretraining:
    """One pretraining run, set up and ready to `fit`.

    Creating it does everything that can fail before training: resolves the strategy,
    checks the data, config, vocab and batch against each other, builds the
    `BertPretrainer` and BERT's optimizer under the strategy's scope, and restores the
    run's last checkpoint. `fit()` then trains to `num_train_steps` and writes the
    outputs. `run_pretraining` does both; the object is there to inspect the model or
    the dataset in between.

    Args:
        input_file: comma-separated globs of TFRecords from `create-pretraining-data`.
        output_dir: the run directory (see the module docstring); rerunning with the same
            directory resumes from its last checkpoint.
        config: a `BertConfig`, a preset name or a config JSON; None: the
            `init_checkpoint`'s config, else "base".
        options: `PretrainingOptions`.
        vocab_file: the vocab.txt; checked against the embedding table and the data.
        strategy: a `tf.distribute.Strategy` or a name for `resolve_strategy`.
        tpu: the TPU for `strategy="tpu"`.
        init_checkpoint: weights to start from (Google, Hugging Face or keras_bert);
            a run that resumes from its own checkpoint only takes the config from it.
        progress: show a progress bar.

    Attributes:
        strategy, model, dataset: what `fit` uses.
        start_step, total_steps: the step restored (0 for a new run) and the last one,
            both in training steps (micro-batches).
        run_config: the settings recorded in `run_config.json`.

    Raises:
        ValueError, FileNotFoundError, ConnectionError: for data that does not match the
        config or flags, a vocab larger than the embedding table, a batch that does not
        split over the replicas, or an unreachable TPU.

    Example:

    >>> run = Pretraining("data/*.tfrecord", "runs/tiny", "tiny",
    ...                   vocab_file="vocab.txt")  # doctest: +SKIP
    >>> run.start_step, run.model.count_params()  # doctest: +SKIP
    (0, 4416330)
    """

    def __init__(self, input_file: str, output_dir: str,
                 config: BertConfig | str | None = None,
                 options: PretrainingOptions = PretrainingOptions(), *,
                 vocab_file: str | None = None,
                 strategy: tf.distribute.Strategy | str = "auto", tpu: str | None = None,
                 init_checkpoint: str | None = None, progress: bool = True):
        # Multi-worker and TPU strategies configure the runtime: before any other TF op.
        if isinstance(strategy, str):
            strategy = distribute.resolve_strategy(strategy, tpu)
        self.strategy = strategy
        self.options = options
        self.output_dir = output_dir
        self.progress = progress
        info = validation.inspect_pretraining_data(input_file)
        validation.check_data_flags(info, max_seq_length=options.max_seq_length,
                                    max_predictions_per_seq=options.max_predictions_per_seq)
        explicit_config = None if config is None and init_checkpoint else resolve_config(
            config, vocab_file)
        replicas = strategy.num_replicas_in_sync
        per_replica = validation.check_batch(options.train_batch_size, replicas,
                                             options.gradient_accumulation_steps)
        on_tpu = distribute.is_tpu(strategy)
        steps_per_execution = _steps_per_execution(options, on_tpu)
        next_sentence = (options.next_sentence if options.next_sentence is not None
                         else info.settings.get("next_sentence_prediction", True))
        max_predictions = (info.max_predictions_per_seq or options.max_predictions_per_seq
                           or info.settings.get("max_predictions_per_seq", 20))
        self.is_chief = distribute.is_chief(strategy)
        os.makedirs(output_dir, exist_ok=True)

        policy = distribute.resolve_precision(options.mixed_precision, strategy)
        previous_policy = keras.mixed_precision.global_policy()
        keras.mixed_precision.set_global_policy(policy)
        try:
            keras.utils.set_random_seed(options.seed)
            with strategy.scope():
                model = _build_pretrainer(explicit_config, init_checkpoint, next_sentence)
                bert_config = model.encoder.config
                validation.check_data_fits_model(info, bert_config)
                if vocab_file:
                    validation.check_vocab(vocab_file, bert_config, info)
                optimizer = create_optimizer(
                    options.learning_rate, options.num_train_steps, options.num_warmup_steps,
                    optimizer=options.optimizer, weight_decay=options.weight_decay,
                    gradient_accumulation_steps=options.gradient_accumulation_steps)
                model.compile(optimizer=optimizer, loss=pretraining_losses(next_sentence),
                              metrics="auto", steps_per_execution=steps_per_execution,
                              jit_compile="auto" if options.jit_compile is None
                              else options.jit_compile)
                model.optimizer.build(model.trainable_variables)
        finally:
            # The layers keep their policy; later models should not inherit this one.
            keras.mixed_precision.set_global_policy(previous_policy)
        if distribute.num_workers(strategy) > 1:
            _return_vector_logs(model)
        self.model = model
        self.checkpoint = TrainingCheckpoint(
            os.path.join(output_dir, "checkpoints"), model,
            options.micro_steps(options.save_checkpoints_steps),
            max_to_keep=options.keep_checkpoints, strategy=strategy)
        self.start_step = self.checkpoint.restore()
        self.total_steps = options.micro_steps(options.num_train_steps)
        self.micro_batch_size = options.train_batch_size // options.gradient_accumulation_steps
        self.dataset = build_dataset(
            info, model, self.micro_batch_size, max_predictions, seed=options.seed,
            shuffle_buffer_size=options.shuffle_buffer_size, skip_batches=self.start_step,
            vocab_file=vocab_file)
        _build_from_element_spec(model, self.dataset.element_spec)
        if on_tpu or model.jit_compile:
            validation.check_static_shapes(self.dataset.element_spec)
        self.run_config = {
            "options": dataclasses.asdict(options), "bert_config": bert_config.to_dict(),
            "input_files": list(info.files), "data_settings": info.settings,
            "strategy": type(strategy).__name__, "num_replicas": replicas,
            "num_workers": distribute.num_workers(strategy),
            "per_replica_batch_size": per_replica, "steps_per_execution": steps_per_execution,
            "dtype_policy": policy, "jit_compile": bool(model.jit_compile),
            "init_checkpoint": init_checkpoint and os.fspath(init_checkpoint),
            "vocab_file": vocab_file and os.fspath(vocab_file),
        }
        logger.info("Pretraining L%d/H%d on %d replica(s) (%s, %s): global batch %d (%d per "
                    "replica%s), %s at step %d of %d.", bert_config.num_layers,
                    bert_config.hidden_size, replicas, type(strategy).__name__, policy,
                    options.train_batch_size, per_replica,
                    f", {options.gradient_accumulation_steps} micro-batches per update"
                    if options.gradient_accumulation_steps > 1 else "",
                    "resuming" if self.start_step else "starting", self.start_step,
                    self.total_steps)

    def fit(self, callbacks=()) -> dict:
        """Trains from `start_step` to the end; returns the final metrics (also written
        to `metrics.json`), or `{"preempted": True, "step", "checkpoint"}` when SIGTERM
        stopped the run after saving. `callbacks` are further Keras callbacks (the
        `batch` they get counts from `start_step`: add it for the global step)."""
        output_dir, options = self.output_dir, self.options
        metrics_path = os.path.join(output_dir, "metrics.json")
        if self.start_step >= self.total_steps and os.path.isfile(metrics_path):
            logger.info("%s already finished at step %d.", output_dir, self.start_step)
            with open(metrics_path, encoding="utf-8") as f:
                return json.load(f)
        if self.is_chief:
            write_json(os.path.join(output_dir, "run_config.json"), self.run_config)
        metrics_logger = MetricsLogger(
            os.path.join(output_dir, "logs", "train") if self.is_chief else None,
            min(options.micro_steps(options.log_steps), self.total_steps),
            jsonl_path=os.path.join(output_dir, "train_log.jsonl") if self.is_chief else None,
            global_batch_size=self.micro_batch_size, initial_step=self.start_step)
        progress = ProgressBar(self.total_steps, initial_step=self.start_step,
                               disable=not (self.progress and self.is_chief))
        started = time.monotonic()
        if self.start_step < self.total_steps:
            self.model.fit(self.dataset, epochs=1,
                           steps_per_epoch=self.total_steps - self.start_step, verbose=0,
                           shuffle=False,
                           callbacks=[self.checkpoint, metrics_logger, progress,
                                      *callbacks])
        if self.checkpoint.preempted:
            return {"preempted": True, "step": self.checkpoint.step,
                    "checkpoint": self.checkpoint.latest_checkpoint}
        metrics = {**metrics_logger.last, "step": options.num_train_steps,
                   "train_seconds": time.monotonic() - started,
                   "global_batch_size": options.train_batch_size,
                   "num_replicas": self.strategy.num_replicas_in_sync}
        if self.is_chief:
            _export_encoder(self.model.encoder, output_dir)
            write_json(metrics_path, metrics)
        return metrics


def run_pretraining(input_file: str, output_dir: str,
                    config: BertConfig | str | None = None,
                    options: PretrainingOptions = PretrainingOptions(), **kwargs) -> dict:
    """Pretrains BERT on TFRecords of masked-LM/NSP instances; resumes an interrupted run.

    `Pretraining(input_file, output_dir, config, options, **kwargs).fit()`: see
    `Pretraining` for the arguments and the errors raised before training starts.

    Returns:
        The final metrics (also in `output_dir/metrics.json`): `masked_lm_accuracy`,
        `masked_lm_loss`, `next_sentence_accuracy`, `next_sentence_loss`, `loss` over
        the last logging window, `step`, and throughput. A run stopped by SIGTERM returns
        `{"preempted": True, "step": ...}` after saving a checkpoint.

    Example:

    >>> metrics = run_pretraining("data/*.tfrecord", "runs/tiny", "tiny",
    ...     PretrainingOptions(num_train_steps=500, num_warmup_steps=50),
    ...     vocab_file="vocab.txt")  # doctest: +SKIP
    >>> metrics["masked_lm_accuracy"]  # doctest: +SKIP
    0.31
    """
    return Pretraining(input_file, output_dir, config, options, **kwargs).fit()
