"""The one way keras_bert stops on a signal: SIGTERM (a scheduler's preemption notice,
`kill`) and SIGINT (Ctrl-C) are noted by a single handler, and the work stops at a
safe point, with every cleanup run and nothing half-written published.

- `stop_on_signals()`: within the block, a signal raises at once in the main thread
  (`Terminated` for SIGTERM, `KeyboardInterrupt` for Ctrl-C), and the block ends with
  that exception even where it got lost on the way (see below).
- `deferred()`: within it, a signal is only noted; the work asks `requested()` or calls
  `check()` at its own safe points (training saves a checkpoint at the next step first).
  A second Ctrl-C there stops at once.
- `check()`: raises if a signal was noted. Every writer calls it right before it renames
  a finished output into place (`keras_bert.core.fileio`), so a signal that arrived
  while the output was being written never lets it be published.
- `exits_at_once(prog)`: while a command starts (its imports: nothing written yet), a
  signal prints one line and ends the process with 143 or 130 at once; a half-imported
  TensorFlow has nothing worth tearing down, and has crashed doing so.

Why noting is not enough to raise once: Python runs a signal handler between two
bytecodes of the main thread, which can be inside a garbage-collector callback (JAX,
which Keras 3 imports, registers one) or a finalizer; an exception raised there is
printed as "Exception ignored in ..." and dropped. Such a dropped exception is caught
here (`sys.unraisablehook`) and the signal delivered again a moment later, outside the
callback; and the noted signal stays until the outermost block ends, so each `check()`
on the way raises it again.

Outside the main thread no handler can be installed: the blocks change nothing there.
Forked data workers restore the default action themselves (`keras_bert.data.workers`).

Example:

>>> import os, signal
>>> try:
...     with stop_on_signals():
...         os.kill(os.getpid(), signal.SIGTERM)  # raises at the next bytecode
...         print("not reached")
... except Terminated as e:
...     print(e.signal_name, exit_code(e))
SIGTERM 143
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading

from keras_bert.core.errors import Terminated

# The exit codes of a command stopped by each signal (128 + its number, as a shell reports).
EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}
_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# How long a signal whose exception was dropped (in a gc callback or finalizer) waits
# before it is delivered again: long enough to be out of that callback.
_REDELIVERY_DELAY = 0.05


class _State:
    """What the handler knows, for the whole process (handlers are process-wide)."""

    def __init__(self):
        self.depth = 0  # how many stop_on_signals/deferred blocks are open
        self.deferring = 0  # how many of them are deferred()
        self.exit_prog = None  # exits_at_once: the command to name in its one line
        self.noted = None  # the first signal's name ("SIGTERM", "SIGINT") since depth 0
        self.raised = False  # its exception has been raised (and not reported lost)
        self.redelivering = False
        self.previous_handlers = {}
        self.previous_hook = None


_state = _State()


def exception_for(name: str) -> KeyboardInterrupt:
    """The exception a signal raises: `Terminated` for SIGTERM, `KeyboardInterrupt`
    for SIGINT."""
    if name == "SIGINT":
        return KeyboardInterrupt()
    error = Terminated(f"terminated by {name}")
    error.signal_name = name
    return error


def exit_code(error: BaseException) -> int:
    """The exit code for a signal's exception: 143 for SIGTERM, 130 for Ctrl-C."""
    return EXIT_CODES[signal_name(error)]


def signal_name(error: BaseException) -> str:
    """The signal a `KeyboardInterrupt` stands for ("SIGTERM" for `Terminated`)."""
    return getattr(error, "signal_name", "SIGINT")


def message(prog: str, name: str) -> str:
    """The one line a command prints when `name` stopped it."""
    return f"{prog}: interrupted" if name == "SIGINT" else f"{prog}: terminated by {name}"


def requested() -> str | None:
    """The name of the signal noted since the outermost block began, or None."""
    return _state.noted


def check() -> None:
    """Raises the noted signal's exception, if a signal arrived; a safe point of the
    work (between steps, before an output is renamed into place)."""
    if _state.noted is not None:
        _state.raised = True
        raise exception_for(_state.noted)


def acknowledge() -> None:
    """Marks the noted signal as reported (a command printed its line): the blocks
    still open end without raising it again."""
    _state.noted = None
    _state.raised = False


