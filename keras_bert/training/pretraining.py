"""BERT pretraining (masked LM + next sentence) through `model.fit` on a tf.distribute
strategy: what `keras-bert pretrain` runs.

`Pretraining` checks everything that can be wrong before it writes anything: the output
directory, the data against the config, the vocab files against the data, the config and
the init checkpoint, the batch against the replicas, and the settings of a run the output
directory already holds. It then builds the `BertPretrainer` and BERT's optimizer under
the strategy's scope and resumes from the run's last checkpoint (weights, optimizer, step
and input position). `fit()` trains with periodic atomic checkpoints, TensorBoard logs
and a progress bar, and ends with the encoder saved in the run directory
(`keras_bert.load_encoder(output_dir)` loads it) and a `metrics.json` with the final
masked-LM and next-sentence accuracy and loss.

Reusing a run directory: the same settings resume the run where it stopped. Settings that
change what is trained (data, batch, steps, learning rate, config, seed, vocab, ...) are
refused with a `MismatchError` that lists them (old -> new), unless `overwrite=True`
(start afresh: the old run's files are removed when the new run starts) or, when only
`num_train_steps` changed, `resume=True` (extend the run). Options that only change how
the run is executed or recorded (`steps_per_execution`, `jit_compile`, checkpoint and
logging intervals, the strategy) may change between starts.

Run directory layout::

    output_dir/
      keras_bert_config.json, encoder.weights.h5   the trained encoder
      vocab.txt                                    a copy of the vocab (when one is known)
      metrics.json                                 final metrics (last logging window)
      run_config.json                              options, model config, data, strategy;
                                                   `starts`: the settings of every start
      train_log.jsonl                              one JSON line per logging window
      checkpoints/ckpt-STEP.*                      training state, for resuming
      logs/train/                                  TensorBoard event files
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import math
import numbers
import os
import shutil
import time

import keras
import tensorflow as tf

from keras_bert import errors, io
from keras_bert.checkpoints import (
    KERAS_BERT_CONFIG,
    KERAS_BERT_WEIGHTS,
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
from keras_bert.errors import (
    ArgumentError,
    InputNotFoundError,
    MismatchError,
    OutputError,
    UserInputError,
)
from keras_bert.losses import pretraining_losses
from keras_bert.models import BertPretrainer
from keras_bert.training import distribute, validation
from keras_bert.training.callbacks import MetricsLogger, ProgressBar, TrainingCheckpoint
from keras_bert.training.optimization import OPTIMIZERS, create_optimizer

logger = logging.getLogger("keras_bert")

# The exit status of a run stopped by SIGTERM after saving (128 + SIGTERM, the code
# schedulers read as "terminated, restart me"), and of one stopped by SIGINT (Ctrl-C).
PREEMPTED_EXIT_CODE = 143
INTERRUPTED_EXIT_CODE = 130
# `fit()` returns {"preempted": True, "signal": NAME, ...} for a stopped run.
SIGNAL_EXIT_CODES = {"SIGTERM": PREEMPTED_EXIT_CODE, "SIGINT": INTERRUPTED_EXIT_CODE}
_MAX_STEPS_PER_EXECUTION = 1000

RUN_CONFIG = "run_config.json"
METRICS = "metrics.json"
VOCAB_FILE = validation.VOCAB_FILE
CHECKPOINTS = "checkpoints"
# What a run writes into its directory (anything else there is left alone).
_RUN_FILES = (CHECKPOINTS, "logs", "train_log.jsonl", METRICS, RUN_CONFIG, KERAS_BERT_CONFIG,
              KERAS_BERT_WEIGHTS, VOCAB_FILE)
# The names whose hidden temporaries a run writes into its directory.
_TEMPORARIES = ("encoder", "previous-run", RUN_CONFIG, METRICS, VOCAB_FILE)
# Options that change how a run is executed or recorded, not what it trains (or must
# equal the data anyway): a resumed run may change them.
_EXECUTION_OPTIONS = ("max_seq_length", "max_predictions_per_seq", "steps_per_execution",
                      "save_checkpoints_steps", "keep_checkpoints", "log_steps",
                      "jit_compile")


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
        kinds = {"int": (numbers.Integral, "an integer"), "float": (numbers.Real, "a number")}
        for field in dataclasses.fields(self):
            kind, _, rest = str(field.type).partition(" | ")
            value = getattr(self, field.name)
            if kind not in kinds or (value is None and rest == "None"):
                continue
            if isinstance(value, bool) or not isinstance(value, kinds[kind][0]):
                raise ArgumentError(f"Invalid pretraining options: {field.name} must be "
                                    f"{kinds[kind][1]}, got {value!r}.", field=field.name)
        problems = []  # (field, message)
        if self.weight_decay < 0:
            problems.append(("weight_decay", f"weight_decay must be >= 0, got "
                                             f"{self.weight_decay}"))
        for name in ("train_batch_size", "num_train_steps", "gradient_accumulation_steps",
                     "save_checkpoints_steps", "keep_checkpoints", "log_steps",
                     "shuffle_buffer_size"):
            if getattr(self, name) < 1:
                problems.append((name, f"{name} must be >= 1, got {getattr(self, name)}"))
        for name in ("max_seq_length", "max_predictions_per_seq", "steps_per_execution"):
            value = getattr(self, name)
            if value is not None and value < 1:
                problems.append((name, f"{name} must be >= 1, got {value}"))
        if not 0 <= self.num_warmup_steps <= self.num_train_steps:
            problems.append(("num_warmup_steps",
                             f"num_warmup_steps must be in [0, num_train_steps="
                             f"{self.num_train_steps}], got {self.num_warmup_steps}"))
        if self.learning_rate <= 0:
            problems.append(("learning_rate",
                             f"learning_rate must be > 0, got {self.learning_rate}"))
        if self.optimizer not in OPTIMIZERS:
            problems.append(("optimizer", f"optimizer must be one of {OPTIMIZERS}, got "
                                          f"{self.optimizer!r}"))
        if self.mixed_precision not in distribute.PRECISIONS:
            problems.append(("mixed_precision", f"mixed_precision must be one of "
                             f"{distribute.PRECISIONS}, got {self.mixed_precision!r}"))
        if problems:
            raise ArgumentError("Invalid pretraining options: "
                                + "; ".join(message for _, message in problems) + ".",
                                field=problems[0][0])

    def micro_steps(self, updates: int) -> int:
        """Training steps (micro-batches) for a number of optimizer updates."""
        return updates * self.gradient_accumulation_steps


def resolve_config(config: BertConfig | str | None, vocab_file: str | None = None
                   ) -> BertConfig:
    """A `BertConfig` from a config, a preset name or a config file.

    A preset takes the vocab's size when `vocab_file` is given (a preset describes the
    architecture, not a vocab); a config file is used exactly as written.

    Raises:
        ArgumentError: `config` is neither a preset nor a file (field "config").
        DataError: the config file is malformed or lacks a required field.

    Example:

    >>> resolve_config("tiny").num_layers
    2
    >>> resolve_config("huge")
    Traceback (most recent call last):
    ...
    keras_bert.errors.ArgumentError: config 'huge' is neither a preset (...) nor a config file.
    """
    if isinstance(config, BertConfig):
        return config
    config = os.fspath(config or "base")
    if os.path.isfile(config):
        return BertConfig.from_json_file(config)
    if config in PRESETS:
        overrides = {"vocab_size": validation.vocab_size_of(vocab_file)} if vocab_file else {}
        return BertConfig.from_preset(config, **overrides)
    if os.path.isdir(config):
        raise ArgumentError(f"config {config!r} is a directory; give the config file inside "
                            "it, or pass the checkpoint as init_checkpoint.", field="config")
    raise ArgumentError(f"config {config!r} is neither a preset ({sorted(PRESETS)}) nor a "
                        "config file.", field="config")


def _describe_config(config: BertConfig | str | None) -> str:
    if isinstance(config, BertConfig):
        return "the given config"
    return f"config {os.fspath(config or 'base')}"


def _read_checkpoint_config(init_checkpoint: str) -> BertConfig:
    try:
        return read_config(init_checkpoint)
    except FileNotFoundError as e:
        if isinstance(e, UserInputError):
            raise
        raise InputNotFoundError(f"init_checkpoint: {e}") from None


def _check_config_matches_checkpoint(config: BertConfig, checkpoint_config: BertConfig,
                                     init_checkpoint: str, config_source: str) -> None:
    if config == checkpoint_config:
        return
    differs = {k: (v, getattr(checkpoint_config, k)) for k, v in config.to_dict().items()
               if getattr(checkpoint_config, k) != v}
    raise MismatchError(
        f"{config_source} differs from init_checkpoint {init_checkpoint}'s config in "
        f"{differs} (given, checkpoint); leave config out to use the checkpoint's.")


def _steps_per_execution(options: PretrainingOptions, tpu: bool) -> int:
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
        return steps
    if not tpu:
        return 1
    steps = math.gcd(*intervals)
    return max(d for d in range(1, min(steps, _MAX_STEPS_PER_EXECUTION) + 1) if steps % d == 0)


def _build_pretrainer(config: BertConfig | None, init_checkpoint: str | None,
                      next_sentence: bool) -> BertPretrainer:
    """A new pretrainer of `config`, or one with `init_checkpoint`'s weights (whose
    config `Pretraining` has checked against `config` already)."""
    if not init_checkpoint:
        return BertPretrainer(BertEncoder(config), next_sentence=next_sentence)
    try:
        loaded = load_pretrainer(init_checkpoint)
    except (CheckpointError, errors.CheckpointError) as e:
        # An encoder-only checkpoint; one that cannot be read fails here too, and the
        # note below would mislead.
        encoder = load_encoder(init_checkpoint)
        logger.info("%s; starting the pretraining heads from scratch.", e)
        loaded = BertPretrainer(encoder, next_sentence=next_sentence)
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
    keras_bert checkpoint. The staging directory is a hidden temporary that
    `io.remove_stale_temporaries` clears if the process dies mid-way."""
    staging = io.temporary_path(os.path.join(output_dir, "encoder"))
    os.makedirs(staging)
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
        _check_masking_vocab(info, vocab_file)
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


