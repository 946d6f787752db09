"""Checking an options dataclass (`BertConfig`, `PretrainingDataOptions`,
`PretrainingOptions`, `FinetuneOptions`): one style for all of them.

Each field's type comes from its annotation ("int", "float", "bool", "str", optionally
"| None"). A field made with `option` declares, once, what it means (`help`), its range
or choices and its command-line flags: `OptionChecks` checks the declared range, and the
`keras-bert` commands build their flags from the same declaration
(`keras_bert.pipelines.plumbing.arguments.add_options`). Checks between fields are stated in the
dataclass's `__post_init__` through the `OptionChecks`. Every problem is collected (one
a field), then one `ArgumentError` names them all: "Invalid <what>: <field> must be ...,
got ...; <field> ...". Its `field` is the first field named, so the command line can
point at the flag.

Example:

>>> import dataclasses
>>> @dataclasses.dataclass
... class Options:
...     steps: int = option(10, "updates", at_least=1)
...     rate: float = 0.1
...     def __post_init__(self):
...         checks = OptionChecks("toy options", self)
...         checks.within("rate", 0.0, 1.0)
...         checks.raise_if_any()
>>> Options(steps=0, rate=2.0)
Traceback (most recent call last):
...
keras_bert.core.errors.ArgumentError: Invalid toy options: steps must be >= 1, got 0; rate must be in [0.0, 1.0], got 2.0.
>>> Options(steps="3")
Traceback (most recent call last):
...
keras_bert.core.errors.ArgumentError: Invalid toy options: steps must be an integer, got '3'.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

from keras_bert.core.errors import ArgumentError

# annotation -> (accepted types, what the message calls it)
_KINDS = {
    "int": (numbers.Integral, "an integer"),
    "float": (numbers.Real, "a finite number"),
    "bool": (bool, "True or False"),
    "str": (str, "a string"),
}


_DECLARED = "keras_bert.option"  # the key of a field's `Declared` in its metadata
# The default of an `option` that has none: its flag is required.
REQUIRED = dataclasses.MISSING


@dataclasses.dataclass(frozen=True)
class Declared:
    """What an options field made with `option` declares besides its type and default:
    what it means (`help`: the command line shows it as the flag's help), its range
    (`low`, open if `low_open`; `high`, closed) or `choices`, and its command-line
    `flags` (None: `--<field>`; empty: none) with the `metavar` its help shows (None:
    argparse's own)."""

    help: str
    low: float | None = None
    low_open: bool = False
    high: float | None = None
    choices: tuple | None = None
    flags: tuple[str, ...] | None = None
    metavar: str | None = None

    def check(self, checks: OptionChecks, field: str) -> None:
        """Records in `checks` what is wrong with `field`'s value by this declaration."""
        if self.choices is not None:
            checks.one_of(field, self.choices)
        elif self.high is not None:
            checks.within(field, self.low, self.high, low_open=self.low_open)
        elif self.low is not None:
            (checks.greater_than if self.low_open else checks.at_least)(self.low, field)


def option(default, help: str, *, at_least=None, greater_than=None, at_most=None,
           choices=None, flags=None, metavar=None):
    """A field of an options dataclass declared once: its `default` (`REQUIRED`: none,
    the flag must be given; declare such fields in a `kw_only` dataclass), what it means
    (`help`), its range (`at_least` or `greater_than`, and `at_most`) or `choices`, and
    its command-line flags where they are not `--<field>` (`flags=()`: no flag) with
    their `metavar`. An `OptionChecks` checks the range; `declaration` reads it back.

    Example:

    >>> @dataclasses.dataclass
    ... class Options:
    ...     rate: float = option(0.1, "the rate", at_least=0, at_most=1)
    >>> declaration(dataclasses.fields(Options)[0])
    Declared(help='the rate', low=0, low_open=False, high=1, choices=None, flags=None,
             metavar=None)
    """
    if at_least is not None and greater_than is not None:
        raise TypeError("give at_least or greater_than, not both")
    low = at_least if greater_than is None else greater_than
    if at_most is not None and low is None:
        raise TypeError("at_most needs at_least or greater_than")
    declared = Declared(help, low, greater_than is not None, at_most,
                        None if choices is None else tuple(choices),
                        None if flags is None else tuple(flags), metavar)
    return dataclasses.field(default=default, metadata={_DECLARED: declared})


def declaration(field: dataclasses.Field) -> Declared | None:
    """The `Declared` of a field made with `option`; None for any other field."""
    return field.metadata.get(_DECLARED)


class OptionChecks:
    """Collects what is wrong with `options` (a dataclass instance), checking each
    field's type from its annotation and the range or choices it declares (`option`)
    at once; `raise_if_any` raises one `ArgumentError` for all of it.

    A field is reported once: range checks skip a field that is None (an optional
    field left unset) and one already found wrong (a wrong type, a value out of its
    declared range), and a check that `needs` such a field is skipped too.
    """

    def __init__(self, what: str, options):
        self.what = what
        self.options = options
        self.problems: list[tuple[str, str]] = []  # (field, "field must be ..., got ...")
        self._wrong: set[str] = set()
        fields = dataclasses.fields(options)
        for field in fields:
            kind, _, rest = str(field.type).partition(" | ")
            value = getattr(options, field.name)
            if kind not in _KINDS or (value is None and rest == "None"):
                continue
            types, called = _KINDS[kind]
            wrong = not isinstance(value, types) or (kind != "bool" and isinstance(value, bool))
            if kind == "float" and not wrong:
                wrong = not math.isfinite(value)
            if wrong:
                self.fail(field.name, f"must be {called}, got {value!r}")
        for field in fields:
            if declaration(field) is not None:
                declaration(field).check(self, field.name)

    def value(self, field: str):
        return getattr(self.options, field)

    def _skip(self, field: str) -> bool:
        return field in self._wrong or self.value(field) is None

    def fail(self, field: str, problem: str) -> None:
        """Records `problem` ("must be ..., got ...") for `field`."""
        self.problems.append((field, f"{field} {problem}"))
        self._wrong.add(field)

    def check(self, ok, field: str, problem: str, *, needs: tuple[str, ...] = ()) -> None:
        """Records `problem` for `field` unless `ok`. A callable `ok` is evaluated only
        when `field` and the fields it `needs` are set and of their declared types (so it
        may compare them); nothing is checked otherwise."""
        if any(self._skip(name) for name in (field, *needs)):
            return
        if not (ok() if callable(ok) else ok):
            self.fail(field, problem)

    def at_least(self, minimum, *fields: str) -> None:
        for field in fields:
            if not self._skip(field):
                self.check(self.value(field) >= minimum, field,
                           f"must be >= {minimum}, got {self.value(field)}")

    def greater_than(self, minimum, *fields: str) -> None:
        for field in fields:
            if not self._skip(field):
                self.check(self.value(field) > minimum, field,
                           f"must be > {minimum}, got {self.value(field)}")

    def within(self, field: str, low, high, *, low_open: bool = False,
               high_open: bool = False) -> None:
        """`low <= value <= high`, with either end open if asked."""
        if self._skip(field):
            return
        value = self.value(field)
        ok = (value > low if low_open else value >= low) and (
            value < high if high_open else value <= high)
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        self.check(ok, field, f"must be in {interval}, got {value}")

    def one_of(self, field: str, choices) -> None:
        if not self._skip(field):
            self.check(self.value(field) in choices, field,
                       f"must be one of {', '.join(map(str, choices))}, got "
                       f"{self.value(field)!r}")

    def raise_if_any(self) -> None:
        if self.problems:
            raise ArgumentError(
                f"Invalid {self.what}: " + "; ".join(p for _, p in self.problems) + ".",
                field=self.problems[0][0])
