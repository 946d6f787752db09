"""Ordinary mistakes and interruptions around pretraining: vocabs that do not belong to
the data or checkpoint, a run directory reused with other settings, Ctrl-C, failed starts
that must leave nothing behind, truncated TFRecords and malformed configs. Each is an
error of `keras_bert.core.errors` naming the fields and files involved (the CLI prints it as
one line and exits 2), raised before anything is written."""

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from training_support import (
    latest_step,
    synthetic_examples,
    tiny_config_dict,
    write_config,
    write_pretraining_records,
    write_records,
    write_vocab,
)

from keras_bert import BertConfig, BertEncoder, BertPretrainer
from keras_bert.checkpoints import save_google_checkpoint
from keras_bert.core import fileio, input_files
from keras_bert.core.errors import (
    ArgumentError,
    CheckpointError,
    DataError,
    InputNotFoundError,
    MismatchError,
    OutputError,
)
from keras_bert.pipelines.plumbing import SIGNAL_EXIT_CODES
from keras_bert.training import Pretraining, PretrainingOptions, resolve_config

SUPPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "training_support.py")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_pretraining_records(str(tmp_path_factory.mktemp("data")), num_examples=64)


def tiny(**overrides):
    return BertConfig.from_dict(tiny_config_dict(**overrides))


def options(**overrides):
    values = dict(train_batch_size=8, num_train_steps=4, num_warmup_steps=1,
                  learning_rate=1e-3, save_checkpoints_steps=2, log_steps=2)
    values.update(overrides)
    return PretrainingOptions(**values)


def data_with_sidecar(directory, vocab=None, size=None, vocab_size=64):
    """Pretraining records plus the sidecar `create-pretraining-data` writes beside them,
    recording `vocab` (its checksum and size)."""
    pattern = write_pretraining_records(str(directory), num_examples=32, vocab_size=vocab_size)
    record = {"sha256": input_files.file_sha256(vocab), "size": size or len(open(vocab).readlines())}
    fileio.write_json(os.path.join(directory, "pretraining_data.json"),
                  {"settings": {"max_seq_length": 16}, "vocab": record})
    return pattern


def other_vocab(path, vocab_size=64):
    """A vocab of the same size as `write_vocab`'s, with other tokens."""
    write_vocab(path, vocab_size)
    text = open(path).read().replace("w1\n", "zz\n")
    with open(path, "w") as f:
        f.write(text)
    return path


def google_checkpoint(directory, vocab=None):
    save_google_checkpoint(BertPretrainer(BertEncoder(tiny())), str(directory))
    if vocab:
        with open(vocab) as f, open(os.path.join(directory, "vocab.txt"), "w") as out:
            out.write(f.read())
    return str(directory)


def fails_before_training(error, match, data, run_dir, config=None, **kwargs):
    """Pretraining raises `error` and leaves no trace of `run_dir`."""
    with pytest.raises(error, match=match) as info:
        Pretraining(data, str(run_dir), config, kwargs.pop("options", options()),
                    progress=False, **kwargs)
    assert not os.path.exists(run_dir)
    return info.value


# --- 1. vocabs that do not belong together -----------------------------------------------

def test_vocab_file_of_other_data_names_both_files(tmp_path):
    vocab = write_vocab(str(tmp_path / "vocab.txt"))
    pattern = data_with_sidecar(tmp_path / "data", vocab)
    other = other_vocab(str(tmp_path / "other.txt"))
    error = fails_before_training(MismatchError, "made with another vocab", pattern,
                                  tmp_path / "run", tiny(), vocab_file=other)
    message = str(error)
    assert str(tmp_path / "data" / "pretraining_data.json") in message and other in message
    assert input_files.file_sha256(vocab)[:12] in message and input_files.file_sha256(other)[:12] in message


def test_data_of_another_vocab_size_than_the_init_checkpoint(tmp_path):
    vocab = write_vocab(str(tmp_path / "vocab48.txt"), vocab_size=48)
    pattern = data_with_sidecar(tmp_path / "data", vocab, vocab_size=48)
    checkpoint = google_checkpoint(tmp_path / "google")  # vocab_size 64, no vocab.txt
    error = fails_before_training(MismatchError, "has 48 tokens but the init_checkpoint's "
                                  "vocab has 64", pattern, tmp_path / "run",
                                  init_checkpoint=checkpoint)
    assert "pretraining_data.json" in str(error)
    # The vocab_file alone (data without a sidecar) meets the same check.
    plain = write_pretraining_records(str(tmp_path / "plain"), num_examples=32, vocab_size=48)
    fails_before_training(MismatchError, f"vocab_file {vocab} has 48 tokens but the "
                          "init_checkpoint's vocab has 64", plain, tmp_path / "run",
                          init_checkpoint=checkpoint, vocab_file=vocab)


