"""What the task families share: reading the benchmark's text files (line by line or
whole), encoding one or two text segments into the encoder's inputs, and
`model.predict` outputs as one numpy array."""

from __future__ import annotations

import codecs
import logging
from collections.abc import Iterator, Sequence

import numpy as np
import tensorflow as tf

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError, DataError, InputNotFoundError
from keras_bert.tasks.base import INPUT_NAMES
from keras_bert.text.packing import pack_inputs

logger = logging.getLogger("keras_bert")

TOKENIZE_BATCH = 8192  # examples tokenized per call: bounds the memory of huge splits


def read_lines(path: str) -> Iterator[tuple[int, str]]:
    """Yields `(line number, text)` of a UTF-8 text file (1-based numbers, a leading
    BOM and each line's end, "\\n" or "\\r\\n", removed). Only "\\n" ends a line, so
    other Unicode line separators stay inside the text as they are in the data.

    Raises `InputNotFoundError` for a missing file and `DataError` naming the line of
    bytes that are not UTF-8.
    """
    if not fileio.exists(path) or fileio.isdir(path):
        raise InputNotFoundError(f"{path}: no such file.")
    with fileio.open_file(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(f"not UTF-8 text ({e.reason} at byte {e.start}).",
                                path=path, line=number) from None
            yield number, text.removesuffix("\n").removesuffix("\r")


def read_text(path: str) -> str:
    """The whole of a UTF-8 text file (a leading BOM removed), for readers that parse
    it as one stream (CSV with quoted newlines).

    Raises `InputNotFoundError` for a missing file and `DataError` naming the line of
    the first bytes that are not UTF-8.
    """
    if not fileio.exists(path) or fileio.isdir(path):
        raise InputNotFoundError(f"{path}: no such file.")
    with fileio.open_file(path, "rb") as f:
        data = f.read()
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"not UTF-8 text ({e.reason}).", path=path,
                        line=data.count(b"\n", 0, e.start) + 1) from None


def encode_text_segments(tokenizer, segments: Sequence[Sequence[str]], seq_length: int,
                         dropped: list | None = None) -> dict[str, np.ndarray]:
    """Tokenizes one or two lists of texts in batches of TF ops and packs each example
    as `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` (google-research/bert's longest-first
    truncation), padded to `seq_length`.

    Args:
        tokenizer: a `BertTokenizer`.
        segments: one or two equally long lists of strings.
        seq_length: tokens per sequence, special tokens included.
        dropped: a list that receives, per example, how many word pieces truncation
            cut off (0 for an example that fits).

    Returns:
        `INPUT_NAMES` -> int32 arrays [n, seq_length].

    Example:

    >>> from keras_bert.text.tokenizer import BertTokenizer
    >>> tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    >>> out = encode_text_segments(tok, [["a b"], ["b"]], seq_length=7)
    >>> out["input_word_ids"].tolist(), out["input_type_ids"].tolist()
    ([[2, 5, 6, 3, 6, 3, 0]], [[0, 0, 0, 0, 1, 1, 0]])
    """
    count = len(segments[0])
    if any(len(s) != count for s in segments):
        raise ArgumentError(f"Segments differ in length: {[len(s) for s in segments]}.")
    parts = []
    for start in range(0, count, TOKENIZE_BATCH):
        ids = [tokenizer.tokenize(tf.constant(list(s[start:start + TOKENIZE_BATCH]),
                                              dtype=tf.string)) for s in segments]
        packed = pack_inputs(ids, seq_length, cls_id=tokenizer.cls_id,
                             sep_id=tokenizer.sep_id, pad_id=tokenizer.pad_id)
        parts.append({k: v.numpy() for k, v in packed.items()})
        if dropped is not None:
            full = sum(t.row_lengths().numpy() for t in ids) + 1 + len(ids)  # [CLS], [SEP]s
            dropped.extend((full - parts[-1]["input_mask"].sum(axis=1)).tolist())
    if not parts:
        return {k: np.zeros((0, seq_length), np.int32) for k in INPUT_NAMES}
    return {k: np.concatenate([p[k] for p in parts]) for k in INPUT_NAMES}


