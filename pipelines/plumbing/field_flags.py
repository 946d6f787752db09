"""Library field names as a command's flags, in one place.

The library's messages name its fields and arguments (`output_dir`, `overwrite=True`;
see `keras_bert.core.errors`), never flags. A command names the flag of a field
through `flag_of` alone: an options field's flags are declared with the field
(`keras_bert.core.checks.option`; `option_flags` reads them, and `add_options`
records the ones a command made in its parsed arguments); a library argument that is
not an options field has the flag `--<field>` unless `FIELD_FLAGS` lists it.
`in_flag_terms` renders an error for the command line: the culprit's flag first (an
`ArgumentError`'s `field`, or the field a command `blame`s for errors of a kind), and
each argument the message tells the user to pass (a `Setting`, see
`KerasBertError.advising`) as the flag that passes it. The message's text is never
rewritten.

Example:

>>> import argparse
>>> from keras_bert.core.errors import ArgumentError, OutputError, Setting
>>> args = argparse.Namespace(do_lower_case=True, overwrite=False)
>>> in_flag_terms(ArgumentError("lower_case must be True or False", field="lower_case"), args)
'--do_lower_case: lower_case must be True or False'
>>> in_flag_terms(OutputError.advising("'out' holds a run; pass ", Setting("overwrite", True),
...                                    " to replace it"), args)
"'out' holds a run; pass --overwrite to replace it"
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses

from keras_bert.core.checks import declaration
from keras_bert.core.errors import Setting

# Library argument (not an options field) -> its flag, where the flag is not `--<field>`.
FIELD_FLAGS = {"lower_case": "--do_lower_case", "task_name": "--task"}

# Where `add_options` records, in the parsed arguments, the flag of each options field
# it made a flag for (field -> its first flag).
OPTION_FLAGS_DEST = "_option_flags"


def option_flags(field: dataclasses.Field) -> tuple[str, ...]:
    """The flags of options field `field`: those its declaration names, else
    `--<field>` (none for a field declared with `flags=()`)."""
    declared = declaration(field)
    if declared is not None and declared.flags is not None:
        return declared.flags
    return (f"--{field.name}",)


def flag_of(field: str, args: argparse.Namespace | None = None) -> str:
    """The flag that sets library field `field` (in the command that parsed `args`).

    >>> flag_of("output_dir"), flag_of("lower_case")
    ('--output_dir', '--do_lower_case')
    """
    recorded = getattr(args, OPTION_FLAGS_DEST, None) or {}
    return recorded.get(field) or FIELD_FLAGS.get(field, f"--{field}")


def _has_flag(args: argparse.Namespace | None, field: str) -> bool:
    return args is not None and (field in (getattr(args, OPTION_FLAGS_DEST, None) or {})
                                 or flag_of(field)[2:].replace("-", "_") in vars(args))


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
    """`error`'s message (or `text`, for an error that names no `Setting`) for the
    command line that parsed `args`: each `Setting` it names spelt as the command's
    flag (when it has one), and prefixed with the flag of its `field` unless it names
    that flag already."""

    def spell(setting: Setting) -> str:
        if not _has_flag(args, setting.name):
            return str(setting)
        flag = flag_of(setting.name, args)
        return flag if setting.value is True else f"{flag}={str(setting.value).lower()}"

    spelt = getattr(error, "spelt", None)
    if getattr(error, "parts", None) and callable(spelt):
        text = spelt(spell)
    elif text is None:
        text = str(error)
    field = getattr(error, "field", None)
    if isinstance(field, str) and _has_flag(args, field) and flag_of(field, args) not in text:
        text = f"{flag_of(field, args)}: {text}"
    return text
