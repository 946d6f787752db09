"""Every user mistake ends the same way, on every subcommand: exit code 2, one line on
stderr that names the offending thing, no traceback, and nothing new left on disk —
and it happens before the expensive work.

Each case builds its inputs in a fresh directory, runs `keras-bert` in-process, and
compares the directory before and after."""

import json
import os
import shutil

import pytest
from cli_support import one_line_error
from conftest import REPO, minilm_path, snapshot_files

from keras_bert.cli import main

VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
TASK_DATA = os.path.join(REPO, "tests", "fixtures", "tasks")


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


# Inputs that take a real run to make are made once and copied into each case's directory.
_MADE: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def _made_once(tmp_path_factory):
    _MADE["root"] = str(tmp_path_factory.mktemp("made"))
    yield
    _MADE.clear()


def _made(name, make, d):
    """A copy in `d` of what `make(directory)` builds (built on first use)."""
    source = os.path.join(_MADE["root"], name)
    if not os.path.exists(source):
        make(source)
    shutil.copytree(source, d / name)
    return str(d / name)


def _tfrecords(d):
    """Tiny pretraining TFRecords (and their sidecar) made with the test vocab."""
    def make(out):
        corpus_dir = os.path.join(_MADE["root"], "corpus")
        os.makedirs(corpus_dir, exist_ok=True)
        import pathlib
        assert main(["create-pretraining-data", "--input_file",
                     _corpus(pathlib.Path(corpus_dir), 30), "--output_dir", out,
                     "--vocab_file", VOCAB, "--max_seq_length", "32",
                     "--max_predictions_per_seq", "5", "--dupe_factor", "1", "--num_workers",
                     "1", "--noprogress"]) == 0

    return _made("data", make, d)


def _finetuned(d):
    def make(out):
        assert main(["finetune", "--task", "mnli", "--data_dir",
                     os.path.join(TASK_DATA, "glue", "MNLI"), "--output_dir", out, "--preset",
                     "tiny", "--vocab_file", VOCAB, "--do_lower_case=false",
                     "--max_seq_length", "32", "--num_train_epochs", "0.5",
                     "--noprogress"]) == 0

    return _made("run", make, d)


PRETRAIN_SMALL = ["--config", "tiny", "--vocab_file", VOCAB, "--train_batch_size", "4",
                  "--num_train_steps", "2", "--num_warmup_steps", "0",
                  "--save_checkpoints_steps", "2", "--noprogress"]


def _pretrain_args(**changes):
    """PRETRAIN_SMALL with some values changed."""
    args = list(PRETRAIN_SMALL)
    for name, value in changes.items():
        args[args.index(f"--{name}") + 1] = value
    return args


def _pretrained(d):
    """A finished two-step pretraining run directory on `_tfrecords` data."""
    data = _tfrecords(d)

    def make(out):
        assert main(["pretrain", "--input_file", os.path.join(data, "*.tfrecord"),
                     "--output_dir", out, *PRETRAIN_SMALL]) == 0

    return data, _made("pretrained", make, d)


def _minilm_tfrecords(d):
    """Tiny pretraining TFRecords made with MiniLM's vocab (data an init checkpoint fits)."""
    def make(out):
        corpus_dir = os.path.join(_MADE["root"], "corpus-minilm")
        os.makedirs(corpus_dir, exist_ok=True)
        import pathlib
        assert main(["create-pretraining-data", "--input_file",
                     _corpus(pathlib.Path(corpus_dir), 30), "--output_dir", out,
                     "--vocab_file", os.path.join(minilm_path(), "vocab.txt"), "--max_seq_length",
                     "32", "--max_predictions_per_seq", "5", "--dupe_factor", "1",
                     "--num_workers", "1", "--noprogress"]) == 0

    return _made("minilm_data", make, d) + "/*.tfrecord"


