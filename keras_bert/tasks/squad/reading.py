"""SQuAD's JSON files as examples, one per question (run_squad's `read_squad_examples`).

For training the first answer is the target; an answer whose `answer_start` does not
point at its `text` in the context is counted, logged on the "keras_bert" logger and
skipped (the next answer that matches becomes the target; a question with none has no
target and `SquadTask.training_examples` leaves it out of training). The counts are in
`SquadReadStats` (`SquadTask.read_stats`). Every question stays in evaluation with all
its answer texts as gold answers, since the official script, too, scores every
question and only compares texts.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os

from keras_bert.core import fileio
from keras_bert.core.errors import DataError, InputNotFoundError

logger = logging.getLogger("keras_bert")

_MAX_DETAILED_WARNINGS = 10


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
    def answerable_text(self) -> bool:
        """Whether the question and the passage both hold text: a question about an
        empty passage, or an empty question, gets no answer (never a span)."""
        return bool(self.question.strip()) and bool(self.context.strip())

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
    >>> fileio.write_json(path, {"version": "1.1", "data": [{"title": "t", "paragraphs": [
    ...     {"context": "Ann ran home.", "qas": [{"id": "q1", "question": "Who ran?",
    ...      "answers": [{"text": "Ann", "answer_start": 0}]}]}]}]})
    >>> examples, stats = read_squad(path)
    >>> examples[0].answer_text, examples[0].answer_start, stats.examples
    ('Ann', 0, 1)
    """
    path = os.fspath(path)
    if not fileio.exists(path):
        raise InputNotFoundError(f"No SQuAD file at {path!r}.")
    try:
        with fileio.open_file(path) as f:
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
                examples.append(labelled_example(qa, qid, question, context, where_q,
                                                 path, version_2, stats))
    stats.examples = len(examples)
    blank = [e.qid for e in examples if not e.answerable_text]
    if blank:
        shown = ", ".join(blank[:10]) + (f" and {len(blank) - 10} more" if len(blank) > 10
                                         else "")
        logger.warning("%s: %d question(s) have an empty passage or an empty question and "
                       "get no answer: %s.", path, len(blank), shown)
    if stats.mismatched_answers:
        logger.warning(
            "%s: %d answer(s) of %d question(s) do not match their context at "
            "answer_start and were skipped as training targets; %d question(s) with no "
            "matching answer will not be trained on.", path, len(stats.mismatched_answers),
            len({qid for qid, _ in stats.mismatched_answers}), len(stats.skipped_questions))
    return examples, stats


def labelled_example(qa: dict, qid: str, question: str, context: str, where: str, path: str,
                     version_2: bool, stats: SquadReadStats) -> SquadExample:
    """The example of one labelled question `qa` (`{"answers": [{"text",
    "answer_start"}], "is_impossible"}`), its target chosen as `read_squad` chooses it;
    mismatched answers and a question left without a target go to `stats`. `where`
    names the question in errors (`data[0].paragraphs[3].qas[1]`, or a tfds record)."""
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
