"""Checkpoints by name when their download or their cached copy goes wrong: every fault
ends as a user's mistake (exit 2, one line on stderr naming the release or repo and what
to do) and leaves nothing in keras_bert's cache, and a killed download's temporary is
swept by the next download while a running one's is kept.

Never over the internet: Google's release zips (a tiny real checkpoint, zipped here)
come from checkpoint_names_support's local HTTP server, and Hugging Face repos from a
hub cache laid out by hand with HF_HUB_OFFLINE=1 (its `hf_cache` fixture)."""

import importlib
import io
import json
import os
import struct
import subprocess
import sys
import threading
import time
import zipfile

import checkpoint_names_support as support
import pytest
from checkpoint_names_support import BASE, MAIN_COMMIT, SMALL, Handler, cache_repo
from conftest import REPO, VOCAB

from keras_bert.checkpoints import google_release
from keras_bert.cli import main
from keras_bert.core import fileio

SMALL_PATH = "/" + google_release.GOOGLE_RELEASES[SMALL].path
BASE_PATH = "/" + google_release.GOOGLE_RELEASES[BASE].path
SENTENCE = "the model has data"
# The shared fixtures: the local release server (KERAS_BERT_GOOGLE_BASE_URL,
# KERAS_BERT_CACHE under tmp_path) and the empty offline hub cache (HF_HOME).
server = support.server
hf_cache = support.hf_cache


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> str:
    """A tiny Google TF1 checkpoint as a release holds it: bert_config.json, vocab.txt
    and bert_model.ckpt.{index,data-00000-of-00001}."""
    from keras_bert.checkpoints import save_google_checkpoint
    from keras_bert.model.config import BertConfig
    from keras_bert.model.encoder import BertEncoder

    directory = tmp_path_factory.mktemp("release") / "tiny"
    config = BertConfig.from_preset("tiny", vocab_size=len(VOCAB), max_position_embeddings=32)
    save_google_checkpoint(BertEncoder(config), directory)
    (directory / "checkpoint").unlink()  # Google's zips have no checkpoint state file
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return str(directory)


def _zip(directory: str, folder: str = "", leave_out: tuple = ()) -> bytes:
    """The files of `directory` as a release zip (deflated, under `folder`), without
    those whose names start with one of `leave_out`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name in sorted(os.listdir(directory)):
            if not name.startswith(leave_out):
                zipped.write(os.path.join(directory, name), folder + name)
    return buffer.getvalue()


def _damaged(body: bytes, member: str) -> bytes:
    """The zip `body` with the deflate stream of `member` broken (its first bytes a
    reserved block type), its sizes and CRC unchanged."""
    with zipfile.ZipFile(io.BytesIO(body)) as zipped:
        offset = zipped.getinfo(member).header_offset
    name_length, extra_length = struct.unpack("<HH", body[offset + 26:offset + 30])
    start = offset + 30 + name_length + extra_length
    return body[:start] + b"\xff" * 8 + body[start + 8:]


def _one_line_failure(argv, capsys) -> str:
    """Runs `keras-bert ARGV` in-process; asserts exit 2 and one line on stderr, no
    traceback, and returns that line."""
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err)
    return lines[0]


def _encode(name: str) -> list:
    return ["encode", "--model", name, "--max_seq_length", "16", SENTENCE]


def _cache_left(tmp_path) -> list:
    """Everything under the test's keras_bert cache (it should not even exist)."""
    root = tmp_path / "cache"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


# --- Google's releases -------------------------------------------------------------------

def test_a_release_zip_without_its_checkpoint_is_refused_and_not_cached(
        server, release, tmp_path, capsys):
    server.files[SMALL_PATH] = _zip(release, leave_out=("bert_model.ckpt",))
    line = _one_line_failure(_encode(SMALL), capsys)
    for part in (SMALL, server.url + SMALL_PATH, "bert_model.ckpt.index",
                 "run the command again", google_release.GOOGLE_BASE_URL_ENV):
        assert part in line, line
    assert _cache_left(tmp_path) == []


def test_a_release_zip_missing_a_data_shard_is_refused(server, release, tmp_path, capsys):
    server.files[BASE_PATH] = _zip(release, folder=BASE + "/",
                                   leave_out=("bert_model.ckpt.data",))
    line = _one_line_failure(_encode(BASE), capsys)
    assert BASE in line and "bert_model.ckpt.data-* file" in line, line
    assert _cache_left(tmp_path) == []


