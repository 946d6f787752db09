import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from conftest import MINILM_REFERENCE, REPO, minilm_path

from keras_bert.cli import COMMANDS, build_parser, main

# The sentences scripts/make_hf_reference.py gave to transformers.
SINGLES = [
    "The quick brown fox jumps over the lazy dog.",
    "BERT is conceptually simple and empirically powerful.",
    "it 's a charming and often affecting journey .",
    "Unbelievable!",
    "Resizing filesystems requires care: back up your data first.",
    "Ångström-scale structures were imaged at 4 K (−269 °C).",
]


def test_help_lists_every_shipped_command(capsys):
    assert main([]) == 2
    text = capsys.readouterr().out
    parser_choices = build_parser()._subparsers._group_actions[0].choices
    assert "encode" in parser_choices
    for name in parser_choices:
        assert name in COMMANDS and name in text


def test_a_command_that_cannot_load_is_listed_and_explains(monkeypatch, capsys):
    # An ImportError in one pipeline must not silently drop its subcommand.
    monkeypatch.setitem(COMMANDS, "broken", ("keras_bert.pipelines.no_such_module", "x"))
    assert main([]) == 2
    assert "broken" in capsys.readouterr().out
    assert main(["broken"]) == 1
    err = capsys.readouterr().err
    assert "cannot load" in err and "no_such_module" in err and "Traceback" not in err


