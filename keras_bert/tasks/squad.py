"""SQuAD v1.1 and v2.0 (paper §4.2, §4.3): reading, windowed features, span decoding.

This follows google-research/bert's `run_squad.py` step by step:

* Reading: one example per question. For training the first answer is the target; an
  answer whose `answer_start` does not point at its `text` in the context is counted,
  logged on the "keras_bert" logger and skipped (the next answer that matches becomes
  the target; a question with none has no target and `SquadTask.training_examples`
  leaves it out of training). The counts are in `SquadReadStats`
  (`SquadTask.read_stats`). Every question stays in evaluation with all its answer
  texts as gold answers, since the official script, too, scores every question and
  only compares texts.
* Features: the question is cut to `max_query_length` tokens; the passage is cut into
  windows of `max_seq_length - len(question) - 3` tokens whose starts are
  `doc_stride` apart; each window is `[CLS] question [SEP] window [SEP]` with type
  ids 1 on the window and its [SEP]. The training target of a window is the answer's
  first and last token, or [CLS] (0, 0) when the answer is not wholly inside the
  window or the question is unanswerable (v2.0). Each passage token also records
  whether this window is its "max-context" window (the one where
  min(left context, right context) + 0.01 * window length is largest).
* Decoding (run_squad's `write_predictions`): over all windows of a question, spans
  from the `n_best_size` best start and end logits, with end >= start, at most
  `max_answer_length` tokens, both ends in the passage and the start token in its
  max-context window, ranked by start + end logit; an n-best list with softmax
  probabilities; for v2.0 the null score is the smallest [CLS] score
  (start_logit[0] + end_logit[0]) over the windows, and the answer is "" when
  null score - best non-null score > τ (`null_score_diff_threshold`, tuned on dev).

One deliberate change: answers are mapped to tokens, and predicted spans back to text,
through the character offsets `BertTokenizer.tokenize_with_offsets` gives into the
original context, instead of run_squad's whitespace re-splitting of the passage and its
`_improve_answer_span` / `get_final_text` heuristics. A predicted answer is exactly the
context from its first token's first character to its last token's last character, so
odd whitespace, accents and punctuation come out as in the passage; only answers that
begin or end inside a word piece cannot be produced. Two smaller ones: the top
`n_best_size` logits are taken over each window's real tokens (padding, whose length
depends on batching, is never a candidate), and a passage with no tokens still gets one
(empty) window, so every question has a prediction.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert import io
from keras_bert.errors import ArgumentError, DataError, InputNotFoundError
from keras_bert.tasks.base import Features, FeatureSettings, Task

logger = logging.getLogger("keras_bert")

_MAX_DETAILED_WARNINGS = 10


# --- examples -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One SQuAD question about one passage.

    Args:
        qid: the question id (the key of predictions.json).
        question: the question text.
        context: the passage, as in the file.
        answers: every gold answer text (for evaluation); () for an unanswerable
            (v2.0) question or an unlabelled file.
        answer_text: the training target, the first answer that matches the context;
            None when unanswerable or unlabelled.
        answer_start: character offset of `answer_text` in `context`, or None.
        is_impossible: v2.0 unanswerable question.

    Example:

    >>> e = SquadExample("q1", "Who?", "Ann ran.", answers=("Ann",), answer_text="Ann",
    ...                  answer_start=0)
    >>> e.context[e.answer_start:e.answer_end], e.has_target
    ('Ann', True)
    """

    qid: str
    question: str
    context: str
    answers: tuple[str, ...] = ()
    answer_text: str | None = None
    answer_start: int | None = None
    is_impossible: bool = False

    @property
    def answer_end(self) -> int | None:
        """Character offset just past the target answer, or None."""
        if self.answer_start is None or self.answer_text is None:
            return None
        return self.answer_start + len(self.answer_text)

    @property
    def has_target(self) -> bool:
        """Whether the example has a training target (a span, or "no answer")."""
        return self.is_impossible or self.answer_start is not None


@dataclasses.dataclass
class SquadReadStats:
    """What `read_squad` kept and skipped from one file.

    Attributes:
        path: the file.
        questions: questions in the file.
        examples: examples returned (one per question).
        mismatched_answers: (question id, answer index) of every answer whose
            `answer_start` does not point at its text in the context; skipped as
            targets (their texts stay gold answers of the evaluation).
        skipped_questions: ids of answerable questions none of whose answers matches
            the context (run_squad's "Could not find answer" examples): returned
            without a training target, so they are evaluated but not trained on.
    """

    path: str
    questions: int = 0
    examples: int = 0
    mismatched_answers: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    skipped_questions: list[str] = dataclasses.field(default_factory=list)

    def as_dict(self) -> dict:
        """A JSON-serializable summary (counts and the skipped ids)."""
        return {"path": self.path, "questions": self.questions, "examples": self.examples,
                "mismatched_answers": len(self.mismatched_answers),
                "skipped_questions": list(self.skipped_questions)}


