"""Checks of a command's paths before any work: inputs that exist and are of the right
kind, a --model checkpoint resolved with its vocab and casing flags (`resolve_model`),
outputs that can be written (nothing left behind by the check) and that spare the inputs
(the flags' paths that `keras_bert.core.input_files.check_spares_input` compares:
`input_paths`), and an output removed again when the work that created it fails.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil

from keras_bert.core.errors import ArgumentError, InputNotFoundError
from keras_bert.core.fileio import check_writable, is_remote


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


def resolve_model(model: str, vocab_file: str | None, do_lower_case: bool | None,
                  max_seq_length: int | None, *, finetuning_runs: bool):
    """The checkpoint --model names, opened (`open_artifact`) with --vocab_file
    and --do_lower_case and checked before any weights load: its vocab is a file that
    fits the model (a fine-tuning run's, with `finetuning_runs`, by its size only) and
    --max_seq_length, when given, fits its positions.

    Example:

    >>> resolve_model("/nonexistent/model", None, None, None, finetuning_runs=False)
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.InputNotFoundError: No checkpoint at '/nonexistent/model': it does not exist (give a checkpoint directory or a Google checkpoint prefix).
    """
    from keras_bert.checkpoints import open_artifact

    resolved = open_artifact(model, vocab_file, do_lower_case, owner=f"the model {model!r}",
                             vocab_remedy="pass --vocab_file",
                             finetuning_runs=finetuning_runs)
    require_file(resolved.vocab_file, "--vocab_file")
    resolved.check_vocab(against_own=resolved.kind != "finetuning_run")
    positions = resolved.config.max_position_embeddings
    if max_seq_length is not None and max_seq_length > positions:
        raise ArgumentError(f"--max_seq_length {max_seq_length} is longer than the model's "
                            f"{positions} positions; use at most {positions}",
                            field="max_seq_length")
    return resolved


def require_output_file(path: str, what: str) -> str:
    """`path` if a file can be written there (checked before any work; nothing is left
    behind)."""
    check_output(path, "file", what)
    return path


def require_output_directory(path: str, what: str) -> str:
    """`path` if a directory can be created or written there (checked before any work;
    nothing is left behind)."""
    check_output(path, "directory", what)
    return path


def check_output(path: str, kind: str, what: str) -> None:
    """Raises `OutputError` (naming `what`) unless a `kind` ("file" or "directory") can
    be written at `path`: the kind and permission bits, then a real write (file modes
    say nothing to root, nor about /proc-like or full filesystems, where the write
    would fail only after the work); see `check_writable`."""
    check_writable(path, kind=kind, what=what)


def input_paths(value: str, kind: str) -> list[str]:
    """The existing inputs an input flag's `value` names, as `check_spares_input`
    (`keras_bert.core.input_files`) compares them: local paths resolved (`os.path.realpath`), remote ones (`gs://...`) as given.
    `kind` "file", "directory"; "checkpoint": a directory or file, or for a checkpoint
    prefix (`dir/model.ckpt-100`, beside its `.index`) the directory it lives in;
    "patterns": comma-separated globs, the local files they match (remote globs as
    given). A local path that does not exist or is not of its kind names nothing (the
    command says what is wrong with it), and neither does a checkpoint name (`hf://...`,
    a Google release name).

    Example:

    >>> input_paths("/nonexistent/data", "directory"), input_paths("/", "file")
    ([], [])
    >>> input_paths("gs://b/*.txt", "patterns")
    ['gs://b/*.txt']
    """
    if kind == "patterns" and not os.path.isfile(value):
        found = []
        for pattern in (p.strip() for p in value.split(",")):
            if is_remote(pattern):
                found.append(pattern)
            elif pattern:  # as `input_files.expand_patterns` reads them
                pattern = os.path.expanduser(pattern)
                found += [os.path.realpath(f) for f in (
                    [pattern] if os.path.isfile(pattern) else glob.glob(pattern))
                    if os.path.isfile(f)]
        return found
    if value.startswith("hf://"):
        return []
    if is_remote(value):
        return [value]
    if kind == "checkpoint" and not os.path.exists(value) and os.path.isfile(value + ".index"):
        return [os.path.realpath(os.path.dirname(os.path.abspath(value)))]
    if kind == "checkpoint" and os.path.isfile(os.path.join(value, "saved_model.pb")):
        return []  # an export, no checkpoint: the command says so
    fits = {"file": os.path.isfile, "directory": os.path.isdir}.get(kind, os.path.exists)
    return [os.path.realpath(value)] if fits(value) else []


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
