"""How a command stops and what it leaves on the terminal: SIGTERM handled like Ctrl-C
(`sigterm_stops`), and the C++ log lines of TensorFlow's converters kept off stderr
(`native_logs_hidden`).

A command that runs inside `sigterm_stops` and is sent SIGTERM raises
`keras_bert.core.errors.Terminated` (a KeyboardInterrupt) in its main thread: every cleanup
runs (temporaries, half-written outputs, TensorFlow's own temporary files at exit) and
`flags.run_command` reports one line and exits 143, as it exits 130 on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading

from keras_bert.core.errors import Terminated


@contextlib.contextmanager
def sigterm_stops(insist: bool = True):
    """Within the block, SIGTERM raises `Terminated` in the main thread (the previous
    handler is put back afterwards). A signal that arrives while TensorFlow's C++ code
    runs is handled when it returns to Python. The block ends with `Terminated` whenever
    SIGTERM arrived, even where the exception got lost on the way: turned into one of
    TensorFlow's errors, or raised inside a finalizer, where Python only prints it.
    `insist=False` leaves that to the block, for one (a whole command) that handles
    `Terminated` itself and reports it in its result."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = threading.Event()

    def terminate(signum, frame):
        if not received.is_set():
            received.set()
            raise Terminated("terminated by SIGTERM")

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    except Terminated:
        raise
    except BaseException as e:
        if insist and received.is_set():
            raise Terminated("terminated by SIGTERM") from e
        raise
    else:
        if insist and received.is_set():
            raise Terminated("terminated by SIGTERM")
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def native_logs_hidden(hidden: bool = True):
    """Within the block, what C++ code writes to file descriptor 2 (the TFLite/MLIR
    converter's and tf2onnx's log lines, which TF_CPP_MIN_LOG_LEVEL does not reach) goes
    to an unlinked temporary file and is dropped; Python's own `sys.stderr` (progress,
    warnings, errors) still reaches the terminal. `hidden=False` (`--debug`) changes
    nothing."""
    if not hidden:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    python_stderr = sys.stderr
    try:
        uses_fd2 = sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):  # already redirected (pytest's capsys)
        uses_fd2 = False
    with tempfile.TemporaryFile() as sink:  # unlinked at once: nothing left on disk
        os.dup2(sink.fileno(), 2)
        if uses_fd2:
            sys.stderr = open(saved, "w", buffering=1, encoding=python_stderr.encoding,
                              errors="backslashreplace", closefd=False)
        try:
            yield
        finally:
            if uses_fd2:
                sys.stderr.flush()
                sys.stderr = python_stderr
            os.dup2(saved, 2)
            os.close(saved)