def _where(indices: Sequence[tuple[str, int]]) -> str:
    return ".".join(f"{key}[{i}]" for key, i in indices)


def _get(obj, key: str, kind, where: str, path: str, default=dataclasses.MISSING):
    """`obj[key]`, checked to be a `kind`; DataError naming the file and the field."""
    if not isinstance(obj, dict):
        raise DataError(f"{where or 'the top level'} must be a JSON object, got "
                        f"{type(obj).__name__}.", path=path)
    if key not in obj:
        if default is not dataclasses.MISSING:
            return default
        raise DataError(f"{where or 'the top level'}: missing field {key!r}.", path=path)
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join({str: "a string", int: "an integer", list: "a list",
                             bool: "true or false"}[k] for k in kinds)
        field = f"{where}.{key}" if where else key
        raise DataError(f"{field} must be {names}, got {json.dumps(value)[:60]}.", path=path)
    return value


def read_squad(path: str, labelled: bool = True, version_2: bool = True
               ) -> tuple[list[SquadExample], SquadReadStats]:
    """Reads a SQuAD JSON file (`{"version", "data": [{"title", "paragraphs": [{"context",
    "qas": [{"id", "question", "answers": [{"text", "answer_start"}],
    "is_impossible"}]}]}]}`) into examples, one per question.

    Args:
        path: the file (local or remote).
        labelled: read the answers; False ignores them (prediction on questions only).
        version_2: allow `is_impossible` questions (SQuAD v2.0).

    Returns:
        `(examples, stats)`; see `SquadReadStats` for what is skipped.

    Raises:
        InputNotFoundError: no such file.
        DataError: not JSON, or a missing or mistyped field (named with its place,
            e.g. `data[0].paragraphs[3].qas[1]: missing field 'id'`).

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "dev.json")
    >>> io.write_json(path, {"version": "1.1", "data": [{"title": "t", "paragraphs": [
    ...     {"context": "Ann ran home.", "qas": [{"id": "q1", "question": "Who ran?",
    ...      "answers": [{"text": "Ann", "answer_start": 0}]}]}]}]})
    >>> examples, stats = read_squad(path)
    >>> examples[0].answer_text, examples[0].answer_start, stats.examples
    ('Ann', 0, 1)
    """
    path = os.fspath(path)
    if not io.exists(path):
        raise InputNotFoundError(f"No SQuAD file at {path!r}.")
    try:
        with io.open_file(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise DataError(f"not valid JSON: {e.msg} (column {e.colno}).", path=path,
                        line=e.lineno) from None
    except UnicodeDecodeError as e:
        raise DataError(f"not UTF-8 text ({e.reason} at byte {e.start}).", path=path) from None
    stats = SquadReadStats(path=path)
    examples: list[SquadExample] = []
    seen: set[str] = set()
    for a, article in enumerate(_get(data, "data", list, "", path)):
        where_a = f"data[{a}]"
        for p, paragraph in enumerate(_get(article, "paragraphs", list, where_a, path)):
            where_p = f"{where_a}.paragraphs[{p}]"
            context = _get(paragraph, "context", str, where_p, path)
            for q, qa in enumerate(_get(paragraph, "qas", list, where_p, path)):
                where_q = f"{where_p}.qas[{q}]"
                qid = _get(qa, "id", (str, int), where_q, path)
                qid = str(qid)
                question = _get(qa, "question", str, where_q, path)
                if qid in seen:
                    raise DataError(f"{where_q}: question id {qid!r} appears twice.",
                                    path=path)
                seen.add(qid)
                stats.questions += 1
                if not labelled:
                    examples.append(SquadExample(qid, question, context))
                    continue
                examples.append(_labelled_example(qa, qid, question, context, where_q,
                                                  path, version_2, stats))
    stats.examples = len(examples)
    if stats.mismatched_answers:
        logger.warning(
            "%s: %d answer(s) of %d question(s) do not match their context at "
            "answer_start and were skipped as training targets; %d question(s) with no "
            "matching answer will not be trained on.", path, len(stats.mismatched_answers),
            len({qid for qid, _ in stats.mismatched_answers}), len(stats.skipped_questions))
    return examples, stats


def _labelled_example(qa, qid, question, context, where, path, version_2, stats):
    is_impossible = _get(qa, "is_impossible", bool, where, path, default=False)
    if is_impossible and not version_2:
        raise DataError(f"{where} (id {qid!r}) is marked is_impossible, which SQuAD v1.1 "
                        "has not; read SQuAD v2.0 files with the squad2 task.", path=path)
    answers = _get(qa, "answers", list, where, path)
    if is_impossible:
        return SquadExample(qid, question, context, is_impossible=True)
    if not answers:
        raise DataError(f"{where} (id {qid!r}) has no answers and is not marked "
                        "is_impossible.", path=path)
    texts, target = [], None
    for i, answer in enumerate(answers):
        where_i = f"{where}.answers[{i}]"
        text = _get(answer, "text", str, where_i, path)
        start = _get(answer, "answer_start", int, where_i, path)
        texts.append(text)
        if text and 0 <= start and context[start:start + len(text)] == text:
            if target is None:
                target = (text, start)
            continue
        stats.mismatched_answers.append((qid, i))
        if len(stats.mismatched_answers) <= _MAX_DETAILED_WARNINGS:
            logger.warning("%s: question %s, answer %d: the context at answer_start=%d "
                           "is %r, not the answer text %r; skipped.", path, qid, i, start,
                           context[start:start + min(len(text), 40)], text[:40])
    if target is None:
        stats.skipped_questions.append(qid)
        return SquadExample(qid, question, context, answers=tuple(texts))
    return SquadExample(qid, question, context, answers=tuple(texts), answer_text=target[0],
                        answer_start=target[1])


# --- features -----------------------------------------------------------------------


def _check_settings(settings: FeatureSettings) -> None:
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


def window_spans(num_tokens: int, max_tokens: int, doc_stride: int) -> list[tuple[int, int]]:
    """run_squad's passage windows: `(start, length)` pairs of at most `max_tokens`
    tokens whose starts are `doc_stride` apart, until the last one reaches the end.
    An empty passage gets one empty window.

    Example:

    >>> window_spans(10, 4, 3)
    [(0, 4), (3, 4), (6, 4)]
    >>> window_spans(3, 4, 2)
    [(0, 3)]
    """
    spans, start = [], 0
    while True:
        length = min(num_tokens - start, max_tokens)
        spans.append((start, length))
        if start + length >= num_tokens:
            return spans
        start += min(length, doc_stride)


def max_context_windows(spans: Sequence[tuple[int, int]], num_tokens: int) -> np.ndarray:
    """For each passage token, the index of the window where it has the most context.

    run_squad's `_check_is_max_context`: a token's score in a window is
    min(tokens left of it, tokens right of it) + 0.01 * window length; the first window
    with the highest score wins.

    Example:

    >>> max_context_windows([(0, 4), (2, 4)], 6).tolist()  # token 2: 0+.04 vs 0+.04
    [0, 0, 0, 1, 1, 1]
    """
    if num_tokens == 0:
        return np.zeros(0, np.int64)
    starts = np.array([s for s, _ in spans])[:, None]
    lengths = np.array([n for _, n in spans])[:, None]
    position = np.arange(num_tokens)[None, :]
    ends = starts + lengths - 1
    score = np.minimum(position - starts, ends - position) + 0.01 * lengths
    score = np.where((position >= starts) & (position <= ends), score, -np.inf)
    return score.argmax(axis=0)


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
    _check_settings(settings)
    seq_length = settings.max_seq_length
    cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    contexts = list(dict.fromkeys(e.context for e in examples))
    context_index = {c: i for i, c in enumerate(contexts)}
    passages = _tokenize(tokenizer, contexts, offsets=True)
    questions = _tokenize(tokenizer, [e.question for e in examples], offsets=False)
    labelled = len(examples) > 0 and all(e.has_target for e in examples)

    plans = []  # per example: (question ids, passage, windows, best window per token)
    for example, question in zip(examples, questions):
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
               "passage_offset": passage_offset, "unmapped_answers": unmapped})


