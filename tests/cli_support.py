"""What the tests of the `keras-bert` command's user mistakes share (test_bad_input,
test_config_sources): `one_line_error`, the check that a mistake ends as exit 2 with one
line on stderr and no traceback."""

from keras_bert.cli import main


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
