"""What a command leaves on the terminal: the C++ log lines of TensorFlow's converters
kept off stderr (`native_logs_hidden`). How a command stops on SIGTERM and Ctrl-C is
`keras_bert.core.stopping`, for the whole package.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile


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