# --- decoding -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NbestEntry:
    """One candidate answer of the n-best list.

    `char_start`/`char_end` locate `text` in the context; None for the null ("")
    answer and run_squad's "empty" placeholder (a question without any valid span).
    """

    text: str
    probability: float
    start_logit: float
    end_logit: float
    char_start: int | None = None
    char_end: int | None = None

    def as_dict(self) -> dict:
        """The nbest_predictions.json record."""
        return {"text": self.text, "probability": self.probability,
                "start_logit": self.start_logit, "end_logit": self.end_logit}


@dataclasses.dataclass(frozen=True)
class SquadPrediction:
    """The decoded answer of one question.

    Attributes:
        qid: the question id.
        text: the answer at the decoding threshold ("" = no answer, v2.0).
        best_text: the best non-null answer (what `text` is when answering).
        null_odds: v2.0: null score - best non-null score (the na_prob of the
            official evaluation; +inf if no non-null span exists); None for v1.1.
        nbest: the n-best list, best first; probabilities sum to 1.

    Example:

    >>> p = SquadPrediction("q1", "", "Ann", 1.5, ())
    >>> p.answer_at(1.0), p.answer_at(2.0)
    ('', 'Ann')
    """

    qid: str
    text: str
    best_text: str
    null_odds: float | None
    nbest: tuple[NbestEntry, ...]

    def answer_at(self, threshold: float) -> str:
        """The answer with null_score_diff_threshold τ: "" when null_odds > τ."""
        if self.null_odds is not None and self.null_odds > threshold:
            return ""
        return self.best_text


