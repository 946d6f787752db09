"""The files a run reads, found and fingerprinted: `expand_patterns` turns comma-separated
globs (local or remote) into the input files, naming a pattern that matches nothing
before any work; `file_sha256` is the checksum recorded of a vocab or input file;
`path_relation` tells how an output path lies to an input (is, holds, inside), and
`check_spares_input` refuses an output that would overwrite or mix with an input.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Collection, Iterable

from keras_bert.core.errors import InputNotFoundError, OutputError
from keras_bert.core.fileio import is_remote, isdir, open_file


def expand_patterns(patterns: str | os.PathLike | Iterable[str], what: str = "input file"
                    ) -> list[str]:
    """The files matching comma-separated globs (or a list of globs), local or remote.

    Files come in pattern order, sorted within a pattern, without repeats; directories
    matched by a glob are left out. Before any work is done, raises
    `InputNotFoundError` naming a pattern that matches no file, a pattern that names a
    directory (with the glob to use instead), or an empty list; `what` names the input
    in those messages.

    Example:

    >>> import pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("b.txt", "a.txt"):
    ...     _ = (root / name).write_text("one sentence.\\n")
    >>> [os.path.basename(f) for f in expand_patterns(f"{root}/*.txt,{root}/a.txt")]
    ['a.txt', 'b.txt']
    >>> expand_patterns(f"{root}/*.csv", what="corpus")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.InputNotFoundError: corpus pattern '.../*.csv' matches no file.
    """
    if isinstance(patterns, (str, os.PathLike)):
        patterns = os.fspath(patterns).split(",")
    files: dict[str, None] = {}  # ordered, without repeats
    for pattern in (os.fspath(p).strip() for p in patterns):
        if not pattern:
            continue
        if is_remote(pattern):
            import tensorflow as tf  # only for remote filesystems

            gfile = tf.io.gfile
            matched = [f for f in gfile.glob(pattern) if not gfile.isdir(f)]
        else:
            pattern = os.path.expanduser(pattern)
            import glob

            # A file whose name holds glob characters ("[1].txt") is taken as named.
            matched = ([pattern] if os.path.isfile(pattern)
                       else [f for f in glob.glob(pattern) if not os.path.isdir(f)])
        if not matched:
            if isdir(pattern):
                raise InputNotFoundError(
                    f"{what} {pattern!r} is a directory; name its files, e.g. "
                    f"{os.path.join(pattern, '*')!r}.")
            raise InputNotFoundError(f"{what} pattern {pattern!r} matches no file.")
        files.update(dict.fromkeys(sorted(matched)))
    if not files:
        raise InputNotFoundError(f"no {what} given.")
    return list(files)


def file_sha256(path: str | os.PathLike) -> str:
    """The hex SHA-256 of a file's bytes (local or remote), read in chunks.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "v.txt")
    >>> _ = open(path, "w").write("[PAD]\\n")
    >>> file_sha256(path)[:12]
    'cd66c3d348c7'
    """
    digest = hashlib.sha256()
    with open_file(os.fspath(path), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def path_relation(output: str, input_path: str) -> str | None:
    """How `output` lies to `input_path` (from `input_paths`): "is" (the same path),
    "holds" (the input inside the output), "inside" (the output inside the input) or
    None. Local paths compare resolved (symlinks followed), remote ones as strings, a
    remote glob's parts matched as globs.

    Example:

    >>> path_relation("/d", "/d/train.tsv"), path_relation("gs://b/x/", "gs://b/x")
    ('holds', 'is')
    >>> path_relation("gs://b/x/out", "gs://b/*"), path_relation("/d2", "/d")
    ('inside', None)
    """
    def parts(path: str) -> tuple[str, list[str]]:
        scheme, _, rest = path.partition("://") if is_remote(path) else (
            "", "", os.path.realpath(path).replace(os.sep, "/"))
        return scheme, [p for p in rest.split("/") if p not in ("", ".")]

    (scheme, out), (input_scheme, into) = parts(output), parts(input_path)
    same = fnmatch.fnmatchcase if scheme else str.__eq__
    if scheme != input_scheme or not all(map(same, out, into)):
        return None
    return "is" if len(out) == len(into) else "holds" if len(out) < len(into) else "inside"


def check_spares_input(output: str, what: str, input_path: str, input_what: str,
                       allowed: Collection[str] = ()) -> None:
    """Raises `OutputError` when the output `output` (named `what`) is, holds or lies
    inside `input_path` (resolved; named `input_what`), unless that relation
    (`path_relation`) is `allowed`: writing there could overwrite or delete the input, or
    mix outputs into it.

    Example:

    >>> check_spares_input("/d", "--output_dir", "/d", "--data_dir")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.OutputError: --output_dir '/d' is the --data_dir it reads from; writing there would overwrite or delete its inputs: choose another --output_dir.
    """
    relation = path_relation(output, input_path)
    if relation is None or relation in allowed:
        return
    where = {"is": f"is the {input_what} it reads from",
             "holds": f"holds the {input_what} it reads from ({input_path!r})",
             "inside": f"lies inside the {input_what} it reads from ({input_path!r})"}
    harm = "put outputs among" if relation == "inside" else "overwrite or delete"
    raise OutputError(f"{what} {output!r} {where[relation]}; writing there would {harm} "
                      f"its inputs: choose another {what}.")
