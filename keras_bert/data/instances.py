"""Pretraining instances from tokenized documents (paper §3.1 and Appendix A.2).

A document is a list of sentences, a sentence a list of WordPiece ids. With next
sentence prediction the instances are made exactly as `create_instances_from_document`
of google-research/bert makes them: a target length (`max_seq_length - 3`, or with
probability `short_seq_prob` a random shorter one, drawn once per document pass), segment
A from consecutive sentences, segment B the actual continuation or (50%, and always when
A's chunk is a single sentence) sentences from a random other document, the unused
sentences put back, and the pair truncated from a random end of the longer segment.
Without it, sentences are packed as RoBERTa's FULL-SENTENCES inputs: consecutive full
sentences, crossing into the next document with an extra [SEP], one segment.

One deliberate difference: a "random next" segment B never comes from A's own document.
The original draws a random document 10 times and, if it keeps hitting A's document,
takes B from it anyway, labelled random next: always so in a pool of one document (a
one-document corpus, or text without blank lines between documents), where A and B can
even be the same sentence. Here, after the same 10 draws, B comes from another document
drawn uniformly (one extra draw, in a pool of n documents about once in n**10 random
next pairs, so ordinary pools give the original's instances); in a pool with no other
document the pair becomes an actual-next one (counted as `nsp_actual_next_fallbacks`),
or a single-sentence chunk, which has no actual next, is dropped (counted as
`nsp_dropped_chunks`).

Masking is not done here: `keras_bert.data.MaskedLmMasker` masks the packed arrays.
"""

from __future__ import annotations

import collections
import itertools
import random

import numpy as np

Instance = collections.namedtuple("Instance", ["tokens", "segment_a_length", "is_random_next"])
Instance.__doc__ = """One training instance before masking.

`tokens` are the ids with [CLS] and [SEP]s, `segment_a_length` counts the leading tokens
of segment 0 ([CLS], A and the first [SEP]; all tokens without NSP) and
`is_random_next` is the next-sentence label (True: B is random)."""


def truncate_seq_pair(tokens_a: list[int], tokens_b: list[int], max_num_tokens: int,
                      rng: random.Random) -> tuple[list[int], list[int]]:
    """Truncates a pair to at most `max_num_tokens` tokens as the original does.

    The original removes one token at a time from the longer segment (from B on a tie),
    from its front or its back with probability 1/2 each. What survives depends only on
    how many tokens leave each segment and how many of those leave from the front, so
    this draws those counts (a binomial) instead of looping token by token.

    Example:

    >>> a, b = truncate_seq_pair(list(range(10)), [10, 11], 6, random.Random(0))
    >>> len(a), b
    (4, [10, 11])
    """
    len_a, len_b = len(tokens_a), len(tokens_b)
    excess = len_a + len_b - max_num_tokens
    if excess <= 0:
        return tokens_a, tokens_b
    # Tokens leave the longer segment until both are equal, then B and A alternate.
    keep_a, keep_b = len_a, len_b
    cut = min(excess, abs(len_a - len_b))
    if len_a > len_b:
        keep_a -= cut
    else:
        keep_b -= cut
    rest = excess - cut
    keep_b -= (rest + 1) // 2
    keep_a -= rest // 2
    return _trim(tokens_a, keep_a, rng), _trim(tokens_b, keep_b, rng)


def _trim(tokens: list[int], keep: int, rng: random.Random) -> list[int]:
    removed = len(tokens) - keep
    if removed == 0:
        return tokens
    from_front = rng.getrandbits(removed).bit_count()
    return tokens[from_front:from_front + keep]


def _randint_of(rng: random.Random):
    """`rng.randint`, or for a plain `random.Random` an equivalent that draws the same
    numbers from the same stream (CPython's `randint(a, b)` is `a + _randbelow(b - a + 1)`,
    rejection sampling on `getrandbits`) in one Python call instead of three: it is most
    of the calls instance creation makes. `tests/data/test_pretraining_data.py` checks that the
    two agree."""
    if type(rng) is not random.Random:  # a subclass may draw differently
        return rng.randint
    getrandbits = rng.getrandbits

    def randint(low: int, high: int) -> int:
        n = high - low + 1
        k = n.bit_length()
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return low + r

    return randint


