"""File and directory mistakes around fine-tuned runs and their exports (issue 25): run
and export directories other users cannot read, a model.keras cut short or damaged by a
copy, and an export of a run directory whose model.keras is gone. Each is one line on
stderr naming the file and what to do (exit 2), with nothing written."""

import contextlib
import os
import shutil
import stat

import pytest
from conftest import REPO

from keras_bert.cli import main
from keras_bert.core import fileio

STSB = os.path.join(REPO, "tests", "fixtures", "tasks", "glue", "STS-B")
VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
TINY = ["--preset", "tiny", "--vocab_file", VOCAB, "--do_lower_case=false",
        "--max_seq_length", "48", "--num_train_epochs", "1", "--train_batch_size", "8",
        "--noprogress"]


@contextlib.contextmanager
def umask(mask):
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def _directory_modes(root) -> dict:
    """relative path -> permission bits, for `root` and every directory under it."""
    modes = {".": stat.S_IMODE(os.stat(root).st_mode)}
    for directory, names, _ in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            modes[os.path.relpath(path, root)] = stat.S_IMODE(os.stat(path).st_mode)
    return modes


def _listing(root) -> list:
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, dirs, files in os.walk(root) for n in dirs + files)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A tiny STS-B run written by `keras-bert finetune` under umask 022."""
    out = tmp_path_factory.mktemp("runs") / "stsb"
    with umask(0o022):
        assert main(["finetune", "--task", "stsb", "--data_dir", STSB, "--output_dir",
                     str(out), *TINY]) == 0
    return out


# --- directories follow the umask -------------------------------------------------------


@pytest.mark.parametrize("mask, mode", [(0o022, 0o755), (0o027, 0o750), (0o002, 0o775)])
def test_atomic_directory_gets_the_mode_of_makedirs(tmp_path, mask, mode):
    target = tmp_path / "out"

    def write(directory):
        os.mkdir(os.path.join(directory, "inner"))
        open(os.path.join(directory, "inner", "a"), "w").close()

    with umask(mask):
        fileio.atomic_directory(target, write)
        assert _directory_modes(target) == {".": mode, "inner": mode}
        fileio.atomic_directory(target, write, overwrite=True)  # replacing keeps to the umask
        assert _directory_modes(target) == {".": mode, "inner": mode}
    assert os.listdir(tmp_path) == ["out"]  # no temporary left beside it


def test_finetune_run_directory_is_readable_by_others_under_umask_022(run_dir):
    modes = _directory_modes(run_dir)
    assert modes == dict.fromkeys(modes, 0o755), modes
    assert stat.S_IMODE(os.stat(run_dir / "model.keras").st_mode) == 0o644


def test_export_directories_are_readable_by_others_under_umask_022(run_dir, tmp_path,
                                                                   capsys):
    out = tmp_path / "saved_models"
    with umask(0o022):
        assert main(["export", "--checkpoint", str(run_dir), "--output_dir", str(out),
                     "--name", "stsb", "--nowarmup"]) == 0
    capsys.readouterr()
    modes = _directory_modes(out)
    assert {"stsb", os.path.join("stsb", "1"), os.path.join("stsb", "1", "variables")} <= set(
        modes)
    assert modes == dict.fromkeys(modes, 0o755), modes


# --- a model.keras cut short or damaged ------------------------------------------------


def _first_1000_bytes(data):
    return data[:1000]


def _cut_in_half(data):
    return data[:len(data) // 2]


def _random_bytes(data):
    return os.urandom(4096)


def _empty(data):
    return b""


def _bytes_overwritten_inside(data):
    # The zip directory at the end is intact: only the weights' checksum tells.
    middle = len(data) // 2
    return data[:middle] + b"\0" * 64 + data[middle + 64:]


CORRUPTIONS = [_first_1000_bytes, _cut_in_half, _random_bytes, _empty,
               _bytes_overwritten_inside]


def _command(name, model, tmp_path):
    """The command line of `name` on run directory `model`, and the path it would write."""
    if name == "evaluate":
        output = tmp_path / "eval"
        return ["evaluate", "--model", str(model), "--task", "stsb", "--data_dir", STSB,
                "--output_dir", str(output)], output
    if name == "predict":
        output = tmp_path / "predictions.tsv"
        return ["predict", "--model", str(model), "--task", "stsb", "--input",
                os.path.join(STSB, "dev.tsv"), "--output", str(output)], output
    output = tmp_path / "saved_models"
    return ["export", "--checkpoint", str(model), "--output_dir", str(output),
            "--nowarmup"], output


def _copy_run(run_dir, tmp_path):
    copy = tmp_path / "copied_run"
    shutil.copytree(run_dir, copy)
    return copy


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("command", ["evaluate", "predict", "export"])
def test_damaged_model_keras_is_named_with_what_to_do(run_dir, tmp_path, capsys, command,
                                                      corrupt):
    run = _copy_run(run_dir, tmp_path)
    model_file = run / "model.keras"
    model_file.write_bytes(corrupt(model_file.read_bytes()))
    before = _listing(run)
    argv, output = _command(command, run, tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert str(model_file) in err
    assert any(word in err for word in ("truncated", "corrupt", "unreadable")), err
    assert "copy it again" in err and "keras-bert finetune" in err, err
    assert "File not found" not in err
    assert not os.path.exists(output) and _listing(run) == before


@pytest.mark.parametrize("command", ["evaluate", "predict", "export"])
def test_run_directory_without_model_keras_names_the_missing_file(run_dir, tmp_path, capsys,
                                                                 command):
    run = _copy_run(run_dir, tmp_path)
    os.remove(run / "model.keras")
    argv, output = _command(command, run, tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "model.keras" in err and "keras-bert finetune" in err, err
    # Not read as an encoder checkpoint: no list of what one would hold.
    assert "keras_bert_config.json" not in err and "safetensors" not in err, err
    assert not os.path.exists(output)


def test_export_of_a_run_directory_without_model_keras_says_it_is_a_run(run_dir, tmp_path,
                                                                       capsys):
    run = _copy_run(run_dir, tmp_path)
    os.remove(run / "model.keras")
    argv, _ = _command("export", run, tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "fine-tuning run directory" in err and repr(str(run / "model.keras")) in err, err
