"""`keras-bert search`: its JSON lines, ids that are corpus line numbers, the index kept
and reused (the corpus not encoded again), refused for another corpus or model, hits
equal to an exact cosine search computed here with numpy, and bad input that exits 2
with one line and writes nothing. A tiny random-weight encoder serves the plumbing; the
installed MiniLM checks real paraphrases."""

import json
import os
import shutil
import sys

import numpy as np
import pytest
from cli_support import one_line_error, tiny_cased_checkpoint
from conftest import REPO, minilm_path, snapshot_files

from keras_bert.cli import main

VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
CORPUS = ["the cat sat on the mat", "", "a dog runs in the park", "stock prices fell today",
          "the weather is cold and rainy", "   ", "she plays the piano well"]
QUERIES = ["a cat on a mat", "markets went down", "music on the piano"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_cased_checkpoint(tmp_path_factory.mktemp("search") / "tiny")


def _files(tmp_path, corpus=CORPUS, queries=QUERIES):
    (tmp_path / "corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    (tmp_path / "queries.txt").write_text("\n".join(queries) + "\n", encoding="utf-8")
    return str(tmp_path / "corpus.txt"), str(tmp_path / "queries.txt")


def _search(tmp_path, model, *extra, capsys=None, corpus=None, queries=None):
    corpus_file, queries_file = (corpus, queries) if corpus else _files(tmp_path)
    out = str(tmp_path / "hits.jsonl")
    argv = ["search", "--corpus", corpus_file, "--queries", queries_file, "--model", model,
            "--index_dir", str(tmp_path / "index"), "--output", out, "--noprogress", *extra]
    assert main(argv) == 0
    with open(out, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _exact(model, corpus, queries, k):
    """Top-k (ids, scores) by cosine, from the embedder's own vectors with numpy."""
    from keras_bert import BertTextEmbedder

    embedder = BertTextEmbedder.from_preset(model)
    ids = np.array([i for i, line in enumerate(corpus) if line.strip()])
    docs = embedder.encode([corpus[i] for i in ids])
    query = embedder.encode(queries)
    docs = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    query = query / np.linalg.norm(query, axis=1, keepdims=True)
    scores = query.astype(np.float64) @ docs.T.astype(np.float64)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return ids[order], np.take_along_axis(scores, order, 1)


def test_hits_are_corpus_lines_by_exact_cosine_and_the_index_is_reused(
        tiny_model, tmp_path, monkeypatch, capsys):
    from keras_bert import BertTextEmbedder

    hits = _search(tmp_path, tiny_model, "--top_k", "3")
    assert [h["query"] for h in hits] == QUERIES
    want_ids, want_scores = _exact(tiny_model, CORPUS, QUERIES, 3)
    for row, ids, scores in zip(hits, want_ids, want_scores):
        assert list(row) == ["query", "hits"] and len(row["hits"]) == 3
        assert [list(h) for h in row["hits"]] == [["id", "text", "score"]] * 3
        got = [h["score"] for h in row["hits"]]
        assert got == sorted(got, reverse=True)
        assert all(CORPUS[h["id"]] == h["text"] and CORPUS[h["id"]].strip()
                   for h in row["hits"])  # ids are 0-based lines; blank lines never hit
        assert [h["id"] for h in row["hits"]] == list(ids)
        np.testing.assert_allclose(got, scores, atol=1e-5)
    manifest = json.loads((tmp_path / "index" / "manifest.json").read_text())
    assert manifest["count"] == len(CORPUS) and manifest["searchable"] == 5
    assert manifest["dimension"] == 128 and manifest["normalized"]
    assert manifest["index_kind"] == "exact" and manifest["model"] == os.path.realpath(tiny_model)
    assert np.load(tmp_path / "index" / "embeddings.npy").dtype == np.float32
    capsys.readouterr()

    calls = []
    original = BertTextEmbedder.encode_documents
    monkeypatch.setattr(BertTextEmbedder, "encode_documents",
                        lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    again = _search(tmp_path, tiny_model, "--top_k", "3")
    assert again == hits and calls == []
    assert "reusing the index" in capsys.readouterr().err
    # More hits asked than texts: every searchable line once.
    assert [len(r["hits"]) for r in _search(tmp_path, tiny_model, "--top_k", "50")] == [5] * 3


def test_another_corpus_or_model_is_refused_until_rebuild(tiny_model, tmp_path, capsys):
    _search(tmp_path, tiny_model, "--top_k", "1")
    capsys.readouterr()
    corpus, queries = _files(tmp_path, corpus=CORPUS + ["a new line"])
    before = snapshot_files(tmp_path)
    hits = tmp_path / "hits.jsonl"
    stamp = hits.read_text()
    base = ["search", "--corpus", corpus, "--queries", queries, "--index_dir",
            str(tmp_path / "index"), "--output", str(hits)]
    one_line_error([*base, "--model", tiny_model], capsys, "another corpus or model",
                   "--rebuild")
    other = str(tmp_path / "other_model")
    shutil.copytree(tiny_model, other)
    _files(tmp_path)  # the first corpus again, another model
    one_line_error([*base, "--model", other], capsys, "model", "--rebuild")
    assert snapshot_files(tmp_path) == before | {"other_model", *(
        f"other_model/{n}" for n in os.listdir(other))}
    assert hits.read_text() == stamp
    _files(tmp_path, corpus=CORPUS + ["a new line"])
    assert main([*base, "--model", tiny_model, "--rebuild", "--noprogress"]) == 0
    manifest = json.loads((tmp_path / "index" / "manifest.json").read_text())
    assert manifest["count"] == len(CORPUS) + 1


def test_without_output_the_lines_go_to_stdout_and_rebuild_spares_other_folders(
        tiny_model, tmp_path, capsys):
    corpus, queries = _files(tmp_path)
    argv = ["search", "--corpus", corpus, "--queries", queries, "--model", tiny_model,
            "--top_k", "2", "--noprogress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert [json.loads(line)["query"] for line in out.splitlines()] == QUERIES
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    one_line_error([*argv, "--index_dir", str(tmp_path / "notes"), "--rebuild"], capsys,
                   "no manifest.json", "new --index_dir")
    assert os.listdir(tmp_path / "notes") == ["keep.txt"]


@pytest.mark.parametrize("case", ["missing-corpus", "empty-corpus", "blank-corpus",
                                  "top-k-0", "blank-query", "output-is-corpus",
                                  "index-holds-corpus", "not-utf8"])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(case, tiny_model, tmp_path,
                                                            capsys):
    corpus, queries = _files(tmp_path)
    argv = {"corpus": corpus, "queries": queries, "output": str(tmp_path / "hits.jsonl"),
            "index_dir": str(tmp_path / "index"), "model": tiny_model}
    words = {"missing-corpus": ("--corpus", "does not exist"),
             "empty-corpus": ("--corpus", "no text"), "blank-corpus": ("--corpus", "no text"),
             "top-k-0": ("--top_k",), "blank-query": ("queries.txt:2", "blank"),
             "output-is-corpus": ("--output", "--corpus"),
             "index-holds-corpus": ("--index_dir", "--corpus"),
             "not-utf8": ("corpus.txt:2", "not UTF-8")}[case]
    extra = []
    if case == "missing-corpus":
        argv["corpus"] = str(tmp_path / "nope.txt")
    elif case == "empty-corpus":
        open(corpus, "w").close()
    elif case == "blank-corpus":
        (tmp_path / "corpus.txt").write_text("\n  \n\n")
    elif case == "top-k-0":
        extra = ["--top_k", "0"]
    elif case == "blank-query":
        _files(tmp_path, queries=["one", "", "two"])
    elif case == "output-is-corpus":
        argv["output"] = corpus
    elif case == "index-holds-corpus":
        (tmp_path / "data").mkdir()
        argv["corpus"] = shutil.copy(corpus, tmp_path / "data")
        argv["index_dir"] = str(tmp_path / "data")
    elif case == "not-utf8":
        (tmp_path / "corpus.txt").write_bytes(b"fine\n\xff\xfe bad\n")
    before = snapshot_files(tmp_path)
    one_line_error(["search", *[x for k, v in argv.items() for x in (f"--{k}", v)], *extra],
                   capsys, *words)
    assert snapshot_files(tmp_path) == before


def test_faiss_kinds_find_the_exact_hits_or_say_how_to_install(tiny_model, tmp_path,
                                                              monkeypatch, capsys):
    exact = _search(tmp_path, tiny_model, "--top_k", "2")
    if "faiss" in sys.modules or _importable("faiss"):
        flat = _search(tmp_path, tiny_model, "--top_k", "2", "--index_kind", "faiss_flat")
        assert [[h["id"] for h in r["hits"]] for r in flat] == [
            [h["id"] for h in r["hits"]] for r in exact]
    monkeypatch.setitem(sys.modules, "faiss", None)  # not installed
    capsys.readouterr()
    corpus, queries = _files(tmp_path)
    one_line_error(["search", "--corpus", corpus, "--queries", queries, "--model", tiny_model,
                    "--index_kind", "faiss_hnsw"], capsys, "faiss-cpu", "--index_kind exact")


def _importable(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


PARAPHRASES = [  # (corpus line, a query that says it otherwise)
    ("A man is playing a guitar on the stage.", "Someone performs music with a guitar."),
    ("The stock market fell sharply this morning.", "Share prices dropped a lot today."),
    ("She is cooking pasta in the kitchen.", "A woman prepares noodles for dinner."),
    ("The train to Paris was delayed by two hours.", "Our rail trip to France ran late."),
    ("Children are playing football in the park.", "Kids kick a ball around outdoors."),
    ("It is raining heavily in the city.", "There is a downpour downtown."),
    ("The doctor examined the patient's lungs.", "A physician listened to his breathing."),
    ("He forgot his keys at the office.", "He left the house keys at work."),
]


def test_minilm_recall_equals_exact_cosine_search(tmp_path, capsys):
    model = minilm_path()
    corpus = [doc for doc, _ in PARAPHRASES] + ["", "A cat sleeps on the sofa."]
    queries = [query for _, query in PARAPHRASES]
    corpus_file, queries_file = _files(tmp_path, corpus=corpus, queries=queries)
    hits = _search(tmp_path, model, "--top_k", "1", corpus=corpus_file, queries=queries_file)
    got = np.mean([r["hits"][0]["id"] == i for i, r in enumerate(hits)])
    want_ids, _ = _exact(model, corpus, queries, 1)
    want = np.mean(want_ids[:, 0] == np.arange(len(queries)))
    assert abs(got - want) <= 0.01 and got >= 0.85, (got, want)
