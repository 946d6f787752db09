"""SQuAD answers from span logits (run_squad's `write_predictions`), v2.0's
null-score threshold, and the prediction files.

Over all windows of a question: spans from the `n_best_size` best start and end logits,
with end >= start, at most `max_answer_length` tokens, both ends in the passage and the
start token in its max-context window, ranked by start + end logit; an n-best list with
softmax probabilities; for v2.0 the null score is the smallest [CLS] score
(start_logit[0] + end_logit[0]) over the windows, and the answer is "" when null score
- best non-null score > τ (`null_score_diff_threshold`, tuned on dev).

Predicted spans become text through the character offsets `squad_features` keeps,
instead of run_squad's `get_final_text` heuristics: a predicted answer is exactly the
context from its first token's first character to its last token's last character, so
odd whitespace, accents and punctuation come out as in the passage; only answers that
begin or end inside a word piece cannot be produced. The top `n_best_size` logits are
taken over each window's real tokens (padding, whose length depends on batching, is
never a candidate).

`best_span` decodes the span of one sequence on its own (no windows, no text).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError
from keras_bert.tasks.base import Features, FeatureSettings
from keras_bert.tasks.squad.features import check_settings
from keras_bert.tasks.squad.reading import SquadExample


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
    >>> from keras_bert.tasks.squad.features import squad_features
    >>> f = squad_features([e], tok, s)
    >>> start, end = np.zeros((1, 12)), np.zeros((1, 12))
    >>> start[0, 5], end[0, 7] = 4.0, 4.0  # "ann" ... "home"
    >>> p = decode_squad([e], f, {"start_logits": start, "end_logits": end}, s)[0]
    >>> p.text, p.nbest[0].probability > 0.9
    ('Ann  ran home', True)
    """
    check_settings(settings)
    starts_all, ends_all = _logit_rows(outputs, len(features))
    by_example: list[list[int]] = [[] for _ in examples]
    for f, e in enumerate(np.asarray(features.example_index)):
        by_example[int(e)].append(f)
    extra = features.extra
    char_start, char_end = extra["token_char_start"], extra["token_char_end"]
    max_context = extra["token_is_max_context"]
    predictions = []
    for example, feature_ids in zip(examples, by_example):
        if not example.answerable_text:  # named in a warning when read
            predictions.append(SquadPrediction(
                example.qid, "", "", math.inf if version_2 else None,
                (NbestEntry("", 1.0, 0.0, 0.0),)))
            continue
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


def gold_answers(examples: Sequence[SquadExample], predictions: Sequence[SquadPrediction]
                 ) -> dict[str, list[str]]:
    """Question id -> its gold answer texts, after checking that `predictions` are
    those of `examples`, in the same order, and that the examples are labelled."""
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

    gold = gold_answers(examples, predictions)
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
    >>> fileio.read_json(path)
    {'q1': 'Ann'}
    """
    path = os.fspath(path)
    directory = os.path.dirname(path)
    written = [path, os.path.join(directory, "nbest_predictions.json")]
    fileio.write_json(path, {p.qid: p.text for p in predictions}, sort_keys=False)
    fileio.write_json(written[1], {p.qid: [e.as_dict() for e in p.nbest] for p in predictions},
                  sort_keys=False)
    if version_2:
        written.append(os.path.join(directory, "null_odds.json"))
        fileio.write_json(written[2], {p.qid: p.null_odds for p in predictions}, sort_keys=False)
    return written


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