def apply_threshold(predictions: Sequence[SquadPrediction], threshold: float
                    ) -> list[SquadPrediction]:
    """The predictions re-decided with null_score_diff_threshold τ (v2.0; v1.1
    predictions are unchanged).

    Example:

    >>> [p.text for p in apply_threshold([SquadPrediction("q", "", "Ann", 0.5, ())], 1.0)]
    ['Ann']
    """
    return [dataclasses.replace(p, text=p.answer_at(threshold)) for p in predictions]


def _top_indices(logits: np.ndarray, k: int) -> np.ndarray:
    # run_squad's _get_best_indexes: a stable sort, so ties go to the earlier position.
    return np.argsort(-logits, kind="stable")[:k]


def _softmax(scores: Sequence[float]) -> list[float]:
    if not scores:
        return []
    top = max(scores)
    exp = [math.exp(s - top) for s in scores]
    total = sum(exp)
    return [e / total for e in exp]


def _rows(part):
    """Per-feature rows of [n, seq] logits: an array, a list of rows, or the
    `tf.RaggedTensor` `model.predict` returns when batches differ in length."""
    if isinstance(part, tf.RaggedTensor):
        flat, splits = part.flat_values.numpy(), part.row_splits.numpy()
        return [flat[a:b] for a, b in zip(splits[:-1], splits[1:])]
    if isinstance(part, (list, tuple)):
        return part
    return np.asarray(part)


def _logit_rows(outputs, count: int):
    """`(start_rows, end_rows)`, one 1-D float array per feature, from model.predict
    outputs: a dict (or pair) of [n, seq] arrays, ragged tensors or per-feature rows,
    or a list of per-batch dicts."""
    if isinstance(outputs, (list, tuple)) and outputs and isinstance(outputs[0], dict):
        rows = ([], [])
        for batch in outputs:
            for key, out in zip(("start_logits", "end_logits"), rows):
                out.extend(_rows(batch[key]))
    elif isinstance(outputs, dict):
        missing = {"start_logits", "end_logits"} - set(outputs)
        if missing:
            raise ArgumentError(f"SQuAD outputs need {sorted(missing)} (BertSpanLabeler's "
                                f"outputs), got keys {sorted(outputs)}.", field="outputs")
        rows = (_rows(outputs["start_logits"]), _rows(outputs["end_logits"]))
    elif isinstance(outputs, (list, tuple)) and len(outputs) == 2:
        rows = (_rows(outputs[0]), _rows(outputs[1]))
    else:
        raise ArgumentError("SQuAD outputs must be BertSpanLabeler's output dict "
                            "{'start_logits', 'end_logits'}.", field="outputs")
    for name, part in zip(("start_logits", "end_logits"), rows):
        if len(part) != count:
            raise ArgumentError(f"{name} has {len(part)} rows but there are {count} "
                                "features; decode the outputs of model.predict on these "
                                "features.", field="outputs")
    return rows


