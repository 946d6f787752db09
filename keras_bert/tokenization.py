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
  (7-10x its `BertTokenizer`), but its normalizer is not Google's: it case-folds with
  NFKC (ligatures, full-width and math letters, superscripts, "…" -> "...", "™" ->
  "tm", "ß" -> "ss", every sigma -> "σ"), turns control characters (and, cased, format
  characters such as U+200B) into spaces instead of deleting them, keeps U+FFFD, and
  classes punctuation by a newer Unicode version than Python's. (tensorflow-text's
  `BertTokenizer` case-folds the same way and ignores non-ASCII spaces.) It does agree
  with FullTokenizer on text made of printable ASCII plus tab/newline/carriage return
  (tested on every pair of such characters), which is almost all of an English corpus,
  so such strings take it directly (the "fast path").
* Every other string takes the "exact path": its code points are mapped through
  tables generated from Python's `unicodedata` by the very rules of `BasicTokenizer`
  (`keras_bert.unicode_tables`; built once per process and embedded in traced graphs),
  with the two context-dependent steps done explicitly: the final-sigma rule of
  `str.lower()` and the canonical reordering of NFD. The words then go to a `FastWordpieceTokenizer`
  without its own pre-tokenization.

The result is identical to FullTokenizer run on the same Python (its Unicode version).

Input bytes that are not valid UTF-8 are read like a lenient decoder: each invalid
sequence becomes U+FFFD, which BERT's cleaning deletes. FullTokenizer, given such
bytes, decodes with errors="ignore", so the ids are the same.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Sequence

import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert import io as kb_io
from keras_bert.errors import InputNotFoundError, VocabError
from keras_bert.unicode_tables import (
    CASED,
    FINAL_SIGMA,
    NEEDS_REORDER,
    SIGMA,
    SKIPPED,
    SPACE,
    BasicTokenizerTables,
    basic_tokenizer_tables,
)

PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN = (
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)

# Strings made only of these characters take the fast path (see the module docstring).
_FAST_PATH_PATTERN = "[\t\n\r\x20-\x7e]*"


