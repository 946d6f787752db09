"""Google's released BERT checkpoints by their release names (`uncased_L-12_H-768_A-12`):
the release table, and each release downloaded once into keras_bert's cache and then
read from it without a network (`resolve_google_release`; `remote` dispatches names to
it).

The release's zip (`GOOGLE_RELEASES`, the links of google-research/bert's README) is
fetched from `google_base_url()` into `cache_directory()/google/NAME/`, checked against
its Content-Length (and a SHA-256 where the table has one), extracted, and checked to
hold a whole checkpoint (`release_problem`); the zip and the extraction go to hidden
temporaries in the cache folder, named with the writer's process id so that the next
download sweeps a killed one's, and the directory is renamed into place, so an
interrupted or failed download leaves nothing behind.

Without a network and without a cached copy, this raises `CheckpointUnavailableError`
(a user's mistake for the command: exit 2) in one line that names the release and how
to work offline; a damaged download or cached copy is a `CheckpointError` (exit 2 too)
that names the release, where it came from and what to do. This module imports no
TensorFlow.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from typing import NamedTuple

from keras_bert.core import fileio, stopping
from keras_bert.core.errors import (
    ArgumentError,
    CheckpointError,
    CheckpointUnavailableError,
    OutputError,
)
from keras_bert.text.vocab import VOCAB_FILE

# The files of checkpoints.google (GOOGLE_CONFIG, GOOGLE_CKPT), spelled here so that this
# module imports no TensorFlow; a test checks they agree.
GOOGLE_CONFIG = "bert_config.json"
GOOGLE_CKPT = "bert_model.ckpt"
CACHE_ENV = "KERAS_BERT_CACHE"
GOOGLE_BASE_URL_ENV = "KERAS_BERT_GOOGLE_BASE_URL"
GOOGLE_BASE_URL = "https://storage.googleapis.com/bert_models"
# The schemes urllib downloads from (a mirror may be a local folder: file:///mnt/bert).
_URL_SCHEMES = ("http", "https", "ftp", "file")
DOWNLOAD_TIMEOUT_S = 60
_CHUNK = 1 << 20


class GoogleRelease(NamedTuple):
    """A released checkpoint: its zip's path under `google_base_url()` and, where known,
    the zip's SHA-256 (hex)."""

    path: str
    sha256: str | None = None


def _google_releases() -> dict[str, GoogleRelease]:
    """google-research/bert's README (master, 2020-03-11): the 24 small BERTs of
    2020-02-20 (Turc et al., 2019), then the original releases, whose BERT-Base
    (2018-10-18) keeps the name `uncased_L-12_H-768_A-12` (the 2020 table's 12/768 is a
    re-training "included for completeness")."""
    releases = {}
    for layers in (2, 4, 6, 8, 10, 12):
        for hidden in (128, 256, 512, 768):
            name = f"uncased_L-{layers}_H-{hidden}_A-{hidden // 64}"
            releases[name] = GoogleRelease(f"2020_02_20/{name}.zip")
    for date, names in (
            ("2018_10_18", ("uncased_L-12_H-768_A-12", "uncased_L-24_H-1024_A-16",
                            "cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16")),
            ("2018_11_03", ("multilingual_L-12_H-768_A-12", "chinese_L-12_H-768_A-12")),
            ("2018_11_23", ("multi_cased_L-12_H-768_A-12",)),
            ("2019_05_30", ("wwm_uncased_L-24_H-1024_A-16", "wwm_cased_L-24_H-1024_A-16"))):
        releases.update({name: GoogleRelease(f"{date}/{name}.zip") for name in names})
    return releases


# Release name -> its zip. multilingual_L-12_H-768_A-12 is deprecated by Google (use
# multi_cased_L-12_H-768_A-12).
GOOGLE_RELEASES: dict[str, GoogleRelease] = _google_releases()


def cache_directory() -> str:
    """keras_bert's download cache: `$KERAS_BERT_CACHE`, else `$XDG_CACHE_HOME/keras_bert`,
    else `~/.cache/keras_bert`. Google's releases go to its `google/` folder.

    Example:

    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {CACHE_ENV: "/data/cache"}):
    ...     cache_directory()
    '/data/cache'
    """
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return os.path.abspath(os.path.join(os.path.expanduser(base), "keras_bert"))


