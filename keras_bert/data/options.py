"""`PretrainingDataOptions`: how pretraining instances are made, checked when made; and
`PretrainingDataJobOptions`, what the command that makes them is asked for besides.

Kept apart from the pipeline (`keras_bert.data.pretraining`) so that reading the options
needs no TensorFlow: the command line builds its flags from their defaults.
"""

from __future__ import annotations

import dataclasses

from keras_bert.core.checks import REQUIRED, OptionChecks, option


@dataclasses.dataclass(frozen=True)
class PretrainingDataOptions:
    """How pretraining instances are made; the defaults are the original script's flags.
    Each field's range and flag help are declared with it (`keras_bert.core.checks.option`).

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
    keras_bert.core.errors.ArgumentError: Invalid pretraining data options: dupe_factor must \
be >= 1, got 0.
    """

    max_seq_length: int = option(
        128, "tokens per instance, [CLS]/[SEP] included", at_least=1)
    max_predictions_per_seq: int = option(
        20, "most masked-LM predictions per instance", at_least=1)
    masked_lm_prob: float = option(
        0.15, "fraction of tokens to predict", greater_than=0, at_most=1)
    short_seq_prob: float = option(
        0.1, "probability of a shorter random target length", at_least=0, at_most=1)
    dupe_factor: int = option(
        10, "passes over the input, each with different masks", at_least=1)
    random_seed: int = option(12345, "seed that fixes the output")
    do_lower_case: bool = option(
        True, "lower-case and strip accents (true for uncased vocabs)")
    do_whole_word_mask: bool = option(False, "mask all WordPieces of a word together")
    next_sentence_prediction: bool = option(
        True, "sentence pairs with NSP labels; false packs full sentences into one segment "
        "(RoBERTa's FULL-SENTENCES)")
    dynamic_masking: bool = option(
        False, "store unmasked instances; mask in the training pipeline "
        "(keras_bert.data.pretraining_dataset with a masker)")
    shard_size_mb: float = option(
        1.0, "text per output shard in millions of characters; also the pool random next "
        "segments come from", greater_than=0)

    def __post_init__(self):
        checks = OptionChecks("pretraining data options", self)
        # [CLS] A [SEP] B [SEP] with a target of at least two tokens.
        minimum = 5 if self.next_sentence_prediction else 3
        checks.check(lambda: self.max_seq_length >= minimum, "max_seq_length",
                     f"must be >= {minimum}, got {self.max_seq_length}")
        checks.raise_if_any()


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingDataJobOptions:
    """What `keras-bert create-pretraining-data` is asked for besides the
    `PretrainingDataOptions`: the text, the vocab and where the shards go, the runner and
    its workers, this machine's slice; declared once (its flags are made from them)."""

    input_file: str = option(REQUIRED,
                             "input text: comma-separated globs of plain or gzip files")
    output_dir: str = option(REQUIRED,
                             "directory for the *.tfrecord shards and the JSON sidecar")
    vocab_file: str = option(REQUIRED, "the WordPiece vocab.txt")
    runner: str = option(
        "local", "local: worker processes on this machine; beam: an Apache Beam pipeline "
        "(pip install -e \".[beam]\"), the same shards, on the runner --beam_options names "
        "(default: %(default)s)", choices=("local", "beam"))
    beam_options: str = option(
        "", "with --runner beam: Beam pipeline flags in one string, e.g. "
        "\"--runner=DataflowRunner --project=P --region=R --temp_location=gs://B/tmp\" or "
        "\"--runner=FlinkRunner --flink_master=HOST:8081\" (default: the DirectRunner in "
        "this process)")
    num_workers: int | None = option(
        None, "processes building shards, this one included; 1 works in this process only "
        "(default: the CPU count; with --runner beam, Beam's own flags set the workers)",
        at_least=1)
    shard_index: int = option(
        0, "with --num_shards: this machine's slice (default: %(default)s)", at_least=0)
    num_shards: int = option(1, "machines splitting the work; each writes every "
                                "num_shards-th shard (default: %(default)s)", at_least=1)
    overwrite: bool = option(
        False, "start over in an --output_dir that holds shards of an earlier run with other "
        "settings or input (they are removed once every check has passed); without it such "
        "a directory is refused, and one of the same run is resumed")
    progress: bool = option(True, "show a progress bar")
