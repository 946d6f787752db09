"""WordPiece from core TensorFlow ops only, for TF Serving images without tensorflow-text.

`BertTokenizer` runs WordPiece with tensorflow-text's `FastWordpieceTokenizer`, whose op
(`FastWordpieceTokenizeWithOffsets`) stock TF Serving registers only from 2.7.3/2.10,
and takes ASCII strings through `FastBertTokenizer`, whose `FastBertNormalize` it
registers only from 2.12. `CoreWordpiece` is the same WordPiece (google-research/bert's
greedy longest-match-first, `##` continuations, a word with an unmatched position is one
`[UNK]`) built only from ops of core TensorFlow (`tf.raw_ops`, no py_function), so a
SavedModel that tokenizes with `BertTokenizer.core_ops()` needs no tensorflow-text op.

How: the vocabulary is a `tf.lookup.StaticHashTable` (token -> id; ops `HashTableV2`,
`LookupTableImportV2`, `LookupTableFindV2`), saved with the module. Each word is first
looked up whole (most words of a text are in the vocabulary). The others go through a
`tf.while_loop` vectorised over words: at each step every unfinished word looks up all
substrings from its current character of 1 to K characters (K: the longest token, in
characters; "##" before them off the word start), keeps the longest found and moves
past it; a word where nothing is found becomes `[UNK]`. The loop runs once per piece of
the word with the most pieces (at most `max_chars_per_word`); each step costs (unfinished
words) x min(K, characters left) substrings and lookups. Substrings are cut by the byte
offsets of the characters, and offsets are reported in bytes, as `FastWordpieceTokenizer`
does. The whole runs as one graph (a `tf.function`), also when called eagerly.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from keras_bert.core.errors import ArgumentError

SUFFIX_INDICATOR = "##"


class CoreWordpiece(tf.Module):
    """Greedy longest-match-first WordPiece over already split words, in core TF ops.

    Gives the same pieces and byte offsets as tensorflow-text's
    `FastWordpieceTokenizer(vocab, token_out_type=tf.int32, no_pretokenization=True)` for
    words in valid UTF-8 (such as `keras_bert.text.basic_tokenizer.Words` produces), but
    measures the word limit in characters, as google-research/bert does.

    Args:
        vocabulary: the tokens in id order (continuations start with "##"). A token
            listed twice keeps the id of its last line, like FullTokenizer's dict; empty
            tokens never match.
        unknown_token: the token of words that cannot be split; must be in `vocabulary`.
        max_chars_per_word: longer words (in characters) become one `unknown_token`.
        name: name of the `tf.Module`.

    Example:

    >>> wordpiece = CoreWordpiece(["[UNK]", "un", "##aff", "##able", "a"])
    >>> wordpiece.tokenize(tf.constant(["unaffable", "ab", ""])).to_list()
    [[1, 2, 3], [0], []]
    >>> _, starts, ends = wordpiece.tokenize_with_offsets(tf.constant(["unaffable"]))
    >>> starts.to_list(), ends.to_list()
    ([[0, 2, 5]], [[2, 5, 9]])
    """

    def __init__(self, vocabulary: Sequence[str], unknown_token: str = "[UNK]",
                 max_chars_per_word: int = 200, name: str | None = None):
        super().__init__(name=name)
        if isinstance(vocabulary, (str, bytes)) or not isinstance(vocabulary, Sequence):
            raise ArgumentError("vocabulary must be a list of tokens, got "
                                f"{type(vocabulary).__name__}.", field="vocabulary")
        tokens = [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in vocabulary]
        ids = {token: i for i, token in enumerate(tokens) if token}
        if unknown_token not in ids:
            raise ArgumentError(f"unknown_token {unknown_token!r} is not in the vocabulary "
                                f"({len(tokens)} tokens).", field="unknown_token")
        if (isinstance(max_chars_per_word, bool) or not isinstance(max_chars_per_word, int)
                or max_chars_per_word < 1):
            raise ArgumentError("max_chars_per_word must be a positive integer, got "
                                f"{max_chars_per_word!r}.", field="max_chars_per_word")
        self._unknown_id = ids[unknown_token]
        self._max_chars_per_word = max_chars_per_word
        self._vocab_size = len(tokens)
        # The longest substring worth looking up at a word's start / after it.
        self._max_start = max(len(t) for t in ids)
        self._max_continuation = max((len(t) - len(SUFFIX_INDICATOR) for t in ids
                                      if t.startswith(SUFFIX_INDICATOR)), default=0)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(list(ids), tf.string), tf.constant(list(ids.values()), tf.int32)),
            default_value=-1)

    @property
    def max_chars_per_word(self) -> int:
        return self._max_chars_per_word

    @property
    def longest_token(self) -> int:
        """Characters of the longest token: a step looks up at most this many substrings."""
        return max(self._max_start, self._max_continuation)

    def tokenize(self, words):
        """int32 ids [words, (pieces)] of a 1-D string tensor of words."""
        return self.tokenize_with_offsets(words)[0]

    def tokenize_with_offsets(self, words):
        """`(ids, starts, ends)`: int32 ids and int64 byte offsets into each word, all
        [words, (pieces)]; `words[i][starts[i][j]:ends[i][j]]` is piece j of word i
        (without its "##"); an `[UNK]` word spans the whole word; "" has no pieces."""
        words = tf.convert_to_tensor(words, tf.string)
        if words.shape.rank != 1:
            raise ArgumentError(f"words must be a 1-D string tensor, got shape {words.shape}.",
                                field="words")
        # One graph: run op by op, the loop's many small ops would cost ~30x more.
        return self._tokenize_graph(words)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def _tokenize_graph(self, words):
        num_words = tf.shape(words, out_type=tf.int64)[0]
        word_bytes = tf.cast(tf.strings.length(words), tf.int64)
        num_chars = tf.cast(tf.strings.length(words, unit="UTF8_CHAR"), tf.int64)
        # Whole words found in the vocabulary, and words over the limit ([UNK]), are done.
        whole_ids = self._table.lookup(words)
        too_long = num_chars > self._max_chars_per_word
        whole = (whole_ids >= 0) & ~too_long
        done = tf.where(whole | too_long)[:, 0]
        done_ids = tf.where(tf.gather(whole, done), tf.gather(whole_ids, done),
                            tf.constant(self._unknown_id, tf.int32))
        # The others are split by the loop (indices into `pending` there).
        pending = tf.where(~whole & ~too_long & (num_chars > 0))[:, 0]
        word, ids, starts, ends, rank, failed = self._split(tf.gather(words, pending))
        word, failed = tf.gather(pending, word), tf.gather(pending, failed)
        # A word that failed drops its pieces and becomes one [UNK] over all of it.
        is_failed = tf.scatter_nd(failed[:, None], tf.ones_like(failed, tf.bool), [num_words])
        keep = tf.where(~tf.gather(is_failed, word))[:, 0]
        simple = tf.concat([done, failed], axis=0)  # one piece over the whole word
        word = tf.concat([simple, tf.gather(word, keep)], axis=0)
        ids = tf.concat([done_ids, tf.fill(tf.shape(failed), tf.constant(self._unknown_id)),
                         tf.gather(ids, keep)], axis=0)
        starts = tf.concat([tf.zeros_like(simple), tf.gather(starts, keep)], axis=0)
        ends = tf.concat([tf.gather(word_bytes, simple), tf.gather(ends, keep)], axis=0)
        rank = tf.concat([tf.zeros_like(simple), tf.gather(rank, keep)], axis=0)
        # Piece `rank` of word w goes to row_splits[w] + rank.
        counts = tf.math.unsorted_segment_sum(tf.ones_like(word), word, num_words)
        splits = tf.concat([[0], tf.cumsum(counts)], axis=0)
        order = tf.math.invert_permutation(tf.gather(splits, word) + rank)
        return tuple(tf.RaggedTensor.from_row_splits(tf.gather(values, order), splits,
                                                     validate=False)
                     for values in (ids, starts, ends))

    def _split(self, words):
        """Greedy longest-match-first over non-empty words not in the vocabulary whole.

        Returns flat (word, id, byte start, byte end, rank in the word) of the pieces
        found, and the words where no piece matched at some position.
        """
        _, char_starts = tf.strings.unicode_decode_with_offsets(
            words, "UTF-8", errors="replace")
        num_chars = char_starts.row_lengths()
        # Byte offset of character k of word w (k = n: the word's end): offsets[w][k].
        offsets = tf.concat([char_starts, tf.cast(tf.strings.length(words), tf.int64)[:, None]],
                            axis=1)
        row_start, byte = offsets.row_starts(), offsets.flat_values
        vocab_bound = tf.constant(self._vocab_size + 1, tf.int64)
        max_start = tf.constant(self._max_start, tf.int64)
        max_continuation = tf.constant(self._max_continuation, tf.int64)
        prefixes = tf.constant(["", SUFFIX_INDICATOR])

        def step(i, active, pos, *found):
            # Every substring active[a][pos[a]:pos[a] + length], length 1..limit (the
            # whole word was looked up before).
            left = tf.gather(num_chars, active) - pos
            limit = tf.minimum(tf.where(pos > 0, max_continuation, max_start),
                               left - tf.cast(pos == 0, tf.int64))
            candidates = tf.ragged.range(limit, row_splits_dtype=tf.int64)
            row = candidates.value_rowids()
            length = candidates.flat_values + 1
            at = tf.gather(row_start, active) + pos  # index into `byte`
            begin = tf.gather(tf.gather(byte, at), row)
            text = tf.strings.substr(
                tf.gather(words, tf.gather(active, row)), begin,
                tf.gather(byte, tf.gather(at, row) + length) - begin, unit="BYTE")
            key = tf.strings.join([tf.gather(prefixes, tf.cast(tf.gather(pos, row) > 0,
                                                                tf.int32)), text])
            ids = tf.cast(self._table.lookup(key), tf.int64)
            # The longest match of each word and its id, in one segment max.
            code = tf.where(ids >= 0, length * vocab_bound + ids, tf.zeros_like(ids))
            best = tf.maximum(tf.math.unsorted_segment_max(
                code, row, tf.size(active, out_type=tf.int64)), 0)
            taken = best // vocab_bound
            hit = tf.where(taken > 0)[:, 0]
            found = _write(found, i, tf.gather(active, hit),
                           tf.cast(tf.gather(best % vocab_bound, hit), tf.int32),
                           tf.gather(byte, tf.gather(at, hit)),
                           tf.gather(byte, tf.gather(at + taken, hit)),
                           tf.fill(tf.shape(hit), tf.cast(i - 1, tf.int64)),
                           tf.boolean_mask(active, taken == 0))
            more = (taken > 0) & (taken < left)
            return (i + 1, tf.boolean_mask(active, more), tf.boolean_mask(pos + taken, more),
                    *found)

        # One TensorArray element per step; an empty first one makes concat() safe.
        dtypes = (tf.int64, tf.int32, tf.int64, tf.int64, tf.int64, tf.int64)
        found = _write([tf.TensorArray(dtype, size=0, dynamic_size=True, infer_shape=False,
                                       element_shape=[None]) for dtype in dtypes],
                       0, *[tf.zeros([0], dtype) for dtype in dtypes])
        active = tf.range(tf.size(words, out_type=tf.int64))
        _, _, _, *found = tf.while_loop(
            lambda i, active, *_: tf.size(active) > 0, step,
            (tf.constant(1), active, tf.zeros_like(active), *found))
        return [array.concat() for array in found]

def _write(arrays, index, *values):
    return [array.write(index, value) for array, value in zip(arrays, values)]
