"""Library field names as a command's flags, in one place.

The library's messages name its fields and arguments (`output_dir`, `overwrite=True`;
see `keras_bert.core.errors`), never flags. A command reports them in its own terms
through `FIELD_FLAGS` alone: the flag of a field is `--<field>` unless listed there.
`in_flag_terms` renders an error for the command line: the culprit's flag first (an
`ArgumentError`'s `field`, or the field a command `blame`s for errors of a kind), and
an argument the message tells the user to pass, spelt as the library's keyword
(`pass overwrite=True`), as the flag that passes it (`pass --overwrite`).

Example:

>>> import argparse
>>> from keras_bert.core.errors import ArgumentError
>>> args = argparse.Namespace(do_lower_case=True, overwrite=False)
>>> in_flag_terms(ArgumentError("lower_case must be True or False", field="lower_case"), args)
'--do_lower_case: lower_case must be True or False'
>>> in_flag_terms(OSError("'out' holds a run; set overwrite=True to replace it"), args)
"'out' holds a run; pass --overwrite to replace it"
"""

from __future__ import annotations

import argparse
import contextlib
import re

# Library field -> its flag, where the flag is not `--<field>`.
FIELD_FLAGS = {"lower_case": "--do_lower_case", "task_name": "--task"}

# The library's keyword spelling of an argument to pass ("set overwrite=True"): the verb,
# the field, the value.
_KEYWORD = re.compile(r"\b(?:(?:set|pass) )?([a-z][a-z0-9_]*)=(True|False)\b")


def flag_of(field: str) -> str:
    """The flag that sets library field `field`.

    >>> flag_of("output_dir"), flag_of("lower_case")
    ('--output_dir', '--do_lower_case')
    """
    return FIELD_FLAGS.get(field, f"--{field}")


def _has_flag(args: argparse.Namespace | None, field: str) -> bool:
    return args is not None and flag_of(field)[2:].replace("-", "_") in vars(args)


@contextlib.contextmanager
def blame(field: str, *kinds: type[BaseException]):
    """Errors of `kinds` raised in the block are about library field `field` (for
    library errors that carry no field of their own: an `OutputError` about the output
    directory); `in_flag_terms` names its flag."""
    try:
        yield
    except kinds as e:
        if getattr(e, "field", None) is None:
            e.field = field
        raise


def in_flag_terms(error: BaseException, args: argparse.Namespace | None = None,
                  text: str | None = None) -> str:
    """`error`'s message (or `text`) for the command line that parsed `args`: prefixed
    with the flag of its `field` unless it names that flag already, and the library's
    keyword spelling of one of the command's boolean flags as the flag."""
    text = str(error) if text is None else text

    def keyword(match: re.Match) -> str:
        field, value = match.group(1), match.group(2)
        if not _has_flag(args, field):
            return match.group(0)
        flag = flag_of(field) if value == "True" else f"{flag_of(field)}=false"
        return f"pass {flag}" if match.group(0) != match.group(1) + "=" + value else flag

    text = _KEYWORD.sub(keyword, text)
    field = getattr(error, "field", None)
    if isinstance(field, str) and _has_flag(args, field) and flag_of(field) not in text:
        text = f"{flag_of(field)}: {text}"
    return text
