"""Fine-tuning stopped from outside: SIGTERM (what preemptible VMs and schedulers send)
ends `keras-bert finetune` as Ctrl-C does, with exit 143 and nothing left beside the
output; after kill -9 (no cleanup at all) the same command run again removes what the
killed run left and finishes. A tiny random-weight BERT on tests/fixtures keeps it fast."""

import os
import signal
import subprocess
import sys
import time

import keras
import pytest
from conftest import REPO

from keras_bert.checkpoints import FINETUNE_CONFIG
from keras_bert.cli import main
from keras_bert.tasks.finetuning import FinetuneOptions, Finetuning
from keras_bert.tasks.finetuning.run import RunTerminated
from keras_bert.tasks.finetuning.run_directory import remove_leftovers

STSB = os.path.join(REPO, "tests", "fixtures", "tasks", "glue", "STS-B")
VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
TINY = ["--preset", "tiny", "--vocab_file", VOCAB, "--do_lower_case=false",
        "--max_seq_length", "48", "--train_batch_size", "8", "--noprogress"]
STARTUP_SECONDS = 30  # TensorFlow's import and the first traces, on a busy machine


def _command(output_dir, epochs):
    return [sys.executable, "-m", "keras_bert", "finetune", "--task", "stsb", "--data_dir",
            STSB, "--output_dir", str(output_dir), *TINY, "--num_train_epochs", str(epochs)]


def _temporaries(parent):
    return sorted(name for name in os.listdir(parent) if ".tmp-" in name)


def _start_and_wait_for_training(output_dir):
    """Starts a run far too long to finish and returns it once it trains: the hidden
    logs directory beside the output appears when training begins."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    child = subprocess.Popen(_command(output_dir, 5000), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    parent, logs = output_dir.parent, f".{output_dir.name}_logs.tmp-"
    deadline = time.monotonic() + STARTUP_SECONDS
    while not any(name.startswith(logs) for name in os.listdir(parent)):
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            out, err = child.communicate()
            pytest.fail(f"training did not start (exit {child.returncode}):\n{out}\n{err}")
        time.sleep(0.1)
    time.sleep(0.5)  # well inside model.fit
    return child


def test_sigterm_stops_with_143_and_leaves_nothing(tmp_path):
    parent = tmp_path / "runs"
    parent.mkdir()
    output_dir = parent / "stsb"
    child = _start_and_wait_for_training(output_dir)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 143, err
    assert os.listdir(parent) == []  # no output directory, no hidden temporary
    lines = [line for line in err.splitlines() if "terminated" in line]
    assert len(lines) == 1, err
    assert "SIGTERM" in lines[0] and "same command" in lines[0]
    assert "Traceback" not in err


def test_rerun_after_kill_9_removes_the_leftovers_and_finishes(tmp_path):
    parent = tmp_path / "runs"
    parent.mkdir()
    output_dir = parent / "stsb"
    child = _start_and_wait_for_training(output_dir)
    child.kill()  # SIGKILL: no handler runs
    child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    leftovers = _temporaries(parent)
    assert leftovers and leftovers[0].startswith(".stsb_logs.tmp-")
    # Another output's temporary (a run beside this one) is not this run's to remove.
    other = parent / ".other_logs.tmp-1a2b3c4d"
    other.mkdir()

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    rerun = subprocess.run(_command(output_dir, 1), env=env, capture_output=True, text=True,
                           timeout=60)
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(os.listdir(parent)) == [other.name, "stsb"]
    assert os.path.isfile(output_dir / FINETUNE_CONFIG)
    assert "left by an interrupted run" in rerun.stderr


def test_sigterm_in_the_library_raises_and_restores_the_handler(tmp_path):
    output_dir = tmp_path / "stsb"
    finetuning = Finetuning("stsb", STSB, str(output_dir), preset="tiny", vocab_file=VOCAB,
                            lower_case=False, progress=False,
                            options=FinetuneOptions(max_seq_length=48, train_batch_size=8,
                                                    num_train_epochs=3))

    class Preempt(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RunTerminated):
        finetuning.run(callbacks=[Preempt()])
    assert signal.getsignal(signal.SIGTERM) is before
    assert os.listdir(tmp_path) == []


def test_leftovers_of_this_output_only_and_a_replaced_run_put_back(tmp_path):
    # Killed between the two renames of an overwrite: the old run sits aside, the
    # output directory is missing.
    aside = tmp_path / ".stsb.old.tmp-1a2b3c4d" / "previous"
    aside.mkdir(parents=True)
    (aside / FINETUNE_CONFIG).write_text("{}")
    (tmp_path / ".stsb.tmp-5e6f7a8b").mkdir()
    (tmp_path / ".stsb_logs.tmp-9c0d1e2f").mkdir()
    (tmp_path / ".stsb2.tmp-00000000").mkdir()  # another output's
    removed = remove_leftovers(str(tmp_path / "stsb"))
    assert len(removed) == 3
    assert sorted(os.listdir(tmp_path)) == [".stsb2.tmp-00000000", "stsb"]
    assert os.listdir(tmp_path / "stsb") == [FINETUNE_CONFIG]


def test_output_holding_a_run_names_overwrite(tmp_path, capsys):
    output_dir = tmp_path / "stsb"
    output_dir.mkdir()
    (output_dir / FINETUNE_CONFIG).write_text("{}")
    code = main(["finetune", "--task", "stsb", "--data_dir", STSB, "--output_dir",
                 str(output_dir), *TINY])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "--overwrite" in err[0] and "--output_dir" in err[0]
    assert "overwrite=True" not in err[0]
    with pytest.raises(OSError, match="overwrite=True"):  # the library names its argument
        Finetuning("stsb", STSB, str(output_dir), preset="tiny", vocab_file=VOCAB)
