"""`PretrainingDataOptions`: how pretraining instances are made, checked when made.

Kept apart from the pipeline (`keras_bert.data.pretraining`) so that reading the options
needs no TensorFlow: the command line builds its flags from their defaults.
"""

from __future__ import annotations

import dataclasses

from keras_bert.core.checks import OptionChecks


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
    keras_bert.core.errors.ArgumentError: Invalid pretraining data options: dupe_factor must \
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
        checks = OptionChecks("pretraining data options", self)
        # [CLS] A [SEP] B [SEP] with a target of at least two tokens.
        checks.at_least(5 if self.next_sentence_prediction else 3, "max_seq_length")
        checks.at_least(1, "max_predictions_per_seq", "dupe_factor")
        checks.within("masked_lm_prob", 0, 1, low_open=True)
        checks.within("short_seq_prob", 0, 1)
        checks.greater_than(0, "shard_size_mb")
        checks.raise_if_any()
