"""Masked-LM prediction choice (paper §3.1, Task #1), vectorized in TensorFlow.

One implementation serves both the static masks written into the TFRecords and the
dynamic masks drawn inside the tf.data training pipeline. It follows
`create_masked_lm_predictions` of google-research/bert:

- candidates are all real tokens except [CLS] and [SEP];
- `num_to_predict = min(max_predictions_per_seq, max(1, round(len(tokens) * masked_lm_prob)))`,
  where `len(tokens)` counts [CLS] and [SEP] and `round` rounds half to even (Python's);
- the candidates (whole words with whole-word masking: a "##" piece joins the word before
  it) are visited in a uniformly random order and taken while they fit: a word that
  would exceed `num_to_predict` is skipped and the next one tried;
- each chosen token independently becomes [MASK] (80%), a random id drawn uniformly from
  the whole vocab (10%), or stays unchanged (10%);
- positions are sorted, labels are the original ids, and all three outputs are
  zero-padded to `max_predictions_per_seq` with weight 1.0 exactly on real predictions.

The random choices come from stateless TF ops, so a seed fixes the result.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import tensorflow as tf

from keras_bert.tokenization import CLS_TOKEN, MASK_TOKEN, SEP_TOKEN, load_vocab


class MaskedLmMasker:
    """Chooses and applies BERT's masked-LM predictions for a batch of token ids.

    Args:
        vocab: the WordPiece vocabulary the ids come from: a vocab.txt path or the
            tokens in id order (e.g. `BertTokenizer.vocabulary`).
        max_predictions_per_seq: the most predictions per sequence (the padded width).
        masked_lm_prob: the fraction of tokens to predict.
        whole_word_mask: mask all pieces of a word together.

    Call it with `input_ids` and `input_mask` of shape [batch, seq] and a stateless
    `seed` (shape [2] integers). It returns a dict with `input_word_ids` (the masked ids,
    same dtype as `input_ids`), `masked_lm_positions` and `masked_lm_ids` (same dtype)
    and `masked_lm_weights` (float32), the last three shaped [batch,
    max_predictions_per_seq]. It works eagerly, in `tf.function` and in `tf.data`.

    Example:

    >>> import numpy as np
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##c"]
    >>> masker = MaskedLmMasker(vocab, max_predictions_per_seq=3)
    >>> ids = np.array([[2, 5, 6, 7, 5, 6, 7, 5, 3, 0]])
    >>> out = masker(ids, ids > 0, seed=[1, 2])
    >>> int(out["masked_lm_weights"].numpy().sum())  # round(0.15 * 9 tokens) = 1
    1
    >>> sorted(out)
    ['input_word_ids', 'masked_lm_ids', 'masked_lm_positions', 'masked_lm_weights']
    """

    def __init__(self, vocab: str | os.PathLike | Sequence[str], *,
                 max_predictions_per_seq: int = 20, masked_lm_prob: float = 0.15,
                 whole_word_mask: bool = False):
        tokens = load_vocab(vocab) if isinstance(vocab, (str, os.PathLike)) else list(vocab)
        # As FullTokenizer's dict: a repeated token has the id of its last line.
        ids = {token: i for i, token in enumerate(tokens)}
        missing = [t for t in (CLS_TOKEN, SEP_TOKEN, MASK_TOKEN) if t not in ids]
        if missing:
            raise ValueError(f"The vocabulary lacks {missing}, which masked-LM data needs.")
        if max_predictions_per_seq < 1:
            raise ValueError(f"max_predictions_per_seq must be >= 1, got {max_predictions_per_seq}.")
        if not 0.0 < masked_lm_prob <= 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1], got {masked_lm_prob}.")
        self.vocab_size = len(tokens)
        self.mask_id, self.cls_id, self.sep_id = ids[MASK_TOKEN], ids[CLS_TOKEN], ids[SEP_TOKEN]
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.masked_lm_prob = float(masked_lm_prob)
        self.whole_word_mask = bool(whole_word_mask)
        # Whole-word masking glues a "##" piece to the word before it.
        self._continues_word = tf.constant([t.startswith("##") for t in tokens], tf.bool)

    def __call__(self, input_ids, input_mask, seed) -> dict[str, tf.Tensor]:
        ids = tf.convert_to_tensor(input_ids)
        real = tf.cast(input_mask, tf.bool)
        seeds = tf.random.split(tf.convert_to_tensor(seed, tf.int64), 3)
        shape = tf.shape(ids)
        batch, length = shape[0], shape[1]
        positions = tf.range(length)[tf.newaxis, :]

        candidate = real & (ids != self.cls_id) & (ids != self.sep_id)
        num_tokens = tf.reduce_sum(tf.cast(real, tf.int32), axis=1)
        # float64 and round-half-to-even reproduce Python's round(len(tokens) * prob).
        num_to_predict = tf.cast(tf.round(tf.cast(num_tokens, tf.float64) * self.masked_lm_prob),
                                 tf.int32)
        num_to_predict = tf.minimum(self.max_predictions_per_seq, tf.maximum(1, num_to_predict))

        if self.whole_word_mask:
            # As in the original, a "##" piece continues the previous candidate even
            # across [SEP]; one with no candidate before it starts a word.
            continues = tf.gather(self._continues_word, ids)
            has_previous = tf.cumsum(tf.cast(candidate, tf.int32), axis=1, exclusive=True) > 0
            word_start = candidate & ~(continues & has_previous)
        else:
            word_start = candidate

        # A uniformly random order of the words: sort random keys, words first. Adding
        # the position makes the keys distinct, so exactly the chosen count is taken.
        random_part = tf.random.stateless_uniform(shape, seeds[0], minval=0, maxval=2**31 - 1,
                                                  dtype=tf.int32)
        keys = tf.where(word_start, tf.cast(random_part, tf.int64) * tf.cast(length, tf.int64)
                        + tf.cast(positions, tf.int64), tf.int64.max)
        if self.whole_word_mask:
            selected = self._take_whole_words(candidate, word_start, keys, num_to_predict,
                                              batch, length)
        else:
            # Every word is one token, so taking words while they fit takes the first n:
            # those with a key up to the n-th smallest.
            smallest = -tf.math.top_k(-keys, k=tf.minimum(self.max_predictions_per_seq, length),
                                      sorted=True).values
            nth_smallest = tf.gather(smallest, num_to_predict - 1, batch_dims=1)
            selected = word_start & (keys <= nth_smallest[:, tf.newaxis])

        # One draw decides: [MASK] below 0.8, a random id up to 0.9, unchanged above.
        action = tf.random.stateless_uniform(shape, seeds[1])
        random_ids = tf.random.stateless_uniform(shape, seeds[2], minval=0,
                                                 maxval=self.vocab_size, dtype=tf.int32)
        masked_ids = tf.where(selected & (action < 0.8), tf.cast(self.mask_id, ids.dtype),
                              tf.where(selected & (action >= 0.8) & (action < 0.9),
                                       tf.cast(random_ids, ids.dtype), ids))

        # Chosen positions in increasing order, then zero padding: position t goes to
        # slot (chosen before t) of its row; tf.where lists them in row-major order.
        width = self.max_predictions_per_seq
        chosen = tf.where(selected)
        slot = tf.gather_nd(tf.cumsum(tf.cast(selected, tf.int64), axis=1, exclusive=True),
                            chosen)
        lm_positions = tf.scatter_nd(tf.stack([chosen[:, 0], slot], axis=1), chosen[:, 1],
                                     tf.stack([tf.cast(batch, tf.int64), width]))
        count = tf.reduce_sum(tf.cast(selected, tf.int32), axis=1)
        valid = tf.range(width)[tf.newaxis, :] < count[:, tf.newaxis]
        lm_ids = tf.where(valid, tf.gather(ids, lm_positions, batch_dims=1), 0)
        lm_positions = tf.ensure_shape(tf.cast(lm_positions, ids.dtype), [None, width])
        return {
            "input_word_ids": masked_ids,
            "masked_lm_positions": lm_positions,
            "masked_lm_ids": tf.ensure_shape(lm_ids, [None, width]),
            "masked_lm_weights": tf.ensure_shape(tf.cast(valid, tf.float32), [None, width]),
        }

    @staticmethod
    def _take_whole_words(candidate, word_start, keys, num_to_predict, batch, length):
        """The original's greedy pass over shuffled words: take a word if it still fits."""
        order = tf.argsort(keys, axis=1, stable=True)
        rank = tf.argsort(order, axis=1, stable=True)
        word_index = tf.cumsum(tf.cast(word_start, tf.int32), axis=1) - 1
        # Segment ids over the flattened batch; non-candidates go to a spare last segment.
        num_segments = batch * length + 1
        segment = tf.where(candidate, word_index + tf.range(batch)[:, tf.newaxis] * length,
                           num_segments - 1)
        word_length = tf.reshape(
            tf.math.unsorted_segment_sum(tf.cast(candidate, tf.int32), segment,
                                         num_segments)[:-1], [batch, length])
        own_word = tf.maximum(word_index, 0)
        start_length = tf.where(word_start, tf.gather(word_length, own_word, batch_dims=1), 0)
        length_in_order = tf.gather(start_length, order, batch_dims=1)

        def take_if_fits(total, size):
            fits = (size > 0) & (total + size <= num_to_predict)
            return total + tf.where(fits, size, 0)

        totals = tf.transpose(tf.scan(take_if_fits, tf.transpose(length_in_order),
                                      initializer=tf.zeros([batch], tf.int32)))
        previous = tf.pad(totals[:, :-1], [[0, 0], [1, 0]])
        taken_start = tf.gather(totals > previous, rank, batch_dims=1)
        taken_word = tf.reshape(
            tf.math.unsorted_segment_max(tf.cast(taken_start & candidate, tf.int32), segment,
                                         num_segments)[:-1], [batch, length])
        return candidate & (tf.gather(taken_word, own_word, batch_dims=1) > 0)
