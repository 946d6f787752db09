"""Google `vocab.txt` files: reading them, the special tokens, and the check that no token
is repeated (a token's id is its line, so a repeat would silently shift ids).
"""

from __future__ import annotations

import atexit
import codecs
import os
import shutil
import tempfile
from collections.abc import Sequence

from keras_bert.core import fileio
from keras_bert.core.errors import InputNotFoundError, VocabError

PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN = (
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)
BYTE_ORDER_MARK = "\ufeff"
# The vocab's file name beside a checkpoint, in a run directory and in an export's assets.
VOCAB_FILE = "vocab.txt"


def load_vocab(vocab_file: str | os.PathLike) -> list[str]:
    """Reads a Google `vocab.txt` (one token per line, the line number is the id).

    Like FullTokenizer, each line is stripped of surrounding whitespace. Paths may be
    local or anything `tf.io.gfile` opens (gs://, ...). A leading UTF-8 byte-order mark
    (what Windows editors write) is not part of the first token. Unlike FullTokenizer,
    a token on two lines is an error: FullTokenizer silently gives it the id of its last
    line, which shifts the ids a model was trained with (Google's vocabularies have no
    repeats).

    Raises:
        InputNotFoundError: no file at `vocab_file`, or it is a directory.
        VocabError: the file is not UTF-8, has no token, or repeats a token (the
            message names the token and its lines, 1-based).

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), VOCAB_FILE)
    >>> _ = open(path, "w").write("[PAD]\\n[UNK]\\n  hello  \\n[UNK]\\n")
    >>> load_vocab(path)
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.VocabError: ...vocab.txt:4: the token '[UNK]' is on lines 2 and 4; ...
    """
    path = os.fspath(vocab_file)
    if fileio.isdir(path):
        raise InputNotFoundError(
            f"The vocabulary file {path!r} is a directory; give the vocab.txt in it, e.g. "
            f"{os.path.join(path, VOCAB_FILE)!r}.")
    if not fileio.exists(path):
        raise InputNotFoundError(f"No vocabulary file at {path!r}; pass the path of a "
                                 "Google-style vocab.txt (one WordPiece token per line).")
    with fileio.open_file(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise VocabError(f"not UTF-8 (line {line}: {e.reason}); a vocab.txt must be UTF-8 "
                         "encoded.", path=path, line=line) from e
    # A byte-order mark would make the first token "\ufeff[PAD]" (str.strip keeps it).
    text = text.removeprefix(BYTE_ORDER_MARK)
    lines = text.split("\n")  # like readline(): only "\n" ends a line
    if lines[-1] == "":
        lines.pop()
    tokens = [line.strip() for line in lines]
    if not any(tokens):
        raise VocabError("the vocabulary file is empty; a vocab.txt has one WordPiece "
                         "token per line.", path=path)
    check_unique_tokens(tokens, path)
    return tokens


def without_byte_order_mark(vocab_file: str | os.PathLike) -> str:
    """`vocab_file`, or when it starts with a UTF-8 byte-order mark, a copy without the
    mark (in a temporary directory removed when the process exits). For code that hands
    the file itself to other readers, such as an export's assets/vocab.txt: they may
    take the mark for part of the first token, as FullTokenizer does.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), VOCAB_FILE)
    >>> _ = open(path, "w", encoding="utf-8-sig").write("[PAD]\\n[UNK]\\n")
    >>> clean = without_byte_order_mark(path)
    >>> open(clean, "rb").read()
    b'[PAD]\\n[UNK]\\n'
    >>> without_byte_order_mark(clean) == clean  # a file without the mark is itself
    True
    """
    path = os.fspath(vocab_file)
    with fileio.open_file(path, "rb") as f:
        if f.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:
            return path
        data = f.read()
    directory = tempfile.mkdtemp(prefix="keras_bert-vocab-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    copy = os.path.join(directory, os.path.basename(path))
    with open(copy, "wb") as f:
        f.write(data)
    return copy


def check_unique_tokens(tokens: Sequence[str], path: str | None = None) -> None:
    """Raises `VocabError` if a (non-empty) token occurs twice in a vocabulary.

    A token's id is its position, so a repeated token makes every lookup of it return
    one of its ids only (FullTokenizer: the last), which silently changes ids. The
    message names the first repeated token (a special token first, if any is repeated)
    and where it is: the file's lines (1-based) when `path` is given, else the ids.

    Example:

    >>> check_unique_tokens(["[PAD]", "[UNK]", "a", "[PAD]"])
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.VocabError: the token '[PAD]' is at ids 0 and 3; ...
    """
    positions: dict[str, list[int]] = {}
    for i, token in enumerate(tokens):
        if token:
            positions.setdefault(token, []).append(i)
    repeated = [t for t, where in positions.items() if len(where) > 1]
    if not repeated:
        return
    repeated.sort(key=lambda t: (t not in SPECIAL_TOKENS, positions[t][1]))
    token = repeated[0]
    where = positions[token]
    if path is None:
        places = "at ids " + _join_numbers(where)
    else:
        places = "on lines " + _join_numbers([i + 1 for i in where])
    others = (f" ({len(repeated) - 1} more token{'s are' if len(repeated) > 2 else ' is'} "
              f"repeated, e.g. {repeated[1]!r})") if len(repeated) > 1 else ""
    raise VocabError(
        f"the token {token!r} is {places}{others}; a token's id is its position, so a "
        "repeated token would silently get one id for all its places (FullTokenizer: the "
        "last). Remove the repeats.",
        path=path, line=None if path is None else where[1] + 1)


def _join_numbers(numbers: list[int]) -> str:
    text = [str(n) for n in numbers]
    return " and ".join(text) if len(text) <= 2 else ", ".join(text[:-1]) + " and " + text[-1]
