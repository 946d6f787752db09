"""Checkpoints by name (keras_bert.checkpoints.remote and google_release), never over
the internet: a Hugging Face cache laid out by hand under HF_HOME (the hub cache's
models--ORG--NAME/{refs,snapshots} layout), and Google's release zips served by a local
HTTP server that KERAS_BERT_GOOGLE_BASE_URL points at (checkpoint_names_support)."""

import hashlib
import json
import os
import socket
import subprocess
import sys

import checkpoint_names_support as support
import numpy as np
import pytest
from checkpoint_names_support import (
    BASE,
    MAIN_COMMIT,
    MINILM,
    OLD_COMMIT,
    SMALL,
    cache_repo,
)
from conftest import REPO, minilm_path

from keras_bert.checkpoints import google_release, remote
from keras_bert.core.errors import (
    ArgumentError,
    CheckpointError,
    CheckpointUnavailableError,
    InputNotFoundError,
    UserInputError,
)

# The shared fixtures: the offline hub cache (HF_HOME) and the local release server.
hf_cache = support.hf_cache
server = support.server


# --- Hugging Face ---------------------------------------------------------------------

def _minilm_files() -> dict:
    model = minilm_path()
    return {n: os.path.join(model, n) for n in sorted(os.listdir(model))
            if os.path.isfile(os.path.join(model, n))}


