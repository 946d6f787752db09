"""BertTokenizer: google-research/bert's WordPiece tokenization, in-graph, on tensorflow-text.

BERT's ids are defined by `tokenization.FullTokenizer` of google-research/bert: a
`BasicTokenizer` (drop NUL, U+FFFD and control/format characters; whitespace to
spaces; spaces around CJK ideographs; split on whitespace; if uncased, `str.lower()`,
NFD and drop nonspacing marks; split off every punctuation character) followed by
greedy longest-match-first WordPiece with `##` continuations and `[UNK]` for words of
more than 200 characters. `BertTokenizer` reproduces it exactly and runs as TF ops, so
it works eagerly, in `tf.data` and in exported SavedModels.

How (measured once: `git show 9273a48:benchmarks/tokenizer_throughput.py`):

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
  (`keras_bert.text.unicode_tables`; built once per process and embedded in traced graphs),
  with the two context-dependent steps done explicitly: the final-sigma rule of
  `str.lower()` and the canonical reordering of NFD (`keras_bert.text.basic_tokenizer`). The
  words then go to a `FastWordpieceTokenizer` without its own pre-tokenization.

The result is identical to FullTokenizer run on the same Python (its Unicode version).
`load_vocab` (reading a vocab.txt) and the special tokens live in `keras_bert.text.vocab`.

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

from keras_bert.core.errors import VocabError
from keras_bert.text.basic_tokenizer import Words, basic_tokenize, map_strings, row_ids
from keras_bert.text.core_wordpiece import CoreWordpiece
from keras_bert.text.unicode_tables import basic_tokenizer_tables
from keras_bert.text.vocab import (
    CLS_TOKEN,
    MASK_TOKEN,
    PAD_TOKEN,
    SEP_TOKEN,
    SPECIAL_TOKENS,
    UNK_TOKEN,
    check_unique_tokens,
    load_vocab,
)

# Strings made only of these characters take the fast path (see the module docstring).
_FAST_PATH_PATTERN = "[\t\n\r\x20-\x7e]*"


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
        return map_strings(text, self._tokenize_batch, "tokenize")

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
        return map_strings(text, functools.partial(self._tokenize_batch, offsets=unit),
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

    def core_ops(self) -> BertTokenizer:
        """This tokenizer in core TensorFlow ops only (no tensorflow-text op in its graph).

        For SavedModels served by images without tensorflow-text's ops (stock TF Serving
        registers FastBertNormalize only from 2.12): every string takes the exact path,
        with `keras_bert.text.core_wordpiece.CoreWordpiece` for WordPiece. Same ids and
        offsets, slower. `get_config` of it rebuilds the default tokenizer.

        >>> vocab = ["[PAD]", "[UNK]", "the", "great", "##est", "!", "cafe"]
        >>> BertTokenizer(vocab).core_ops().tokenize(["The greatest!", "Café"]).to_list()
        [[2, 3, 4, 5], [6]]
        """
        clone = BertTokenizer.from_config(self.get_config())
        clone._fast = None
        clone._wordpiece = CoreWordpiece(self._vocabulary, UNK_TOKEN, self._max_chars_per_word)
        return clone

    @property
    def tables(self) -> tf.Module | None:
        """What a SavedModel using this tokenizer must track: `core_ops()`'s WordPiece
        lookup table, or None (the default tokenizer holds constants only)."""
        return self._wordpiece if self._fast is None else None

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
        if self._fast is None:  # core_ops(): the exact path for every row
            return self._exact_tokenize(text, offsets)
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
        words = Words(text, self._tables, byte_offsets=offsets == "byte")
        too_long = words.chars.row_lengths() > self._max_chars_per_word
        inputs = tf.where(too_long, UNK_TOKEN, words.words)
        if offsets is None:
            pieces = self._wordpiece.tokenize(inputs)
            return words.by_row(pieces).merge_dims(1, 2)
        pieces, starts, ends = self._wordpiece.tokenize_with_offsets(inputs)
        word = row_ids(pieces)
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


def _utf8_length(cps):
    return (1 + tf.cast(cps >= 0x80, tf.int64) + tf.cast(cps >= 0x800, tf.int64)
            + tf.cast(cps >= 0x10000, tf.int64))


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
