"""Labels that do not belong (issue 46), through the commands: `keras-bert finetune`
refuses a dev label or tag the training file never had, and a regression score that is
not a finite number; `evaluate` and `predict` on a saved run refuse a labelled file
holding a label the run does not know; each is exit 2 with one line naming the label,
the file and the line. Mixed numeric and named labels get a warning naming both kinds.
The Python side of the same judgment is tests/tasks/test_label_checks.py. A tiny
random-weight BERT (cli_support's settings, as test_own_data_cli's); the refusals come before training."""

import json

import pytest
from cli_support import OWN_DATA_TINY as TINY
from cli_support import one_line_error, write_text

from keras_bert.cli import main

CONLL = "Dogs NOUN\nbark VERB\n\nThe DET\ncat NOUN\nsleeps VERB\n"
STSB_HEADER = "index\tsentence1\tsentence2\tscore\n"


def _finetune(task, data, run):
    return ["finetune", "--task", task, "--data_dir", str(data), "--output_dir", str(run),
            *TINY]


@pytest.mark.parametrize("task,files,words", [
    ("tagging", {"train.txt": CONLL, "dev.txt": "The DET\ndog NOUN\n\nRain NOUN\nfalls ADV\n"},
     ["dev.txt:5", "tag 'ADV'", "['DET', 'NOUN', 'VERB']", "train never had"]),
    ("classification", {"train.tsv": "text\tlabel\na\tneg\nb\tpos\n",
                        "dev.csv": "text,label\nc,pos\nd,neutral\n"},
     ["dev.csv:3", "label 'neutral'", "learnt from the training data ['neg', 'pos']"]),
    ("stsb", {"train.tsv": STSB_HEADER + "0\ta\tb\t1.5\n1\tc\td\tnan\n",
              "dev.tsv": STSB_HEADER + "0\ta\tb\t1\n"}, ["train.tsv:3", "score 'nan'"]),
    ("stsb", {"train.tsv": STSB_HEADER + "0\ta\tb\t1.5\n",
              "dev.tsv": STSB_HEADER + "0\ta\tb\tinf\n"}, ["dev.tsv:2", "score 'inf'"]),
    ("stsb", {"train.tsv": STSB_HEADER + "0\ta\tb\tgood\n",
              "dev.tsv": STSB_HEADER + "0\ta\tb\t1\n"},
     ["train.tsv:2", "score 'good' is not a number"]),
])
def test_finetune_refuses_labels_that_do_not_belong(tmp_path, capsys, task, files, words):
    data = tmp_path / "data"
    for name, text in files.items():
        write_text(data / name, text)
    one_line_error(_finetune(task, data, tmp_path / "run"), capsys, *words)
    assert not (tmp_path / "run").exists()


def test_classification_run_warns_of_mixed_labels_and_refuses_unknown_ones(tmp_path, capsys):
    data = tmp_path / "data"
    write_text(data / "train.tsv", "text\tlabel\na warm film\t0\ndull\t1\nthe best\tneg\n"
                               "a mess\tpos\nfine\t0\n")
    write_text(data / "dev.tsv", "text\tlabel\na fine film\tpos\nawful\t0\n")
    run = tmp_path / "run"
    assert main(_finetune("classification", data, run)) == 0
    err = capsys.readouterr().err
    assert "train.tsv mixes numeric labels (0, 1) with names (neg, pos): they become 4 " \
           "classes" in err, err
    assert json.loads((run / "finetune_config.json").read_text())["task_config"][
        "labels"] == ["0", "1", "neg", "pos"]

    # evaluate: the dev file's labels must be the run's.
    other = tmp_path / "other"
    write_text(other / "dev.tsv", "text\tlabel\nfine\tpos\ngood\tpositive\n")
    one_line_error(["evaluate", "--model", str(run), "--task", "classification",
                    "--data_dir", str(other)], capsys, "dev.tsv:3", "label 'positive'",
                   "['0', '1', 'neg', 'pos']")
    # predict: the label column may be left out (or empty); labels given must belong.
    test = write_text(tmp_path / "test.tsv", "text\tlabel\nfine\tneg\ngood\t\nok\t2\n")
    output = tmp_path / "predictions.tsv"
    one_line_error(["predict", "--model", str(run), "--task", "classification", "--input",
                    str(test), "--output", str(output)], capsys, "test.tsv:4", "label '2'")
    assert not output.exists()
    write_text(tmp_path / "test.tsv", "text\tlabel\nfine\tneg\ngood\t\n")
    assert main(["predict", "--model", str(run), "--task", "classification", "--input",
                 str(test), "--output", str(output)]) == 0


def test_tagging_run_refuses_tags_it_does_not_know(tmp_path, capsys):
    data = tmp_path / "data"
    write_text(data / "train.txt", CONLL)
    write_text(data / "dev.txt", "The DET\ndog NOUN\nruns VERB\n")
    run = tmp_path / "run"
    assert main(_finetune("tagging", data, run)) == 0
    capsys.readouterr()
    other = tmp_path / "other"
    write_text(other / "dev.txt", "The DET\ndog NOUN\n\nA DET\nbird NOUN\nsings VERB\nloud ADJ\n")
    one_line_error(["evaluate", "--model", str(run), "--task", "tagging", "--data_dir",
                    str(other)], capsys, "dev.txt:7", "tag 'ADJ'", "['DET', 'NOUN', 'VERB']")
    output = tmp_path / "tags.txt"
    one_line_error(["predict", "--model", str(run), "--task", "tagging", "--input",
                    str(other / "dev.txt"), "--output", str(output)], capsys, "dev.txt:7",
                   "tag 'ADJ'")
    assert not output.exists()
    words = write_text(tmp_path / "words.txt", "Cats\nsleep\n")  # no tags: nothing to check
    assert main(["predict", "--model", str(run), "--task", "tagging", "--input", str(words),
                 "--output", str(output)]) == 0
