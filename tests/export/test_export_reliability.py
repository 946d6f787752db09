"""Exports under concurrency, signals and failures (issue 32): versions are claimed
atomically, SIGTERM ends an export like Ctrl-C (exit 143, one line, nothing left in the
output or $TMPDIR), a dead export's temporary is removed by the next one and a live
one's never, a failed export leaves no empty directories, usage mistakes exit 2 with
one line, C++ log lines stay hidden without --debug, and every JSON written is strict.

The command-line cases run `keras-bert export` in child processes on a tiny fine-tuned
classifier (random weights: these test the plumbing, not the model)."""

from __future__ import annotations

import fcntl
import json
import math
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest
from export_support import tiny_sst2_run

from keras_bert.cli import main
from keras_bert.core import fileio
from keras_bert.core.errors import OutputExistsError
from keras_bert.export.versions import claim_version, remove_dead_temporaries
from keras_bert.pipelines import plumbing as flags


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return tiny_sst2_run(tmp_path_factory.mktemp("reliability") / "run_sst2")


def _env(tmpdir):
    return {**os.environ, "TMPDIR": str(tmpdir), "TF_CPP_MIN_LOG_LEVEL": "2"}


def _start_export(run_dir, out, tmpdir, *extra):
    return subprocess.Popen(
        [sys.executable, "-m", "keras_bert", "export", "--checkpoint", run_dir,
         "--output_dir", str(out), "--nowarmup", "--quiet", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmpdir))


