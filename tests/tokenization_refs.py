"""Google's reference tokenization (tests/fixtures/tokenization/, made by
scripts/make_tokenization_refs.py with google-research/bert's tokenization.py): the texts,
their reference ids, and which edge cases this Python's Unicode database can compare.

A helper module for the tests (not a test file itself).
"""

import json
import os
import unicodedata

import numpy as np

DATA = os.path.join(os.path.dirname(__file__), "fixtures", "tokenization")
GROUPS = ("corpus", "glue", "squad", "edge")


def _load_references():
    with open(os.path.join(DATA, "texts.json"), encoding="utf-8") as f:
        texts = json.load(f)
    with np.load(os.path.join(DATA, "refs.npz")) as refs:
        refs = dict(refs)  # an NpzFile would re-read an array on every access
    return texts, refs


TEXTS, REFS = _load_references()
ALL_TEXTS = [t for group in GROUPS for t in TEXTS[group]]
NUM_REAL = len(ALL_TEXTS) - len(TEXTS["edge"])
INVALID_UTF8 = [bytes.fromhex(h) for h in TEXTS["invalid_utf8_hex"]]
INPUTS = [t.encode("utf-8") for t in ALL_TEXTS] + INVALID_UTF8


def ragged_ref(key):
    values, splits = REFS[f"{key}_ids"], REFS[f"{key}_splits"]
    return [values[a:b].tolist() for a, b in zip(splits[:-1], splits[1:])]


def comparable(i: int) -> bool:
    """False for edge cases with characters this Python's Unicode database sees
    differently from the one that made the references."""
    if i < NUM_REAL or i >= len(ALL_TEXTS):
        return True
    props = TEXTS["edge_char_properties"]
    return all(props[c] == [unicodedata.category(c), unicodedata.combining(c), c.lower(),
                            unicodedata.normalize("NFD", c)]
               for c in ALL_TEXTS[i] if not c.isascii())
