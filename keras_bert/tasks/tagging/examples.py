"""A tagged sentence, and CoNLL-2003 read from tensorflow-datasets (`conll2003`: the
`tokens` and the `ner` tags by name; tfds keeps no line numbers, so `line` is 0)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from keras_bert.core.errors import DataError
from keras_bert.tasks.tfds_source import class_names, record_text, require_features


@dataclasses.dataclass(frozen=True)
class NerExample:
    """One sentence.

    Attributes:
        words: the words, in order.
        tags: one NER tag per word, or None for unlabelled data.
        line: the file line of the first word (1-based).
    """

    words: tuple[str, ...]
    tags: tuple[str, ...] | None = None
    line: int = 0


# --- tensorflow-datasets --------------------------------------------------------------

CONLL2003_TFDS_TAGS = frozenset(["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC",
                                 "B-MISC", "I-MISC"])
"""The `ner` class names of tfds's conll2003 (in any order)."""
TFDS_SPLITS = {"train": "train", "dev": "dev", "valid": "dev", "test": "test"}


def tag_name(tag, labels: Sequence[str]):
    """A tag given as a class index (an int in range) as its name; anything else as it is."""
    if isinstance(tag, int) and not isinstance(tag, bool) and 0 <= tag < len(labels):
        return labels[tag]
    return tag


def tfds_reader(builder, name: str):
    """The reader of conll2003 from the tfds builder `builder`."""
    require_features(builder, name, ("tokens", "ner"))
    feature = builder.info.features["ner"]
    tags = class_names(getattr(feature, "feature", feature), name, "ner tag",
                       CONLL2003_TFDS_TAGS)

    def read(as_numpy, dataset, where: str, labelled: bool) -> list[NerExample]:
        examples = []
        for record, r in enumerate(as_numpy(dataset)):
            words = tuple(record_text(w) for w in r["tokens"])
            if not words:
                continue  # no sentence (the file reader skips blank lines alike)
            sentence_tags = None
            if labelled:
                ids = [int(t) for t in r["ner"]]
                if len(ids) != len(words):
                    raise DataError(f"record {record} has {len(words)} tokens but "
                                    f"{len(ids)} ner tags.", path=where)
                bad = [t for t in ids if not 0 <= t < len(tags)]
                if bad:
                    raise DataError(f"record {record}: ner tag index {bad[0]} is not one "
                                    f"of the {len(tags)} tags {tags}.", path=where)
                sentence_tags = tuple(tags[t] for t in ids)
            examples.append(NerExample(words, sentence_tags))
        return examples

    return read
