"""One shard of pretraining data: its file name, and the writer that makes it from a chunk
of text documents.

`ShardWriter` tokenizes a chunk in this process (TF ops) and hands the ids to
`build_shard`, which makes the instances, masks and serializes them in Python and numpy
only, so that a forked worker process can run it (`keras_bert.data.workers`). Every random
choice comes from a seed derived from `random_seed` and the shard number, so a shard is a
function of its text and the settings alone. The file is written under a hidden
temporary name and renamed when complete (`keras_bert.core.fileio`).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gc
import hashlib
import random
import re

import numpy as np
import tensorflow as tf

from keras_bert.data.instances import create_instances, instances_to_arrays
from keras_bert.data.masking import MaskedLmMasker
from keras_bert.data.tfrecords import serialize_examples, write_tfrecord
from keras_bert.text.tokenizer import BertTokenizer

_ENCODE_BATCH = 4096
_SHARD_NAME = re.compile(r"part-(\d{5,})\.tfrecord")


def shard_file_name(shard_id: int) -> str:
    """The name of output shard `shard_id`.

    Example:

    >>> shard_file_name(3)
    'part-00003.tfrecord'
    """
    return f"part-{shard_id:05d}.tfrecord"


def shard_id_of(name: str) -> int | None:
    """The shard number a file name gives (`shard_file_name`), None for any other name.

    Example:

    >>> shard_id_of("part-00003.tfrecord"), shard_id_of("pretraining_data.json")
    (3, None)
    """
    match = _SHARD_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


class ShardWriter:
    """Turns one chunk of text documents into one complete TFRecord shard.

    Two steps, so that the second can run in a worker process that uses no TensorFlow:
    `tokenize` (`keras_bert.text.tokenizer.BertTokenizer`, TF ops) gives a `TokenizedShard`;
    `build_shard` makes its instances (`keras_bert.data.instances`), masks them unless
    masking is dynamic (`MaskedLmMasker.mask_arrays`) and serializes them, all in
    Python and numpy. Calling the writer does both and writes the file atomically; it
    returns the shard's counts.

    Args:
        vocab_file: the WordPiece vocab.txt.
        options: `keras_bert.data.pretraining.PretrainingDataOptions` (not annotated:
            that module imports this one).

    Example:

    >>> writer = ShardWriter(vocab_file, PretrainingDataOptions())  # doctest: +SKIP
    >>> writer(0, [["First sentence.", "Second one."], ["Another doc."]],
    ...        "/tmp/out/part-00000.tfrecord")["instances"]  # doctest: +SKIP
    20
    """

    def __init__(self, vocab_file: str, options):
        self.options = options
        self.tokenizer = BertTokenizer(vocab_file, lower_case=options.do_lower_case)
        self.builder = ShardBuilder(
            max_seq_length=options.max_seq_length, short_seq_prob=options.short_seq_prob,
            dupe_factor=options.dupe_factor,
            next_sentence_prediction=options.next_sentence_prediction,
            random_seed=options.random_seed, cls_id=self.tokenizer.cls_id,
            sep_id=self.tokenizer.sep_id,
            masker=None if options.dynamic_masking else MaskedLmMasker(
                self.tokenizer.vocabulary,
                max_predictions_per_seq=options.max_predictions_per_seq,
                masked_lm_prob=options.masked_lm_prob,
                whole_word_mask=options.do_whole_word_mask))

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
class ShardBuilder:
    """What `build_shard` needs, from the options and the vocab: no TensorFlow, so a
    forked worker can use it. `masker` is None for dynamic masking."""

    max_seq_length: int
    short_seq_prob: float
    dupe_factor: int
    next_sentence_prediction: bool
    random_seed: int
    cls_id: int
    sep_id: int
    masker: MaskedLmMasker | None


def build_shard(builder: ShardBuilder, shard: TokenizedShard) -> tuple[list[bytes], dict]:
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


def _build_shard(builder: ShardBuilder, shard: TokenizedShard) -> tuple[list[bytes], dict]:
    stats = collections.Counter(shard.stats)
    rng = random.Random(f"{builder.random_seed}/{shard.shard_id}")
    instances = create_instances(
        shard.documents(), max_seq_length=builder.max_seq_length,
        short_seq_prob=builder.short_seq_prob, dupe_factor=builder.dupe_factor,
        next_sentence_prediction=builder.next_sentence_prediction,
        cls_id=builder.cls_id, sep_id=builder.sep_id, rng=rng, stats=stats)
    if builder.next_sentence_prediction and len(shard.document_sizes) == 1:
        stats["nsp_single_document_shards"] = 1  # no random next segment possible
    stats["instances"] = len(instances)
    stats["random_next_instances"] = sum(inst.is_random_next for inst in instances)
    stats["instance_tokens"] = sum(len(inst.tokens) for inst in instances)
    mask_rng = np.random.default_rng(_derive_seed(builder.random_seed, shard.shard_id, "mask"))
    records = []
    for start in range(0, len(instances), _ENCODE_BATCH):
        arrays = instances_to_arrays(instances[start:start + _ENCODE_BATCH],
                                     builder.max_seq_length)
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