def _check_masking_vocab(info: validation.PretrainingDataInfo, vocab_file: str | None
                         ) -> None:
    if info.dynamic_masking and not vocab_file:
        raise ArgumentError(
            f"{info.files[0]} holds unmasked instances (dynamic masking); they are masked "
            "while training, which needs the vocab: give vocab_file.", field="vocab_file")


# --- the run directory ------------------------------------------------------------------

def _run_settings(options: PretrainingOptions, next_sentence: bool, config: BertConfig,
                  info: validation.PretrainingDataInfo, vocab_sha256: str | None,
                  init_checkpoint: str | None) -> dict:
    """What decides the result of a run: compared with the settings a run directory
    records before resuming it (JSON-normalized, so a record read back compares equal)."""
    trained = {k: v for k, v in dataclasses.asdict(options).items()
               if k not in _EXECUTION_OPTIONS}
    trained["next_sentence"] = next_sentence
    settings = {
        "options": trained,
        "bert_config": config.to_dict(),
        # Files by name and size, not path: data staged elsewhere on a restart resumes.
        "data": {"files": [[os.path.basename(f), size]
                           for f, size in zip(info.files, info.file_sizes)],
                 "settings": info.settings, "vocab_sha256": info.vocab.get("sha256")},
        "vocab_sha256": vocab_sha256,
        "init_checkpoint": init_checkpoint and _checkpoint_name(init_checkpoint),
    }
    return json.loads(json.dumps(settings))


