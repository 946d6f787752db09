"""Write BERT's masked-LM/next-sentence TFRecords from raw text.

Input: text files (comma-separated globs, plain or gzip) with one sentence a line and a
blank line between documents. Output: `part-NNNNN.tfrecord` shards in google-research/bert's
schema plus a JSON sidecar (settings, vocab checksum, counts) in --output_dir. Flags keep
the original create_pretraining_data.py names where the meaning is the same. A rerun into
the same --output_dir skips the shards already complete; a directory holding shards of
another run is refused unless --overwrite.

`--runner beam` runs the same work as an Apache Beam pipeline (`pip install -e
".[beam]"`; keras_bert.data.beam): the same shards for the same seed, on the DirectRunner
here or on Dataflow, Flink or Spark with `--beam_options` (Beam's own pipeline flags, one
string, split as a shell would).

Example:

    keras-bert create-pretraining-data --input_file='corpus/*.txt' \\
        --output_dir=data/pretraining --vocab_file=vocab.txt \\
        --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5

    keras-bert create-pretraining-data --input_file='gs://bucket/wiki/*.txt' \\
        --output_dir=gs://bucket/pretraining --vocab_file=vocab.txt --runner beam \\
        --beam_options="--runner=DataflowRunner --project=my-project \\
            --region=us-central1 --temp_location=gs://bucket/tmp --setup_file=./setup.py"
"""

from __future__ import annotations

import argparse
import gc
import os
import shlex
import sys
import time

from keras_bert.core.errors import ArgumentError, OutputError
from keras_bert.data.options import PretrainingDataJobOptions, PretrainingDataOptions
from keras_bert.pipelines.plumbing import (
    add_options,
    blame,
    library_logging,
    options_from_args,
    require_output_directory,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, PretrainingDataJobOptions,
                only=("input_file", "output_dir", "vocab_file"))
    add_options(parser, PretrainingDataOptions)
    add_options(parser, PretrainingDataJobOptions,
                only=("runner", "beam_options", "num_workers", "shard_index", "num_shards",
                      "overwrite", "progress"))


def run(args: argparse.Namespace) -> int:
    import tensorflow as tf

    from keras_bert.data.pretraining import create_pretraining_data

    start = time.monotonic()
    # The work is spread over processes, one core each; TensorFlow's own thread pools
    # would only spin against them (measured: a sixth more CPU per instance, and twice
    # the wall time when other programs keep the cores busy).
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # TensorFlow already started in this process: keep its pools
        pass
    options = options_from_args(PretrainingDataOptions, args)
    beam_options = _beam_options(args)
    require_output_directory(args.output_dir, "--output_dir")
    # The library's messages (a stale temporary removed, too few documents) on stderr.
    with library_logging():
        # Shards of another run in --output_dir: its mistake (--overwrite replaces them).
        with blame("output_dir", OutputError):
            if args.runner == "beam":
                summary = _beam_module().create_pretraining_data_beam(
                    args.input_file, args.output_dir, args.vocab_file, options,
                    beam_options=beam_options, overwrite=args.overwrite)
            else:
                summary = create_pretraining_data(
                    args.input_file, args.output_dir, args.vocab_file, options,
                    num_workers=args.num_workers, shard_index=args.shard_index,
                    num_shards=args.num_shards, progress=args.progress,
                    overwrite=args.overwrite)
    seconds = time.monotonic() - start
    totals, skipped = summary["totals"], summary["input_stats"]
    instances = totals.get("instances", 0)
    print(f"Wrote {instances} instances ({totals.get('instance_tokens', 0)} tokens, "
          f"{totals.get('masked_lm_predictions', 0)} masked-LM predictions) from "
          f"{totals.get('documents', 0)} documents in {len(summary['shards'])} shards to "
          f"{args.output_dir} in {seconds:.1f} s ({totals.get('documents', 0) / seconds:.0f} "
          f"documents/s, {instances / seconds:.0f} instances/s).")
    if totals.get("masked_lm_predictions"):
        print(f"Masked: {totals['masked_lm_predictions'] / totals['instance_tokens']:.1%} of "
              "the tokens.")
    if instances and options.next_sentence_prediction:
        print(f"Next sentence random: {totals.get('random_next_instances', 0) / instances:.1%}.")
    bad = {k: v for k, v in skipped.items() if k not in ("files", "lines") and v}
    bad.update({k: totals[k] for k in ("empty_sentences", "long_sentences", "split_documents")
                if totals.get(k)})
    # Too few documents for next-sentence sampling (see the sidecar's nsp_* counts).
    bad.update({k: v for k, v in totals.items() if k.startswith("nsp_") and v})
    if bad:
        print("Input handled: " + ", ".join(f"{k}={v}" for k, v in sorted(bad.items())) + ".")
    if _process_is_this_command():
        # The process ends now. Freezing the heap spares interpreter shutdown a final
        # garbage collection over the millions of objects TensorFlow's import made (every
        # file is already closed): measured 1.1 s -> 0.2 s, a tenth of a 4x-corpus run.
        gc.freeze()
    return 0


def _process_is_this_command() -> bool:
    """Whether this process is the `keras-bert` command itself (its console script or
    `python -m keras_bert`), not a program that calls `run` and goes on."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return (os.path.basename(sys.argv[0]) == "keras-bert"
            or getattr(spec, "name", None) == "keras_bert.__main__")


def _beam_options(args: argparse.Namespace) -> list[str]:
    """--beam_options as a list of flags; the local-only flags refused with --runner beam."""
    if args.runner != "beam":
        if args.beam_options:
            raise ArgumentError("--beam_options is for --runner beam; add --runner beam or "
                                "drop --beam_options.", field="beam_options")
        return []
    local_only = [flag for flag, given in (
        ("--num_workers", args.num_workers is not None),
        ("--shard_index", args.shard_index != 0),
        ("--num_shards", args.num_shards != 1)) if given]
    if local_only:
        raise ArgumentError(
            f"{', '.join(local_only)} split the work of --runner local; with --runner beam "
            "the Beam runner splits it: set its workers in --beam_options (e.g. "
            "\"--direct_num_workers=2 --direct_running_mode=multi_processing\", or "
            "Dataflow's --max_num_workers).", field=local_only[0].lstrip("-"))
    try:
        return shlex.split(args.beam_options)
    except ValueError as e:
        raise ArgumentError(f"--beam_options cannot be split into flags ({e}): quote it as "
                            "one string of Beam flags.", field="beam_options") from None


def _beam_module():
    """keras_bert.data.beam, or a usage error naming the extra to install."""
    try:
        from keras_bert.data import beam
    except ImportError as e:
        raise ArgumentError(f"--runner beam needs Apache Beam, which is not installed "
                            f"({e.__cause__ or e}): pip install -e \".[beam]\" (or pip "
                            "install \"apache-beam>=2.77,<3\").", field="runner") from None
    return beam