def test_hf_name_resolves_to_the_cached_snapshot_with_the_packages_files(hf_cache):
    files = _minilm_files()
    snapshot = cache_repo(hf_cache, "sentence-transformers/all-MiniLM-L6-v2", MAIN_COMMIT,
                           files)
    directory = remote.resolve_checkpoint_name(MINILM)
    assert os.path.samefile(directory, snapshot)
    for name in remote.HF_FILES:
        with open(os.path.join(directory, name), "rb") as got, open(files[name], "rb") as want:
            assert got.read() == want.read(), name
    from keras_bert.checkpoints import load_encoder, read_config

    assert read_config(directory).hidden_size == 384
    # load_encoder by name is the encoder of the local directory, weight for weight.
    by_name, local = load_encoder(MINILM), load_encoder(minilm_path())
    assert by_name.config == local.config
    for a, b in zip(by_name.weights, local.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_revision_pin_picks_its_snapshot(hf_cache):
    files = _minilm_files()
    cache_repo(hf_cache, "sentence-transformers/all-MiniLM-L6-v2", MAIN_COMMIT, files)
    old_config = json.loads(open(files["config.json"]).read()) | {"hidden_dropout_prob": 0.2}
    old = cache_repo(hf_cache, "sentence-transformers/all-MiniLM-L6-v2", OLD_COMMIT,
                      {**files, "config.json": json.dumps(old_config).encode()}, main=False)
    directory = remote.resolve_checkpoint_name(f"{MINILM}@{OLD_COMMIT}")
    assert os.path.samefile(directory, old)
    assert json.load(open(os.path.join(directory, "config.json")))["hidden_dropout_prob"] == 0.2


def test_an_uncached_repo_offline_is_one_clear_error(hf_cache):
    with pytest.raises(CheckpointUnavailableError) as caught:
        remote.resolve_checkpoint_name(MINILM)
    message = str(caught.value)
    assert "\n" not in message and isinstance(caught.value, UserInputError)
    for part in (MINILM, "HF_HUB_OFFLINE", "HF_HOME", "local directory"):
        assert part in message
    assert os.listdir(hf_cache) == []  # nothing left behind


def test_an_unreachable_hub_is_the_same_error(hf_cache, monkeypatch):
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(CheckpointUnavailableError, match="the Hub cannot be reached"):
        remote.resolve_checkpoint_name(MINILM)


def test_a_repo_of_another_architecture_is_refused_naming_it(hf_cache):
    config = json.dumps({"model_type": "gpt2", "n_layer": 12}).encode()
    cache_repo(hf_cache, "openai-community/gpt2", MAIN_COMMIT, {"config.json": config})
    with pytest.raises(CheckpointError, match="'gpt2' model"):
        remote.resolve_checkpoint_name("hf://openai-community/gpt2")


def test_a_repo_without_safetensors_is_refused(hf_cache):
    config = open(_minilm_files()["config.json"], "rb").read()
    cache_repo(hf_cache, "org/torch-only", MAIN_COMMIT, {"config.json": config})
    with pytest.raises(CheckpointError, match="has no model.safetensors"):
        remote.resolve_checkpoint_name("hf://org/torch-only")


@pytest.mark.parametrize("name", ["hf://", "hf://a/b/c", "hf://org/name@", "hf://org/na me"])
def test_malformed_hf_names_are_argument_errors(name):
    with pytest.raises(ArgumentError, match="hf://ORG/NAME"):
        remote.resolve_checkpoint_name(name)


# --- Google's releases -------------------------------------------------------------------

def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cached(tmp_path) -> list:
    folder = tmp_path / "cache" / "google"
    return sorted(os.listdir(folder)) if folder.is_dir() else []


@pytest.mark.parametrize("name", [SMALL, BASE])
def test_a_release_is_downloaded_once_then_read_from_the_cache(server, tmp_path, name):
    directory = remote.resolve_checkpoint_name(name, progress=False)
    assert directory == str(tmp_path / "cache" / "google" / name)
    assert sorted(os.listdir(directory)) == [
        "bert_config.json", "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index",
        "vocab.txt"]
    assert _cached(tmp_path) == [name]  # no zip, no temporary
    server.stop()
    assert remote.resolve_checkpoint_name(name) == directory
    assert remote.resolve_checkpoint_name(f"{name}/bert_model.ckpt") == os.path.join(
        directory, "bert_model.ckpt")


def test_a_truncated_download_fails_cleanly(server, tmp_path):
    server.truncated.add("/bert_models/2020_02_20/uncased_L-2_H-128_A-2.zip")
    with pytest.raises(CheckpointUnavailableError, match="stopped after") as caught:
        remote.resolve_checkpoint_name(SMALL, progress=False)
    assert "\n" not in str(caught.value)
    assert _cached(tmp_path) == []


def test_an_unreachable_server_without_a_cache_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(google_release.GOOGLE_BASE_URL_ENV, f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv(google_release.CACHE_ENV, str(tmp_path / "cache"))
    with pytest.raises(CheckpointUnavailableError) as caught:
        remote.resolve_checkpoint_name(SMALL, progress=False)
    message = str(caught.value)
    assert "\n" not in message and isinstance(caught.value, InputNotFoundError)
    for part in (SMALL, "download that zip by hand", google_release.CACHE_ENV):
        assert part in message
    assert _cached(tmp_path) == []
    assert not (tmp_path / "cache").exists()  # nor the cache directories it would have made


def test_an_interrupted_download_leaves_nothing(server, tmp_path, monkeypatch):
    def interrupted(name, url, archive, staging):
        raise KeyboardInterrupt

    monkeypatch.setattr(google_release, "_extract", interrupted)
    with pytest.raises(KeyboardInterrupt):
        remote.resolve_checkpoint_name(SMALL, progress=False)
    assert _cached(tmp_path) == []


def test_a_checksum_mismatch_is_refused_and_a_match_kept(server, tmp_path, monkeypatch):
    body = server.files["/2020_02_20/uncased_L-2_H-128_A-2.zip"]
    path = google_release.GOOGLE_RELEASES[SMALL].path
    monkeypatch.setitem(google_release.GOOGLE_RELEASES, SMALL, google_release.GoogleRelease(path, "0" * 64))
    with pytest.raises(CheckpointError, match="SHA-256"):
        remote.resolve_checkpoint_name(SMALL, progress=False)
    assert _cached(tmp_path) == []
    digest = hashlib.sha256(body).hexdigest()
    monkeypatch.setitem(google_release.GOOGLE_RELEASES, SMALL, google_release.GoogleRelease(path, digest))
    assert os.path.isdir(remote.resolve_checkpoint_name(SMALL, progress=False))


def test_a_download_that_is_no_zip_is_refused(server, tmp_path):
    server.files["/2020_02_20/uncased_L-2_H-128_A-2.zip"] = b"<html>moved</html>"
    with pytest.raises(CheckpointError, match="no zip archive"):
        remote.resolve_checkpoint_name(SMALL, progress=False)
    assert _cached(tmp_path) == []


# --- names and paths ---------------------------------------------------------------------

def test_local_paths_pass_through_and_win_over_release_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / SMALL).mkdir()
    for path in (SMALL, str(tmp_path), "no/such/dir", "gs://bucket/bert"):
        assert remote.resolve_checkpoint_name(path) == path
    assert not remote.is_checkpoint_name(SMALL)


def test_a_near_miss_of_a_release_name_suggests_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputNotFoundError, match="did you mean 'uncased_L-12_H-768_A-12'"):
        remote.resolve_checkpoint_name("uncased_L-12_H-768_A-12.zip")


