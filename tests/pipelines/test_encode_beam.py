"""`keras-bert encode --output_dir` on Apache Beam (DirectRunner): Parquet shards with one
row per non-blank line of every input file, exactly once, embeddings equal to
`BertTextEmbedder.encode` (a tiny random encoder) and to sentence-transformers' own
(the installed MiniLM, tests/fixtures/embeddings/minilm_refs.npz); a rerun after a kill
writes only the missing shards; another job's settings, a folder that is not ours and
bad input are refused before any work, leaving nothing behind. Skips when apache-beam
or pyarrow (the `beam` extra) is not installed."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from cli_support import one_line_error, tiny_cased_checkpoint
from conftest import REPO, minilm_path, snapshot_files

pytest.importorskip("apache_beam", reason="pip install \"keras-bert[beam]\"")
pq = pytest.importorskip("pyarrow.parquet", reason="pip install \"keras-bert[beam]\"")

from keras_bert.cli import main  # noqa: E402

VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
REFS = os.path.join(REPO, "tests", "fixtures", "embeddings", "minilm_refs.npz")
# Two files: blank and whitespace-only lines, a CRLF line, no final newline in the second.
FILES = {
    "a.txt": "the cat sat on the mat\n\na dog runs in the park\r\n   \nstock prices fell today\n"
             "the weather is cold and rainy\n",
    "b.txt": "she plays the piano well\n\n\nthe cat sat on the mat\nmarkets went down",
}


def _lines(files):
    """(file name, 1-based line number, text) of every non-blank line, read here as the
    in-memory path reads a file."""
    return [(name, number, line.rstrip("\r"))
            for name, text in sorted(files.items())
            for number, line in enumerate(text.split("\n"), 1) if line.strip()]


def _write_corpus(directory, files=FILES):
    os.makedirs(directory, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8", newline="") as f:
            f.write(text)
    return os.path.join(directory, "*.txt")


def _rows(output_dir):
    """The Parquet rows of a folder, as a reader of it sees them: sorted by (file, line)."""
    table = pq.read_table(output_dir)
    rows = sorted(zip(table.column("source_file").to_pylist(),
                      table.column("line_number").to_pylist(), table.column("text").to_pylist(),
                      table.column("embedding").to_pylist()), key=lambda r: r[:2])
    return [(os.path.basename(f), n, t) for f, n, t, _ in rows], np.array(
        [e for *_, e in rows], np.float32)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_cased_checkpoint(tmp_path_factory.mktemp("beam_encode") / "tiny")


@pytest.fixture(scope="module")
def beam_run(tiny_model, tmp_path_factory):
    """One DirectRunner run over the two files, 2 rows a shard, shared by the tests."""
    root = tmp_path_factory.mktemp("beam_run")
    pattern = _write_corpus(str(root / "corpus"))
    out = str(root / "out")
    argv = ["encode", "--input_file", pattern, "--model", tiny_model, "--output_dir", out,
            "--runner", "DirectRunner", "--rows_per_shard", "2", "--batch_size", "3"]
    assert main(argv) == 0
    return argv, out


def test_every_line_exactly_once_with_the_embedders_vectors(beam_run, tiny_model):
    from keras_bert import BertTextEmbedder

    _, out = beam_run
    want = _lines(FILES)
    got, vectors = _rows(out)
    assert got == want  # every non-blank line once: none lost, none twice
    expected = BertTextEmbedder.from_preset(tiny_model).encode([t for *_, t in want])
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    # Shards never span files: 4 + 3 lines at 2 a shard, 2 + 2 shards.
    shards = sorted(n for n in os.listdir(out) if n.endswith(".parquet"))
    assert shards == [f"part-{i:05d}.parquet" for i in range(4)]
    schema = pq.read_schema(os.path.join(out, shards[0]))
    assert schema.names == ["text", "embedding", "source_file", "line_number"]
    assert str(schema.field("embedding").type.value_type) == "float"
    manifest = json.load(open(os.path.join(out, "_manifest.json")))
    assert manifest["complete"] and manifest["rows"] == len(want)
    assert manifest["dimension"] == vectors.shape[1]


def test_a_rerun_of_a_complete_job_writes_nothing(beam_run, capsys):
    argv, out = beam_run
    before = {n: os.stat(os.path.join(out, n)).st_mtime_ns for n in os.listdir(out)
              if n.endswith(".parquet")}
    assert main(argv) == 0
    assert "4 shards already complete, skipped" in capsys.readouterr().out
    assert before == {n: os.stat(os.path.join(out, n)).st_mtime_ns for n in before}


def test_a_killed_run_is_finished_by_a_rerun_exactly_once(beam_run, tmp_path, capsys):
    # What a kill leaves: some shards complete, one half-written under its hidden
    # temporary name (its writer dead), the manifest not complete.
    argv, done_out = beam_run
    out = str(tmp_path / "out")
    shutil.copytree(done_out, out)
    os.remove(os.path.join(out, "part-00001.parquet"))
    os.remove(os.path.join(out, "part-00003.parquet"))
    half = os.path.join(out, ".part-00001.parquet.tmp-999999999-1a2b3c4d")
    with open(os.path.join(done_out, "part-00001.parquet"), "rb") as f:
        open(half, "wb").write(f.read()[:100])
    manifest = json.load(open(os.path.join(out, "_manifest.json")))
    manifest["complete"] = False
    json.dump(manifest, open(os.path.join(out, "_manifest.json"), "w"))
    kept = {n: os.stat(os.path.join(out, n)).st_mtime_ns
            for n in ("part-00000.parquet", "part-00002.parquet")}
    assert main([*argv[:6], out, *argv[7:]]) == 0
    assert "2 shards already complete, skipped" in capsys.readouterr().out
    assert not os.path.exists(half)
    assert kept == {n: os.stat(os.path.join(out, n)).st_mtime_ns for n in kept}
    got, vectors = _rows(out)
    want, want_vectors = _rows(done_out)
    assert got == want == _lines(FILES)
    np.testing.assert_allclose(vectors, want_vectors, atol=1e-6)
    assert json.load(open(os.path.join(out, "_manifest.json")))["complete"]


def test_remote_inputs_and_output_through_tf_io_gfile(tiny_model):
    # ram:// stands for gs://: the plan, the shards and the manifest go through
    # tf.io.gfile; a shard removed there is written again by the rerun.
    import tensorflow as tf

    from keras_bert.tasks.embedding.beam import encode_corpus_beam

    for name, text in FILES.items():
        with tf.io.gfile.GFile(f"ram://beam_in/{name}", "w") as f:
            f.write(text)
    lines = []
    manifest = encode_corpus_beam("ram://beam_in/*.txt", "ram://beam_out", tiny_model,
                                  rows_per_shard=3, report=lines.append)
    tf.io.gfile.remove("ram://beam_out/part-00001.parquet")
    encode_corpus_beam("ram://beam_in/*.txt", "ram://beam_out", tiny_model, rows_per_shard=3,
                       report=lines.append)
    assert "2 shards already complete, skipped" in lines[2]
    rows = []
    for shard in manifest["shards"]:
        with tf.io.gfile.GFile(f"ram://beam_out/{shard['name']}", "rb") as f:
            table = pq.read_table(__import__("pyarrow").BufferReader(f.read()))
        rows += zip(table.column("source_file").to_pylist(),
                    table.column("line_number").to_pylist(), table.column("text").to_pylist())
    assert [(os.path.basename(f), n, t) for f, n, t in rows] == _lines(FILES)


@pytest.mark.parametrize("change, setting", [
    (("--max_seq_length", "16"), "sequence_length None, now 16"),
    (("--rows_per_shard", "3"), "rows_per_shard 2, now 3"),
    (("--precision", "mixed_bfloat16"), "dtype None, now 'mixed_bfloat16'")])
def test_another_jobs_settings_are_refused(beam_run, capsys, change, setting):
    argv, out = beam_run
    before = snapshot_files(out)
    one_line_error([*argv, *change], capsys, "--output_dir", "another job", setting,
                   "remove the folder")
    assert snapshot_files(out) == before


def test_other_inputs_are_refused(beam_run, tmp_path, capsys):
    argv, out = beam_run
    pattern = _write_corpus(str(tmp_path / "corpus"), {**FILES, "b.txt": "changed\n"})
    one_line_error([*argv[:2], pattern, *argv[3:]], capsys, "another job", "the input files")


def _argv(tmp_path, model, out, *extra):
    return ["encode", "--input_file", _write_corpus(str(tmp_path / "corpus")), "--model",
            model, "--output_dir", out, *extra]


def test_mistakes_are_refused_before_any_work(tiny_model, tmp_path, capsys):
    pattern = _write_corpus(str(tmp_path / "corpus"))
    out = str(tmp_path / "out")
    base = ["encode", "--model", tiny_model]
    cases = [
        ([*base, "--input_file", str(tmp_path / "none" / "*.txt"), "--output_dir", out],
         ("matches no file",)),
        ([*base, "--input_file", pattern, "--output_dir", out, "--output", str(tmp_path / "e.npy")],
         ("--output", "--output_dir", "not both")),
        ([*base, "A sentence.", "--input_file", pattern, "--output_dir", out],
         ("--input_file", "command line")),
        ([*base, "--input_file", pattern, "--output_dir", str(tmp_path / "corpus" / "a.txt")],
         ("--output_dir", "is a file")),
        ([*base, "--input_file", pattern, "--output_dir", out, "--runner", "DirectRunner",
          "--beam_options=--runnr=X"], ("--runnr",)),
        ([*base, "--input_file", pattern, "--runner", "DirectRunner"], ("--output_dir",)),
    ]
    for argv, words in cases:
        one_line_error(argv, capsys, *words)
    assert not os.path.exists(out)


def test_non_utf8_input_is_named_by_file_and_line(tiny_model, tmp_path, capsys):
    pattern = _write_corpus(str(tmp_path / "corpus"))
    (tmp_path / "corpus" / "c.txt").write_bytes(b"fine\n\nbad \xff byte\n")
    out = str(tmp_path / "out")
    one_line_error(["encode", "--input_file", pattern, "--model", tiny_model, "--output_dir",
                    out], capsys, "c.txt:3", "not UTF-8")
    assert not os.path.exists(out)


def test_a_folder_that_is_not_ours_is_refused(tiny_model, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    before = snapshot_files(str(out))
    one_line_error(_argv(tmp_path, tiny_model, str(out)), capsys, "holds other files",
                   "_manifest.json")
    assert snapshot_files(str(out)) == before


def test_missing_beam_says_what_to_install(tiny_model, tmp_path, capsys, monkeypatch):
    import keras_bert.data
    import keras_bert.tasks.embedding

    monkeypatch.setitem(sys.modules, "apache_beam", None)  # `import apache_beam` fails
    for package in (keras_bert.tasks.embedding, keras_bert.data):  # as if never imported
        monkeypatch.delitem(sys.modules, f"{package.__name__}.beam", raising=False)
        monkeypatch.delattr(package, "beam", raising=False)
    one_line_error(_argv(tmp_path, tiny_model, str(tmp_path / "out")), capsys,
                   'pip install "keras-bert[beam]"')
    assert not os.path.exists(tmp_path / "out")


def test_minilm_parquet_equals_sentence_transformers(tmp_path):
    # The 40 reference sentences over two files with blank lines: every one exactly once,
    # within 1e-5 of sentence-transformers' own embeddings.
    refs = np.load(REFS)
    sentences = [str(s) for s in refs["sentences"]]
    files = {"a.txt": "\n".join(sentences[:25]) + "\n\n",
             "b.txt": "\n" + "\n\n".join(sentences[25:]) + "\n"}
    out = str(tmp_path / "out")
    assert main(["encode", "--input_file", _write_corpus(str(tmp_path / "corpus"), files),
                 "--model", minilm_path(), "--output_dir", out, "--rows_per_shard",
                 "16"]) == 0
    got, vectors = _rows(out)
    assert got == _lines(files)
    assert sorted(t for *_, t in got) == sorted(sentences)
    by_text = dict(zip(sentences, refs["mean"]))
    want = np.stack([by_text[t] for *_, t in got])
    np.testing.assert_allclose(vectors, want, atol=1e-5)


@pytest.mark.slow
def test_a_real_kill_then_a_rerun_writes_every_line_once(tiny_model, tmp_path):
    # The command killed (SIGKILL) once its first shards are written, then run again.
    files = {f"{i}.txt": "\n".join(f"line {j} of file {i}" for j in range(200)) + "\n"
             for i in range(3)}
    argv = [sys.executable, "-m", "keras_bert", "encode", "--input_file",
            _write_corpus(str(tmp_path / "corpus"), files), "--model", tiny_model,
            "--output_dir", str(tmp_path / "out"), "--rows_per_shard", "5"]
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if os.path.isdir(tmp_path / "out") and sum(
                n.endswith(".parquet") for n in os.listdir(tmp_path / "out")) >= 3:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    written = [n for n in os.listdir(tmp_path / "out") if n.endswith(".parquet")]
    assert 3 <= len(written) < 120
    assert subprocess.run(argv, env=env, capture_output=True).returncode == 0
    got, _ = _rows(str(tmp_path / "out"))
    assert got == _lines(files)
