"""A corpus index for semantic search: the corpus lines' embeddings (`BertTextEmbedder`)
kept in a folder with a manifest, built once (`build_index`), reopened (`open_index`)
when the same corpus and model ask for it again, and searched by the model's
similarity (`search`).

The folder holds `embeddings.npy` (float32 [n, dim], the searchable lines' vectors),
`ids.npy` (int64 [n], their 0-based line numbers in the corpus: blank lines are counted
but not searchable) and `manifest.json` (the model, the corpus file's size and sha256,
the line count, the dimension, whether the vectors are unit length, the similarity, the
index kind and the keras_bert version). It is written whole or not at all
(`keras_bert.core.fileio.atomic_directory`).

Index kinds: `exact` (numpy matrix products in chunks, `np.argpartition`; the default),
`faiss_flat` (faiss' exact inner-product index) and `faiss_hnsw` (faiss' approximate
HNSW graph); the faiss kinds need the optional `faiss-cpu` (the `search` extra) and
import it only when asked. The faiss kinds serve cosine and dot similarity only.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from keras_bert.core.errors import (
    ArgumentError,
    DataError,
    InputNotFoundError,
    OutputExistsError,
)
from keras_bert.model.options import INDEX_KINDS

MANIFEST = "manifest.json"
FORMAT = "keras_bert.embedding_index/1"
# What must agree for an index to be reused (the rest describes it).
_IDENTITY = ("model", "sequence_length", "corpus_sha256", "corpus_size")
_CHUNK = 4096  # corpus rows scored at once by exact search


@dataclasses.dataclass
class CorpusIndex:
    """An opened index: `embeddings` [n, dim], `ids` [n] (corpus line numbers), the
    `manifest`, and the library index when the kind is not exact."""

    embeddings: np.ndarray
    ids: np.ndarray
    manifest: dict
    library_index: object = None

    @property
    def similarity(self) -> str:
        return self.manifest["similarity"]


def corpus_lines(path: str, what: str = "--corpus") -> list[str]:
    """The lines of UTF-8 text file `path` (a final newline ends the last line; "\\r"
    dropped); `DataError` naming the line for bytes that are not UTF-8 or NUL."""
    with open(path, "rb") as f:
        data = f.read()
    if b"\x00" in data:
        line = data[:data.index(b"\x00")].count(b"\n") + 1
        raise DataError(f"{what}: not a text file (NUL byte); give UTF-8 text, one text a "
                        "line.", path=path, line=line)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise DataError(f"{what}: line {line} is not UTF-8 ({e.reason}); convert the file "
                        "to UTF-8.", path=path, line=line) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def corpus_identity(model: str, corpus: str, sequence_length: int) -> dict:
    """What an index of `corpus` by `model` is keyed by: the model (a local path made
    absolute), its length, and the corpus file's size and sha256."""
    from keras_bert.core.input_files import file_sha256

    local = os.path.exists(model)
    return {"model": os.path.realpath(model) if local else model,
            "sequence_length": int(sequence_length),
            "corpus_sha256": file_sha256(corpus), "corpus_size": os.path.getsize(corpus)}


def build_index(embedder, lines: list[str], index_dir: str | None, identity: dict, *,
                kind: str = "exact", batch_size: int = 32, overwrite: bool = False
                ) -> CorpusIndex:
    """Encodes the non-blank `lines` (`encode_documents`: the folder's document prompt
    if it has one) and writes the index to `index_dir` (None: kept in memory only).
    `identity` is `corpus_identity`'s."""
    _check_kind(kind, embedder.similarity_fn_name)
    ids = np.array([i for i, line in enumerate(lines) if line.strip()], np.int64)
    if not len(ids):
        raise DataError("the corpus has no text (every line is blank); give one text a line.")
    vectors = embedder.encode_documents([lines[i] for i in ids], batch_size=batch_size)
    manifest = {"format": FORMAT, **identity, "count": len(lines), "searchable": len(ids),
                "dimension": int(vectors.shape[1]),
                "normalized": bool(np.allclose(np.linalg.norm(vectors, axis=1), 1.0,
                                               atol=1e-3)),
                "similarity": embedder.similarity_fn_name, "index_kind": kind,
                "library": _library(kind), "keras_bert_version": _package_version()}
    index = CorpusIndex(vectors, ids, manifest)
    index.library_index = library_index_of(index)
    if index_dir is not None:
        _write(index, index_dir, overwrite)
    return index


def open_index(index_dir: str, identity: dict, kind: str = "exact") -> CorpusIndex | None:
    """The index in `index_dir` if it was built for `identity` (None when the folder is
    absent or empty); `OutputExistsError` when it holds another corpus's or model's
    index. The library index of `kind` is loaded (built from the stored embeddings when
    the folder was made with another kind)."""
    from keras_bert.core.fileio import read_json

    path = os.path.join(index_dir, MANIFEST)
    if not os.path.isdir(index_dir) or not os.listdir(index_dir):
        return None
    if not os.path.isfile(path):
        raise OutputExistsError(f"--index_dir {index_dir!r} holds no {MANIFEST}: it is no "
                                "index; use a new --index_dir.")
    manifest = read_json(path)
    changed = [key for key in _IDENTITY if manifest.get(key) != identity[key]]
    if manifest.get("format") != FORMAT or changed:
        what = ", ".join(changed) or "format"
        raise OutputExistsError(
            f"--index_dir {index_dir!r} indexes another corpus or model ({what} differ); "
            "use a new --index_dir or pass --rebuild.")
    _check_kind(kind, manifest["similarity"])
    embeddings = np.load(os.path.join(index_dir, "embeddings.npy"))
    ids = np.load(os.path.join(index_dir, "ids.npy"))
    index = CorpusIndex(embeddings, ids, dict(manifest, index_kind=kind, library=_library(kind)))
    stored = os.path.join(index_dir, "index.faiss")
    if kind != "exact" and manifest["index_kind"] == kind and os.path.isfile(stored):
        index.library_index = require_faiss().read_index(stored)
    else:
        index.library_index = library_index_of(index)
    return index