def test_init_checkpoint_vocab_must_be_the_datas_and_the_vocab_files(tmp_path):
    own = write_vocab(str(tmp_path / "vocab.txt"))
    checkpoint = google_checkpoint(tmp_path / "google", vocab=own)
    other = other_vocab(str(tmp_path / "other.txt"))
    pattern = data_with_sidecar(tmp_path / "data", other)
    error = fails_before_training(MismatchError, "made with another vocab", pattern,
                                  tmp_path / "run", init_checkpoint=checkpoint)
    assert os.path.join(checkpoint, "vocab.txt") in str(error)
    plain = write_pretraining_records(str(tmp_path / "plain"), num_examples=32)
    error = fails_before_training(MismatchError, "differs from", plain, tmp_path / "run",
                                  init_checkpoint=checkpoint, vocab_file=other)
    assert other in str(error) and os.path.join(checkpoint, "vocab.txt") in str(error)


def test_run_directory_gets_the_vocab_and_checks_it_when_continued(tmp_path):
    vocab = write_vocab(str(tmp_path / "vocab.txt"))
    pattern = data_with_sidecar(tmp_path / "data", vocab)
    run_dir = tmp_path / "run"
    Pretraining(pattern, str(run_dir), tiny(), options(num_train_steps=2),
                vocab_file=vocab, progress=False).fit()
    assert (run_dir / "vocab.txt").read_text() == open(vocab).read()
    # The trained run as the init checkpoint of data made with another vocab.
    other_data = data_with_sidecar(tmp_path / "other-data", other_vocab(str(tmp_path / "o")))
    error = fails_before_training(MismatchError, "made with another vocab", other_data,
                                  tmp_path / "continued", init_checkpoint=str(run_dir))
    assert str(run_dir / "vocab.txt") in str(error)


def test_data_without_a_sidecar_warns_that_its_vocab_cannot_be_checked(tmp_path, caplog):
    vocab = write_vocab(str(tmp_path / "vocab.txt"))
    plain = write_pretraining_records(str(tmp_path / "plain"), num_examples=32)
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        Pretraining(plain, str(tmp_path / "run"), tiny(), options(), vocab_file=vocab,
                    progress=False)
    warnings = [r.getMessage() for r in caplog.records if "sidecar" in r.getMessage()]
    assert len(warnings) == 1 and vocab in warnings[0], caplog.text
    assert str(tmp_path / "plain") in warnings[0]
    caplog.clear()
    # With the sidecar there is a checksum to compare: no warning.
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        Pretraining(data_with_sidecar(tmp_path / "data", vocab), str(tmp_path / "run2"),
                    tiny(), options(), vocab_file=vocab, progress=False)
    assert not [r for r in caplog.records if "sidecar" in r.getMessage()], caplog.text


# --- 2. reusing a run directory ------------------------------------------------------------

def read_run_config(run_dir):
    return json.loads((run_dir / "run_config.json").read_text())


def test_other_settings_are_refused_listing_them_and_steps_extend_on_request(tmp_path, data):
    run_dir = tmp_path / "run"
    Pretraining(data, str(run_dir), tiny(), options(), progress=False).fit()
    before = {p: os.stat(run_dir / p).st_mtime_ns for p in ("run_config.json", "metrics.json")}

    with pytest.raises(MismatchError, match=r"seed: 12345 → 7; train_batch_size: 8 → 16\.") as e:
        Pretraining(data, str(run_dir), tiny(), options(train_batch_size=16, seed=7))
    assert str(run_dir) in str(e.value) and "overwrite=True" in str(e.value)
    other_data = write_pretraining_records(str(tmp_path / "other"), num_examples=48)
    with pytest.raises(MismatchError, match="input files: 2 files: part-00000.tfrecord"):
        Pretraining(other_data, str(run_dir), tiny(), options())
    with pytest.raises(MismatchError, match=r"num_train_steps: 4 → 6\..*resume=True"):
        Pretraining(data, str(run_dir), tiny(), options(num_train_steps=6))
    # Execution options may change: resumed (here: already finished).
    assert Pretraining(data, str(run_dir), tiny(), options(log_steps=1, steps_per_execution=1),
                       progress=False).fit()["step"] == 4
    assert before == {p: os.stat(run_dir / p).st_mtime_ns for p in before}

    extended = Pretraining(data, str(run_dir), tiny(), options(num_train_steps=6),
                           progress=False, resume=True)
    assert (extended.start_kind, extended.start_step) == ("extended", 4)
    assert extended.fit()["step"] == 6
    starts = read_run_config(run_dir)["starts"]
    assert [(s["kind"], s["start_step"]) for s in starts] == [("started", 0), ("extended", 4)]
    assert starts[1]["options"]["num_train_steps"] == 6 and starts[0]["time"]
    with pytest.raises(ArgumentError, match="extended, not shortened"):
        Pretraining(data, str(run_dir), tiny(), options(num_train_steps=3), resume=True)