def decode_squad(examples: Sequence[SquadExample], features: Features, outputs,
                 settings: FeatureSettings, version_2: bool = False,
                 null_score_diff_threshold: float = 0.0) -> list[SquadPrediction]:
    """Answers, one `SquadPrediction` per example, from the span logits of its windows
    (run_squad's `write_predictions`; see the module docstring).

    Args:
        examples: the examples `features` were made from.
        features: from `squad_features`.
        outputs: `model.predict` outputs: `{"start_logits", "end_logits"}` [n, seq]
            arrays (any seq covering each feature's length) or ragged tensors (what
            `predict` returns when batches differ in length), or a list of per-batch
            dicts.
        settings: `n_best_size` and `max_answer_length` are used.
        version_2: SQuAD v2.0: add the null answer and apply the threshold.
        null_score_diff_threshold: τ: no answer when null score - best span score > τ.

    Example:

    >>> from keras_bert import BertTokenizer
    >>> tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "ran",
    ...                      "ann", "home", "."])
    >>> e = SquadExample("q1", "Who ran?", "Ann  ran home.")
    >>> s = FeatureSettings(max_seq_length=12, max_query_length=4)
    >>> f = squad_features([e], tok, s)
    >>> start, end = np.zeros((1, 12)), np.zeros((1, 12))
    >>> start[0, 5], end[0, 7] = 4.0, 4.0  # "ann" ... "home"
    >>> p = decode_squad([e], f, {"start_logits": start, "end_logits": end}, s)[0]
    >>> p.text, p.nbest[0].probability > 0.9
    ('Ann  ran home', True)
    """
    _check_settings(settings)
    starts_all, ends_all = _logit_rows(outputs, len(features))
    by_example: list[list[int]] = [[] for _ in examples]
    for f, e in enumerate(np.asarray(features.example_index)):
        by_example[int(e)].append(f)
    extra = features.extra
    char_start, char_end = extra["token_char_start"], extra["token_char_end"]
    max_context = extra["token_is_max_context"]
    predictions = []
    for example, feature_ids in zip(examples, by_example):
        prelim = []  # (score, feature, start, end, start_logit, end_logit)
        null = None  # (score, feature, start_logit, end_logit) of the smallest [CLS] score
        for f in feature_ids:
            length = int(features.lengths[f])
            start_logits = np.asarray(starts_all[f], np.float64)[:length]
            end_logits = np.asarray(ends_all[f], np.float64)[:length]
            if start_logits.shape[0] < length or end_logits.shape[0] < length:
                raise ArgumentError(f"feature {f} has {length} tokens but only "
                                    f"{min(start_logits.shape[0], end_logits.shape[0])} "
                                    "logits.", field="outputs")
            if version_2:
                score = start_logits[0] + end_logits[0]
                if null is None or score < null[0]:
                    null = (score, f, start_logits[0], end_logits[0])
            in_passage = char_start[f] >= 0
            top_ends = [j for j in _top_indices(end_logits, settings.n_best_size)
                        if in_passage[j]]
            for i in _top_indices(start_logits, settings.n_best_size):
                if not in_passage[i] or not max_context[f, i]:
                    continue
                for j in top_ends:
                    if j < i or j - i + 1 > settings.max_answer_length:
                        continue
                    prelim.append((start_logits[i] + end_logits[j], f, int(i), int(j),
                                   start_logits[i], end_logits[j]))
        if null is not None:
            prelim.append((null[0], null[1], 0, 0, null[2], null[3]))
        prelim.sort(key=lambda c: c[0], reverse=True)  # stable, like run_squad's sorted

        entries, seen = [], set()
        for _, f, i, j, start_logit, end_logit in prelim:
            if len(entries) >= settings.n_best_size:
                break
            if i > 0:
                span = (int(char_start[f, i]), int(char_end[f, j]))
                text = example.context[span[0]:span[1]]
            else:
                span, text = (None, None), ""
            if text in seen:
                continue
            seen.add(text)
            entries.append((text, float(start_logit), float(end_logit), *span))
        if version_2 and "" not in seen:
            entries.append(("", float(null[2]), float(null[3]), None, None))
        if not entries:  # run_squad's placeholder when no span is valid
            entries.append(("empty", 0.0, 0.0, None, None))
        probabilities = _softmax([e[1] + e[2] for e in entries])
        nbest = tuple(NbestEntry(text, p, s, e, cs, ce)
                      for (text, s, e, cs, ce), p in zip(entries, probabilities))
        best = next((entry for entry in nbest if entry.text), None)
        if not version_2:
            predictions.append(SquadPrediction(example.qid, nbest[0].text, nbest[0].text,
                                               None, nbest))
            continue
        if best is None:
            null_odds, best_text = math.inf, ""
        else:
            null_odds = float(null[0]) - (best.start_logit + best.end_logit)
            best_text = best.text
        text = "" if null_odds > null_score_diff_threshold else best_text
        predictions.append(SquadPrediction(example.qid, text, best_text, null_odds, nbest))
    return predictions


