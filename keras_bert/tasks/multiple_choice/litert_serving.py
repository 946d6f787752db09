"""Multiple choice's `serve_text` in LiteRT ops (`serve_choices`): what
`keras_bert.tasks.multiple_choice.serving` computes, with strings only gathered and
int32 arithmetic."""

from __future__ import annotations

import tensorflow as tf

from keras_bert.tasks.multiple_choice.endings import NO_ANSWER
from keras_bert.text.litert_ops import concat_rows, gather_rows


def serve_choices(module, inputs):
    """Multiple choice's `serve_text` (`keras_bert.tasks.multiple_choice.serving`) in LiteRT
    ops. Sentence B of a choice, `text_pair + " " + ending`, is tokenized as the pieces
    of `text_pair` then those of the ending: the space splits them, so the ids are the
    same. A blank ending (no pieces) is no candidate: `keras_bert.tasks.multiple_choice.endings`'s
    rule."""
    text, pair, endings = inputs["text"], inputs["text_pair"], inputs["endings"]
    batch, count = tf.shape(endings)[0], tf.shape(endings)[1]
    tok = module.lite_tokenizer
    flat = tf.reshape(endings, [-1])
    choice_row = tf.range(batch * count) // count
    text_ids, pair_ids, ending_ids = tok.tokenize(text, pair, flat)
    contexts = gather_rows(text_ids, choice_row)
    continuations = concat_rows(gather_rows(pair_ids, choice_row), ending_ids)
    packed = module.pack_text([contexts, continuations])
    # A batch of 0 runs one row of padding, cut off again: LiteRT's Reshape fails the
    # call when a dimension beside the one it infers is 0.
    rows = tf.maximum(batch, 1)
    out = module.model_outputs({k: tf.reshape(_pad_rows(v, rows * count), [rows, count, -1])
                                for k, v in packed.items()})
    out = {k: v[:batch] for k, v in out.items()}
    ending_splits = tf.cast(ending_ids.row_splits, tf.int32)
    present = tf.reshape(ending_splits[1:] > ending_splits[:-1], [batch, count])
    logits = tf.where(present, out["logits"], float("-inf"))
    any_present = tf.reduce_any(present, axis=1)
    out["probabilities"] = tf.where(present & any_present[:, None],
                                    tf.nn.softmax(logits, axis=-1), 0.0)
    out["label"] = tf.where(any_present, tf.argmax(logits, axis=-1, output_type=tf.int32),
                            NO_ANSWER)
    return out


def _pad_rows(x, rows):
    """int32 [n, k] `x` with rows of 0 after it up to `rows` (>= n)."""
    return tf.concat([x, tf.zeros([rows - tf.shape(x)[0], tf.shape(x)[1]], x.dtype)], axis=0)
