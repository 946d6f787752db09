"""Bad fine-tuning input in every task family's own layout: `keras-bert finetune /
evaluate / predict` exit with code 2 and one line on stderr naming the file (and the
line, where there is one), before any training, and leave nothing new on disk.

tests/pipelines/test_bad_input.py holds the table for every subcommand on MNLI; this file covers
what differs per family: CoLA's headerless rows, STS-B scores, SST-2's label set,
CoNLL tags and columns, SWAG's CSV, SQuAD JSON, empty splits of each layout, a
checkpoint whose vocab.txt does not fit its config, and an output directory that holds
another run."""

import json
import os
import shutil

import pytest
from conftest import REPO, minilm_path, snapshot_files

from keras_bert.cli import main

VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
TASK_DATA = os.path.join(REPO, "tests", "fixtures", "tasks")
TINY = ["--preset", "tiny", "--vocab_file", VOCAB, "--do_lower_case=false",
        "--max_seq_length", "32", "--num_train_epochs", "1", "--noprogress"]


def _copy(d, *parts):
    """A copy of tests/fixtures/tasks/<parts> under d, to spoil."""
    target = d / parts[-1]
    shutil.copytree(os.path.join(TASK_DATA, *parts), target)
    return target


def _glue(d, name, split, lines):
    """GLUE task directory `name` whose `split`.tsv is replaced by `lines`."""
    target = d / name
    target.mkdir()
    files = {
        "SST-2": {"train.tsv": ["sentence\tlabel", "a good film\t1", "a bad film\t0"],
                  "dev.tsv": ["sentence\tlabel", "good\t1", "bad\t0"]},
        "CoLA": {"train.tsv": ["gj04\t1\t\tThe cat sat.", "gj04\t0\t*\tCat the sat."],
                 "dev.tsv": ["gj04\t1\t\tThe dog ran.", "gj04\t0\t*\tRan dog the."]},
    }
    for split_name, rows in files[name].items():
        (target / split_name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    (target / f"{split}.tsv").write_text("".join(f"{line}\n" for line in lines),
                                         encoding="utf-8")
    return target


def _stsb(d, train_lines):
    target = _copy(d, "glue", "STS-B")
    header = (target / "train.tsv").read_text(encoding="utf-8").splitlines()[0]
    (target / "train.tsv").write_text("\n".join([header, *train_lines]) + "\n",
                                      encoding="utf-8")
    return target


def _stsb_row(score):
    return "\t".join(["0", "main-captions", "MSRvid", "2012test", "0001", "none", "none",
                      "A plane is taking off.", "An air plane is taking off.", score])


def _conll(d, split_file, text):
    target = _copy(d, "conll2003")
    (target / split_file).write_text(text, encoding="utf-8")
    return target


def _swag(d, split_file, rows):
    target = _copy(d, "swag")
    header = (target / "train.csv").read_text(encoding="utf-8").splitlines()[0]
    (target / split_file).write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return target


def _swag_row(label="0", extra=""):
    return f'0,lsmdc1,1,He sits. He,He sits.,He,gold,stands.,runs.,eats.,"says, ""hi"".",{label}{extra}'


def _squad(d, name, edit):
    target = _copy(d, "squad")
    data = json.loads((target / name).read_text(encoding="utf-8"))
    edit(data)
    (target / name).write_text(json.dumps(data), encoding="utf-8")
    return target


def _no_questions(data):
    data["data"] = []


def _checkpoint_with_short_vocab(d):
    """A Hugging Face checkpoint directory whose own vocab.txt has fewer tokens than its
    config.json's vocab_size (the weights are MiniLM's, linked, not copied)."""
    source = minilm_path()
    target = d / "ckpt"
    target.mkdir()
    for name in os.listdir(source):
        if name != "vocab.txt" and os.path.isfile(os.path.join(source, name)):
            os.symlink(os.path.join(source, name), target / name)
    with open(os.path.join(source, "vocab.txt"), encoding="utf-8") as f:
        (target / "vocab.txt").write_text("".join(f.readlines()[:-5]), encoding="utf-8")
    return str(target)


def _finetune(task, data_dir, out, *extra):
    return ["finetune", "--task", task, "--data_dir", str(data_dir), "--output_dir",
            str(out), *TINY, *extra]


# (case id, argv(tmp dir) -> list, words the one-line message must hold)
CASES = [
    ("cola-headerless-row-with-3-columns", lambda d: _finetune(
        "cola", _glue(d, "CoLA", "dev", ["gj04\t1\t\tThe dog ran.", "gj04\t1\tThe dog ran."]),
        d / "out"), ["CoLA/dev.tsv:2", "3 tab-separated columns, expected 4"]),
    ("sst2-label-outside-the-set", lambda d: _finetune(
        "sst2", _glue(d, "SST-2", "train", ["sentence\tlabel", "fine\t1", "odd\t2"]),
        d / "out"), ["SST-2/train.tsv:3", "label '2'", "['0', '1']"]),
    ("sst2-header-only-dev", lambda d: _finetune(
        "sst2", _glue(d, "SST-2", "dev", ["sentence\tlabel"]), d / "out"),
     ["SST-2/dev.tsv", "no examples"]),
    ("sst2-empty-train", lambda d: _finetune(
        "sst2", _glue(d, "SST-2", "train", []), d / "out"), ["SST-2/train.tsv", "empty"]),
    ("stsb-score-not-a-number", lambda d: _finetune(
        "stsb", _stsb(d, [_stsb_row("4.2"), _stsb_row("high")]), d / "out"),
     ["STS-B/train.tsv:3", "'high'"]),
    ("ner-tag-not-iob", lambda d: _finetune(
        "ner", _conll(d, "train.txt", "-DOCSTART- -X- -X- O\n\nEU NNP I-NP ORG\n"), d / "out"),
     ["conll2003/train.txt:3", "'ORG'"]),
    ("ner-line-with-other-column-count", lambda d: _finetune(
        "ner", _conll(d, "valid.txt", "-DOCSTART- -X- -X- O\n\nEU NNP I-NP I-ORG\nrejects O\n"),
        d / "out"), ["conll2003/valid.txt:4", "2 columns, expected 4"]),
    ("ner-empty-dev", lambda d: _finetune(
        "ner", _conll(d, "valid.txt", "-DOCSTART- -X- -X- O\n\n"), d / "out"),
     ["conll2003/valid.txt", "no sentences"]),
    ("swag-label-outside-0-3", lambda d: _finetune(
        "swag", _swag(d, "train.csv", [_swag_row(), _swag_row("4")]), d / "out"),
     ["swag/train.csv:3", "label '4'"]),
    ("swag-row-with-an-extra-field", lambda d: _finetune(
        "swag", _swag(d, "val.csv", [_swag_row(extra=",x")]), d / "out"),
     ["swag/val.csv:2", "13 fields, expected 12"]),
    ("swag-header-only-dev", lambda d: _finetune(
        "swag", _swag(d, "val.csv", []), d / "out"), ["swag/val.csv", "no examples"]),
    ("squad-dev-without-questions", lambda d: _finetune(
        "squad1", _squad(d, "dev-v1.1.json", _no_questions), d / "out",
        "--max_query_length", "8"), ["squad/dev-v1.1.json", "no examples"]),
    ("squad-v1-file-with-impossible-question", lambda d: _finetune(
        "squad1", _squad(d, "train-v1.1.json", lambda data: data["data"][0]["paragraphs"][0][
            "qas"][0].update(is_impossible=True, answers=[])), d / "out",
        "--max_query_length", "8"), ["squad/train-v1.1.json", "is_impossible", "squad2"]),
    ("checkpoint-vocab-does-not-fit-its-config", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "out"), "--checkpoint", _checkpoint_with_short_vocab(d)],
     ["ckpt/vocab.txt", "30517 tokens", "30522"]),
    ("vocab-file-other-than-the-checkpoints", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "out"), "--checkpoint", minilm_path(), "--vocab_file",
        _swapped_vocab(d)], ["swapped.txt", "line 2000", "the model's own"]),
]


