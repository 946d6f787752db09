"""Fine-tuning a pretrained encoder on one task, as the paper does it (§4, Appendix A.3):
the task model on top of the encoder, every weight trained end to end with AdamW
(weight decay 0.01 except LayerNorm and biases), 10% linear warmup then linear decay,
batch 32, 3 epochs, and, for small tasks, the best of several restarts on dev.

`Finetuning` checks everything before any training (task, data files, checkpoint,
vocab, output directory), trains with `model.fit`, scores the dev split(s) with the
official metrics after every epoch, and writes the run directory all at once (a
hidden temporary directory renamed into place): the task model (`model.keras`), its
vocab, `finetune_config.json`, `metrics.json` and the dev predictions in the
benchmark's submission format. `load_finetuned` reads it back for `evaluate_split` and
`predict_file`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import shutil
import time
import warnings

import keras

from keras_bert import io
from keras_bert.checkpoints import (
    check_vocab_matches,
    checkpoint_lower_case,
    checkpoint_vocab,
    load_encoder,
    read_config,
)
from keras_bert.config import PRESETS, BertConfig
from keras_bert.encoder import BertEncoder
from keras_bert.errors import (
    ArgumentError,
    DataError,
    InputNotFoundError,
    MismatchError,
    OutputError,
)
from keras_bert.tasks.base import Features, FeatureSettings, Task, feature_dataset
from keras_bert.tasks.registry import get_task
from keras_bert.tokenization import BertTokenizer
from keras_bert.training.optimization import create_optimizer

logger = logging.getLogger("keras_bert")

MODEL_FILE = "model.keras"
CONFIG_FILE = "finetune_config.json"
METRICS_FILE = "metrics.json"
PRECISIONS = ("float32", "mixed_bfloat16")
# The paper's fine-tuning learning rates are {5e-5, 4e-5, 3e-5, 2e-5}; these defaults
# follow google-research/bert's README per task family.
DEFAULT_LEARNING_RATES = {"glue": 2e-5, "squad": 3e-5, "tagging": 5e-5,
                          "multiple_choice": 2e-5}
# google-research/bert's sequence lengths: 384 for SQuAD's question + passage windows,
# 128 for the rest.
DEFAULT_SEQ_LENGTHS = {"squad": 384}
DEFAULT_SEQ_LENGTH = 128
_POOLER_WITHOUT_GRADIENTS = (r"Gradients do not exist for variables \['pooler/dense/kernel', "
                             r"'pooler/dense/bias'\]")


@dataclasses.dataclass(frozen=True)
class FinetuneOptions:
    """How a task is fine-tuned (defaults: the paper's recipe).

    Args:
        max_seq_length: tokens per sequence, [CLS]/[SEP] included; None takes the task
            family's default (384 for SQuAD, else 128; `DEFAULT_SEQ_LENGTHS`).
        train_batch_size: sequences per update.
        eval_batch_size: sequences per prediction batch.
        learning_rate: peak learning rate; None takes the task family's default
            (`DEFAULT_LEARNING_RATES`; 1e-3 for the feature-based tagger).
        num_train_epochs: passes over the training data (fractions allowed).
        warmup_proportion: fraction of the updates with linear warmup.
        weight_decay: decoupled weight decay (not on LayerNorm and biases).
        seed: fixes initialization of the head, dropout and data order.
        max_train_examples: train on the first N training examples only.
        num_restarts: fine-tune this many times (seeds seed, seed+1, ...) and keep the
            run with the best dev score (the paper's choice for small tasks).
        doc_stride, max_query_length, max_answer_length, n_best_size: SQuAD windows
            and decoding (see `FeatureSettings`).
        precision: "float32" or "mixed_bfloat16".
        feature_based: tagging only: the paper's §5.3 feature-based model (frozen
            encoder, last four layers concatenated, a two-layer BiLSTM).
        group_by_length: batch training sequences of similar length together (less
            padding, same examples per epoch).
    """

    max_seq_length: int | None = None
    train_batch_size: int = 32
    eval_batch_size: int = 64
    learning_rate: float | None = None
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    weight_decay: float = 0.01
    seed: int = 1
    max_train_examples: int | None = None
    num_restarts: int = 1
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30
    n_best_size: int = 20
    precision: str = "float32"
    feature_based: bool = False
    group_by_length: bool = True

    def __post_init__(self):
        for name in ("max_seq_length", "train_batch_size", "eval_batch_size", "num_restarts",
                     "doc_stride", "max_query_length", "max_answer_length", "n_best_size"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ArgumentError(f"{name} must be >= 1, got {getattr(self, name)}.",
                                    field=name)
        if self.max_seq_length is not None and self.max_seq_length < 3:
            raise ArgumentError("max_seq_length must leave room for [CLS], a token and "
                                f"[SEP]: >= 3, got {self.max_seq_length}.",
                                field="max_seq_length")
        if self.max_train_examples is not None and self.max_train_examples < 1:
            raise ArgumentError(f"max_train_examples must be >= 1, got "
                                f"{self.max_train_examples}.", field="max_train_examples")
        if not self.num_train_epochs > 0:
            raise ArgumentError(f"num_train_epochs must be > 0, got {self.num_train_epochs}.",
                                field="num_train_epochs")
        if self.learning_rate is not None and not self.learning_rate > 0:
            raise ArgumentError(f"learning_rate must be > 0, got {self.learning_rate}.",
                                field="learning_rate")
        if not 0 <= self.warmup_proportion <= 1:
            raise ArgumentError(f"warmup_proportion must be in [0, 1], got "
                                f"{self.warmup_proportion}.", field="warmup_proportion")
        if self.weight_decay < 0:
            raise ArgumentError(f"weight_decay must be >= 0, got {self.weight_decay}.",
                                field="weight_decay")
        if self.precision not in PRECISIONS:
            raise ArgumentError(f"precision must be one of {PRECISIONS}, got "
                                f"{self.precision!r}.", field="precision")

    def for_task(self, task: Task) -> FinetuneOptions:
        """These options with `max_seq_length` set to the task family's default if it
        is None."""
        if self.max_seq_length is not None:
            return self
        return dataclasses.replace(self, max_seq_length=DEFAULT_SEQ_LENGTHS.get(
            task.family, DEFAULT_SEQ_LENGTH))

    def feature_settings(self) -> FeatureSettings:
        if self.max_seq_length is None:
            raise ArgumentError("max_seq_length is not set; resolve it with for_task(task).",
                                field="max_seq_length")
        return FeatureSettings(max_seq_length=self.max_seq_length, doc_stride=self.doc_stride,
                               max_query_length=self.max_query_length,
                               max_answer_length=self.max_answer_length,
                               n_best_size=self.n_best_size)


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
    `overwrite`). `run()` trains and writes `output_dir`.

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
                 options: FinetuneOptions = FinetuneOptions(), vocab_file: str | None = None,
                 lower_case: bool | None = None, overwrite: bool = False,
                 progress: bool = True, tfds: str | None = None,
                 tfds_data_dir: str | None = None):
        self.task = get_task(task) if isinstance(task, str) else task
        if bool(data_dir) == bool(tfds):
            raise ArgumentError("give either a data_dir (the benchmark's files) or a tfds "
                                "dataset name.", field="data_dir")
        self.source = TaskSource(self.task, data_dir, tfds, tfds_data_dir)
        self.output_dir = os.path.abspath(output_dir)
        self.overwrite = overwrite
        self.progress = progress
        if options.feature_based and self.task.family != "tagging":
            raise ArgumentError("feature_based applies to the tagging task (ner) only.",
                                field="feature_based")
        _check_output_dir(self.output_dir, overwrite)
        self.checkpoint, self.preset = checkpoint, preset
        self.config, self.vocab_file, self.lower_case = _model_source(
            checkpoint, preset, vocab_file, lower_case)
        if options.feature_based and self.config.num_layers < 4:
            raise ArgumentError(
                "feature_based concatenates the last four layers, but the model has "
                f"{self.config.num_layers}; use a deeper checkpoint or preset.",
                field="feature_based")
        explicit_length = options.max_seq_length is not None
        options = options.for_task(self.task)
        if not explicit_length and options.max_seq_length > self.config.max_position_embeddings:
            options = dataclasses.replace(
                options, max_seq_length=self.config.max_position_embeddings)
        self.options = options
        if options.max_seq_length > self.config.max_position_embeddings:
            raise ArgumentError(
                f"max_seq_length {options.max_seq_length} is longer than the model's "
                f"{self.config.max_position_embeddings} positions.", field="max_seq_length")
        # The feature-based tagger trains only a BiLSTM and a classifier from scratch on a
        # frozen encoder: it needs the larger rate of training from scratch.
        default_rate = (1e-3 if options.feature_based
                        else DEFAULT_LEARNING_RATES.get(self.task.family, 2e-5))
        self.learning_rate = options.learning_rate or default_rate
        self.tokenizer = BertTokenizer(self.vocab_file, lower_case=self.lower_case)
        self.settings = options.feature_settings()
        self.train = self._read_split("train", limit=options.max_train_examples,
                                      training=True)
        self.dev = [self._read_split(split) for split in self.task.dev_splits]
        for split in (self.train, *self.dev):  # reported once every split has been read
            logger.info("%s: %d examples, %d sequences", split.path, len(split.examples),
                        len(split.features))

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
        keras.utils.set_random_seed(seed)
        dtype = None if self.options.precision == "float32" else self.options.precision
        if self.checkpoint:
            encoder = load_encoder(self.checkpoint, dtype=dtype)
        else:
            encoder = BertEncoder(self.config, dtype=dtype)
        kwargs = {"feature_based": True} if self.options.feature_based else {}
        return self.task.build_model(encoder, **kwargs)

    def _train_once(self, seed: int, restart: int, callbacks=(), log_dir: str | None = None
                    ) -> tuple[keras.Model, dict, list]:
        options = self.options
        model = self._build(seed)
        steps = self.steps_per_epoch()
        epochs = max(1, math.ceil(options.num_train_epochs))
        total = max(1, round(steps * options.num_train_epochs))
        optimizer = create_optimizer(self.learning_rate, num_train_steps=total,
                                     num_warmup_steps=int(total * options.warmup_proportion),
                                     weight_decay=options.weight_decay)
        model.compile(optimizer=optimizer)
        dataset = feature_dataset(self.train.features, options.train_batch_size,
                                  training=True, seed=seed, epochs=epochs,
                                  group_by_length=options.group_by_length).take(total)
        history = []
        scorer = _DevScore(self, restart, history)
        # Keras's progress bar first, so that it ends its line before the epoch summary;
        # TensorBoard after the scorer, which adds the dev metrics to the epoch's logs.
        callbacks = ([keras.callbacks.ProgbarLogger()] if self.progress else []) + [
            scorer, *callbacks]
        if log_dir:
            callbacks.append(keras.callbacks.TensorBoard(log_dir, write_graph=False,
                                                         profile_batch=0))
        with warnings.catch_warnings():
            # Span, tagging and feature-based models do not use the encoder's pooler, so
            # its two variables get no gradient: expected, not the missing loss Keras's
            # warning suggests.
            warnings.filterwarnings("ignore", message=_POOLER_WITHOUT_GRADIENTS)
            # The last epoch may be partial (fractional num_train_epochs).
            model.fit(dataset, epochs=epochs, steps_per_epoch=min(steps, total),
                      callbacks=callbacks, shuffle=False, verbose=1 if self.progress else 0)
        self.fit_seconds = scorer.fit_seconds
        return model, scorer.last, history

    def run(self, callbacks=()) -> dict:
        """Trains (`num_restarts` times), keeps the best run on the first dev split's
        main metric, and writes `output_dir`, with TensorBoard logs of every restart in
        `logs/` (train/ and validation/: the training loss and the dev metrics per
        epoch). `callbacks` are further Keras callbacks for `fit`. Returns the metrics
        written to metrics.json."""
        # The logs are written beside the run until it is complete, then moved in.
        logs = io.temporary_path(self.output_dir + "_logs")
        try:
            return self._run(callbacks, logs)
        finally:
            shutil.rmtree(logs, ignore_errors=True)

    def _run(self, callbacks, logs: str) -> dict:
        started = time.monotonic()
        best = None
        history = []  # every restart's epochs, so that the choice can be checked
        for restart in range(self.options.num_restarts):
            seed = self.options.seed + restart
            log_dir = (logs if self.options.num_restarts == 1
                       else os.path.join(logs, f"restart_{restart + 1}"))
            model, results, restart_history = self._train_once(seed, restart, callbacks,
                                                               log_dir)
            history += restart_history
            score = results[self.dev[0].name]["metrics"][self.task.main_metric]
            if math.isnan(score):  # e.g. a correlation of constant predictions
                score = -math.inf
            if best is None or score > best[0]:
                best = (score, seed, model, results, self.fit_seconds)
            else:
                del model
        _, seed, model, results, fit_seconds = best
        metrics = dict(results[self.dev[0].name]["metrics"])
        for split in self.dev[1:]:
            metrics[split.name] = results[split.name]["metrics"]
        metrics.update(task=self.task.name, seed=seed, train_examples=len(self.train.examples),
                       fit_seconds=round(fit_seconds, 1),
                       train_seconds=round(time.monotonic() - started, 1))
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
            model.save(os.path.join(directory, MODEL_FILE))
            shutil.copyfile(self.vocab_file, os.path.join(directory, "vocab.txt"))
            io.write_json(os.path.join(directory, CONFIG_FILE), record)
            for split in self.dev:
                self.task.write_predictions(split.examples, results[split.name]["predictions"],
                                            os.path.join(directory,
                                                         prediction_file(self.task, split.name)))
            io.write_json(os.path.join(directory, METRICS_FILE), metrics)
            if os.path.isdir(logs):
                shutil.copytree(logs, os.path.join(directory, "logs"))

        io.atomic_directory(self.output_dir, write, overwrite=self.overwrite)
        return metrics

    def _record(self, seed: int, history: list) -> dict:
        return {"task": self.task.name, "task_config": self.task.config(),
                "options": dataclasses.asdict(self.options), "learning_rate": self.learning_rate,
                "seed": seed, "checkpoint": self.checkpoint, "preset": self.preset,
                "lower_case": self.lower_case, "data_dir": _absolute(self.source.data_dir),
                "tfds": self.source.tfds, "history": history}


class TaskSource:
    """Where a task's splits come from: the benchmark's files or tensorflow-datasets."""

    def __init__(self, task: Task, data_dir: str | None, tfds: str | None,
                 tfds_data_dir: str | None):
        self.task, self.data_dir, self.tfds, self.tfds_data_dir = (
            task, data_dir, tfds, tfds_data_dir)
        if data_dir and not os.path.isdir(data_dir):
            raise InputNotFoundError(f"data_dir {data_dir!r} is not a directory.")

    def read(self, split: str) -> tuple[str, list]:
        """(a label for messages, the examples) of one split."""
        if self.tfds:
            from keras_bert.tasks.tfds_source import tfds_examples

            return (f"{self.tfds} ({split})",
                    tfds_examples(self.task, self.tfds, split, self.tfds_data_dir))
        path = self.task.split_path(self.data_dir, split)
        if not os.path.isfile(path):
            raise InputNotFoundError(f"the {split} split of {self.task.name} is missing: no "
                                     f"{path} (expected the benchmark's own file layout).")
        examples = self.task.read_examples(path)
        if not examples:
            raise DataError("holds no examples (an empty split).", path=path)
        return path, examples


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
        shown = ", ".join(f"{k} {v:.4f}" for k, v in main.items()
                          if isinstance(v, float) and k in run.task.metric_names)
        print(f"{run.task.name} epoch {epoch + 1}"
              f"{f' (restart {self.restart + 1})' if run.options.num_restarts > 1 else ''}: "
              f"loss {entry['loss']:.4f}, dev {shown} ({entry['seconds']:.0f} s)", flush=True)


def score_split(task: Task, model: keras.Model, examples, features: Features,
                settings: FeatureSettings, batch_size: int, progress: bool = False) -> dict:
    """Predictions and, when the examples are labelled, official metrics of `model` on
    one featurized split: {"predictions": [...], "metrics": {...}}; `progress` shows
    Keras's progress bar."""
    outputs = model.predict(feature_dataset(features, batch_size, with_labels=False),
                            verbose=1 if progress else 0)
    predictions = task.decode(examples, features, outputs, settings)
    return {"predictions": predictions, "metrics": task.evaluate(examples, predictions)}


def prediction_file(task: Task, split: str) -> str:
    """The submission file name of a split's predictions: GLUE `<task>.tsv` (MNLI's
    mismatched dev `mnli-mm.tsv`), SQuAD `predictions.json`, CoNLL `predictions.txt`,
    SWAG `predictions.csv`."""
    if task.family == "glue":
        return f"{task.name}-mm.tsv" if split.endswith("mismatched") else f"{task.name}.tsv"
    return {"squad": "predictions.json", "tagging": "predictions.txt",
            "multiple_choice": "predictions.csv"}[task.family]


# --- reading a run back -------------------------------------------------------------------

@dataclasses.dataclass
class FinetunedModel:
    """A fine-tuned run directory, loaded: the model, its task (with its saved config),
    tokenizer and feature settings."""

    path: str
    model: keras.Model
    task: Task
    tokenizer: BertTokenizer
    settings: FeatureSettings
    record: dict

    def featurize(self, examples) -> Features:
        return self.task.features(examples, self.tokenizer, self.settings)


def load_finetuned(path: str, task: str | None = None) -> FinetunedModel:
    """Loads a directory written by `Finetuning.run`; `task`, when given, must be the
    task it was trained on."""
    if not os.path.isdir(path):
        raise InputNotFoundError(f"{path!r} is not a directory; give the output_dir of a "
                                 "fine-tuning run.")
    config_path = os.path.join(path, CONFIG_FILE)
    model_path = os.path.join(path, MODEL_FILE)
    for needed in (config_path, model_path, os.path.join(path, "vocab.txt")):
        if not os.path.isfile(needed):
            raise InputNotFoundError(f"{path!r} is not a fine-tuned model: it has no "
                                     f"{os.path.basename(needed)} (run `keras-bert finetune` "
                                     "first).")
    record = io.read_json(config_path)
    if task is not None and task != record["task"]:
        raise MismatchError(f"{path!r} was fine-tuned for {record['task']!r}, not {task!r}.")
    saved = get_task(record["task"])
    saved.restore(record.get("task_config", {}))
    options = FinetuneOptions(**record["options"])
    model = keras.models.load_model(model_path, compile=False)
    tokenizer = BertTokenizer(os.path.join(path, "vocab.txt"), lower_case=record["lower_case"])
    return FinetunedModel(path, model, saved, tokenizer, options.feature_settings(), record)


def _absolute(path: str | None) -> str | None:
    return path if not path or io.is_remote(path) else os.path.abspath(path)


def _check_output_dir(output_dir: str, overwrite: bool) -> None:
    io.check_writable(output_dir, kind="directory", what="output_dir")
    if os.path.isdir(output_dir) and os.listdir(output_dir) and not overwrite:
        what = "another fine-tuning run" if os.path.isfile(
            os.path.join(output_dir, CONFIG_FILE)) else "files"
        raise OutputError(f"output_dir {output_dir!r} already holds {what}; choose a new "
                          "directory or overwrite it.")


def _model_source(checkpoint, preset, vocab_file, lower_case):
    if bool(checkpoint) == bool(preset):
        raise ArgumentError("give either a checkpoint or a preset (random weights).",
                            field="checkpoint")
    if checkpoint:
        config = read_config(checkpoint)
        vocab = vocab_file or checkpoint_vocab(checkpoint)
        if vocab is None:
            raise InputNotFoundError(f"the checkpoint {checkpoint!r} has no vocab.txt beside "
                                     "it; give its vocab_file.")
        if lower_case is None:
            lower_case = checkpoint_lower_case(checkpoint)
        owner = f"the checkpoint {checkpoint!r}"
    else:
        if preset not in PRESETS:
            raise ArgumentError(f"preset {preset!r} is not one of {sorted(PRESETS)}.",
                                field="preset")
        if not vocab_file:
            raise ArgumentError("a preset has no vocab; give vocab_file.", field="vocab_file")
        from keras_bert.tokenization import load_vocab

        config = BertConfig.from_preset(preset, vocab_size=len(load_vocab(vocab_file)))
        vocab, owner = vocab_file, f"the preset {preset!r}"
        lower_case = True if lower_case is None else lower_case
    if not os.path.isfile(vocab):
        raise InputNotFoundError(f"vocab_file {vocab!r} does not exist.")
    check_vocab_matches(vocab, config.vocab_size, owner, checkpoint=checkpoint)
    return config, vocab, lower_case

