"""google-research/bert's `BasicTokenizer` rules, character by character, as code-point
tables for TF ops (used by `keras_bert.text.tokenizer`'s exact path).

Every rule of `BasicTokenizer` that looks at one character at a time (cleaning, spaces
around CJK ideographs and punctuation, `str.lower()`, NFD, dropping nonspacing marks) is
evaluated here once per code point with Python's own `unicodedata`, so the tables follow
the Unicode version of the running Python, as FullTokenizer does. The two rules that
depend on context (the final sigma of `str.lower()` and NFD's canonical reordering) are
applied in-graph by the tokenizer; these tables give it the classes it needs for that
(`BasicTokenizerTables.flags` and `.ccc`).

Example:

>>> cased_rule("!"), cased_rule("\u200b"), cased_rule("\u4e00") == " \u4e00 "
(' ! ', '', True)
>>> clean_and_pad("\u00c9") == "e\u0301"  # lower-cased and decomposed
True
"""

from __future__ import annotations

import functools
import gc
import unicodedata

import numpy as np
import tensorflow as tf

CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
NUM_CODEPOINTS = 0x110000
BLOCK_BITS = 8
BLOCK = 1 << BLOCK_BITS  # code points per table block
SPACE, SIGMA, FINAL_SIGMA = 0x20, 0x3A3, 0x3C2


def is_cjk(cp: int) -> bool:
    for lo, hi in CJK_RANGES:
        if lo <= cp <= hi:
            return True
    return False


def is_punctuation(ch: str) -> bool:
    # Google counts every non-alphanumeric ASCII character as punctuation, plus \p{P}.
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_removed(ch: str) -> bool:
    # BasicTokenizer._clean_text deletes NUL, U+FFFD and Cc/Cf other than \t \n \r.
    if ch in "\t\n\r":
        return False
    return ch in "\x00\ufffd" or unicodedata.category(ch) in ("Cc", "Cf")


def is_separator(ch: str) -> bool:
    # _clean_text maps " \t\n\r" and Zs to a space; str.split() also splits on the
    # other characters for which str.isspace() holds (after cleaning: U+2028, U+2029).
    return ch.isspace() or unicodedata.category(ch) == "Zs"


