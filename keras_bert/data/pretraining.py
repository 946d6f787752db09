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

Each shard is written under a hidden temporary name and renamed when complete
(`keras_bert.io`). The JSON sidecar (`pretraining_data.json`, or
`pretraining_data-IIIII-of-NNNNN.json` for a slice) is written before the first shard and
records the settings, the vocab checksum, the inputs, the counts per shard and in total;
a shard counts as done when its file exists and the sidecar lists it. A directory with
shards that no sidecar describes, or with a sidecar of other settings, is refused: a
`*.tfrecord` glob would mix its old shards with the new ones. `overwrite=True` removes
them (this slice's shards and sidecar) once every check has passed, and starts over.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gc
import hashlib
import itertools
import logging
import math
import multiprocessing
import os
import random
import re
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np
import tensorflow as tf
import tqdm

from keras_bert import io as kb_io
from keras_bert.data import documents as documents_lib
from keras_bert.data.instances import create_instances, instances_to_arrays
from keras_bert.data.masking import MaskedLmMasker
from keras_bert.data.tfrecords import serialize_examples, write_tfrecord
from keras_bert.errors import (
    ArgumentError,
    DataError,
    OutputError,
    UserInputError,
    VocabError,
)
from keras_bert.tokenization import SPECIAL_TOKENS, BertTokenizer, load_vocab

logger = logging.getLogger(__name__)

# 2: documents go to the shard their first character falls in (see the module docstring).
FORMAT_VERSION = 2
_ENCODE_BATCH = 4096
_SIDECAR_INTERVAL_S = 5.0
_SHARD_NAME = re.compile(r"part-(\d{5,})\.tfrecord")
# Warn when more than this share of the next-sentence pairs found no other document.
_NSP_FALLBACK_WARNING_SHARE = 0.01
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


# Every error `create_pretraining_data` raises on the user's input (options, inputs,
# vocab, output directory) is a `keras_bert.errors.UserInputError`: `ArgumentError`,
# `InputNotFoundError`, `VocabError`, `DataError` or `OutputError`. The old name stays.
PretrainingDataError = UserInputError


@dataclasses.dataclass(frozen=True)
class PretrainingDataOptions:
    """How pretraining instances are made; the defaults are the original script's flags.

    Args:
        max_seq_length: tokens per instance, [CLS] and [SEP]s included.
        max_predictions_per_seq: the most masked-LM predictions per instance.
        masked_lm_prob: the fraction of tokens to predict.
        short_seq_prob: probability of a shorter random target length.
        dupe_factor: passes over the documents, each with different pairs and masks.
        random_seed: fixes the output.
        do_lower_case: lower-case and strip accents (uncased vocab).
        do_whole_word_mask: mask all pieces of a word together.
        next_sentence_prediction: sentence pairs with NSP labels (the paper); False packs
            full sentences into one segment instead (RoBERTa's FULL-SENTENCES).
        dynamic_masking: store unmasked instances for masking in the training pipeline.
        shard_size_mb: text per output shard (millions of characters); also the pool that
            random next segments come from. Memory per worker grows with it.

    Raises:
        ArgumentError: a value of the wrong type or out of range (`field` names the
            first one; the message lists them all).

    Example:

    >>> PretrainingDataOptions(dupe_factor=5).max_seq_length
    128
    >>> PretrainingDataOptions(dupe_factor=0)
    Traceback (most recent call last):
    ...
    keras_bert.errors.ArgumentError: Invalid pretraining data options: dupe_factor must \
be >= 1, got 0.
    """

    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 10
    random_seed: int = 12345
    do_lower_case: bool = True
    do_whole_word_mask: bool = False
    next_sentence_prediction: bool = True
    dynamic_masking: bool = False
    shard_size_mb: float = 1.0

    def __post_init__(self):
        problems: list[tuple[str, str]] = []  # (field, what is wrong)
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type == "bool" and not isinstance(value, bool):
                problems.append((field.name, f"must be True or False, got {value!r}"))
            elif field.type == "int" and (isinstance(value, bool)
                                          or not isinstance(value, (int, np.integer))):
                problems.append((field.name, f"must be an integer, got {value!r}"))
            elif field.type == "float" and (isinstance(value, bool) or not isinstance(
                    value, (int, float, np.integer, np.floating)) or not math.isfinite(value)):
                problems.append((field.name, f"must be a finite number, got {value!r}"))
        if not problems:
            # [CLS] A [SEP] B [SEP] with a target of at least two tokens.
            minimum_length = 5 if self.next_sentence_prediction else 3
            if self.max_seq_length < minimum_length:
                problems.append(("max_seq_length", f"must be >= {minimum_length}, got "
                                                   f"{self.max_seq_length}"))
            if self.max_predictions_per_seq < 1:
                problems.append(("max_predictions_per_seq",
                                 f"must be >= 1, got {self.max_predictions_per_seq}"))
            if not 0.0 < self.masked_lm_prob <= 1.0:
                problems.append(("masked_lm_prob", f"must be in (0, 1], got "
                                                   f"{self.masked_lm_prob}"))
            if not 0.0 <= self.short_seq_prob <= 1.0:
                problems.append(("short_seq_prob", f"must be in [0, 1], got "
                                                   f"{self.short_seq_prob}"))
            if self.dupe_factor < 1:
                problems.append(("dupe_factor", f"must be >= 1, got {self.dupe_factor}"))
            if self.shard_size_mb <= 0:
                problems.append(("shard_size_mb", f"must be > 0, got {self.shard_size_mb}"))
        if problems:
            raise ArgumentError(
                "Invalid pretraining data options: "
                + "; ".join(f"{field} {problem}" for field, problem in problems) + ".",
                field=problems[0][0])


def shard_file_name(shard_id: int) -> str:
    """The name of output shard `shard_id`.

    Example:

    >>> shard_file_name(3)
    'part-00003.tfrecord'
    """
    return f"part-{shard_id:05d}.tfrecord"


def sidecar_file_name(shard_index: int = 0, num_shards: int = 1) -> str:
    """The JSON sidecar's name: one per run, or per slice when machines split the work.

    Example:

    >>> sidecar_file_name(), sidecar_file_name(1, 4)
    ('pretraining_data.json', 'pretraining_data-00001-of-00004.json')
    """
    if num_shards == 1:
        return "pretraining_data.json"
    return f"pretraining_data-{shard_index:05d}-of-{num_shards:05d}.json"


class ShardWriter:
    """Turns one chunk of text documents into one complete TFRecord shard.

    Two steps, so that the second can run in a worker process that uses no TensorFlow:
    `tokenize` (`keras_bert.tokenization.BertTokenizer`, TF ops) gives a `TokenizedShard`;
    `build_shard` makes its instances (`keras_bert.data.instances`), masks them unless
    masking is dynamic (`MaskedLmMasker.mask_arrays`) and serializes them, all in
    Python and numpy. Calling the writer does both and writes the file atomically; it
    returns the shard's counts.

    Args:
        vocab_file: the WordPiece vocab.txt.
        options: `PretrainingDataOptions`.

    Example:

    >>> writer = ShardWriter(vocab_file, PretrainingDataOptions())  # doctest: +SKIP
    >>> writer(0, [["First sentence.", "Second one."], ["Another doc."]],
    ...        "/tmp/out/part-00000.tfrecord")["instances"]  # doctest: +SKIP
    20
    """

    def __init__(self, vocab_file: str, options: PretrainingDataOptions):
        self.options = options
        self.tokenizer = BertTokenizer(vocab_file, lower_case=options.do_lower_case)
        self.builder = _ShardBuilder(options, self.tokenizer.cls_id, self.tokenizer.sep_id,
                                     None if options.dynamic_masking else MaskedLmMasker(
            self.tokenizer.vocabulary, max_predictions_per_seq=options.max_predictions_per_seq,
            masked_lm_prob=options.masked_lm_prob, whole_word_mask=options.do_whole_word_mask))

    def tokenize(self, shard_id: int, text_documents: list[list[str]]) -> TokenizedShard:
        """The documents' sentences as ids; sentences and documents left empty are dropped."""
        lines = [line for document in text_documents for line in document]
        ragged = self.tokenizer.tokenize(tf.constant(lines, tf.string))
        ids = ragged.flat_values.numpy()
        lengths = np.diff(ragged.row_splits.numpy())
        document_of_line = np.repeat(np.arange(len(text_documents)),
                                     [len(document) for document in text_documents])
        kept = lengths > 0
        sentences_per_document = np.bincount(document_of_line[kept],
                                             minlength=len(text_documents))
        max_num_tokens = self.options.max_seq_length - (
            3 if self.options.next_sentence_prediction else 2)
        stats = collections.Counter({
            "empty_sentences": int(np.count_nonzero(~kept)),
            "long_sentences": int(np.count_nonzero(lengths > max_num_tokens)),
            "documents": int(np.count_nonzero(sentences_per_document)),
            "single_sentence_documents": int(np.count_nonzero(sentences_per_document == 1)),
            "sentences": int(np.count_nonzero(kept)),
            "tokens": len(ids)})
        return TokenizedShard(shard_id, ids, lengths[kept],
                              sentences_per_document[sentences_per_document > 0], stats)

    def __call__(self, shard_id: int, text_documents: list[list[str]], path: str) -> dict:
        records, stats = build_shard(self.builder, self.tokenize(shard_id, text_documents))
        write_tfrecord(path, records)
        return stats


@dataclasses.dataclass
class TokenizedShard:
    """A chunk of documents as ids: `ids` flat, `sentence_lengths` tokens per sentence,
    `document_sizes` sentences per document (no empty sentence or document), and the
    counts made so far. Numpy arrays, so that it travels to a worker process cheaply."""

    shard_id: int
    ids: np.ndarray
    sentence_lengths: np.ndarray
    document_sizes: np.ndarray
    stats: collections.Counter

    def documents(self) -> list[list[list[int]]]:
        """Documents of sentences of ids, as lists."""
        ids = self.ids.tolist()
        ends = np.cumsum(self.sentence_lengths).tolist()
        sentences = [ids[start:end] for start, end in zip([0, *ends[:-1]], ends)]
        ends = np.cumsum(self.document_sizes).tolist()
        return [sentences[start:end] for start, end in zip([0, *ends[:-1]], ends)]


@dataclasses.dataclass(frozen=True)
class _ShardBuilder:
    """What `build_shard` needs: no TensorFlow, so a forked worker can use it."""

    options: PretrainingDataOptions
    cls_id: int
    sep_id: int
    masker: MaskedLmMasker | None


def build_shard(builder: _ShardBuilder, shard: TokenizedShard) -> tuple[list[bytes], dict]:
    """The serialized examples of a tokenized shard, and its counts (Python and numpy
    only, no TensorFlow)."""
    with _cyclic_gc_paused():
        return _build_shard(builder, shard)


@contextlib.contextmanager
def _cyclic_gc_paused():
    """Pauses Python's cyclic garbage collector: a shard makes millions of small lists
    (sentences, instances) and no reference cycle, so the collections that their
    allocation triggers free nothing yet took a third of the CPU time (measured: 4.8 s
    -> 3.1 s for the 16 shards of the benchmark's corpus). Reference counting still
    frees everything as usual."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _build_shard(builder: _ShardBuilder, shard: TokenizedShard) -> tuple[list[bytes], dict]:
    options = builder.options
    stats = collections.Counter(shard.stats)
    rng = random.Random(f"{options.random_seed}/{shard.shard_id}")
    instances = create_instances(
        shard.documents(), max_seq_length=options.max_seq_length,
        short_seq_prob=options.short_seq_prob, dupe_factor=options.dupe_factor,
        next_sentence_prediction=options.next_sentence_prediction,
        cls_id=builder.cls_id, sep_id=builder.sep_id, rng=rng, stats=stats)
    if options.next_sentence_prediction and len(shard.document_sizes) == 1:
        stats["nsp_single_document_shards"] = 1  # no random next segment possible
    stats["instances"] = len(instances)
    stats["random_next_instances"] = sum(inst.is_random_next for inst in instances)
    stats["instance_tokens"] = sum(len(inst.tokens) for inst in instances)
    mask_rng = np.random.default_rng(_derive_seed(options.random_seed, shard.shard_id, "mask"))
    records = []
    for start in range(0, len(instances), _ENCODE_BATCH):
        arrays = instances_to_arrays(instances[start:start + _ENCODE_BATCH],
                                     options.max_seq_length)
        features = {name: arrays[name] for name in ("input_ids", "input_mask", "segment_ids")}
        if builder.masker is not None:
            masked = builder.masker.mask_arrays(arrays["input_ids"], arrays["input_mask"],
                                                mask_rng)
            features["input_ids"] = masked.pop("input_word_ids")
            features.update(masked)
            stats["masked_lm_predictions"] += int(np.count_nonzero(masked["masked_lm_weights"]))
        features["next_sentence_labels"] = arrays["next_sentence_labels"]
        records.extend(serialize_examples(features))
    return records, dict(stats)


def _derive_seed(*parts) -> int:
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1  # a non-negative int64


# The shard builder of a worker process, set by `_init_worker`.
_BUILDER: _ShardBuilder | None = None


def _init_worker(builder: _ShardBuilder, parent_pid: int | None = None) -> None:
    global _BUILDER
    _BUILDER = builder
    if parent_pid is not None:
        _die_with_parent(parent_pid)


def _die_with_parent(parent_pid: int) -> None:
    """Ends this forked worker as soon as the process that forked it dies, even by
    SIGKILL (which runs no clean-up there): on Linux the kernel sends SIGKILL
    (`prctl(PR_SET_PDEATHSIG)`), elsewhere a thread polls the parent's pid."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    except (OSError, AttributeError):
        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)


