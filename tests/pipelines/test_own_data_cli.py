"""Your own labelled data through the command line: `keras-bert finetune --task
classification` (TSV and CSV) and `--task tagging` (CoNLL-style), then `evaluate`,
`predict` and `export` of the saved run, on tiny files written by the test. A tiny
random-weight BERT: the plumbing and file conventions, not accuracy."""

import json

import pytest
from cli_support import OWN_DATA_TINY, write_text

from keras_bert.cli import main

TINY = OWN_DATA_TINY
REVIEWS = [("a warm and funny film", "good"), ("dull and far too long", "bad"),
           ("the best film of the year", "good"), ("a tedious mess", "bad"),
           ("I would watch it again", "good"), ("nothing happens at all", "meh")]


def _export(run, out, capsys):
    capsys.readouterr()
    assert main(["export", "--checkpoint", str(run), "--output_dir", str(out), "--name",
                 "mine", "--nowarmup"]) == 0
    printed = capsys.readouterr().out
    card_text, _, last = printed.rpartition("}\n")
    return last.split(" to ", 1)[1].strip(), json.loads(card_text + "}")


@pytest.mark.parametrize("suffix", [".tsv", ".csv"])
def test_classification_from_your_own_files(tmp_path, capsys, suffix):
    import tensorflow as tf

    data = tmp_path / "data"
    if suffix == ".tsv":
        rows = "".join(f"{text}\t{label}\n" for text, label in REVIEWS)
        write_text(data / "train.tsv", "text\tlabel\n" + rows)
        write_text(data / "dev.tsv", "label\ttext\n" + "good\ta fine film\nmeh\tit is a film\n")
    else:  # pairs, CSV quoting (commas and quotes inside fields), an id column
        rows = "".join(f'{i},"{text}, they said","a ""quoted"" reply",{label}\n'
                       for i, (text, label) in enumerate(REVIEWS))
        write_text(data / "train.csv", "id,text_a,text_b,label\n" + rows)
        write_text(data / "dev.csv", "id,text_a,text_b,label\nd1,a fine film,yes,good\n"
               "d2,\"it is, a film\",no,meh\n")
    run = tmp_path / "run"
    assert main(["finetune", "--task", "classification", "--data_dir", str(data),
                 "--output_dir", str(run), *TINY]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    assert 0 <= metrics["accuracy"] <= 1
    record = json.loads((run / "finetune_config.json").read_text())
    assert record["task_config"]["labels"] == ["bad", "good", "meh"]  # learnt, sorted
    assert record["task_config"]["pair"] is (suffix == ".csv")
    written = (run / "classification.tsv").read_text().splitlines()
    assert written[0] == "index\tprediction" and len(written) == 3
    if suffix == ".csv":
        assert [row.split("\t")[0] for row in written[1:]] == ["d1", "d2"]

    if suffix == ".tsv":  # the CSV run skips what the TSV run checks (CI time)
        assert main(["evaluate", "--model", str(run), "--task", "classification",
                     "--data_dir", str(data)]) == 0
        assert json.loads((run / "metrics.json").read_text())["accuracy"] == pytest.approx(
            metrics["accuracy"])
    # predict: the label column may be left out; the predictions are label names.
    test = (write_text(data / "test.tsv", "text\nmy favourite film\nawful\n") if suffix == ".tsv"
            else write_text(data / "test.csv", "text_a,text_b\nmy favourite,film\nawful,yes\n"))
    output = tmp_path / "predictions.tsv"
    assert main(["predict", "--model", str(run), "--task", "classification", "--input",
                 str(test), "--output", str(output)]) == 0
    predicted = [row.split("\t") for row in output.read_text().splitlines()[1:]]
    assert [r[0] for r in predicted] == ["0", "1"]
    assert {r[1] for r in predicted} <= {"bad", "good", "meh"}

    if suffix == ".tsv":  # a pair classifier's export: tests/tasks/test_task_contract.py
        version, _ = _export(run, tmp_path / "saved", capsys)
        serve = tf.saved_model.load(version).signatures["serve_text"]
        label = serve(text=tf.constant(["my favourite film"]))["label"].numpy()[0].decode()
        assert label in {"bad", "good", "meh"}


def test_tagging_from_your_own_files(tmp_path, capsys):
    import tensorflow as tf

    sentences = [[("Dogs", "NOUN"), ("bark", "VERB"), (".", "PUNCT")],
                 [("The", "DET"), ("cat", "NOUN"), ("sleeps", "VERB")],
                 [("Birds", "NOUN"), ("sing", "VERB"), ("sweetly", "ADV")]]
    conll = "".join("".join(f"{w}\t{t}\n" for w, t in s) + "\n" for s in sentences)
    data = tmp_path / "data"
    write_text(data / "train.txt", conll)
    write_text(data / "dev.txt", "The DET\ndog NOUN\nruns VERB\n\nRain NOUN\n")
    run = tmp_path / "run"
    assert main(["finetune", "--task", "tagging", "--data_dir", str(data), "--output_dir",
                 str(run), *TINY]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    assert set(metrics) >= {"accuracy"} and "f1" not in metrics  # not an entity scheme
    record = json.loads((run / "finetune_config.json").read_text())
    assert record["task_config"]["labels"] == ["ADV", "DET", "NOUN", "PUNCT", "VERB"]
    lines = [line.split() for line in (run / "predictions.txt").read_text().splitlines()
             if line]
    assert len(lines) == 4 and all(len(line) == 3 for line in lines)

    assert main(["evaluate", "--model", str(run), "--task", "tagging", "--data_dir",
                 str(data)]) == 0
    words = write_text(tmp_path / "words.txt", "Cats\nsleep\n\nDogs\n")
    output = tmp_path / "tags.txt"
    assert main(["predict", "--model", str(run), "--task", "tagging", "--input", str(words),
                 "--output", str(output)]) == 0
    tagged = [line.split() for line in output.read_text().splitlines() if line]
    assert [w for w, _ in tagged] == ["Cats", "sleep", "Dogs"]
    assert {t for _, t in tagged} <= set(record["task_config"]["labels"])

    version, _ = _export(run, tmp_path / "saved", capsys)
    out = tf.saved_model.load(version).signatures["serve_text"](text=tf.constant(["Cats sleep"]))
    assert [w.decode() for w in out["words"].numpy()[0]] == ["Cats", "sleep"]


@pytest.mark.parametrize("files,words", [
    ({}, ["train.tsv or train.csv"]),
    ({"train.tsv": "sentence_x\tlabel\na\tb\n"}, ["no text column", "text_a"]),
    ({"train.tsv": "text\tlabel\na\tx\nb\tx\n", "dev.tsv": "text\tlabel\nc\tx\n"},
     ["one label only"]),
    ({"train.tsv": "text\tlabel\na\tx\nb\ty\n", "dev.tsv": "text\tlabel\nc\tz\n"},
     ["dev.tsv:2", "'z'", "learnt from the training data"]),
    ({"train.tsv": "text\tlabel\na\tx\nb\n"}, ["train.tsv:3", "1 columns, expected 2"]),
    ({"train.tsv": "text\tlabel\na\tx\n", "train.csv": "text,label\na,x\n"},
     ["both train.tsv and train.csv"]),
])
def test_classification_file_mistakes_are_one_line_errors(tmp_path, capsys, files, words):
    from cli_support import one_line_error

    data = tmp_path / "data"
    data.mkdir()
    for name, text in files.items():
        write_text(data / name, text)
    one_line_error(["finetune", "--task", "classification", "--data_dir", str(data),
                    "--output_dir", str(tmp_path / "run"), *TINY], capsys, *words)
    assert not (tmp_path / "run").exists()


def test_tagging_file_mistakes_are_one_line_errors(tmp_path, capsys):
    from cli_support import one_line_error

    data = tmp_path / "data"
    write_text(data / "train.txt", "Dogs NOUN\nbark\n")
    write_text(data / "dev.txt", "Dogs NOUN\n")
    one_line_error(["finetune", "--task", "tagging", "--data_dir", str(data), "--output_dir",
                    str(tmp_path / "run"), *TINY], capsys, "train.txt:2",
                   "1 columns, expected 2")
