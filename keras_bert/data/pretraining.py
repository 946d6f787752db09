"""BERT pretraining data: text in, sharded masked-LM/NSP TFRecords out.

`create_pretraining_data` streams the input documents in chunks of about
`shard_size_mb`; each chunk becomes one output shard `part-NNNNN.tfrecord`, made from that
chunk alone (it is the pool random next segments come from and the unit the instances are
shuffled in) with a random seed derived from `random_seed` and the shard number. A
document belongs to chunk `offset // (shard_size_mb * 1e6)`, where `offset` counts the
characters of the whole input before it (files in the order the globs give them), and
the shards are numbered in the order of their non-empty chunks
(`documents.chunk_documents`). So which shard a document lands in, and every random
choice made for it, depend only on the text and the settings, never on how the work is
split: worker processes can build shards in any order, `num_shards` machines can each
build every `num_shards`-th shard into the same directory, an interrupted run resumes
where it stopped, and the Apache Beam pipeline (`keras_bert.data.beam`, any runner, any
number of workers) writes the same shards byte for byte.

Format 2 (the sidecar's `format_version`) changed the chunk rule: before, a chunk closed
after the document that brought it to `shard_size_mb`, so where a chunk started depended
on the sizes of all earlier chunks, which a distributed reader cannot know. An input of
one shard gives the same records as before for the same seed; an input of several
shards gives other (equally valid) shards, and a directory written by format 1 is not
resumed (its sidecar differs; `overwrite` replaces it).

The stages have their own modules: `shards` (one chunk -> one shard file, written under
a hidden temporary name and renamed when complete), `workers` (the forked processes that
build shards in parallel) and `run_state` (the JSON sidecar that lets a run resume, and
the checks of what is already on disk). This module checks the arguments, starts and
finishes a run (`start_run`, `finish_run`, shared with the Beam pipeline) and streams the
chunks to the workers. `overwrite=True` removes an earlier run of this slice (its shards
and sidecar) once every check has passed, and starts over.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
import os
import time
from collections.abc import Iterable

import numpy as np
import tensorflow as tf
import tqdm

from keras_bert.core import fileio, input_files
from keras_bert.core.errors import (
    ArgumentError,
    DataError,
    Setting,
    UserInputError,
    VocabError,
)
from keras_bert.data import documents as documents_lib
from keras_bert.data.options import PretrainingDataOptions
from keras_bert.data.run_state import (
    Sidecar,
    check_output_directory,
    remove_previous_run,
    remove_run,
    remove_stale_temporaries,
    sidecar_file_name,
)
from keras_bert.data.shards import ShardWriter, shard_file_name
from keras_bert.data.workers import write_shards
from keras_bert.text.vocab import SPECIAL_TOKENS, load_vocab

logger = logging.getLogger(__name__)

# 2: documents go to the shard their first character falls in (see the module docstring).
FORMAT_VERSION = 2
# Warn when more than this share of the next-sentence pairs found no other document.
_NSP_FALLBACK_WARNING_SHARE = 0.01


# Every error `create_pretraining_data` raises on the user's input (options, inputs,
# vocab, output directory) is a `keras_bert.core.errors.UserInputError`: `ArgumentError`,
# `InputNotFoundError`, `VocabError`, `DataError` or `OutputError`. The old name stays.
PretrainingDataError = UserInputError


def _check_count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ArgumentError(f"{name} must be an integer >= {minimum}, got {value!r}.",
                            field=name)
    return int(value)


def chunk_chars(options: PretrainingDataOptions) -> int:
    """The characters of text per shard (`documents.chunk_documents`).

    Example:

    >>> chunk_chars(PretrainingDataOptions(shard_size_mb=0.5))
    500000
    """
    return int(options.shard_size_mb * 1e6)


@dataclasses.dataclass
class Run:
    """A run that passed every check: its output directory, input files (None for a
    dataset), sidecar, vocab and whether the run created the directory."""

    output_dir: str
    files: list[str] | None
    sidecar: Sidecar
    vocab: list[str]
    created: bool


def start_run(inputs, output_dir, vocab_file, options: PretrainingDataOptions,
              shard_index: int, num_shards: int, overwrite: bool) -> Run:
    """Checks the inputs, vocab and output directory, and writes the sidecar of a
    starting run (`create_pretraining_data` and the Beam pipeline share it)."""
    if isinstance(inputs, tf.data.Dataset):
        files, input_record = None, "tf.data.Dataset"
    else:
        files = input_files.expand_patterns(inputs, what="input file")
        input_record = [{"path": f if fileio.is_remote(f) else os.path.abspath(f),
                         "bytes": fileio.file_size(f)} for f in files]
    vocab = load_vocab(vocab_file)
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise VocabError(f"the vocabulary lacks the special tokens {missing}, which "
                         "pretraining data needs.", path=os.fspath(vocab_file))
    output_dir = os.fspath(output_dir) or "."
    fileio.check_writable(output_dir, kind="directory", what="output directory")
    identity = {
        "format_version": FORMAT_VERSION,
        "settings": {**dataclasses.asdict(options), "shard_index": shard_index,
                     "num_shards": num_shards},
        "vocab": {"sha256": input_files.file_sha256(vocab_file), "size": len(vocab)},
        "inputs": input_record,
    }
    sidecar_path = os.path.join(output_dir, sidecar_file_name(shard_index, num_shards))
    if overwrite:  # every check above has passed: the old run can go
        remove_previous_run(output_dir, shard_index, num_shards)
    sidecar = Sidecar(sidecar_path, identity)
    check_output_directory(output_dir, sidecar, shard_index, num_shards)
    created = not fileio.isdir(output_dir)
    fileio.makedirs(output_dir)
    remove_stale_temporaries(output_dir, shard_index, num_shards)
    # Written before any shard: a shard on disk always has its sidecar beside it.
    sidecar.write({}, complete=False, force=True)
    return Run(output_dir, files, sidecar, vocab, created)


def finish_run(run: Run, options: PretrainingDataOptions, input_stats: dict,
               all_shards: int, own_shards: int, shard_index: int = 0,
               num_shards: int = 1) -> dict:
    """Refuses a run without instances (removing what it wrote), warns about an idle
    slice or too few documents for NSP, and writes the complete sidecar."""
    totals = run.sidecar.totals()
    if not totals.get("instances") and (own_shards or not all_shards):
        remove_run(run.output_dir, run.sidecar, run.created)
        raise DataError.advising(*_no_instances_message(input_stats, totals, options))
    if not own_shards:
        logger.warning(
            "The input makes %d shards, none of them slice %d of %d (shards i with "
            "i %% %d == %d): this slice wrote no data. Lower shard_size_mb or num_shards "
            "to give every slice work.", all_shards, shard_index, num_shards,
            num_shards, shard_index)
    if options.next_sentence_prediction:
        _warn_about_few_documents(totals)
    return run.sidecar.write(input_stats, complete=True, force=True)


_DEFAULT_OPTIONS = PretrainingDataOptions()


def create_pretraining_data(inputs: str | Iterable[str] | tf.data.Dataset, output_dir: str,
                            vocab_file: str,
                            options: PretrainingDataOptions = _DEFAULT_OPTIONS, *,
                            num_workers: int | None = None, shard_index: int = 0,
                            num_shards: int = 1, progress: bool = True,
                            overwrite: bool = False) -> dict:
    """Writes BERT pretraining TFRecord shards and their JSON sidecar into `output_dir`.

    Everything that can fail on the arguments fails before any work. A rerun with the
    same settings, vocab and inputs resumes (shards the sidecar lists are kept); it first
    clears the hidden temporaries a killed run of this slice left. Worker processes end
    with this process, however it ends.

    Next sentence prediction needs other documents to draw random next segments from,
    within each shard's pool (`shard_size_mb`); pairs that found none are never labelled
    random (see `keras_bert.data.instances`) but counted (`nsp_actual_next_fallbacks`,
    `nsp_dropped_chunks`, `nsp_single_document_shards` in the totals), and when they
    are more than 1% of the pairs a warning on the `keras_bert` logger says that the
    corpus has too few documents (a single document, or no blank lines between them).

    Args:
        inputs: comma-separated globs (or a list of them) of text files, plain or gzip,
            local or any `tf.io.gfile` filesystem (gs://, ...), one sentence a line and a
            blank line between documents; or a `tf.data.Dataset` of scalar strings in
            that format (one document each, e.g. a `tfds` text dataset mapped to its text).
        output_dir: where the `part-NNNNN.tfrecord` shards and the sidecar go.
        vocab_file: the WordPiece vocab.txt.
        options: `PretrainingDataOptions`.
        num_workers: processes building shards, this one included (>= 1; 1 builds them
            all in this process). By default the CPU count (workers are forked: they
            start at once).
        shard_index, num_shards: build only the shards `i` with
            `i % num_shards == shard_index`, for splitting the work across machines.
        progress: show a progress bar on stderr.
        overwrite: start over: remove the shards and the sidecar an earlier run of this
            slice left in `output_dir` (whatever its settings) once every check has
            passed, instead of resuming it or refusing its other settings.

    Returns:
        The sidecar's content: settings, vocab, inputs, per-shard counts and `totals`
        (documents, instances, tokens, masked-LM predictions, ...), and `input_stats`
        (files, lines and the bad input skipped).

    Raises:
        ArgumentError: `num_workers`, `shard_index` or `num_shards` out of range.
        InputNotFoundError: an input pattern matches no file (or names a directory), or
            the vocab file does not exist (a FileNotFoundError).
        VocabError: the vocab is malformed or lacks a special token.
        OutputError: `output_dir` is a file or cannot be written, or (unless
            `overwrite`) it holds shards that no sidecar of this run describes, or a
            sidecar of other settings.
        DataError: the input gave no instance at all (nothing is left behind).

    Example:

    >>> summary = create_pretraining_data(
    ...     "corpus/*.txt", "/tmp/pretraining", "uncased_L-12_H-768_A-12/vocab.txt",
    ...     PretrainingDataOptions(dupe_factor=5))  # doctest: +SKIP
    >>> summary["totals"]["instances"]  # doctest: +SKIP
    51234
    """
    # Everything that can fail on the user's input fails here, before any work.
    if not isinstance(options, PretrainingDataOptions):
        raise ArgumentError(f"options must be a PretrainingDataOptions, got "
                            f"{type(options).__name__}.", field="options")
    num_shards = _check_count("num_shards", num_shards, 1)
    shard_index = _check_count("shard_index", shard_index, 0)
    if shard_index >= num_shards:
        raise ArgumentError(f"shard_index must be in [0, {num_shards}) for num_shards="
                            f"{num_shards}, got {shard_index}.", field="shard_index")
    if num_workers is None:
        num_workers = os.cpu_count() or 1
    num_workers = _check_count("num_workers", num_workers, 1)
    run = start_run(inputs, output_dir, vocab_file, options, shard_index, num_shards,
                    overwrite)
    output_dir, files, sidecar = run.output_dir, run.files, run.sidecar
    input_stats: collections.Counter = collections.Counter()
    if files is None:
        lines = documents_lib.read_dataset_lines(inputs, input_stats)
    else:
        lines = itertools.chain.from_iterable(
            documents_lib.read_file_lines(f, input_stats) for f in files)
    chunks = documents_lib.chunk_documents(lines, chunk_chars(options), input_stats)
    shards_seen = collections.Counter()  # all chunks, and this slice's

    def tasks():
        for shard_id, text_documents in enumerate(chunks):
            shards_seen["all"] += 1
            if shard_id % num_shards != shard_index:
                continue
            shards_seen["own"] += 1
            name = shard_file_name(shard_id)
            if not sidecar.is_done(output_dir, name):
                yield shard_id, text_documents, os.path.join(output_dir, name)

    bar = tqdm.tqdm(unit=" docs", disable=not progress, dynamic_ncols=True,
                    desc="create-pretraining-data")
    start = time.monotonic()
    written: collections.Counter = collections.Counter()

    def on_done(shard_id: int, stats: dict) -> None:
        sidecar.shards[shard_file_name(shard_id)] = stats
        written.update(shards=1, instances=stats["instances"])
        bar.update(stats.get("documents", 0))
        elapsed = max(time.monotonic() - start, 1e-9)
        bar.set_postfix(shards=written["shards"], instances=written["instances"],
                        instances_per_s=f"{written['instances'] / elapsed:.0f}")
        sidecar.write(dict(sorted(input_stats.items())), complete=False)

    try:
        write_shards(tasks(), ShardWriter(vocab_file, options), num_workers, on_done)
    except BaseException:
        # Record what is done (e.g. on Ctrl-C) so that a rerun skips it.
        sidecar.write(dict(sorted(input_stats.items())), complete=False, force=True)
        raise
    finally:
        bar.close()
    return finish_run(run, options, dict(sorted(input_stats.items())), shards_seen["all"],
                      shards_seen["own"], shard_index, num_shards)


def _no_instances_message(input_stats: dict, totals: dict,
                          options: PretrainingDataOptions) -> tuple:
    """The message's parts (text and `Setting`s; `DataError.advising`)."""
    read = (f"{input_stats.get('files', 0)} files, {input_stats.get('lines', 0)} lines, "
            f"{totals.get('documents', 0)} documents with text")
    skipped = {k: v for k, v in input_stats.items()
               if k in ("empty_files", "binary_files", "unreadable_files", "overlong_lines")
               and v}
    if skipped:
        read += " (skipped: " + ", ".join(f"{k}={v}" for k, v in sorted(skipped.items())) + ")"
    if totals.get("nsp_dropped_chunks"):
        advice = ("every next-sentence pair needed a random next segment from another "
                  "document, and the input has a single document: give more documents "
                  "(one sentence a line, a blank line between documents) or pass ",
                  Setting("next_sentence_prediction", False))
    elif not totals.get("documents"):
        advice = ("the input holds no text: check that the input files are the plain or "
                  "gzip text corpus (one sentence a line, a blank line between documents) "
                  "and not empty",)
    else:
        advice = (f"the input is too small for max_seq_length={options.max_seq_length}: "
                  "give more text",)
    return (f"No pretraining instances from the input ({read}): ", *advice, ".")


def _warn_about_few_documents(totals: dict) -> None:
    fallbacks = totals.get("nsp_actual_next_fallbacks", 0)
    dropped = totals.get("nsp_dropped_chunks", 0)
    pairs = totals.get("instances", 0) + dropped
    if fallbacks + dropped <= _NSP_FALLBACK_WARNING_SHARE * pairs:
        return
    logger.warning(
        "Too few documents for next sentence prediction: %d of %d sentence pairs should "
        "have had a random next segment, but their shard's pool held no other document "
        "(%d shards have a single document, %d documents in all), so %d became actual-next "
        "pairs and %d were dropped; fewer NSP labels are 'random next' than BERT's 50%%. "
        "Separate documents with a blank line (one sentence a line), give more documents, "
        "raise shard_size_mb, or set next_sentence_prediction=False.",
        fallbacks + dropped, pairs, totals.get("nsp_single_document_shards", 0),
        totals.get("documents", 0), fallbacks, dropped)
