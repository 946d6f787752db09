"""The one way keras_bert stops (issue 40): SIGTERM and Ctrl-C end every command with
143 / 130, one line, no traceback, promptly, at any moment (start-up imports included,
and while a garbage-collector callback runs, where Python drops a handler's exception),
and nothing half-written is published; atomic directories never replace what another
writer put there meanwhile; two fine-tunes into one --output_dir give one run and one
clear error; a bogus KERAS_BACKEND is one line and exit 2.

Under `-m slow` a sweep sends both signals to `keras-bert export` at many delays."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import REPO
from export_support import VOCAB, tiny_sst2_run

from keras_bert.core import fileio, stopping
from keras_bert.core.errors import OutputExistsError, Terminated

GLUE = os.path.join(REPO, "tests", "fixtures", "tasks", "glue")
EXPORT_SECONDS = 120  # the longest a tiny export may take on a busy 2-core machine
PROMPT_SECONDS = 8  # from the signal to the exit


@pytest.fixture(autouse=True)
def _interactive_sigint(monkeypatch):
    """Each test as from a terminal: a process started in the background by a shell without
    job control (`cmd &`) inherits SIGINT ignored, which keras-bert rightly keeps ignoring;
    these tests send Ctrl-C, so the worker and its children take it as a terminal does."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    popen = subprocess.Popen

    def interactive_popen(*args, **kwargs):
        kwargs.setdefault("preexec_fn", lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        return popen(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", interactive_popen)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _env(**extra):
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **extra}


# --- the mechanism, in this process -----------------------------------------------------


def _record_unraisable(monkeypatch):
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: dropped.append(u.exc_type))
    return dropped


def test_a_signal_raised_inside_a_gc_callback_is_not_lost(monkeypatch):
    dropped = _record_unraisable(monkeypatch)
    sent = []

    def send_inside_gc(phase, info):
        if phase == "start" and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10000):  # Python runs the handler here, inside the callback
                pass

    before = signal.getsignal(signal.SIGTERM)
    started = time.monotonic()
    with pytest.raises(Terminated):
        with stopping.stop_on_signals():
            gc.callbacks.append(send_inside_gc)
            try:
                gc.collect(0)  # the youngest generation: quick however large the heap
                while time.monotonic() - started < PROMPT_SECONDS:
                    time.sleep(0.01)
            finally:
                gc.callbacks.remove(send_inside_gc)
    assert sent and time.monotonic() - started < 2
    assert dropped == []
    assert signal.getsignal(signal.SIGTERM) is before
    assert sys.unraisablehook is not stopping._unraisable


def test_python_alone_drops_that_exception(monkeypatch):
    """The loss the mechanism repairs, shown with a plain raising handler."""
    def raising(signum, frame):
        raise KeyboardInterrupt

    def send_inside_gc(phase, info):
        if phase == "start":
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10000):
                pass

    previous = signal.signal(signal.SIGTERM, raising)
    gc.callbacks.append(send_inside_gc)
    try:
        dropped = _record_unraisable(monkeypatch)
        gc.collect(0)  # no exception reaches here
    finally:
        gc.callbacks.remove(send_inside_gc)
        signal.signal(signal.SIGTERM, previous)
    assert dropped == [KeyboardInterrupt]


def test_deferred_notes_and_nothing_is_published(tmp_path):
    target = tmp_path / "out"

    def write(tmp):
        with open(os.path.join(tmp, "weights"), "w") as f:
            f.write("complete")
        with stopping.deferred():
            os.kill(os.getpid(), signal.SIGTERM)  # noted only
            for _ in range(10000):
                pass
            assert stopping.requested() == "SIGTERM"

    with pytest.raises(Terminated):
        fileio.atomic_directory(str(target), write)
    assert os.listdir(tmp_path) == []  # neither the output nor its temporary


def test_a_second_ctrl_c_stops_deferred_work_at_once():
    with pytest.raises(KeyboardInterrupt):
        with stopping.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10000):
                pass
            assert stopping.requested() == "SIGINT"
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10000):
                pass
            pytest.fail("the second Ctrl-C did not stop the work")


