"""How a `keras-bert` subcommand runs: its outputs (writable, and sparing its inputs) and
--max_seq_length checked before any work, then the work under one rule for exit codes (see
`keras_bert.pipelines.plumbing.reporting`). A user mistake is one line on stderr,
`PROG: error: MESSAGE`, that names the flag to change (`field_flags.in_flag_terms`) and
says what to do; a real failure is one short line (the traceback only with `--debug`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import traceback
import warnings
from collections.abc import Callable

from keras_bert.core import stopping
from keras_bert.core.errors import UserInputError
from keras_bert.core.input_files import check_spares_input
from keras_bert.pipelines.plumbing.arguments import check_max_seq_length
from keras_bert.pipelines.plumbing.field_flags import flag_of, in_flag_terms
from keras_bert.pipelines.plumbing.paths import check_output, input_paths
from keras_bert.pipelines.plumbing.reporting import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    OUTPUT,
    SIGNAL_EXIT_CODES,
    emit,
)

_USER_MISTAKES = (UserInputError, FileNotFoundError, IsADirectoryError, NotADirectoryError,
                  PermissionError, FileExistsError)


def run_command(prog: str, run: Callable[[argparse.Namespace], int | None],
                args: argparse.Namespace) -> int:
    """Runs a subcommand under the exit-code rule in this module's docstring, once its
    outputs (`OUTPUT_FLAGS`) are known writable and apart from its inputs
    (`check_outputs_spare_inputs`) and its --max_seq_length long enough.
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
OUTPUT_FLAGS = {"output_dir": "directory", "output": "file", "output_file": "file",
                "index_dir": "directory"}

# The inputs subcommands read, by flag destination -> how its value names them
# (`paths.input_paths`): "file", "directory", "checkpoint" (a checkpoint prefix by its
# directory; a checkpoint name none), "patterns" (comma-separated globs: the files).
INPUT_FLAGS = {"data_dir": "directory", "tfds_data_dir": "directory", "input": "file",
               "input_file": "patterns", "vocab_file": "file", "config": "file",
               "checkpoint": "checkpoint", "init_checkpoint": "checkpoint",
               "model": "checkpoint", "run_dir": "directory", "corpus": "file",
               "queries": "file", "index_dir": "directory"}
# Inputs that are positional arguments -> their name in messages (others: their flag).
INPUT_ARGUMENTS = {"run_dir": "RUN_DIR"}
# What a subcommand's output may share with an input on purpose: subcommand -> input
# destination -> the relations allowed (`paths.path_relation`).
SHARED_INPUTS = {
    # Resuming or extending a run: --output_dir is read and written, and may be (or hold)
    # the --init_checkpoint it resumes from and its own copy of the vocab and config.
    "pretrain": dict.fromkeys(("init_checkpoint", "vocab_file", "config"),
                              frozenset({"is", "holds"})),
    # Without --output_dir, evaluate writes its metrics into --model (deleting nothing).
    "evaluate": {"model": frozenset({"is", "inside"})},
    # Without --output_dir, plot writes into RUN_DIR/plots.
    "plot": {"run_dir": frozenset({"inside"})},
    # search reads back the --index_dir it wrote.
    "search": {"index_dir": frozenset({"is"})},
}


def check_outputs_spare_inputs(command: str, args: argparse.Namespace) -> None:
    """Raises `OutputError` (exit 2, before any work) when an output of `OUTPUT_FLAGS` is,
    holds or lies inside an input of `INPUT_FLAGS` (a run could overwrite or delete what
    it reads), with or without --overwrite, unless `SHARED_INPUTS` allows it for
    subcommand `command`.

    Example:

    >>> check_outputs_spare_inputs("finetune", argparse.Namespace(data_dir="/", output_dir="/"))
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.OutputError: --output_dir '/' is the --data_dir it reads from; writing there would overwrite or delete its inputs: choose another --output_dir.
    """
    inputs = [(dest, path) for dest, kind in INPUT_FLAGS.items()
              if isinstance(value := getattr(args, dest, None), str) and value
              for path in input_paths(value, kind)]
    shared = SHARED_INPUTS.get(command, {})
    for output_dest in OUTPUT_FLAGS:
        output = getattr(args, output_dest, None)
        if not (isinstance(output, str) and output):
            continue
        for dest, path in inputs:
            check_spares_input(output, flag_of(output_dest, args), path,
                               INPUT_ARGUMENTS.get(dest) or flag_of(dest, args),
                               shared.get(dest, ()))


def _run(prog: str, run: Callable[[argparse.Namespace], int | None],
         args: argparse.Namespace) -> int:
    try:
        check_max_seq_length(args)
        for dest, kind in OUTPUT_FLAGS.items():
            value = getattr(args, dest, None)
            if isinstance(value, str) and value:
                check_output(value, kind, flag_of(dest))
        check_outputs_spare_inputs(prog.split()[-1], args)
        return int(run(args) or EXIT_OK)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (keras_bert.core.errors.Terminated)
        return _stopped(prog, stopping.signal_name(e))
    except BaseException as e:
        if stopping.requested() is not None:
            # A signal's exception turned into another error on the way (TensorFlow
            # wraps what a Python callback raised): the signal is what happened.
            return _stopped(prog, stopping.requested())
        if not isinstance(e, Exception):
            raise
        return _failed(prog, e, args)


def _stopped(prog: str, name: str) -> int:
    """Reports the command stopped by signal `name` and returns its exit code."""
    what = "interrupted" if name == "SIGINT" else f"terminated by {name}"
    print(("\n" if name == "SIGINT" else "") + f"{prog}: {what}", file=sys.stderr)
    emit("error", exit_code=SIGNAL_EXIT_CODES[name], message=what)
    stopping.acknowledge()
    return SIGNAL_EXIT_CODES[name]


def _failed(prog: str, e: Exception, args: argparse.Namespace) -> int:
    """Reports a user mistake (exit 2) or a failure (exit 1) and returns the code."""
    debug = getattr(args, "debug", False)
    if isinstance(e, _USER_MISTAKES):
        if debug:
            traceback.print_exception(e)
        message = " ".join(in_flag_terms(e, args, _one_line(e)).split())
        print(f"{prog}: error: {message}", file=sys.stderr)
        emit("error", exit_code=EXIT_USAGE, message=message)
        return EXIT_USAGE
    # The last line of defence; --debug shows the traceback.
    emit("error", exit_code=EXIT_FAILURE, message=f"{type(e).__name__}: {_one_line(e)}")
    if debug:
        traceback.print_exception(e)
        return EXIT_FAILURE
    print(f"{prog}: failed: {type(e).__name__}: {_one_line(e)} (rerun with --debug for "
          "the traceback)", file=sys.stderr)
    return EXIT_FAILURE


def _one_line(error: BaseException) -> str:
    text = str(error)
    if isinstance(error, OSError) and not isinstance(error, UserInputError) and error.filename:
        text = f"{error.strerror or text}: {error.filename!r}"
    return " ".join(text.split()) or type(error).__name__