# --- evaluation and output ------------------------------------------------------------


def _gold_and_check(examples, predictions) -> dict:
    if len(examples) != len(predictions):
        raise ArgumentError(f"{len(predictions)} predictions for {len(examples)} examples.",
                            field="predictions")
    gold = {}
    for example, prediction in zip(examples, predictions):
        if example.qid != prediction.qid:
            raise ArgumentError(f"prediction for {prediction.qid!r} is in the place of "
                                f"example {example.qid!r}; pass them in the same order.",
                                field="predictions")
        if not example.answers and not example.is_impossible:
            raise ArgumentError(f"example {example.qid!r} has no gold answers; evaluate "
                                "needs a labelled file.", field="examples")
        gold[example.qid] = list(example.answers)
    return gold


def best_threshold(examples: Sequence[SquadExample], predictions: Sequence[SquadPrediction]
                   ) -> dict:
    """The official SQuAD v2.0 threshold search on dev.

    Scores each question's best non-null answer with its `null_odds` as the official
    script's na_prob (a question counts as answered iff null_odds <= τ), and returns
    `{"best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"}`; use
    `best_f1_thresh` as `null_score_diff_threshold`.
    """
    from keras_bert.metrics import squad_evaluate

    gold = _gold_and_check(examples, predictions)
    if any(p.null_odds is None for p in predictions):
        raise ArgumentError("best_threshold needs SQuAD v2.0 predictions (with null_odds).",
                            field="predictions")
    result = squad_evaluate(gold, {p.qid: p.best_text for p in predictions},
                            {p.qid: p.null_odds for p in predictions})
    return {key: result[key] for key in ("best_exact", "best_exact_thresh", "best_f1",
                                         "best_f1_thresh")}


def write_squad_predictions(predictions: Sequence[SquadPrediction], path: str,
                            version_2: bool = False) -> list[str]:
    """Writes run_squad's outputs, each atomically: `path` (predictions.json,
    id -> answer text), `nbest_predictions.json` beside it (id -> list of {text,
    probability, start_logit, end_logit}) and for v2.0 `null_odds.json` (id -> null
    score - best non-null score). Returns the paths written.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "predictions.json")
    >>> p = SquadPrediction("q1", "Ann", "Ann", None, (NbestEntry("Ann", 1.0, 2.0, 3.0),))
    >>> [os.path.basename(f) for f in write_squad_predictions([p], path)]
    ['predictions.json', 'nbest_predictions.json']
    >>> io.read_json(path)
    {'q1': 'Ann'}
    """
    path = os.fspath(path)
    directory = os.path.dirname(path)
    written = [path, os.path.join(directory, "nbest_predictions.json")]
    io.write_json(path, {p.qid: p.text for p in predictions}, sort_keys=False)
    io.write_json(written[1], {p.qid: [e.as_dict() for e in p.nbest] for p in predictions},
                  sort_keys=False)
    if version_2:
        written.append(os.path.join(directory, "null_odds.json"))
        io.write_json(written[2], {p.qid: p.null_odds for p in predictions}, sort_keys=False)
    return written


# --- the task -----------------------------------------------------------------------