def _unwritable(name):
    """A path that cannot be created, for root too (/proc takes no new files)."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs Linux /proc for a location nobody can write to")
    return f"/proc/keras-bert-test/{name}"


def _other_model_vocab(d):
    """MiniLM's vocab.txt with two ordinary tokens swapped: the model's size, not its ids."""
    tokens = open(os.path.join(minilm_path(), "vocab.txt"), encoding="utf-8").read().splitlines()
    tokens[2000], tokens[2001] = tokens[2001], tokens[2000]
    (d / "other_vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return str(d / "other_vocab.txt")


def _model_with(d, name, change):
    """A copy of MiniLM's files in `d/name` with `change(directory)` applied."""
    target = d / name
    shutil.copytree(minilm_path(), target)
    change(target)
    return str(target)


def _truncate(path, keep=0.5):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(int(size * keep))


def _hf_config_without_vocab_size(directory):
    config = json.loads((directory / "config.json").read_text())
    del config["vocab_size"]
    (directory / "config.json").write_text(json.dumps(config))


def _keras_bert_model(d):
    """A tiny encoder in keras_bert's own format, with its encoder.weights.h5 cut short."""
    def make(out):
        from keras_bert import BertConfig, BertEncoder
        from keras_bert.checkpoints import save_encoder

        save_encoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=6606)), out)
        shutil.copy(VOCAB, os.path.join(out, "vocab.txt"))

    path = _made("kb_model", make, d)
    _truncate(os.path.join(path, "encoder.weights.h5"))
    return path


def _shards_without_sidecar(d):
    data = _tfrecords(d)
    os.remove(os.path.join(data, "pretraining_data.json"))
    return data


def _cut_tfrecords(d):
    data = _tfrecords(d)
    _truncate(os.path.join(data, "part-00000.tfrecord"), keep=0.7)
    return os.path.join(data, "*.tfrecord")


def _write_bytes(d, name, data):
    (d / name).write_bytes(data)
    return str(d / name)


def _write_file(d, name, text):
    (d / name).write_text(text, encoding="utf-8")
    return str(d / name)


# (case id, argv(tmp_path) -> list, words the one-line message must contain)
CASES = [
    # --- encode ---
    ("encode-batch-size-0", lambda d: ["encode", "x", "--batch_size", "0"], ["--batch_size"]),
    ("encode-seq-past-positions", lambda d: ["encode", "x", "--model", minilm_path(),
                                             "--max_seq_length", "1000"], ["max_seq_length"]),
    ("encode-model-missing", lambda d: ["encode", "x", "--model", str(d / "nope")],
     ["nope", "does not exist"]),
    ("encode-model-is-vocab-file", lambda d: ["encode", "x", "--model", VOCAB],
     ["vocab_rich.txt", "is a file"]),
    ("encode-other-vocab", lambda d: ["encode", "x", "y", "--model", minilm_path(), "--vocab_file",
                                      VOCAB], ["vocab", "30522"]),
    ("encode-vocab-is-dir", lambda d: ["encode", "x", "--model", minilm_path(), "--vocab_file",
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
        "finetune", "--task", "mnli", "--data_dir", str(d), "--output_dir", str(d.parent / "o"),
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
        "--output_dir", str(d / "o"), "--checkpoint", minilm_path(), "--vocab_file", VOCAB],
     ["vocab", "30522"]),
    ("finetune-output-holds-a-run", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", _finetuned(d), "--preset", "tiny", "--vocab_file", VOCAB],
     ["already holds"]),
    ("finetune-checkpoint-and-preset", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--checkpoint", minilm_path(), "--preset", "tiny"],
     ["checkpoint", "preset"]),
    ("finetune-preset-without-vocab", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--preset", "tiny"], ["vocab_file"]),
    ("finetune-seq-past-positions", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--checkpoint", minilm_path(), "--max_seq_length", "1024"],
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
                                         str(d.parent / "out.tsv")], ["--input", "in.tsv"]),
    ("predict-output-is-dir", lambda d: ["predict", "--model", str(d), "--task", "mnli",
                                         "--input", VOCAB, "--output", str(d)],
     ["--output", "is a directory"]),
    ("predict-bad-row", lambda d: ["predict", "--model", _finetuned(d), "--task", "mnli",
                                   "--input", _write_rows(d), "--output", str(d / "out.tsv")],
     ["in.tsv:3"]),
]


