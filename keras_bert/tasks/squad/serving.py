"""`serve_text` of a SQuAD model: answers over passages of any length, in the graph.

The same windows and decoding as `keras-bert predict` (`squad_features` and
`decode_squad`), written with core TensorFlow ops around the tokenizer:

* the question is cut to `max_query_length` word pieces; the passage is cut into windows
  of `max_seq_length - len(question) - 3` pieces whose starts are
  `min(that, doc_stride)` apart, until one reaches the passage's end; each window is
  `[CLS] question [SEP] window [SEP]`, and every window of the batch runs through the
  model at once;
* in each window, the `n_best_size` best start and end positions (over its real tokens,
  ties to the earlier position) give the candidate spans: both ends in the passage, end
  >= start, at most `max_answer_length` pieces, and the start token in its max-context
  window (run_squad's `_check_is_max_context`);
* the answer is the best-scoring candidate (start + end logit, in float64; ties to the
  earlier window, start and end rank), cut from the passage from its first token's first
  character to its last token's last character;
* SQuAD v2.0: the null score is the smallest [CLS] score over the windows, and there is
  no answer when null score - best span score > `null_score_diff_threshold` (stored at
  export).

Outputs, one per question: `answer` (string, "" for none), `answer_start` and
`answer_end` (int32 Unicode character offsets into the passage, end exclusive; -1 for
none), `score` (float32 start + end logit of the best span; 0 when there is none) and
`has_answer` (bool). An empty (or whitespace-only) question or passage gets no answer,
as in `predict`. One deliberate difference: where no span is valid at all, `predict`
writes run_squad's placeholder text "empty" and `serve_text` gives no answer.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import tensorflow as tf

from keras_bert.core.errors import ArgumentError
from keras_bert.export.serving import ModelServing, string_batches
from keras_bert.tasks.squad import litert_serving
from keras_bert.tasks.windows import best_windows, window_table

# What Python's `str.strip()` removes (RE2's \s is ASCII only; \p{Z} is Zs, Zl, Zp):
# a question or passage of only these characters has no text (SquadExample's
# `answerable_text`).
BLANK_PATTERN = r"[\t\n\x0b\x0c\r\x1c-\x1f\x85\p{Z}]*"

_NEG_INF = float("-inf")


def serve_questions(module, inputs):
    """Answers of `inputs["text"]` (questions) about `inputs["text_pair"]` (passages),
    [batch] each; see the module docstring."""
    inputs = string_batches(inputs)
    question = inputs["text"]
    # Invalid UTF-8 becomes U+FFFD (which BERT drops, as the tokenizer does with the
    # raw bytes): character offsets then count as the tokenizer's do, and answers are
    # valid UTF-8.
    passage = tf.strings.unicode_transcode(inputs["text_pair"], "UTF-8", "UTF-8",
                                           errors="replace", replacement_char=0xFFFD)
    source, serving = module.source, module.serving
    tok = source.tokenizer
    batch = tf.shape(question, out_type=tf.int64)[0]

    q_ids = tok.tokenize(question)[:, :serving.max_query_length]
    p_ids, p_starts, p_ends = tok.tokenize_with_offsets(passage, unit="char")
    q_len = q_ids.row_lengths()
    n_tokens = p_ids.row_lengths()
    room = source.max_seq_length - q_len - 3  # passage pieces per window

    table = window_table(n_tokens, room, serving.doc_stride)
    example, start, length = table["sequence"], table["start"], table["length"]
    index = tf.range(tf.size(example, out_type=tf.int64)) - tf.gather(table["splits"], example)
    offset = tf.gather(q_len, example) + 2  # the passage's first position
    count = tf.size(example, out_type=tf.int64)
    packed, real, seq = _pack_windows(tok, q_ids, p_ids, example, start, length, offset)
    out = module.model_outputs(packed)
    start_logits = tf.where(real, tf.cast(out["start_logits"], tf.float64), _NEG_INF)
    end_logits = tf.where(real, tf.cast(out["end_logits"], tf.float64), _NEG_INF)

    # Candidates of each window: its n_best_size best starts x best ends.
    k = tf.minimum(tf.cast(serving.n_best_size, tf.int64), seq)
    top_start, top_end = _top_positions(start_logits, k), _top_positions(end_logits, k)

    token_of_start = start[:, None] + top_start - offset[:, None]  # passage token index
    best = best_windows(tf.reshape(token_of_start, [-1]),
                        tf.repeat(example, tf.shape(top_start, out_type=tf.int64)[1]),
                        n_tokens, room, serving.doc_stride)
    is_max_context = tf.reshape(best, tf.shape(top_start)) == index[:, None]
    i, j = top_start[:, :, None], top_end[:, None, :]
    ok = ((_in_passage(top_start, offset, length) & is_max_context)[:, :, None]
          & _in_passage(top_end, offset, length)[:, None, :]
          & (j >= i) & (j - i + 1 <= serving.max_answer_length))
    score = (tf.gather(start_logits, top_start, batch_dims=1)[:, :, None]
             + tf.gather(end_logits, top_end, batch_dims=1)[:, None, :])
    per_window = k * k
    flat_ok = tf.reshape(ok, [count, -1])
    flat_score = tf.reshape(tf.where(ok, score, _NEG_INF), [count, -1])

    # The best candidate of each question: highest score, then the earliest in
    # (window, start rank, end rank) order, as predict's stable sort keeps it.
    best_score = tf.math.unsorted_segment_max(tf.reduce_max(flat_score, axis=1), example,
                                              batch)
    order = tf.range(count)[:, None] * per_window + tf.range(per_window)[None, :]
    never = count * per_window
    chosen = flat_ok & (flat_score == tf.gather(best_score, example)[:, None])
    first = tf.math.unsorted_segment_min(
        tf.reduce_min(tf.where(chosen, order, never), axis=1), example, batch)
    has_span = first < never
    first = tf.where(has_span, first, 0)
    window, rank = first // per_window, first % per_window
    start_token = (tf.gather(start, window) - tf.gather(offset, window)
                   + tf.gather_nd(top_start, tf.stack([window, rank // k], axis=1)))
    end_token = (tf.gather(start, window) - tf.gather(offset, window)
                 + tf.gather_nd(top_end, tf.stack([window, rank % k], axis=1)))
    char_start = _passage_value(p_starts, start_token, has_span)
    char_end = _passage_value(p_ends, end_token, has_span)

    keep = has_span & ~_blank(question) & ~_blank(passage)
    if serving.null_score_diff_threshold is not None:
        null = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], example,
                                            batch)
        keep &= ~(null - best_score > serving.null_score_diff_threshold)
    answer = tf.strings.substr(passage, tf.cast(char_start, tf.int32),
                               tf.cast(char_end - char_start, tf.int32), unit="UTF8_CHAR")
    return {
        "answer": tf.where(keep, answer, ""),
        "answer_start": tf.where(keep, tf.cast(char_start, tf.int32), -1),
        "answer_end": tf.where(keep, tf.cast(char_end, tf.int32), -1),
        "score": tf.where(has_span, tf.cast(best_score, tf.float32), 0.0),
        "has_answer": keep,
    }


def _pack_windows(tok, q_ids, p_ids, example, start, length, offset):
    """One row per window: `[CLS] question [SEP] passage pieces start:start + length
    [SEP]` of its example; (the encoder inputs, which positions are real, their
    length)."""
    count = tf.size(example, out_type=tf.int64)
    pieces = tf.gather(p_ids.flat_values, tf.ragged.range(start, start + length)
                       + tf.gather(p_ids.row_starts(), example)[:, None])
    cls = tf.RaggedTensor.from_tensor(tf.fill([count, 1], tok.cls_id))
    sep = tf.RaggedTensor.from_tensor(tf.fill([count, 1], tok.sep_id))
    ids = tf.concat([cls, tf.gather(q_ids, example), sep, pieces, sep], axis=1)
    total = ids.row_lengths()
    ids = ids.to_tensor(default_value=tok.pad_id)
    seq = tf.shape(ids, out_type=tf.int64)[1]
    positions = tf.range(seq)[None, :]
    real = positions < total[:, None]
    packed = {"input_word_ids": ids, "input_mask": tf.cast(real, tf.int32),
              "input_type_ids": tf.cast(real & (positions >= offset[:, None]), tf.int32)}
    return packed, real, seq


def _in_passage(position, offset, length):
    """Whether each window's `position`s fall on its passage pieces."""
    return (position >= offset[:, None]) & (position < (offset + length)[:, None])


