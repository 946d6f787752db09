"""Several training steps per `fit` execution (Keras's `steps_per_execution`): the
default the library picks, and checkpoints, logs, progress, SIGTERM and resuming at the
right step numbers when Keras calls the callbacks once per execution."""

import json
import os
import signal

import keras
import pytest
import tensorflow as tf
from training_support import tiny_config_dict, write_pretraining_records

from keras_bert import BertConfig
from keras_bert.core.errors import ArgumentError
from keras_bert.training import Pretraining, PretrainingOptions
from keras_bert.training.pretraining import (
    CPU_GPU_STEPS_PER_EXECUTION_CAP,
    TPU_STEPS_PER_EXECUTION_CAP,
    steps_per_execution,
)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_pretraining_records(str(tmp_path_factory.mktemp("data")), num_examples=128)


def tiny():
    return BertConfig.from_dict(tiny_config_dict())


def options(**overrides):
    values = dict(train_batch_size=8, num_train_steps=16, num_warmup_steps=2,
                  learning_rate=1e-3, save_checkpoints_steps=8, log_steps=4)
    values.update(overrides)
    return PretrainingOptions(**values)


class BatchEnds(keras.callbacks.Callback):
    """Records the global step after every `on_train_batch_end` (one per execution);
    optionally sends this process SIGTERM as the execution that starts after step
    `signal_at` begins."""

    def __init__(self, initial_step=0, signal_at=None):
        super().__init__()
        self.initial_step, self.signal_at = initial_step, signal_at
        self.steps = []

    def on_train_batch_begin(self, batch, logs=None):
        if self.signal_at == self.initial_step + batch:
            os.kill(os.getpid(), signal.SIGTERM)

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append(self.initial_step + batch + 1)


def checkpoint_steps(run_dir):
    state = tf.train.get_checkpoint_state(os.path.join(run_dir, "checkpoints"))
    return [int(path.rsplit("-", 1)[1]) for path in state.all_model_checkpoint_paths]


def logged_steps(run_dir):
    with open(os.path.join(run_dir, "train_log.jsonl"), encoding="utf-8") as f:
        return [json.loads(line)["step"] for line in f]


# --- the rule ----------------------------------------------------------------------------

@pytest.mark.parametrize("save, total, log, start, tpu, expected", [
    (1000, 100_000, 100, 0, False, CPU_GPU_STEPS_PER_EXECUTION_CAP),  # gcd 100, capped
    (1000, 100_000, 100, 0, True, 100),       # TPU: the gcd itself
    (5000, 100_000, 5000, 0, True, TPU_STEPS_PER_EXECUTION_CAP),
    (400, 2000, 66, 0, True, 2),              # gcd(400, 2000, 66) = 2
    (8, 16, 4, 0, True, 4),
    (8, 16, 4, 0, False, 1),                  # off TPU: 1 (measured: no faster)
    (8, 16, 4, 6, True, 2),                   # resumed at 6: gcd with the start step
    (8, 16, 4, 7, True, 1),
    (7, 14, 7, 0, True, 7),                   # a prime interval: itself, under the cap
    (1000, 100_000, 100, 30, True, 10),       # largest divisor of gcd(100, 30) = 10
])
def test_default_is_the_largest_divisor_of_the_intervals_and_start_step_up_to_a_cap(
        save, total, log, start, tpu, expected):
    chosen = steps_per_execution(options(save_checkpoints_steps=save, num_train_steps=total,
                                         log_steps=log), tpu=tpu, start_step=start)
    assert chosen == expected


def test_intervals_count_micro_batches_under_gradient_accumulation():
    # 2 micro-batches per update: intervals of 8, 16 and 4 updates are 16, 32, 8 steps.
    assert steps_per_execution(options(gradient_accumulation_steps=2), tpu=True) == 8


def test_a_given_value_must_divide_the_intervals_and_is_lowered_for_an_unaligned_start(
        caplog):
    assert steps_per_execution(options(steps_per_execution=4), tpu=False) == 4
    with pytest.raises(ArgumentError, match="log_steps .4 steps. must be a multiple of "
                                            "steps_per_execution 8") as e:
        steps_per_execution(options(steps_per_execution=8), tpu=False)
    assert e.value.field == "steps_per_execution"
    with caplog.at_level("WARNING", logger="keras_bert"):
        assert steps_per_execution(options(steps_per_execution=4), tpu=False,
                                   start_step=6) == 2
    assert "Resuming at step 6" in caplog.text


# --- a run -------------------------------------------------------------------------------

def test_checkpoints_logs_progress_and_sigterm_land_on_their_steps(tmp_path, data, capfd):
    run_dir = str(tmp_path / "run")
    run = Pretraining(data, run_dir, tiny(), options(steps_per_execution=4), progress=False)
    # Checkpoints every 8 steps, logs every 4, 16 steps: 4 per execution.
    assert run.run_config["steps_per_execution"] == run.model.steps_per_execution == 4
    # SIGTERM arrives as the execution of steps 5-8 starts: it finishes, then saves.
    ends = BatchEnds(signal_at=4)
    stopped = run.fit(callbacks=[ends])
    assert stopped["preempted"] and stopped["signal"] == "SIGTERM"
    # Keras calls the callbacks once per execution.
    assert stopped["step"] == 8 and ends.steps == [4, 8]
    assert checkpoint_steps(run_dir) == [8]

    capfd.readouterr()
    resumed = Pretraining(data, run_dir, tiny(), options(steps_per_execution=4),
                          progress=True)
    assert (resumed.start_step, resumed.model.steps_per_execution) == (8, 4)
    ends = BatchEnds(initial_step=8)
    assert resumed.fit(callbacks=[ends])["step"] == 16
    assert ends.steps == [12, 16]
    assert logged_steps(run_dir) == [4, 8, 12, 16]
    assert checkpoint_steps(run_dir) == [8, 16]
    with open(os.path.join(run_dir, "run_config.json"), encoding="utf-8") as f:
        assert json.load(f)["steps_per_execution"] == 4
    # The progress bar went from 8 to 16 of 16.
    bar = capfd.readouterr().err
    assert " 8/16 " in bar and "16/16 " in bar


def test_a_run_stopped_off_the_grid_resumes_with_a_divisor_of_its_step(tmp_path, data):
    run_dir = str(tmp_path / "run")
    # Stopped at step 6 under steps_per_execution 2 (SIGTERM as step 5 starts).
    first = Pretraining(data, run_dir, tiny(), options(steps_per_execution=2), progress=False)
    assert first.fit(callbacks=[BatchEnds(signal_at=4)])["step"] == 6
    assert checkpoint_steps(run_dir) == [6]

    resumed = Pretraining(data, run_dir, tiny(), options(steps_per_execution=4),
                          progress=False)
    assert (resumed.start_step, resumed.model.steps_per_execution) == (6, 2)
    ends = BatchEnds(initial_step=6)
    assert resumed.fit(callbacks=[ends])["step"] == 16
    # Exactly to step 16, with the checkpoint and the logs still on their intervals.
    assert ends.steps == [8, 10, 12, 14, 16]
    assert checkpoint_steps(run_dir) == [6, 8, 16]
    assert logged_steps(run_dir) == [4, 6, 8, 12, 16]
