"""keras_bert's exceptions: what went wrong, named by the thing that was wrong.

Library functions raise these with messages that name fields, files and lines (never
command-line flags); the `keras-bert` command maps them to exit codes: a subclass of
`UserInputError` is a user's mistake (exit 2, one line on stderr), anything else is a
failure (exit 1). Each class also derives from the builtin a caller would expect
(`ValueError`, `FileNotFoundError`, ...), so `except ValueError` keeps working.

Example:

>>> try:
...     raise DataError("line 3 has 2 columns, expected 3", path="dev.tsv", line=3)
... except ValueError as e:
...     print(e)
dev.tsv:3: line 3 has 2 columns, expected 3
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class Setting:
    """An argument that a message tells the user to pass (`overwrite=True`), kept apart
    from the message's text (see `KerasBertError.advising`) so that a caller can spell
    it in its own terms: the `keras-bert` commands as its flag (`--overwrite`).

    >>> str(Setting("overwrite", True))
    'overwrite=True'
    """

    name: str
    value: object

    def __str__(self):
        return f"{self.name}={self.value!r}"


class KerasBertError(Exception):
    """Base class of every error keras_bert raises on purpose.

    One made with `advising` tells the user which argument to pass: its message is text
    and `Setting`s; `str()` spells each setting as the library's keyword, `spelt` as
    the caller asks.

    >>> e = OutputError.advising("'out' holds shards; pass ", Setting("overwrite", True),
    ...                          " to replace them.")
    >>> str(e)
    "'out' holds shards; pass overwrite=True to replace them."
    >>> e.spelt(lambda setting: "--" + setting.name)
    "'out' holds shards; pass --overwrite to replace them."
    """

    parts: tuple = ()  # the message as text and `Setting`s (`advising`)

    @classmethod
    def advising(cls, *parts, **kwargs):
        """A `cls` error (`kwargs` go to it) whose message is `parts`, text and
        `Setting`s, joined."""
        error = cls("".join(map(str, parts)), **kwargs)
        error.parts = parts
        return error

    def spelt(self, spell: Callable[[Setting], str]) -> str:
        """The message with each `Setting` in it spelt by `spell`; the message as it is
        when it names none."""
        if not self.parts:
            return str(self)
        return "".join(spell(p) if isinstance(p, Setting) else p for p in self.parts)


class UserInputError(KerasBertError):
    """A mistake in what the user gave (an argument, a file, a combination of them) that
    the user can fix; the message says what was wrong and what to do."""


class ArgumentError(UserInputError, ValueError):
    """An argument or option value is out of range or does not fit the others.

    `field` names it as the library calls it (`batch_size`, not `--batch_size`).
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class DataError(UserInputError, ValueError):
    """Input data is malformed: a row, a record, a JSON field. `path` and `line` (1-based)
    locate it when known and prefix the message."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path, self.line = path, line
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {message}" if path else message)


class VocabError(DataError):
    """A vocabulary file is malformed (duplicates, missing special tokens) or does not
    belong to the model or data it is used with."""


class CheckpointError(UserInputError, ValueError):
    """A checkpoint is unreadable or does not fit the model (a missing or mis-shaped
    variable, a config without a required field, a vocab of another size)."""


class MismatchError(UserInputError, ValueError):
    """Two inputs that must agree do not (a vocab and a checkpoint, TFRecords and a
    config, a run directory and new settings); the message names both."""


class VocabMismatchError(MismatchError, ArgumentError):
    """A vocab file given for a model is not the model's own (another size, other tokens
    on its lines): a `MismatchError` whose message names both files, and an
    `ArgumentError` of `field` "vocab_file" (the argument to change)."""

    def __init__(self, message: str, field: str | None = "vocab_file"):
        super().__init__(message, field=field)


class InputNotFoundError(UserInputError, FileNotFoundError):
    """A named input (file, directory, pattern) does not exist or is of the wrong kind."""


class CheckpointUnavailableError(InputNotFoundError):
    """A checkpoint named by `hf://...` or a Google release name is not in the cache and
    cannot be downloaded now (no network, offline mode, a download cut short); the
    message names it and how to work offline. An `InputNotFoundError`: exit 2."""


class OutputError(UserInputError, OSError):
    """An output location cannot be used: not writable, a file where a directory is
    needed, or already holding something that must not be overwritten."""


class OutputExistsError(OutputError, FileExistsError):
    """The output location already holds something that must not be overwritten."""


class Terminated(KeyboardInterrupt):
    """SIGTERM stopped the work (a scheduler's preemption notice, `kill`). A
    `KeyboardInterrupt`, as Ctrl-C raises, so that no `except Exception` on the way
    swallows it and every cleanup (temporaries, half-written outputs) runs; the command
    exits 143. `signal_name` tells it from Ctrl-C's plain KeyboardInterrupt."""

    signal_name = "SIGTERM"
