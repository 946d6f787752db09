"""Labels that do not belong: the one judgment of a class label, a tag or a regression
score that the raw-text face (`Task.text_examples`, what the Python task models' `fit`
and `evaluate` read) and the file readers (`Task.read_examples`, what the commands
read) both apply, so that a bad example is refused alike: by its index in Python
(`ArgumentError`), by its file and line on the command line (`DataError`, exit 2).

- `class_problem`: a label that is not one of the task's labels (nor, where indices
  are allowed, a class index);
- `tag_problem`: a tag the tagger does not know (never trained as "ignore");
- `score`: a regression target that is not a finite number (NaN, inf, a word);
- `mixed_kinds`: labels learnt from data that mix numbers with names (`0`, `1`,
  `neg`, `pos` would become four classes), for a warning.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from keras_bert.core.errors import ArgumentError

# The label of continuation pieces, [CLS], [SEP] and padding in tagging: no word's tag
# is there (the tagging models' loss and accuracy skip it).
IGNORE_LABEL = -1

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_SHOWN = 5  # bad items named in one message


def class_problem(value, labels: Sequence[str], indices: bool = True, known: str = ""
                  ) -> str | None:
    """None when `value` is one of `labels` (or, with `indices`, a class index
    0..len(labels)-1 given as an int); else what is wrong with it (`known` says what
    the labels are, before the list).

    Example:

    >>> class_problem("pos", ("neg", "pos")), class_problem(1, ("neg", "pos"))
    (None, None)
    >>> class_problem("maybe", ("neg", "pos"))
    "label 'maybe' is not one of ['neg', 'pos']"
    >>> class_problem(2, ("neg", "pos"))
    "label 2 is neither one of ['neg', 'pos'] nor a class index 0-1"
    """
    if isinstance(value, str) and value in labels:
        return None
    if (indices and isinstance(value, int) and not isinstance(value, bool)
            and 0 <= value < len(labels)):
        return None
    if isinstance(value, str) or not indices:
        return f"label {value!r} is not one of {known}{list(labels)}"
    return (f"label {value!r} is neither one of {list(labels)} nor a class index "
            f"0-{len(labels) - 1}")


def tag_problem(tag, labels: Sequence[str]) -> str | None:
    """None when `tag` is one of the tagger's `labels`; else what is wrong with it.

    Example:

    >>> tag_problem("B-PER", ("O", "B-PER")) is None
    True
    >>> tag_problem("B-LOC", ("O", "B-PER"))
    "tag 'B-LOC' is not one of the tagger's tags ['O', 'B-PER']"
    """
    if isinstance(tag, str) and tag in labels:
        return None
    return f"tag {tag!r} is not one of the tagger's tags {list(labels)}"


def score(value) -> tuple[float | None, str | None]:
    """(the regression target as a float, None), or (None, what is wrong with it): a
    number or a string holding one, finite (NaN and inf are refused).

    Example:

    >>> score(2.5), score(" 3 "), score(float("nan"))[1], score("high")[1]
    ((2.5, None), (3.0, None), 'score nan is not a finite number', "score 'high' is not a number")
    """
    if isinstance(value, bool):
        return None, f"score {value!r} is not a number"
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None, f"score {value!r} is not a number"
    elif isinstance(value, (int, float)):
        number = float(value)
    else:
        return None, f"score {value!r} ({type(value).__name__}) is not a number"
    if not math.isfinite(number):
        return None, f"score {value!r} is not a finite number"
    return number, None


def mixed_kinds(labels) -> str | None:
    """A warning's words when the distinct `labels` learnt from data mix numbers with
    names, else None.

    Example:

    >>> mixed_kinds(["0", "1", "neg", "pos"])
    'mixes numeric labels (0, 1) with names (neg, pos): they become 4 classes; if they mean the same classes, write every label one way'
    >>> mixed_kinds(["neg", "pos"]) is None
    True
    """
    distinct = sorted({str(v) for v in labels})
    numbers = [v for v in distinct if _NUMBER.fullmatch(v.strip())]
    names = [v for v in distinct if v not in numbers]
    if not numbers or not names:
        return None
    return (f"mixes numeric labels ({_some(numbers)}) with names ({_some(names)}): they "
            f"become {len(distinct)} classes; if they mean the same classes, write every "
            "label one way")


def refuse(problems: list[tuple[str, str]], what: str, hint: str = "") -> None:
    """Raises one `ArgumentError` (field `what`) naming each distinct problem of the
    `(place, problem)` pairs with its places (the first few of each), and `hint`;
    nothing when `problems` is empty.

    Example:

    >>> refuse([("y[1]", "label 'x' is not one of ['a', 'b']"),
    ...         ("y[3]", "label 'x' is not one of ['a', 'b']")], "y", "Fix them.")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: label 'x' is not one of ['a', 'b'] (y[1], y[3]). Fix them.
    """
    if not problems:
        return
    places: dict[str, list[str]] = {}
    for place, problem in problems:
        places.setdefault(problem, []).append(place)
    shown = "; ".join(f"{problem} ({_some(where, 3)})"
                      for problem, where in list(places.items())[:_SHOWN])
    more = (f"; and {len(places) - _SHOWN} more kinds" if len(places) > _SHOWN else "")
    raise ArgumentError(f"{shown}{more}.{' ' + hint if hint else ''}", field=what)


def _some(values: list[str], count: int = _SHOWN) -> str:
    return ", ".join(values[:count]) + (", ..." if len(values) > count else "")