def test_the_release_table_follows_google_research_bert():
    assert len(google_release.GOOGLE_RELEASES) == 32  # 24 small BERTs + 9 releases, one shared
    assert google_release.google_url("wwm_cased_L-24_H-1024_A-16").endswith(
        "/2019_05_30/wwm_cased_L-24_H-1024_A-16.zip")
    assert google_release.GOOGLE_RELEASES["uncased_L-12_H-768_A-12"].path.startswith("2018_10_18/")


def test_file_names_agree_with_the_readers():
    from keras_bert.checkpoints.google import GOOGLE_CONFIG
    from keras_bert.checkpoints.huggingface import HF_CONFIG, HF_WEIGHTS

    assert (remote.HF_CONFIG, remote.HF_WEIGHTS, google_release.GOOGLE_CONFIG) == (
        HF_CONFIG, HF_WEIGHTS, GOOGLE_CONFIG)


def test_the_modules_import_neither_tensorflow_nor_huggingface_hub():
    """Loaded on their own (keras_bert.checkpoints' __init__, whose readers need
    TensorFlow, replaced by a bare package), `remote` and `google_release` pull in
    neither."""
    probe = ("import sys, types\n"
             "package = types.ModuleType('keras_bert.checkpoints')\n"
             "package.__path__ = [sys.argv[1]]\n"
             "sys.modules['keras_bert.checkpoints'] = package\n"
             "import keras_bert.checkpoints.remote\n"
             "assert 'keras_bert.checkpoints.google_release' in sys.modules\n"
             "print(sorted({'tensorflow', 'huggingface_hub'} & set(sys.modules)))\n")
    path = os.path.join(REPO, "keras_bert", "checkpoints")
    out = subprocess.run([sys.executable, "-c", probe, path], capture_output=True,
                         text=True, check=True, cwd=REPO).stdout
    assert out.strip() == "[]"


def test_encode_by_name_offline_without_a_copy_exits_2_with_one_line(tmp_path):
    """The command as a user runs it, in a fresh process: HF_HUB_OFFLINE=1 and an empty
    HF_HOME give exit 2 and one line naming the repo, no traceback, nothing written."""
    import subprocess
    import sys

    home = tmp_path / "hf"
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": REPO}
    proc = subprocess.run([sys.executable, "-m", "keras_bert", "encode", "--model", MINILM,
                           "a sentence"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "sentence-transformers/all-MiniLM-L6-v2" in lines[0] and "offline" in lines[0]
    assert not home.exists() or not any(home.rglob("*.safetensors"))


def test_a_name_is_resolved_once_a_process(hf_cache, monkeypatch):
    """A command reads a checkpoint's config, vocab, casing and weights: the Hub is asked
    for a name once, not at each of them."""
    cache_repo(hf_cache, "sentence-transformers/all-MiniLM-L6-v2", MAIN_COMMIT,
                _minilm_files())
    calls = []
    fetch = remote._hf_snapshot
    monkeypatch.setattr(remote, "_hf_snapshot", lambda *a: calls.append(a) or fetch(*a))
    first = remote.resolve_checkpoint_name(MINILM)
    assert remote.resolve_checkpoint_name(MINILM) == first
    assert len(calls) == 2  # the config, then the files: the first time only
