"""BERT's tokenizer, packing and the tagger's words in LiteRT ops, for `litert`.

A LiteRT model runs built-in ops and, registered beside them, tensorflow-text's LiteRT
kernels. `BertTokenizer`'s exact path (UTF-8 decoding, regular expressions,
`unicode_encode`) has no LiteRT kernel, and tensorflow-text's LiteRT tokenizer
(`FastBertNormalize` + end-to-end `FastWordpieceTokenize`) gives other ids than
google-research/bert on much non-ASCII text (NFKC case folding, control characters kept
as spaces, U+FFFD kept, a newer Unicode's punctuation). `LiteTokenizer` is the exact
path in integer built-in ops and three tensorflow-text kernels (`LITERT_TEXT_OPS`):

* `TFText>ByteSplitWithOffsets` gives the bytes; `decode_utf8` decodes them (a maximal
  invalid subsequence is one U+FFFD, as `tf.strings.unicode_decode(errors="replace")`);
* the code points go through `keras_bert.text.unicode_tables`' tables (those of
  `BertTokenizer`), with the final sigma and NFD's canonical reordering in integer ops;
* the words are encoded to UTF-8 bytes and joined into strings by
  `TFText>NgramsStringJoin` (`join_bytes`); `FastWordpieceTokenizeWithOffsets` without
  pre-tokenization gives the pieces, as `BertTokenizer`'s exact path does.

So the ids are `BertTokenizer.tokenize`'s for any input. LiteRT has no string select or
concat (strings are picked with `tf.gather`), fails a call on a gather index out of
range (tables are padded), and lacks some int64 kernels (the arithmetic is int32).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops.ngrams_op import gen_ngrams_op

from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.unicode_tables import (
    CASED,
    FINAL_SIGMA,
    SIGMA,
    SKIPPED,
    SPACE,
    CodepointMap,
    TwoLevelTable,
    basic_tokenizer_tables,
)
from keras_bert.text.vocab import UNK_TOKEN

# The tensorflow-text ops this module's graphs use; each has a LiteRT kernel that
# `tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS` registers.
LITERT_TEXT_OPS = ("TFText>ByteSplitWithOffsets", "TFText>NgramsStringJoin",
                   "FastWordpieceTokenizeWithOffsets")
# NgramsStringJoin's n-gram widths, one round each: words of up to 8 * 8 * 16 bytes.
JOIN_WIDTHS = (8, 8, 16)
_EMPTY = 256  # index of "" in the byte-string table
_UNK_BYTES = list(UNK_TOKEN.encode())


def _i32(x):
    return tf.cast(x, tf.int32)


def row_of(splits, size):
    """The row of each of `size` values whose rows are cut by int32 `splits`."""
    marks = tf.math.unsorted_segment_sum(tf.ones_like(splits[1:-1]), splits[1:-1], size + 1)
    return tf.cumsum(marks[:size])


def splits_of(rows, nrows):
    """Row splits of values whose (sorted) rows are `rows`, over `nrows` rows."""
    counts = tf.math.unsorted_segment_sum(tf.ones_like(rows), rows, nrows)
    return tf.concat([[0], tf.cumsum(counts)], axis=0)


def byte_rows(texts):
    """The bytes of each string of a list of [n] string tensors, as one batch: int32
    (bytes, row splits over all their strings)."""
    values, splits, offset = [], [tf.zeros([1], tf.int32)], 0
    for text in texts:
        split = tf_text.ByteSplitter().split(text)
        values.append(_i32(split.flat_values))
        splits.append(_i32(split.row_splits[1:]) + offset)
        offset = offset + tf.size(values[-1])
    return tf.concat(values, axis=0), tf.concat(splits, axis=0)


class Decoded:
    """`decode_utf8`'s characters: `cps` (code points) and `rows` (their string), flat
    over the batch; `splits` cuts them into the strings."""

    def __init__(self, b, byte_splits):
        n = tf.size(b)
        self.nrows = tf.size(byte_splits) - 1
        row = row_of(byte_splits, n)
        index = tf.range(n)
        end = tf.gather(byte_splits, row + 1)
        start_of_row = tf.gather(byte_splits, row)
        padded = tf.concat([b, [0, 0, 0]], axis=0)

        def following(k):  # the k-th byte after each byte, and whether it is in the row
            return tf.gather(padded, index + k), index + k < end

        (b1, e1), (b2, e2), (b3, e3) = following(1), following(2), following(3)
        length = (tf.where(b < 0x80, 1, 0) + tf.where((b >= 0xC2) & (b <= 0xDF), 2, 0)
                  + tf.where((b >= 0xE0) & (b <= 0xEF), 3, 0)
                  + tf.where((b >= 0xF0) & (b <= 0xF4), 4, 0))
        low = tf.where(b == 0xE0, 0xA0, tf.where(b == 0xF0, 0x90, 0x80))
        high = tf.where(b == 0xED, 0x9F, tf.where(b == 0xF4, 0x8F, 0xBF))
        c1 = e1 & (b1 >= low) & (b1 <= high)
        c2 = e2 & (b2 >= 0x80) & (b2 <= 0xBF)
        c3 = e3 & (b3 >= 0x80) & (b3 <= 0xBF)
        # How many continuation bytes follow a lead byte correctly (its valid prefix).
        good = _i32(c1) * (1 + _i32(length >= 3) * _i32(c2) * (1 + _i32(length >= 4)
                                                               * _i32(c3)))
        good = tf.where(length >= 2, good, 0)
        valid = (length == 1) | ((length >= 2) & (good == length - 1))
        cp = tf.where(length == 1, b, tf.where(
            length == 2, (b - 0xC0) * 64 + b1 - 0x80, tf.where(
                length == 3, (b - 0xE0) * 4096 + (b1 - 0x80) * 64 + b2 - 0x80,
                (b - 0xF0) * 262144 + (b1 - 0x80) * 4096 + (b2 - 0x80) * 64 + b3 - 0x80)))
        cp = tf.where(valid, cp, 0xFFFD)
        # A byte inside the (valid or truncated) sequence of a lead byte before it
        # belongs to that character; every other byte starts one (a stray one: U+FFFD).
        good_before = tf.concat([[0, 0, 0], good], axis=0)
        covered = tf.zeros_like(b, tf.bool)
        for d in (1, 2, 3):
            covered |= (tf.gather(good_before, index + 3 - d) >= d) & (index - d >= start_of_row)
        starts = _i32(tf.where(~covered)[:, 0])
        self.cps = tf.gather(cp, starts)
        self.rows = tf.gather(row, starts)
        self.splits = splits_of(self.rows, self.nrows)


def decode_utf8(*texts) -> Decoded:
    """[n] UTF-8 strings (one or more tensors, as one batch) -> their characters, each
    maximal invalid subsequence read as U+FFFD, as `tf.strings.unicode_decode(...,
    errors="replace")` reads it.

    Example:

    >>> d = decode_utf8(tf.constant(["aé", b"\\xff"]))
    >>> d.cps.numpy().tolist(), d.splits.numpy().tolist()
    ([97, 233, 65533], [0, 2, 3])
    """
    return Decoded(*byte_rows(texts))


def lookup(table: TwoLevelTable, cps):
    """`table.lookup` with the block arithmetic in int32 division (LiteRT has no
    bitwise and)."""
    block = tf.gather(table.block_start, cps // 256)
    return tf.gather(table.values, block + cps % 256)


def _input_marker(expansions) -> int:
    # CodepointMap's stand-in for "the code point itself": its one value below -1.
    values = np.unique(expansions.numpy())
    (marker,) = values[values < -1]
    return int(marker)


def apply_map(cmap: CodepointMap, cps, source):
    """`CodepointMap.apply` in int32: the mapped code points, and `source` per output."""
    marker = _input_marker(cmap.expansions)
    pieces = tf.gather(cmap.expansions, lookup(cmap.codes, cps))
    pieces = tf.where(pieces == marker, cps[:, None], pieces)
    flat = tf.reshape(pieces, [-1])
    keep = _i32(tf.where(flat >= 0)[:, 0])
    return tf.gather(flat, keep), tf.gather(source, keep // cmap.width)


def _final_sigma(cps, rows, classes):
    """str.lower()'s final sigma (see `keras_bert.text.basic_tokenizer`), without scatter."""
    n = tf.size(cps)
    counted = classes != SKIPPED
    positions = tf.concat([_i32(tf.where(counted)[:, 0]), [n]], axis=0)
    rank = tf.cumsum(_i32(counted), exclusive=True)
    rows_padded = tf.concat([rows, [-1]], axis=0)
    classes_padded = tf.concat([classes, [0]], axis=0)
    count = tf.size(positions) - 1

    def cased(i):
        return (tf.gather(rows_padded, i) == rows) & (tf.gather(classes_padded, i) == CASED)

    before = cased(tf.gather(positions, tf.maximum(rank - 1, 0))) & (rank > 0)
    after = cased(tf.gather(positions, tf.minimum(rank + 1, count)))
    return tf.where((cps == SIGMA) & before & ~after, FINAL_SIGMA, cps)


