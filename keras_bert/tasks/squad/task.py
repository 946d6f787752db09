"""SQuAD v1.1 and v2.0 as fine-tuning tasks (`--task squad1`, `--task squad2`): the
reading, features and decoding of the sibling modules behind the `Task` interface,
scored with the official metrics, v2.0's no-answer threshold tuned on dev."""

from __future__ import annotations

import functools
import logging
import math
import os
from collections.abc import Sequence

from keras_bert.core.errors import ArgumentError
from keras_bert.tasks.base import Features, FeatureSettings, Task
from keras_bert.tasks.squad.decoding import (
    SquadPrediction,
    apply_threshold,
    best_threshold,
    decode_squad,
    gold_answers,
    write_squad_predictions,
)
from keras_bert.tasks.squad.features import squad_features
from keras_bert.tasks.squad.reading import SquadExample, SquadReadStats, read_squad
from keras_bert.tasks.squad.tfds import squad_tfds_layout
from keras_bert.tasks.tfds_source import TfdsLayout

logger = logging.getLogger("keras_bert")


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

    def text_examples(self, x, y=None) -> list[SquadExample]:
        """Examples of raw questions and passages: `x` {"question": [...], "context":
        [...]} or a list of (question, context) tuples; `y` None, or per question its
        answer: a text of the context (its first occurrence is the target), a dict
        {"text", "answer_start"}, or "" / None for no answer (SQuAD v2). An answer that
        is not in its context (at its `answer_start`) gives no training target, as in
        `read_squad`: `training_examples` leaves the question out with a warning.

        Example:

        >>> SquadTask("squad1").text_examples({"question": "Who ran?",
        ...                                    "context": "Ann ran."}, ["Ann"])[0].answer_start
        0
        """
        from keras_bert.tasks.common import label_list, text_list

        if isinstance(x, dict):
            if set(x) != {"question", "context"}:
                raise ArgumentError("give questions as {'question': [...], 'context': "
                                    f"[...]}}, got the keys {sorted(x)}.", field="x")
            questions = text_list(x["question"], "question")
            contexts = text_list(x["context"], "context")
        else:
            pairs = list(x) if isinstance(x, (list, tuple)) else None
            if not pairs or not all(isinstance(p, (tuple, list)) and len(p) == 2
                                    for p in pairs):
                raise ArgumentError("give questions as {'question': [...], 'context': "
                                    "[...]} or (question, context) tuples.", field="x")
            questions = text_list([p[0] for p in pairs], "question")
            contexts = text_list([p[1] for p in pairs], "context")
        if len(questions) != len(contexts):
            raise ArgumentError(f"{len(questions)} questions but {len(contexts)} contexts.",
                                field="x")
        answers = label_list(y, len(questions)) if not (
            isinstance(y, (str, dict)) and len(questions) == 1) else [y]
        examples = []
        for i, (question, context) in enumerate(zip(questions, contexts)):
            target = None if answers is None else answers[i]
            examples.append(self._text_example(str(i), question, context, target,
                                               labelled=answers is not None))
        return examples

    def _text_example(self, qid, question, context, target, labelled):
        if not labelled:
            return SquadExample(qid, question, context)
        if target is None or target == "" or (isinstance(target, dict)
                                              and not target.get("text")):
            if not self.version_2:
                raise ArgumentError(f"question {qid} has no answer, which only SQuAD v2 "
                                    "models (task 'squad2') learn.", field="y")
            return SquadExample(qid, question, context, is_impossible=True)
        text = target["text"] if isinstance(target, dict) else target
        start = target.get("answer_start") if isinstance(target, dict) else None
        if not isinstance(text, str):
            raise ArgumentError(f"answer {text!r} of question {qid} is not a text: give the "
                                "answer's text, {'text': ..., 'answer_start': ...}, or (SQuAD "
                                "v2) \"\" for no answer.", field="y")
        if start is None:
            start = context.find(text)
        if (isinstance(start, bool) or not isinstance(start, int) or start < 0
                or context[start:start + len(text)] != text):
            # As `read_squad` does: kept for evaluation, but no training target
            # (`training_examples` leaves it out and counts it).
            return SquadExample(qid, question, context, answers=(text,))
        return SquadExample(qid, question, context, answers=(text,), answer_text=text,
                            answer_start=start)

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

    def serving(self, settings: FeatureSettings):
        """A span labeler's serving, answering with `settings` as `decode` does."""
        from keras_bert.tasks.squad.serving import SpanServing

        return SpanServing(
            max_query_length=settings.max_query_length,
            max_answer_length=settings.max_answer_length, n_best_size=settings.n_best_size,
            doc_stride=settings.doc_stride,
            null_score_diff_threshold=(float(self.null_score_diff_threshold)
                                       if self.version_2 else None))

    def build_model(self, encoder, **kwargs):
        """A `BertSpanLabeler` on `encoder` (its default loss: the mean of the start and
        end cross-entropies, as in the paper)."""
        from keras_bert.tasks.squad.model import BertSpanLabeler

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

        gold = gold_answers(examples, predictions)

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

    def tfds_layout(self) -> TfdsLayout:
        """`squad/v1.1` or `squad/v2.0` in tensorflow-datasets; see
        `keras_bert.tasks.squad.tfds`."""
        return squad_tfds_layout(self)

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