def test_a_damaged_deflate_stream_is_one_line_and_not_cached(server, release, tmp_path,
                                                              capsys):
    body = _zip(release)
    server.files[SMALL_PATH] = _damaged(body, "bert_model.ckpt.data-00000-of-00001")
    line = _one_line_failure(_encode(SMALL), capsys)
    for part in (SMALL, server.url + SMALL_PATH, "damaged", "run the command again",
                 google_release.GOOGLE_BASE_URL_ENV):
        assert part in line, line
    assert _cache_left(tmp_path) == []
    server.files[SMALL_PATH] = body  # the next run downloads it anew, and it loads
    assert main(_encode(SMALL)) == 0
    assert _cache_left(tmp_path) == ["google", f"google/{SMALL}"] + sorted(
        f"google/{SMALL}/{n}" for n in os.listdir(release))


def test_a_broken_cached_release_names_the_folder_to_delete(server, release, tmp_path,
                                                             capsys):
    """A copy an older keras_bert cached without its checkpoint is no silent failure."""
    target = tmp_path / "cache" / "google" / SMALL
    target.mkdir(parents=True)
    for name in ("bert_config.json", "vocab.txt"):
        (target / name).write_bytes(open(os.path.join(release, name), "rb").read())
    line = _one_line_failure(_encode(SMALL), capsys)
    assert str(target) in line and "delete that folder" in line, line
    assert "bert_model.ckpt.index" in line, line


@pytest.mark.parametrize("value", ["not a url", "storage.googleapis.com/bert_models",
                                   "http://", "http://host:port/bert", "gs://bucket/bert"])
def test_a_malformed_base_url_is_named_before_any_download(value, tmp_path, monkeypatch,
                                                           capsys):
    monkeypatch.setenv(google_release.GOOGLE_BASE_URL_ENV, value)
    monkeypatch.setenv(google_release.CACHE_ENV, str(tmp_path / "cache"))
    line = _one_line_failure(_encode(SMALL), capsys)
    assert f"{google_release.GOOGLE_BASE_URL_ENV}={value!r}" in line, line
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("value", ["http://mirror:8080/bert/", "https://mirror/bert",
                                   "file:///mnt/bert"])
def test_a_well_formed_base_url_is_taken(value, monkeypatch):
    monkeypatch.setenv(google_release.GOOGLE_BASE_URL_ENV, value)
    assert google_release.google_url(SMALL) == value.rstrip("/") + SMALL_PATH