# --- atomic directories and concurrent writers ------------------------------------------


def _writes(name):
    def write(tmp):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(name)
    return write


def test_a_writer_that_lost_the_race_replaces_nothing(tmp_path):
    target = str(tmp_path / "run")

    def slow_writer(tmp):
        _writes("a")(tmp)
        fileio.atomic_directory(target, _writes("b"))  # another run finishes first

    with pytest.raises(OutputExistsError, match="another run"):
        fileio.atomic_directory(target, slow_writer)
    assert os.listdir(target) == ["b"]
    assert sorted(os.listdir(tmp_path)) == ["run"]  # no temporary left


def test_with_overwrite_the_later_writer_wins_whole(tmp_path):
    target = str(tmp_path / "run")

    def slow_writer(tmp):
        _writes("a")(tmp)
        fileio.atomic_directory(target, _writes("b"))

    fileio.atomic_directory(target, slow_writer, overwrite=True)
    assert os.listdir(target) == ["a"]
    assert sorted(os.listdir(tmp_path)) == ["run"]


def test_dead_writers_temporaries_go_live_ones_stay(tmp_path):
    dead = tmp_path / ".run.tmp-999999999-1a2b3c4d"  # no such process
    live = tmp_path / f".run.tmp-{os.getpid()}-5e6f7a8b"
    unmarked = tmp_path / ".run.tmp-9c0d1e2f"
    for path in (dead, live, unmarked):
        path.mkdir()
    assert fileio.remove_dead_temporaries(str(tmp_path)) == [str(dead)]
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, unmarked.name])
    fileio.remove_dead_temporaries(str(tmp_path), unmarked=True)
    assert os.listdir(tmp_path) == [live.name]