def _build_shard_in_worker(shard: TokenizedShard) -> tuple[int, list[bytes], dict]:
    return (shard.shard_id, *build_shard(_BUILDER, shard))


class _Sidecar:
    """The run's JSON record; resuming requires the same settings, vocab and inputs."""

    def __init__(self, path: str, identity: dict):
        self.path = path
        self.identity = identity
        self.shards: dict[str, dict] = {}
        self.existed = kb_io.exists(path)
        if self.existed:
            try:
                previous = kb_io.read_json(path)
            except (OSError, ValueError, tf.errors.OpError) as e:
                raise OutputError(
                    f"{path!r} cannot be read ({e}); remove it and the part-*.tfrecord "
                    "shards beside it, choose another output directory, or set "
                    "overwrite=True to replace them.") from None
            if not isinstance(previous, dict):
                previous = {}
            differs = [key for key, value in identity.items() if previous.get(key) != value]
            if "settings" in differs and isinstance(previous.get("settings"), dict):
                old_settings = previous["settings"]
                differs[differs.index("settings")] = "settings (" + ", ".join(
                    f"{k}: {old_settings.get(k)!r} → {v!r}"
                    for k, v in identity["settings"].items() if old_settings.get(k) != v) + ")"
            if differs:
                raise OutputError(
                    f"{path!r} was written with different {', '.join(differs)}; its shards "
                    "cannot be resumed and would mix with new ones. Choose another output "
                    "directory, or set overwrite=True to replace them.")
            self.shards = previous.get("shards", {})
        self._last_write = 0.0

    def is_done(self, output_dir: str, name: str) -> bool:
        return name in self.shards and kb_io.exists(os.path.join(output_dir, name))

    def write(self, input_stats: dict, complete: bool, force: bool = False) -> dict:
        if not force and time.monotonic() - self._last_write < _SIDECAR_INTERVAL_S:
            return {}
        record = {**self.identity, "complete": complete, "input_stats": input_stats,
                  "totals": self.totals(), "shards": dict(sorted(self.shards.items()))}
        kb_io.write_json(self.path, record, indent=1, sort_keys=False)
        self._last_write = time.monotonic()
        return record

    def totals(self) -> dict:
        totals: collections.Counter = collections.Counter()
        for counts in self.shards.values():
            totals.update(counts)
        return dict(sorted(totals.items()))