class _GatedHandler(Handler):
    """Sends half of a path in the server's `gates`, then the rest once its gate opens
    (a download in progress for as long as a test needs)."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path.removeprefix("/bert_models")
        gate = self.server.gates.get(path)
        if gate is None:
            super().do_GET()
            return
        body = self.server.files[path]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:len(body) // 2])
        self.wfile.flush()
        if gate.wait(60):
            self.wfile.write(body[len(body) // 2:])


# Resolves a release name in a process of its own, without TensorFlow: the download.
# keras_bert.checkpoints' __init__ (whose readers need TensorFlow) is replaced by a bare
# package.
_RESOLVE = ("import sys, types\n"
            "package = types.ModuleType('keras_bert.checkpoints')\n"
            "package.__path__ = [sys.argv[1]]\n"
            "sys.modules['keras_bert.checkpoints'] = package\n"
            "from keras_bert.checkpoints import remote\n"
            "print(remote.resolve_checkpoint_name(sys.argv[2], progress=False))\n")


def _downloading(name: str) -> subprocess.Popen:
    """A process that downloads the release `name` (`_RESOLVE`) into the test's cache."""
    script = os.path.join(REPO, "keras_bert", "checkpoints")
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.Popen([sys.executable, "-c", _RESOLVE, script, name], env=env,
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _temporary_of(folder, process: subprocess.Popen) -> str:
    """The name of the temporary zip `process` is downloading into in `folder` (waits
    for it to appear)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        names = [n for n in (os.listdir(folder) if folder.is_dir() else ())
                 if fileio.temporary_writer(n) == process.pid]
        if names:
            return names[0]
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError(f"process {process.pid} wrote no temporary in {folder}")


def test_a_killed_download_is_swept_by_the_next_and_a_running_one_kept(
        server, release, tmp_path):
    """Two downloads in processes of their own, both half-way: one killed (SIGKILL, so
    no cleanup runs), its temporary swept by the next download, the other's kept until
    it completes."""
    server.RequestHandlerClass = _GatedHandler
    gates = {SMALL_PATH: threading.Event(), BASE_PATH: threading.Event()}
    server.gates = dict(gates)
    server.files = {SMALL_PATH: _zip(release), BASE_PATH: _zip(release, folder=BASE + "/")}
    folder = tmp_path / "cache" / "google"
    killed, running = _downloading(SMALL), _downloading(BASE)
    try:
        dead = _temporary_of(folder, killed)
        live = _temporary_of(folder, running)
        killed.kill()
        killed.communicate()
        assert sorted(os.listdir(folder)) == sorted([dead, live])  # the kill left it
        del server.gates[SMALL_PATH]
        assert main(_encode(SMALL)) == 0
        assert sorted(os.listdir(folder)) == sorted([SMALL, live])
        gates[BASE_PATH].set()
        out, err = running.communicate(timeout=60)
        assert running.returncode == 0, err
        assert out.strip() == str(folder / BASE)
        assert sorted(os.listdir(folder)) == sorted([BASE, SMALL])
    finally:
        for gate in gates.values():
            gate.set()
        for process in (killed, running):
            if process.poll() is None:
                process.kill()
                process.communicate()


def test_the_checkpoint_prefix_agrees_with_the_reader():
    from keras_bert.checkpoints.google import GOOGLE_CKPT

    assert google_release.GOOGLE_CKPT == GOOGLE_CKPT


# --- Hugging Face ------------------------------------------------------------------------

REPO_ID = "org/tiny-bert"
HF_NAME = f"hf://{REPO_ID}"


def _cached_repo(hub, weights: str | None) -> str:
    """`REPO_ID` in the hub cache, its model.safetensors `weights`: "dangling" (a link
    to a blob the cache lacks) or None (absent). Returns the repo's cache folder."""
    config = json.dumps({"model_type": "bert", "vocab_size": len(VOCAB), "hidden_size": 8,
                         "num_hidden_layers": 1, "num_attention_heads": 2,
                         "intermediate_size": 16}).encode()
    snapshot = cache_repo(hub, REPO_ID, MAIN_COMMIT, {
        "config.json": config, "vocab.txt": ("\n".join(VOCAB) + "\n").encode()})
    if weights == "dangling":
        os.symlink(os.path.join("..", "..", "blobs", "0" * 64),
                   os.path.join(snapshot, "model.safetensors"))
    return os.path.dirname(os.path.dirname(snapshot))


def test_a_dangling_blob_link_is_named_as_a_broken_cached_copy(hf_cache, capsys):
    folder = _cached_repo(hf_cache, "dangling")
    line = _one_line_failure(_encode(HF_NAME), capsys)
    for part in (HF_NAME, "broken", "model.safetensors", f"delete {folder} ",
                 f"hf download {REPO_ID} model.safetensors --revision {MAIN_COMMIT}"):
        assert part in line, line
    assert "refs/pr" not in line, line


def test_a_file_missing_offline_is_named_as_an_incomplete_cached_copy(hf_cache, capsys):
    folder = _cached_repo(hf_cache, None)
    line = _one_line_failure(_encode(HF_NAME), capsys)
    for part in (HF_NAME, "incomplete", "model.safetensors", f"delete {folder} ",
                 "HF_HUB_OFFLINE", "hf download"):
        assert part in line, line


def test_a_copy_missing_a_file_its_cached_listing_names_is_named(hf_cache, monkeypatch,
                                                                 capsys):
    """huggingface_hub 2 keeps each commit's file listing in its cache; offline, a listed
    file missing from the snapshot is its LocalEntryNotFoundError (or, by branch name,
    IncompleteSnapshotError), named here like the rest. (Its own "Fetching N files" bar
    is switched off: the one line asked of keras_bert is its error.)"""
    errors = pytest.importorskip("huggingface_hub.errors")
    if not hasattr(errors, "IncompleteSnapshotError"):
        pytest.skip("this huggingface_hub keeps no file listings")
    bars = importlib.import_module("huggingface_hub.utils.tqdm")
    monkeypatch.setitem(bars.progress_bar_states, "_global", False)
    folder = _cached_repo(hf_cache, None)
    listing = {name: {"size": 1, "blob_id": f"{i:040x}"}
               for i, name in enumerate(("config.json", "vocab.txt", "model.safetensors"))}
    os.makedirs(os.path.join(folder, "trees"))
    with open(os.path.join(folder, "trees", f"{MAIN_COMMIT}.json"), "w") as f:
        json.dump({"format_version": 1, "files": listing}, f)
    line = _one_line_failure(_encode(HF_NAME), capsys)
    for part in (HF_NAME, "model.safetensors", f"delete {folder} "):
        assert part in line, line
