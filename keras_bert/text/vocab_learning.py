"""Learning a WordPiece vocabulary (a Google-style vocab.txt) from a text corpus.

Words are counted while the corpus streams through `tf.data` (only the word counts are
kept in memory), split exactly as `BertTokenizer` splits them (`basic_tokenize`), and
tensorflow-text's WordPiece learner (the algorithm behind `bert_vocab_from_dataset`)
picks the pieces. The file starts with the special tokens in Google's order:

    [PAD] [unused0] ... [unused98] [UNK] [CLS] [SEP] [MASK] [unused99] ...

so that, as in Google's vocabularies, [PAD]=0, [UNK]=100, [CLS]=101, [SEP]=102 and
[MASK]=103 when at least 99 `[unusedN]` slots are reserved.
"""

from __future__ import annotations

import collections
import itertools
import os
from collections.abc import Iterable, Sequence

import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner
from tqdm.auto import tqdm

from keras_bert.core import fileio, input_files
from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.text.basic_tokenizer import basic_tokenize
from keras_bert.text.vocab import (
    CLS_TOKEN,
    MASK_TOKEN,
    PAD_TOKEN,
    SEP_TOKEN,
    UNK_TOKEN,
    check_unique_tokens,
)

_UNUSED_BEFORE_UNK = 99  # Google's vocabularies put [UNK] at id 100


def reserved_tokens(num_unused: int = _UNUSED_BEFORE_UNK) -> list[str]:
    """The special tokens and `num_unused` `[unusedN]` slots, in Google's order.

    Example:

    >>> reserved_tokens(2)
    ['[PAD]', '[unused0]', '[unused1]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    >>> len(reserved_tokens(994))  # bert-base-uncased: [MASK] is id 103, 999 reserved
    999
    """
    _check_int("num_unused", num_unused, 0)
    unused = [f"[unused{i}]" for i in range(num_unused)]
    head = min(num_unused, _UNUSED_BEFORE_UNK)
    return ([PAD_TOKEN] + unused[:head] + [UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN]
            + unused[head:])


