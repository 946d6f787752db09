"""BERT pretraining data: text in, sharded masked-LM/NSP TFRecords out.

`create_pretraining_data` streams the input documents in chunks of about
`shard_size_mb`; each chunk becomes one output shard `part-NNNNN.tfrecord`, made from that
chunk alone (it is the pool random next segments come from and the unit the instances are
shuffled in) with a random seed derived from `random_seed` and the shard number. So a
shard's content depends only on its text and the settings: worker processes can build
shards in any order, `num_shards` machines can each build every `num_shards`-th shard
into the same directory, and an interrupted run resumes where it stopped.

Each shard is written under a hidden temporary name and renamed when complete. The JSON
sidecar (`pretraining_data.json`, or `pretraining_data-IIIII-of-NNNNN.json` for a slice)
records the settings, the vocab checksum, the inputs, the counts per shard and in total;
a shard counts as done when its file exists and the sidecar lists it.
"""

from __future__ import annotations

import collections
import dataclasses
import gc
import hashlib
import itertools
import json
import multiprocessing
import os
import random
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np
import tensorflow as tf
import tqdm

from keras_bert.data import documents as documents_lib
from keras_bert.data.instances import create_instances, instances_to_arrays
from keras_bert.data.masking import MaskedLmMasker
from keras_bert.data.tfrecords import serialize_examples, temporary_path, write_tfrecord
from keras_bert.tokenization import SPECIAL_TOKENS, BertTokenizer, load_vocab

FORMAT_VERSION = 1
_ENCODE_BATCH = 4096
_SIDECAR_INTERVAL_S = 5.0


class PretrainingDataError(ValueError):
    """Bad settings or input, found before any work starts.

    Example:

    >>> PretrainingDataOptions(dupe_factor=0)
    Traceback (most recent call last):
    ...
    keras_bert.data.pretraining.PretrainingDataError: Invalid pretraining data options: \
dupe_factor must be >= 1, got 0.
    """


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

    Example:

    >>> PretrainingDataOptions(dupe_factor=5).max_seq_length
    128
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
        # [CLS] A [SEP] B [SEP] with a target of at least two tokens.
        minimum_length = 5 if self.next_sentence_prediction else 3
        problems = []
        if self.max_seq_length < minimum_length:
            problems.append(f"max_seq_length must be >= {minimum_length}, got {self.max_seq_length}")
        if self.max_predictions_per_seq < 1:
            problems.append(f"max_predictions_per_seq must be >= 1, got "
                            f"{self.max_predictions_per_seq}")
        if not 0.0 < self.masked_lm_prob <= 1.0:
            problems.append(f"masked_lm_prob must be in (0, 1], got {self.masked_lm_prob}")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            problems.append(f"short_seq_prob must be in [0, 1], got {self.short_seq_prob}")
        if self.dupe_factor < 1:
            problems.append(f"dupe_factor must be >= 1, got {self.dupe_factor}")
        if self.shard_size_mb <= 0:
            problems.append(f"shard_size_mb must be > 0, got {self.shard_size_mb}")
        if problems:
            raise PretrainingDataError(
                "Invalid pretraining data options: " + "; ".join(problems) + ".")


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
    options = builder.options
    stats = collections.Counter(shard.stats)
    rng = random.Random(f"{options.random_seed}/{shard.shard_id}")
    instances = create_instances(
        shard.documents(), max_seq_length=options.max_seq_length,
        short_seq_prob=options.short_seq_prob, dupe_factor=options.dupe_factor,
        next_sentence_prediction=options.next_sentence_prediction,
        cls_id=builder.cls_id, sep_id=builder.sep_id, rng=rng, stats=stats)
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


def _init_worker(builder: _ShardBuilder) -> None:
    global _BUILDER
    _BUILDER = builder


def _build_shard_in_worker(shard: TokenizedShard) -> tuple[int, list[bytes], dict]:
    return (shard.shard_id, *build_shard(_BUILDER, shard))


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _check_writable(output_dir: str) -> None:
    try:
        os.makedirs(output_dir, exist_ok=True)
        with tempfile.TemporaryFile(dir=output_dir):
            pass
    except OSError as e:
        raise PermissionError(f"--output_dir {output_dir} is not a writable directory: {e}") from None


class _Sidecar:
    """The run's JSON record; resuming requires the same settings, vocab and inputs."""

    def __init__(self, path: str, identity: dict):
        self.path = path
        self.identity = identity
        self.shards: dict[str, dict] = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                previous = json.load(f)
            differs = [key for key, value in identity.items() if previous.get(key) != value]
            if differs:
                raise PretrainingDataError(
                    f"{path} was written with different {', '.join(differs)}; its shards "
                    "cannot be resumed. Use another --output_dir or delete the old files.")
            self.shards = previous.get("shards", {})
        self._last_write = 0.0

    def is_done(self, output_dir: str, name: str) -> bool:
        return name in self.shards and os.path.exists(os.path.join(output_dir, name))

    def write(self, input_stats: dict, complete: bool, force: bool = False) -> dict:
        if not force and time.monotonic() - self._last_write < _SIDECAR_INTERVAL_S:
            return {}
        totals: collections.Counter = collections.Counter()
        for counts in self.shards.values():
            totals.update(counts)
        record = {**self.identity, "complete": complete, "input_stats": input_stats,
                  "totals": dict(sorted(totals.items())),
                  "shards": dict(sorted(self.shards.items()))}
        temporary = temporary_path(self.path)
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
        os.replace(temporary, self.path)
        self._last_write = time.monotonic()
        return record


