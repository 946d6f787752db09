"""Flags typed the way users type them: negative and scientific numbers after a space,
@FILE lines of "flag value", flags of other BERT tools, and a --max_seq_length too short
for any sequence. Each mistake exits 2 with one line on stderr naming the flag; nothing
is trained and nothing is left on disk."""

import argparse
import os
import re

import pytest
from conftest import REPO

from keras_bert.cli import build_parser, main
from keras_bert.core.errors import ArgumentError
from keras_bert.pipelines.plumbing import check_max_seq_length

VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
SST2 = os.path.join(REPO, "tests", "fixtures", "tasks", "glue", "SST-2")


def _finetune(tmp_path, *extra):
    return ["finetune", "--task", "sst2", "--data_dir", SST2, "--preset", "tiny",
            "--vocab_file", VOCAB, "--output_dir", str(tmp_path / "run"), *extra]


def _fails(argv, capsys):
    """(exit code, the one stderr line) of a `keras-bert` command that must fail."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return code, err[0]


def _parse(argv):
    return build_parser([argv[0]]).parse_args(argv)


# --- numbers after a space ----------------------------------------------------------------

@pytest.mark.parametrize("argv,dest,value", [
    (["--learning_rate", "2e-5"], "learning_rate", 2e-5),
    (["--learning_rate", "1E-4"], "learning_rate", 1e-4),
    (["--learning_rate=3e-5"], "learning_rate", 3e-5),
    (["--warmup_proportion", ".1"], "warmup_proportion", 0.1),
    (["--seed", "-3"], "seed", -3),
])
def test_numbers_as_users_type_them_are_values(tmp_path, argv, dest, value):
    assert getattr(_parse(_finetune(tmp_path, *argv)), dest) == pytest.approx(value)


@pytest.mark.parametrize("argv", [["--learning_rate", "-2e-5"], ["--learning_rate=-2e-5"],
                                  ["--learning_rate", "-.5"]])
def test_a_negative_learning_rate_is_refused_by_its_own_check(tmp_path, capsys, argv):
    code, line = _fails(_finetune(tmp_path, *argv), capsys)
    assert code == 2
    assert "argument --learning_rate: must be > 0, got -" in line, line
    assert "expected one argument" not in line
    assert not os.path.exists(tmp_path / "run")


def test_negative_numbers_reach_every_command(tmp_path, capsys):
    code, line = _fails(["pretrain", "--input_file", "x", "--output_dir", str(tmp_path / "p"),
                         "--learning_rate", "-1e-4"], capsys)
    assert code == 2 and "argument --learning_rate: must be > 0, got -1e-4" in line, line
    code, line = _fails(["pretrain", "--input_file", "x", "--output_dir", str(tmp_path / "p"),
                         "--num_train_steps", "-1e3"], capsys)
    assert code == 2 and "argument --num_train_steps: expected an integer" in line, line


# --- @FILE lines ---------------------------------------------------------------------------

def test_arguments_file_takes_flag_and_value_on_one_line(tmp_path):
    args_file = tmp_path / "args.txt"
    args_file.write_text(
        "# fine-tuning SST-2\n"
        "\n"
        "finetune\n"
        "   # an indented comment\n"
        "--task sst2\n"
        f"--data_dir={SST2}\n"
        "--output_dir 'my runs/a'\n"
        "--learning_rate   -2e-5\n"
        '--precision="float32"\n'
        "--noprogress\n"
        "--seed\n"
        "7\n"
        "--vocab_file \"with space/vocab.txt\"  \n")
    with pytest.raises(SystemExit):  # -2e-5 reaches --learning_rate's own check
        build_parser(None).parse_args([f"@{args_file}"])
    args_file.write_text(args_file.read_text().replace("-2e-5", "2e-5"))
    args = build_parser(None).parse_args([f"@{args_file}"])
    assert (args.task, args.data_dir, args.output_dir) == ("sst2", SST2, "my runs/a")
    assert (args.learning_rate, args.precision, args.progress, args.seed) == (
        2e-5, "float32", False, 7)
    assert args.vocab_file == "with space/vocab.txt"


def test_arguments_file_lines_that_are_not_flags_stay_whole(tmp_path):
    args_file = tmp_path / "sentences.txt"
    args_file.write_text("A man is playing a guitar.\n- a bullet point\n-5 degrees\n")
    args = _parse(["encode", f"@{args_file}", "--noprogress"])
    assert args.sentences == ["A man is playing a guitar.", "- a bullet point", "-5 degrees"]


def test_an_arguments_file_in_flag_value_lines_runs(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(("The quick brown fox jumps over the lazy dog.\n"
                       "A lazy dog sleeps in the warm sun all day long.\n") * 30)
    args_file = tmp_path / "vocab args.txt"
    args_file.write_text(f"# a small vocab\n--input_file '{corpus}'\n"
                         f"--output_file {tmp_path / 'vocab.txt'}\n\n--vocab_size 120\n"
                         "--num_unused=3\n--min_count 1\n")
    assert main(["vocab", f"@{args_file}", "--noprogress"]) == 0
    assert "Wrote 120 tokens" in capsys.readouterr().out


def test_an_unclosed_quote_in_an_arguments_file_names_the_line(tmp_path, capsys):
    args_file = tmp_path / "args.txt"
    args_file.write_text("--task sst2\n\n--output_dir 'my runs/a\n")
    code, line = _fails(["finetune", f"@{args_file}"], capsys)
    assert code == 2 and f"{args_file}:3" in line and "quotation" in line, line


# --- flags meant -----------------------------------------------------------------------------

@pytest.mark.parametrize("flag,meant", [
    ("--batch_size", "--train_batch_size"), ("--batch_size=32", "--train_batch_size"),
    ("--train-batch-size", "--train_batch_size"), ("--lr", "--learning_rate"),
    ("--learnig_rate", "--learning_rate"), ("--epochs", "--num_train_epochs"),
    ("--init_checkpoint", "--checkpoint"),
])
def test_an_unknown_flag_names_the_one_meant(tmp_path, capsys, flag, meant):
    value = [] if "=" in flag else ["32"]
    code, line = _fails(_finetune(tmp_path, flag, *value), capsys)
    name = flag.split("=")[0]
    assert code == 2 and line.startswith("keras-bert finetune: error:"), line
    assert f"use {meant} instead of {name}" in line, line


def test_the_flag_meant_is_named_before_the_required_ones(capsys):
    code, line = _fails(["finetune", "--batch_size", "32"], capsys)
    assert code == 2 and "--output_dir" in line, line
    assert "use --train_batch_size instead of --batch_size" in line, line


def test_the_flag_meant_is_the_commands_own(tmp_path, capsys):
    code, line = _fails(["evaluate", "--model", "m", "--task", "sst2", "--data_dir", SST2,
                         "--batch_size", "8"], capsys)
    assert code == 2 and "use --eval_batch_size instead of --batch_size" in line, line
    code, line = _fails(["pretrain", "--input_file", "x", "--output_dir", str(tmp_path),
                         "--checkpoint", "c"], capsys)
    assert code == 2 and "use --init_checkpoint instead of --checkpoint" in line, line
    code, line = _fails(_finetune(tmp_path, "--zzz_unlike_anything", "3"), capsys)
    assert code == 2 and "unrecognized arguments: --zzz_unlike_anything 3" in line, line
    assert "instead of" not in line


# --- --max_seq_length ------------------------------------------------------------------------

SHORT = re.compile(r"^keras-bert [a-z-]+: error: --max_seq_length must be at least (\d) "
                   r"\((\[CLS\][^)]*)\), got (\d)$")


def test_encode_with_a_too_short_max_seq_length_is_a_usage_error(capsys):
    code, line = _fails(["encode", "A man is playing a guitar.", "--max_seq_length", "2"],
                        capsys)
    assert code == 2
    assert SHORT.match(line) and SHORT.match(line).group(1, 3) == ("3", "2"), line


def test_every_command_states_the_max_seq_length_minimum_alike(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("One sentence here.\nAnother one there.\n\nA second document.\n")
    commands = {
        "encode": (["encode", "some words", "--max_seq_length", "1"], "3"),
        "finetune": (_finetune(tmp_path, "--max_seq_length", "2"), "3"),
        "export": (["export", "--checkpoint", str(tmp_path / "ckpt"), "--output_dir",
                    str(tmp_path / "saved"), "--max_seq_length", "2"], "3"),
        "attention": (["attention", "some words", "--model", str(tmp_path / "ckpt"),
                       "--output_dir", str(tmp_path / "att"), "--max_seq_length", "2"], "3"),
        "pretrain": (["pretrain", "--input_file", "x", "--output_dir", str(tmp_path / "p"),
                      "--max_seq_length", "2"], "3"),
        "create-pretraining-data": (
            ["create-pretraining-data", "--input_file", str(corpus), "--output_dir",
             str(tmp_path / "data"), "--vocab_file", VOCAB, "--max_seq_length", "4"], "5"),
        "create-pretraining-data (no NSP)": (
            ["create-pretraining-data", "--input_file", str(corpus), "--output_dir",
             str(tmp_path / "data"), "--vocab_file", VOCAB, "--max_seq_length", "2",
             "--nonext_sentence_prediction"], "3"),
    }
    wordings = set()
    for name, (argv, minimum) in commands.items():
        code, line = _fails(argv, capsys)
        match = SHORT.match(line)
        assert code == 2 and match, (name, line)
        assert match.group(1) == minimum, (name, line)
        wordings.add(match.group(2) if minimum == "3" else None)
    assert len(wordings - {None}) == 1, wordings
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt"]  # nothing written


def test_the_minimum_itself_is_accepted():
    check_max_seq_length(argparse.Namespace(max_seq_length=3))
    check_max_seq_length(argparse.Namespace(max_seq_length=5, next_sentence_prediction=True))
    check_max_seq_length(argparse.Namespace())  # a command without the flag
    with pytest.raises(ArgumentError, match="at least 5"):
        check_max_seq_length(argparse.Namespace(max_seq_length=4,
                                                next_sentence_prediction=True))