def test_overwrite_replaces_the_run_only_once_the_new_one_starts(tmp_path, data):
    run_dir = tmp_path / "run"
    Pretraining(data, str(run_dir), tiny(), options(), progress=False).fit()
    (run_dir / "notes.txt").write_text("mine")
    # A start that fails its checks leaves the old run as it was.
    with pytest.raises(ArgumentError, match="config"):
        Pretraining(data, str(run_dir), "no-such-preset", options(), overwrite=True)
    new = Pretraining(data, str(run_dir), tiny(), options(train_batch_size=16), overwrite=True,
                      progress=False)
    assert (new.start_kind, new.start_step) == ("overwrote", 0)
    assert latest_step(str(run_dir)) == 4  # not fitted yet: the old run is still there
    assert new.fit()["global_batch_size"] == 16
    record = read_run_config(run_dir)
    assert [s["kind"] for s in record["starts"]] == ["overwrote"]
    assert record["options"]["train_batch_size"] == 16
    log = [json.loads(line) for line in open(run_dir / "train_log.jsonl")]
    assert [r["step"] for r in log] == [2, 4]  # the old run's lines are gone
    assert (run_dir / "notes.txt").read_text() == "mine"  # not the run's: left alone
    assert not [n for n in os.listdir(run_dir) if n.startswith(".")]
    with pytest.raises(ArgumentError, match="exclude each other"):
        Pretraining(data, str(run_dir), tiny(), options(), overwrite=True, resume=True)


def test_a_start_that_saved_nothing_gives_way_to_new_settings(tmp_path, data):
    run_dir = tmp_path / "run"
    first = Pretraining(data, str(run_dir), tiny(), options(), progress=False)
    first._prepare_output_dir()  # what fit() writes before its first step, then dies
    (run_dir / "train_log.jsonl").write_text('{"step": 1}\n')
    run = Pretraining(data, str(run_dir), tiny(), options(train_batch_size=16), progress=False)
    assert (run.start_kind, run.start_step) == ("restarted", 0)
    run.fit()
    assert [json.loads(line)["step"] for line in open(run_dir / "train_log.jsonl")] == [2, 4]


def test_a_checkpoint_of_another_setup_is_refused_without_recorded_settings(tmp_path, data):
    run_dir = tmp_path / "run"
    Pretraining(data, str(run_dir), tiny(), options(), progress=False).fit()
    record = read_run_config(run_dir)
    del record["settings"]  # as an older keras_bert wrote it
    (run_dir / "run_config.json").write_text(json.dumps(record))
    with pytest.raises(CheckpointError, match="does not hold this model's training state"):
        Pretraining(data, str(run_dir), tiny(), options(gradient_accumulation_steps=2))


# --- 4. failed starts leave nothing behind ------------------------------------------------

