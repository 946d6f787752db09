"""File plumbing shared by every stage: local and remote paths, atomic writes and
directories, hidden temporaries, strict JSON. Input files are found and fingerprinted in
`input_files`.

This is the bottom of the package: it imports no model, data or training code. Local
paths go through `os` (fast, and safe in forked worker processes); paths with a scheme
(`gs://`, `ram://`, `s3://`, ...) go through `tf.io.gfile`, so every reader and writer
accepts whatever filesystems TensorFlow has.

Everything written here is all or nothing: it goes to a hidden temporary name beside the
target (`.NAME.tmp-XXXXXXXX`) and is renamed into place once complete; an error removes
the temporary, and a killed process leaves at most such a hidden file, which
`remove_stale_temporaries` clears and which no `*.ext` glob matches.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator

import numpy as np

from keras_bert.core import stopping
from keras_bert.core.errors import OutputError, OutputExistsError, Setting

_TEMPORARY_MARK = ".tmp-"


def is_remote(path: str | os.PathLike) -> bool:
    """Whether `path` names a non-local filesystem (has a scheme such as `gs://`).

    Example:

    >>> is_remote("gs://bucket/x"), is_remote("/data/x"), is_remote("ram://x")
    (True, False, True)
    """
    return "://" in os.fspath(path)


def _gfile():
    import tensorflow as tf  # only for remote filesystems

    return tf.io.gfile


def exists(path: str) -> bool:
    return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def isdir(path: str) -> bool:
    return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def makedirs(path: str) -> None:
    if is_remote(path):
        _gfile().makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def listdir(path: str) -> list[str]:
    return _gfile().listdir(path) if is_remote(path) else os.listdir(path)


def remove(path: str) -> None:
    if is_remote(path):
        _gfile().remove(path)
    else:
        os.remove(path)


def file_size(path: str) -> int:
    """The size of a local or remote file in bytes."""
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def rename(source: str, target: str) -> None:
    """Renames `source` over `target` (atomic on local filesystems), unless a signal
    was noted (`keras_bert.core.stopping.check` raises it instead)."""
    stopping.check()  # a stopped run publishes nothing
    if is_remote(source):
        _gfile().rename(source, target, overwrite=True)
    else:
        os.replace(source, target)


def open_file(path: str, mode: str = "r"):
    """Opens a local or remote file (`mode` as for `open`; text is UTF-8)."""
    if is_remote(path):
        return _gfile().GFile(path, mode)
    return open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"}))


def temporary_path(path: str) -> str:
    """A fresh hidden name beside `path` to write it under until it is complete. The
    name carries the writer's process id (`.NAME.tmp-PID-RANDOM`), so that a later run
    can tell a dead writer's leftovers from a live one's (`remove_dead_temporaries`).

    Example:

    >>> temporary_path("/data/part-00001.tfrecord")  # doctest: +ELLIPSIS
    '/data/.part-00001.tfrecord.tmp-...'
    """
    path = os.fspath(path)
    directory, name = os.path.split(path)
    return os.path.join(directory,
                        f".{name}{_TEMPORARY_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}")


def temporary_writer(name: str) -> int | None:
    """The process id a temporary's name carries; None for a name without one (an
    older temporary, or no temporary).

    Example:

    >>> temporary_writer(".model.tmp-4242-1a2b3c4d"), temporary_writer(".x.tmp-1a2b3c4d")
    (4242, None)
    """
    name = os.path.basename(os.fspath(name).rstrip("/"))
    if not is_temporary(name) or _TEMPORARY_MARK not in name:
        return None
    tail = name[name.rindex(_TEMPORARY_MARK) + len(_TEMPORARY_MARK):]
    pid, _, rest = tail.partition("-")
    return int(pid) if pid.isdigit() and rest else None


def process_alive(pid: int) -> bool:
    """Whether process `pid` exists (this one included)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_dead_temporaries(directory: str, owned: Callable[[str], bool] | None = None,
                            unmarked: bool = False) -> list[str]:
    """Removes the hidden temporaries in `directory` whose writer process has ended (a
    killed download, save or export left them); a live writer's are kept, so this is
    safe while other runs work in `directory`. Temporaries without a process id (older
    names) are kept too, unless `unmarked`. `owned` narrows it to some targets, as for
    `remove_stale_temporaries`. Local directories only; returns the removed paths.

    Example:

    >>> root = tempfile.mkdtemp()
    >>> os.mkdir(os.path.join(root, ".model.tmp-999999999-1a2b3c4d"))  # no such process
    >>> [os.path.basename(p) for p in remove_dead_temporaries(root)]
    ['.model.tmp-999999999-1a2b3c4d']
    """
    if is_remote(directory) or not os.path.isdir(directory):
        return []

    def dead(target: str, name: str) -> bool:
        pid = temporary_writer(name)
        ended = unmarked if pid is None else not process_alive(pid)
        return ended and (owned is None or owned(target))

    removed = []
    for name in os.listdir(directory):
        target = temporary_target(name)
        if target is None or not dead(target, name):
            continue
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        removed.append(path)
    return removed