def _checkpoint_name(init_checkpoint: str) -> str:
    """An init checkpoint as a run's settings record it: its directory's name (and the
    prefix of a Google checkpoint), not its full path, so a job that stages the same
    checkpoint elsewhere on every restart still resumes (its config and vocab are
    compared as well).

    Example:

    >>> _checkpoint_name("/tmp/job-1/uncased_L-12_H-768_A-12/bert_model.ckpt")
    'uncased_L-12_H-768_A-12/bert_model.ckpt'
    """
    path = os.path.normpath(init_checkpoint.rstrip("/"))
    if io.isdir(path):
        return os.path.basename(path)
    return "/".join([os.path.basename(os.path.dirname(path)), os.path.basename(path)])


def _flatten(value, prefix: str = "") -> dict:
    if isinstance(value, dict) and value:
        flat = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: value}


_SETTING_NAMES = {"data.files": "input files", "data.vocab_sha256": "the data's vocab",
                  "vocab_sha256": "vocab", "init_checkpoint": "init_checkpoint"}
_MISSING = object()


def _show(key: str, value) -> str:
    if value is _MISSING:
        return "(none)"
    if key == "data.files" and isinstance(value, list):
        shown = ", ".join(f"{name} ({size} bytes)" for name, size in value[:3])
        return f"{len(value)} files: {shown}" + (", ..." if len(value) > 3 else "")
    if key.endswith("sha256") and isinstance(value, str):
        return f"sha256 {value[:12]}…"
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _differences(old: dict, new: dict) -> dict[str, str]:
    """{setting: "old -> new"} for every setting that differs."""
    old, new = _flatten(old), _flatten(new)
    differences = {}
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, _MISSING), new.get(key, _MISSING)
        if before != after:
            name = _SETTING_NAMES.get(key) or key.removeprefix("options.").replace(
                "bert_config.", "config.")
            differences[key] = f"{name}: {_show(key, before)} → {_show(key, after)}"
    return differences


