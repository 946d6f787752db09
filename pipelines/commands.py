"""How a `keras-bert` subcommand runs: its outputs and --max_seq_length checked before
any work, then the work under one rule for exit codes (see
`keras_bert.pipelines.reporting`). A user mistake is one line on stderr,
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

from keras_bert.core.errors import UserInputError
from keras_bert.pipelines.arguments import check_max_seq_length
from keras_bert.pipelines.field_flags import flag_of, in_flag_terms
from keras_bert.pipelines.paths import check_output
from keras_bert.pipelines.reporting import (
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
                check_output(value, kind, flag_of(dest))
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
        message = " ".join(in_flag_terms(e, args, _one_line(e)).split())
        print(f"{prog}: error: {message}", file=sys.stderr)
        emit("error", exit_code=EXIT_USAGE, message=message)
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
