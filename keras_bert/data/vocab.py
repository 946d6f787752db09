"""The WordPiece vocabulary as the pretraining data needs it: the ids of the special
tokens and which pieces continue a word."""

from __future__ import annotations

import os

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class Vocab:
    """A BERT `vocab.txt`: one token a line, the id is the line number.

    Args:
        tokens: the tokens in id order.

    Example:

    >>> vocab = Vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "play", "##ing"])
    >>> vocab.cls_id, vocab.sep_id, vocab.mask_id, len(vocab)
    (2, 3, 4, 7)
    >>> vocab.continues_word
    [False, False, False, False, False, False, True]
    """

    def __init__(self, tokens: list[str]):
        missing = [t for t in SPECIAL_TOKENS if t not in tokens]
        if missing:
            raise ValueError(f"The vocab lacks the special tokens {missing}; a BERT vocab.txt "
                             f"must hold all of {list(SPECIAL_TOKENS)}.")
        self.tokens = list(tokens)
        # The first occurrence wins, as in Google's `load_vocab` reading order.
        index = {}
        for i, token in enumerate(self.tokens):
            index.setdefault(token, i)
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            index[t] for t in SPECIAL_TOKENS)
        # Whole-word masking glues a "##" piece to the word before it.
        self.continues_word = [t.startswith("##") for t in self.tokens]

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def from_file(cls, vocab_file: str | os.PathLike) -> Vocab:
        """Reads a vocab.txt the way Google's `tokenization.load_vocab` does (each line
        stripped, ids in line order).

        Example:

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "vocab.txt"
        >>> _ = path.write_text("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\nhello\\n")
        >>> len(Vocab.from_file(path))
        6
        """
        try:
            with open(vocab_file, encoding="utf-8") as f:
                tokens = [line.strip() for line in f]
        except FileNotFoundError:
            raise FileNotFoundError(f"--vocab_file {vocab_file} does not exist.") from None
        return cls(tokens)