def _on_signal(signum, frame):
    name = signal.Signals(signum).name
    redelivered, _state.redelivering = _state.redelivering, False
    if _state.noted is None:
        _state.noted = name
    elif not redelivered:
        # A repeat while the first is being handled: cleanup must not be cut short,
        # except by a second Ctrl-C during deferred work (stop now, without saving).
        if name == "SIGINT" and _state.deferring and not _state.raised:
            _state.raised = True
            raise KeyboardInterrupt
        return
    if _state.exit_prog is not None:
        _exit_now(_state.exit_prog, name)
    if _state.deferring:
        return
    _state.raised = True
    raise exception_for(_state.noted)


def _exit_now(prog: str, name: str):
    print(("\n" if name == "SIGINT" else "") + message(prog, name), file=sys.stderr,
          flush=True)
    os._exit(EXIT_CODES[name])


def _unraisable(unraisable):
    """Python's hook for an exception it cannot raise (in a gc callback, a finalizer):
    a signal's exception lost that way is delivered again shortly, without the
    "Exception ignored" report."""
    error = unraisable.exc_value
    if (isinstance(error, KeyboardInterrupt) and _state.noted is not None
            and _state.depth > 0):
        _state.raised = False
        timer = threading.Timer(_REDELIVERY_DELAY, _redeliver,
                                args=(signal.Signals[_state.noted],))
        timer.daemon = True
        timer.start()
        return
    (_state.previous_hook or sys.__unraisablehook__)(unraisable)


def _redeliver(signum):
    if _state.depth > 0 and _state.noted is not None and not _state.raised:
        _state.redelivering = True
        _thread.interrupt_main(signum)


def _enter(deferring: bool) -> bool:
    """Opens a block; False outside the main thread (nothing is installed there)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if _state.depth == 0:
        _state.noted, _state.raised, _state.redelivering = None, False, False
        for signum in _SIGNALS:
            previous = signal.getsignal(signum)
            if signum == signal.SIGINT and previous is signal.SIG_IGN:
                continue  # started in the background with Ctrl-C ignored: keep it so
            _state.previous_handlers[signum] = signal.signal(signum, _on_signal)
        _state.previous_hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    _state.depth += 1
    _state.deferring += deferring
    return True


def _leave(deferring: bool) -> None:
    _state.depth -= 1
    _state.deferring -= deferring
    if _state.depth == 0:
        for signum, handler in _state.previous_handlers.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        _state.previous_handlers = {}
        sys.unraisablehook, _state.previous_hook = _state.previous_hook, None
        _state.noted, _state.raised = None, False


@contextlib.contextmanager
def stop_on_signals():
    """Within the block, SIGTERM raises `Terminated` and Ctrl-C `KeyboardInterrupt` in
    the main thread, at the next bytecode (a signal that arrives while C++ code runs is
    handled when it returns to Python). The block ends with that exception whenever a
    signal arrived, even where it was lost on the way: dropped in a gc callback,
    swallowed by an `except BaseException`, turned into one of TensorFlow's errors.
    Blocks nest; the handlers in place before the outermost one are put back after it.
    """
    installed = _enter(deferring=False)
    if not installed:
        yield
        return
    try:
        yield
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        if _state.noted is not None:
            _state.raised = True
            raise exception_for(_state.noted) from e
        raise
    else:
        check()
    finally:
        _leave(deferring=False)


@contextlib.contextmanager
def deferred():
    """Within the block a signal is only noted: the work stops itself at its next safe
    point (`requested()`, `check()`, a Keras callback), e.g. after saving a checkpoint;
    a second Ctrl-C raises `KeyboardInterrupt` at once. The noted signal stays noted
    after the block (an enclosing `stop_on_signals` raises it), and the block itself
    raises nothing."""
    installed = _enter(deferring=True)
    try:
        yield
    finally:
        if installed:
            _leave(deferring=True)


@contextlib.contextmanager
def exits_at_once(prog: str):
    """Within the block (a command's start-up: imports, before anything is written), a
    signal prints `message(prog, ...)` and ends the process at once with 143 or 130.
    Use it inside `stop_on_signals` or `deferred`, which install the handler."""
    if _state.depth == 0:
        raise RuntimeError("exits_at_once() needs an enclosing stop_on_signals()")
    previous, _state.exit_prog = _state.exit_prog, prog
    try:
        if _state.noted is not None:  # arrived just before the block
            _exit_now(prog, _state.noted)
        yield
    finally:
        _state.exit_prog = previous