def _reorder_marks(cps, source, rows, ccc):
    """NFD's canonical reordering: within each run of combining marks (ccc > 0), the
    marks sorted by combining class, stably. Only the marks move."""
    n = tf.size(cps)
    new_row = tf.concat([[True], rows[1:] != rows[:-1]], axis=0)
    run = tf.cumsum(_i32((ccc == 0) | new_row))
    marks = _i32(tf.where(ccc > 0)[:, 0])
    key = ((tf.cast(tf.gather(run, marks), tf.int64) * 256 + tf.cast(tf.gather(ccc, marks),
                                                                     tf.int64))
           * tf.cast(n + 1, tf.int64) + tf.cast(marks, tf.int64))
    order = tf.math.top_k(-key, tf.size(marks)).indices
    # The r-th mark's place takes the r-th mark in sorted order. Gathered, not
    # scattered: LiteRT's ScatterNd divides by the output's size, and with no character
    # left (n == 0: "", only control or zero-width characters) it kills the process.
    moved = tf.concat([tf.gather(marks, order), [0]], axis=0)
    rank = tf.cumsum(_i32(ccc > 0), exclusive=True)
    perm = tf.where(ccc > 0, tf.gather(moved, rank), tf.range(n))
    return tf.gather(cps, perm), tf.gather(source, perm)