class SquadTask(Task):
    """SQuAD v1.1 ("squad1") or v2.0 ("squad2") as a fine-tuning `Task`.

    Args:
        name: "squad1" or "squad2".
        null_score_diff_threshold: v2.0's τ used by `decode` (run_squad's default 0.0;
            tune it on dev with `evaluate`'s `best_threshold`).

    Attributes:
        read_stats: `SquadReadStats` of each file `read_examples` read, by path (the
            mismatched answers and skipped questions to report).

    Example:

    >>> task = SquadTask("squad2")
    >>> os.path.basename(task.split_path("data", "dev")), task.main_metric
    ('dev-v2.0.json', 'f1')
    >>> SquadTask.from_config(SquadTask("squad2", 1.5).config()).null_score_diff_threshold
    1.5
    """

    family = "squad"
    main_metric = "f1"
    dev_splits = ("dev",)
    _FILES = {"squad1": ("train-v1.1.json", "dev-v1.1.json"),
              "squad2": ("train-v2.0.json", "dev-v2.0.json")}

    def __init__(self, name: str = "squad1", null_score_diff_threshold: float = 0.0):
        if name not in self._FILES:
            raise ArgumentError(f"Unknown SQuAD task {name!r}; choose one of "
                                f"{sorted(self._FILES)}.", field="task")
        self.name = name
        self.version_2 = name == "squad2"
        self.null_score_diff_threshold = float(null_score_diff_threshold)
        self.metric_names = ("exact_match", "f1")
        if self.version_2:
            self.metric_names += ("HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1",
                                  "best_exact", "best_f1", "best_threshold")
        self.read_stats: dict[str, SquadReadStats] = {}

    def split_path(self, data_dir: str, split: str) -> str:
        """`train-v1.1.json` / `dev-v1.1.json` (v2.0: `-v2.0`) in `data_dir`."""
        train, dev = self._FILES[self.name]
        files = {"train": train, "dev": dev}
        if split not in files:
            raise ArgumentError(f"SQuAD has the splits 'train' and 'dev' (its test set is "
                                f"not public), not {split!r}.", field="split")
        return os.path.join(os.fspath(data_dir), files[split])

    def read_examples(self, path: str, labelled: bool = True) -> list[SquadExample]:
        """See `read_squad`; the skipped answers and questions go to `read_stats[path]`."""
        examples, stats = read_squad(path, labelled=labelled, version_2=self.version_2)
        self.read_stats[os.fspath(path)] = stats
        return examples

    def training_examples(self, examples: Sequence[SquadExample]) -> list[SquadExample]:
        """The examples with a training target: questions none of whose answers matches
        the context at its `answer_start` are left out (run_squad skips them too)."""
        kept = [e for e in examples if e.has_target]
        if len(kept) < len(examples):
            logger.warning("%d of %d training question(s) have no answer that matches the "
                           "context at its answer_start and are not trained on.",
                           len(examples) - len(kept), len(examples))
        return kept

    def tune_on_dev(self, examples: Sequence[SquadExample],
                    predictions: Sequence[SquadPrediction], metrics: dict
                    ) -> tuple[list[SquadPrediction], dict]:
        """v2.0: the dev predictions and metrics at the threshold τ chosen on dev
        (`metrics["best_threshold"]`, the official search's best F1 threshold), which
        `Finetuning` also saves with the model, so that `evaluate` on the same dev
        file gives the same numbers. v1.1: unchanged."""
        if not self.version_2:
            return list(predictions), metrics
        tuned = apply_threshold(predictions, metrics["best_threshold"])
        return tuned, self.evaluate(examples, tuned)

    def features(self, examples: Sequence[SquadExample], tokenizer,
                 settings: FeatureSettings) -> Features:
        """See `squad_features`."""
        return squad_features(examples, tokenizer, settings)

    def build_model(self, encoder, **kwargs):
        """A `BertSpanLabeler` on `encoder` (its default loss: the mean of the start and
        end cross-entropies, as in the paper)."""
        from keras_bert.models import BertSpanLabeler

        return BertSpanLabeler(encoder, **kwargs)

    def decode(self, examples: Sequence[SquadExample], features: Features, outputs,
               settings: FeatureSettings) -> list[SquadPrediction]:
        """See `decode_squad`; v2.0 uses `null_score_diff_threshold`."""
        return decode_squad(examples, features, outputs, settings, version_2=self.version_2,
                            null_score_diff_threshold=self.null_score_diff_threshold)

    def evaluate(self, examples: Sequence[SquadExample],
                 predictions: Sequence[SquadPrediction]) -> dict:
        """The official SQuAD metrics (0-100) of `predictions`' texts.

        `exact_match` and `f1` (and v2.0's `HasAns_*`/`NoAns_*`) score the answers as
        decoded (what the official script gives for predictions.json). v2.0 adds the
        official threshold search (`best_threshold`): `best_exact`, `best_f1`, their
        thresholds, and `best_threshold`, the τ to decode test data with: a τ at which
        the answers score `best_f1`. That is `best_f1_thresh`, except when answering no
        question at all scores best, which the official script reports as threshold
        0.0 whatever the null odds are; τ is then just below the smallest null odds.
        """
        from keras_bert.metrics import squad_evaluate

        gold = _gold_and_check(examples, predictions)

        def evaluate_at(answers):
            return dict(squad_evaluate(gold, {p.qid: p.text for p in answers}, None))

        metrics = evaluate_at(predictions)
        if self.version_2:
            best = best_threshold(examples, predictions)
            metrics.update(best)
            tau = best["best_f1_thresh"]
            if evaluate_at(apply_threshold(predictions, tau))["f1"] != best["best_f1"]:
                odds = [p.null_odds for p in predictions if math.isfinite(p.null_odds)]
                tau = min(odds) - 1.0 if odds else 0.0
            metrics["best_threshold"] = float(tau)
        return metrics

    def write_predictions(self, examples: Sequence[SquadExample],
                          predictions: Sequence[SquadPrediction], path: str) -> None:
        """predictions.json at `path`, nbest_predictions.json and (v2.0) null_odds.json
        beside it; see `write_squad_predictions`."""
        if len(examples) != len(predictions):
            raise ArgumentError(f"{len(predictions)} predictions for {len(examples)} "
                                "examples.", field="predictions")
        write_squad_predictions(predictions, path, version_2=self.version_2)

    def config(self) -> dict:
        return {"task": self.name, "null_score_diff_threshold": self.null_score_diff_threshold}

    def restore(self, config: dict) -> None:
        self.null_score_diff_threshold = float(config.get("null_score_diff_threshold", 0.0))

    @classmethod
    def from_config(cls, config: dict) -> SquadTask:
        """The task `config()` describes."""
        return cls(config["task"], config.get("null_score_diff_threshold", 0.0))


