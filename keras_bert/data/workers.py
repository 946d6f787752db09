"""The worker processes that build shards in parallel (`write_shards`): forked once the
tokenizer is built, they run only `shards.build_shard` (Python and numpy) and end with the
process that forked them, however it ends.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed

from keras_bert.core import fileio
from keras_bert.data.shards import ShardBuilder, ShardWriter, TokenizedShard, build_shard
from keras_bert.data.tfrecords import write_tfrecord

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

# The shard builder of a worker process, set by `_init_worker`.
_BUILDER: ShardBuilder | None = None


def write_shards(tasks: Iterator[tuple[int, list[list[str]], str]], writer: ShardWriter,
                 num_workers: int, on_done: Callable[[int, dict], None]) -> None:
    """Builds the shards in this process and in `num_workers - 1` forked processes.

    `tasks` gives (shard id, text documents, path); `on_done(shard_id, counts)` follows
    each shard's file, its counts including `file_bytes`.

    This process tokenizes every shard (TF ops) and writes every file; making the
    instances, masking and serializing (Python and numpy: most of the work) runs in the
    workers, or here when each worker already has two shards waiting (which also keeps
    memory flat). The workers are forked once the tokenizer is built, so they start at
    once and share its tables; they use no TensorFlow (its runtime does not survive a
    fork) and end with this process, even when it is killed (`_die_with_parent`).
    Where fork is not available, everything runs here.
    """
    if "fork" not in multiprocessing.get_all_start_methods():
        num_workers = 1
    num_forked = num_workers - 1
    if num_forked > 0:
        # Python's garbage collector in a worker would write to every object it inherited
        # (making private copies of their pages); frozen objects it leaves alone.
        gc.freeze()
    pool = ProcessPoolExecutor(num_forked, mp_context=multiprocessing.get_context("fork"),
                               initializer=_init_worker, initargs=(writer.builder, os.getpid())
                               ) if num_forked > 0 else None
    in_flight: dict = {}  # future -> the shard's path

    def write(shard_id: int, path: str, records: list[bytes], stats: dict) -> None:
        write_tfrecord(path, records)
        # Lets the reader name a shard truncated later (`tfrecords.check_shard_sizes`).
        on_done(shard_id, {**stats, "file_bytes": fileio.file_size(path)})

    def finish(future) -> None:
        shard_id, records, stats = future.result()
        write(shard_id, in_flight.pop(future), records, stats)

    try:
        for shard_id, text_documents, path in tasks:
            shard = writer.tokenize(shard_id, text_documents)
            for future in [future for future in in_flight if future.done()]:
                finish(future)
            if pool is not None and len(in_flight) < 2 * num_forked:
                in_flight[pool.submit(_build_shard_in_worker, shard)] = path
            else:
                write(shard_id, path, *build_shard(writer.builder, shard))
        for future in as_completed(list(in_flight)):
            finish(future)
    except BaseException:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    else:
        if pool is not None:
            pool.shutdown()
    finally:
        if num_forked > 0:
            gc.unfreeze()


def _init_worker(builder: ShardBuilder, parent_pid: int | None = None) -> None:
    global _BUILDER
    _BUILDER = builder
    # SIGTERM ends a worker at once; the command's handler, which raises in the main
    # thread so that its cleanup runs, is the parent's, not the forked worker's.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if parent_pid is not None:
        _die_with_parent(parent_pid)


def _die_with_parent(parent_pid: int) -> None:
    """Ends this forked worker as soon as the process that forked it dies, even by
    SIGKILL (which runs no clean-up there): on Linux the kernel sends SIGKILL
    (`prctl(PR_SET_PDEATHSIG)`), elsewhere a thread polls the parent's pid."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    except (OSError, AttributeError):
        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)


def _build_shard_in_worker(shard: TokenizedShard) -> tuple[int, list[bytes], dict]:
    return (shard.shard_id, *build_shard(_BUILDER, shard))