def _wait_for_temporary(model_dir, process, timeout=120):
    """Waits until the export writes its hidden version temporary; returns its name."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.isdir(model_dir):
            names = [n for n in os.listdir(model_dir) if fileio.is_temporary(n)]
            if names:
                return names[0]
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    raise AssertionError("the export never started writing")


# --- claim_version, in processes --------------------------------------------------------


def _claim_and_hold(model_dir, seconds, queue):
    with claim_version(model_dir) as (version, directory):
        with open(os.path.join(directory, "model.tflite"), "w") as f:
            f.write(str(version))
        time.sleep(seconds)
    queue.put(version)


def test_concurrent_claims_get_distinct_versions(tmp_path):
    model_dir = str(tmp_path / "models" / "m")
    os.makedirs(os.path.join(model_dir, "3"))  # an existing version
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_claim_and_hold, args=(model_dir, 0.5, queue))
               for _ in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    versions = sorted(queue.get() for _ in workers)
    assert versions == [4, 5, 6, 7, 8, 9]
    assert sorted(os.listdir(model_dir)) == sorted(["3", *map(str, versions)])
    for v in versions:  # each directory holds what its claimer wrote
        assert open(os.path.join(model_dir, str(v), "model.tflite")).read() == str(v)


def _hold_lock(path, ready, release):
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    ready.set()
    release.wait(30)


def test_a_dead_exports_temporary_is_removed_and_a_live_ones_kept(tmp_path):
    model_dir = tmp_path / "m"
    dead, live = model_dir / ".1.tmp-0000dead", model_dir / ".2.tmp-0000live"
    os.makedirs(dead / "variables")
    os.makedirs(live)
    context = multiprocessing.get_context("fork")
    ready, release = context.Event(), context.Event()
    holder = context.Process(target=_hold_lock, args=(str(live), ready, release))
    holder.start()
    try:
        assert ready.wait(30)
        with claim_version(model_dir) as (version, directory):
            assert version == 3  # above the live export's 2; the dead one's 1 is free
            assert not dead.exists() and live.exists()
        assert sorted(os.listdir(model_dir)) == [".2.tmp-0000live", "3"]
    finally:
        release.set()
        holder.join(30)
    removed, live_versions = remove_dead_temporaries(str(model_dir))  # its owner is gone
    assert removed == [str(live)] and live_versions == []


def test_a_failed_write_leaves_no_empty_directories(tmp_path):
    out = tmp_path / "new_output"
    with pytest.raises(OSError, match="No space left"):
        with claim_version(out / "m") as (_, directory):
            open(os.path.join(directory, "x"), "w").close()
            raise OSError(28, "No space left on device")
    assert not out.exists()
    os.makedirs(tmp_path / "kept" / "m" / "1")  # existing directories stay
    with pytest.raises(KeyboardInterrupt):
        with claim_version(tmp_path / "kept" / "m"):
            raise KeyboardInterrupt
    assert os.listdir(tmp_path / "kept" / "m") == ["1"]


def test_a_version_made_meanwhile_by_someone_else_is_not_replaced(tmp_path):
    model_dir = tmp_path / "m"
    with pytest.raises(OutputExistsError):
        with claim_version(model_dir) as (version, _):
            os.makedirs(model_dir / str(version) / "other")
    assert os.listdir(model_dir / "1") == ["other"]
    assert os.listdir(model_dir) == ["1"]


# --- keras-bert export in child processes ------------------------------------------------


def test_two_exports_at_once_end_with_distinct_versions(run_dir, tmp_path):
    out, tmpdir = tmp_path / "out", tmp_path / "tmp"
    tmpdir.mkdir()
    processes = [_start_export(run_dir, out, tmpdir) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], results
    reported = sorted(stdout.strip().rsplit("/", 1)[1] for stdout, _ in results)
    assert reported == ["1", "2"]
    model_dir = out / "run_sst2"
    assert sorted(os.listdir(model_dir)) == ["1", "2"]
    for version in (1, 2):
        card = fileio.read_json(model_dir / str(version) / "assets.extra" / "keras_bert.json")
        assert card["version"] == version


def test_sigterm_while_writing_exits_143_leaving_nothing(run_dir, tmp_path):
    out, tmpdir = tmp_path / "out", tmp_path / "tmp"
    tmpdir.mkdir()
    process = _start_export(run_dir, out, tmpdir)
    _wait_for_temporary(out / "run_sst2", process)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == flags.EXIT_TERMINATED, stderr
    assert stderr.strip().splitlines() == ["keras-bert export: terminated by SIGTERM"]
    assert stdout == ""
    assert not out.exists()  # the export made out/ and out/run_sst2/: both gone
    assert os.listdir(tmpdir) == []  # autograph's and the converter's files too


def test_sigterm_while_loading_exits_143_with_one_line(run_dir, tmp_path):
    out, tmpdir = tmp_path / "out", tmp_path / "tmp"
    tmpdir.mkdir()
    process = _start_export(run_dir, out, tmpdir)
    time.sleep(1.5)  # importing TensorFlow or loading the model
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == flags.EXIT_TERMINATED, stderr
    assert stderr.strip().splitlines() == ["keras-bert export: terminated by SIGTERM"]
    assert not out.exists() and os.listdir(tmpdir) == []


def test_the_next_export_removes_a_killed_exports_temporary(run_dir, tmp_path):
    out, tmpdir = tmp_path / "out", tmp_path / "tmp"
    tmpdir.mkdir()
    process = _start_export(run_dir, out, tmpdir)
    left = _wait_for_temporary(out / "run_sst2", process)
    process.kill()  # kill -9: no cleanup runs
    process.communicate(timeout=60)
    assert left in os.listdir(out / "run_sst2")
    assert main(["export", "--checkpoint", run_dir, "--output_dir", str(out), "--nowarmup",
                 "--quiet"]) == 0
    assert os.listdir(out / "run_sst2") == ["1"]


def test_quiet_litert_export_prints_only_where_it_went(run_dir, tmp_path):
    out, tmpdir = tmp_path / "out", tmp_path / "tmp"
    tmpdir.mkdir()
    process = _start_export(run_dir, out, tmpdir, "--format", "litert", "--noserve_text")
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert stderr == ""  # no TFLite/MLIR converter lines (they show with --debug)
    assert stdout.splitlines() == [f"Exported classifier to {out}/run_sst2/1"]
    assert os.listdir(tmpdir) == []


@pytest.mark.parametrize("case", ["empty_name", "blank_name", "dangling_output_dir",
                                  "dangling_parent"])
def test_usage_mistakes_exit_2_with_one_line_before_any_work(run_dir, tmp_path, capsys,
                                                             case):
    out = tmp_path / "out"
    args = ["export", "--checkpoint", run_dir, "--output_dir", str(out)]
    if case in ("empty_name", "blank_name"):
        args += ["--name", "" if case == "empty_name" else "  "]
        culprit = "--name"
    else:
        os.symlink(tmp_path / "nowhere", tmp_path / "link")
        args[-1] = str(tmp_path / "link" / ("" if case == "dangling_output_dir" else "sub"))
        culprit = "symbolic link"
    started = time.monotonic()
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and culprit in err[0], err
    assert time.monotonic() - started < 20  # refused before the model loads and converts
    assert not out.exists() and not (tmp_path / "nowhere").exists()


# --- strict JSON -------------------------------------------------------------------------


def _strict_loads(text):
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_every_json_writer_writes_strict_json(tmp_path, capsys):
    import numpy as np

    record = {"pearson": float("nan"), "loss": np.float32("inf"), "history": [
        {"spearman": float("-inf"), "step": np.int64(3)}]}
    path = tmp_path / "finetune_config.json"
    fileio.write_json(path, record)
    data = _strict_loads(path.read_text())
    assert data["pearson"] is None and data["pearson_null_reason"] == "not a number"
    assert data["loss"] is None and data["history"] == [
        {"spearman": None, "spearman_null_reason": "not a number", "step": 3}]
    flags.OUTPUT.mode, flags.OUTPUT.stream = "json", sys.stdout
    try:
        flags.emit("progress", loss=float("nan"), accuracy=np.float32(0.5))
    finally:
        flags.OUTPUT.mode = "text"
    line = _strict_loads(capsys.readouterr().out)
    assert line["loss"] is None and math.isclose(line["accuracy"], 0.5)
