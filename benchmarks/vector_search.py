"""Exact numpy search (keras_bert.tasks.embedding.index, kind exact) against faiss-cpu's
flat and HNSW inner-product indexes on random unit vectors: build time, query time and
recall@1 against exact (docs/embedding.md, "Search"). One JSON line to stdout.

    python benchmarks/vector_search.py --n 10000 --dim 384 --queries 1000
"""

import argparse
import time

import numpy as np
from harness import emit, machine, versions

from keras_bert.tasks.embedding.index import CorpusIndex, library_index_of, search


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--top_k", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((args.n, args.dim)).astype(np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    # "near": each query a noisy copy of a corpus vector, as paraphrases are; "random":
    # unrelated unit vectors, the hard case for an approximate index.
    near = corpus[rng.integers(0, args.n, args.queries)] + 0.05 * rng.standard_normal(
        (args.queries, args.dim)).astype(np.float32)
    far = rng.standard_normal((args.queries, args.dim)).astype(np.float32)
    ids = np.arange(args.n)
    results = {}
    for name, queries in (("near", near), ("random", far)):
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        exact_top = None
        for kind in ("exact", "faiss_flat", "faiss_hnsw"):
            index = CorpusIndex(corpus, ids, {"index_kind": kind, "similarity": "cosine"})
            start = time.perf_counter()
            index.library_index = library_index_of(index)
            build = time.perf_counter() - start
            search(index, queries[:10], args.top_k)  # warm
            start = time.perf_counter()
            _, top = search(index, queries, args.top_k)
            query = time.perf_counter() - start
            if exact_top is None:
                exact_top = top
            results[f"{name}/{kind}"] = {
                "build_s": round(build, 4), "query_s": round(query, 4),
                "recall_at_1": float((top[:, 0] == exact_top[:, 0]).mean())}
    emit({"n": args.n, "dim": args.dim, "queries": args.queries, "top_k": args.top_k,
          **versions("faiss-cpu", "numpy"), **machine(), "results": results})


if __name__ == "__main__":
    main()
