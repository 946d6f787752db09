"""How a `keras-bert` command reports: its exit codes, its mode (text, `--quiet` or
`--json`; see `Output` and `emit`), its progress lines and events, and the library's
log messages on stderr.

Exit codes: 0 success; 2 a user mistake (bad flag, missing or unusable file, data or
checkpoints that do not fit together); 1 a real failure; 130 interrupted by Ctrl-C; 143
stopped by SIGTERM (a saved checkpoint lets the same command resume).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys

from keras_bert.core.fileio import json_text

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
# 128 + the signal's number, as shells report a process a signal ended: SIGINT (Ctrl-C),
# and SIGTERM, which schedulers read as "terminated, restart me".
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
# The exit status of a run the library reports stopped by a signal (by its name).
SIGNAL_EXIT_CODES = {"SIGTERM": EXIT_TERMINATED, "SIGINT": EXIT_INTERRUPTED}


class _MessageFormatter(logging.Formatter):
    """The message alone; a warning or error says that it is one."""

    def format(self, record):
        text = super().format(record)
        if record.levelno >= logging.WARNING:
            text = f"{record.levelname.lower()}: {text}"
        return text


@contextlib.contextmanager
def library_logging():
    """Shows the library's progress messages (the `keras_bert` logger, INFO) on stderr
    while a command runs."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_MessageFormatter())
    logger = logging.getLogger("keras_bert")
    previous_level, previous_propagate = logger.level, logger.propagate
    logger.propagate = False  # shown once, by this handler, whatever the root logger has
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if OUTPUT.mode == "text" else logging.WARNING)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous_level)
        logger.propagate = previous_propagate


class Output:
    """How the running command reports. `mode` is "text" (progress bars and progress
    lines), "quiet" (results and errors only) or "json" (stdout holds only JSON objects,
    one a line; the human-readable text goes to stderr). `stream` is where JSON lines
    go: the real stdout."""

    def __init__(self):
        self.mode = "text"
        self.command = None
        self.stream = sys.stdout


OUTPUT = Output()


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    """`--quiet` and `--json`, the same on every subcommand (see `Output`)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quiet", action="store_true", default=False,
                       help="no progress bars or progress lines: only results and errors")
    group.add_argument("--json", action="store_true", default=False,
                       help="machine-readable: stdout holds only JSON objects, one a line "
                            '({"event": "progress"|"result"|"error", "command": ..., ...}); '
                            "the human-readable text goes to stderr")


def say(text: str = "") -> None:
    """A progress line (not a result): shown in text mode only."""
    if OUTPUT.mode == "text":
        print(text, flush=True)


def emit(event: str, **fields) -> None:
    """With --json, writes `{"event": event, "command": ..., **fields}` as one line to
    stdout; otherwise nothing. `event` is "progress" (work under way: a stage, a
    training step or epoch), "result" (the command's outcome) or "error"."""
    if OUTPUT.mode != "json":
        return
    record = {"event": event, "command": OUTPUT.command, **fields}
    OUTPUT.stream.write(json_text(record, sort_keys=False) + "\n")  # strict: NaN is null
    OUTPUT.stream.flush()


def json_progress_callback(what: str, total_steps: int | None = None, every: int = 1,
                           initial_step: int = 0):
    """A Keras callback `emit`ting progress every `every` steps and at each epoch's end
    (`what`: "pretrain", ...): the step (from `initial_step`, where a resumed run
    starts), the total and the latest logs. None unless --json is on."""
    if OUTPUT.mode != "json":
        return None
    import keras

    class JsonProgress(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.step, self._epoch_steps = initial_step, 0
        def on_train_batch_end(self, batch, logs=None):  # once per steps_per_execution
            previous, self.step = self.step, self.step + batch + 1 - self._epoch_steps
            self._epoch_steps = batch + 1
            if self.step // every > previous // every or self.step == total_steps:
                emit("progress", stage=what, step=self.step, total_steps=total_steps,
                     **{k: float(v) for k, v in (logs or {}).items()})

        def on_epoch_end(self, epoch, logs=None):
            self._epoch_steps = 0
            emit("progress", stage=what, epoch=epoch + 1, step=self.step,
                 **{k: float(v) for k, v in (logs or {}).items()})

    return JsonProgress()
