"""How every `keras-bert` subcommand parses its flags: one `ArgumentParser` (usage
errors as one line that names the flag meant), one boolean-flag style (`add_boolean`),
checked numbers (`positive_int`, ...), the flags of an options dataclass made from its
fields' declarations (`add_options`; `keras_bert.core.checks.option`) and the options
built back from the parsed flags (`options_from_args`).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import re
import shlex
import sys

from keras_bert.core.checks import declaration
from keras_bert.core.errors import ArgumentError
from keras_bert.pipelines.plumbing.field_flags import OPTION_FLAGS_DEST, flag_of, option_flags
from keras_bert.pipelines.plumbing.reporting import EXIT_USAGE

# Whatever starts like a number is a value for the flag's type to check (argparse before
# Python 3.13 takes "-2e-5" for a flag: "expected one argument"). Then what starts a flag.
_NUMBER_LIKE, _FLAG_NAME = re.compile(r"^-\.?\d"), re.compile(r"^--?[A-Za-z][\w-]*$")

# Flags of google-research/bert's scripts and of other commands -> this command's (the first
# it has); spelling alone would offer --eval_batch_size for finetune's --batch_size.
FLAG_ALIASES = {
    "--batch_size": "--train_batch_size --eval_batch_size", "--lr": "--learning_rate",
    "--epochs": "--num_train_epochs", "--num_epochs": "--num_train_epochs",
    "--max_length": "--max_seq_length", "--seq_length": "--max_seq_length",
    "--task_name": "--task", "--bert_config_file": "--config", "--vocab": "--vocab_file",
    "--init_checkpoint": "--checkpoint --model", "--checkpoint": "--init_checkpoint --model",
    "--train_steps": "--num_train_steps", "--warmup_steps": "--num_warmup_steps"}


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2) that points to --help
    and names the flag meant by a misspelt or foreign one; numbers are values
    (`--learning_rate -2e-5`); `@FILE` reads more arguments from FILE (see
    `convert_arg_line_to_args`), for flags too long for a command line."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("fromfile_prefix_chars", "@")
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NUMBER_LIKE

    def convert_arg_line_to_args(self, arg_line):
        """The arguments of one @FILE line: none for a blank line or a `#` comment;
        `--flag value` split as a shell would (quote a value with spaces); `--flag=value`
        (its quotes removed) and any other line as one argument."""
        text = arg_line.strip()
        if not text or text.startswith("#"):
            return []
        first, *rest = text.split(None, 1)
        if not _FLAG_NAME.match(first.split("=", 1)[0]):
            return [text]  # as argparse takes a line: the whole of it, one argument
        if "=" not in first:
            return [first, *shlex.split(rest[0] if rest else "")]
        flag, _, value = text.partition("=")
        words = shlex.split(value) if value[:1] in ("'", '"') else [value]
        if len(words) != 1:
            raise ValueError(f"{flag}= takes one value, got {len(words)}")
        return [f"{flag}={words[0]}"]

    def _read_args_from_files(self, arg_strings):
        expanded = []
        for arg in arg_strings:
            if not arg or arg[0] not in self.fromfile_prefix_chars:
                expanded.append(arg)
                continue
            path = arg[1:]
            try:
                with open(path, encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except (OSError, UnicodeDecodeError) as e:
                self.error(f"cannot read the arguments file {path!r}: "
                           f"{getattr(e, 'strerror', None) or e}")
            for number, line in enumerate(lines, 1):
                try:
                    words = self.convert_arg_line_to_args(line)
                except ValueError as e:  # shlex: "No closing quotation", ...
                    self.error(f"arguments file {path}:{number}: {e}: {line.strip()!r}; "
                               "quote a value with spaces whole, as in a shell")
                expanded += self._read_args_from_files(words)
        return expanded

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and not hasattr(namespace, "_unrecognized_by"):
            # The innermost parser left them (the top-level one knows no command's flags).
            namespace._unrecognized_by = self
        return namespace, extras

    def parse_args(self, args=None, namespace=None):
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            getattr(namespace, "_unrecognized_by", self).error(
                f"unrecognized arguments: {' '.join(extras)}")
        return namespace

    def suggestions(self, given: list[str]) -> list[str]:
        """"use --X instead of --Y" for each flag Y in `given` this parser lacks (X: see
        `FLAG_ALIASES`, or a flag spelt alike)."""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        hints = []
        for arg in given:
            name = arg.split("=", 1)[0]
            if (not name.startswith("-") or name == "--" or _NUMBER_LIKE.match(name)
                    or name in self._option_string_actions
                    or (self.allow_abbrev and any(o.startswith(name) for o in known))):
                continue
            meant = [o for o in FLAG_ALIASES.get(name, "").split() if o in known]
            meant = meant or difflib.get_close_matches(
                "--" + name.lstrip("-").replace("-", "_"), known, n=1, cutoff=0.75)
            hints += [f"use {flag} instead of {name}" for flag in meant[:1]]
        return list(dict.fromkeys(hints))

    def error(self, message):
        message = "; ".join([message, *self.suggestions(getattr(self, "_given", ()))])
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parse_boolean(text: str) -> bool:
    """A boolean flag value as google-research/bert's absl flags take them.

    Example:

    >>> parse_boolean("False"), parse_boolean("1"), parse_boolean("yes")
    (False, True, True)
    """
    value = text.strip().lower()
    if value in ("1", "true", "t", "yes", "y"):
        return True
    if value in ("0", "false", "f", "no", "n"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_boolean(parser: argparse.ArgumentParser, name: str, default: bool | None,
                help: str) -> None:
    """The one boolean-flag style of every subcommand: `--name` (true), `--name=false`
    (absl style, as google-research/bert's scripts take them) and `--noname`
    (or `--no-name`).

    Example:

    >>> p = ArgumentParser(prog="x")
    >>> add_boolean(p, "progress", True, "show a progress bar")
    >>> [p.parse_args(a).progress for a in ([], ["--noprogress"], ["--progress=false"])]
    [True, False, False]
    """
    shown = "auto" if default is None else str(default).lower()
    parser.add_argument(f"--{name}", type=parse_boolean, nargs="?", const=True,
                        default=default, metavar="true|false",
                        help=f"{help} (default: {shown})")
    # `--no-name` too (argparse's BooleanOptionalAction spelling, which some commands
    # took before).
    parser.add_argument(f"--no{name}", f"--no-{name}", dest=name, action="store_false",
                        default=argparse.SUPPRESS, help=argparse.SUPPRESS)


@functools.cache  # one parser a range: `positive_int` is the options' `at_least=1` too
def _number(kind: type, low=None, high=None, low_open=False):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
            ) from None
        if low is not None and (value <= low if low_open else value < low):
            raise argparse.ArgumentTypeError(
                f"must be {'>' if low_open else '>='} {low}, got {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be <= {high}, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


positive_int = _number(int, 1, None, False)
nonnegative_int = _number(int, 0, None, False)
positive_float = _number(float, 0, None, True)
nonnegative_float = _number(float, 0, None, False)
probability = _number(float, 0, 1, False)


def check_max_seq_length(args: argparse.Namespace) -> None:
    """The one check and wording of a too short --max_seq_length (every command's): room
    for [CLS], a token and [SEP]; with --next_sentence_prediction, [CLS] A [SEP] B [SEP]."""
    value = getattr(args, "max_seq_length", None)
    minimum, parts = ((5, "[CLS] A [SEP] B [SEP]") if getattr(
        args, "next_sentence_prediction", False) else (3, "[CLS], a token, [SEP]"))
    if isinstance(value, int) and value < minimum:
        raise ArgumentError(f"{flag_of('max_seq_length')} must be at least {minimum} "
                            f"({parts}), got {value}", field="max_seq_length")


def options_from_args(options_class: type, args: argparse.Namespace, **overrides):
    """An options dataclass built from the parsed flags of the same names (fields with
    no flag keep their defaults); `overrides` win.

    Example:

    >>> @dataclasses.dataclass
    ... class Options:
    ...     seed: int = 0
    ...     steps: int = 10
    >>> options_from_args(Options, argparse.Namespace(seed=3, other=1))
    Options(seed=3, steps=10)
    """
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(options_class)
              if f.init and hasattr(args, f.name)}
    values.update(overrides)
    return options_class(**values)


def add_options(parser: argparse.ArgumentParser, options_class: type,
                only: tuple[str, ...] | None = None) -> None:
    """The flags of `options_class`'s fields (those in `only`, if given), as each field
    declares them (`keras_bert.core.checks.option`): its flags, its help, its default,
    its type from its annotation, and its range or choices checked as the flag is parsed
    (a boolean field: `add_boolean`'s style; a field without a default: a required
    flag). A field declared without flags, or not
    with `option`, gets none. `options_from_args` builds the options back.

    Example:

    >>> from keras_bert.core.checks import option
    >>> @dataclasses.dataclass
    ... class Options:
    ...     steps: int = option(10, "updates", at_least=1)
    ...     fast: bool = option(False, "go fast")
    >>> p = ArgumentParser(prog="x")
    >>> add_options(p, Options)
    >>> args = p.parse_args(["--steps", "3", "--fast"])
    >>> args.steps, args.fast, options_from_args(Options, args)
    (3, True, Options(steps=3, fast=True))
    """
    made = dict(parser.get_default(OPTION_FLAGS_DEST) or {})
    for field in dataclasses.fields(options_class):
        declared, flags = declaration(field), option_flags(field)
        if declared is None or not flags or (only is not None and field.name not in only):
            continue
        kind = str(field.type).partition(" | ")[0]
        if kind == "bool":
            add_boolean(parser, flags[0][2:], field.default, declared.help)
        else:
            required = field.default is dataclasses.MISSING
            parser.add_argument(*flags, dest=field.name, required=required,
                                default=None if required else field.default,
                                choices=declared.choices, help=_help(declared.help, field),
                                type=_flag_type(kind, declared), metavar=declared.metavar)
        made[field.name] = flags[0]
    parser.set_defaults(**{OPTION_FLAGS_DEST: made})


def _help(text: str, field: dataclasses.Field) -> str:
    """A flag's help: the field's, with its default unless None or told already."""
    if field.default in (None, dataclasses.MISSING) or "(default" in text:
        return text
    return f"{text} (default: %(default)s)"


def _flag_type(kind: str, declared):
    """The argparse type of a flag of annotation `kind` ("int", "float", "str") and the
    range `declared` (a `keras_bert.core.checks.Declared`)."""
    if kind not in ("int", "float"):
        return None
    number = int if kind == "int" else float
    if declared.low is None:
        return number
    return _number(number, declared.low, declared.high, declared.low_open)


def add_debug(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", default=False,
                        help="on a failure, print the full traceback (and TensorFlow's "
                             "start-up log)")