def _check_output_directory(output_dir: str, sidecar: _Sidecar, shard_index: int,
                            num_shards: int) -> None:
    """Refuses a directory holding shards that no sidecar of this layout accounts for:
    a `*.tfrecord` glob would feed them to training beside the new ones."""
    if not kb_io.isdir(output_dir):
        return
    names = {name.rstrip("/") for name in kb_io.listdir(output_dir)}
    strays = []
    for name in sorted(names):
        match = _SHARD_NAME.fullmatch(name)
        if not match:
            continue
        owner = int(match.group(1)) % num_shards
        if owner == shard_index:
            if not sidecar.existed:
                strays.append(name)
        elif sidecar_file_name(owner, num_shards) not in names:
            strays.append(name)
    if strays:
        example = ", ".join(strays[:3]) + (f" and {len(strays) - 3} more"
                                           if len(strays) > 3 else "")
        raise OutputError(
            f"The output directory {output_dir!r} holds shards that no "
            f"{sidecar_file_name(0, num_shards) if num_shards == 1 else 'sidecar'} of this "
            f"run describes ({example}): old data, which training would read together with "
            "the new shards. Remove them (with any pretraining_data*.json), choose "
            "another output directory, or set overwrite=True to replace them.")


def _remove_previous_run(output_dir: str, shard_index: int, num_shards: int) -> None:
    """Removes the shards of this slice and its sidecar that an earlier run left."""
    if not kb_io.isdir(output_dir):
        return
    own_sidecar = sidecar_file_name(shard_index, num_shards)
    removed = 0
    for name in kb_io.listdir(output_dir):
        name = name.rstrip("/")
        match = _SHARD_NAME.fullmatch(name)
        if name == own_sidecar or (match and int(match.group(1)) % num_shards == shard_index):
            kb_io.remove(os.path.join(output_dir, name))
            removed += 1
    if removed:
        logger.info("Removed %d files of an earlier run from %s (overwrite).", removed,
                    output_dir)