def test_unusable_output_paths_fail_before_any_work(tmp_path):
    (tmp_path / "file").write_text("x")
    missing_input = str(tmp_path / "none-*.tfrecord")  # would fail next
    with pytest.raises(OutputError, match="is a file"):
        Pretraining(missing_input, str(tmp_path / "file"), "tiny")
    with pytest.raises(OutputError, match="cannot be created"):
        Pretraining(missing_input, str(tmp_path / "file" / "run"), "tiny")
    with pytest.raises(InputNotFoundError, match="input_file pattern"):
        Pretraining(missing_input, str(tmp_path / "run"), "tiny")
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root writes to read-only directories")
def test_read_only_output_directory_fails_before_any_work(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(OutputError, match="not writable"):
            Pretraining(str(tmp_path / "none-*.tfrecord"), str(locked / "run"), "tiny")
    finally:
        locked.chmod(0o700)


def test_failed_checks_create_no_directory(tmp_path, data):
    run_dir = tmp_path / "runs" / "nested" / "run"
    fails_before_training(ArgumentError, "neither a preset", data, run_dir, "no-such-preset")
    fails_before_training(MismatchError, "vocab_size is 32", data, run_dir, tiny(vocab_size=32))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there
    fails_before_training(ConnectionError, "not reachable", data, run_dir, tiny(),
                          strategy="tpu", tpu=f"grpc://127.0.0.1:{port}")
    assert not (tmp_path / "runs").exists()


# --- 5. truncated records, malformed configs ------------------------------------------------

def test_truncated_tfrecords_are_data_errors_naming_the_file(tmp_path):
    path = write_records(str(tmp_path / "a.tfrecord"), synthetic_examples(8))
    content = open(path, "rb").read()
    for name, size in (("first.tfrecord", 40), ("later.tfrecord", len(content) - 30)):
        cut = tmp_path / name
        cut.write_bytes(content[:size])  # inside the first record / inside the last
        with pytest.raises(DataError, match="cut short") as error:
            Pretraining(str(cut), str(tmp_path / "run"), tiny(), options())
        assert error.value.path == str(cut) and str(error.value).startswith(str(cut))
    assert not (tmp_path / "run").exists()


def test_config_errors_name_the_field_and_file(tmp_path, data):
    hf = tiny().to_hf_dict()
    del hf["vocab_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(hf))
    error = fails_before_training(DataError, "lacks the required field 'vocab_size'", data,
                                  tmp_path / "run", str(path))
    assert error.path == str(path)
    with pytest.raises(ArgumentError, match="neither a preset") as error:
        resolve_config("bert-tiny")
    assert error.value.field == "config"
    with pytest.raises(ArgumentError, match="is a directory") as error:
        resolve_config(str(tmp_path))
    assert error.value.field == "config"


# --- 3. Ctrl-C saves a checkpoint, like SIGTERM ---------------------------------------------

INTERRUPTED = dict(train_batch_size=8, num_train_steps=5000, num_warmup_steps=10,
                   learning_rate=1e-3, save_checkpoints_steps=10, log_steps=1000)


def start(command, **kwargs):
    # SIGINT back at its default: a shell without job control starts background
    # processes with it ignored, and an ignored SIGINT stays ignored (as it should).
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                            **kwargs)


def interrupt_after_first_checkpoint(process, run_dir, timeout=150):
    deadline = time.monotonic() + timeout
    while latest_step(run_dir) == 0:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no checkpoint appeared:\n{process.communicate()[0][-3000:]}")
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    try:
        output, _ = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"SIGINT did not stop the run:\n{process.communicate()[0][-3000:]}")
    return output


def test_sigint_saves_a_checkpoint_and_the_run_resumes_there(tmp_path, data):
    run_dir = str(tmp_path / "run")
    spec = {"input_file": data, "output_dir": run_dir, "config": tiny_config_dict(),
            "options": INTERRUPTED, "strategy": "auto"}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    process = start([sys.executable, SUPPORT, str(tmp_path / "spec.json")])
    output = interrupt_after_first_checkpoint(process, run_dir)
    assert process.returncode != 0, output[-3000:]
    result = json.loads(output.strip().splitlines()[-1])
    assert result["preempted"] and result["signal"] == "SIGINT", result
    assert SIGNAL_EXIT_CODES[result["signal"]] == 130
    assert 10 <= result["step"] < 5000 and latest_step(run_dir) == result["step"]
    resumed = Pretraining(data, run_dir, tiny(), PretrainingOptions(**INTERRUPTED),
                          progress=False)
    assert (resumed.start_kind, resumed.start_step) == ("resumed", result["step"])


# --- through the command line ---------------------------------------------------------------

def pretrain(*args):
    return [sys.executable, "-m", "keras_bert", "pretrain", *args]


def cli_args(data, run_dir, config, steps=4):
    return ["--input_file", data, "--output_dir", str(run_dir), "--config", config,
            "--train_batch_size", "8", "--num_train_steps", str(steps),
            "--num_warmup_steps", "1", "--save_checkpoints_steps", "2", "--log_steps", "2",
            "--noprogress"]