# More rows per subcommand: every case issue 13 names, and the same kinds of mistakes
# (bad numbers, paths of the wrong kind, unwritable outputs, inputs that do not fit
# together, malformed files) on every subcommand.
CASES += [
    # --- encode ---
    ("encode-vocab-same-size-other-model", lambda d: [
        "encode", "x", "y", "--model", minilm_path(), "--vocab_file", _other_model_vocab(d)],
     ["other_vocab.txt", "not the vocab of", "line 2001"]),
    ("encode-output-unwritable", lambda d: ["encode", "x", "--output", _unwritable("e.npy")],
     ["--output", "cannot be written"]),
    ("encode-truncated-safetensors", lambda d: [
        "encode", "x", "--model", _model_with(d, "cut", lambda m: _truncate(
            m / "model.safetensors"))], ["model.safetensors", "truncated"]),
    ("encode-truncated-h5", lambda d: ["encode", "x", "--model", _keras_bert_model(d),
                                       "--do_lower_case=false"],
     ["encoder.weights.h5", "truncated"]),
    ("encode-config-without-vocab-size", lambda d: [
        "encode", "x", "--model", _model_with(d, "novocabsize", _hf_config_without_vocab_size)],
     ["config.json", "vocab_size"]),
    ("encode-model-without-vocab", lambda d: [
        "encode", "x", "--model", _model_with(d, "novocab", lambda m: os.remove(
            m / "vocab.txt"))], ["novocab", "vocab.txt", "--vocab_file"]),
    ("encode-input-missing", lambda d: ["encode", "--input_file", str(d / "s.txt")],
     ["--input_file", "s.txt", "does not exist"]),
    ("encode-seq-length-0", lambda d: ["encode", "x", "--max_seq_length", "0"],
     ["--max_seq_length"]),
    ("encode-unknown-pooling", lambda d: ["encode", "x", "--pooling", "max"], ["--pooling"]),
    ("encode-input-binary", lambda d: ["encode", "--input_file", _write_bytes(
        d, "model.bin", b"PK\x03\x04\x00\x00binary")], ["model.bin", "not a text file"]),
    ("encode-input-not-utf8", lambda d: ["encode", "--input_file", _write_bytes(
        d, "latin1.txt", "ok\ncaf\u00e9 au lait\n".encode("latin-1"))],
     ["latin1.txt:2", "UTF-8"]),
    # --- vocab ---
    ("vocab-binary-corpus", lambda d: ["vocab", "--input_file", _write_bytes(
        d, "corpus.bin", b"\x00\x01\x02" * 1000), "--output_file", str(d / "v.txt")],
     ["corpus.bin", "not a text file"]),
    ("vocab-output-unwritable", lambda d: ["vocab", "--input_file", _corpus(d),
                                           "--output_file", _unwritable("v.txt")],
     ["--output_file", "cannot be written"]),
    ("vocab-output-under-a-file", lambda d: ["vocab", "--input_file", _corpus(d),
                                             "--output_file", str(d / "corpus.txt" / "v.txt")],
     ["corpus.txt", "is a file"]),
    ("vocab-empty-corpus", lambda d: ["vocab", "--input_file", _write_file(d, "e.txt", ""),
                                      "--output_file", str(d / "v.txt"), "--noprogress"],
     ["e.txt", "empty"]),
    ("vocab-num-unused-negative", lambda d: ["vocab", "--input_file", _corpus(d),
                                             "--output_file", str(d / "v.txt"),
                                             "--num_unused", "-1"], ["--num_unused"]),
    # --- create-pretraining-data ---
    ("data-output-unwritable", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir",
        _unwritable("o"), "--vocab_file", VOCAB], ["--output_dir", "cannot be written"]),
    ("data-zero-instances", lambda d: [
        "create-pretraining-data", "--input_file", _write_file(d, "e.txt", "\n\n"),
        "--output_dir", str(d / "o"), "--vocab_file", VOCAB, "--num_workers", "1",
        "--noprogress"], ["No pretraining instances", "no text"]),
    ("data-one-sentence-corpus", lambda d: [
        "create-pretraining-data", "--input_file", _write_file(d, "one.txt", "The cat sat.\n"),
        "--output_dir", str(d / "o"), "--vocab_file", VOCAB, "--do_lower_case=false",
        "--num_workers", "1", "--noprogress"], ["single document", "next_sentence_prediction"]),
    ("data-shards-without-sidecar", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir",
        _shards_without_sidecar(d), "--vocab_file", VOCAB, "--num_workers", "1",
        "--noprogress"], ["part-00000.tfrecord", "--overwrite"]),
    ("data-rerun-other-settings", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d, 30), "--output_dir",
        _tfrecords(d), "--vocab_file", VOCAB, "--max_seq_length", "32",
        "--max_predictions_per_seq", "5", "--dupe_factor", "2", "--num_workers", "1",
        "--noprogress"], ["dupe_factor: 1 → 2", "--overwrite"]),
    ("data-vocab-duplicate-word", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir", str(d / "o"),
        "--vocab_file", _vocab_with(d, ["the"])], ["'the'", "lines"]),
    ("data-vocab-missing", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir", str(d / "o"),
        "--vocab_file", str(d / "v.txt")], ["v.txt"]),
    ("data-input-missing", lambda d: [
        "create-pretraining-data", "--input_file", str(d / "*.txt"), "--output_dir",
        str(d / "o"), "--vocab_file", VOCAB], ["matches no file"]),
    ("data-shard-index-past-shards", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir", str(d / "o"),
        "--vocab_file", VOCAB, "--shard_index", "2", "--num_shards", "2"], ["shard_index"]),
    ("data-dupe-factor-0", lambda d: [
        "create-pretraining-data", "--input_file", _corpus(d), "--output_dir", str(d / "o"),
        "--vocab_file", VOCAB, "--dupe_factor", "0"], ["--dupe_factor"]),
    # --- pretrain ---
    ("pretrain-output-unwritable", lambda d: [
        "pretrain", "--input_file", _tfrecords(d) + "/*.tfrecord", "--output_dir",
        _unwritable("run"), *PRETRAIN_SMALL], ["--output_dir", "cannot be written"]),
    ("pretrain-truncated-tfrecord", lambda d: [
        "pretrain", "--input_file", _cut_tfrecords(d), "--output_dir", str(d / "run"),
        *PRETRAIN_SMALL], ["part-00000.tfrecord"]),
    ("pretrain-init-checkpoint-other-vocab-data", lambda d: [
        "pretrain", "--input_file", _tfrecords(d) + "/*.tfrecord", "--output_dir",
        str(d / "run"), "--init_checkpoint", minilm_path(), "--num_train_steps", "2",
        "--num_warmup_steps", "0"], ["another vocab", "init_checkpoint", "vocab.txt"]),
    ("pretrain-init-checkpoint-truncated", lambda d: [
        "pretrain", "--input_file", _minilm_tfrecords(d), "--output_dir", str(d / "run"),
        "--init_checkpoint", _model_with(d, "cut", lambda m: _truncate(m / "model.safetensors")),
        "--num_train_steps", "2", "--num_warmup_steps", "0", "--noprogress"],
     ["model.safetensors", "truncated"]),
    ("pretrain-config-without-vocab-size", lambda d: [
        "pretrain", "--input_file", _tfrecords(d) + "/*.tfrecord", "--output_dir",
        str(d / "run"), "--config", os.path.join(_model_with(
            d, "novocabsize", _hf_config_without_vocab_size), "config.json")],
     ["config.json", "vocab_size"]),
    ("pretrain-rerun-other-batch", lambda d: [
        "pretrain", "--input_file", _pretrained(d)[0] + "/*.tfrecord", "--output_dir",
        str(d / "pretrained"), *_pretrain_args(train_batch_size="8")],
     ["train_batch_size: 4 → 8", "--overwrite"]),
    ("pretrain-rerun-more-steps", lambda d: [
        "pretrain", "--input_file", _pretrained(d)[0] + "/*.tfrecord", "--output_dir",
        str(d / "pretrained"), *_pretrain_args(num_train_steps="4")],
     ["num_train_steps: 2 → 4", "--resume"]),
    ("pretrain-warmup-past-steps", lambda d: [
        "pretrain", "--input_file", _tfrecords(d) + "/*.tfrecord", "--output_dir",
        str(d / "run"), "--config", "tiny", "--num_train_steps", "2"], ["num_warmup_steps"]),
    ("pretrain-input-is-dir", lambda d: [
        "pretrain", "--input_file", _tfrecords(d), "--output_dir", str(d / "run"),
        *PRETRAIN_SMALL], ["is a directory"]),
    ("pretrain-seq-length-other-than-data", lambda d: [
        "pretrain", "--input_file", _tfrecords(d) + "/*.tfrecord", "--output_dir",
        str(d / "run"), *PRETRAIN_SMALL, "--max_seq_length", "64"], ["max_seq_length", "32"]),
    ("pretrain-learning-rate-0", lambda d: [
        "pretrain", "--input_file", "x", "--output_dir", str(d / "run"), "--learning_rate", "0"],
     ["--learning_rate"]),
    # --- demo ---
    ("demo-output-unwritable", lambda d: ["demo", "--output_dir", _unwritable("demo")],
     ["--output_dir", "cannot be written"]),
    ("demo-batch-0", lambda d: ["demo", "--output_dir", str(d / "demo"), "--train_batch_size",
                                "0"], ["--train_batch_size"]),
    # --- finetune ---
    ("finetune-batch-0", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--preset", "tiny", "--vocab_file", VOCAB,
        "--train_batch_size", "0"], ["--train_batch_size"]),
    ("finetune-learning-rate-negative", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--preset", "tiny", "--vocab_file", VOCAB,
        "--learning_rate", "-1"], ["--learning_rate"]),
    ("finetune-seq-length-2", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--preset", "tiny", "--vocab_file", VOCAB,
        "--max_seq_length", "2"], ["max_seq_length"]),
    ("finetune-output-unwritable", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", _unwritable("o"), "--preset", "tiny", "--vocab_file", VOCAB],
     ["--output_dir", "cannot be written"]),
    ("finetune-output-is-file", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", VOCAB, "--preset", "tiny", "--vocab_file", VOCAB],
     ["--output_dir", "is a file"]),
    ("finetune-data-dir-is-file", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", VOCAB, "--output_dir", str(d / "o"),
        "--preset", "tiny", "--vocab_file", VOCAB], ["--data_dir", "is a file"]),
    ("finetune-dev-wrong-columns", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", _glue_dir(d, dev_rows=[
            "entailment", ["a", "b", "c"]]), "--output_dir", str(d / "o"), "--preset", "tiny",
        "--vocab_file", VOCAB], ["dev_matched.tsv:3", "3"]),
    ("finetune-vocab-same-size-other-model", lambda d: [
        "finetune", "--task", "mnli", "--data_dir", os.path.join(TASK_DATA, "glue", "MNLI"),
        "--output_dir", str(d / "o"), "--checkpoint", minilm_path(), "--vocab_file",
        _other_model_vocab(d)], ["other_vocab.txt", "line 2001"]),
    # --- evaluate ---
    ("evaluate-batch-0", lambda d: ["evaluate", "--model", str(d), "--task", "mnli",
                                    "--data_dir", str(d), "--eval_batch_size", "0"],
     ["--eval_batch_size"]),
    ("evaluate-model-missing", lambda d: ["evaluate", "--model", str(d / "nope"), "--task",
                                          "mnli", "--data_dir",
                                          os.path.join(TASK_DATA, "glue", "MNLI")],
     ["--model", "nope", "does not exist"]),
    ("evaluate-data-dir-missing", lambda d: ["evaluate", "--model", _finetuned(d), "--task",
                                             "mnli", "--data_dir", str(d / "nope")],
     ["--data_dir", "nope"]),
    ("evaluate-dev-wrong-columns", lambda d: [
        "evaluate", "--model", _finetuned(d), "--task", "mnli", "--data_dir",
        _glue_dir(d, dev_rows=["entailment", ["a", "b", "c"]]), "--noprogress"],
     ["dev_matched.tsv:3", "3"]),
    ("evaluate-output-unwritable", lambda d: [
        "evaluate", "--model", _finetuned(d), "--task", "mnli", "--data_dir",
        os.path.join(TASK_DATA, "glue", "MNLI"), "--output_dir", _unwritable("ev")],
     ["--output_dir", "cannot be written"]),
    # --- predict ---
    ("predict-batch-0", lambda d: ["predict", "--model", str(d), "--task", "mnli", "--input",
                                   VOCAB, "--output", str(d / "p.tsv"), "--eval_batch_size",
                                   "0"], ["--eval_batch_size"]),
    ("predict-output-unwritable", lambda d: [
        "predict", "--model", _finetuned(d), "--task", "mnli", "--input",
        os.path.join(TASK_DATA, "glue", "MNLI", "test_matched.tsv"), "--output",
        _unwritable("p.tsv")], ["--output", "cannot be written"]),
    ("predict-model-is-file", lambda d: ["predict", "--model", VOCAB, "--task", "mnli",
                                         "--input", VOCAB, "--output", str(d / "p.tsv")],
     ["--model", "is a file"]),
    ("predict-input-is-dir", lambda d: ["predict", "--model", _finetuned(d), "--task", "mnli",
                                        "--input", str(d), "--output", str(d / "p.tsv")],
     ["--input", "is a directory"]),
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


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_user_mistake(case, tmp_path, capsys):
    name, argv, words = case
    workdir = tmp_path / "work"
    workdir.mkdir()
    args = argv(workdir)  # builds the inputs (and any earlier good run) first
    capsys.readouterr()
    before = snapshot_files(workdir)
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
    assert snapshot_files(workdir) == before, f"{name}: left new files behind"


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