def test_two_finetunes_into_one_output_dir_one_wins(tmp_path):
    output_dir = tmp_path / "stsb"
    command = [sys.executable, "-m", "keras_bert", "finetune", "--task", "stsb",
               "--data_dir", os.path.join(GLUE, "STS-B"), "--output_dir", str(output_dir),
               "--preset", "tiny", "--vocab_file", VOCAB, "--do_lower_case=false",
               "--max_seq_length", "48", "--train_batch_size", "8", "--noprogress",
               "--num_train_epochs", "1"]
    children = [subprocess.Popen(command + ["--seed", str(seed)], env=_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for seed in (1, 2)]
    results = [child.communicate(timeout=600) for child in children]
    codes = sorted(child.returncode for child in children)
    assert codes == [0, 2], results
    loser = results[[c.returncode for c in children].index(2)][1]
    last = loser.strip().splitlines()[-1]
    assert last.startswith("keras-bert finetune: error: --output_dir"), loser
    assert "--overwrite" in last and "Traceback" not in loser, loser
    winner_seed = [1, 2][[c.returncode for c in children].index(0)]
    import json
    with open(output_dir / "metrics.json") as f:
        assert json.load(f)["seed"] == winner_seed
    assert sorted(os.listdir(tmp_path)) == ["stsb"]


# --- the command line -------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return tiny_sst2_run(tmp_path_factory.mktemp("signals") / "run_sst2")


def _export(run_dir, out, prefix=()):
    return [sys.executable, *prefix, "export", "--checkpoint", run_dir, "--output_dir",
            str(out), "--nowarmup", "--quiet"]


def _assert_one_line_stop(child, stderr, code, sent_at):
    assert time.monotonic() - sent_at <= PROMPT_SECONDS
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert child.returncode == code, stderr
    assert len(lines) == 1, stderr
    what = "terminated by SIGTERM" if code == 143 else "interrupted"
    assert lines[0] == f"keras-bert export: {what}"


def _nothing_partial(out):
    for dirpath, dirnames, filenames in os.walk(out):
        assert not [n for n in dirnames + filenames if n.startswith(".")], dirpath
        for name in dirnames:
            if name.isdigit():  # a published version is complete
                assert os.path.isfile(os.path.join(dirpath, name, "saved_model.pb"))


def test_ctrl_c_during_the_start_up_imports(run_dir, tmp_path):
    child = subprocess.Popen(_export(run_dir, tmp_path / "out", ["-m", "keras_bert"]),
                             env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    time.sleep(0.8)
    sent_at = time.monotonic()
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    _assert_one_line_stop(child, stderr, 130, sent_at)
    assert not (tmp_path / "out").exists()


def test_sigterm_while_the_version_is_written(run_dir, tmp_path):
    out = tmp_path / "out"
    child = subprocess.Popen(_export(run_dir, out, ["-m", "keras_bert"]), env=_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + EXPORT_SECONDS
    while not any(fileio.is_temporary(name) for _, dirs, _ in os.walk(out) for name in dirs):
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()
        time.sleep(0.02)
    sent_at = time.monotonic()
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=60)
    _assert_one_line_stop(child, stderr, 143, sent_at)
    _nothing_partial(out)
    assert not [v for _, dirs, _ in os.walk(out) for v in dirs if v.isdigit()]


# The child sends itself the signal from inside a gc callback once the export writes
# its version (a hidden temporary appears under the output), and spins there so that
# the handler runs inside the callback.
_GC_CHILD = """
import gc, os, signal, sys, time
from keras_bert.cli import entry_point
out, stamp = sys.argv[1], sys.argv[2]
sent = []
def writing():
    return any(".tmp-" in name for _, dirs, _ in os.walk(out) for name in dirs)
def send_inside_gc(phase, info):
    if not sent and phase == "start" and writing():
        sent.append(True)
        with open(stamp, "w") as f:
            f.write(str(time.monotonic()))
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10000):
            pass
gc.callbacks.append(send_inside_gc)
sys.argv[1:] = sys.argv[3:]
sys.exit(entry_point())
"""


def test_sigterm_inside_a_gc_callback_during_export(run_dir, tmp_path):
    out, stamp = tmp_path / "out", tmp_path / "sent_at"
    command = _export(run_dir, out, ["-c", _GC_CHILD, str(out), str(stamp)])
    child = subprocess.run(command, env=_env(), capture_output=True, text=True,
                           timeout=EXPORT_SECONDS)
    if not stamp.exists():
        pytest.fail(f"the export ended before the signal was sent: {child.stderr}")
    sent_at = float(stamp.read_text())
    assert "Exception ignored" not in child.stderr
    _assert_one_line_stop(child, child.stderr, 143, sent_at)
    _nothing_partial(out)


@pytest.mark.slow  # about 8 minutes: 16 tiny exports, each signalled at its delay
@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.parametrize("delay", [0.3, 1, 2, 3, 4, 6, 8, 12])
def test_a_signal_at_any_moment_of_an_export_stops_it_cleanly(run_dir, tmp_path, signum,
                                                             code, delay):
    """The sweep: at every delay, from the start-up imports to the last write, the
    command either finished first (exit 0, a complete version) or stops with one line."""
    out = tmp_path / "out"
    child = subprocess.Popen(_export(run_dir, out, ["-m", "keras_bert"]), env=_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    sent_at = time.monotonic()
    if child.poll() is None:
        child.send_signal(signum)
    _, stderr = child.communicate(timeout=EXPORT_SECONDS)
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    if child.returncode != 0:
        _assert_one_line_stop(child, stderr, code, sent_at)
    _nothing_partial(out)


@pytest.mark.parametrize("command", [["export", "--checkpoint", "x", "--output_dir", "y"],
                                     ["encode", "one sentence."]])
def test_a_bogus_keras_backend_is_one_line(command):
    child = subprocess.run([sys.executable, "-m", "keras_bert", *command],
                           env=_env(KERAS_BACKEND="bogus"), capture_output=True, text=True,
                           timeout=60)
    assert child.returncode == 2
    lines = child.stderr.strip().splitlines()
    assert len(lines) == 1 and "KERAS_BACKEND" in lines[0] and "'bogus'" in lines[0], lines
    assert "tensorflow" in lines[0] and "jax" in lines[0]