def _check_int(name: str, value, minimum: int, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ArgumentError(f"{name} must be an integer >= {minimum}"
                            f"{' or None' if optional else ''}, got {value!r}.", field=name)


def _is_gzip(path: str) -> bool:
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _is_binary(path: str, sniff_bytes: int = 8192) -> bool:
    """Whether a (possibly gzip) file starts with a NUL byte in its first `sniff_bytes`:
    a model, an archive, UTF-16 text — nothing WordPiece should learn from."""
    import gzip

    with tf.io.gfile.GFile(path, "rb") as raw:
        head = raw.read(sniff_bytes)
        if head[:2] == b"\x1f\x8b":
            raw.seek(0)
            try:
                head = gzip.GzipFile(fileobj=raw).read(sniff_bytes)
            except (OSError, EOFError):
                return False  # a broken gzip is the reader's to report
    return b"\x00" in head


def count_words(files: Sequence[str], lower_case: bool = True, max_lines: int | None = None,
                batch_size: int = 1024, progress: bool = True) -> collections.Counter:
    """Counts the words of text files (plain or gzip, UTF-8), streaming.

    Args:
        files: text files; lines may hold any number of sentences, blank lines are
            skipped. Invalid UTF-8 reads as U+FFFD, which BERT's cleaning drops.
        lower_case: count lower-cased, accent-stripped words (uncased vocabularies).
        max_lines: stop after this many non-empty lines.
        batch_size: lines tokenized per step.
        progress: show a tqdm progress bar (text bytes read; with a total unless some
            input is gzip).

    Returns:
        a `collections.Counter` of words (str).
    """
    files = list(files)
    is_gzip = [_is_gzip(f) for f in files]
    lines = None
    # One reader per run of files with the same compression, in the given order.
    for gzipped, run in itertools.groupby(zip(files, is_gzip), key=lambda fg: fg[1]):
        part = tf.data.TextLineDataset([f for f, _ in run],
                                       compression_type="GZIP" if gzipped else "")
        lines = part if lines is None else lines.concatenate(part)
    lines = lines.filter(lambda line: tf.strings.length(line) > 0)
    if max_lines is not None:
        lines = lines.take(max_lines)
    batches = lines.batch(batch_size).map(
        lambda batch: (_unique_word_counts(basic_tokenize(batch, lower_case)),
                       tf.reduce_sum(tf.strings.length(batch)) + tf.size(batch)),
        num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)
    total = None if any(is_gzip) else sum(tf.io.gfile.stat(f).length for f in files)
    counts: collections.Counter = collections.Counter()
    with tqdm(total=total, unit="B", unit_scale=True, desc="counting words",
              disable=not progress) as bar:
        for (words, word_counts), nbytes in batches:
            counts.update(dict(zip(words.numpy().tolist(), word_counts.numpy().tolist())))
            bar.update(int(nbytes))
        if total is not None and max_lines is None:
            bar.update(total - bar.n)  # blank lines are skipped, not counted as read
    return collections.Counter({w.decode("utf-8"): c for w, c in counts.items()})


def _unique_word_counts(words):
    unique, _, counts = tf.unique_with_counts(words.flat_values)
    return unique, counts


def learn_vocab(corpus: str | Sequence[str], vocab_size: int, lower_case: bool = True,
                num_unused: int = _UNUSED_BEFORE_UNK, max_lines: int | None = None,
                min_count: int = 10, max_unique_chars: int = 1000,
                max_token_length: int = 50, num_iterations: int = 4,
                progress: bool = True) -> list[str]:
    """Learns a WordPiece vocabulary of exactly `vocab_size` tokens from text files.

    The learner (tensorflow-text) searches for the frequency threshold that gives at
    most `vocab_size` tokens (at most 5% fewer); any shortfall is filled with more
    `[unusedN]` slots after the reserved ones (the special ids do not move), so the file
    has exactly `vocab_size` lines. Every kept character is in it both as a word start
    and as a `##` piece.

    Args:
        corpus: text files as comma-separated globs, or a list of globs (plain or
            gzip; see `count_words`).
        vocab_size: the number of tokens to produce, reserved ones included.
        lower_case: learn an uncased vocabulary (use the same setting in BertTokenizer).
        num_unused: `[unusedN]` slots to reserve (at least; see above).
        max_lines: read only this many non-empty lines.
        min_count: the lowest frequency threshold the search may use.
        max_unique_chars: the alphabet size; words with rarer characters are skipped.
        max_token_length: longer words are not counted.
        num_iterations: refinement passes of the learner.
        progress: show progress bars.

    Returns:
        the tokens in id order (write them with `write_vocab`).

    Raises:
        ArgumentError: an argument out of range (named by `field`), e.g. `max_lines=0`
            or a `vocab_size` without room for the pieces.
        InputNotFoundError: a corpus pattern matches no file (or names a directory).
        DataError: the corpus has no words, or a file of it is binary.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("The cat sat.\\nThe cats sat!\\n" * 20)
    >>> vocab = learn_vocab(path, vocab_size=40, num_unused=2, min_count=1, progress=False)
    >>> len(vocab), vocab[:8]
    (40, ['[PAD]', '[unused0]', '[unused1]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', '[unused2]'])
    """
    if not isinstance(lower_case, bool):
        raise ArgumentError(f"lower_case must be True or False, got {lower_case!r}.",
                            field="lower_case")
    _check_int("vocab_size", vocab_size, 1)
    _check_int("max_lines", max_lines, 1, optional=True)
    for name, value in (("min_count", min_count), ("max_unique_chars", max_unique_chars),
                        ("max_token_length", max_token_length),
                        ("num_iterations", num_iterations)):
        _check_int(name, value, 1)
    reserved = reserved_tokens(num_unused)
    if vocab_size <= len(reserved):
        raise ArgumentError(f"vocab_size={vocab_size} leaves no room beyond the "
                            f"{len(reserved)} reserved tokens; raise vocab_size or lower "
                            "num_unused.", field="vocab_size")
    files = input_files.expand_patterns(corpus, what="corpus")
    binary = [f for f in files if _is_binary(f)]
    if binary:
        raise DataError("not a text file (it holds NUL bytes); give plain or gzip UTF-8 "
                        f"text{f' (and {len(binary) - 1} more such files)' if binary[1:] else ''}.",
                        path=binary[0])
    counts = count_words(files, lower_case, max_lines, progress=progress)
    if not counts:
        raise DataError(f"No words in the corpus {corpus!r} ({len(files)} files); is it "
                        "empty?")
    if progress:
        print(f"learning {vocab_size} WordPieces from {len(counts)} distinct words "
              f"({sum(counts.values())} in all)...", flush=True)
    learned = learner.learn(
        counts, vocab_size, reserved, lower_thresh=min_count,
        max_token_length=max_token_length, max_unique_chars=max_unique_chars,
        num_iterations=num_iterations)
    pieces = learned[len(reserved):]
    if len(reserved) + len(pieces) > vocab_size:
        pieces = _drop_rarest(pieces, vocab_size - len(reserved))
    shortfall = vocab_size - len(reserved) - len(pieces)
    extra = [f"[unused{num_unused + i}]" for i in range(shortfall)]
    return reserved + extra + pieces


def _drop_rarest(pieces: list[str], keep: int) -> list[str]:
    """Drops the last (rarest) multi-character pieces; characters always stay."""
    def is_char(piece):
        return len(piece.removeprefix("##")) == 1
    chars = sum(map(is_char, pieces))
    if chars > keep:
        raise ArgumentError(f"The corpus has {chars} single-character pieces, more than the "
                            f"{keep} free slots; raise vocab_size or lower max_unique_chars.",
                            field="vocab_size")
    extra = len(pieces) - keep
    dropped = set()
    for i in range(len(pieces) - 1, -1, -1):
        if len(dropped) == extra:
            break
        if not is_char(pieces[i]):
            dropped.add(i)
    return [p for i, p in enumerate(pieces) if i not in dropped]


def write_vocab(tokens: Iterable[str], path: str | os.PathLike) -> None:
    """Writes one token per line, atomically (`keras_bert.core.fileio.atomic_write`: a hidden
    temporary file renamed into place), locally or to any `tf.io.gfile` filesystem.

    Raises:
        ArgumentError: a token is empty or has surrounding whitespace (it would not read
            back from a vocab.txt).
        VocabError: a token is repeated (`load_vocab` would refuse the file).
        OutputError: `path` is a directory or cannot be written.
    """
    path = os.fspath(path)
    tokens = list(tokens)
    bad = [t for t in tokens if not t or t != t.strip() or "\n" in t]
    if bad:
        raise ArgumentError(f"Tokens {bad[:5]!r} are empty or have surrounding whitespace; "
                            "they would not read back from a vocab.txt.", field="tokens")
    check_unique_tokens(tokens)
    fileio.check_writable(path, kind="file", what="vocab file")
    with fileio.atomic_write(path) as f:
        f.write("".join(t + "\n" for t in tokens))
