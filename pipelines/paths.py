"""Checks of a command's paths before any work: inputs that exist and are of the right
kind, outputs that can be written (nothing left behind by the check), and an output
removed again when the work that created it fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from keras_bert.core.errors import InputNotFoundError, OutputError
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
    be written at `path`."""
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
