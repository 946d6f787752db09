"""BertTokenizer: google-research/bert's WordPiece tokenization, in-graph, on tensorflow-text.

BERT's ids are defined by `tokenization.FullTokenizer` of google-research/bert: a
`BasicTokenizer` (drop NUL, U+FFFD and control/format characters; whitespace to
spaces; spaces around CJK ideographs; split on whitespace; if uncased, `str.lower()`,
NFD and drop nonspacing marks; split off every punctuation character) followed by
greedy longest-match-first WordPiece with `##` continuations and `[UNK]` for words of
more than 200 characters. `BertTokenizer` reproduces it exactly and runs as TF ops, so
it works eagerly, in `tf.data` and in exported SavedModels.

How (measured, see benchmarks/tokenizer_throughput.py):

* tensorflow-text's `FastBertTokenizer` is the fastest WordPiece implementation here
  (about 10x its `BertTokenizer`), but its normalizer is not Google's: it case-folds with
  NFKC (ligatures, full-width and math letters, "ß" -> "ss", every sigma -> "σ"),
  turns control and format characters into spaces instead of deleting them, ignores
  Unicode spaces other than ASCII, and follows a newer Unicode version than Python.
  It does agree with FullTokenizer on text made of printable ASCII plus tab/newline
  (checked exhaustively on all pairs of such characters), which is almost all of an
  English corpus, so such strings take it directly (the "fast path").
* Every other string takes the "exact path": its code points are mapped through
  tables generated from Python's `unicodedata` by the very rules of `BasicTokenizer`
  (the tables are built once per process and embedded in traced graphs), with the two
  context-dependent steps done explicitly: the final-sigma rule of `str.lower()` and
  the canonical reordering of NFD. The words then go to a `FastWordpieceTokenizer`
  without its own pre-tokenization.

The result is identical to FullTokenizer run on the same Python (its Unicode version).

Input bytes that are not valid UTF-8 are read like a lenient decoder: each invalid
sequence becomes U+FFFD, which BERT's cleaning deletes. FullTokenizer, given such
bytes, decodes with errors="ignore", so the ids are the same.
"""

from __future__ import annotations

import functools
import os
import unicodedata

import numpy as np
import tensorflow as tf

PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN = (
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)

# Strings made only of these characters take the fast path (see the module docstring).
_FAST_PATH_PATTERN = "[\t\n\r\x20-\x7e]*"


def load_vocab(vocab_file: str | os.PathLike) -> list[str]:
    """Reads a Google `vocab.txt` (one token per line, the line number is the id).

    Like FullTokenizer, each line is stripped of surrounding whitespace. Paths may be
    anything `tf.io.gfile` opens (local, gs://, ...).
    """
    path = os.fspath(vocab_file)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"No vocabulary file at {path!r}; pass the path of a "
                                "Google-style vocab.txt (one WordPiece token per line).")
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ValueError(f"{path!r} is not UTF-8 (line {line}: {e.reason}); a vocab.txt "
                         "must be UTF-8 encoded.") from e
    tokens = [line.strip() for line in text.splitlines()]
    if not any(tokens):
        raise ValueError(f"The vocabulary file {path!r} is empty.")
    return tokens


# --- google-research/bert's BasicTokenizer, character by character ---------------------

_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_NUM_CODEPOINTS = 0x110000
_BLOCK = 256
_SPACE, _SIGMA, _FINAL_SIGMA = 0x20, 0x3A3, 0x3C2


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_punctuation(ch: str) -> bool:
    # Google counts every non-alphanumeric ASCII character as punctuation, plus \p{P}.
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_removed(ch: str) -> bool:
    # BasicTokenizer._clean_text deletes NUL, U+FFFD and Cc/Cf other than \t \n \r.
    if ch in "\t\n\r":
        return False
    return ch in "\x00\ufffd" or unicodedata.category(ch) in ("Cc", "Cf")


def _is_separator(ch: str) -> bool:
    # _clean_text maps " \t\n\r" and Zs to a space; str.split() also splits on the
    # other characters for which str.isspace() holds (after cleaning: U+2028, U+2029).
    return ch.isspace() or unicodedata.category(ch) == "Zs"