def create_pretraining_data(inputs: str | Iterable[str] | tf.data.Dataset, output_dir: str,
                            vocab_file: str,
                            options: PretrainingDataOptions = PretrainingDataOptions(), *,
                            num_workers: int | None = None, shard_index: int = 0,
                            num_shards: int = 1, progress: bool = True) -> dict:
    """Writes BERT pretraining TFRecord shards and their JSON sidecar into `output_dir`.

    Args:
        inputs: comma-separated globs (or a list of them) of text files, plain or gzip,
            one sentence a line and a blank line between documents; or a
            `tf.data.Dataset` of scalar strings in that format (one document each, e.g. a
            `tfds` text dataset mapped to its text).
        output_dir: where the `part-NNNNN.tfrecord` shards and the sidecar go.
        vocab_file: the WordPiece vocab.txt.
        options: `PretrainingDataOptions`.
        num_workers: processes building shards, this one included; 0 or 1 builds them
            all in this process. By default the CPU count (workers are forked: they
            start at once).
        shard_index, num_shards: build only the shards `i` with
            `i % num_shards == shard_index`, for splitting the work across machines.
        progress: show a progress bar on stderr.

    Returns:
        The sidecar's content: settings, vocab, inputs, per-shard counts and `totals`
        (documents, instances, tokens, masked-LM predictions, ...), and `input_stats`
        (files, lines and the bad input skipped).

    Raises:
        FileNotFoundError: an input pattern or the vocab file does not exist.
        PermissionError: `output_dir` cannot be written.
        PretrainingDataError: bad options or vocab, or `output_dir` holds a run with
            other settings (a ValueError).

    Example:

    >>> summary = create_pretraining_data("corpus/*.txt", "/tmp/pretraining", "vocab.txt",
    ...     PretrainingDataOptions(dupe_factor=5))  # doctest: +SKIP
    >>> summary["totals"]["instances"]  # doctest: +SKIP
    51234
    """
    if not 0 <= shard_index < num_shards:
        raise PretrainingDataError(
            f"--shard_index must be in [0, {num_shards}), got {shard_index}.")
    # Everything that can fail on the user's input fails here, before any work.
    if isinstance(inputs, tf.data.Dataset):
        files, input_record = None, "tf.data.Dataset"
    else:
        files = documents_lib.expand_input_patterns(inputs)
        input_record = [{"path": os.path.abspath(f), "bytes": os.path.getsize(f)} for f in files]
    if num_workers is None:
        num_workers = os.cpu_count() or 1
    try:
        vocab = load_vocab(vocab_file)
    except ValueError as e:
        raise PretrainingDataError(str(e)) from e
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise PretrainingDataError(
            f"--vocab_file {vocab_file} lacks the special tokens {missing}.")
    _check_writable(output_dir)
    identity = {
        "format_version": FORMAT_VERSION,
        "settings": {**dataclasses.asdict(options), "shard_index": shard_index,
                     "num_shards": num_shards},
        "vocab": {"sha256": _sha256(vocab_file), "size": len(vocab)},
        "inputs": input_record,
    }
    sidecar = _Sidecar(os.path.join(output_dir, sidecar_file_name(shard_index, num_shards)),
                       identity)

    input_stats: collections.Counter = collections.Counter()
    if files is None:
        lines = documents_lib.read_dataset_lines(inputs, input_stats)
    else:
        lines = itertools.chain.from_iterable(
            documents_lib.read_file_lines(f, input_stats) for f in files)
    chunks = documents_lib.chunk_documents(lines, int(options.shard_size_mb * 1e6), input_stats)

    def tasks():
        for shard_id, text_documents in enumerate(chunks):
            name = shard_file_name(shard_id)
            if shard_id % num_shards == shard_index and not sidecar.is_done(output_dir, name):
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
    return sidecar.write(dict(sorted(input_stats.items())), complete=True, force=True)


def _run(tasks: Iterator, num_workers: int, writer_args: tuple, on_done) -> None:
    """Builds the shards in this process and in `num_workers - 1` forked processes.

    This process tokenizes every shard (TF ops) and writes every file; making the
    instances, masking and serializing (Python and numpy: most of the work) runs in the
    workers, or here when each worker already has two shards waiting (which also keeps
    memory flat). The workers are forked once the tokenizer is built, so they start at
    once and share its tables; they use no TensorFlow (its runtime does not survive a
    fork). Where fork is not available, everything runs here.
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
                               initializer=_init_worker, initargs=(writer.builder,)
                               ) if num_forked > 0 else None
    in_flight: dict = {}  # future -> the shard's path

    def finish(future) -> None:
        shard_id, records, stats = future.result()
        write_tfrecord(in_flight.pop(future), records)
        on_done(shard_id, stats)

    try:
        for shard_id, text_documents, path in tasks:
            shard = writer.tokenize(shard_id, text_documents)
            for future in [future for future in in_flight if future.done()]:
                finish(future)
            if pool is not None and len(in_flight) < 2 * num_forked:
                in_flight[pool.submit(_build_shard_in_worker, shard)] = path
            else:
                records, stats = build_shard(writer.builder, shard)
                write_tfrecord(path, records)
                on_done(shard_id, stats)
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