def _remove_stale_temporaries(output_dir: str, shard_index: int, num_shards: int) -> None:
    """Clears the hidden temporaries an interrupted run of this slice left (its shards'
    and its sidecar's); other slices' machines may be writing theirs right now."""
    own_sidecar = sidecar_file_name(shard_index, num_shards)

    def owned(target: str) -> bool:
        match = _SHARD_NAME.fullmatch(target)
        if match:
            return int(match.group(1)) % num_shards == shard_index
        return target == own_sidecar

    for path in kb_io.remove_stale_temporaries(output_dir, owned):
        logger.info("Removed %s, left by an interrupted run.", path)


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
class _Run:
    """A run that passed every check: its output directory, input files (None for a
    dataset), sidecar, vocab and whether the run created the directory."""

    output_dir: str
    files: list[str] | None
    sidecar: _Sidecar
    vocab: list[str]
    created: bool


def _start_run(inputs, output_dir, vocab_file, options: PretrainingDataOptions,
               shard_index: int, num_shards: int, overwrite: bool) -> _Run:
    """Checks the inputs, vocab and output directory, and writes the sidecar of a
    starting run (`create_pretraining_data` and the Beam pipeline share it)."""
    if isinstance(inputs, tf.data.Dataset):
        files, input_record = None, "tf.data.Dataset"
    else:
        files = kb_io.expand_patterns(inputs, what="input file")
        input_record = [{"path": f if kb_io.is_remote(f) else os.path.abspath(f),
                         "bytes": kb_io.file_size(f)} for f in files]
    vocab = load_vocab(vocab_file)
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise VocabError(f"the vocabulary lacks the special tokens {missing}, which "
                         "pretraining data needs.", path=os.fspath(vocab_file))
    output_dir = os.fspath(output_dir) or "."
    kb_io.check_writable(output_dir, kind="directory", what="output directory")
    identity = {
        "format_version": FORMAT_VERSION,
        "settings": {**dataclasses.asdict(options), "shard_index": shard_index,
                     "num_shards": num_shards},
        "vocab": {"sha256": kb_io.file_sha256(vocab_file), "size": len(vocab)},
        "inputs": input_record,
    }
    sidecar_path = os.path.join(output_dir, sidecar_file_name(shard_index, num_shards))
    if overwrite:  # every check above has passed: the old run can go
        _remove_previous_run(output_dir, shard_index, num_shards)
    sidecar = _Sidecar(sidecar_path, identity)
    _check_output_directory(output_dir, sidecar, shard_index, num_shards)
    created = not kb_io.isdir(output_dir)
    kb_io.makedirs(output_dir)
    _remove_stale_temporaries(output_dir, shard_index, num_shards)
    # Written before any shard: a shard on disk always has its sidecar beside it.
    sidecar.write({}, complete=False, force=True)
    return _Run(output_dir, files, sidecar, vocab, created)