def utf8_bytes(cps):
    """[chars] code points -> [chars, 4] UTF-8 bytes, -1 after each character's last."""
    length = 1 + _i32(cps >= 0x80) + _i32(cps >= 0x800) + _i32(cps >= 0x10000)
    cont = [0x80 + (cps // 262144) % 64, 0x80 + (cps // 4096) % 64,
            0x80 + (cps // 64) % 64, 0x80 + cps % 64]
    none = -tf.ones_like(cps)
    one = [cps, none, none, none]
    two = [0xC0 + cps // 64, cont[3], none, none]
    three = [0xE0 + cps // 4096, cont[2], cont[3], none]
    four = [0xF0 + cps // 262144, cont[1], cont[2], cont[3]]
    columns = [tf.where(length == 1, a, tf.where(length == 2, b, tf.where(length == 3, c, d)))
               for a, b, c, d in zip(one, two, three, four)]
    return tf.stack(columns, axis=1), length


def join_bytes(codes, starts, lengths, widths=JOIN_WIDTHS):
    """Strings from bytes: string w is `codes[starts[w]:starts[w] + lengths[w]]` (each
    length >= 1), then "" (a string to gather for padding).

    `codes` are int32 byte values. LiteRT has no string concat: one-byte strings are
    gathered and runs of them joined by `TFText>NgramsStringJoin`, one round per width
    of `widths` (each length at most their product); the work is proportional to the
    bytes.

    Example:

    >>> join_bytes(tf.constant(list(b"hi!")), tf.constant([0, 2]), tf.constant([2, 1])).numpy()
    array([b'hi', b'!', b''], dtype=object)
    """
    table = tf.constant([bytes([i]) for i in range(256)] + [b""])
    padded = tf.concat([codes, [_EMPTY]], axis=0)
    count = tf.size(lengths)
    # Every word's bytes, then a row of one "" that keeps a "" at the end of `x`.
    lengths = tf.concat([lengths, [1]], axis=0)
    splits = tf.concat([[0], tf.cumsum(lengths)], axis=0)
    total = splits[-1]
    row = row_of(splits, total)
    source = tf.gather(tf.concat([starts, [tf.size(codes)]], axis=0), row) + tf.range(
        total) - tf.gather(splits, row)
    source = tf.where(row == count, tf.size(codes), source)
    x = tf.gather(table, tf.gather(padded, source))
    for width in widths:
        # Each row padded with "" to a multiple of `width`, then every `width` pieces
        # joined: the row's n-grams at 0, width, 2 * width...
        padded_lengths = (lengths + width - 1) // width * width
        padded_splits = tf.concat([[0], tf.cumsum(padded_lengths)], axis=0)
        size = padded_splits[-1]
        row = row_of(padded_splits, size)
        q = tf.range(size) - tf.gather(padded_splits, row)
        x = tf.gather(x, tf.where(q < tf.gather(lengths, row),
                                  tf.gather(splits[:-1], row) + q, tf.size(x) - 1))
        # The op itself (`tf_text.ngrams` would add an unused sliding window to the
        # graph), on ragged rows: its dense-input kernel corrupts memory from 16 rows.
        joined, _ = gen_ngrams_op.tf_text_ngrams_string_join(
            input_values=x, input_row_splits=[tf.cast(padded_splits, tf.int64)],
            width=width, axis=-1, string_separator="")
        lengths = padded_lengths // width
        splits = tf.concat([[0], tf.cumsum(lengths)], axis=0)
        size = splits[-1]
        row = row_of(splits, size)
        q = tf.range(size) - tf.gather(splits, row)
        x = tf.gather(joined,
                      tf.gather(padded_splits, row) - row * (width - 1) + width * q)
    return x  # [count + 1]: the last is ""


class LiteTokenizer:
    """`BertTokenizer.tokenize` in LiteRT-convertible ops (see the module docstring).

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "great", "##est", "!", "cafe"]
    >>> tok = LiteTokenizer(BertTokenizer(vocab))
    >>> tok.tokenize(tf.constant(["The greatest!", "Café", ""])).to_list()
    [[4, 5, 6, 7], [8], []]
    """

    def __init__(self, tokenizer: BertTokenizer):
        self.tokenizer = tokenizer
        self.tables = basic_tokenizer_tables(tokenizer.lower_case)
        self.max_chars = tokenizer.max_chars_per_word
        if 4 * self.max_chars > np.prod(JOIN_WIDTHS):
            raise ValueError(f"max_chars_per_word {self.max_chars} is over the "
                             f"{np.prod(JOIN_WIDTHS) // 4} characters this tokenizer joins.")
        vocab = tokenizer.vocabulary
        # As BertTokenizer builds its WordPiece model: a repeated (blank) line renamed.
        vocab = [t if tokenizer.token_to_id(t) == i else f"{t} (repeated, line {i + 1})"
                 for i, t in enumerate(vocab)]
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=vocab, max_bytes_per_word=4 * self.max_chars, token_out_type=tf.int32,
            unknown_token=UNK_TOKEN, no_pretokenization=True)

    def normalized(self, decoded: Decoded):
        """BasicTokenizer's characters: (code points, the row of each, the index of the
        decoded character each came from), spaces between words."""
        tables = self.tables
        cps, rows = decoded.cps, decoded.rows
        source = tf.range(tf.size(cps))
        if not tables.lower_case:
            out, src = apply_map(tables.full, cps, source)
            return out, tf.gather(rows, src), src
        flags = lookup(tables.flags, cps)
        cps = _final_sigma(cps, rows, flags % 4)
        out, src = apply_map(tables.first, cps, source)
        out, src = _reorder_marks(out, src, tf.gather(rows, src), lookup(tables.ccc, out))
        out, src = apply_map(tables.second, out, src)
        return out, tf.gather(rows, src), src

    def words(self, *texts):
        """The BasicTokenizer words of one batch of strings (or several, as one):
        (UTF-8 words [words], int32 row splits of the words over the strings); a word
        of more than max_chars_per_word characters is [UNK]."""
        words, word_splits, _ = self._words(decode_utf8(*texts))
        return words, word_splits

    def _words(self, decoded: Decoded):
        """`words` of decoded strings, and `WordSources` for offsets."""
        out, out_rows, src = self.normalized(decoded)
        is_char = out != SPACE
        new_row = tf.concat([[True], out_rows[1:] != out_rows[:-1]], axis=0)
        after_space = tf.concat([[True], out[:-1] == SPACE], axis=0)
        word_starts = _i32(tf.where(is_char & (after_space | new_row))[:, 0])
        chars = _i32(tf.where(is_char)[:, 0])
        rank = tf.cumsum(_i32(is_char), exclusive=True)
        char_splits = tf.concat([tf.gather(tf.concat([rank, [0]], axis=0), word_starts),
                                 [tf.size(chars)]], axis=0)
        chars_per_word = char_splits[1:] - char_splits[:-1]
        too_long = chars_per_word > self.max_chars
        word_of_char = row_of(char_splits, tf.size(chars))
        codes, full_length = utf8_bytes(tf.gather(out, chars))
        dropped = tf.gather(too_long, word_of_char)
        length = tf.where(dropped, 0, full_length)
        flat = tf.reshape(tf.where(dropped[:, None], -1, codes), [-1])
        keep = _i32(tf.where(flat >= 0)[:, 0])
        nwords = tf.size(word_starts)
        word_bytes = tf.math.unsorted_segment_sum(length, word_of_char, nwords)
        starts = tf.cumsum(word_bytes, exclusive=True)
        codes = tf.concat([tf.gather(flat, keep), _UNK_BYTES], axis=0)
        # Bytes of a word over the limit are left out above; it reads "[UNK]".
        total = tf.size(keep)
        starts = tf.where(too_long, total, starts)
        word_bytes = tf.where(too_long, len(_UNK_BYTES), word_bytes)
        words = join_bytes(codes, starts, word_bytes)[:nwords]
        word_rows = tf.gather(out_rows, word_starts)
        sources = WordSources(decoded, tf.gather(src, chars), full_length, char_splits,
                              too_long)
        return words, splits_of(word_rows, decoded.nrows), sources

    def tokenize(self, *texts):
        """int32 ids, ragged [n, (pieces)], as `BertTokenizer.tokenize` gives, for
        each of the [n] string tensors `texts` (tokenized together: one graph)."""
        words, word_splits = self.words(*texts)
        out = _by_text(texts, self._wordpiece.tokenize(words), word_splits)
        return out[0] if len(texts) == 1 else out

    def tokenize_with_offsets(self, *texts):
        """`BertTokenizer.tokenize_with_offsets(unit="char")` in LiteRT ops: lists
        (one item per [n] string tensor of `texts`) of ragged int32 [n, (pieces)] ids,
        starts and ends, and the strings' `Decoded` characters (what offsets count)."""
        decoded = decode_utf8(*texts)
        words, word_splits, sources = self._words(decoded)
        pieces, starts, ends = self._wordpiece.tokenize_with_offsets(words)
        starts, ends = sources.char_offsets(_i32(pieces.value_rowids()),
                                            _i32(starts.flat_values), _i32(ends.flat_values))
        return (*(_by_text(texts, pieces.with_flat_values(v), word_splits)
                  for v in (pieces.flat_values, starts, ends)), decoded)


class WordSources:
    """Where the bytes of `LiteTokenizer._words`' words come from: `char_offsets` maps
    a word piece's byte span in its word to a code point span in its string, as
    `BertTokenizer`'s exact path does (a word over the character limit is one [UNK]
    over all of it)."""

    def __init__(self, decoded: Decoded, char_source, char_bytes, char_splits, too_long):
        self.decoded = decoded
        self.char_source = char_source  # the decoded character of each word character
        self.char_splits = char_splits  # words' characters
        self.too_long = too_long
        self.byte_splits = tf.concat([[0], tf.cumsum(char_bytes)], axis=0)

    def char_offsets(self, word, start, end):
        """(start, end) code point offsets in its string of bytes start:end of `word`."""
        first_char = tf.gather(self.char_splits, word)
        base = tf.gather(self.byte_splits, first_char)
        char_of_byte = row_of(self.byte_splits, self.byte_splits[-1])
        long = tf.gather(self.too_long, word)  # its piece is "[UNK]"'s, not its bytes
        first = tf.gather(char_of_byte, base + tf.where(long, 0, start))
        last = tf.gather(char_of_byte, base + tf.where(long, 0, end - 1))
        first = tf.where(long, first_char, first)
        last = tf.where(long, tf.gather(self.char_splits, word + 1) - 1, last)
        first, last = tf.gather(self.char_source, first), tf.gather(self.char_source, last)
        row_start = tf.gather(self.decoded.splits, tf.gather(self.decoded.rows, first))
        return first - row_start, last + 1 - row_start


def _by_text(texts, pieces, word_splits):
    """[ragged [n, (pieces)] per text of `texts`] from the pieces of all their words."""
    splits = tf.gather(_i32(pieces.row_splits), word_splits)
    values, out, first = pieces.flat_values, [], 0
    for text in texts:
        n = tf.size(text)
        part = splits[first:first + n + 1]
        out.append(tf.RaggedTensor.from_row_splits(
            values[part[0]:part[-1]], tf.cast(part - part[0], tf.int64), validate=False))
        first = first + n
    return out


def concat_rows(a, b):
    """Row by row concatenation of two ragged [batch, (n)] int32 tensors."""
    la, lb = _i32(a.row_lengths()), _i32(b.row_lengths())
    splits = tf.concat([[0], tf.cumsum(la + lb)], axis=0)
    total = tf.size(a.flat_values) + tf.size(b.flat_values)
    index = tf.range(total)
    row = row_of(splits, total)
    pos = index - tf.gather(splits, row)
    la_row = tf.gather(la, row)
    values = tf.concat([a.flat_values, b.flat_values], axis=0)
    source = tf.where(pos < la_row, tf.gather(_i32(a.row_starts()), row) + pos,
                      tf.size(a.flat_values) + tf.gather(_i32(b.row_starts()), row)
                      + pos - la_row)
    return tf.RaggedTensor.from_row_splits(tf.gather(values, source),
                                           tf.cast(splits, tf.int64), validate=False)


def pack(segments, seq_length: int, cls_id: int, sep_id: int, pad_id: int):
    """`keras_bert.text.packing.pack_inputs` (google-research/bert's longest-first
    truncation) in LiteRT's ops, cut to the batch's longest input as `ServingModule.pack`
    cuts it. One or two int32 ragged segments; int32 [batch, longest] outputs."""
    budget = seq_length - len(segments) - 1
    lengths = [_i32(s.row_lengths()) for s in segments]
    if len(segments) == 1:
        keep = [tf.minimum(lengths[0], budget)]
    else:
        la, lb = lengths
        keep_a = tf.minimum(la, tf.maximum(budget - lb, (budget + 1) // 2))
        keep = [keep_a, tf.minimum(lb, budget - keep_a)]
    total = sum(keep) + len(segments) + 1
    longest = tf.maximum(tf.reduce_max(tf.concat([total, [1]], axis=0)), 1)
    p = tf.range(longest)[None, :]
    specials = tf.constant([cls_id, sep_id, pad_id], tf.int32)
    values = tf.concat([*(s.flat_values for s in segments), specials], axis=0)
    size = tf.size(values)
    cls, sep, pad = size - 3, size - 2, size - 1
    index = tf.where(p == 0, cls, pad)
    offset, first = 1, 0  # where the segment starts (position), its values' start
    for s, k in zip(segments, keep):
        k, start = k[:, None], offset + tf.zeros_like(p)
        inside = (p >= start) & (p < start + k)
        index = tf.where(inside, first + _i32(s.row_starts())[:, None] + p - start, index)
        index = tf.where(p == start + k, sep, index)
        offset = offset + k + 1
        first = first + tf.size(s.flat_values)
    mask = _i32(p < total[:, None])
    second = _i32(p > keep[0][:, None] + 1) if len(segments) == 2 else 0
    return {"input_word_ids": tf.gather(values, index), "input_mask": mask,
            "input_type_ids": mask * second}


def gather_rows(ragged, rows):
    """`tf.gather(ragged, rows)` of a ragged [n, (k)] int32 tensor, in int32 ops."""
    lengths = tf.gather(_i32(ragged.row_lengths()), rows)
    splits = tf.concat([[0], tf.cumsum(lengths)], axis=0)
    total = splits[-1]
    row = row_of(splits, total)
    source = tf.gather(_i32(ragged.row_starts()), tf.gather(rows, row)) + tf.range(
        total) - tf.gather(splits, row)
    return tf.RaggedTensor.from_row_splits(tf.gather(ragged.flat_values, source),
                                           tf.cast(splits, tf.int64), validate=False)


def split_words(text, whitespace):
    """`keras_bert.tasks.tagging.serving.split_words` in LiteRT ops: the words of
    `str.split()` (`whitespace`: its code points) as (UTF-8 words [words] then "", their
    row splits over the texts, their start and end code point offsets [words])."""
    d = decode_utf8(text)
    cps, rows = d.cps, d.rows
    n = tf.size(cps)
    space = tf.reduce_any(cps[:, None] == tf.constant(whitespace, tf.int32)[None, :], axis=1)
    index = tf.range(n)
    row_start, row_end = tf.gather(d.splits, rows), tf.gather(d.splits, rows + 1)
    space_padded = tf.concat([space, [True]], axis=0)
    before = (index == row_start) | tf.gather(space_padded, tf.maximum(index - 1, 0))
    after = (index + 1 == row_end) | tf.gather(space_padded, index + 1)
    starts = _i32(tf.where(~space & before)[:, 0])
    ends = _i32(tf.where(~space & after)[:, 0]) + 1
    codes, length = utf8_bytes(cps)
    byte_starts = tf.cumsum(length, exclusive=True)
    byte_padded = tf.concat([byte_starts, [tf.reduce_sum(length)]], axis=0)
    first = tf.gather(byte_padded, starts)
    words = join_bytes(tf.gather(tf.reshape(codes, [-1]), _i32(tf.where(
        tf.reshape(codes, [-1]) >= 0)[:, 0])), first, tf.gather(byte_padded, ends) - first)
    word_rows = tf.gather(rows, starts)
    offset = tf.gather(d.splits, word_rows)
    return words, splits_of(word_rows, d.nrows), starts - offset, ends - offset