def _swapped_vocab(d):
    """MiniLM's vocab (same size) with lines 2000 and 2001 swapped: ids that would
    silently point at other embeddings."""
    with open(os.path.join(minilm_path(), "vocab.txt"), encoding="utf-8") as f:
        lines = f.readlines()
    lines[1999], lines[2000] = lines[2000], lines[1999]
    (d / "swapped.txt").write_text("".join(lines), encoding="utf-8")
    return str(d / "swapped.txt")


def _run(args, capsys):
    capsys.readouterr()
    code = main(args)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()
             and "warning:" not in line]
    return code, err, lines


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_finetuning_input(case, tmp_path, capsys):
    name, argv, words = case
    work = tmp_path / "work"
    work.mkdir()
    args = argv(work)
    before = snapshot_files(work)
    code, err, lines = _run(args, capsys)
    assert code == 2, f"{name}: exit code {code}, stderr:\n{err}"
    assert "Traceback" not in err
    assert len(lines) == 1, f"{name}: expected one error line, got:\n{err}"
    assert lines[0].startswith("keras-bert finetune: error: "), lines[0]
    for word in words:
        assert word in lines[0], f"{name}: {word!r} not in {lines[0]!r}"
    assert snapshot_files(work) == before, f"{name}: left new files behind"


def test_output_dir_holding_another_run_is_left_as_it_was(tmp_path, capsys):
    data = os.path.join(TASK_DATA, "glue", "MNLI")
    out = tmp_path / "run"
    assert main(_finetune("mnli", data, out, "--num_train_epochs", "0.5")) == 0
    before = {name: (out / name).read_bytes() for name in os.listdir(out)
              if (out / name).is_file()}
    # Another run (other settings) into the same directory: refused up front, and the
    # first run's files are untouched; --overwrite replaces it once the new one is done.
    code, err, lines = _run(_finetune("mnli", data, out, "--learning_rate", "1e-4"), capsys)
    assert code == 2 and len(lines) == 1, err
    assert str(out) in lines[0] and "another fine-tuning run" in lines[0]
    assert {name: (out / name).read_bytes() for name in os.listdir(out)
            if (out / name).is_file()} == before
    assert not [n for n in os.listdir(tmp_path) if n != "run"], "no temporary left"
    assert main(_finetune("mnli", data, out, "--learning_rate", "1e-4", "--overwrite")) == 0
    record = json.loads((out / "finetune_config.json").read_text())
    assert record["learning_rate"] == 1e-4 and record["data_dir"] == data


