"""The fine-tuning run (`Finetuning`): the task model on top of the encoder, every
weight trained end to end with `model.fit`, the dev split(s) scored with the official
metrics after every epoch (`num_restarts` times, keeping the best on dev), and the run
directory written all at once (a hidden temporary directory renamed into place).

SIGTERM (a preemption notice) stops a run at the next step boundary: `RunTerminated`, a
`KeyboardInterrupt`, is raised and the run's temporaries are removed, leaving nothing
beside `output_dir`. Fine-tuning does not resume mid-run: a rerun starts clean, and
first removes what a killed run (kill -9) left.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import shutil
import time

import keras

from keras_bert.core import fileio, stopping
from keras_bert.core.errors import DataError, Terminated
from keras_bert.core.input_files import check_spares_input
from keras_bert.core.precision import bfloat16_cpu_note
from keras_bert.core.run_files import FINETUNE_CONFIG, FINETUNED_MODEL, LOGS, METRICS
from keras_bert.model.encoder import BertEncoder
from keras_bert.tasks import recipe
from keras_bert.tasks.base import Features, Task, log_truncation
from keras_bert.tasks.finetuning.inputs import TaskSource, model_source
from keras_bert.tasks.finetuning.options import FinetuneOptions
from keras_bert.tasks.finetuning.run_directory import (
    check_output_dir,
    remove_leftovers,
    temporary_logs,
)
from keras_bert.tasks.finetuning.scoring import (
    dev_metrics,
    metrics_summary,
    prediction_file,
    score_split,
    write_metrics,
)
from keras_bert.tasks.keras_face import fit_features
from keras_bert.tasks.registry import get_task
from keras_bert.tasks.text_preprocessor import TextPreprocessor
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.vocab import VOCAB_FILE
from keras_bert.training.distribute import has_accelerator
from keras_bert.training.tracing import TraceClock

logger = logging.getLogger("keras_bert")

_DEFAULT_OPTIONS = FinetuneOptions()


class RunTerminated(Terminated):
    """SIGTERM (or Ctrl-C: `signal_name` "SIGINT") arrived while `Finetuning.run` was
    training or writing (see `keras_bert.core.errors.Terminated`); nothing of the run
    is left on disk."""


class _Termination(keras.callbacks.Callback):
    """Stops a run at the next step boundary once a signal has arrived: under
    `keras_bert.core.stopping.deferred` the handler only takes note, because an
    exception raised at once could surface inside TensorFlow's C++ code (e.g. while it
    traces the train step) as an unrelated error. A step, the dev scoring after an
    epoch and the final write finish first; a second Ctrl-C stops at once."""

    def check(self):
        name = stopping.requested()
        if name is not None:
            error = RunTerminated(f"terminated by {name}")
            error.signal_name = name
            raise error

    def on_train_batch_end(self, batch, logs=None):
        self.check()

    def on_epoch_end(self, epoch, logs=None):
        self.check()


def _check_spares_inputs(output_dir: str, **inputs) -> None:
    """Refuses an `output_dir` that is, holds or lies inside an input (a run would
    replace or delete what it reads), before any work, `overwrite` or not; a checkpoint
    prefix (`dir/model.ckpt-100`) counts as its directory, a checkpoint name as none."""
    for field, path in inputs.items():
        if not path or fileio.is_remote(path):
            continue
        path = os.fspath(path)
        if not os.path.exists(path) and os.path.isfile(path + ".index"):
            path = os.path.dirname(os.path.abspath(path))
        if not os.path.exists(path):
            continue
        check_spares_input(output_dir, "output_dir", os.path.realpath(path), field)


@dataclasses.dataclass
class Split:
    """One data split read and featurized: its examples, features and file."""

    name: str
    path: str
    examples: list
    features: Features


class Finetuning:
    """One fine-tuning run of `task` from a checkpoint (or a preset with random weights).

    Everything is checked in the constructor, before any training: the task name, the
    data files (read and featurized: a malformed row is a `DataError` naming file and
    line), the checkpoint and its vocab (sizes must agree), `max_seq_length` against the
    model's positions, and `output_dir` (writable, and not holding another run unless
    `overwrite`; the temporaries an earlier, killed run of it left are removed first).
    `run()` trains and writes `output_dir`; SIGTERM during `run()` raises
    `RunTerminated` once the run's temporaries are removed.

    Args:
        task: a task name (`keras_bert.tasks.registry.TASK_NAMES`) or a `Task`.
        data_dir: the benchmark's directory (e.g. GLUE's `SST-2/`); None with `tfds`.
        output_dir: the run directory to create.
        checkpoint: any path `load_encoder` takes; its vocab.txt is used unless
            `vocab_file` is given.
        preset: instead of `checkpoint`, a `BertConfig` preset with random weights
            (needs `vocab_file`).
        options: `FinetuneOptions`.
        vocab_file: the WordPiece vocab (default: the checkpoint's).
        lower_case: None reads it from the checkpoint (`checkpoint_lower_case`).
        overwrite: replace an existing `output_dir` (only once the new run is complete).
        progress: Keras progress bars.
        tfds: instead of `data_dir`, a prepared tensorflow-datasets dataset
            ("glue/sst2", "squad/v1.1", "conll2003", ...), read from `tfds_data_dir`
            (default: tensorflow-datasets' own).

    Example:

    >>> run = Finetuning("sst2", "glue/SST-2", "runs/sst2",
    ...                  checkpoint="uncased_L-12_H-768_A-12")  # doctest: +SKIP
    >>> run.run()["accuracy"]  # doctest: +SKIP
    0.93
    """

    def __init__(self, task: str | Task, data_dir: str | None, output_dir: str, *,
                 checkpoint: str | None = None, preset: str | None = None,
                 options: FinetuneOptions = _DEFAULT_OPTIONS, vocab_file: str | None = None,
                 lower_case: bool | None = None, overwrite: bool = False,
                 progress: bool = True, tfds: str | None = None,
                 tfds_data_dir: str | None = None):
        self.task = get_task(task) if isinstance(task, str) else task
        self.source = TaskSource(self.task, data_dir, tfds, tfds_data_dir)
        self.output_dir = os.path.abspath(output_dir)
        self.overwrite = overwrite
        self.progress = progress
        options.check_task(self.task)
        _check_spares_inputs(self.output_dir, data_dir=data_dir, tfds_data_dir=tfds_data_dir,
                             checkpoint=checkpoint, vocab_file=vocab_file)
        remove_leftovers(self.output_dir)
        check_output_dir(self.output_dir, overwrite)
        self.checkpoint, self.preset = checkpoint, preset
        self.config, self.vocab_file, self.lower_case, self.artifact = model_source(
            checkpoint, preset, vocab_file, lower_case)
        self.options = options = options.resolve(self.task, self.config)
        note = bfloat16_cpu_note(options.precision, accelerated=has_accelerator())
        if note:
            logger.warning(note)
        self.learning_rate = options.peak_learning_rate(self.task, self.config)
        self.tokenizer = BertTokenizer(self.vocab_file, lower_case=self.lower_case)
        self.settings = options.feature_settings()
        self.train = self._read_split("train", limit=options.max_train_examples,
                                      training=True)
        self.dev = [self._read_split(split) for split in self.task.dev_splits]
        for split in (self.train, *self.dev):  # reported once every split has been read
            logger.info("%s: %d examples, %d sequences", split.path, len(split.examples),
                        len(split.features))
            log_truncation(split.features, self.settings.max_seq_length, split.path)

    def _read_split(self, split: str, limit: int | None = None, training: bool = False
                    ) -> Split:
        path, examples = self.source.read(split)
        if training:
            examples = self.task.training_examples(examples)
            if not examples:
                raise DataError("has no example the task can train on (see the warnings "
                                "above).", path=path)
        if limit is not None:
            examples = examples[:limit]
        return Split(split, path, examples,
                     self.task.features(examples, self.tokenizer, self.settings))

    # --- training -------------------------------------------------------------------

    def steps_per_epoch(self) -> int:
        return math.ceil(len(self.train.features) / self.options.train_batch_size)

    def _build(self, seed: int) -> keras.Model:
        """The family's task model with its preprocessor, built as `from_preset` builds
        it (the same draws from the seed: the head's initialization and dropout)."""
        keras.utils.set_random_seed(seed)
        dtype = None if self.options.precision == "float32" else self.options.precision
        if self.artifact is not None:
            # A fine-tuning run gives its encoder, with a new head: intermediate-task
            # transfer (e.g. MNLI, then RTE).
            encoder = self.artifact.load_encoder(dtype=dtype)
            if self.artifact.kind == "finetuning_run":
                old = self.artifact.record["task"]
                logger.info("Starting from the encoder of the fine-tuned %s run %s; its %s "
                            "head is replaced by a new %s head.", old, self.checkpoint, old,
                            self.task.name)
        else:
            encoder = BertEncoder(self.config, dtype=dtype)
        kwargs = {"feature_based": True} if self.options.feature_based else {}
        if getattr(self.task, "reads_checkpoint_modules", False) and self.checkpoint:
            kwargs["source"] = self.checkpoint  # a sentence-transformers folder's modules
        model = self.task.build_model(encoder, **kwargs)
        model.preprocessor = TextPreprocessor(self.task, self.tokenizer, self.settings)
        if self.options.lora_rank:
            model.enable_lora(self.options.lora_rank)
        return model

    def _train_once(self, seed: int, restart: int, callbacks=(), log_dir: str | None = None
                    ) -> tuple[keras.Model, dict, list]:
        options = self.options
        model = self._build(seed)
        total = max(1, round(self.steps_per_epoch() * options.num_train_epochs))
        # The recipe (keras_bert.tasks.recipe), as `compile()` and `fit` size it.
        model.compile(optimizer=recipe.optimizer(
            self.learning_rate, total, warmup_proportion=options.warmup_proportion,
            weight_decay=options.weight_decay))
        self.trace_clock.watch(model)
        history = []
        scorer = _DevScore(self, restart, history)
        # Keras's progress bar first, so that it ends its line before the epoch summary;
        # TensorBoard after the scorer, which adds the dev metrics to the epoch's logs.
        callbacks = ([keras.callbacks.ProgbarLogger()] if self.progress else []) + [
            scorer, *callbacks, self._termination]
        if log_dir:
            callbacks.append(keras.callbacks.TensorBoard(log_dir, write_graph=False,
                                                         profile_batch=0))
        # The same training as `fit` on raw text: batches of the recipe's lengths,
        # shuffled from the seed.
        fit_features(model, self.train.features, batch_size=options.train_batch_size,
                     epochs=options.num_train_epochs, seed=seed,
                     group_by_length=options.group_by_length, callbacks=callbacks,
                     verbose=1 if self.progress else 0)
        self.fit_seconds = scorer.fit_seconds
        self.trace_clock.unwatch(model)
        return model, scorer.last, history

    def run(self, callbacks=()) -> dict:
        """Trains (`num_restarts` times), keeps the best run on the first dev split's
        main metric, and writes `output_dir`, with TensorBoard logs of every restart in
        `logs/` (train/ and validation/: the training loss and the dev metrics per
        epoch). `callbacks` are further Keras callbacks for `fit`. Returns the metrics
        written to metrics.json. SIGTERM (in the main thread) raises `RunTerminated`
        at the next step boundary, after the run's temporaries are removed, as Ctrl-C
        raises `KeyboardInterrupt`."""
        # The logs are written beside the run until it is complete, then moved in.
        logs = temporary_logs(self.output_dir)
        self._termination = _Termination()
        with stopping.deferred():
            try:
                return self._run(callbacks, logs)
            finally:
                shutil.rmtree(logs, ignore_errors=True)

    def _run(self, callbacks, logs: str) -> dict:
        started = time.monotonic()
        # Every restart's model traces its own train and predict steps.
        self.trace_clock = TraceClock()
        best = None
        history = []  # every restart's epochs, so that the choice can be checked
        for restart in range(self.options.num_restarts):
            seed = self.options.seed + restart
            log_dir = (logs if self.options.num_restarts == 1
                       else os.path.join(logs, f"restart_{restart + 1}"))
            self._termination.check()
            model, results, restart_history = self._train_once(seed, restart, callbacks,
                                                               log_dir)
            self._termination.check()
            history += restart_history
            score = results[self.dev[0].name]["metrics"][self.task.main_metric]
            if math.isnan(score):  # e.g. a correlation of constant predictions
                score = -math.inf
            if best is None or score > best[0]:
                best = (score, seed, model, results, self.fit_seconds)
            else:
                del model
        _, seed, model, results, fit_seconds = best
        metrics = dev_metrics({split.name: results[split.name]["metrics"]
                               for split in self.dev})
        metrics.update(task=self.task.name, seed=seed, train_examples=len(self.train.examples),
                       fit_seconds=round(fit_seconds, 1),
                       train_seconds=round(time.monotonic() - started, 1),
                       trace_seconds=round(self.trace_clock.total_seconds, 1),
                       traces=self.trace_clock.summary())
        if "best_threshold" in metrics:
            # SQuAD v2.0: the no-answer threshold τ chosen on dev is saved with the model,
            # so `predict` decides "no answer" with it (the dev files and metrics above
            # are at the τ they were decoded with, 0 by default).
            self.task.restore({**self.task.config(),
                               "null_score_diff_threshold": metrics["best_threshold"]})
        record = self._record(seed, history)

        # The optimizer's state (twice the weights for AdamW) is of no use to evaluate,
        # predict or export, so the saved model leaves it out.
        model.optimizer = None

        def write(directory):
            model.save(os.path.join(directory, FINETUNED_MODEL))
            shutil.copyfile(self.vocab_file, os.path.join(directory, VOCAB_FILE))
            fileio.write_json(os.path.join(directory, FINETUNE_CONFIG), record)
            for split in self.dev:
                self.task.write_predictions(split.examples, results[split.name]["predictions"],
                                            os.path.join(directory,
                                                         prediction_file(self.task, split.name)))
            write_metrics(os.path.join(directory, METRICS), metrics)
            if os.path.isdir(logs):
                shutil.copytree(logs, os.path.join(directory, LOGS))

        fileio.atomic_directory(self.output_dir, write, overwrite=self.overwrite)
        return metrics

    def _record(self, seed: int, history: list) -> dict:
        return {"task": self.task.name, "task_config": self.task.config(),
                "options": dataclasses.asdict(self.options), "learning_rate": self.learning_rate,
                "seed": seed, "checkpoint": self.checkpoint, "preset": self.preset,
                "lower_case": self.lower_case, "data_dir": _absolute(self.source.data_dir),
                "tfds": self.source.tfds, "history": history}


class _DevScore(keras.callbacks.Callback):
    """Scores every dev split with the official metrics after each epoch and prints one
    line per epoch."""

    def __init__(self, run: Finetuning, restart: int, history: list):
        super().__init__()
        self.finetuning, self.restart, self.history = run, restart, history
        self.last: dict = {}
        self.fit_seconds = 0.0  # training only, dev scoring left out
        self._start = time.monotonic()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.monotonic()

    def on_epoch_end(self, epoch, logs=None):
        self.fit_seconds += time.monotonic() - self._epoch_start
        run = self.finetuning
        results = {}
        for split in run.dev:
            scored = score_split(run.task, self.model, split.examples, split.features,
                                 run.settings, run.options.eval_batch_size,
                                 progress=run.progress)
            predictions, metrics = run.task.tune_on_dev(split.examples, scored["predictions"],
                                                        scored["metrics"])
            results[split.name] = {"predictions": predictions, "metrics": metrics}
        self.last = results
        main = results[run.dev[0].name]["metrics"]
        entry = {"restart": self.restart, "epoch": epoch + 1,
                 "loss": float((logs or {}).get("loss", float("nan"))),
                 "seconds": round(time.monotonic() - self._start, 1),
                 "fit_seconds": round(self.fit_seconds, 1),
                 "dev": {name: r["metrics"] for name, r in results.items()}}
        self.history.append(entry)
        if logs is not None:  # for TensorBoard, as Keras names validation metrics
            logs.update({f"val_{k}": v for k, v in main.items() if isinstance(v, float)})
        if not run.progress:  # quiet: the caller reports (the CLI's --quiet and --json)
            return
        shown = metrics_summary(run.task, main)
        print(f"{run.task.name} epoch {epoch + 1}"
              f"{f' (restart {self.restart + 1})' if run.options.num_restarts > 1 else ''}: "
              f"loss {entry['loss']:.4f}, dev {shown} ({entry['seconds']:.0f} s)", flush=True)


def _absolute(path: str | None) -> str | None:
    return path if not path or fileio.is_remote(path) else os.path.abspath(path)
