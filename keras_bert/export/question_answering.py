"""`serve_text` of a SQuAD model (placeholder: moved from signatures, rewritten next)."""

from __future__ import annotations

import tensorflow as tf

from keras_bert.export.signatures import string_batches


def serve_questions(module, inputs):
    """SQuAD-style: [CLS] question [SEP] passage [SEP] (the question cut to
    max_query_length, the passage to what is left), then the best span of at most
    max_answer_length tokens inside the passage, as the passage's text."""
    inputs = string_batches(inputs)
    question, passage = inputs["text"], inputs["text_pair"]
    source = module.source
    tokenizer = source.tokenizer
    q = tokenizer.tokenize(question)[:, :source.max_query_length]
    p, starts, ends = tokenizer.tokenize_with_offsets(passage, unit="byte")
    packed = module.pack([q, p], truncation="waterfall")
    out = module.model_outputs(packed)
    start_logits, end_logits = out["start_logits"], out["end_logits"]
    mask, types = packed["input_mask"], packed["input_type_ids"]
    seq = tf.shape(mask)[1]
    passage_len = tf.reduce_sum(types * mask, axis=1) - 1  # without the last [SEP]
    first = tf.reduce_sum(mask, axis=1) - passage_len - 1  # position of token 0
    positions = tf.range(seq)[None, :]
    inside = (positions >= first[:, None]) & (positions < (first + passage_len)[:, None])
    i = tf.range(seq)[:, None]
    j = tf.range(seq)[None, :]
    span_ok = (j >= i) & (j - i < source.max_answer_length)
    valid = inside[:, :, None] & inside[:, None, :] & span_ok[None]
    scores = start_logits[:, :, None] + end_logits[:, None, :]
    neg = tf.fill(tf.shape(scores), tf.constant(float("-inf")))
    flat = tf.reshape(tf.where(valid, scores, neg), [tf.shape(mask)[0], -1])
    best = tf.argmax(flat, axis=1, output_type=tf.int32)
    best_score = tf.reduce_max(flat, axis=1)
    has_span = tf.reduce_any(tf.reshape(valid, [tf.shape(mask)[0], -1]), axis=1)
    start_token = tf.maximum(best // seq - first, 0)
    end_token = tf.maximum(best % seq - first, 0)
    # One column more than the longest passage, so that a batch of empty passages
    # still has a column to gather from (they have no span: their answer is "").
    starts = tf.pad(starts.to_tensor(default_value=0), [[0, 0], [0, 1]])
    ends = tf.pad(ends.to_tensor(default_value=0), [[0, 0], [0, 1]])
    start_byte = tf.gather(starts, start_token[:, None], batch_dims=1)[:, 0]
    end_byte = tf.gather(ends, end_token[:, None], batch_dims=1)[:, 0]
    answer = tf.strings.substr(passage, tf.cast(start_byte, tf.int32),
                               tf.cast(end_byte - start_byte, tf.int32), unit="BYTE")
    # An empty question or passage gets no answer, as `keras-bert predict` gives it.
    keep = has_span & (tf.strings.length(tf.strings.strip(question)) > 0) & (
        tf.strings.length(tf.strings.strip(passage)) > 0)
    if source.null_score_diff_threshold is not None:
        null_score = start_logits[:, 0] + end_logits[:, 0]
        keep &= ~(null_score - best_score > source.null_score_diff_threshold)
    out["answer"] = tf.where(keep, answer, "")
    return out
