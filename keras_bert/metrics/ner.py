"""CoNLL-2003 NER's official score (§5.3): `ner_chunks` finds entity chunks and
`ner_span_metrics` counts entity-level precision/recall/F1 the way the conlleval script
does. Fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence

from keras_bert.core.errors import ArgumentError


def _split_tag(tag: str) -> tuple[str, str]:
    # conlleval: "B-PER" -> ("B", "PER"); a tag without "-" ("O") has no type.
    prefix, dash, kind = tag.partition("-")
    return (prefix, kind) if dash else (tag, "")


def _chunk_ends(previous: str, previous_type: str, tag: str, kind: str) -> bool:
    """conlleval's endOfChunk: does a chunk end just before `tag`?"""
    if previous in ("B", "I") and tag in ("B", "O", "S"):
        return True
    if previous in ("E", "S"):
        return True
    return previous != "O" and previous_type != kind


def _chunk_starts(previous: str, previous_type: str, tag: str, kind: str) -> bool:
    """conlleval's startOfChunk: does a chunk start at `tag`?"""
    if tag in ("B", "S"):
        return True
    if previous in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag != "O" and previous_type != kind


def ner_chunks(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """The entity chunks of one tag sequence as conlleval finds them: (first token,
    last token, type). Works for IOB1, BIO (IOB2) and IOBES: `B-` and `S-` always start
    a chunk; `I-` (or `E-`) starts one after `O`, after a chunk's end or after another
    type.

    Args:
        tags: the tags of one sentence ("O", "B-PER", "I-LOC", ...).

    Returns:
        the chunks in order, as (first index, last index, type).

    Example:

    >>> ner_chunks(["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"])
    [(0, 1, 'PER'), (2, 2, 'PER'), (4, 4, 'LOC'), (5, 5, 'ORG')]
    """
    chunks, start = [], None
    previous, previous_type = "O", ""
    for i, full_tag in enumerate(list(tags) + ["O"]):  # the sentence boundary ends a chunk
        tag, kind = _split_tag(full_tag)
        if tag not in ("B", "I", "E", "S", "O") or (tag == "O") != (kind == ""):
            raise ArgumentError(f"Tag {full_tag!r} at position {i} is not 'O' or "
                                "B-/I-/E-/S- followed by a type.")
        if start is not None and _chunk_ends(previous, previous_type, tag, kind):
            chunks.append((start, i - 1, previous_type))
            start = None
        if _chunk_starts(previous, previous_type, tag, kind):
            start = i
        previous, previous_type = tag, kind
    return chunks


def ner_span_metrics(gold_tag_sequences: Sequence[Sequence[str]],
                     predicted_tag_sequences: Sequence[Sequence[str]]) -> dict[str, float]:
    """Entity-level precision, recall and F1 as conlleval computes them (CoNLL-2003's
    official score): a predicted chunk is correct when a gold chunk has the same first
    token, last token and type. Chunks never cross sentences. Fractions in [0, 1]; a
    ratio with a zero denominator is 0.

    Args:
        gold_tag_sequences: per sentence, the gold tag of each word (IOB1, BIO or IOBES).
        predicted_tag_sequences: per sentence, the predicted tags, same lengths.

    Returns:
        {"precision", "recall", "f1"}.

    Example:

    >>> gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    >>> ner_span_metrics(gold, [["B-PER", "I-PER", "O", "B-ORG"]])
    {'precision': 0.5, 'recall': 0.5, 'f1': 0.5}
    """
    if len(gold_tag_sequences) != len(predicted_tag_sequences):
        raise ArgumentError(f"{len(gold_tag_sequences)} gold and "
                            f"{len(predicted_tag_sequences)} predicted sentences.")
    correct = found_gold = found_guessed = 0
    for i, (gold, guessed) in enumerate(zip(gold_tag_sequences, predicted_tag_sequences)):
        if len(gold) != len(guessed):
            raise ArgumentError(f"Sentence {i} has {len(gold)} gold and {len(guessed)} "
                                "predicted tags.")
        gold_chunks, guessed_chunks = set(ner_chunks(gold)), set(ner_chunks(guessed))
        correct += len(gold_chunks & guessed_chunks)
        found_gold += len(gold_chunks)
        found_guessed += len(guessed_chunks)
    precision = correct / found_guessed if found_guessed else 0.0
    recall = correct / found_gold if found_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}
