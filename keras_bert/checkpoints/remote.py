"""Checkpoints by name: `hf://ORG/NAME[@REVISION]` from the Hugging Face Hub, and
Google's released BERT checkpoints by their release names (`uncased_L-12_H-768_A-12`,
downloaded by `google_release`), each downloaded once into a cache and then read from it
without a network.

`resolve_checkpoint_name` turns such a name into a local directory that the readers in
`loading` take; a local path (or a `gs://`-style one) passes through unchanged, and a
local path wins over a release name of the same spelling.

- Hugging Face: only the files keras_bert reads (`HF_FILES`, and a sentence-transformers
  folder's `SENTENCE_TRANSFORMERS_FILES`) are fetched, through
  `huggingface_hub.snapshot_download` into its own cache, so `HF_HOME`, `HF_HUB_OFFLINE`,
  `HF_TOKEN` and revision pins behave as they do for every Hugging Face library; a repo
  whose config.json names another `model_type` than "bert" is refused before its weights
  are fetched, and a broken cached copy (a file whose blob is gone) is named with the
  folder to delete. huggingface_hub is imported only when an `hf://` name is resolved.
- Google: `google_release.resolve_google_release` (the release table, the download
  into `cache_directory()/google/NAME/`, its checks).

Without a network and without a cached copy, both raise `CheckpointUnavailableError`
(a user's mistake for the command: exit 2) in one line that names the checkpoint and
how to work offline; a damaged download or cached copy is a `CheckpointError` (exit 2
too) that names the release, where it came from and what to do. This module imports no
TensorFlow.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
from collections.abc import Callable

from keras_bert.checkpoints.google_release import GOOGLE_RELEASES, resolve_google_release
from keras_bert.core import fileio
from keras_bert.core.errors import (
    ArgumentError,
    CheckpointError,
    CheckpointUnavailableError,
    DataError,
    InputNotFoundError,
)
from keras_bert.text.vocab import VOCAB_FILE

HF_SCHEME = "hf://"
# The files of checkpoints.huggingface (HF_CONFIG, HF_WEIGHTS), spelled here so that this
# module imports no TensorFlow; a test checks they agree.
HF_CONFIG = "config.json"
HF_WEIGHTS = "model.safetensors"
# What is fetched of a Hugging Face repo: the config, the weights keras_bert reads (no
# torch, so no pytorch_model.bin), the vocab and the casing (`checkpoint_lower_case`).
HF_FILES = (HF_CONFIG, HF_WEIGHTS, VOCAB_FILE, "tokenizer_config.json",
            "special_tokens_map.json")
# What else is fetched: a sentence-transformers folder's modules and settings, its
# modules' configs and Dense weights (`checkpoints.sentence_transformers`; patterns).
SENTENCE_TRANSFORMERS_FILES = ("modules.json", "sentence_bert_config.json",
                               "config_sentence_transformers.json", "*/config.json",
                               "*/model.safetensors")
# The model_type of the architectures the Hugging Face reader takes (BertConfig.from_hf_dict).
HF_MODEL_TYPES = ("bert",)


def is_checkpoint_name(path: str | os.PathLike) -> bool:
    """Whether `resolve_checkpoint_name` would download or look up `path` in a cache
    rather than pass it through: an `hf://` name, or a Google release name (alone or
    followed by a file in it) that is no existing local path.

    Example:

    >>> is_checkpoint_name("hf://google-bert/bert-base-uncased")
    True
    >>> is_checkpoint_name("uncased_L-2_H-128_A-2"), is_checkpoint_name("/models/bert")
    (True, False)
    >>> is_checkpoint_name("cased_L-12_H-768_A-12/bert_model.ckpt")
    True
    """
    text = os.fspath(path)
    if text.startswith(HF_SCHEME):
        return True
    if fileio.is_remote(text) or os.path.exists(text):
        return False
    return text.partition("/")[0] in GOOGLE_RELEASES


def resolve_checkpoint_name(path: str | os.PathLike, progress: bool = True) -> str:
    """A local path for a checkpoint given by path or by name.

    - `hf://ORG/NAME[@REVISION]`: the Hugging Face repo's snapshot directory in
      huggingface_hub's cache (downloaded once; see the module docstring);
    - a Google release name (`GOOGLE_RELEASES`), optionally followed by a file in it
      (`uncased_L-12_H-768_A-12/bert_model.ckpt`): its directory in
      `google_release.cache_directory()/google/`, downloaded once with a progress bar (`progress`);
    - anything else (a local path, `gs://...`) unchanged; a bare name close to a release
      name that is no local path raises `InputNotFoundError` with the likely names.

    Raises `CheckpointUnavailableError` (no network and no cached copy),
    `CheckpointError` (a repo that is no BERT, a broken download) or `ArgumentError`
    (a malformed `hf://` name).

    Example:

    >>> resolve_checkpoint_name("/models/my_bert")
    '/models/my_bert'
    >>> resolve_checkpoint_name("hf://sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
    '/home/me/.cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/c9745ed1d9f207416be6d2e6f8de32d1f16199bf'
    >>> resolve_checkpoint_name("uncased_L-2_H-128_A-2")  # doctest: +SKIP
    '/home/me/.cache/keras_bert/google/uncased_L-2_H-128_A-2'
    """
    text = os.fspath(path)
    if text.startswith(HF_SCHEME):
        return _resolve_hf(text)
    if not is_checkpoint_name(text):
        _refuse_near_miss(text)
        return text
    name, _, rest = text.partition("/")
    directory = resolve_google_release(name, progress)
    return os.path.join(directory, rest) if rest else directory


def _refuse_near_miss(text: str) -> None:
    """Raises `InputNotFoundError` for a bare name that is no local path but close to a
    release name (a typo of one); returns for anything else."""
    if "/" in text or os.sep in text or os.path.exists(text) or fileio.is_remote(text):
        return
    close = difflib.get_close_matches(text, GOOGLE_RELEASES, n=3, cutoff=0.85)
    if close:
        raise InputNotFoundError(
            f"No checkpoint at {text!r}: it is no local path and no Google BERT release "
            f"name; did you mean {' or '.join(map(repr, close))}?")


# --- Hugging Face -------------------------------------------------------------------------

_REPO_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def parse_hf_name(name: str) -> tuple[str, str | None]:
    """(repo id, revision or None) of `hf://ORG/NAME[@REVISION]`; `ArgumentError` for a
    malformed one. A revision is a branch, a tag, a commit hash or `refs/pr/N`.

    Example:

    >>> parse_hf_name("hf://google-bert/bert-base-uncased@v1.0")
    ('google-bert/bert-base-uncased', 'v1.0')
    >>> parse_hf_name("hf://bert-base-uncased")
    ('bert-base-uncased', None)
    >>> parse_hf_name("hf://a/b/c")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: 'hf://a/b/c' is no Hugging Face model name; ...
    """
    repo_id, at, revision = name[len(HF_SCHEME):].partition("@")
    parts = repo_id.split("/")
    if (not name.startswith(HF_SCHEME) or len(parts) > 2 or (at and not revision)
            or not all(_REPO_PART.fullmatch(p) for p in parts)):
        raise ArgumentError(f"{name!r} is no Hugging Face model name; write "
                            "hf://ORG/NAME or hf://ORG/NAME@REVISION (a branch, tag or "
                            "commit), e.g. hf://google-bert/bert-base-uncased.",
                            field="checkpoint")
    return repo_id, revision or None


# hf:// name, hub cache, offline -> its snapshot directory, resolved in this process: a
# command reads a checkpoint's config, vocab, casing and weights, each through this
# module, and online each resolution would ask the Hub again.
_HF_RESOLVED: dict[tuple, str] = {}


def _resolve_hf(name: str) -> str:
    """The snapshot directory of an `hf://` name (once a process for each hub cache),
    its config checked before its weights are fetched (both from the same commit)."""
    parse_hf_name(name)  # a malformed name is refused first, with or without the hub
    try:
        from huggingface_hub import constants
    except ImportError as e:
        raise ArgumentError(f"{name} needs huggingface_hub ({e}); pip install "
                            "huggingface_hub (or keras_bert[hf]).", field="checkpoint") from None
    key = (name, constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE)
    known = _HF_RESOLVED.get(key)
    if known is not None and os.path.isdir(known):
        return known
    _HF_RESOLVED[key] = directory = _fetch_hf(name)
    return directory


def _fetch_hf(name: str) -> str:
    repo_id, revision = parse_hf_name(name)
    with _hf_errors(name):
        config_only = _hf_snapshot(name, repo_id, revision, [HF_CONFIG])
        _check_bert_config(name, os.path.join(config_only, HF_CONFIG))
        commit = os.path.basename(os.path.normpath(config_only))
        directory = _hf_snapshot(name, repo_id, commit,
                                 list(HF_FILES + SENTENCE_TRANSFORMERS_FILES), config_only)
    if not os.path.isfile(os.path.join(directory, HF_WEIGHTS)):
        raise CheckpointError(
            f"{name} has no {HF_WEIGHTS}, the only weights file keras_bert reads (no "
            "torch); pick a revision that has one (the Hub's safetensors conversion is "
            "often an open pull request: @refs/pr/N), or convert its weights.")
    return directory


def _hf_snapshot(name: str, repo_id: str, revision: str | None, files: list[str],
                 snapshot: str | None = None) -> str:
    """The snapshot directory of `repo_id` at `revision` (`snapshot`, where known)
    holding those of `files` the repo has. A broken cached copy is a `CheckpointError`
    (`_broken_hf_copy`): one of `files` a link to a blob that is gone, or, where the Hub
    cannot fill it in (offline, or huggingface_hub finds no copy), the config or the
    weights absent, or a file huggingface_hub names as missing."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.utils import LocalEntryNotFoundError

    required = (HF_CONFIG, HF_WEIGHTS)
    try:
        directory = snapshot_download(repo_id, revision=revision, allow_patterns=files)
    except LocalEntryNotFoundError as e:  # IncompleteSnapshotError names its snapshot
        directory, message = getattr(e, "snapshot_path", None) or snapshot, str(e)
        gone = _gone(directory, files, lambda f: f in required or f in message)
        if not gone:
            raise
        raise _broken_hf_copy(name, repo_id, directory, gone) from None
    gone = _gone(directory, files, lambda f: constants.HF_HUB_OFFLINE and f in required)
    if gone:
        raise _broken_hf_copy(name, repo_id, directory, gone)
    return directory


def _gone(snapshot: str | None, files: list[str], absence_counts: Callable[[str], bool]
          ) -> list[str]:
    """Those of `files` a cached snapshot has lost: links to blobs that are gone, and
    the absent ones for which `absence_counts`."""
    if snapshot is None or not os.path.isdir(snapshot):
        return []
    paths = {f: os.path.join(snapshot, f) for f in files}
    return [f for f, path in paths.items() if _dangling(path)
            or (not os.path.lexists(path) and absence_counts(f))]


def _dangling(path: str) -> bool:
    """Whether `path` is a symbolic link to nothing (a cached file whose blob is gone)."""
    return os.path.islink(path) and not os.path.exists(path)


def _broken_hf_copy(name: str, repo_id: str, snapshot: str, gone: list[str]
                    ) -> CheckpointError:
    """The error of a cached snapshot without `gone`: which files, the repo's folder in
    the hub cache to delete, and the command that fetches them again."""
    snapshot = os.path.normpath(snapshot)
    linked = [f for f in gone if _dangling(os.path.join(snapshot, f))]
    why = ("a link to a blob that is gone" if linked else
           "a download cut short; or, read offline, a revision without it")
    return CheckpointError(
        f"{name}'s copy in the Hugging Face cache is {'broken' if linked else 'incomplete'}: "
        f"{snapshot} has no {' or '.join(gone)} ({why}); delete "
        f"{os.path.dirname(os.path.dirname(snapshot))} and run the command again with a "
        f"network (HF_HUB_OFFLINE unset), or run `hf download {repo_id} "
        f"{' '.join(gone)} --revision {os.path.basename(snapshot)}`.")


def _check_bert_config(name: str, config_path: str) -> None:
    """Refuses a repo whose config.json is missing or describes no BERT."""
    if not os.path.isfile(config_path):
        raise CheckpointError(f"{name} has no {HF_CONFIG}: it is no Hugging Face "
                              "transformers model.")
    try:
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise DataError(f"{name}'s {HF_CONFIG} is not valid JSON: {e}",
                        path=config_path) from None
    model_type = config.get("model_type", "bert") if isinstance(config, dict) else None
    if model_type not in HF_MODEL_TYPES:
        raise CheckpointError(
            f"{name} is a {model_type!r} model (its {HF_CONFIG}'s model_type), not BERT: "
            f"keras_bert reads model_type {' or '.join(map(repr, HF_MODEL_TYPES))} only.")


@contextlib.contextmanager
def _hf_errors(name: str):
    """huggingface_hub's errors as keras_bert's, in one line naming the repo."""
    from huggingface_hub import constants
    from huggingface_hub.utils import (
        HFValidationError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        yield
    except RevisionNotFoundError:
        raise InputNotFoundError(f"{name}: the Hugging Face repo has no such revision "
                                 "(branch, tag or commit).") from None
    except RepositoryNotFoundError:
        raise InputNotFoundError(
            f"{name}: no such Hugging Face repo, or it is private or gated (log in with "
            "`hf auth login` or set HF_TOKEN).") from None
    except HFValidationError as e:
        raise ArgumentError(f"{name}: {e}", field="checkpoint") from None
    except (LocalEntryNotFoundError, OfflineModeIsEnabled, ConnectionError,
            TimeoutError) as e:
        raise _hf_unavailable(name, constants, e) from None
    except Exception as e:  # the HTTP client's own transport errors (httpx, requests)
        if type(e).__module__.split(".")[0] not in ("httpx", "httpx2", "requests", "urllib3"):
            raise
        raise _hf_unavailable(name, constants, e) from None


def _hf_unavailable(name: str, constants, error: BaseException) -> CheckpointUnavailableError:
    if constants.HF_HUB_OFFLINE:
        why = "HF_HUB_OFFLINE is set"
    elif "incomplete" in type(error).__name__.lower():
        why = "its cached copy is incomplete and the Hub cannot be reached"
    else:
        why = f"the Hub cannot be reached ({type(error.__cause__ or error).__name__})"
    return CheckpointUnavailableError(
        f"{name} is not in the Hugging Face cache {constants.HF_HUB_CACHE} and {why}; to "
        "work offline, download it once with a network (the same command), set HF_HOME "
        "to a cache that holds it, or pass a local directory with its config.json and "
        f"{HF_WEIGHTS}.")
