"""What the tests of checkpoints by name (test_checkpoint_names, test_download_faults)
share, never over the internet: the names they resolve, a Hugging Face hub cache laid
out by hand under HF_HOME (`hf_cache`, `cache_repo`), and a local HTTP server of Google's
release zips that KERAS_BERT_GOOGLE_BASE_URL points at (`server`, `Server`, `Handler`).
The fixtures are taken into a test module by assignment (`server = support.server`)."""

import http.server
import io
import json
import os
import shutil
import threading
import zipfile

import pytest

from keras_bert.checkpoints import google_release

MINILM = "hf://sentence-transformers/all-MiniLM-L6-v2"
MAIN_COMMIT = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
OLD_COMMIT = "7dbbc90392e2f80f3d3c277d6e90027e55de9125"
SMALL = "uncased_L-2_H-128_A-2"  # a 2020 release: its zip holds the files at the top
BASE = "cased_L-12_H-768_A-12"  # a 2018 release: its zip holds one folder, NAME/


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """An empty hub cache under HF_HOME with HF_HUB_OFFLINE=1, set both in the
    environment and in huggingface_hub's constants (read once, at its import)."""
    constants = pytest.importorskip("huggingface_hub.constants")
    home = tmp_path / "hf"
    hub = home / "hub"
    hub.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return hub


def cache_repo(hub, repo_id: str, commit: str, files: dict, main: bool = True) -> str:
    """Lays out one snapshot of a repo as huggingface_hub caches it (files copied in
    place of its blob links); `files` maps names to a source path or to bytes."""
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for name, source in files.items():
        if isinstance(source, bytes):
            (snapshot / name).write_bytes(source)
        else:
            shutil.copyfile(source, snapshot / name)
    if main:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(commit)
    return str(snapshot)


class Server(http.server.ThreadingHTTPServer):
    """Serves `files` (URL path -> bytes); a path in `truncated` gets its full
    Content-Length but only half its bytes."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.files, self.truncated = {}, set()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/bert_models"

    def stop(self):
        self.shutdown()
        self.server_close()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = self.server.files.get(self.path.removeprefix("/bert_models"))
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:len(body) // 2] if self.path in self.server.truncated
                         else body)

    def log_message(self, *args):
        pass


def release_zip(folder: str = "") -> bytes:
    """A zip laid out like a Google release (dummy checkpoint files)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        config = {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                  "intermediate_size": 512, "vocab_size": 5, "hidden_act": "gelu"}
        zipped.writestr(folder + "bert_config.json", json.dumps(config))
        zipped.writestr(folder + "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
        zipped.writestr(folder + "bert_model.ckpt.index", b"index")
        zipped.writestr(folder + "bert_model.ckpt.data-00000-of-00001", os.urandom(4096))
    return buffer.getvalue()


@pytest.fixture
def server(tmp_path, monkeypatch):
    served = Server()
    served.files = {"/2020_02_20/uncased_L-2_H-128_A-2.zip": release_zip(),
                    "/2018_10_18/cased_L-12_H-768_A-12.zip": release_zip(BASE + "/")}
    monkeypatch.setenv(google_release.GOOGLE_BASE_URL_ENV, served.url)
    monkeypatch.setenv(google_release.CACHE_ENV, str(tmp_path / "cache"))
    yield served
    served.stop()