def test_evaluate_and_predict_name_the_bad_line(tmp_path, capsys):
    data = os.path.join(TASK_DATA, "glue", "MNLI")
    run = tmp_path / "run"
    assert main(_finetune("mnli", data, run, "--num_train_epochs", "0.5")) == 0
    metrics = (run / "metrics.json").read_bytes()
    # evaluate reads the dev split with labels: one outside MNLI's set is named.
    bad = tmp_path / "MNLI"
    shutil.copytree(data, bad)
    lines = (bad / "dev_matched.tsv").read_text(encoding="utf-8").splitlines()
    cells = lines[1].split("\t")
    cells[-1] = "maybe"
    (bad / "dev_matched.tsv").write_text("\n".join([lines[0], "\t".join(cells)]) + "\n",
                                         encoding="utf-8")
    code, err, out = _run(["evaluate", "--model", str(run), "--task", "mnli", "--data_dir",
                           str(bad)], capsys)
    assert code == 2 and len(out) == 1, err
    assert "dev_matched.tsv:2" in out[0] and "'maybe'" in out[0]
    assert (run / "metrics.json").read_bytes() == metrics  # not rewritten
    # predict ignores labels (any value), but not a row with a wrong column count.
    code, err, _ = _run(["predict", "--model", str(run), "--task", "mnli", "--input",
                         str(bad / "dev_matched.tsv"), "--output", str(tmp_path / "p.tsv")],
                        capsys)
    assert code == 0, err
    (bad / "short.tsv").write_text(lines[0] + "\n" + lines[1] + "\nonly\ttwo\n",
                                   encoding="utf-8")
    code, err, out = _run(["predict", "--model", str(run), "--task", "mnli", "--input",
                           str(bad / "short.tsv"), "--output", str(tmp_path / "q.tsv")],
                          capsys)
    assert code == 2 and len(out) == 1 and "short.tsv:3" in out[0], err
    assert not (tmp_path / "q.tsv").exists()