class _CodepointMap:
    """A map from each code point to a (possibly empty) string, as TF lookup tables.

    Stored as two-level tables (blocks of 256 code points, identical blocks shared): a
    code per code point, -1 for "unchanged", -2 for "padded with spaces" (punctuation
    and CJK), otherwise a row of `expansions` (code points, -1 padded).
    """

    _UNCHANGED, _PADDED = -1, -2

    def __init__(self, mapping: dict[int, str]):
        codes = np.full(_NUM_CODEPOINTS, self._UNCHANGED, np.int32)
        rows: dict[str, int] = {}
        for cp, out in mapping.items():
            if out == f" {chr(cp)} ":
                codes[cp] = self._PADDED
            else:
                codes[cp] = rows.setdefault(out, len(rows))
        width = max([3] + [len(s) for s in rows])
        expansions = np.full((max(len(rows), 1), width), -1, np.int32)
        for out, row in rows.items():
            expansions[row, :len(out)] = [ord(c) for c in out]
        blocks, index = np.unique(codes.reshape(-1, _BLOCK), axis=0, return_inverse=True)
        self.width = width
        self.block_start = tf.constant(index.reshape(-1).astype(np.int32) * _BLOCK)
        self.block_codes = tf.constant(blocks.reshape(-1))
        self.expansions = tf.constant(expansions)

    def codes(self, cps):
        return _two_level_lookup(self.block_start, self.block_codes, cps)

    def apply(self, cps, source):
        """Maps flat code points; `source` (same length) follows each output code point."""
        code = self.codes(cps)[:, None]
        n = tf.shape(cps)[0]
        cp = cps[:, None]
        space = tf.fill([n, 1], _SPACE)
        pad = tf.fill([n, self.width - 1], -1)
        unchanged = tf.concat([cp, pad], axis=1)
        padded = tf.concat([space, cp, space, pad[:, 2:]], axis=1)
        mapped = tf.gather(self.expansions, tf.maximum(code[:, 0], 0))
        pieces = tf.where(code == self._UNCHANGED, unchanged,
                          tf.where(code == self._PADDED, padded, mapped))
        flat = tf.reshape(pieces, [-1])
        keep = tf.where(flat >= 0)[:, 0]
        return tf.gather(flat, keep), tf.gather(source, keep // self.width)


def _two_level_lookup(block_start, block_codes, cps):
    return tf.gather(block_codes, tf.gather(block_start, cps // _BLOCK) + cps % _BLOCK)


def _two_level_table(values: np.ndarray):
    blocks, index = np.unique(values.reshape(-1, _BLOCK), axis=0, return_inverse=True)
    return (tf.constant(index.reshape(-1).astype(np.int32) * _BLOCK),
            tf.constant(blocks.reshape(-1)))


# Classes for the final-sigma rule of str.lower(); "skipped" are the case-ignorable
# characters and the ones that cleaning deletes before lower() ever sees them.
_OTHER, _SKIPPED, _CASED = 0, 1, 2
_NEEDS_REORDER = 4  # flag: the NFD of this character keeps a mark that reordering moves


def _sigma_class(ch: str) -> int:
    # Probe str.lower() itself, so the classes are those of this Python: a character
    # between a capital and a sigma keeps the sigma final iff it is cased or ignorable;
    # after a sigma it makes the sigma non-final iff it is cased and not ignorable.
    final_after = ("Α" + ch + "Σ").lower()[-1] == "ς"
    final_before = ("ΑΣ" + ch).lower()[1] == "ς"
    if not final_after:
        return _OTHER
    return _SKIPPED if final_before else _CASED


class _BasicTokenizerTables:
    """BasicTokenizer's per-character rules for one casing, as `_CodepointMap`s.

    Cased: `full` cleans, pads CJK and punctuation. Uncased: `first` cleans, pads CJK,
    lower-cases and decomposes (NFD); `second` drops nonspacing marks and pads
    punctuation; `full` is `second` after `first`, used unless a string needs the
    canonical reordering that NFD does between the two. `flags` holds the final-sigma
    class and the reorder flag of each code point, `ccc` its canonical combining class.
    """

    def __init__(self, lower_case: bool):
        self.lower_case = lower_case
        first, second, full = {}, {}, {}
        flags = np.zeros(_NUM_CODEPOINTS, np.int32)
        ccc = np.zeros(_NUM_CODEPOINTS, np.int32)
        for cp in range(_NUM_CODEPOINTS):
            if 0xD800 <= cp <= 0xDFFF:
                continue  # surrogates never come out of a UTF-8 decode
            ch = chr(cp)
            category = unicodedata.category(ch)
            if category in ("Cn", "Co") and not _is_cjk(cp):
                continue  # no rule touches unassigned or private-use characters
            if not lower_case:
                out = _cased_rule(ch)
                if out != ch:
                    full[cp] = out
                continue
            ccc[cp] = unicodedata.combining(ch)
            stage1 = _clean_and_pad(ch)
            stage2 = "".join(_strip_mark_pad_punctuation(c) for c in stage1)
            if stage1 != ch:
                first[cp] = stage1
            if stage2 != ch:
                full[cp] = stage2
            alone = _strip_mark_pad_punctuation(ch)
            if alone != ch:
                second[cp] = alone
            if _is_removed(ch):
                flags[cp] = _SKIPPED
            elif not _is_separator(ch):
                flags[cp] = _sigma_class(ch)
            if any(unicodedata.combining(c) and unicodedata.category(c) != "Mn"
                   for c in stage1):
                flags[cp] |= _NEEDS_REORDER
        self.full = _CodepointMap(full)
        if lower_case:
            self.first = _CodepointMap(first)
            self.second = _CodepointMap(second)
            self.flags = _two_level_table(flags)
            self.ccc = _two_level_table(ccc)


def _cased_rule(ch: str) -> str:
    """Cleaning, then spaces around CJK ideographs and punctuation."""
    if _is_removed(ch):
        return ""
    if _is_separator(ch):
        return " "
    return f" {ch} " if _is_cjk(ord(ch)) or _is_punctuation(ch) else ch


def _clean_and_pad(ch: str) -> str:
    """Cleaning, CJK padding and, for uncased vocabularies, lower() and NFD."""
    if _is_removed(ch):
        return ""
    if _is_separator(ch):
        return " "
    out = unicodedata.normalize("NFD", ch.lower())
    return f" {out} " if _is_cjk(ord(ch)) else out


def _strip_mark_pad_punctuation(ch: str) -> str:
    if unicodedata.category(ch) == "Mn":
        return ""
    return f" {ch} " if _is_punctuation(ch) else ch


@functools.lru_cache(maxsize=None)
def _tables(lower_case: bool) -> _BasicTokenizerTables:
    # Eager constants: built once per process and captured by every traced graph.
    with tf.init_scope():
        return _BasicTokenizerTables(lower_case)