def test_output_checks_leave_nothing_and_name_the_flag(tmp_path):
    from keras_bert.core.errors import OutputError
    from keras_bert.pipelines.plumbing import require_output_directory, require_output_file

    (tmp_path / "keep.txt").write_text("x")
    require_output_file(str(tmp_path / "out.npy"), "--output")
    require_output_file(str(tmp_path / "keep.txt"), "--output")
    require_output_directory(str(tmp_path / "new" / "run"), "--output_dir")
    require_output_directory(str(tmp_path), "--output_dir")
    assert os.listdir(tmp_path) == ["keep.txt"]  # the write probes are gone
    with pytest.raises(OutputError, match="--output_dir '/proc/keras-bert-test/o' cannot be "
                                          "written"):
        require_output_directory(_unwritable("o"), "--output_dir")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root writes to read-only directories")
def test_a_read_only_output_directory_is_refused_before_any_work(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert main(["vocab", "--input_file", _corpus(tmp_path), "--output_file",
                     str(locked / "v.txt")]) == 2
    finally:
        locked.chmod(0o700)
    err = capsys.readouterr().err.strip()
    assert "--output_file" in err and "cannot be written" in err and "\n" not in err
    assert os.listdir(locked) == []


def test_the_console_shows_warnings_in_one_line_and_no_tensorflow_start_up_noise(tmp_path):
    # Run as a user runs it: TF_CPP_MIN_LOG_LEVEL unset, so TensorFlow's C++ start-up
    # lines (cuInit, oneDNN, CPU features) would show unless the command hides them; a
    # corpus without blank lines (one document) and a cased vocab with lower-casing on
    # give a logged warning and a Python warning, each one line that says "warning".
    import subprocess
    import sys

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"Sentence number {i} is about topic {i % 7}.\n"
                              for i in range(200)))
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert", "create-pretraining-data", "--input_file",
         str(corpus), "--output_dir", str(tmp_path / "out"), "--vocab_file", VOCAB,
         "--num_workers", "1", "--dupe_factor", "1", "--max_seq_length", "32",
         "--noprogress"], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("keras-bert create-pretraining-data: warning: lower_case=True")
    assert lines[1].startswith("warning: Too few documents for next sentence prediction")
    assert "Next sentence random: 0.0%" in result.stdout
    # A mistake: exactly one line, nothing from TensorFlow's start-up.
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert", "encode", "x", "--model", str(tmp_path / "nope")],
        capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"keras-bert encode: error: No checkpoint at {str(tmp_path / 'nope')!r}: it does not "
        "exist (give a checkpoint directory or a Google checkpoint prefix)."], result.stderr