def create_instances_from_document(documents: list, document_index: int, *, max_seq_length: int,
                                   short_seq_prob: float, cls_id: int, sep_id: int,
                                   rng: random.Random,
                                   stats: collections.Counter | None = None) -> list[Instance]:
    """Sentence-pair instances with next-sentence labels from one document.

    Args:
        documents: the pool of documents (random next segments are drawn from it).
        document_index: the document to cut into instances.
        max_seq_length: the sequence length, counting [CLS] and two [SEP]s.
        short_seq_prob: probability of a random shorter target length for this pass.
        cls_id, sep_id: the ids of [CLS] and [SEP].
        rng: the random source.
        stats: a Counter that gets `short_target_passes` added, and in a pool of one
            document `nsp_actual_next_fallbacks` and `nsp_dropped_chunks` (see the
            module docstring).

    Example:

    >>> docs = [[[5, 6], [7], [8, 9]], [[10, 11, 12]]]
    >>> for inst in create_instances_from_document(docs, 0, max_seq_length=8,
    ...         short_seq_prob=0.0, cls_id=2, sep_id=3, rng=random.Random(1)):
    ...     print(inst.tokens, inst.segment_a_length, inst.is_random_next)
    [2, 5, 6, 3, 10, 11, 12, 3] 4 True
    [2, 7, 3, 8, 9, 3] 3 False
    """
    document = documents[document_index]
    num_sentences = len(document)
    randint, uniform = _randint_of(rng), rng.random
    max_num_tokens = max_seq_length - 3
    # Usually fill the sequence; sometimes aim shorter to match fine-tuning inputs. The
    # target is a soft goal, `max_seq_length` the hard limit.
    target_length = max_num_tokens
    if uniform() < short_seq_prob:
        target_length = randint(2, max_num_tokens)
        if stats is not None:
            stats["short_target_passes"] += 1

    instances = []
    chunk: list[list[int]] = []
    chunk_length = 0
    i = 0
    while i < num_sentences:
        sentence = document[i]
        chunk.append(sentence)
        chunk_length += len(sentence)
        if i == num_sentences - 1 or chunk_length >= target_length:
            # Segment A: the first `a_end` sentences of the chunk.
            a_end = randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = list(itertools.chain.from_iterable(chunk[:a_end]))
            random_index = None
            if len(chunk) == 1 or uniform() < 0.5:
                random_index = _other_document(len(documents), document_index, randint)
                if random_index is None:  # no other document in the pool
                    if len(chunk) == 1:
                        if stats is not None:
                            stats["nsp_dropped_chunks"] += 1
                        chunk, chunk_length = [], 0
                        i += 1
                        continue
                    if stats is not None:
                        stats["nsp_actual_next_fallbacks"] += 1
            if random_index is not None:
                is_random_next = True
                target_b_length = target_length - len(tokens_a)
                random_document = documents[random_index]
                tokens_b = []
                for j in range(randint(0, len(random_document) - 1), len(random_document)):
                    tokens_b.extend(random_document[j])
                    if len(tokens_b) >= target_b_length:
                        break
                # The chunk's unused sentences go back so they are not wasted.
                i -= len(chunk) - a_end
            else:
                is_random_next = False
                tokens_b = list(itertools.chain.from_iterable(chunk[a_end:]))
            tokens_a, tokens_b = truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            instances.append(Instance([cls_id, *tokens_a, sep_id, *tokens_b, sep_id],
                                      len(tokens_a) + 2, is_random_next))
            chunk, chunk_length = [], 0
        i += 1
    return instances


def _other_document(num_documents: int, document_index: int, randint) -> int | None:
    """A random document other than `document_index`, None if there is none: the
    original's 10 draws, then (where it would keep the same document) a uniform draw
    among the others. `randint` is `rng.randint` (or `_randint_of(rng)`)."""
    if num_documents < 2:
        return None
    for _ in range(10):
        random_index = randint(0, num_documents - 1)
        if random_index != document_index:
            return random_index
    random_index = randint(0, num_documents - 2)
    return random_index + (random_index >= document_index)