SQUAD_TASKS = {name: functools.partial(SquadTask, name) for name in ("squad1", "squad2")}
"""Task name -> a factory of its `SquadTask` (call it, optionally with
`null_score_diff_threshold=`)."""


# --- span decoding of one sequence (the library's original helper) ---------------------


@dataclasses.dataclass(frozen=True)
class SpanPrediction:
    """The best answer span of one example.

    `start`/`end` are token indices (inclusive) or None when the example is judged
    unanswerable; `score` is start_logit + end_logit of the best span and `null_score`
    the [CLS] score (start_logit[0] + end_logit[0]).
    """

    start: int | None
    end: int | None
    score: float
    null_score: float

    @property
    def has_answer(self) -> bool:
        return self.start is not None


def best_span(start_logits, end_logits, allowed=None, max_answer_length: int = 30,
              null_score_diff_threshold: float | None = None) -> SpanPrediction:
    """Finds the highest-scoring span with start <= end < start + max_answer_length.

    As in the paper (§4.2, §4.3): a span (i, j) scores S·T_i + E·T_j, here the start
    and end logits. For SQuAD v2, pass `null_score_diff_threshold` (τ, tuned on dev):
    the example gets no answer unless best_span_score > null_score + τ, where the null
    score is that of the span at [CLS] (index 0). For whole SQuAD questions (several
    windows, n-best lists, answer texts) use `decode_squad`.

    Args:
        start_logits, end_logits: float arrays [seq] for one example.
        allowed: optional bool array [seq], True where an answer may start or end
            (context tokens; excludes question, [SEP] and padding). Index 0 is never a
            span position.
        max_answer_length: longest span in tokens.
        null_score_diff_threshold: None for SQuAD v1.1 (always answer).

    Example:

    >>> best_span([0, 1, 5, 0], [0, 0, 1, 6]).start, best_span([0, 1, 5, 0], [0, 0, 1, 6]).end
    (2, 3)
    >>> best_span([9, 1, 2, 0], [9, 0, 1, 2], null_score_diff_threshold=0.0).has_answer
    False
    """
    start_logits = np.asarray(start_logits, dtype=np.float64)
    end_logits = np.asarray(end_logits, dtype=np.float64)
    if start_logits.shape != end_logits.shape or start_logits.ndim != 1:
        raise ValueError(f"start_logits {start_logits.shape} and end_logits {end_logits.shape} "
                         "must be 1-D arrays of the same length (one example).")
    if max_answer_length < 1:
        raise ValueError(f"max_answer_length must be >= 1, got {max_answer_length}.")
    n = start_logits.shape[0]
    ok = np.ones(n, bool) if allowed is None else np.asarray(allowed, bool).copy()
    ok[0] = False
    scores = start_logits[:, None] + end_logits[None, :]
    i, j = np.indices((n, n))
    valid = (j >= i) & (j - i < max_answer_length) & ok[:, None] & ok[None, :]
    null_score = float(start_logits[0] + end_logits[0])
    if not valid.any():
        return SpanPrediction(None, None, float("-inf"), null_score)
    flat = np.where(valid, scores, -np.inf).argmax()
    s, e = divmod(int(flat), n)
    score = float(scores[s, e])
    if null_score_diff_threshold is not None and not score > null_score + null_score_diff_threshold:
        return SpanPrediction(None, None, score, null_score)
    return SpanPrediction(s, e, score, null_score)