def as_numpy_outputs(outputs) -> np.ndarray:
    """`model.predict` outputs as one numpy array: a `tf.RaggedTensor` (what Keras
    returns when batches were cut to different lengths) is padded with zeros."""
    if hasattr(outputs, "to_tensor"):
        outputs = outputs.to_tensor()
    if hasattr(outputs, "numpy"):
        outputs = outputs.numpy()
    return np.asarray(outputs)


def warn_blank_lines(path: str, blank: Sequence[int], last_line: int) -> None:
    """Warns about the blank lines (numbers in `blank`) before a file's last row
    (`last_line`): they get no prediction, and the rows keep their places."""
    inside = [n for n in blank if n < last_line]  # trailing blank lines are no rows
    if inside:
        logger.warning("%s: line(s) %s are blank and get no prediction; every other row "
                       "keeps its place (its row number, or its id column) in the "
                       "predictions.", path, ", ".join(map(str, inside[:10])))


# --- raw inputs of the task models' text face (keras_bert.tasks.keras_face) -------------
def text_list(x, what: str = "x") -> list[str]:
    """`x` (one string, or a sequence of them) as a list of strings; `ArgumentError`
    naming `what` for anything else.

    Example:

    >>> text_list("a b"), text_list(("a", "b"))
    (['a b'], ['a', 'b'])
    """
    if isinstance(x, str):
        return [x]
    if isinstance(x, Sequence) and all(isinstance(t, str) for t in x):
        return list(x)
    raise ArgumentError(f"{what} must be a string or a list of strings, got "
                        f"{type(x).__name__}" + (f" holding {type(x[0]).__name__}"
                                                 if isinstance(x, Sequence) and x else "")
                        + ".", field=what)


def text_pairs(x) -> tuple[list[str], list[str] | None]:
    """(first texts, second texts or None) of raw classifier inputs: one text, a list
    of texts, a list of (text, text_pair) tuples, a tuple (texts, text_pairs) of two
    lists, or a dict {"text": [...], "text_pair": [...]}.

    Example:

    >>> text_pairs(["a", "b"]), text_pairs({"text": ["a"], "text_pair": ["b"]})
    ((['a', 'b'], None), (['a'], ['b']))
    >>> text_pairs([("a", "b"), ("c", "d")]), text_pairs((["a", "c"], ["b", "d"]))
    ((['a', 'c'], ['b', 'd']), (['a', 'c'], ['b', 'd']))
    """
    if isinstance(x, dict):
        unknown = set(x) - {"text", "text_pair"}
        if "text" not in x or unknown:
            raise ArgumentError(f"a dict of texts needs the key 'text' (and 'text_pair' for "
                                f"pairs), got {sorted(x)}.", field="x")
        first = text_list(x["text"], "x['text']")
        second = None if x.get("text_pair") is None else text_list(x["text_pair"],
                                                                    "x['text_pair']")
    elif (isinstance(x, tuple) and len(x) == 2 and not isinstance(x[0], str)
          and all(isinstance(part, Sequence) for part in x)):
        first, second = text_list(x[0], "x[0]"), text_list(x[1], "x[1]")
    elif (isinstance(x, Sequence) and not isinstance(x, str) and x
          and all(isinstance(p, (tuple, list)) and len(p) == 2 for p in x)):
        first = text_list([p[0] for p in x], "x")
        second = text_list([p[1] for p in x], "x")
    else:
        first, second = text_list(x), None
    if second is not None and len(second) != len(first):
        raise ArgumentError(f"{len(first)} texts but {len(second)} text pairs.", field="x")
    return first, second


def label_list(y, count: int) -> list | None:
    """`y` (None, one label, or one per input) as a list of `count` labels, or None.

    Example:

    >>> label_list([1, 0], 2), label_list(None, 2), label_list("pos", 1)
    ([1, 0], None, ['pos'])
    """
    if y is None:
        return None
    if isinstance(y, (str, int, float)) and count == 1:
        return [y]
    if not isinstance(y, Sequence) or isinstance(y, str):
        raise ArgumentError(f"y must hold one label per input, got {type(y).__name__}.",
                            field="y")
    if len(y) != count:
        raise ArgumentError(f"{count} inputs but {len(y)} labels.", field="y")
    return list(y)
