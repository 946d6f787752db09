"""Fault tolerance of `keras-bert pretrain` runs, in real processes: kill -9 mid-run and
a SIGTERM (preemption) both resume from the last checkpoint, and under op determinism
finish with exactly the weights of an uninterrupted run (dropout on, so the random
state is restored too)."""

import os
import signal

import pytest
from training_support import (
    assert_same_weights,
    finish_process,
    kill_9_after_a_checkpoint,
    latest_step,
    saved_weights,
    start_process,
    tiny_config_dict,
    wait_for_checkpoint,
    write_pretraining_records,
    write_spec,
)

from keras_bert.pipelines.plumbing import EXIT_TERMINATED

OPTIONS = dict(train_batch_size=16, num_train_steps=600, num_warmup_steps=60,
               learning_rate=2e-3, save_checkpoints_steps=25, log_steps=100, seed=3)
CONFIG = tiny_config_dict(hidden_dropout=0.1, attention_dropout=0.1)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_pretraining_records(str(tmp_path_factory.mktemp("data")), num_examples=256)


def spec_for(data, directory, name):
    return write_spec(directory, name, input_file=data, config=CONFIG, options=OPTIONS,
                      strategy="auto", deterministic=True)


@pytest.fixture(scope="module")
def uninterrupted(data, tmp_path_factory):
    spec_path, spec = spec_for(data, str(tmp_path_factory.mktemp("reference")), "run")
    result = finish_process(start_process(spec_path), timeout=150)
    assert result["start_step"] == 0
    return saved_weights(spec["weights_out"])


@pytest.mark.slow  # long (CI time); its neighbours cover the default run
def test_kill_9_resumes_from_the_last_checkpoint(data, uninterrupted, tmp_path):
    spec_path, spec = spec_for(data, str(tmp_path), "run")
    saved = kill_9_after_a_checkpoint(spec_path, spec["output_dir"])
    assert 25 <= saved < 600 and saved % 25 == 0
    assert not os.path.exists(os.path.join(spec["output_dir"], "metrics.json"))

    result = finish_process(start_process(spec_path), timeout=150)
    assert result["start_step"] == saved  # resumed, not restarted from zero
    assert result["step"] == 600
    assert_same_weights(spec["weights_out"], uninterrupted)


def test_sigterm_saves_the_current_step_and_exits(data, uninterrupted, tmp_path):
    spec_path, spec = spec_for(data, str(tmp_path), "run")
    process = start_process(spec_path)
    wait_for_checkpoint(process, spec["output_dir"])
    process.send_signal(signal.SIGTERM)
    result = finish_process(process, timeout=150, expected_code=EXIT_TERMINATED)
    assert result["preempted"] and 25 <= result["step"] < 600
    assert latest_step(spec["output_dir"]) == result["step"]  # saved where it stopped

    resumed = finish_process(start_process(spec_path), timeout=150)
    assert resumed["start_step"] == result["step"]
    assert_same_weights(spec["weights_out"], uninterrupted)