def google_base_url() -> str:
    """Where Google's release zips are fetched from: `$KERAS_BERT_GOOGLE_BASE_URL`, else
    `GOOGLE_BASE_URL` (a mirror, or a local server in tests, takes the same paths). A
    value that is no URL urllib downloads from is an `ArgumentError` naming it.

    Example:

    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {GOOGLE_BASE_URL_ENV: "http://mirror:8080/bert/"}):
    ...     google_base_url()
    'http://mirror:8080/bert'
    >>> with mock.patch.dict(os.environ, {GOOGLE_BASE_URL_ENV: "not a url"}):
    ...     google_base_url()
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: KERAS_BERT_GOOGLE_BASE_URL='not a url' is no URL ...
    """
    configured = os.environ.get(GOOGLE_BASE_URL_ENV)
    if not configured:
        return GOOGLE_BASE_URL
    parts = urllib.parse.urlsplit(configured)
    try:
        parts.port  # noqa: B018 (raises for a port that is no number)
        valid = (parts.scheme in _URL_SCHEMES and not any(c.isspace() for c in configured)
                 and bool(parts.path if parts.scheme == "file" else parts.hostname))
    except ValueError:
        valid = False
    if not valid:
        raise ArgumentError(
            f"{GOOGLE_BASE_URL_ENV}={configured!r} is no URL to download Google's BERT "
            f"releases from; set it to the address of a mirror that serves their zips "
            f"under the paths of {GOOGLE_BASE_URL} (http://, https:// or file://), or unset "
            "it.")
    return configured.rstrip("/")


def google_url(name: str) -> str:
    """The download URL of a Google release name.

    Example:

    >>> google_url("uncased_L-12_H-768_A-12")
    'https://storage.googleapis.com/bert_models/2018_10_18/uncased_L-12_H-768_A-12.zip'
    >>> google_url("uncased_L-4_H-256_A-4")
    'https://storage.googleapis.com/bert_models/2020_02_20/uncased_L-4_H-256_A-4.zip'
    """
    return f"{google_base_url()}/{GOOGLE_RELEASES[name].path}"


def resolve_google_release(name: str, progress: bool = True) -> str:
    """`cache_directory()/google/NAME` for a release name (`GOOGLE_RELEASES`),
    downloaded (with a progress bar, `progress`), extracted and checked first if absent
    (dead downloads' temporaries in that folder are swept before); a cached copy that is
    no whole checkpoint is a `CheckpointError` naming the folder to delete."""
    folder = os.path.join(cache_directory(), "google")
    target = os.path.join(folder, name)
    if os.path.isdir(target):
        problem = release_problem(target)
        if problem:
            raise CheckpointError(
                f"The keras_bert cache's copy of Google's BERT release {name!r} is broken: "
                f"{target} {problem}; delete that folder and run the command again to "
                "download it anew.")
        return target
    url = google_url(name)  # a malformed KERAS_BERT_GOOGLE_BASE_URL is refused first
    fileio.check_writable(folder, kind="directory", what="the keras_bert cache")
    created = [d for d in (folder, cache_directory()) if not os.path.isdir(d)]
    os.makedirs(folder, exist_ok=True)
    fileio.remove_dead_temporaries(folder)
    archive = fileio.temporary_path(target + ".zip")
    staging = fileio.temporary_path(target)
    # SIGTERM and Ctrl-C stop a download without fail, and nothing half-fetched enters
    # the cache (keras_bert.core.stopping).
    try:
        try:
            with stopping.stop_on_signals():
                _download(name, url, archive, progress)
                _extract(name, url, archive, staging)
                root = _release_root(name, url, staging)
                problem = release_problem(root)
                if problem:
                    raise _bad_download(name, url, f"unpacks to a folder that {problem}")
                _install(root, target)
        finally:  # also on KeyboardInterrupt: no temporary survives
            with contextlib.suppress(FileNotFoundError):
                os.remove(archive)
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:  # the cache directories this call made go too, if empty
        for directory in created:
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        raise
    return target


def release_problem(directory: str) -> str | None:
    """What keeps a folder from being a Google checkpoint keras_bert loads, said as what
    it holds or lacks ("has no vocab.txt"), or None for a whole one: `GOOGLE_CONFIG` (a
    JSON object), `VOCAB_FILE`, `GOOGLE_CKPT`'s index and each of the data shards their
    names count (`bert_model.ckpt.data-00000-of-00001`), none of them empty.

    Example:

    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> release_problem(directory)
    'has no bert_config.json, vocab.txt, bert_model.ckpt.index or bert_model.ckpt.data-* file'
    >>> for name in (VOCAB_FILE, "bert_model.ckpt.index", "bert_model.ckpt.data-00001-of-00002"):
    ...     _ = open(os.path.join(directory, name), "w").write("x")
    >>> _ = open(os.path.join(directory, "bert_config.json"), "w").write('{"hidden_size": 8}')
    >>> release_problem(directory)
    'has no bert_model.ckpt.data-00000-of-00002'
    """
    def whole(name: str) -> bool:
        path = os.path.join(directory, name)
        return os.path.isfile(path) and os.path.getsize(path) > 0

    data = f"{GOOGLE_CKPT}.data-"
    shards = sorted(n for n in os.listdir(directory) if n.startswith(data))
    counts = re.fullmatch(r"\d{5}-of-(\d{5})", shards[-1][len(data):]) if shards else None
    wanted = [GOOGLE_CONFIG, VOCAB_FILE, f"{GOOGLE_CKPT}.index"]
    if counts:
        wanted += [f"{data}{i:05d}-of-{counts[1]}" for i in range(int(counts[1]))]
    missing = [n for n in wanted if not whole(n)]
    if not counts:
        missing.append(f"{data}* file")
    if missing:
        listed = ", ".join(missing[:-1]) + " or " if len(missing) > 1 else ""
        return f"has no {listed}{missing[-1]}"
    try:
        with open(os.path.join(directory, GOOGLE_CONFIG), encoding="utf-8") as f:
            config = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        return f"has a {GOOGLE_CONFIG} that is no valid JSON ({e})"
    if not isinstance(config, dict):
        return f"has a {GOOGLE_CONFIG} that is no JSON object"
    return None