def create_packed_instances(documents: list, *, max_seq_length: int, short_seq_prob: float,
                            cls_id: int, sep_id: int, rng: random.Random,
                            stats: collections.Counter | None = None) -> list[Instance]:
    """Single-segment instances without NSP: RoBERTa's FULL-SENTENCES packing.

    Consecutive full sentences fill `[CLS] ... [SEP]` up to the target length and run on
    into the next document after an extra [SEP]; a sentence longer than the target is
    split. With probability `short_seq_prob` an instance's target is a random shorter one.

    Example:

    >>> docs = [[[5, 6], [7]], [[8, 9, 10]], [[11, 12, 13, 14, 15, 16, 17, 18]]]
    >>> for inst in create_packed_instances(docs, max_seq_length=9, short_seq_prob=0.0,
    ...                                     cls_id=2, sep_id=3, rng=random.Random(0)):
    ...     print(inst.tokens)
    [2, 5, 6, 7, 3, 8, 9, 10, 3]
    [2, 11, 12, 13, 14, 15, 16, 17, 3]
    [2, 18, 3]
    """
    max_num_tokens = max_seq_length - 2
    randint = _randint_of(rng)

    def draw_target() -> int:
        if rng.random() < short_seq_prob:
            if stats is not None:
                stats["short_target_passes"] += 1
            return randint(2, max_num_tokens)
        return max_num_tokens

    instances = []

    def emit(tokens):
        instances.append(Instance([cls_id, *tokens, sep_id], len(tokens) + 2, False))

    content: list[int] = []
    target_length = draw_target()
    for document in documents:
        separator = [sep_id] if content else []
        for sentence in document:
            if content and len(content) + len(separator) + len(sentence) > target_length:
                emit(content)
                content, separator = [], []
                target_length = draw_target()
            content += separator + sentence
            separator = []
            while len(content) > target_length:  # only a sentence longer than the target
                emit(content[:target_length])
                content = content[target_length:]
                target_length = draw_target()
    if content:
        emit(content)
    return instances


def create_instances(documents: list, *, max_seq_length: int, short_seq_prob: float,
                     dupe_factor: int, next_sentence_prediction: bool, cls_id: int,
                     sep_id: int, rng: random.Random,
                     stats: collections.Counter | None = None) -> list[Instance]:
    """All instances of a pool of documents, `dupe_factor` passes, shuffled.

    As the original: the documents are shuffled once, every pass visits each document,
    and the instances of all passes are shuffled together. Without NSP each pass packs
    a freshly shuffled document order, so the passes differ.

    Example:

    >>> docs = [[[5, 6], [7, 8]], [[9], [10, 11]], [[12, 13, 14]]]
    >>> instances = create_instances(docs, max_seq_length=16, short_seq_prob=0.1,
    ...     dupe_factor=2, next_sentence_prediction=True, cls_id=2, sep_id=3,
    ...     rng=random.Random(0))
    >>> len(instances)
    8
    """
    documents = list(documents)
    rng.shuffle(documents)
    instances = []
    for _ in range(dupe_factor):
        if next_sentence_prediction:
            for index in range(len(documents)):
                instances.extend(create_instances_from_document(
                    documents, index, max_seq_length=max_seq_length,
                    short_seq_prob=short_seq_prob, cls_id=cls_id, sep_id=sep_id, rng=rng,
                    stats=stats))
        else:
            instances.extend(create_packed_instances(
                documents, max_seq_length=max_seq_length, short_seq_prob=short_seq_prob,
                cls_id=cls_id, sep_id=sep_id, rng=rng, stats=stats))
            rng.shuffle(documents)
    rng.shuffle(instances)
    return instances


def instances_to_arrays(instances: list[Instance], max_seq_length: int) -> dict[str, np.ndarray]:
    """Pads instances into int64 arrays: `input_ids`, `input_mask`, `segment_ids` shaped
    [n, max_seq_length] and `next_sentence_labels` shaped [n, 1].

    Example:

    >>> arrays = instances_to_arrays([Instance([2, 5, 3, 6, 3], 3, True)], 6)
    >>> arrays["input_ids"].tolist(), arrays["segment_ids"].tolist()
    ([[2, 5, 3, 6, 3, 0]], [[0, 0, 0, 1, 1, 0]])
    """
    lengths = np.fromiter((len(inst.tokens) for inst in instances), np.int64, len(instances))
    segment_a = np.fromiter((inst.segment_a_length for inst in instances), np.int64,
                            len(instances))
    positions = np.arange(max_seq_length)
    input_mask = positions < lengths[:, None]
    input_ids = np.zeros((len(instances), max_seq_length), np.int64)
    # Boolean assignment fills row by row, so the flat ids land in their rows.
    input_ids[input_mask] = np.fromiter(
        itertools.chain.from_iterable(inst.tokens for inst in instances), np.int64,
        int(lengths.sum()))
    return {
        "input_ids": input_ids,
        "input_mask": input_mask.astype(np.int64),
        "segment_ids": (input_mask & (positions >= segment_a[:, None])).astype(np.int64),
        "next_sentence_labels": np.fromiter(
            (inst.is_random_next for inst in instances), np.int64, len(instances))[:, None],
    }
