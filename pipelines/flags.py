"""What every `keras-bert` subcommand shares: one boolean-flag style, options built from
the library's dataclasses, checks of paths and numbers before any work, and one rule
for exit codes.

Output: `--quiet` (results and errors only) and `--json` (stdout holds JSON objects,
one a line; see `Output` and `emit`) work the same on every subcommand.

Exit codes: 0 success; 2 a user mistake (bad flag, missing or unusable file, data or
checkpoints that do not fit together), reported as one line on stderr that names the
thing and says what to do; 1 a real failure, reported as one short line (the traceback
only with `--debug`); 130 interrupted by Ctrl-C; 143 stopped by SIGTERM (a saved
checkpoint lets the same command resume).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import logging
import os
import re
import shlex
import shutil
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable

from keras_bert.core.errors import ArgumentError, InputNotFoundError, OutputError, UserInputError
from keras_bert.core.fileio import check_writable, is_remote, json_text

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
# 128 + the signal's number, as shells report a process a signal ended: SIGINT (Ctrl-C),
# and SIGTERM, which schedulers read as "terminated, restart me".
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
# The exit status of a run the library reports stopped by a signal (by its name).
SIGNAL_EXIT_CODES = {"SIGTERM": EXIT_TERMINATED, "SIGINT": EXIT_INTERRUPTED}


# Whatever starts like a number is a value for the flag's type to check (argparse before
# Python 3.13 takes "-2e-5" for a flag: "expected one argument"). Then what starts a flag.
_NUMBER_LIKE, _FLAG_NAME = re.compile(r"^-\.?\d"), re.compile(r"^--?[A-Za-z][\w-]*$")

# Flags of google-research/bert's scripts and of other commands -> this command's (the first
# it has); spelling alone would offer --eval_batch_size for finetune's --batch_size.
FLAG_ALIASES = {
    "--batch_size": "--train_batch_size --eval_batch_size", "--lr": "--learning_rate",
    "--epochs": "--num_train_epochs", "--num_epochs": "--num_train_epochs",
    "--max_length": "--max_seq_length", "--seq_length": "--max_seq_length",
    "--task_name": "--task", "--bert_config_file": "--config", "--vocab": "--vocab_file",
    "--init_checkpoint": "--checkpoint --model", "--checkpoint": "--init_checkpoint --model",
    "--train_steps": "--num_train_steps", "--warmup_steps": "--num_warmup_steps"}


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2) that points to --help
    and names the flag meant by a misspelt or foreign one; numbers are values
    (`--learning_rate -2e-5`); `@FILE` reads more arguments from FILE (see
    `convert_arg_line_to_args`), for flags too long for a command line."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("fromfile_prefix_chars", "@")
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NUMBER_LIKE

    def convert_arg_line_to_args(self, arg_line):
        """The arguments of one @FILE line: none for a blank line or a `#` comment;
        `--flag value` split as a shell would (quote a value with spaces); `--flag=value`
        (its quotes removed) and any other line as one argument."""
        text = arg_line.strip()
        if not text or text.startswith("#"):
            return []
        first, *rest = text.split(None, 1)
        if not _FLAG_NAME.match(first.split("=", 1)[0]):
            return [text]  # as argparse takes a line: the whole of it, one argument
        if "=" not in first:
            return [first, *shlex.split(rest[0] if rest else "")]
        flag, _, value = text.partition("=")
        words = shlex.split(value) if value[:1] in ("'", '"') else [value]
        if len(words) != 1:
            raise ValueError(f"{flag}= takes one value, got {len(words)}")
        return [f"{flag}={words[0]}"]

    def _read_args_from_files(self, arg_strings):
        expanded = []
        for arg in arg_strings:
            if not arg or arg[0] not in self.fromfile_prefix_chars:
                expanded.append(arg)
                continue
            path = arg[1:]
            try:
                with open(path, encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except (OSError, UnicodeDecodeError) as e:
                self.error(f"cannot read the arguments file {path!r}: "
                           f"{getattr(e, 'strerror', None) or e}")
            for number, line in enumerate(lines, 1):
                try:
                    words = self.convert_arg_line_to_args(line)
                except ValueError as e:  # shlex: "No closing quotation", ...
                    self.error(f"arguments file {path}:{number}: {e}: {line.strip()!r}; "
                               "quote a value with spaces whole, as in a shell")
                expanded += self._read_args_from_files(words)
        return expanded

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and not hasattr(namespace, "_unrecognized_by"):
            # The innermost parser left them (the top-level one knows no command's flags).
            namespace._unrecognized_by = self
        return namespace, extras

    def parse_args(self, args=None, namespace=None):
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            getattr(namespace, "_unrecognized_by", self).error(
                f"unrecognized arguments: {' '.join(extras)}")
        return namespace

    def suggestions(self, given: list[str]) -> list[str]:
        """"use --X instead of --Y" for each flag Y in `given` this parser lacks (X: see
        `FLAG_ALIASES`, or a flag spelt alike)."""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        hints = []
        for arg in given:
            name = arg.split("=", 1)[0]
            if (not name.startswith("-") or name == "--" or _NUMBER_LIKE.match(name)
                    or name in self._option_string_actions
                    or (self.allow_abbrev and any(o.startswith(name) for o in known))):
                continue
            meant = [o for o in FLAG_ALIASES.get(name, "").split() if o in known]
            meant = meant or difflib.get_close_matches(
                "--" + name.lstrip("-").replace("-", "_"), known, n=1, cutoff=0.75)
            hints += [f"use {flag} instead of {name}" for flag in meant[:1]]
        return list(dict.fromkeys(hints))

    def error(self, message):
        message = "; ".join([message, *self.suggestions(getattr(self, "_given", ()))])
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parse_boolean(text: str) -> bool:
    """A boolean flag value as google-research/bert's absl flags take them.

    Example:

    >>> parse_boolean("False"), parse_boolean("1"), parse_boolean("yes")
    (False, True, True)
    """
    value = text.strip().lower()
    if value in ("1", "true", "t", "yes", "y"):
        return True
    if value in ("0", "false", "f", "no", "n"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_boolean(parser: argparse.ArgumentParser, name: str, default: bool | None,
                help: str) -> None:
    """The one boolean-flag style of every subcommand: `--name` (true), `--name=false`
    (absl style, as google-research/bert's scripts take them) and `--noname`
    (or `--no-name`).

    Example:

    >>> p = ArgumentParser(prog="x")
    >>> add_boolean(p, "progress", True, "show a progress bar")
    >>> [p.parse_args(a).progress for a in ([], ["--noprogress"], ["--progress=false"])]
    [True, False, False]
    """
    shown = "auto" if default is None else str(default).lower()
    parser.add_argument(f"--{name}", type=parse_boolean, nargs="?", const=True,
                        default=default, metavar="true|false",
                        help=f"{help} (default: {shown})")
    # `--no-name` too (argparse's BooleanOptionalAction spelling, which some commands
    # took before).
    parser.add_argument(f"--no{name}", f"--no-{name}", dest=name, action="store_false",
                        default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def _number(kind: type, low=None, high=None, low_open=False):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
            ) from None
        if low is not None and (value <= low if low_open else value < low):
            raise argparse.ArgumentTypeError(
                f"must be {'>' if low_open else '>='} {low}, got {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be <= {high}, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


positive_int = _number(int, 1)
nonnegative_int = _number(int, 0)
positive_float = _number(float, 0, low_open=True)
nonnegative_float = _number(float, 0)
probability = _number(float, 0, 1)


def check_max_seq_length(args: argparse.Namespace) -> None:
    """The one check and wording of a too short --max_seq_length (every command's): room
    for [CLS], a token and [SEP]; with --next_sentence_prediction, [CLS] A [SEP] B [SEP]."""
    value = getattr(args, "max_seq_length", None)
    minimum, parts = ((5, "[CLS] A [SEP] B [SEP]") if getattr(
        args, "next_sentence_prediction", False) else (3, "[CLS], a token, [SEP]"))
    if isinstance(value, int) and value < minimum:
        raise ArgumentError(f"--max_seq_length must be at least {minimum} ({parts}), got "
                            f"{value}", field="max_seq_length")


def options_from_args(options_class: type, args: argparse.Namespace, **overrides):
    """An options dataclass built from the parsed flags of the same names (fields with
    no flag keep their defaults); `overrides` win.

    Example:

    >>> @dataclasses.dataclass
    ... class Options:
    ...     seed: int = 0
    ...     steps: int = 10
    >>> options_from_args(Options, argparse.Namespace(seed=3, other=1))
    Options(seed=3, steps=10)
    """
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(options_class)
              if f.init and hasattr(args, f.name)}
    values.update(overrides)
    return options_class(**values)


def require_file(path: str, what: str) -> str:
    """`path` if it is an existing file; else `InputNotFoundError` naming `what`."""
    if not is_remote(path) and os.path.isdir(path):
        raise InputNotFoundError(f"{what} {path!r} is a directory; give the file inside it.")
    if is_remote(path) or os.path.isfile(path):
        return path
    raise InputNotFoundError(f"{what} {path!r} does not exist.")


def require_directory(path: str, what: str) -> str:
    """`path` if it is an existing directory; else `InputNotFoundError` naming `what`."""
    if is_remote(path) or os.path.isdir(path):
        return path
    if os.path.exists(path):
        raise InputNotFoundError(f"{what} {path!r} is a file; give a directory.")
    raise InputNotFoundError(f"{what} {path!r} does not exist.")


def require_output_file(path: str, what: str) -> str:
    """`path` if a file can be written there (checked before any work; nothing is left
    behind)."""
    _check_output(path, "file", what)
    return path


def require_output_directory(path: str, what: str) -> str:
    """`path` if a directory can be created or written there (checked before any work;
    nothing is left behind)."""
    _check_output(path, "directory", what)
    return path


def _check_output(path: str, kind: str, what: str) -> None:
    # The kind and permission bits first (clear messages), then a real write: file modes
    # say nothing to root, nor about /proc-like or full filesystems, where the write
    # would fail only after the work.
    check_writable(path, kind=kind, what=what)
    if is_remote(path):
        return
    existing = os.path.abspath(path)
    if kind == "file" or not os.path.isdir(existing):
        existing = os.path.dirname(existing)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    try:
        descriptor, probe = tempfile.mkstemp(prefix=".keras-bert-write-check-", dir=existing)
    except OSError as e:
        raise OutputError(f"{what} {path!r} cannot be written: a file cannot be created in "
                          f"{existing!r} ({e.strerror or e}); choose another location."
                          ) from None
    os.close(descriptor)
    os.remove(probe)


@contextlib.contextmanager
def removed_on_error(path: str):
    """Removes `path` if it did not exist before the block and the block fails (an
    interruption keeps it: complete work inside can be resumed)."""
    existed = is_remote(path) or os.path.exists(path)
    try:
        yield
    except Exception:
        if not existed:
            shutil.rmtree(path, ignore_errors=True)
        raise


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


def add_debug(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", default=False,
                        help="on a failure, print the full traceback (and TensorFlow's "
                             "start-up log)")


# --- how a command reports: text (default), --quiet or --json ----------------------------

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


_USER_MISTAKES = (UserInputError, FileNotFoundError, IsADirectoryError, NotADirectoryError,
                  PermissionError, FileExistsError)


def run_command(prog: str, run: Callable[[argparse.Namespace], int | None],
                args: argparse.Namespace) -> int:
    """Runs a subcommand under the exit-code rule in this module's docstring, once its
    outputs (`OUTPUT_FLAGS`) are known writable and its --max_seq_length long enough.
    Python warnings show as one line each (`PROG: warning: ...`; with `--debug`, with
    their source line)."""
    debug = getattr(args, "debug", False)
    previous_format = warnings.formatwarning
    if not debug:
        warnings.formatwarning = (
            lambda message, category, *_: f"{prog}: warning: {' '.join(str(message).split())}\n")
    mode = "json" if getattr(args, "json", False) else (
        "quiet" if getattr(args, "quiet", False) else "text")
    previous_output = (OUTPUT.mode, OUTPUT.command, OUTPUT.stream)
    OUTPUT.mode, OUTPUT.command, OUTPUT.stream = mode, prog.split()[-1], sys.stdout
    if mode != "text" and getattr(args, "progress", None) is not None:
        args.progress = False  # --quiet and --json draw no progress bars
    try:
        if mode != "json":
            return _run(prog, run, args)
        # stdout is for JSON lines only: what the command prints for people goes to
        # stderr.
        with contextlib.redirect_stdout(sys.stderr):
            code = _run(prog, run, args)
        if code == EXIT_OK:
            emit("result", exit_code=code)
        return code
    finally:
        warnings.formatwarning = previous_format
        OUTPUT.mode, OUTPUT.command, OUTPUT.stream = previous_output


# The output flags every subcommand spells alike, checked before the subcommand runs:
# flag destination -> what it names.
OUTPUT_FLAGS = {"output_dir": "directory", "output": "file", "output_file": "file"}


def _run(prog: str, run: Callable[[argparse.Namespace], int | None],
         args: argparse.Namespace) -> int:
    try:
        check_max_seq_length(args)
        for dest, kind in OUTPUT_FLAGS.items():
            value = getattr(args, dest, None)
            if isinstance(value, str) and value:
                _check_output(value, kind, f"--{dest}")
        return int(run(args) or EXIT_OK)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (keras_bert.core.errors.Terminated)
        name = getattr(e, "signal_name", "SIGINT")
        what = "interrupted" if name == "SIGINT" else f"terminated by {name}"
        print(("\n" if name == "SIGINT" else "") + f"{prog}: {what}", file=sys.stderr)
        emit("error", exit_code=SIGNAL_EXIT_CODES[name], message=what)
        return SIGNAL_EXIT_CODES[name]
    except _USER_MISTAKES as e:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"{prog}: error: {_one_line(e)}", file=sys.stderr)
        emit("error", exit_code=EXIT_USAGE, message=_one_line(e))
        return EXIT_USAGE
    except Exception as e:  # the last line of defence; --debug shows the traceback
        emit("error", exit_code=EXIT_FAILURE, message=f"{type(e).__name__}: {_one_line(e)}")
        if getattr(args, "debug", False):
            traceback.print_exc()
            return EXIT_FAILURE
        print(f"{prog}: failed: {type(e).__name__}: {_one_line(e)} (rerun with --debug for "
              "the traceback)", file=sys.stderr)
        return EXIT_FAILURE


def _one_line(error: BaseException) -> str:
    text = str(error)
    if isinstance(error, OSError) and not isinstance(error, UserInputError) and error.filename:
        text = f"{error.strerror or text}: {error.filename!r}"
    return " ".join(text.split()) or type(error).__name__
