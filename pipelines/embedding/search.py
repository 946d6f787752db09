"""Search a corpus for the lines nearest each query, by their sentence embeddings.

Each line of --corpus (UTF-8, one text a line) is a document whose id is its 0-based line
number; blank lines keep their number but are never hits. Each line of --queries is a
query (a blank one is refused, naming its line). The corpus embeddings
(`BertTextEmbedder.encode_documents`; queries through `encode_query`, so a folder's
prompts are used) are kept in --index_dir with a manifest: a rerun with the same corpus
file and model reuses them without encoding the corpus again; another corpus or model
there is refused unless --rebuild. Scores are the model's similarity (cosine for
MiniLM), exact by default (--index_kind).

Output: one JSON line a query, in query order:
{"query": ..., "hits": [{"id": LINE, "text": ..., "score": ...}, ...]}, best first,
--top_k hits (fewer if the corpus has fewer texts); to --output (written whole, or not
at all), else to stdout.

Example:

    keras-bert search --corpus faq.txt --queries questions.txt --top_k 3 \\
        --index_dir faq.index --output hits.jsonl
"""

from __future__ import annotations

import argparse
import sys

from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.model.options import SearchOptions
from keras_bert.pipelines.plumbing import add_options, require_file, resolve_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, SearchOptions)


def _lines(path: str, what: str) -> list[str]:
    from keras_bert.tasks.embedding.index import corpus_lines

    require_file(path, what)
    lines = corpus_lines(path, what)
    if not any(line.strip() for line in lines):
        raise DataError(f"{what} has no text (it is empty or every line is blank); give "
                        "one text a line.", path=path)
    return lines


def run(args) -> int:
    from keras_bert.core.fileio import atomic_write, json_text
    from keras_bert.pipelines.embedding.encode import default_model
    from keras_bert.tasks.embedding import index as corpus_index
    from keras_bert.tasks.embedding.model import BertTextEmbedder

    # Everything is checked before any weights load.
    if getattr(args, "json", False) and not args.output:
        raise ArgumentError("--json writes its events to stdout: give --output for the "
                            "hits", field="output")
    corpus = _lines(args.corpus, "--corpus")
    queries = _lines(args.queries, "--queries")
    blank = next((i for i, q in enumerate(queries) if not q.strip()), None)
    if blank is not None:
        raise DataError("--queries: the line is blank; remove it (every query line gets "
                        "one output line).", path=args.queries, line=blank + 1)
    if args.index_dir and args.rebuild:
        corpus_index.check_replaceable(args.index_dir)
    model = args.model or default_model()
    resolve_model(model, None, None, args.max_seq_length, finetuning_runs=False)
    if args.index_kind != "exact":
        corpus_index.require_faiss()  # installed? (before any weights load)
    embedder = BertTextEmbedder.from_preset(model, sequence_length=args.max_seq_length)
    identity = corpus_index.corpus_identity(model, args.corpus,
                                            embedder.preprocessor.sequence_length)
    index = None
    if args.index_dir and not args.rebuild:
        index = corpus_index.open_index(args.index_dir, identity, args.index_kind)
    if index is not None:
        print(f"reusing the index in {args.index_dir} ({index.manifest['searchable']} "
              "texts; the corpus is not encoded again)", file=sys.stderr)
    else:
        index = corpus_index.build_index(embedder, corpus, args.index_dir, identity,
                                         kind=args.index_kind, batch_size=args.batch_size,
                                         overwrite=bool(args.rebuild))
        blanks = index.manifest["count"] - index.manifest["searchable"]
        print(f"indexed {index.manifest['searchable']} texts of {args.corpus}"
              + (f" ({blanks} blank lines skipped)" if blanks else "")
              + (f" in {args.index_dir}" if args.index_dir else ""), file=sys.stderr)
    vectors = embedder.encode_query(queries, batch_size=args.batch_size)
    scores, ids = corpus_index.search(index, vectors, args.top_k)
    lines = [json_text({"query": query, "hits": [
        {"id": int(i), "text": corpus[i], "score": float(s)} for i, s in zip(row_ids, row)]},
        sort_keys=False) + "\n" for query, row_ids, row in zip(queries, ids, scores)]
    if args.output:
        with atomic_write(args.output) as f:
            f.writelines(lines)
        print(f"wrote {len(lines)} queries' hits to {args.output}", file=sys.stderr)
    else:
        sys.stdout.writelines(lines)
    sys.stdout.flush()
    return 0
