"""SQuAD features: each question with windows over its passage (run_squad's
`convert_examples_to_features`).

The question is cut to `max_query_length` tokens; the passage is cut into windows of
`max_seq_length - len(question) - 3` tokens whose starts are `doc_stride` apart; each
window is `[CLS] question [SEP] window [SEP]` with type ids 1 on the window and its
[SEP]. The training target of a window is the answer's first and last token, or [CLS]
(0, 0) when the answer is not wholly inside the window or the question is
unanswerable (v2.0). Each passage token also records whether this window is its
"max-context" window (the one where min(left context, right context) + 0.01 * window
length is largest).

One deliberate change: answers are mapped to tokens (and `decoding` maps predicted
spans back to text) through the character offsets `BertTokenizer.tokenize_with_offsets`
gives into the original context, instead of run_squad's whitespace re-splitting of the
passage and its `_improve_answer_span` heuristic. A smaller one: a passage with no
tokens still gets one (empty) window, so every question has a prediction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.core.errors import ArgumentError
from keras_bert.tasks.base import TRUNCATED_TOKENS, TRUNCATION_LIMIT, Features, FeatureSettings
from keras_bert.tasks.squad.reading import SquadExample
from keras_bert.tasks.windows import max_context_windows, window_spans

logger = logging.getLogger("keras_bert")


def check_settings(settings: FeatureSettings) -> None:
    """`ArgumentError` unless the SQuAD settings are positive and leave room for the
    passage after the question."""
    for field in ("max_seq_length", "doc_stride", "max_query_length", "max_answer_length",
                  "n_best_size"):
        value = getattr(settings, field)
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ArgumentError(f"{field} must be a positive integer, got {value!r}.",
                                field=field)
    if settings.max_seq_length <= settings.max_query_length + 3:
        raise ArgumentError(
            f"max_seq_length ({settings.max_seq_length}) must be greater than "
            f"max_query_length ({settings.max_query_length}) + 3, to leave room for the "
            "passage after [CLS] question [SEP] ... [SEP].", field="max_seq_length")


def _tokenize(tokenizer, texts: Sequence[str], offsets: bool, batch_size: int = 512):
    """Token ids (and character starts/ends) of each text, as numpy arrays."""
    results = []
    for i in range(0, len(texts), batch_size):
        batch = tf.constant(list(texts[i:i + batch_size]), dtype=tf.string)
        if offsets:
            parts = tokenizer.tokenize_with_offsets(batch, unit="char")
        else:
            parts = (tokenizer.tokenize(batch),)
        splits = parts[0].row_splits.numpy()
        values = [part.flat_values.numpy() for part in parts]
        for row in range(len(splits) - 1):
            pieces = [v[splits[row]:splits[row + 1]] for v in values]
            results.append(tuple(pieces) if offsets else pieces[0])
    return results


def answer_token_span(token_starts, token_ends, char_start: int, char_end: int
                      ) -> tuple[int, int] | None:
    """The first and last token overlapping the characters [char_start, char_end).

    Example:

    >>> answer_token_span([0, 4, 11], [3, 8, 17], 4, 8)
    (1, 1)
    >>> answer_token_span([0, 4, 11], [3, 8, 17], 3, 4) is None  # only a space
    True
    """
    starts, ends = np.asarray(token_starts), np.asarray(token_ends)
    overlap = np.flatnonzero((ends > char_start) & (starts < char_end))
    if overlap.size == 0:
        return None
    return int(overlap[0]), int(overlap[-1])


def squad_features(examples: Sequence[SquadExample], tokenizer, settings: FeatureSettings
                   ) -> Features:
    """Windows of every example as model inputs (see the module docstring).

    Labels (`{"start_logits": [n], "end_logits": [n]}` int32 token positions, matching
    `BertSpanLabeler`'s outputs) are set when every example `has_target`.

    `extra` holds, per feature: `token_char_start` / `token_char_end` int32
    [n, max_seq_length], the character span in the context of each passage token (-1
    elsewhere); `token_is_max_context` bool [n, max_seq_length]; `window_start` (the
    passage token the window starts at) and `passage_offset` (its position in the
    sequence) int32 [n]; and `unmapped_answers`, the ids of examples whose target
    overlaps no token (labelled [CLS] in every window).

    Example:

    >>> from keras_bert import BertTokenizer
    >>> tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "ran",
    ...                      "ann", "home", "."])
    >>> e = SquadExample("q1", "Who ran?", "Ann ran home.", ("Ann",), "Ann", 0)
    >>> f = squad_features([e], tok, FeatureSettings(max_seq_length=9, doc_stride=2,
    ...                                              max_query_length=3))
    >>> f.inputs["input_word_ids"].tolist()
    [[2, 5, 6, 1, 3, 7, 6, 8, 3], [2, 5, 6, 1, 3, 8, 9, 3, 0]]
    >>> f.labels["start_logits"].tolist(), f.extra["token_char_start"][1].tolist()
    ([5, 0], [-1, -1, -1, -1, -1, 8, 12, -1, -1])
    """
    check_settings(settings)
    seq_length = settings.max_seq_length
    cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    contexts = list(dict.fromkeys(e.context for e in examples))
    context_index = {c: i for i, c in enumerate(contexts)}
    passages = _tokenize(tokenizer, contexts, offsets=True)
    questions = _tokenize(tokenizer, [e.question for e in examples], offsets=False)
    labelled = len(examples) > 0 and all(e.has_target for e in examples)

    plans = []  # per example: (question ids, passage, windows, best window per token)
    question_cut = []  # per example: question word pieces beyond max_query_length
    for example, question in zip(examples, questions):
        question_cut.append(max(0, len(question) - settings.max_query_length))
        question = question[:settings.max_query_length]
        passage = passages[context_index[example.context]]
        spans = window_spans(len(passage[0]), seq_length - len(question) - 3,
                             settings.doc_stride)
        plans.append((question, passage, spans, max_context_windows(spans, len(passage[0]))))
    n = sum(len(plan[2]) for plan in plans)
    word_ids = np.full((n, seq_length), pad_id, np.int32)
    mask = np.zeros((n, seq_length), np.int32)
    type_ids = np.zeros((n, seq_length), np.int32)
    char_start = np.full((n, seq_length), -1, np.int32)
    char_end = np.full((n, seq_length), -1, np.int32)
    max_context = np.zeros((n, seq_length), bool)
    lengths = np.zeros(n, np.int32)
    example_index = np.zeros(n, np.int32)
    window_start = np.zeros(n, np.int32)
    passage_offset = np.zeros(n, np.int32)
    start_label = np.zeros(n, np.int32)
    end_label = np.zeros(n, np.int32)
    unmapped = []

    row = 0
    for i, (example, (question, (ids, starts, ends), spans, best)) in enumerate(
            zip(examples, plans)):
        target = None
        if labelled and not example.is_impossible:
            target = answer_token_span(starts, ends, example.answer_start, example.answer_end)
            if target is None:
                unmapped.append(example.qid)
                logger.warning("Question %s: the answer %r overlaps no token of the "
                               "passage; trained as unanswerable.", example.qid,
                               example.answer_text)
        offset = len(question) + 2
        for w, (start, length) in enumerate(spans):
            stop = start + length
            total = offset + length + 1
            word_ids[row, 0] = cls_id
            word_ids[row, 1:offset - 1] = question
            word_ids[row, offset - 1] = sep_id
            word_ids[row, offset:offset + length] = ids[start:stop]
            word_ids[row, total - 1] = sep_id
            mask[row, :total] = 1
            type_ids[row, offset:total] = 1
            char_start[row, offset:offset + length] = starts[start:stop]
            char_end[row, offset:offset + length] = ends[start:stop]
            max_context[row, offset:offset + length] = best[start:stop] == w
            lengths[row], example_index[row] = total, i
            window_start[row], passage_offset[row] = start, offset
            if target is not None and start <= target[0] and target[1] < stop:
                start_label[row] = target[0] - start + offset
                end_label[row] = target[1] - start + offset
            row += 1
    labels = ({"start_logits": start_label, "end_logits": end_label} if labelled else None)
    return Features(
        inputs={"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids},
        labels=labels, lengths=lengths, example_index=example_index,
        extra={"token_char_start": char_start, "token_char_end": char_end,
               "token_is_max_context": max_context, "window_start": window_start,
               "passage_offset": passage_offset, "unmapped_answers": unmapped,
               # Passages are windowed, never cut; questions are cut to max_query_length.
               TRUNCATED_TOKENS: np.asarray(question_cut, np.int32),
               TRUNCATION_LIMIT: ("max_query_length", settings.max_query_length)})
