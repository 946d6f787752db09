"""No command writes over or deletes its own inputs: an output (--output_dir, --output,
--output_file) that is, holds or lies inside an input (data, checkpoint, vocab, model,
input file, corpus, run directory) is refused before any work, with or without
--overwrite: exit 2, one line on stderr that names both flags, the inputs byte for byte
as they were. The outputs a command shares with its inputs on purpose (a pretraining run
resumed in place, evaluate and plot writing into what they read by default) still pass.

The refusal comes before anything is read, so the inputs are tiny stand-ins."""

import argparse
import hashlib
import os
import shutil

import pytest
from conftest import REPO, snapshot_files

from keras_bert.cli import main
from keras_bert.core.errors import OutputError
from keras_bert.core.input_files import path_relation
from keras_bert.pipelines.plumbing.commands import check_outputs_spare_inputs
from keras_bert.pipelines.plumbing.paths import input_paths


def _hashes(root):
    """Every file under `root` -> the SHA-256 of its bytes, and every directory."""
    found = {}
    for path in sorted(snapshot_files(root)):
        full = os.path.join(root, path)
        found[path] = (hashlib.sha256(open(full, "rb").read()).hexdigest()
                       if os.path.isfile(full) else "dir")
    return found


def _inputs(d):
    """Stand-ins: a GLUE data dir, a checkpoint dir, a vocab, a model dir, a corpus."""
    data = d / "data"
    data.mkdir()
    (data / "train.tsv").write_text("sentence\tlabel\nfine\t1\n")
    (data / "dev.tsv").write_text("sentence\tlabel\nbad\t0\n")
    checkpoint = d / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "model.ckpt-100.index").write_bytes(b"\x00index")
    (checkpoint / "model.ckpt-100.data-00000-of-00001").write_bytes(b"\x01weights")
    (checkpoint / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nfine\n")
    model = d / "model"
    model.mkdir()
    (model / "finetune_config.json").write_text("{}")
    (d / "corpus.txt").write_text("One sentence.\nAnother one.\n\nA new document.\n")
    (d / "examples.tsv").write_text("sentence\nfine\n")


def _finetune(d, output_dir, *extra):
    return ["finetune", "--task", "sst2", "--data_dir", str(d / "data"), "--checkpoint",
            str(d / "ckpt"), "--output_dir", str(output_dir), *extra]


CASES = [
    ("finetune into its data dir", lambda d: _finetune(d, d / "data"),
     ("--output_dir", "is the --data_dir")),
    ("finetune into its data dir, overwriting", lambda d: _finetune(d, d / "data", "--overwrite"),
     ("--output_dir", "is the --data_dir")),
    ("finetune into its checkpoint dir", lambda d: _finetune(d, d / "ckpt", "--overwrite"),
     ("--output_dir", "is the --checkpoint")),
    ("finetune into its checkpoint prefix's dir", lambda d: [
        "finetune", "--task", "sst2", "--data_dir", str(d / "data"), "--checkpoint",
        str(d / "ckpt" / "model.ckpt-100"), "--output_dir", str(d / "ckpt"), "--overwrite"],
     ("--output_dir", "is the --checkpoint")),
    ("finetune inside its data dir", lambda d: _finetune(d, d / "data" / "run"),
     ("--output_dir", "lies inside the --data_dir")),
    ("finetune into a dir holding its data", lambda d: _finetune(d, d, "--overwrite"),
     ("--output_dir", "holds the --data_dir")),
    ("finetune into a dir holding its vocab", lambda d: [
        "finetune", "--task", "sst2", "--data_dir", str(d / "data"), "--preset", "tiny",
        "--vocab_file", str(d / "ckpt" / "vocab.txt"), "--output_dir", str(d / "ckpt"),
        "--overwrite"],
     ("--output_dir", "holds the --vocab_file")),
    ("predict over its input", lambda d: [
        "predict", "--model", str(d / "model"), "--task", "sst2", "--input",
        str(d / "examples.tsv"), "--output", str(d / "examples.tsv")],
     ("--output", "is the --input")),
    ("vocab over its corpus", lambda d: [
        "vocab", "--input_file", str(d / "corpus.txt"), "--output_file", str(d / "corpus.txt")],
     ("--output_file", "is the --input_file")),
    ("vocab over a file its corpus glob matches", lambda d: [
        "vocab", "--input_file", f"{d}/*.txt", "--output_file", str(d / "corpus.txt")],
     ("--output_file", "is the --input_file")),
    ("create-pretraining-data into its corpus dir", lambda d: [
        "create-pretraining-data", "--input_file", f"{d}/*.txt", "--output_dir", str(d),
        "--vocab_file", str(d / "ckpt" / "vocab.txt"), "--overwrite"],
     ("--output_dir", "holds the --input_file")),
    ("create-pretraining-data into a dir holding its corpus", lambda d: [
        "create-pretraining-data", "--input_file", str(d / "corpus.txt"), "--output_dir",
        str(d), "--vocab_file", str(d / "ckpt" / "vocab.txt"), "--overwrite"],
     ("--output_dir", "holds the --input_file")),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_an_output_on_an_input_is_refused_before_any_work(case, tmp_path, capsys):
    name, argv, words = case
    _inputs(tmp_path)
    before = _hashes(tmp_path)
    code = main(argv(tmp_path))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, f"{name}: exit code {code}, stderr:\n{err}"
    assert len(lines) == 1 and "Traceback" not in err, err
    command = argv(tmp_path)[0]
    assert lines[0].startswith(f"keras-bert {command}: error: "), lines[0]
    for word in (*words, "choose another"):
        assert word in lines[0], (word, lines[0])
    assert _hashes(tmp_path) == before, f"{name}: its inputs changed"


def test_the_message_names_both_flags_in_one_line(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    d = str(tmp_path / "d")
    assert main(["finetune", "--task", "mrpc", "--data_dir", d, "--output_dir", d,
                 "--overwrite"]) == 2
    assert capsys.readouterr().err == (
        f"keras-bert finetune: error: --output_dir {d!r} is the --data_dir it reads from; "
        "writing there would overwrite or delete its inputs: choose another --output_dir.\n")


def test_paths_compare_resolved_and_remote_ones_as_strings(tmp_path):
    (tmp_path / "data").mkdir()
    os.symlink(tmp_path / "data", tmp_path / "link")
    data = str(tmp_path / "data")
    assert path_relation(str(tmp_path / "link"), data) == "is"
    assert path_relation(str(tmp_path / "link" / ".." / "data" / "x"), data) == "inside"
    assert path_relation(str(tmp_path / "data2"), data) is None
    assert path_relation("gs://b/data/", "gs://b/data") == "is"
    assert path_relation("gs://b", "gs://b/data/*.tfrecord") == "holds"
    assert path_relation("gs://b/data/x.tfrecord", "gs://b/data/*.tfrecord") == "is"
    assert path_relation("gs://b/other", "gs://b/data/*.tfrecord") is None
    assert path_relation(data, "gs://b" + data) is None


def test_checkpoint_names_and_missing_inputs_name_no_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert input_paths("hf://google-bert/bert-base-uncased", "checkpoint") == []
    assert input_paths("uncased_L-2_H-128_A-2", "checkpoint") == []  # a Google release name
    assert input_paths("missing/model.ckpt-100", "checkpoint") == []
    assert input_paths("missing/*.txt,missing.txt", "patterns") == []
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "model.ckpt-100.index").write_bytes(b"")
    assert input_paths("ckpt/model.ckpt-100", "checkpoint") == [str(tmp_path / "ckpt")]


def _check(command, **flags):
    check_outputs_spare_inputs(command, argparse.Namespace(**flags))


def test_outputs_shared_with_inputs_on_purpose_pass(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "ckpt-100.index").write_bytes(b"")
    (run / "vocab.txt").write_text("[PAD]\n")
    (tmp_path / "data.tfrecord").write_bytes(b"")
    # A pretraining run resumed in place: its own checkpoint, vocab copy and config.
    for init in (run, run / "checkpoints" / "ckpt-100"):
        _check("pretrain", output_dir=str(run), init_checkpoint=str(init),
               vocab_file=str(run / "vocab.txt"), input_file=str(tmp_path / "*.tfrecord"),
               resume=True)
    # evaluate writes into --model by default; plot into RUN_DIR/plots.
    _check("evaluate", model=str(run), output_dir=str(run), data_dir=str(tmp_path / "d"))
    _check("evaluate", model=str(run), output_dir=str(run / "eval"))
    _check("plot", run_dir=str(run), output_dir=str(run / "plots"))
    # Elsewhere, the same relations are refused.
    with pytest.raises(OutputError, match="--output_dir .* is the --init_checkpoint"):
        _check("export", output_dir=str(run), init_checkpoint=str(run))
    with pytest.raises(OutputError, match="--output_dir .* holds the --input_file"):
        _check("pretrain", output_dir=str(tmp_path), input_file=str(tmp_path / "*.tfrecord"))
    with pytest.raises(OutputError, match="--output_dir .* is the RUN_DIR"):
        _check("plot", run_dir=str(run), output_dir=str(run))
    with pytest.raises(OutputError, match="--output_dir .* holds the --model"):
        _check("evaluate", model=str(run), output_dir=str(tmp_path))


def test_the_library_refuses_too(tmp_path):
    """`Finetuning` itself (not only the command) refuses an output_dir that is or lies
    inside its data, before anything is written or removed."""
    from keras_bert.tasks.finetuning import Finetuning

    data = tmp_path / "STS-B"
    shutil.copytree(os.path.join(REPO, "tests", "fixtures", "tasks", "glue", "STS-B"), data)
    before = {p.name: p.read_bytes() for p in data.iterdir()}
    vocab = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
    for output in (data, data / "run"):
        with pytest.raises(OutputError, match="the data_dir"):
            Finetuning("stsb", str(data), str(output), preset="tiny", vocab_file=vocab,
                       lower_case=False, overwrite=True, progress=False)
    assert {p.name: p.read_bytes() for p in data.iterdir()} == before