def is_temporary(name: str) -> bool:
    """Whether a file name is one `temporary_path` makes (or an older `.NAME.tmp`)."""
    name = os.path.basename(name)
    return name.startswith(".") and (_TEMPORARY_MARK in name or name.endswith(".tmp"))


def temporary_target(name: str) -> str | None:
    """The name of the file a temporary stands for; None if `name` is no temporary.

    Example:

    >>> temporary_target(".part-00001.tfrecord.tmp-1a2b3c4d"), temporary_target(".x.tmp")
    ('part-00001.tfrecord', 'x')
    """
    name = os.path.basename(name.rstrip("/"))
    if not is_temporary(name):
        return None
    body = name[1:]
    return body[:body.rindex(_TEMPORARY_MARK)] if _TEMPORARY_MARK in body else body[:-4]


def remove_stale_temporaries(directory: str, owned: Callable[[str], bool] | None = None
                             ) -> list[str]:
    """Removes the hidden temporaries an interrupted writer left in `directory` (files
    and directories); returns their paths. Only call it when no other writer is at work
    in `directory`, or pass `owned`: a test of the target's name (`temporary_target`)
    that keeps the temporaries of files other writers may be writing right now."""
    if not isdir(directory):
        return []
    removed = []
    for name in listdir(directory):
        name = name.rstrip("/")
        if not is_temporary(name):
            continue
        if owned is not None and not owned(temporary_target(name)):
            continue
        path = os.path.join(directory, name)
        if is_remote(path):
            gfile = _gfile()
            (gfile.rmtree if gfile.isdir(path) else gfile.remove)(path)
        elif os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.remove(path)
        removed.append(path)
    return removed


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[str]:
    """Yields a temporary path to write `path`'s content to; on success it is renamed
    over `path`, on an error (or Ctrl-C) removed. Use it with writers that take a path
    (`np.save`, `model.save`; `suffix` ends the temporary's name: Keras wants `.keras`).

    Example:

    >>> path = os.path.join(tempfile.mkdtemp(), "x.txt")
    >>> with atomic_path(path) as tmp:
    ...     _ = open(tmp, "w").write("done")
    >>> open(path).read()
    'done'
    """
    path = os.fspath(path)
    directory = os.path.dirname(path)
    if directory:
        makedirs(directory)
    temporary = temporary_path(path) + suffix
    try:
        yield temporary
        rename(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            if exists(temporary):
                remove(temporary)
        raise


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w"):
    """Opens a file object whose content replaces `path` only once it is closed without
    an error (`mode` "w" for UTF-8 text or "wb").

    Example:

    >>> path = os.path.join(tempfile.mkdtemp(), "tokens.txt")
    >>> with atomic_write(path) as f:
    ...     _ = f.write("[PAD]\\n")
    >>> open(path).read()
    '[PAD]\\n'
    """
    with atomic_path(path) as temporary, open_file(temporary, mode) as f:
        yield f


def write_json(path: str | os.PathLike, data, indent: int = 2, sort_keys: bool = True) -> None:
    """Writes `data` as JSON to `path`, atomically.

    Example:

    >>> path = os.path.join(tempfile.mkdtemp(), "metrics.json")
    >>> write_json(path, {"step": 10})
    >>> read_json(path)
    {'step': 10}
    """
    text = json_text(data, indent=indent, sort_keys=sort_keys)
    with atomic_write(path) as f:
        f.write(text + "\n")


def json_text(data, indent: int | None = None, sort_keys: bool = True) -> str:
    """`data` as strict JSON text: NaN and infinities become null (see `strict_json`),
    numpy scalars and arrays plain numbers and lists; every JSON file and line the
    package writes goes through it, so that any parser reads them.

    Example:

    >>> json_text({"loss": float("nan"), "step": np.int64(3)})
    '{"loss": null, "loss_null_reason": "not a number", "step": 3}'
    """
    return json.dumps(strict_json(_plain(data)), indent=indent, sort_keys=sort_keys,
                      allow_nan=False, default=_number_or_text)


def _number_or_text(value):
    """JSON for what `json` cannot write (a scalar tensor, a path): a number if it is
    one, else its text."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return number if math.isfinite(number) else None


def _plain(data):
    """numpy scalars and arrays inside `data` as Python numbers and lists."""
    if isinstance(data, dict):
        return {key: _plain(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_plain(value) for value in data]
    if isinstance(data, (np.generic, np.ndarray)):
        return data.tolist()
    return data


def strict_json(data, reason: str = "not a number"):
    """`data` with every NaN or infinite float replaced by None (null in JSON, which has
    no NaN), and beside each such value in a dict its `<key>_null_reason`: strict JSON
    that any parser reads.

    Example:

    >>> strict_json({"accuracy": 0.5, "pearson": float("nan"), "dev": [float("inf")]},
    ...             reason="constant predictions")
    {'accuracy': 0.5, 'pearson': None, 'pearson_null_reason': 'constant predictions', 'dev': [None]}
    """
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            out[key] = strict_json(value, reason)
            if isinstance(value, float) and not math.isfinite(value):
                out[f"{key}_null_reason"] = reason
        return out
    if isinstance(data, (list, tuple)):
        return [strict_json(value, reason) for value in data]
    if isinstance(data, float) and not math.isfinite(data):
        return None
    return data


def read_json(path: str | os.PathLike):
    """Reads a JSON file (local or remote)."""
    with open_file(os.fspath(path)) as f:
        return json.load(f)


def atomic_directory(directory: str | os.PathLike, write: Callable[[str], None],
                     overwrite: bool = False) -> None:
    """Creates `directory` by calling `write(temporary_directory)` and renaming the
    result into place, so an interrupted write never leaves a half-written directory.

    A non-empty `directory` is an `OutputExistsError` unless `overwrite=True`, which
    replaces it only once the new content is complete. The rule holds at the rename
    too: without `overwrite`, content another writer put in `directory` meanwhile is
    never replaced (this write fails with `OutputExistsError` and leaves nothing); with
    it, the later writer wins whole. A signal noted while `write` ran
    (`keras_bert.core.stopping`) stops it before the rename. The directory gets the mode
    `os.makedirs` would give it (the umask's), so other users can read it where the
    umask lets them. Local paths only.

    Example:

    >>> target = os.path.join(tempfile.mkdtemp(), "model")
    >>> atomic_directory(target, lambda tmp: open(os.path.join(tmp, "a"), "w").close())
    >>> os.listdir(target)
    ['a']
    """
    directory = os.path.abspath(os.fspath(directory))
    check_writable(directory, kind="directory")
    os.makedirs(os.path.dirname(directory), exist_ok=True)
    if os.path.isdir(directory) and os.listdir(directory) and not overwrite:
        raise OutputExistsError.advising(
            f"{directory!r} exists and is not empty; choose a new directory, remove it "
            "first, or pass ", Setting("overwrite", True), " to replace it.")
    # What a killed writer of this directory left (a process that has ended; a live
    # writer's temporary stays).
    name = os.path.basename(directory)
    remove_dead_temporaries(os.path.dirname(directory), owned=lambda target: target == name)
    tmp = _new_temporary_directory(directory)
    # SIGTERM and Ctrl-C stop the write without fail, even in a library call (Python's
    # own Ctrl-C handler loses its exception inside a gc callback).
    with stopping.stop_on_signals():
        try:
            write(tmp)
            publish_directory(tmp, directory, overwrite=overwrite)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def publish_directory(source: str, directory: str, overwrite: bool = False) -> None:
    """Renames the complete directory `source` to `directory`, which must be absent or
    empty unless `overwrite`. The test and the rename are one step (rename(2) replaces
    an empty directory and refuses a non-empty one), so two writers racing for one
    `directory` never lose each other's work silently: without `overwrite` the later
    gets `OutputExistsError`; with it, the content in place is moved aside and removed
    once `source` is in (the later writer wins whole). Raises the noted signal
    (`stopping.check`) instead of publishing what a stopped run wrote."""
    stopping.check()
    directory = os.path.abspath(directory)
    parent, name = os.path.split(directory)
    while True:
        old = None
        if overwrite and os.path.isdir(directory) and os.listdir(directory):
            # Moved aside, not deleted: it must survive until the new one is in place.
            old = tempfile.mkdtemp(prefix=f".{name}.old{_TEMPORARY_MARK}{os.getpid()}-",
                                   dir=parent)
            with contextlib.suppress(FileNotFoundError):  # another writer moved it
                os.replace(directory, os.path.join(old, "previous"))
        try:
            os.rename(source, directory)
        except OSError as e:
            if old is not None and not os.path.exists(directory):
                os.replace(os.path.join(old, "previous"), directory)
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            if not overwrite:
                raise OutputExistsError.advising(
                    f"{directory!r} was written by another run while this one worked; "
                    "nothing of it was replaced: choose a new directory, or pass ",
                    Setting("overwrite", True), " to replace it.") from None
            continue  # another writer published in between: the later one wins
        finally:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        return


def _new_temporary_directory(directory: str) -> str:
    """Creates and returns a fresh hidden directory beside `directory` (its
    `temporary_path`) with the mode `os.makedirs` gives under the current umask."""
    # Not tempfile.mkdtemp: its 0700 would survive the rename into place, and a model
    # server running as another user could not read the run or export directory.
    while True:
        path = temporary_path(directory)
        try:
            os.mkdir(path)
            return path
        except FileExistsError:  # a name taken already (unlikely): draw another
            continue


def check_writable(path: str | os.PathLike, kind: str = "file", what: str | None = None
                   ) -> None:
    """Raises `OutputError` before any work if `path` cannot be written as a `kind`
    ("file" or "directory"): a directory where a file is wanted (or the reverse), or a
    location whose nearest existing parent is not a writable directory, or lets nothing
    be created (tried). Remote paths are not checked (their permissions show on write).

    Example:

    >>> check_writable(tempfile.mkdtemp(), kind="file", what="output")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.OutputError: output '...' is a directory; give a file path.
    """
    path = os.fspath(path)
    label = f"{what} {path!r}" if what else repr(path)
    if is_remote(path):
        return
    path = os.path.abspath(path)
    if kind == "file" and os.path.isdir(path):
        raise OutputError(f"{label} is a directory; give a file path.")
    if kind == "directory" and os.path.exists(path) and not os.path.isdir(path):
        raise OutputError(f"{label} is a file; give a directory path.")
    existing = path if os.path.isdir(path) else os.path.dirname(path)
    if os.path.islink(path) and not os.path.exists(path):
        existing = path
    while not os.path.exists(existing):
        if os.path.islink(existing):  # creating it, or anything under it, would fail
            raise OutputError(f"{label} cannot be created: {existing!r} is a symbolic link "
                              f"to {os.readlink(existing)!r}, which does not exist; create "
                              "its target or give another path.")
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise OutputError(f"{label} cannot be created: {existing!r} is a file.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"{label} cannot be written: {existing!r} is not writable.")
    probe = temporary_path(os.path.join(existing, "keras_bert-write-check"))
    try:  # a real creation: os.access says yes to root where nothing can be (/proc)
        os.mkdir(probe)
    except OSError as e:
        raise OutputError(f"{label} cannot be written in {existing!r} ({e.strerror}).") from None
    finally:  # C calls alone, so that a Ctrl-C in between cannot leave the probe
        if os.access(probe, os.F_OK):
            os.rmdir(probe)