# --- every subcommand, present and future -----------------------------------------------
# The same mistakes, tried on each entry of keras_bert.cli.COMMANDS from its parser: a
# command added later is checked without a new row.

def _subparser(command):
    import argparse

    from keras_bert.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def _required_args(subparser, skip=()):
    """Plausible values for the required arguments, enough to get past argparse."""
    argv = []
    for action in subparser._actions:
        if not action.required or action.dest in skip:
            continue
        value = action.choices[0] if action.choices else ("1" if action.type else "x")
        argv += [value] if not action.option_strings else [action.option_strings[0], value]
    return argv


def _commands():
    from keras_bert.cli import COMMANDS

    return list(COMMANDS)


@pytest.mark.parametrize("command", _commands())
def test_every_number_flag_of_every_command_is_checked(command, capsys):
    from keras_bert.pipelines import plumbing as flags

    checked = {flags.positive_int, flags.nonnegative_int, flags.positive_float,
               flags.nonnegative_float, flags.probability}
    subparser = _subparser(command)
    one_line_error([command, *_required_args(subparser), "--no_such_flag"], capsys,
                    "unrecognized arguments: --no_such_flag")
    for action in subparser._actions:
        if action.type in checked:
            flag = action.option_strings[0]
            one_line_error([command, flag, "many"], capsys, flag, "'many'")
            if action.type in (flags.positive_int, flags.positive_float):
                one_line_error([command, flag, "0"], capsys, flag, "must be >")
            else:
                one_line_error([command, flag, "-1"], capsys, flag, "must be >= 0")


@pytest.mark.parametrize("command", _commands())
def test_every_output_of_every_command_is_checked_before_it_runs(command, tmp_path, capsys):
    from keras_bert.pipelines.plumbing import OUTPUT_FLAGS

    subparser = _subparser(command)
    outputs = [a for a in subparser._actions if a.dest in OUTPUT_FLAGS]
    if not outputs:
        pytest.skip(f"{command} writes no output")
    (tmp_path / "a_file").write_text("x")
    before = snapshot_files(tmp_path)
    for action in outputs:
        flag = action.option_strings[0]
        argv = [command, *_required_args(subparser, skip={action.dest}), flag]
        one_line_error([*argv, _unwritable("out")], capsys, flag, "cannot be written")
        if OUTPUT_FLAGS[action.dest] == "directory":
            one_line_error([*argv, str(tmp_path / "a_file")], capsys, flag, "is a file")
        else:
            one_line_error([*argv, str(tmp_path)], capsys, flag, "is a directory")
    assert snapshot_files(tmp_path) == before