def _top_positions(logits, k):
    """int64 positions of the `k` highest logits of each row, best first."""
    return tf.cast(tf.math.top_k(logits, tf.cast(k, tf.int32)).indices, tf.int64)


def _blank(text):
    return tf.strings.regex_full_match(text, BLANK_PATTERN)


def _passage_value(ragged, token, present):
    """`ragged[b, token[b]]` per question (0 where `present` is False)."""
    flat = tf.concat([ragged.flat_values, tf.zeros([1], ragged.flat_values.dtype)], axis=0)
    where = tf.where(present, ragged.row_starts() + token, tf.size(flat, out_type=tf.int64) - 1)
    return tf.gather(flat, where)


@dataclasses.dataclass(frozen=True)
class SpanServing(ModelServing):
    """A SQuAD span labeler (`BertSpanLabeler`): `start_logits` and `end_logits` from
    ids; from `serve_text` (question as `text`, passage as `text_pair`) the answer as
    `keras-bert predict` decodes it, with these settings (the run's):

    Attributes:
        max_query_length, max_answer_length, n_best_size, doc_stride: SQuAD's
            settings (`FeatureSettings`).
        null_score_diff_threshold: v2.0: no answer when null score - best span > it;
            None for v1.1 (always an answer).
    """

    kind: ClassVar[str] = "span_labeler"
    pair: bool = True
    max_query_length: int = 64
    max_answer_length: int = 30
    n_best_size: int = 20
    doc_stride: int = 128
    null_score_diff_threshold: float | None = None

    def forward(self, model, inputs) -> dict:
        out = model(inputs, training=False)
        return {"start_logits": tf.cast(out["start_logits"], tf.float32),
                "end_logits": tf.cast(out["end_logits"], tf.float32)}

    def serve_text(self, module, inputs: dict) -> dict:
        return serve_questions(module, inputs)

    def serve_lite_text(self, module, inputs: dict) -> dict:
        return litert_serving.serve_questions(module, inputs)

    def check_seq_length(self, max_seq_length: int) -> None:
        if max_seq_length <= self.max_query_length + 3:
            raise ArgumentError(
                f"max_seq_length {max_seq_length} leaves no room for the passage after a "
                f"question of max_query_length {self.max_query_length} and [CLS], [SEP], "
                "[SEP]; give a larger --max_seq_length.", field="max_seq_length")

    def truncation(self, max_seq_length: int) -> str:
        return (f"the question is cut to max_query_length ({self.max_query_length}) word "
                "pieces; a passage of any length is read in windows of what is left of "
                f"max_seq_length ({max_seq_length}) whose starts are doc_stride "
                f"({self.doc_stride}) pieces apart, and the answer is the best span over "
                "all windows (n_best_size "
                f"{self.n_best_size}, max_answer_length {self.max_answer_length}), as "
                "`keras-bert predict` decodes")