def _read_run_config(output_dir: str) -> dict | None:
    path = os.path.join(output_dir, RUN_CONFIG)
    if not io.exists(path):
        return None
    try:
        record = io.read_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise OutputError(f"{path} is unreadable ({e}); remove it, or overwrite the run in "
                          f"{output_dir}.") from None
    return record if isinstance(record, dict) else None


def _has_state(output_dir: str) -> bool:
    """Whether a run directory holds anything of value: a checkpoint or a trained
    encoder (a start that died before its first checkpoint leaves neither)."""
    return bool(tf.train.latest_checkpoint(os.path.join(output_dir, CHECKPOINTS))
                or io.exists(os.path.join(output_dir, METRICS))
                or io.exists(os.path.join(output_dir, KERAS_BERT_CONFIG)))


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


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
        output_dir: the run directory (see the module docstring); rerunning with the same
            directory and settings resumes from its last checkpoint.
        config: a `BertConfig`, a preset name or a config JSON; None: the
            `init_checkpoint`'s config, else "base".
        options: `PretrainingOptions`.
        vocab_file: the vocab.txt; checked against the embedding table, the data and
            the init checkpoint's vocab.txt, and copied into the run directory.
        strategy: a `tf.distribute.Strategy` or a name for `resolve_strategy`.
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
    ...                   vocab_file="vocab.txt")  # doctest: +SKIP
    >>> run.start_step, run.model.count_params()  # doctest: +SKIP
    (0, 4416330)
    """

    def __init__(self, input_file: str, output_dir: str,
                 config: BertConfig | str | None = None,
                 options: PretrainingOptions = PretrainingOptions(), *,
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
        io.check_writable(output_dir, kind="directory", what="output_dir")
        # Multi-worker and TPU strategies configure the runtime: before any other TF op.
        if isinstance(strategy, str):
            strategy = distribute.resolve_strategy(strategy, tpu)
        self.strategy = strategy
        self.options = options
        self.output_dir = output_dir
        self.progress = progress
        self.info = info = validation.inspect_pretraining_data(input_file)
        validation.check_data_flags(info, max_seq_length=options.max_seq_length,
                                    max_predictions_per_seq=options.max_predictions_per_seq)

        # The config, and everything it must agree with, before building anything.
        explicit_config, config_source = None, "the model"
        if config is not None or not init_checkpoint:
            explicit_config = resolve_config(config, vocab_file)
            config_source = _describe_config(config)
        if init_checkpoint:
            checkpoint_config = _read_checkpoint_config(init_checkpoint)
            if explicit_config is not None:
                _check_config_matches_checkpoint(explicit_config, checkpoint_config,
                                                 init_checkpoint, config_source)
            else:
                config_source = f"init_checkpoint {init_checkpoint}"
            bert_config = checkpoint_config
        else:
            bert_config = explicit_config
        validation.check_data_fits_model(info, bert_config, config_source)
        checkpoint_vocab = (validation.checkpoint_vocab_file(init_checkpoint)
                            if init_checkpoint else None)
        validation.check_vocab(vocab_file, bert_config, info,
                               checkpoint_vocab=checkpoint_vocab,
                               pretrained=bool(init_checkpoint), config_source=config_source)
        self._vocab_source = vocab_file or checkpoint_vocab
        if self._vocab_source and not info.vocab:
            logger.warning(
                "The TFRecords in %s have no pretraining_data*.json sidecar with the "
                "checksum of the vocab they were made with, so it cannot be checked against "
                "%s: make sure they were made with that vocab (token ids up to %d seen).",
                os.path.dirname(info.files[0]) or ".", self._vocab_source, info.max_token_id)
        _check_masking_vocab(info, vocab_file)

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
        settings = _run_settings(options, next_sentence, bert_config, info,
                                 self._vocab_source and io.file_sha256(self._vocab_source),
                                 init_checkpoint)
        self.start_kind = self._start_kind(settings, overwrite=overwrite, resume=resume)
        self._replace_previous = self.start_kind in ("restarted", "overwrote")

        policy = distribute.resolve_precision(options.mixed_precision, strategy)
        previous_policy = keras.mixed_precision.global_policy()
        keras.mixed_precision.set_global_policy(policy)
        try:
            keras.utils.set_random_seed(options.seed)
            with strategy.scope():
                model = _build_pretrainer(explicit_config, init_checkpoint, next_sentence)
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
        self.checkpoint = self._new_checkpoint()
        # A run that replaces the directory's old one starts from step 0.
        self.start_step = 0 if self._replace_previous else self.checkpoint.restore()
        self.total_steps = options.micro_steps(options.num_train_steps)
        if self.start_step > self.total_steps:
            raise ArgumentError(
                f"num_train_steps {options.num_train_steps} ({self.total_steps} steps) is "
                f"below the step the run in {output_dir} has reached ({self.start_step}); "
                "a run can be extended, not shortened.", field="num_train_steps")
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
            "init_checkpoint": init_checkpoint, "vocab_file": vocab_file,
            "settings": settings,
        }
        logger.info("Pretraining L%d/H%d on %d replica(s) (%s, %s): global batch %d (%d per "
                    "replica%s), %s at step %d of %d.", bert_config.num_layers,
                    bert_config.hidden_size, replicas, type(strategy).__name__, policy,
                    options.train_batch_size, per_replica,
                    f", {options.gradient_accumulation_steps} micro-batches per update"
                    if options.gradient_accumulation_steps > 1 else "",
                    "resuming" if self.start_step else "starting", self.start_step,
                    self.total_steps)

    # --- the run directory -------------------------------------------------------------
    def _start_kind(self, settings: dict, *, overwrite: bool, resume: bool) -> str:
        """How this start relates to the run `output_dir` holds; raises `MismatchError`
        when that run has other settings and neither `overwrite` nor (for a new step
        count only) `resume` allows going on."""
        output_dir = self.output_dir
        record = _read_run_config(output_dir) if io.isdir(output_dir) else None
        if not (io.isdir(output_dir) and _has_state(output_dir)):
            return "started" if record is None else "restarted"
        if overwrite:
            return "overwrote"
        previous = (record or {}).get("settings")
        if previous is None:
            logger.warning("%s holds a run without recorded settings (from an older "
                           "keras_bert?); resuming it without comparing them.", output_dir)
            return "resumed"
        differences = _differences(previous, settings)
        if not differences:
            return "resumed"
        if resume and set(differences) == {"options.num_train_steps"}:
            logger.info("Extending the run in %s: %s.", output_dir,
                        differences["options.num_train_steps"])
            return "extended"
        starts = record.get("starts") or [{}]
        since = f" (started {starts[0]['time']})" if starts[0].get("time") else ""
        if set(differences) == {"options.num_train_steps"}:
            advice = ("pass resume=True to continue it to the new num_train_steps, or "
                      "overwrite=True to start a new run in its place")
        else:
            advice = ("use another output_dir, or pass overwrite=True to start a new run "
                      "in its place (the old run's files are removed when it starts)")
        raise MismatchError(
            f"{output_dir} holds a run{since} with other settings: "
            + "; ".join(differences.values()) + f". To resume it, use its settings; else "
            f"{advice}.")

    def _new_checkpoint(self) -> TrainingCheckpoint:
        options = self.options
        return TrainingCheckpoint(
            os.path.join(self.output_dir, CHECKPOINTS), self.model,
            options.micro_steps(options.save_checkpoints_steps),
            max_to_keep=options.keep_checkpoints, strategy=self.strategy)

    def _run_files(self) -> list[str]:
        """The entries of the run directory that belong to the run."""
        names = list(_RUN_FILES)
        if self._vocab_source and os.path.abspath(self._vocab_source) == os.path.abspath(
                os.path.join(self.output_dir, VOCAB_FILE)):
            names.remove(VOCAB_FILE)  # the given vocab itself: not the run's copy
        return [n for n in names if io.exists(os.path.join(self.output_dir, n))]

    def _move_previous_aside(self) -> str | None:
        """Moves the old run's files into a hidden temporary directory (removed once the
        new run is set up; `io.remove_stale_temporaries` clears one a crash leaves).
        Remote directories cannot rename directories: their old files are removed."""
        output_dir, names = self.output_dir, self._run_files()
        if io.is_remote(output_dir):
            gfile = tf.io.gfile
            for name in names:
                path = os.path.join(output_dir, name)
                (gfile.rmtree if gfile.isdir(path) else gfile.remove)(path)
            return None
        aside = io.temporary_path(os.path.join(output_dir, "previous-run"))
        os.makedirs(aside)
        for name in names:
            os.replace(os.path.join(output_dir, name), os.path.join(aside, name))
        logger.info("%s the previous run in %s (its files: %s).",
                    "Replacing" if self.start_kind == "overwrote" else "Restarting",
                    output_dir, ", ".join(names) or "none")
        return aside

    def _restore_previous(self, aside: str) -> None:
        for name in os.listdir(aside):
            target = os.path.join(self.output_dir, name)
            if os.path.isdir(target):
                shutil.rmtree(target, ignore_errors=True)
            os.replace(os.path.join(aside, name), target)
        shutil.rmtree(aside, ignore_errors=True)

    def _copy_vocab(self) -> None:
        source = self._vocab_source
        target = os.path.join(self.output_dir, VOCAB_FILE)
        if not source or os.path.abspath(source) == os.path.abspath(target):
            return
        if io.exists(target) and io.file_sha256(target) == io.file_sha256(source):
            return
        with io.open_file(source, "rb") as f, io.atomic_write(target, "wb") as copy:
            shutil.copyfileobj(f, copy)

    def _write_run_config(self) -> None:
        path = os.path.join(self.output_dir, RUN_CONFIG)
        starts = []
        previous = _read_run_config(self.output_dir)
        if previous is not None:
            starts = previous.get("starts") or [{"time": None, "kind": "started",
                                                  "start_step": 0, **previous}]
        start = {"time": _now(), "kind": self.start_kind, "start_step": self.start_step,
                 **self.run_config}
        io.write_json(path, {**self.run_config, "starts": [*starts, start]})

    def _prepare_output_dir(self) -> None:
        """Creates or updates the run directory (the chief's part of starting)."""
        io.makedirs(self.output_dir)
        io.remove_stale_temporaries(self.output_dir, owned=lambda name: name in _TEMPORARIES)
        aside = self._move_previous_aside() if self._replace_previous else None
        try:
            self._copy_vocab()
            self._write_run_config()
        except BaseException:
            if aside:
                self._restore_previous(aside)
            raise
        if aside:
            shutil.rmtree(aside, ignore_errors=True)

    # --- training ----------------------------------------------------------------------
    def fit(self, callbacks=()) -> dict:
        """Trains from `start_step` to the end; returns the final metrics (also written
        to `metrics.json`), or `{"preempted": True, "signal", "step", "checkpoint"}`
        when SIGTERM or SIGINT (`signal`: "SIGTERM" or "SIGINT"; see
        `SIGNAL_EXIT_CODES`) stopped the run after saving a checkpoint. `callbacks` are
        further Keras callbacks (the `batch` they get counts from `start_step`: add it
        for the global step).

        Raises:
            DataError: an input file turned out to be corrupted while training."""
        output_dir, options = self.output_dir, self.options
        metrics_path = os.path.join(output_dir, METRICS)
        if (not self._replace_previous and self.start_step >= self.total_steps
                and io.exists(metrics_path)):
            logger.info("%s already finished at step %d.", output_dir, self.start_step)
            return io.read_json(metrics_path)
        if self.is_chief:
            self._prepare_output_dir()
        if self._replace_previous:
            # The old checkpoints are gone: a manager that saw them must not track them.
            self.checkpoint = self._new_checkpoint()
            self._replace_previous = False
        metrics_logger = MetricsLogger(
            os.path.join(output_dir, "logs", "train") if self.is_chief else None,
            min(options.micro_steps(options.log_steps), self.total_steps),
            jsonl_path=os.path.join(output_dir, "train_log.jsonl") if self.is_chief else None,
            global_batch_size=self.micro_batch_size, initial_step=self.start_step)
        progress = ProgressBar(self.total_steps, initial_step=self.start_step,
                               disable=not (self.progress and self.is_chief))
        started = time.monotonic()
        try:
            if self.start_step < self.total_steps:
                self.model.fit(self.dataset, epochs=1,
                               steps_per_epoch=self.total_steps - self.start_step, verbose=0,
                               shuffle=False,
                               callbacks=[self.checkpoint, metrics_logger, progress,
                                          *callbacks])
        except tf.errors.DataLossError as e:
            raise validation.data_loss_error(self.info.files, e) from e
        finally:
            # Also when fit raised (Keras then skips on_train_end).
            self.checkpoint._restore_signal_handlers()
        if self.checkpoint.preempted:
            return {"preempted": True, "signal": self.checkpoint.stop_signal,
                    "step": self.checkpoint.step,
                    "checkpoint": self.checkpoint.latest_checkpoint}
        metrics = {**metrics_logger.last, "step": options.num_train_steps,
                   "train_seconds": time.monotonic() - started,
                   "global_batch_size": options.train_batch_size,
                   "num_replicas": self.strategy.num_replicas_in_sync}
        if self.is_chief:
            _export_encoder(self.model.encoder, output_dir)
            io.write_json(metrics_path, metrics)
        return metrics


def run_pretraining(input_file: str, output_dir: str,
                    config: BertConfig | str | None = None,
                    options: PretrainingOptions = PretrainingOptions(), **kwargs) -> dict:
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
    ...     vocab_file="vocab.txt")  # doctest: +SKIP
    >>> metrics["masked_lm_accuracy"]  # doctest: +SKIP
    0.31
    """
    return Pretraining(input_file, output_dir, config, options, **kwargs).fit()