def test_python_dash_m_entry_point():
    proc = subprocess.run([sys.executable, "-m", "keras_bert", "--help"], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0 and "encode" in proc.stdout


def test_encode_matches_transformers_end_to_end():
    # Tokenization + packing + encoder + mean pooling against Hugging Face's tokenizer ids
    # and BertModel outputs for the same sentences.
    from keras_bert import load_encoder
    from keras_bert.pipelines.embedding.encode import embed
    from keras_bert.text.packing import BertPreprocessor
    from keras_bert.text.tokenizer import BertTokenizer

    path = minilm_path()
    ref = np.load(MINILM_REFERENCE)
    pre = BertPreprocessor(BertTokenizer(os.path.join(path, "vocab.txt")), seq_length=40)
    ids = pre(tf.constant(SINGLES))
    np.testing.assert_array_equal(ids["input_word_ids"], ref["single_input_word_ids"])
    np.testing.assert_array_equal(ids["input_mask"], ref["single_input_mask"])
    got = embed(load_encoder(path), pre, SINGLES, pooling="mean", batch_size=4, progress=False)
    mask = ref["single_input_mask"][..., None].astype(np.float32)
    want = (ref["single_sequence_output"] * mask).sum(1) / mask.sum(1)
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_encode_command_writes_npy(tmp_path, capsys):
    minilm_path()
    out = tmp_path / "emb.npy"
    assert main(["encode", "A man is playing a guitar.", "Someone plays an instrument.",
                 "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "cosine similarity" in printed
    vectors = np.load(out)
    assert vectors.shape == (2, 384)
    assert [p.name for p in tmp_path.iterdir()] == ["emb.npy"]


def test_encode_follows_the_folders_modules_as_sentence_transformers(tmp_path, capsys):
    # keras-bert encode --input_file F --model M --output E.npy: the folder's mean pooling
    # and Normalize at its max_seq_length (256), equal to sentence-transformers' encode.
    refs = np.load(os.path.join(REPO, "tests", "fixtures", "embeddings", "minilm_refs.npz"))
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("\n".join(str(s) for s in refs["sentences"]) + "\n", encoding="utf-8")
    out = tmp_path / "embeddings.npy"
    assert main(["encode", "--input_file", str(sentences), "--model", minilm_path(),
                 "--output", str(out), "--noprogress"]) == 0
    assert "40 x 384 (mean, normalized pooling)" in capsys.readouterr().out
    assert np.abs(np.load(out) - refs["mean"]).max() < 1e-5
    # --pooling overrides the folder: the plain mean, unnormalized.
    assert main(["encode", "--input_file", str(sentences), "--model", minilm_path(),
                 "--output", str(out), "--pooling", "mean", "--noprogress"]) == 0
    plain = np.load(out)
    assert np.abs(np.linalg.norm(plain, axis=1) - 1).max() > 0.1
    unit = plain / np.linalg.norm(plain, axis=1, keepdims=True)
    assert np.abs(unit - refs["mean"]).max() < 1e-5


def test_encode_errors(tmp_path, capsys):
    # A user mistake is exit code 2 with one line on stderr, like every other command.
    assert main(["encode", "--model", str(tmp_path)]) == 2
    assert "no sentences" in capsys.readouterr().err
    assert main(["encode", "--input_file", str(tmp_path / "missing.txt")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and len(err.strip().splitlines()) == 1


def test_encode_says_when_it_truncates(capsys):
    # Issue 13: over-long inputs were cut to --max_seq_length without a word.
    minilm_path()
    long = " ".join(["hello"] * 40)  # 40 WordPieces, 42 with [CLS] and [SEP]
    assert main(["encode", "short one", long, "--max_seq_length", "16", "--noprogress"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["note: 1 of 2 sentences were longer than --max_seq_length 16 tokens and "
                   "were truncated (the longest has 42)"]
    assert main(["encode", "short one", long, "--max_seq_length", "42", "--noprogress"]) == 0
    assert capsys.readouterr().err == ""


# --- one coherent command line: help, @args files, --quiet, --json, exit codes ----------

SUBCOMMANDS = ("vocab", "create-pretraining-data", "pretrain", "finetune", "evaluate",
               "predict", "encode", "export", "attention", "plot", "demo")


def test_every_subcommand_has_help_with_an_example_and_the_shared_flags(capsys):
    assert set(SUBCOMMANDS) <= set(COMMANDS)
    for name in COMMANDS:
        try:
            main([name, "--help"])
        except SystemExit as e:
            assert e.code == 0, name
        text = capsys.readouterr().out
        assert "Example" in text, name
        for flag in ("--quiet", "--json", "--debug"):
            assert flag in text, (name, flag)


def test_bad_usage_is_exit_2_with_one_line(capsys):
    for argv in (["no-such-command"], ["pretrain", "--num_train_steps", "many"],
                 ["demo", "--no_such_flag"], ["vocab", "--quiet", "--json",
                                              "--input_file", "x", "--output_file", "y"]):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2, argv
        assert len(err) == 1 and "error:" in err[0], (argv, err)


def test_a_missing_input_file_is_named(tmp_path, capsys):
    missing = str(tmp_path / "no_corpus.txt")
    for argv in (["vocab", "--input_file", missing, "--output_file", str(tmp_path / "v.txt")],
                 ["create-pretraining-data", "--input_file", missing, "--output_dir",
                  str(tmp_path / "data"), "--vocab_file", str(tmp_path / "vocab.txt")],
                 ["plot", str(tmp_path / "no_run")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and (missing in err[0] or "no_run" in err[0] or
                                  "vocab.txt" in err[0]), (argv, err)


CORPUS = ("The quick brown fox jumps over the lazy dog.\n"
          "A lazy dog sleeps in the warm sun all day long.\n") * 30


def _vocab_args(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    return ["--input_file", str(corpus), "--output_file", str(tmp_path / "vocab.txt"),
            "--vocab_size", "120", "--num_unused", "3", "--min_count", "1"]


def test_arguments_from_a_file(tmp_path, capsys):
    args_file = tmp_path / "args.txt"
    args_file.write_text("\n".join(_vocab_args(tmp_path)) + "\n")
    assert main(["vocab", f"@{args_file}", "--noprogress"]) == 0
    assert "Wrote 120 tokens" in capsys.readouterr().out
    # An unreadable arguments file is a usage error naming it.
    try:
        code = main(["vocab", f"@{tmp_path / 'missing_args.txt'}"])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and "missing_args.txt" in err and len(err.strip().splitlines()) == 1


def test_quiet_prints_results_only(tmp_path, capsys):
    assert main(["vocab", *_vocab_args(tmp_path), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "Wrote 120 tokens" in captured.out
    assert captured.err == ""  # no progress bar, no progress messages


def test_json_stdout_holds_only_json_lines(tmp_path):
    # In a subprocess, as a script consuming the output would run it.
    proc = subprocess.run(
        [sys.executable, "-m", "keras_bert", "vocab", *_vocab_args(tmp_path), "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[-1] == {"event": "result", "command": "vocab", "exit_code": 0}
    assert "Wrote 120 tokens" in proc.stderr  # the human-readable text
    proc = subprocess.run(
        [sys.executable, "-m", "keras_bert", "plot", str(tmp_path / "no_run"), "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 2
    [event] = [json.loads(line) for line in proc.stdout.splitlines()]
    assert event["event"] == "error" and event["exit_code"] == 2
    assert "no_run" in event["message"]


def test_python_dash_m_runs_subcommands_like_keras_bert():
    proc = subprocess.run([sys.executable, "-m", "keras_bert", "demo", "--help"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0 and "keras-bert demo" in proc.stdout
    assert "Example" in proc.stdout and proc.stderr == ""


def test_finetune_json_progress_per_epoch_and_tensorboard_logs(tmp_path):
    out = tmp_path / "stsb"
    vocab = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
    proc = subprocess.run(
        [sys.executable, "-m", "keras_bert", "finetune", "--task", "stsb", "--data_dir",
         os.path.join(REPO, "tests", "fixtures", "tasks", "glue", "STS-B"), "--output_dir",
         str(out), "--preset", "tiny", "--vocab_file", vocab, "--do_lower_case=false",
         "--max_seq_length", "32", "--num_train_epochs", "2", "--train_batch_size", "8",
         "--json"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    epochs = [e for e in events if e["event"] == "progress" and "epoch" in e]
    assert [e["epoch"] for e in epochs] == [1, 2]
    assert all(e["command"] == "finetune" and "val_spearmanr" in e for e in epochs)
    assert events[-1]["event"] == "result"
    for split in ("train", "validation"):
        assert os.listdir(out / "logs" / split), split


def test_finetune_quiet_prints_the_result_only(tmp_path):
    # --quiet: no progress bars and no per-epoch lines, only the dev result.
    vocab = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
    proc = subprocess.run(
        [sys.executable, "-m", "keras_bert", "finetune", "--task", "stsb", "--data_dir",
         os.path.join(REPO, "tests", "fixtures", "tasks", "glue", "STS-B"), "--output_dir",
         str(tmp_path / "stsb"), "--preset", "tiny", "--vocab_file", vocab,
         "--do_lower_case=false", "--max_seq_length", "32", "--num_train_epochs", "2",
         "--train_batch_size", "8", "--quiet"], capture_output=True, text=True, cwd=REPO,
        timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[0].startswith("stsb dev: "), proc.stdout
    assert "epoch" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


HELP_PROBE = r'''
import contextlib, io, json, sys
from keras_bert.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main({argv!r})
    except SystemExit as e:
        code = e.code
print(json.dumps({{"code": code, "tensorflow": "tensorflow" in sys.modules,
                  "keras": "keras" in sys.modules, "help": out.getvalue()}}))
'''


@pytest.mark.parametrize("argv", [["--help"], []] + [[name, "--help"] for name in COMMANDS])
def test_help_loads_no_tensorflow(argv):
    # `keras-bert --help` and `keras-bert COMMAND --help` answer at once: only the named
    # command's module loads, and no command module imports TensorFlow or Keras at
    # import time (they do when they run).
    proc = subprocess.run([sys.executable, "-c", HELP_PROBE.format(argv=argv)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] in (0, 2) and "usage: keras-bert" in result["help"]
    assert not result["tensorflow"] and not result["keras"], argv
