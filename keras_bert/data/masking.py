"""Masked-LM prediction choice (paper §3.1, Task #1), vectorized over a batch.

It serves both the static masks written into the TFRecords and the dynamic masks drawn
inside the tf.data training pipeline, and follows `create_masked_lm_predictions` of
google-research/bert:

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

It is written twice: as TF ops (`MaskedLmMasker.__call__`, for dynamic masking in graph)
and in numpy (`MaskedLmMasker.mask_arrays`, for the static masks written into the files,
where it is several times faster than the TF ops). Both take the same steps; only the
random numbers differ: stateless TF ops under a seed, or a numpy `Generator`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.core.errors import ArgumentError, VocabError
from keras_bert.text.vocab import (
    CLS_TOKEN,
    MASK_TOKEN,
    SEP_TOKEN,
    check_unique_tokens,
    load_vocab,
)


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
    max_predictions_per_seq]. It works eagerly, in `tf.function` and in `tf.data`;
    `mask_arrays` makes the same choice in numpy.

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
        if isinstance(vocab, (str, os.PathLike)):
            tokens = load_vocab(vocab)
        else:
            tokens = list(vocab)
            check_unique_tokens(tokens)
        ids = {token: i for i, token in enumerate(tokens)}
        missing = [t for t in (CLS_TOKEN, SEP_TOKEN, MASK_TOKEN) if t not in ids]
        if missing:
            raise VocabError(f"The vocabulary lacks {missing}, which masked-LM data needs.")
        if max_predictions_per_seq < 1:
            raise ArgumentError(f"max_predictions_per_seq must be >= 1, got "
                                f"{max_predictions_per_seq}.", field="max_predictions_per_seq")
        if not 0.0 < masked_lm_prob <= 1.0:
            raise ArgumentError(f"masked_lm_prob must be in (0, 1], got {masked_lm_prob}.",
                                field="masked_lm_prob")
        self.vocab_size = len(tokens)
        self.mask_id, self.cls_id, self.sep_id = ids[MASK_TOKEN], ids[CLS_TOKEN], ids[SEP_TOKEN]
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.masked_lm_prob = float(masked_lm_prob)
        self.whole_word_mask = bool(whole_word_mask)
        # Whole-word masking glues a "##" piece to the word before it.
        self._continues_word_array = np.array([t.startswith("##") for t in tokens], bool)
        self._continues_word = tf.constant(self._continues_word_array)

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

    def mask_arrays(self, input_ids: np.ndarray, input_mask: np.ndarray,
                    rng: np.random.Generator) -> dict[str, np.ndarray]:
        """The same choice in numpy, its random numbers from `rng`: for static masks.

        Takes and returns what calling the masker does, as numpy arrays.

        Example:

        >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##c"]
        >>> masker = MaskedLmMasker(vocab, max_predictions_per_seq=3)
        >>> ids = np.array([[2, 5, 6, 7, 5, 6, 7, 5, 3, 0]])
        >>> out = masker.mask_arrays(ids, ids > 0, np.random.default_rng(0))
        >>> out["masked_lm_weights"].tolist()
        [[1.0, 0.0, 0.0]]
        """
        ids = np.asarray(input_ids)
        real = np.asarray(input_mask).astype(bool)
        batch, length = ids.shape
        candidate = real & (ids != self.cls_id) & (ids != self.sep_id)
        # float64 and round-half-to-even reproduce Python's round(len(tokens) * prob).
        num_to_predict = np.round(real.sum(axis=1) * self.masked_lm_prob).astype(np.int64)
        num_to_predict = np.minimum(self.max_predictions_per_seq, np.maximum(1, num_to_predict))
        if self.whole_word_mask:
            has_previous = np.cumsum(candidate, axis=1) - candidate > 0
            word_start = candidate & ~(self._continues_word_array[ids] & has_previous)
        else:
            word_start = candidate
        # Random keys, made distinct by the position; words first.
        random_part = rng.integers(0, np.iinfo(np.int64).max // length, ids.shape)
        keys = np.where(word_start, random_part * length + np.arange(length),
                        np.iinfo(np.int64).max)
        if self.whole_word_mask:
            selected = self._take_whole_words_numpy(candidate, word_start, keys, num_to_predict)
        else:
            width = min(self.max_predictions_per_seq, length)
            smallest = np.sort(np.partition(keys, width - 1, axis=1)[:, :width], axis=1)
            nth_smallest = smallest[np.arange(batch), num_to_predict - 1]
            selected = word_start & (keys <= nth_smallest[:, None])

        # Chosen positions in increasing order (np.nonzero lists them row-major).
        rows, columns = np.nonzero(selected)
        action = rng.random(len(rows))
        masked_ids = ids.copy()
        replaced = action < 0.9
        masked_ids[rows[replaced], columns[replaced]] = np.where(
            action[replaced] < 0.8, self.mask_id,
            rng.integers(0, self.vocab_size, int(replaced.sum())))
        count = np.count_nonzero(selected, axis=1)
        slot = np.arange(len(rows)) - (np.cumsum(count) - count)[rows]
        width = self.max_predictions_per_seq
        lm_positions = np.zeros((batch, width), ids.dtype)
        lm_ids = np.zeros((batch, width), ids.dtype)
        weights = np.zeros((batch, width), np.float32)
        lm_positions[rows, slot] = columns
        lm_ids[rows, slot] = ids[rows, columns]
        weights[rows, slot] = 1.0
        return {"input_word_ids": masked_ids, "masked_lm_positions": lm_positions,
                "masked_lm_ids": lm_ids, "masked_lm_weights": weights}

    @staticmethod
    def _take_whole_words_numpy(candidate, word_start, keys, num_to_predict):
        """`_take_whole_words` in numpy: one step over the batch per word rank."""
        batch, length = candidate.shape
        order = np.argsort(keys, axis=1, kind="stable")
        word_index = np.cumsum(word_start, axis=1) - 1
        own_word = np.maximum(word_index, 0)
        # Tokens per word, counted over the flattened batch (a spare slot per row for
        # the non-candidates).
        segment = np.where(candidate, own_word, length) + np.arange(batch)[:, None] * (length + 1)
        word_length = np.bincount(segment.ravel(), minlength=batch * (length + 1)).reshape(
            batch, length + 1)
        start_length = np.where(word_start, np.take_along_axis(word_length, own_word, axis=1), 0)
        length_in_order = np.take_along_axis(start_length, order, axis=1)
        total = np.zeros(batch, np.int64)
        taken_in_order = np.zeros((batch, length), bool)
        for rank in range(int(word_start.sum(axis=1).max(initial=0))):
            size = length_in_order[:, rank]
            fits = (size > 0) & (total + size <= num_to_predict)
            total += np.where(fits, size, 0)
            taken_in_order[:, rank] = fits
        taken_start = np.zeros((batch, length), bool)
        np.put_along_axis(taken_start, order, taken_in_order, axis=1)
        taken_word = np.zeros((batch, length + 1), bool)
        start_rows, start_columns = np.nonzero(taken_start)
        taken_word[start_rows, word_index[start_rows, start_columns]] = True
        return candidate & np.take_along_axis(taken_word, own_word, axis=1)

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
