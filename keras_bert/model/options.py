"""What `keras-bert encode` is asked for, declared once (`EncodeOptions`): the sentences'
file, the encoder and its vocab, the length, the pooling of token vectors into one (by
default the model's own: `keras_bert.BertTextEmbedder`), the
batch and the precision, and where the embeddings go; the command builds its flags from
these declarations (`keras_bert.core.checks.option`)."""

from __future__ import annotations

import dataclasses

from keras_bert.core.checks import REQUIRED, option
from keras_bert.core.precision import PRECISIONS

# How token vectors become a sentence's: the mean of its real tokens, [CLS]'s, the pooler's.
POOLINGS = ("mean", "cls", "pooled")
MODEL_HELP = ("checkpoint: Hugging Face or sentence-transformers dir, Google TF1 or "
              "tf-models-official TF2 checkpoint, or keras_bert dir (default: the installed "
              "MiniLM-L6-H384)")


@dataclasses.dataclass(frozen=True, kw_only=True)
class EncodeOptions:
    """Sentences embedded by an encoder (the sentences themselves are arguments)."""

    input_file: str | None = option(
        None, "a text file with one sentence per line; with --output_dir, comma-separated "
        "globs of such files (local or gs://...)")
    model: str | None = option(None, MODEL_HELP)
    vocab_file: str | None = option(None, "vocab.txt (default: the one beside the model)")
    do_lower_case: bool | None = option(
        None, "lower-case and strip accents; auto reads the model's tokenizer_config.json, "
        "else assumes uncased")
    max_seq_length: int | None = option(
        None, "tokens per sentence, [CLS]/[SEP] included; longer sentences are truncated, "
        "with a note (default: a sentence-transformers folder's max_seq_length, else "
        "min(512, the model's positions))", at_least=1)
    pooling: str | None = option(
        None, "override the model's pooling: the mean of real tokens, the [CLS] vector, or "
        "the tanh pooler output, unnormalized (default: what a sentence-transformers "
        "folder's modules say, pooling, Dense and Normalize, else mean + normalize)",
        choices=POOLINGS)
    batch_size: int = option(32, "sentences per forward pass (default: %(default)s)",
                             at_least=1)
    precision: str = option(
        "float32", "float32, or mixed_bfloat16: bfloat16 compute with float32 weights and "
        "embeddings (faster on CPUs with AVX512-BF16 or AMX; embeddings within about 1e-3 "
        "cosine distance of float32's) (default: %(default)s)", choices=PRECISIONS)
    output: str | None = option(None, "write the embeddings [n, H] to this .npy file")
    output_dir: str | None = option(
        None, "encode every non-blank line of --input_file on Apache Beam into Parquet "
        "shards here (columns text, embedding, source_file, line_number; pip install "
        "\"keras-bert[beam]\"); a rerun of the same command finishes an interrupted job")
    runner: str | None = option(
        None, "with --output_dir: the Beam runner, e.g. DirectRunner, DataflowRunner, "
        "FlinkRunner, SparkRunner (default: DirectRunner, in this process)")
    beam_options: str = option(
        "", "with --output_dir: more Beam pipeline flags in one string, e.g. "
        "\"--project=P --region=R --temp_location=gs://B/tmp --setup_file=./setup.py\" or "
        "\"--flink_master=HOST:8081\"")
    rows_per_shard: int = option(
        10000, "with --output_dir: non-blank lines per Parquet shard, the unit of work "
        "and of resuming (default: %(default)s)", at_least=1)
    progress: bool = option(True, "show a progress bar")


# How `keras-bert search` finds the nearest corpus lines (keras_bert.tasks.embedding.index):
# exact numpy products, or faiss' exact (flat) or approximate (HNSW) inner-product index.
INDEX_KINDS = ("exact", "faiss_flat", "faiss_hnsw")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SearchOptions:
    """Queries searched in a corpus by their embeddings (`keras-bert search`)."""

    corpus: str = option(REQUIRED, "UTF-8 text file, one text a line; a hit's id is its "
                         "0-based line number (blank lines count but are not searchable)")
    queries: str = option(REQUIRED, "UTF-8 text file, one query a line (no blank lines)")
    top_k: int = option(10, "hits per query (fewer when the corpus has fewer lines)",
                        at_least=1)
    index_dir: str | None = option(
        None, "folder keeping the corpus embeddings and a manifest: built on the first "
        "run, reused while the corpus and model stay the same (default: none, the corpus "
        "is encoded on every run)")
    rebuild: bool = option(False, "replace an --index_dir made for another corpus or model")
    index_kind: str = option(
        "exact", "exact: numpy, every score; faiss_flat: faiss' exact index; faiss_hnsw: "
        "faiss' approximate HNSW (both need pip install faiss-cpu)", choices=INDEX_KINDS)
    model: str | None = option(None, MODEL_HELP)
    max_seq_length: int | None = option(
        None, "tokens per text, [CLS]/[SEP] included; longer texts are cut (default: a "
        "sentence-transformers folder's max_seq_length, else min(512, the model's "
        "positions))", at_least=1)
    batch_size: int = option(32, "texts per forward pass", at_least=1)
    output: str | None = option(
        None, "write the hits here, one JSON line a query (default: print them)")
    progress: bool = option(True, "show a progress bar")
