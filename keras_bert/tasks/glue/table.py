"""Your own labelled texts as a table: what `--task classification` reads.

File layout (`data_dir` holds `train`, `dev` and, optionally, `test`, each `.tsv` or
`.csv`):

- the first line is a header naming the columns; columns are found by name, in any
  order, and other columns are ignored;
- the text: a `text` column (single texts), or `text_a` and `text_b` (text pairs);
  GLUE's names `sentence`, or `sentence1` and `sentence2`, are read alike;
- the label: a `label` column holding the class name (any non-empty string; the label
  set is learnt from the training file and saved with the run; a dev label, or a
  prediction input's, that the training file did not have is refused, naming its file
  and line); prediction input may leave it out; labels that mix numbers with names
  (`0`, `neg`) are warned about: each is a class of its own;
- an optional `id` (or `index`) column names each row in the predictions file, else
  the row's number (0 for the first row after the header);
- `.tsv`: fields separated by tabs, no quoting (a quote character is ordinary text);
  `.csv`: comma-separated with CSV quoting (a field may hold commas, quotes and line
  breaks when quoted);
- UTF-8 (a leading byte-order mark is allowed); blank lines hold no row.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator

from keras_bert.core import fileio
from keras_bert.core.errors import DataError, InputNotFoundError
from keras_bert.tasks.common import read_lines, read_text

SUFFIXES = (".tsv", ".csv")
# The accepted names of the text column(s): single texts, then pairs.
SINGLE_COLUMNS = (("text",), ("sentence",))
PAIR_COLUMNS = (("text_a", "text_b"), ("sentence1", "sentence2"))
LABEL_COLUMN = "label"
ID_COLUMNS = ("id", "index")


def table_path(data_dir: str, split: str) -> str:
    """`data_dir/<split>.tsv` or `data_dir/<split>.csv`, whichever exists (both is an
    error: which one is meant?); `InputNotFoundError` when neither does.

    Example:

    >>> table_path("/nonexistent", "train")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.InputNotFoundError: the train split is missing: no train.tsv or train.csv in /nonexistent (a header with a text (or text_a and text_b) column and a label column).
    """
    found = [os.path.join(data_dir, split + s) for s in SUFFIXES
             if fileio.exists(os.path.join(data_dir, split + s))]
    if len(found) > 1:
        raise DataError(f"holds both {split}.tsv and {split}.csv; keep one.", path=data_dir)
    if not found:
        raise InputNotFoundError(
            f"the {split} split is missing: no {split}.tsv or {split}.csv in {data_dir} (a "
            f"header with a text (or text_a and text_b) column and a {LABEL_COLUMN} "
            "column).")
    return found[0]


def table_rows(path: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each line of a `.tsv` or `.csv` file (the header
    first); a blank line yields an empty list."""
    if path.lower().endswith(".csv"):
        reader = csv.reader(io.StringIO(read_text(path), newline=""))
        try:
            line = 1
            for fields in reader:
                yield line, fields
                line = reader.line_num + 1
        except csv.Error as e:
            raise DataError(f"is not valid CSV ({e}).", path=path, line=reader.line_num
                            ) from None
    else:
        for number, text in read_lines(path):
            yield number, text.split("\t") if text else []


def text_columns(header: list[str], path: str, line: int) -> tuple[str, ...]:
    """The text column names of a header: one (single texts) or two (pairs)."""
    for names in (*PAIR_COLUMNS, *SINGLE_COLUMNS):
        if set(names) <= set(header):
            return names
    raise DataError(f"has no text column: expected a header naming 'text' (single texts) "
                    f"or 'text_a' and 'text_b' (pairs), and '{LABEL_COLUMN}'; got "
                    f"{header[:12]}.", path=path, line=line)


def write_table(path: str, rows, pair: bool = False) -> None:
    """Writes labelled rows, `(text, label)` (or `(text_a, text_b, label)` with `pair`),
    as a `.tsv` file in this layout, atomically.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.tsv")
    >>> write_table(path, [("Returns the array.", "numpy")])
    >>> open(path).read()
    'text\\tlabel\\nReturns the array.\\tnumpy\\n'
    """
    header = ("text_a", "text_b") if pair else ("text",)
    with fileio.atomic_write(path) as f:
        f.write("\t".join((*header, LABEL_COLUMN)) + "\n")
        for row in rows:
            if len(row) != len(header) + 1:
                raise ValueError(f"expected {len(header) + 1} fields a row, got {row!r}.")
            if any("\t" in field or "\n" in field or "\r" in field for field in row):
                raise ValueError(f"a field holds a tab or a line break: {row!r}.")
            f.write("\t".join(row) + "\n")