def _finish_run(run: _Run, options: PretrainingDataOptions, input_stats: dict,
                all_shards: int, own_shards: int, shard_index: int = 0,
                num_shards: int = 1) -> dict:
    """Refuses a run without instances (removing what it wrote), warns about an idle
    slice or too few documents for NSP, and writes the complete sidecar."""
    totals = run.sidecar.totals()
    if not totals.get("instances") and (own_shards or not all_shards):
        _remove_run(run.output_dir, run.sidecar, run.created)
        raise DataError(_no_instances_message(input_stats, totals, options))
    if not own_shards:
        logger.warning(
            "The input makes %d shards, none of them slice %d of %d (shards i with "
            "i %% %d == %d): this slice wrote no data. Lower shard_size_mb or num_shards "
            "to give every slice work.", all_shards, shard_index, num_shards,
            num_shards, shard_index)
    if options.next_sentence_prediction:
        _warn_about_few_documents(totals)
    return run.sidecar.write(input_stats, complete=True, force=True)


def create_pretraining_data(inputs: str | Iterable[str] | tf.data.Dataset, output_dir: str,
                            vocab_file: str,
                            options: PretrainingDataOptions = PretrainingDataOptions(), *,
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

    >>> summary = create_pretraining_data("corpus/*.txt", "/tmp/pretraining", "vocab.txt",
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
    run = _start_run(inputs, output_dir, vocab_file, options, shard_index, num_shards,
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
        _run(tasks(), num_workers, (vocab_file, options), on_done)
    except BaseException:
        # Record what is done (e.g. on Ctrl-C) so that a rerun skips it.
        sidecar.write(dict(sorted(input_stats.items())), complete=False, force=True)
        raise
    finally:
        bar.close()
    return _finish_run(run, options, dict(sorted(input_stats.items())), shards_seen["all"],
                       shards_seen["own"], shard_index, num_shards)


def _remove_run(output_dir: str, sidecar: _Sidecar, created: bool) -> None:
    """Removes this run's shards, its sidecar and the directory if the run made it and
    it is left empty."""
    for name in sidecar.shards:
        path = os.path.join(output_dir, name)
        if kb_io.exists(path):
            kb_io.remove(path)
    if kb_io.exists(sidecar.path):
        kb_io.remove(sidecar.path)
    if created and not kb_io.is_remote(output_dir) and not os.listdir(output_dir):
        os.rmdir(output_dir)


def _no_instances_message(input_stats: dict, totals: dict,
                          options: PretrainingDataOptions) -> str:
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
                  "(one sentence a line, a blank line between documents) or set "
                  "next_sentence_prediction=False")
    elif not totals.get("documents"):
        advice = ("the input holds no text: check that the input files are the plain or "
                  "gzip text corpus (one sentence a line, a blank line between documents) "
                  "and not empty")
    else:
        advice = (f"the input is too small for max_seq_length={options.max_seq_length}: "
                  "give more text")
    return f"No pretraining instances from the input ({read}): {advice}."


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


def _run(tasks: Iterator, num_workers: int, writer_args: tuple, on_done) -> None:
    """Builds the shards in this process and in `num_workers - 1` forked processes.

    This process tokenizes every shard (TF ops) and writes every file; making the
    instances, masking and serializing (Python and numpy: most of the work) runs in the
    workers, or here when each worker already has two shards waiting (which also keeps
    memory flat). The workers are forked once the tokenizer is built, so they start at
    once and share its tables; they use no TensorFlow (its runtime does not survive a
    fork) and end with this process, even when it is killed (`_die_with_parent`).
    Where fork is not available, everything runs here.
    """
    writer = ShardWriter(*writer_args)
    if "fork" not in multiprocessing.get_all_start_methods():
        num_workers = 1
    num_forked = num_workers - 1
    if num_forked > 0:
        # Python's garbage collector in a worker would write to every object it inherited
        # (making private copies of their pages); frozen objects it leaves alone.
        gc.freeze()
    pool = ProcessPoolExecutor(num_forked, mp_context=multiprocessing.get_context("fork"),
                               initializer=_init_worker, initargs=(writer.builder, os.getpid())
                               ) if num_forked > 0 else None
    in_flight: dict = {}  # future -> the shard's path

    def write(shard_id: int, path: str, records: list[bytes], stats: dict) -> None:
        write_tfrecord(path, records)
        # Lets the reader name a shard truncated later (`tfrecords.check_shard_sizes`).
        on_done(shard_id, {**stats, "file_bytes": kb_io.file_size(path)})

    def finish(future) -> None:
        shard_id, records, stats = future.result()
        write(shard_id, in_flight.pop(future), records, stats)

    try:
        for shard_id, text_documents, path in tasks:
            shard = writer.tokenize(shard_id, text_documents)
            for future in [future for future in in_flight if future.done()]:
                finish(future)
            if pool is not None and len(in_flight) < 2 * num_forked:
                in_flight[pool.submit(_build_shard_in_worker, shard)] = path
            else:
                write(shard_id, path, *build_shard(writer.builder, shard))
        for future in as_completed(list(in_flight)):
            finish(future)
    except BaseException:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    else:
        if pool is not None:
            pool.shutdown()
    finally:
        if num_forked > 0:
            gc.unfreeze()
