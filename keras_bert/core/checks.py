"""Checking an options dataclass (`BertConfig`, `PretrainingDataOptions`,
`PretrainingOptions`, `FinetuneOptions`): one style for all of them.

Each field's type comes from its annotation ("int", "float", "bool", "str", optionally
"| None"); the ranges and choices are stated in the dataclass's `__post_init__` through
an `OptionChecks`. Every problem is collected, then one `ArgumentError` names them all:
"Invalid <what>: <field> must be ..., got ...; <field> ...". Its `field` is the first
field named, so the command line can point at the flag.

Example:

>>> import dataclasses
>>> @dataclasses.dataclass
... class Options:
...     steps: int = 10
...     rate: float = 0.1
...     def __post_init__(self):
...         checks = OptionChecks("toy options", self)
...         checks.at_least(1, "steps")
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


class OptionChecks:
    """Collects what is wrong with `options` (a dataclass instance), checking each
    field's type from its annotation at once; `raise_if_any` raises one
    `ArgumentError` for all of it.

    Range checks skip a field that is None (an optional field left unset) and one that
    already has a wrong type (its type problem is reported instead).
    """

    def __init__(self, what: str, options):
        self.what = what
        self.options = options
        self.problems: list[tuple[str, str]] = []  # (field, "field must be ..., got ...")
        self._mistyped: set[str] = set()
        for field in dataclasses.fields(options):
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
                self._mistyped.add(field.name)

    def value(self, field: str):
        return getattr(self.options, field)

    def _skip(self, field: str) -> bool:
        return field in self._mistyped or self.value(field) is None

    def fail(self, field: str, problem: str) -> None:
        """Records `problem` ("must be ..., got ...") for `field`."""
        self.problems.append((field, f"{field} {problem}"))

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