@pytest.mark.slow  # long (CI time); its neighbours cover the default run
def test_cli_sigint_exits_with_a_checkpoint_and_the_same_command_resumes(tmp_path, data):
    config = write_config(str(tmp_path / "bert_config.json"))
    run_dir = tmp_path / "run"
    command = pretrain(*cli_args(data, run_dir, config, steps=400))
    command[command.index("--save_checkpoints_steps") + 1] = "10"
    process = start(command)
    output = interrupt_after_first_checkpoint(process, str(run_dir))
    assert process.returncode == 130, output[-3000:]  # SIGINT's code, like a shell's
    saved = latest_step(str(run_dir))
    assert 10 <= saved < 400 and not (run_dir / "metrics.json").exists(), output[-3000:]
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    starts = read_run_config(run_dir)["starts"]
    assert [(s["kind"], s["start_step"]) for s in starts] == [("started", 0), ("resumed", saved)]


def test_cli_reports_ordinary_mistakes_in_one_line_with_exit_2(tmp_path, data, capsys):
    from keras_bert import cli

    config = write_config(str(tmp_path / "bert_config.json"))
    (tmp_path / "cut").mkdir()
    path = write_records(str(tmp_path / "cut" / "a.tfrecord"), synthetic_examples(8))
    with open(path, "r+b") as f:
        f.truncate(40)
    (tmp_path / "file").write_text("x")
    hf = tiny().to_hf_dict()
    del hf["vocab_size"]
    (tmp_path / "config.json").write_text(json.dumps(hf))
    cases = [
        (cli_args(path, tmp_path / "run", config), f"{path}: not a TFRecord file, or cut short"),
        (cli_args(data, tmp_path / "file", config), "output_dir"),
        (cli_args(data, tmp_path / "run", str(tmp_path / "config.json")),
         "lacks the required field 'vocab_size'"),
        (cli_args(data, tmp_path / "run", "no-such-preset"), "config 'no-such-preset' is "
                                                             "neither a preset"),
    ]
    for args, message in cases:
        assert cli.main(["pretrain", *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("keras-bert pretrain: error: ") and message in err, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    # The console script, as a user runs it.
    result = subprocess.run(pretrain(*cases[0][0]), capture_output=True, text=True,
                            timeout=120, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 2, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("keras-bert pretrain: error: ") and cases[0][1] in last
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()


def test_cli_refuses_other_settings_unless_overwrite_or_resume(tmp_path, data, capsys):
    from keras_bert import cli

    config = write_config(str(tmp_path / "bert_config.json"))
    run_dir = tmp_path / "run"
    assert cli.main(["pretrain", *cli_args(data, run_dir, config)]) == 0
    capsys.readouterr()
    bigger = cli_args(data, run_dir, config)
    bigger[bigger.index("--train_batch_size") + 1] = "16"
    assert cli.main(["pretrain", *bigger]) == 2
    err = capsys.readouterr().err
    assert "train_batch_size: 8 → 16" in err and "overwrite" in err
    longer = cli_args(data, run_dir, config, steps=6)
    assert cli.main(["pretrain", *longer]) == 2
    assert "resume" in capsys.readouterr().err
    assert cli.main(["pretrain", *longer, "--resume"]) == 0
    assert json.loads((run_dir / "metrics.json").read_text())["step"] == 6
    assert cli.main(["pretrain", *bigger, "--overwrite"]) == 0
    assert [s["kind"] for s in read_run_config(run_dir)["starts"]] == ["overwrote"]


# --- the Python API: mistakes are typed errors naming the field -----------------------------

@pytest.mark.parametrize("make, field", [
    (lambda: BertConfig.from_preset("gigantic"), "gigantic"),
    (lambda: BertConfig(hidden_size=100, num_heads=3), "num_heads"),
    (lambda: BertConfig(num_layers=-1), "num_layers"),
    (lambda: BertConfig(hidden_dropout="high"), "hidden_dropout"),
    (lambda: BertConfig.from_dict({"layers": 2}), "layers"),
    (lambda: PretrainingOptions(learning_rate="fast"), "learning_rate"),
    (lambda: PretrainingOptions(train_batch_size=2.5), "train_batch_size"),
    (lambda: PretrainingOptions(weight_decay=-0.1), "weight_decay"),
    (lambda: PretrainingOptions(num_train_steps=10, num_warmup_steps=20), "num_warmup_steps"),
])
def test_config_and_option_mistakes_are_argument_errors(make, field):
    with pytest.raises(ArgumentError, match=field) as error:
        make()
    assert isinstance(error.value, ValueError)  # `except ValueError` keeps working