def _google_unavailable(name: str, url: str, why: str) -> CheckpointUnavailableError:
    folder = os.path.join(cache_directory(), "google")
    return CheckpointUnavailableError(
        f"Google's BERT release {name!r} is not in the keras_bert cache {folder} and "
        f"could not be downloaded from {url} ({why}); to work offline, download that zip "
        f"by hand, unzip it and pass its directory, or set {CACHE_ENV} to a cache that "
        f"holds google/{name}/.")


def _bad_download(name: str, url: str, what: str) -> CheckpointError:
    """The error of a download that arrived but is no usable release (damaged, another
    file, an incomplete zip): `what` says how; nothing of it is kept."""
    source = (f"that {GOOGLE_BASE_URL_ENV} names a mirror of Google's release zips"
              if os.environ.get(GOOGLE_BASE_URL_ENV) else "your network or proxy")
    return CheckpointError(
        f"The download of Google's BERT release {name!r} from {url} {what}; nothing was "
        f"kept in the cache: run the command again to download it anew, and if it fails "
        f"the same way, check {source}.")


def _download(name: str, url: str, archive: str, progress: bool) -> None:
    """Fetches `url` into the file `archive`; checks its size against Content-Length and
    its SHA-256 against `GOOGLE_RELEASES` where the table has one."""
    request = urllib.request.Request(url, headers={"User-Agent": "keras_bert"})
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S) as response, \
                open(archive, "wb") as out:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            size, digest = _copy_response(response, out, total, name, progress)
    except urllib.error.HTTPError as e:
        raise _google_unavailable(name, url, f"the server answered HTTP {e.code}") from None
    except (OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", None) or e
        raise _google_unavailable(name, url, f"{type(e).__name__}: {reason}") from None
    if total is not None and size != total:
        raise _google_unavailable(
            name, url, f"the download stopped after {size} of {total} bytes")
    expected = GOOGLE_RELEASES[name].sha256
    if expected and digest != expected:
        raise _bad_download(name, url, f"has SHA-256 {digest}, not the release's {expected}")


def _copy_response(response, out, total: int | None, name: str, progress: bool
                   ) -> tuple[int, str]:
    """Copies a response's body to `out` under a progress bar (drawn on a terminal
    only); (bytes, hex SHA-256)."""
    from tqdm import tqdm

    digest, size = hashlib.sha256(), 0
    with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
              desc=f"downloading {name}", disable=None if progress else True) as bar:
        while chunk := response.read(_CHUNK):
            out.write(chunk)
            digest.update(chunk)
            size += len(chunk)
            bar.update(len(chunk))
    return size, digest.hexdigest()


def _extract(name: str, url: str, archive: str, staging: str) -> None:
    """Unpacks the zip `archive` into `staging`: a damaged one (not a zip, a broken
    deflate stream, a wrong CRC) is a `CheckpointError`, a cache folder that cannot take
    it (a full disk) an `OutputError`."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(staging)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError,
            RuntimeError) as e:  # not a zip; damaged data; a method or password it lacks
        what = ("is no zip archive" if not zipfile.is_zipfile(archive)
                else "is a damaged or unreadable zip")
        kind = "zlib.error" if isinstance(e, zlib.error) else type(e).__name__
        raise _bad_download(name, url, f"{what} ({kind}: {e})") from None
    except OSError as e:
        folder = os.path.dirname(staging)
        raise OutputError(
            f"Google's BERT release {name!r} could not be unpacked into the keras_bert "
            f"cache {folder} ({e.strerror or e}); nothing was kept: make room there (or "
            f"make it writable), or set {CACHE_ENV} to another folder.") from None


def _release_root(name: str, url: str, staging: str) -> str:
    """The folder of an extracted release that holds its bert_config.json: the zip's top
    (the 2020 small BERTs) or its one folder (`NAME/`, the 2018 and 2019 releases)."""
    if os.path.isfile(os.path.join(staging, GOOGLE_CONFIG)):
        return staging
    found = [os.path.join(staging, n) for n in sorted(os.listdir(staging))
             if os.path.isfile(os.path.join(staging, n, GOOGLE_CONFIG))]
    if len(found) != 1:
        raise _bad_download(name, url, f"holds no single folder with a {GOOGLE_CONFIG}")
    return found[0]


def _install(root: str, target: str) -> None:
    """Renames the extracted release into place; one that another process put there
    first is kept (it is the same release)."""
    stopping.check()
    try:
        os.rename(root, target)
    except OSError:
        if not os.path.isdir(target):
            raise
