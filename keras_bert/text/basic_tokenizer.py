"""google-research/bert's `BasicTokenizer`, in-graph: the words WordPiece splits.

`BasicTokenizer` drops NUL, U+FFFD and control/format characters, turns whitespace into
spaces, puts spaces around CJK ideographs, splits on whitespace, if uncased applies
`str.lower()`, NFD and drops nonspacing marks, and splits off every punctuation
character. Here the code points are mapped through tables generated from Python's
`unicodedata` by those very rules (`keras_bert.text.unicode_tables`; built once per process
and embedded in traced graphs), with the two context-dependent steps done explicitly:
the final-sigma rule of `str.lower()` and the canonical reordering of NFD. `Words` keeps,
for every output character, the input character it came from, so that
`keras_bert.text.tokenizer.BertTokenizer` can give offsets into the input.

Input bytes that are not valid UTF-8 are read like a lenient decoder: each invalid
sequence becomes U+FFFD, which BERT's cleaning deletes.
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert.text.unicode_tables import (
    CASED,
    FINAL_SIGMA,
    NEEDS_REORDER,
    SIGMA,
    SKIPPED,
    SPACE,
    BasicTokenizerTables,
    basic_tokenizer_tables,
)


def basic_tokenize(text, lower_case: bool = True):
    """google-research/bert's `BasicTokenizer`: the words WordPiece will split, in-graph.

    Args:
        text: strings, as in `BertTokenizer.tokenize`.
        lower_case: lower-case and strip accents (uncased vocabularies).

    Returns:
        a string `tf.RaggedTensor` [batch, (words)] (one ragged dimension per input
        dimension; a 1-D tensor for a scalar).

    Example:

    >>> basic_tokenize(tf.constant(["Héllo, WORLD!"])).to_list()
    [[b'hello', b',', b'world', b'!']]
    """
    def words_of_batch(batch):
        words = Words(batch, basic_tokenizer_tables(lower_case))
        return words.by_row(words.words)
    return map_strings(text, words_of_batch, "basic_tokenize")


def _final_sigma(cps, rows, classes):
    """Applies str.lower()'s final-sigma rule: a capital sigma preceded by a cased letter
    and not followed by one (case-ignorable characters skipped) becomes "ς" (U+03C2)."""
    counted = classes != SKIPPED
    positions = tf.where(counted)[:, 0]
    rank = tf.cumsum(tf.cast(counted, tf.int64), exclusive=True)
    sigmas = tf.where(cps == SIGMA)[:, 0]
    r = tf.gather(rank, sigmas)  # the sigma itself is positions[r]
    n = tf.size(positions, out_type=tf.int64)
    before = tf.gather(positions, tf.maximum(r - 1, 0))
    after = tf.gather(positions, tf.minimum(r + 1, n - 1))
    sigma_rows = tf.gather(rows, sigmas)

    def cased(i, exists):
        return (exists & (tf.gather(rows, i) == sigma_rows)
                & (tf.gather(classes, i) == CASED))

    final = tf.boolean_mask(sigmas, cased(before, r > 0) & ~cased(after, r + 1 < n))
    return tf.tensor_scatter_nd_update(
        cps, final[:, None], tf.fill(tf.shape(final), tf.constant(FINAL_SIGMA, cps.dtype)))


def row_ids(ragged):
    """`ragged.value_rowids()`, computed faster (bincount of row starts, then cumsum)."""
    size = tf.shape(ragged.flat_values, out_type=tf.int32)[0]
    starts = tf.cast(ragged.row_splits[1:-1], tf.int32)
    counts = tf.math.bincount(starts, minlength=size, maxlength=size)
    return tf.cast(tf.cumsum(counts), tf.int64)


def _starts_of_runs(flags, rows):
    """True where `flags` is set or a new row begins."""
    new_row = tf.concat([[True], rows[1:] != rows[:-1]], axis=0)
    return flags | new_row


class Words:
    """The BasicTokenizer words of a batch: flat over the batch, with their sources.

    `chars` [words, (chars)] holds the code points of each word, `sources` the index
    (into the flat decoded input) of the input character each one came from, `words`
    the UTF-8 words, `row_splits` which words belong to which input string.
    """

    def __init__(self, text, tables: BasicTokenizerTables, byte_offsets: bool = False):
        if byte_offsets:
            decoded, self.byte_starts = tf.strings.unicode_decode_with_offsets(
                text, "UTF-8", errors="replace", replacement_char=0xFFFD)
        else:
            decoded = tf.strings.unicode_decode(
                text, "UTF-8", errors="replace", replacement_char=0xFFFD)
        self.text, self.decoded = text, decoded
        cps = decoded.flat_values
        self.rows = rows = row_ids(decoded)
        source = tf.range(tf.size(cps, out_type=tf.int64))
        if tables.lower_case:
            flags = tables.flags.lookup(cps)
            cps = tf.cond(tf.reduce_any(cps == SIGMA),
                          lambda: _final_sigma(cps, rows, flags & 3), lambda: cps)
            out, src = tf.cond(
                tf.reduce_any(flags & NEEDS_REORDER != 0),
                lambda: self._nfd_reordered(tables, cps, source, rows),
                lambda: tables.full.apply(cps, source))
        else:
            out, src = tables.full.apply(cps, source)
        # Words are the runs of non-spaces within a row.
        out_rows = tf.gather(rows, src)
        is_char = out != SPACE
        after_space = tf.concat([[True], out[:-1] == SPACE], axis=0)
        word_starts = tf.where(is_char & _starts_of_runs(after_space, out_rows))[:, 0]
        chars = tf.where(is_char)[:, 0]
        char_rank = tf.cumsum(tf.cast(is_char, tf.int64), exclusive=True)
        splits = tf.concat([tf.gather(char_rank, word_starts),
                            tf.shape(chars, out_type=tf.int64)], axis=0)
        self.chars = tf.RaggedTensor.from_row_splits(tf.gather(out, chars), splits,
                                                     validate=False)
        self.sources = self.chars.with_flat_values(tf.gather(src, chars))
        self.words = tf.strings.unicode_encode(self.chars, "UTF-8")
        self.row_splits = tf.searchsorted(tf.gather(out_rows, word_starts),
                                          tf.range(decoded.nrows() + 1), out_type=tf.int64)

    @staticmethod
    def _nfd_reordered(tables, cps, source, rows):
        # NFD sorts each run of combining marks by combining class; this matters only
        # when two marks that survive accent stripping (not Mn) meet, which is rare.
        out, src = tables.first.apply(cps, source)
        ccc = tables.ccc.lookup(out)
        run = tf.cumsum(tf.cast(_starts_of_runs(ccc == 0, tf.gather(rows, src)), tf.int64))
        order = tf.argsort(run * 256 + tf.cast(ccc, tf.int64), stable=True)
        return tables.second.apply(tf.gather(out, order), tf.gather(src, order))

    def by_row(self, values):
        """Groups per-word values [words, ...] into [batch, (words), ...]."""
        return tf.RaggedTensor.from_row_splits(values, self.row_splits, validate=False)

    def source_offsets(self, first, last, unit):
        """Offsets in the input of the span from source char `first` to `last` (flat)."""
        rows = self.rows
        if unit == "char":
            row_start = tf.gather(self.decoded.row_starts(), tf.gather(rows, first))
            return first - row_start, last + 1 - row_start
        starts = self.byte_starts.flat_values
        is_last = tf.concat([rows[1:] != rows[:-1], [True]], axis=0)
        next_start = tf.concat([starts[1:], [0]], axis=0)
        lengths = tf.cast(tf.strings.length(self.text), tf.int64)
        ends = tf.where(is_last, tf.gather(lengths, rows), next_start)
        return tf.gather(starts, first), tf.gather(ends, last)


def map_strings(text, fn, method):
    """Applies `fn` ([batch] strings -> per-string results) to strings of any rank;
    `method` names the caller in the errors (`BertTokenizer.<method> expects strings`)."""
    if not isinstance(text, tf.RaggedTensor):
        try:
            text = tf.convert_to_tensor(text)
        except (TypeError, ValueError) as e:
            raise TypeError(f"BertTokenizer.{method} expects strings, got "
                            f"{type(text).__name__}: {e}") from None
    if text.dtype != tf.string:
        raise TypeError(f"BertTokenizer.{method} expects strings, got a "
                        f"{text.dtype.name} tensor.")
    if isinstance(text, tf.RaggedTensor):
        return tf.nest.map_structure(text.with_flat_values, fn(text.flat_values))
    rank = text.shape.rank
    if rank is None:
        raise ValueError(f"BertTokenizer.{method} needs inputs of known rank; set the "
                         "shape of the string tensor (e.g. with tf.ensure_shape).")
    if rank == 1:
        return fn(text)
    if rank == 0:
        return tf.nest.map_structure(lambda r: r[0], fn(text[None]))
    nested = tf.RaggedTensor.from_tensor(text, ragged_rank=rank - 1)
    return tf.nest.map_structure(nested.with_flat_values, fn(nested.flat_values))