class CodepointMap:
    """A map from each code point to a (possibly empty) string, as TF lookup tables.

    Each code point has a row of `expansions`: the code points it becomes, padded with
    -1, where `_INPUT` stands for the code point itself (so all unchanged characters
    share one row, and all those padded with spaces another).
    """

    _INPUT = -2

    def __init__(self, mapping: dict[int, str]):
        unchanged, padded = (self._INPUT,), (SPACE, self._INPUT, SPACE)
        rows: dict[tuple[int, ...], int] = {unchanged: 0, padded: 1}
        codes = np.zeros(NUM_CODEPOINTS, np.int32)
        for cp, out in mapping.items():
            row = padded if out == f" {chr(cp)} " else tuple(map(ord, out))
            codes[cp] = rows.setdefault(row, len(rows))
        self.width = max(map(len, rows))
        expansions = np.full((len(rows), self.width), -1, np.int32)
        for row, index in rows.items():
            expansions[index, :len(row)] = row
        self.codes = TwoLevelTable(codes)
        self.expansions = tf.constant(expansions)

    def apply(self, cps, source):
        """Maps flat code points; `source` (same length) follows each output code point."""
        pieces = tf.gather(self.expansions, self.codes.lookup(cps))
        pieces = tf.where(pieces == self._INPUT, cps[:, None], pieces)
        flat = tf.reshape(pieces, [-1])
        keep = tf.where(flat >= 0)[:, 0]
        return tf.gather(flat, keep), tf.gather(source, keep // self.width)


class TwoLevelTable:
    """An int32 value per code point, stored as shared blocks of 256 (a few hundred KB)."""

    def __init__(self, values: np.ndarray):
        blocks: dict[bytes, int] = {}
        index = [blocks.setdefault(block.tobytes(), len(blocks))
                 for block in values.reshape(-1, BLOCK)]
        self.block_start = tf.constant(np.array(index, np.int32) * BLOCK)
        self.values = tf.constant(np.frombuffer(b"".join(blocks), np.int32))

    def lookup(self, cps):
        block = tf.gather(self.block_start, tf.bitwise.right_shift(cps, BLOCK_BITS))
        return tf.gather(self.values, block + tf.bitwise.bitwise_and(cps, BLOCK - 1))


# Classes for the final-sigma rule of str.lower(); "skipped" are the case-ignorable
# characters and the ones that cleaning deletes before lower() ever sees them.
OTHER, SKIPPED, CASED = 0, 1, 2
NEEDS_REORDER = 4  # flag: the NFD of this character keeps a mark that reordering moves


def sigma_class(ch: str) -> int:
    # Probe str.lower() itself, so the classes are those of this Python: a character
    # between a capital and a sigma keeps the sigma final iff it is cased or ignorable;
    # after a sigma it makes the sigma non-final iff it is cased and not ignorable.
    final_after = ("Α" + ch + "Σ").lower()[-1] == "ς"
    final_before = ("ΑΣ" + ch).lower()[1] == "ς"
    if not final_after:
        return OTHER
    return SKIPPED if final_before else CASED


class BasicTokenizerTables:
    """BasicTokenizer's per-character rules for one casing, as `CodepointMap`s.

    Cased: `full` cleans, pads CJK and punctuation. Uncased: `first` cleans, pads CJK,
    lower-cases and decomposes (NFD); `second` drops nonspacing marks and pads
    punctuation; `full` is `second` after `first`, used unless a string needs the
    canonical reordering that NFD does between the two. `flags` holds the final-sigma
    class and the reorder flag of each code point, `ccc` its canonical combining class.
    """

    def __init__(self, lower_case: bool):
        self.lower_case = lower_case
        first, second, full = {}, {}, {}
        flags = np.zeros(NUM_CODEPOINTS, np.int32)
        ccc = np.zeros(NUM_CODEPOINTS, np.int32)
        for cp in range(NUM_CODEPOINTS):
            if 0xD800 <= cp <= 0xDFFF:
                continue  # surrogates never come out of a UTF-8 decode
            ch = chr(cp)
            category = unicodedata.category(ch)
            if category in ("Cn", "Co") and not (0x3400 <= cp <= 0x2FA1F and is_cjk(cp)):
                continue  # no rule touches unassigned or private-use characters
            if lower_case and is_plain_ideograph(cp, ch, category):
                # Most assigned code points; what the full rules below make of them,
                # without their cost (a third of the tables' build time).
                first[cp] = full[cp] = f" {ch} "
                continue
            if not lower_case:
                out = cased_rule(ch)
                if out != ch:
                    full[cp] = out
                continue
            ccc[cp] = unicodedata.combining(ch)
            stage1 = clean_and_pad(ch)
            stage2 = "".join(strip_mark_pad_punctuation(c) for c in stage1)
            if stage1 != ch:
                first[cp] = stage1
            if stage2 != ch:
                full[cp] = stage2
            alone = strip_mark_pad_punctuation(ch)
            if alone != ch:
                second[cp] = alone
            if is_removed(ch):
                flags[cp] = SKIPPED
            elif not is_separator(ch):
                flags[cp] = sigma_class(ch)
            if any(unicodedata.combining(c) and unicodedata.category(c) != "Mn"
                   for c in stage1):
                flags[cp] |= NEEDS_REORDER
        self.full = CodepointMap(full)
        if lower_case:
            self.first = CodepointMap(first)
            self.second = CodepointMap(second)
            self.flags = TwoLevelTable(flags)
            self.ccc = TwoLevelTable(ccc)


def is_plain_ideograph(cp: int, ch: str, category: str) -> bool:
    """A CJK ideograph (a letter without case or decomposition) that every rule leaves
    alone except the spaces around it: lower() and NFD keep it, it is no punctuation,
    space or mark, and it is neither cased nor case-ignorable for the final sigma."""
    return (0x3400 <= cp <= 0x2FA1F and category == "Lo" and is_cjk(cp)
            and not unicodedata.decomposition(ch))


def cased_rule(ch: str) -> str:
    """Cleaning, then spaces around CJK ideographs and punctuation."""
    if is_removed(ch):
        return ""
    if is_separator(ch):
        return " "
    return f" {ch} " if is_cjk(ord(ch)) or is_punctuation(ch) else ch


def clean_and_pad(ch: str) -> str:
    """Cleaning, CJK padding and, for uncased vocabularies, lower() and NFD."""
    if is_removed(ch):
        return ""
    if is_separator(ch):
        return " "
    out = unicodedata.normalize("NFD", ch.lower())
    return f" {out} " if is_cjk(ord(ch)) else out


def strip_mark_pad_punctuation(ch: str) -> str:
    if unicodedata.category(ch) == "Mn":
        return ""
    return f" {ch} " if is_punctuation(ch) else ch


@functools.lru_cache(maxsize=None)
def basic_tokenizer_tables(lower_case: bool) -> BasicTokenizerTables:
    # Eager constants: built once per process and captured by every traced graph. The
    # build makes hundreds of thousands of small strings and tuples and no reference
    # cycle: the cyclic garbage collector is paused (a fifth of its time otherwise).
    collecting = gc.isenabled()
    gc.disable()
    try:
        with tf.init_scope():
            return BasicTokenizerTables(lower_case)
    finally:
        if collecting:
            gc.enable()