def load_vocab(vocab_file: str | os.PathLike) -> list[str]:
    """Reads a Google `vocab.txt` (one token per line, the line number is the id).

    Like FullTokenizer, each line is stripped of surrounding whitespace. Paths may be
    local or anything `tf.io.gfile` opens (gs://, ...). Unlike FullTokenizer, a token on
    two lines is an error: FullTokenizer silently gives it the id of its last line,
    which shifts the ids a model was trained with (Google's vocabularies have no repeats).

    Raises:
        InputNotFoundError: no file at `vocab_file`, or it is a directory.
        VocabError: the file is not UTF-8, has no token, or repeats a token (the
            message names the token and its lines, 1-based).

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> _ = open(path, "w").write("[PAD]\\n[UNK]\\n  hello  \\n[UNK]\\n")
    >>> load_vocab(path)
    Traceback (most recent call last):
    ...
    keras_bert.errors.VocabError: ...vocab.txt:4: the token '[UNK]' is on lines 2 and 4; ...
    """
    path = os.fspath(vocab_file)
    if kb_io.isdir(path):
        raise InputNotFoundError(
            f"The vocabulary file {path!r} is a directory; give the vocab.txt in it, e.g. "
            f"{os.path.join(path, 'vocab.txt')!r}.")
    if not kb_io.exists(path):
        raise InputNotFoundError(f"No vocabulary file at {path!r}; pass the path of a "
                                 "Google-style vocab.txt (one WordPiece token per line).")
    with kb_io.open_file(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise VocabError(f"not UTF-8 (line {line}: {e.reason}); a vocab.txt must be UTF-8 "
                         "encoded.", path=path, line=line) from e
    lines = text.split("\n")  # like readline(): only "\n" ends a line
    if lines[-1] == "":
        lines.pop()
    tokens = [line.strip() for line in lines]
    if not any(tokens):
        raise VocabError("the vocabulary file is empty; a vocab.txt has one WordPiece "
                         "token per line.", path=path)
    check_unique_tokens(tokens, path)
    return tokens


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
    keras_bert.errors.VocabError: the token '[PAD]' is at ids 0 and 3; ...
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


# --- the exact path, in-graph -----------------------------------------------------------


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


def _row_ids(ragged):
    """`ragged.value_rowids()`, computed faster (bincount of row starts, then cumsum)."""
    size = tf.shape(ragged.flat_values, out_type=tf.int32)[0]
    starts = tf.cast(ragged.row_splits[1:-1], tf.int32)
    counts = tf.math.bincount(starts, minlength=size, maxlength=size)
    return tf.cast(tf.cumsum(counts), tf.int64)


def _starts_of_runs(flags, rows):
    """True where `flags` is set or a new row begins."""
    new_row = tf.concat([[True], rows[1:] != rows[:-1]], axis=0)
    return flags | new_row


class _Words:
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
        self.rows = rows = _row_ids(decoded)
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


def _utf8_length(cps):
    return (1 + tf.cast(cps >= 0x80, tf.int64) + tf.cast(cps >= 0x800, tf.int64)
            + tf.cast(cps >= 0x10000, tf.int64))


# --- the public tokenizer ---------------------------------------------------------------


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
        words = _Words(batch, basic_tokenizer_tables(lower_case))
        return words.by_row(words.words)
    return _map_strings(text, words_of_batch, "basic_tokenize")


class VocabularyWarning(UserWarning):
    """A vocabulary that loads but probably does not fit the tokenizer settings."""


class BertTokenizer(tf.Module):
    """google-research/bert's WordPiece tokenizer (`FullTokenizer`) as TF ops.

    `tokenize` gives the same ids as FullTokenizer(vocab_file, do_lower_case=lower_case)
    for every input, eagerly, in `tf.data.Dataset.map` and inside a `tf.function` that
    is exported (the vocabulary and normalization tables are embedded as constants).
    See the module docstring for how.

    Args:
        vocab_file: path of a Google `vocab.txt` (one token per line; line i is id i),
            or the tokens themselves in id order. Must contain `[UNK]` and no token
            twice (`VocabError` otherwise; see `load_vocab`).
        lower_case: True for uncased vocabularies (lower-case, strip accents), False
            for cased ones. A vocabulary that looks like the other casing triggers a
            `VocabularyWarning`.
        max_chars_per_word: words longer than this (in characters, after basic
            tokenization) become `[UNK]`; 200 in google-research/bert.
        name: name of the `tf.Module`.

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "great", "##est",
    ...          "!", "cafe"]
    >>> tokenizer = BertTokenizer(vocab, lower_case=True)
    >>> tokenizer.tokenize(tf.constant(["The greatest!", "Café", ""])).to_list()
    [[5, 6, 7, 8], [9], []]
    >>> tokenizer.detokenize(tf.ragged.constant([[5, 6, 7, 8]])).numpy()
    array([b'the greatest !'], dtype=object)
    """

    def __init__(self, vocab_file: str | os.PathLike | Sequence[str], lower_case: bool = True,
                 max_chars_per_word: int = 200, name: str | None = None):
        super().__init__(name=name)
        if isinstance(vocab_file, (str, os.PathLike)):
            tokens = load_vocab(vocab_file)
        elif isinstance(vocab_file, Sequence):
            tokens = [t.decode("utf-8") if isinstance(t, bytes) else str(t)
                      for t in vocab_file]
            if not tokens:
                raise VocabError("The vocabulary is empty; pass a vocab.txt path or a "
                                 "non-empty list of tokens.")
            check_unique_tokens(tokens)
        else:
            raise TypeError("vocab_file must be a path to a vocab.txt or a sequence of "
                            f"tokens, got {type(vocab_file).__name__}.")
        if not isinstance(lower_case, bool):
            raise TypeError(f"lower_case must be True or False, got {lower_case!r}.")
        if not isinstance(max_chars_per_word, int) or max_chars_per_word < 1:
            raise ValueError("max_chars_per_word must be a positive integer, got "
                             f"{max_chars_per_word!r}.")
        # Tokens are unique (`check_unique_tokens`) except blank lines, which no input
        # produces; like FullTokenizer's dict, "" gets the id of its last line.
        self._token_to_id = {token: i for i, token in enumerate(tokens)}
        if UNK_TOKEN not in self._token_to_id:
            raise VocabError(
                f"The vocabulary has no {UNK_TOKEN!r} token, which BERT needs for unknown "
                f"words; use a Google vocab.txt or add {UNK_TOKEN!r} "
                f"(learn_vocab reserves {', '.join(SPECIAL_TOKENS)}).")
        _check_vocabulary(tokens, lower_case)
        self._vocabulary = tuple(tokens)
        self._lower_case = lower_case
        self._max_chars_per_word = max_chars_per_word
        wordpiece_vocab = [t if self._token_to_id[t] == i else f"{t} (repeated, line {i + 1})"
                           for i, t in enumerate(tokens)]
        try:
            self._fast = tf_text.FastBertTokenizer(
                vocab=wordpiece_vocab, max_bytes_per_word=max_chars_per_word,
                token_out_type=tf.int32, unknown_token=UNK_TOKEN,
                lower_case_nfd_strip_accents=lower_case)
            # Words arrive already split; longer ones than max_chars_per_word are
            # replaced by [UNK] first, so the byte limit need only admit 4 bytes a char.
            self._wordpiece = tf_text.FastWordpieceTokenizer(
                vocab=wordpiece_vocab, max_bytes_per_word=4 * max_chars_per_word,
                token_out_type=tf.int32, unknown_token=UNK_TOKEN, no_pretokenization=True)
        except RuntimeError as e:
            raise VocabError(
                f"tensorflow-text cannot build a WordPiece model from this vocabulary "
                f"({e}); a vocabulary needs word pieces besides the bracketed special "
                "tokens, like a Google vocab.txt.") from e
        self._tables = basic_tokenizer_tables(lower_case)
        self._vocab_tensor = tf.constant(tokens, dtype=tf.string)

    # --- vocabulary ---------------------------------------------------------------------
    @property
    def vocabulary(self) -> list[str]:
        """The tokens in id order."""
        return list(self._vocabulary)

    @property
    def vocab_size(self) -> int:
        return len(self._vocabulary)

    @property
    def lower_case(self) -> bool:
        return self._lower_case

    @property
    def max_chars_per_word(self) -> int:
        return self._max_chars_per_word

    def token_to_id(self, token: str) -> int:
        """The id of `token`; a KeyError that says so if the vocabulary lacks it."""
        try:
            return self._token_to_id[token]
        except KeyError:
            raise KeyError(f"{token!r} is not in the vocabulary ({self.vocab_size} "
                           "tokens).") from None

    def id_to_token(self, token_id: int) -> str:
        if not 0 <= token_id < self.vocab_size:
            raise IndexError(f"Token id {token_id} is outside the vocabulary "
                             f"[0, {self.vocab_size}).")
        return self._vocabulary[token_id]

    @property
    def pad_id(self) -> int:
        return self.token_to_id(PAD_TOKEN)

    @property
    def unk_id(self) -> int:
        return self.token_to_id(UNK_TOKEN)

    @property
    def cls_id(self) -> int:
        return self.token_to_id(CLS_TOKEN)

    @property
    def sep_id(self) -> int:
        return self.token_to_id(SEP_TOKEN)

    @property
    def mask_id(self) -> int:
        return self.token_to_id(MASK_TOKEN)

    # --- tokenization ---------------------------------------------------------------------
    def tokenize(self, text):
        """WordPiece ids of each string, without special tokens.

        Args:
            text: strings (`str`, bytes, lists, or a string `tf.Tensor` /
                `tf.RaggedTensor` of any rank).

        Returns:
            int32 ids: a `tf.RaggedTensor` shaped [batch, (tokens)] for a vector of
            strings (one more ragged dimension per input dimension), a 1-D `tf.Tensor`
            for a scalar string. `ids_to_tokens` of them gives the token strings (what
            FullTokenizer.tokenize returns).
        """
        return _map_strings(text, self._tokenize_batch, "tokenize")

    def tokenize_with_offsets(self, text, unit: str = "char"):
        """Ids plus where each token comes from in the input.

        Args:
            text: as in `tokenize`.
            unit: "char" for offsets in Unicode code points (Python `str` indices;
                invalid UTF-8 counts one per U+FFFD it decodes to) or "byte" for
                offsets in the UTF-8 input (`tf.strings.substr(..., unit="BYTE")`).

        Returns:
            `(ids, starts, ends)`, same shapes; `text[starts[i]:ends[i]]` is the input
            span token i was made from (for a word piece, its part of the word; a
            character that normalizes into several tokens gives each the whole
            character). int64 offsets.
        """
        if unit not in ("char", "byte"):
            raise ValueError(f'unit must be "char" or "byte", got {unit!r}.')
        return _map_strings(text, functools.partial(self._tokenize_batch, offsets=unit),
                            "tokenize_with_offsets")

    def normalize(self, text):
        """BasicTokenizer's output joined by single spaces (the words WordPiece sees)."""
        words = basic_tokenize(text, self._lower_case)
        return tf.strings.reduce_join(words, axis=-1, separator=" ")

    def detokenize(self, ids, skip_special_tokens: bool = False):
        """Joins word pieces back into text: "##" pieces attach to the previous piece.

        `detokenize(tokenize(x))` equals `normalize(x)` when no word became `[UNK]`.

        Args:
            ids: int ids, [batch, (tokens)] (ragged or padded) or one 1-D sequence.
            skip_special_tokens: drop [PAD], [CLS], [SEP] and [MASK].

        Returns:
            strings, [batch] (or a scalar for a 1-D input).
        """
        ids = _as_ragged_ids(ids)
        if isinstance(ids, tf.Tensor):  # a single sequence
            return self.detokenize(ids[None], skip_special_tokens)[0]
        ids = tf.cast(ids, tf.int32)
        tf.debugging.assert_less(ids.flat_values, self.vocab_size, message=(
            f"detokenize: token id outside the vocabulary [0, {self.vocab_size})"))
        tf.debugging.assert_non_negative(ids.flat_values, message=(
            "detokenize: negative token id"))
        if skip_special_tokens:
            special = [self._token_to_id[t] for t in (PAD_TOKEN, CLS_TOKEN, SEP_TOKEN,
                                                      MASK_TOKEN) if t in self._token_to_id]
            keep = tf.reduce_all(ids[..., None] != tf.constant(special or [-1], tf.int32),
                                 axis=-1)
            ids = tf.ragged.boolean_mask(ids, keep)
        tokens = tf.gather(self._vocab_tensor, ids)
        pieces = tf.ragged.map_flat_values(_detokenized_piece, tokens)
        text = tf.strings.reduce_join(pieces, axis=-1)
        return tf.strings.regex_replace(text, "^ ", "")

    def ids_to_tokens(self, ids):
        """The token strings of `ids` (any shape, ragged or not)."""
        return tf.gather(self._vocab_tensor, ids)

    # --- serialization ----------------------------------------------------------------------
    def get_config(self) -> dict:
        """Everything needed to rebuild the tokenizer, vocabulary included."""
        return {"vocabulary": list(self._vocabulary), "lower_case": self._lower_case,
                "max_chars_per_word": self._max_chars_per_word}

    @classmethod
    def from_config(cls, config: dict) -> BertTokenizer:
        config = dict(config)
        vocabulary = config.pop("vocabulary")
        with warnings.catch_warnings():
            # The casing was accepted when the tokenizer was first made.
            warnings.simplefilter("ignore", VocabularyWarning)
            return cls(vocabulary, **config)

    def __repr__(self):
        return (f"BertTokenizer(vocab_size={self.vocab_size}, lower_case={self._lower_case}, "
                f"max_chars_per_word={self._max_chars_per_word})")

    # --- internals ------------------------------------------------------------------------
    def _tokenize_batch(self, text, offsets=None):
        """[batch] strings -> ragged ids (and offsets): the fast or the exact path per row."""
        if offsets is None:
            fast, exact = self._fast.tokenize, self._exact_tokenize
        else:
            fast = self._fast.tokenize_with_offsets  # ASCII: byte == char offsets
            exact = functools.partial(self._exact_tokenize, offsets=offsets)
        is_fast = tf.strings.regex_full_match(text, _FAST_PATH_PATTERN)

        def mixed():
            fast_rows = tf.where(is_fast)[:, 0]
            exact_rows = tf.where(~is_fast)[:, 0]
            order = tf.math.invert_permutation(tf.concat([fast_rows, exact_rows], axis=0))
            return tf.nest.map_structure(
                lambda a, b: tf.gather(tf.concat([a, b], axis=0), order),
                fast(tf.gather(text, fast_rows)), exact(tf.gather(text, exact_rows)))

        return tf.cond(tf.reduce_all(is_fast), lambda: fast(text), mixed)

    def _exact_tokenize(self, text, offsets=None):
        words = _Words(text, self._tables, byte_offsets=offsets == "byte")
        too_long = words.chars.row_lengths() > self._max_chars_per_word
        inputs = tf.where(too_long, UNK_TOKEN, words.words)
        if offsets is None:
            pieces = self._wordpiece.tokenize(inputs)
            return words.by_row(pieces).merge_dims(1, 2)
        pieces, starts, ends = self._wordpiece.tokenize_with_offsets(inputs)
        word = _row_ids(pieces)
        # A word over the limit is one [UNK] that spans all of it.
        word_bytes = tf.cast(tf.strings.length(words.words), tf.int64)
        starts = tf.where(tf.gather(too_long, word), tf.zeros_like(word), starts.flat_values)
        ends = tf.where(tf.gather(too_long, word), tf.gather(word_bytes, word),
                        ends.flat_values)
        # Each byte of the words knows the source character it came from.
        byte_source = tf.repeat(words.sources.flat_values,
                                _utf8_length(words.chars.flat_values))
        base = tf.gather(tf.cumsum(word_bytes, exclusive=True), word)
        first = tf.gather(byte_source, base + starts)
        last = tf.gather(byte_source, base + ends - 1)
        start, end = words.source_offsets(first, last, offsets)
        by_row = words.by_row(pieces).merge_dims(1, 2)
        return by_row, by_row.with_flat_values(start), by_row.with_flat_values(end)


def _detokenized_piece(tokens):
    is_continuation = tf.strings.regex_full_match(tokens, "(?s)##.+")
    return tf.where(is_continuation, tf.strings.regex_replace(tokens, "^##", ""),
                    tf.strings.join([" ", tokens]))


def _as_ragged_ids(ids):
    if isinstance(ids, tf.RaggedTensor):
        return ids
    ids = tf.convert_to_tensor(ids)
    if not ids.dtype.is_integer:
        raise TypeError(f"Token ids must be integers, got {ids.dtype.name}.")
    if ids.shape.rank == 1:
        return ids
    if ids.shape.rank != 2:
        raise ValueError(f"Token ids must be [batch, tokens] or [tokens], got shape {ids.shape}.")
    return tf.RaggedTensor.from_tensor(ids)


def _map_strings(text, fn, method):
    """Applies `fn` ([batch] strings -> per-string results) to strings of any rank."""
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


def _check_vocabulary(tokens: list[str], lower_case: bool) -> None:
    """Warns like google-research/bert's checkpoint-name check when casing looks wrong."""
    words = [t for t in tokens if t and not (t.startswith("[") and t.endswith("]"))]
    upper = sum(1 for t in words if t != t.lower())
    if lower_case and words and upper > 0.01 * len(words):
        warnings.warn(
            f"lower_case=True, but {upper} of {len(words)} tokens of the vocabulary have "
            f"upper-case letters (e.g. {next(t for t in words if t != t.lower())!r}), "
            "so it looks cased; lower-cased input never produces them. Pass "
            "lower_case=False if the model was trained cased.", VocabularyWarning,
            stacklevel=3)
    elif not lower_case and words and upper == 0:
        warnings.warn(
            "lower_case=False, but no token of the vocabulary has an upper-case letter, "
            "so it looks uncased (capitalized words will split badly or become [UNK]). "
            "Pass lower_case=True if the model was trained uncased.", VocabularyWarning,
            stacklevel=3)
