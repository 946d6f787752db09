"""TF Serving versions of an export, claimed atomically: `claim_version`.

Every export writes `OUTPUT_DIR/NAME/VERSION/`, VERSION one more than the highest there.
Several exports to one NAME at once must not pick the same number, and a half-written
version must never be visible under a numeric name (TF Serving's file watcher loads any
numeric directory it sees). So an export:

1. locks `NAME/` itself (`flock` on the directory; a few milliseconds);
2. removes the temporaries of exports that died (kill -9, a power cut): a temporary is
   live while its exporter holds a lock on it, and the kernel drops that lock when the
   process ends, however it ends;
3. takes the next number above every version directory *and every live temporary*;
4. creates its hidden temporary `NAME/.VERSION.tmp-XXXXXXXX/` and locks it, then unlocks
   `NAME/`;
5. writes, and renames the temporary to `NAME/VERSION/` once complete.

An error or a signal removes the temporary, and `NAME/` (and `OUTPUT_DIR/`) if the
export created them and they are still empty. Local paths only (POSIX `flock`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
from collections.abc import Iterator

from keras_bert.core import fileio, stopping
from keras_bert.core.errors import OutputExistsError


def next_version(model_dir: str) -> int:
    """1 + the highest numeric version under `model_dir` (1 if none); see
    `claim_version` for the number an export actually takes."""
    versions = [int(n) for n in (os.listdir(model_dir) if os.path.isdir(model_dir) else [])
                if n.isdigit()]
    return max(versions, default=0) + 1


def _version_of_temporary(name: str) -> int | None:
    target = fileio.temporary_target(name)
    return int(target) if target is not None and target.isdigit() else None


def _try_lock(path: str) -> int | None:
    """An open descriptor of `path` holding its exclusive lock, or None when another
    process holds it (or it vanished)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    return fd


def remove_dead_temporaries(model_dir: str) -> tuple[list[str], list[int]]:
    """Removes the version temporaries under `model_dir` whose exporter is gone; returns
    (their paths, the versions live exports are writing). Call it with `model_dir`
    locked, as `claim_version` does."""
    removed, live = [], []
    for name in sorted(os.listdir(model_dir)):
        version = _version_of_temporary(name)
        if version is None:
            continue
        path = os.path.join(model_dir, name)
        fd = _try_lock(path)
        if fd is None:
            if os.path.exists(path):
                live.append(version)
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)
        removed.append(path)
    return removed, live


def _make_directories(path: str) -> list[str]:
    """`os.makedirs(path)`; returns the directories it created, deepest first."""
    created, probe = [], os.path.abspath(path)
    while not os.path.isdir(probe):
        created.append(probe)
        probe = os.path.dirname(probe)
    os.makedirs(path, exist_ok=True)
    return created


def _remove_if_empty(directories: list[str]) -> None:
    for directory in directories:  # deepest first; a non-empty one stays
        with contextlib.suppress(OSError):
            os.rmdir(directory)


@contextlib.contextmanager
def claim_version(model_dir: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Claims the next version of `model_dir` (see the module docstring) and yields
    (version, temporary directory to write it in). On a normal exit the temporary
    becomes `model_dir/VERSION`; on an error (or KeyboardInterrupt) it is removed, and
    so are the directories the claim created if they are empty.

    Example:

    >>> import tempfile
    >>> base = os.path.join(tempfile.mkdtemp(), "models", "sst2")
    >>> with claim_version(base) as (version, tmp):
    ...     open(os.path.join(tmp, "model.tflite"), "wb").close()
    >>> version, os.listdir(base)
    (1, ['1'])
    """
    model_dir = os.path.abspath(os.fspath(model_dir))
    created = _make_directories(model_dir)
    # SIGTERM and Ctrl-C stop the export without fail (keras_bert.core.stopping).
    with stopping.stop_on_signals():
        yield from _claimed_version(model_dir, created)


def _claimed_version(model_dir: str, created: list) -> Iterator[tuple[int, str]]:
    lock = temporary = None
    try:
        base = os.open(model_dir, os.O_RDONLY)
        try:
            fcntl.flock(base, fcntl.LOCK_EX)
            _, live = remove_dead_temporaries(model_dir)
            version = max(next_version(model_dir) - 1, *live, 0) + 1
            temporary = fileio.temporary_path(os.path.join(model_dir, str(version)))
            os.mkdir(temporary)
            lock = _try_lock(temporary)
        finally:
            os.close(base)  # and with it the lock on model_dir
        yield version, temporary
        target = os.path.join(model_dir, str(version))
        if os.path.exists(target):  # made by something else than an export
            raise OutputExistsError(f"{target!r} appeared while this export was written; "
                                    "nothing was replaced: export again.")
        stopping.check()  # a stopped export publishes nothing
        os.rename(temporary, target)
        temporary = None
    except BaseException:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        _remove_if_empty(created)
        raise
    finally:
        if lock is not None:
            os.close(lock)
