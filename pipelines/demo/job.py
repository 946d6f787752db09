"""What every stage of `keras-bert demo` shares: its settings (recorded in the output
directory, so that a rerun reuses only work made the same way), the paths of its
artifacts, the stage headers with their timings, and the report that becomes
demo_metrics.json."""

from __future__ import annotations

import dataclasses
import json
import os
import time

from keras_bert.core.checks import option
from keras_bert.core.errors import OutputError
from keras_bert.core.fileio import write_json
from keras_bert.pipelines.plumbing import emit, say
from keras_bert.text.vocab import VOCAB_FILE

DEFAULT_SOURCES = ("stdlib", "numpy", "tensorflow", "keras")
METRICS_FILE = "demo_metrics.json"
EXPORT_NAME = "demo"
STAGES = 8


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    """What the demo builds; a rerun into the same directory must use the same."""

    sources: tuple[str, ...] = DEFAULT_SOURCES
    max_corpus_mb: float = 3.0
    vocab_size: int = 4096
    max_seq_length: int = 64
    max_predictions_per_seq: int = 10
    # L2/H64/A4/I256: pretraining takes half the arithmetic of the tiny preset's H128 and
    # kept every claim with wider margins (measured, issue 26).
    hidden_size: int = 64
    intermediate_size: int = 256
    num_heads: int = 4
    dupe_factor: int = 3
    num_train_steps: int = 2000
    train_batch_size: int = 64
    learning_rate: float = 2e-3
    task_examples_per_class: int = 400
    finetune_epochs: float = 6.0
    finetune_learning_rate: float = 1e-3
    seed: int = 12345


_DEFAULTS = DemoSettings()


@dataclasses.dataclass(frozen=True)
class DemoOptions:
    """What `keras-bert demo` is asked for, declared once (its flags are made from these
    declarations, `keras_bert.core.checks.option`): where its outputs go and the
    `DemoSettings` a user may change (`sources` as one comma-separated string)."""

    output_dir: str = option("keras_bert_demo", "where everything but the SavedModel goes "
                                                "(default: %(default)s)")
    export_dir: str = option("saved_models", f"where the SavedModel goes, as {EXPORT_NAME}/"
                                             "VERSION/ (default: %(default)s)")
    sources: str = option(
        ",".join(_DEFAULTS.sources), "modules whose docstrings form the corpus, and the "
        "derived task's classes: stdlib and/or installed packages (default: %(default)s)")
    max_corpus_mb: float = option(
        _DEFAULTS.max_corpus_mb, "corpus size cap in millions of characters, shared by the "
        "sources (default: %(default)s)", greater_than=0)
    vocab_size: int = option(_DEFAULTS.vocab_size,
                             "WordPiece vocab size (default: %(default)s)", at_least=1)
    num_train_steps: int = option(_DEFAULTS.num_train_steps,
                                  "pretraining steps (default: %(default)s)", at_least=1)
    train_batch_size: int = option(
        _DEFAULTS.train_batch_size, "pretraining sequences per step (default: %(default)s)",
        at_least=1)
    task_examples_per_class: int = option(
        _DEFAULTS.task_examples_per_class, "derived task: training sentences per library "
        "(at most half as many held out) (default: %(default)s)", at_least=1)
    finetune_epochs: float = option(
        _DEFAULTS.finetune_epochs, "derived task: fine-tuning epochs, the same for both "
        "initialisations (default: %(default)s)", greater_than=0)
    finetune_learning_rate: float = option(
        _DEFAULTS.finetune_learning_rate,
        "derived task: peak learning rate (default: %(default)s)", greater_than=0)
    seed: int = option(_DEFAULTS.seed, "fixes corpus split, data, initialization and order "
                                       "(default: %(default)s)")
    progress: bool = option(True, "show progress bars")


def settings_from_args(args) -> DemoSettings:
    return DemoSettings(
        sources=tuple(s.strip() for s in args.sources.split(",") if s.strip()),
        max_corpus_mb=args.max_corpus_mb, vocab_size=args.vocab_size,
        num_train_steps=args.num_train_steps, train_batch_size=args.train_batch_size,
        task_examples_per_class=args.task_examples_per_class,
        finetune_epochs=args.finetune_epochs,
        finetune_learning_rate=args.finetune_learning_rate, seed=args.seed)


def check_directory(output_dir: str, settings: DemoSettings) -> None:
    """A rerun reuses complete work only if it was made with the same settings."""
    path = os.path.join(output_dir, "demo_settings.json")
    record = dataclasses.asdict(settings)
    record["sources"] = list(record["sources"])
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            previous = json.load(f)
        if previous != record:
            changed = sorted(k for k in record if previous.get(k) != record[k])
            raise OutputError(f"{output_dir} holds a demo made with other settings "
                              f"({', '.join(changed)}); use another --output_dir or remove it.")
        return
    write_json(path, record, sort_keys=False)


def demo_paths(out: str) -> dict[str, str]:
    """Where each artifact goes under the output directory (the SavedModel goes under
    --export_dir instead)."""
    return {"corpus": os.path.join(out, "corpus", "train.txt"),
            "heldout_corpus": os.path.join(out, "corpus", "heldout.txt"),
            "vocab": os.path.join(out, VOCAB_FILE),
            "train_data": os.path.join(out, "data", "train"),
            "heldout_data": os.path.join(out, "data", "heldout"),
            "pretrain_run": os.path.join(out, "pretrain"),
            "random_init": os.path.join(out, "random_init"),
            "task_data": os.path.join(out, "task"),
            "finetune_pretrained": os.path.join(out, "finetune", "pretrained"),
            "finetune_random": os.path.join(out, "finetune", "random_init"),
            "attention": os.path.join(out, "attention"),
            "plots": os.path.join(out, "plots"),
            "metrics": os.path.join(out, METRICS_FILE)}


class StageLog:
    """Stage headers (progress lines, or JSON progress events) and their timings: wall
    seconds (`KEY_s`) and this process's CPU seconds (`KEY_cpu_s`, over all its
    threads: what other processes on the machine change least)."""

    def __init__(self):
        self.started = time.monotonic()
        self.cpu_started = time.process_time()
        self.timings: dict[str, float] = {}
        self._current = None

    def start(self, number: int, key: str, title: str) -> None:
        self.end()
        say(f"\n[{number}/{STAGES}] {title}")
        emit("progress", stage=key, number=number, of=STAGES, title=title)
        self._current = (key, time.monotonic(), time.process_time())

    def end(self) -> None:
        if self._current:
            key, started, cpu_started = self._current
            self.timings[key + "_s"] = round(time.monotonic() - started, 1)
            self.timings[key + "_cpu_s"] = round(time.process_time() - cpu_started, 1)
            self._current = None


@dataclasses.dataclass
class DemoJob:
    """One run of the demo: what its stages read (settings, paths, flags) and what they
    add to (`report`, in stage order: the keys of demo_metrics.json)."""

    settings: DemoSettings
    out: str
    export_dir: str
    progress: bool
    paths: dict[str, str]
    stages: StageLog
    report: dict
