"""What the tests of the `keras-bert` command's user mistakes share (test_bad_input,
test_config_sources): `one_line_error`, the check that a mistake ends as exit 2 with one
line on stderr and no traceback; and the tiny fine-tuning settings and file writer of
the your-own-data tests (test_own_data_cli, test_own_data_labels)."""

import os

from keras_bert.cli import main

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OWN_DATA_VOCAB = os.path.join(_REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
# A tiny random-weight BERT for the plumbing and file conventions, not accuracy.
OWN_DATA_TINY = ["--preset", "tiny", "--vocab_file", OWN_DATA_VOCAB,
                 "--do_lower_case=false", "--max_seq_length", "24", "--num_train_epochs",
                 "1", "--train_batch_size", "8", "--noprogress"]


def tiny_cased_checkpoint(directory) -> str:
    """A tiny random-weight BERT saved in `directory` with the cased `OWN_DATA_VOCAB`
    (what `encode`, `search` and Beam's tests embed with); returns its path."""
    import json
    import shutil

    from keras_bert import BertConfig, BertEncoder
    from keras_bert.checkpoints import save_encoder

    out = str(directory)
    save_encoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=6606)), out)
    shutil.copy(OWN_DATA_VOCAB, os.path.join(out, "vocab.txt"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": False}, f)  # the vocab is cased
    return out


def write_text(path, text):
    """Writes `text` (UTF-8) to the pathlib `path`, making its folder; returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def one_line_error(argv, capsys, *words):
    """Runs `keras-bert argv` in-process and checks that it exits 2 with one line on
    stderr (no traceback) that holds each of `words`."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (argv, code, err)
    for word in words:
        assert word in lines[0], (word, lines[0])