def search(index: CorpusIndex, queries: np.ndarray, top_k: int):
    """(scores [q, k], ids [q, k]) of the `top_k` corpus lines nearest each query
    vector, best first (k = min(top_k, searchable lines)); ids are corpus line numbers."""
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ArgumentError(f"top_k must be a positive integer, got {top_k!r}.", field="top_k")
    queries = np.atleast_2d(np.asarray(queries, np.float32))
    k = min(int(top_k), len(index.ids))
    if index.library_index is not None:
        scores, rows = index.library_index.search(_for_library(queries, index.similarity), k)
        return scores, index.ids[rows]
    product = index.similarity in ("cosine", "dot")
    if product:  # one float32 matrix product a chunk (cosine: of unit vectors)
        queries = _for_library(queries, index.similarity)
        corpus = _for_library(index.embeddings, index.similarity)
    scores = np.empty((len(queries), 0), np.float32)
    rows = np.empty((len(queries), 0), np.int64)
    for start in range(0, len(index.ids), _CHUNK):
        chunk = (queries @ corpus[start:start + _CHUNK].T if product else
                 _similarity(queries, index.embeddings[start:start + _CHUNK], index.similarity))
        scores = np.concatenate([scores, chunk], axis=1)
        rows = np.concatenate([rows, np.broadcast_to(
            np.arange(start, start + chunk.shape[1]), chunk.shape)], axis=1)
        if scores.shape[1] > k:  # keep the best k so far
            best = np.argpartition(-scores, k - 1, axis=1)[:, :k]
            scores = np.take_along_axis(scores, best, 1)
            rows = np.take_along_axis(rows, best, 1)
    order = np.lexsort((rows, -scores), axis=1)  # best first, ties by line number
    return np.take_along_axis(scores, order, 1), index.ids[np.take_along_axis(rows, order, 1)]


def check_replaceable(index_dir: str) -> None:
    """`OutputExistsError` unless `index_dir` is absent, empty or an index: a rebuild
    replaces an index, never another folder."""
    if os.path.isdir(index_dir) and os.listdir(index_dir) and not os.path.isfile(
            os.path.join(index_dir, MANIFEST)):
        raise OutputExistsError(f"--index_dir {index_dir!r} holds files but no {MANIFEST}: "
                                "it is no index, and --rebuild replaces indexes only; use a "
                                "new --index_dir.")


def _similarity(a, b, function):
    """Euclidean and manhattan scores, as the model computes them (imports Keras)."""
    from keras_bert.tasks.embedding.model import BertTextEmbedder

    return BertTextEmbedder.similarity_of(a, b, function)


def _check_kind(kind: str, similarity: str) -> None:
    if kind not in INDEX_KINDS:
        raise ArgumentError(f"index_kind must be one of {', '.join(INDEX_KINDS)}, got "
                            f"{kind!r}.", field="index_kind")
    if kind != "exact" and similarity not in ("cosine", "dot"):
        raise ArgumentError(f"index_kind {kind} serves cosine and dot similarity; this "
                            f"model's is {similarity}: use --index_kind exact.",
                            field="index_kind")


def _library(kind: str) -> str:
    if kind == "exact":
        return "numpy " + np.__version__
    return "faiss-cpu " + getattr(require_faiss(), "__version__", "?")


def _package_version() -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version("keras_bert")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout
        return None


def require_faiss():
    """The faiss module; `InputNotFoundError` saying how to install it."""
    try:
        import faiss
    except ImportError:
        raise InputNotFoundError("the faiss index kinds need faiss-cpu: pip install "
                                 "'keras_bert[search]' (or faiss-cpu), or use --index_kind "
                                 "exact.") from None
    return faiss


def _for_library(vectors: np.ndarray, similarity: str) -> np.ndarray:
    """Vectors as the inner-product index wants them: unit length for cosine."""
    vectors = np.asarray(vectors, np.float32)
    if similarity == "cosine":
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(vectors)


def library_index_of(index: CorpusIndex):
    """The faiss index of `index`'s kind over its embeddings (None for exact)."""
    kind = index.manifest["index_kind"]
    if kind == "exact":
        return None
    faiss = require_faiss()
    dim = index.embeddings.shape[1]
    if kind == "faiss_flat":
        library_index = faiss.IndexFlatIP(dim)
    else:  # HNSW, 32 links a node; efSearch 64 (measured: docs/embedding.md "Search")
        library_index = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        library_index.hnsw.efSearch = 64
    library_index.add(_for_library(index.embeddings, index.similarity))
    return library_index


def _write(index: CorpusIndex, index_dir: str, overwrite: bool) -> None:
    from keras_bert.core.fileio import atomic_directory, write_json

    if overwrite:
        check_replaceable(index_dir)
    def write(tmp):
        np.save(os.path.join(tmp, "embeddings.npy"), index.embeddings.astype(np.float32))
        np.save(os.path.join(tmp, "ids.npy"), index.ids)
        if index.library_index is not None:
            require_faiss().write_index(index.library_index, os.path.join(tmp, "index.faiss"))
        write_json(os.path.join(tmp, MANIFEST), index.manifest)

    atomic_directory(index_dir, write, overwrite=overwrite)
