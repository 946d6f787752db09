"""`keras-bert pretrain`: flags, a run through the CLI, and errors reported before
training with exit status 2."""

import json
import os
import subprocess
import sys

import pytest
from training_support import write_config, write_pretraining_records, write_vocab

import keras_bert
from keras_bert import cli

INTERFACE = ("--input_file", "--output_dir", "--config", "--vocab_file", "--train_batch_size",
             "--max_seq_length", "--max_predictions_per_seq", "--num_train_steps",
             "--num_warmup_steps", "--learning_rate", "--strategy", "--init_checkpoint",
             "--save_checkpoints_steps")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_pretraining_records(str(tmp_path_factory.mktemp("data")), num_examples=64)


def pretrain_args(data, run_dir, config, *extra):
    return ["pretrain", "--input_file", data, "--output_dir", run_dir, "--config", config,
            "--train_batch_size", "8", "--num_train_steps", "4", "--num_warmup_steps", "1",
            "--save_checkpoints_steps", "2", "--log_steps", "2", "--noprogress", *extra]


def test_interface_flags():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["pretrain"]
    flags = {s for action in sub._actions for s in action.option_strings}
    assert set(INTERFACE) <= flags
    args = parser.parse_args(["pretrain", "--input_file", "x", "--output_dir", "y",
                              "--jit_compile", "false", "--strategy", "mirrored"])
    assert args.jit_compile is False and args.strategy == "mirrored" and args.progress
    with pytest.raises(SystemExit):
        parser.parse_args(["pretrain", "--input_file", "x", "--output_dir", "y",
                           "--strategy", "horovod"])


def test_pretrain_command_trains_and_saves(tmp_path, data, capsys):
    run_dir = str(tmp_path / "run")
    config = write_config(str(tmp_path / "bert_config.json"))
    assert cli.main(pretrain_args(data, run_dir, config)) == 0
    out = capsys.readouterr()
    assert "Trained to step 4: masked-LM accuracy" in out.out
    assert f"Encoder:      {run_dir}" in out.out
    assert "starting at step 0 of 4" in out.err
    metrics = json.load(open(os.path.join(run_dir, "metrics.json")))
    assert {"masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
            "next_sentence_loss"} <= set(metrics)
    assert keras_bert.load_encoder(run_dir).config.hidden_size == 32

    # The same command once more: already finished.
    assert cli.main(pretrain_args(data, run_dir, config)) == 0
    assert "already finished at step 4" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--max_seq_length", "64"], "holds sequences of length 16, but max_seq_length is 64"),
    (["--gradient_accumulation_steps", "3"],
     "train_batch_size 8 is not divisible by gradient_accumulation_steps 3"),
    (["--num_warmup_steps", "10"], "num_warmup_steps must be in"),
])
def test_errors_exit_2_before_training(tmp_path, data, capsys, extra, message):
    config = write_config(str(tmp_path / "bert_config.json"))
    run_dir = tmp_path / "run"
    assert cli.main(pretrain_args(data, str(run_dir), config) + extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-bert pretrain: error: ") and message in err
    assert not run_dir.exists()


def test_vocab_larger_than_the_config_fails(tmp_path, data, capsys):
    config = write_config(str(tmp_path / "bert_config.json"))
    vocab = write_vocab(str(tmp_path / "vocab.txt"), vocab_size=80)
    assert cli.main(pretrain_args(data, str(tmp_path / "run"), config,
                                  "--vocab_file", vocab)) == 2
    assert "80 tokens but the model's embedding table has 64 rows" in capsys.readouterr().err


def test_console_script_reports_missing_input(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert", "pretrain", "--input_file",
         str(tmp_path / "none-*.tfrecord"), "--output_dir", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 2
    assert "keras-bert pretrain: error: input_file pattern" in result.stderr
