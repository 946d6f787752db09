"""SQuAD read from tensorflow-datasets (`squad/v1.1`, `squad/v2.0`; see
`keras_bert.tasks.tfds_source`): the training target is chosen as `read_squad`
chooses it (the first answer that matches the context at its answer_start; the others
are counted in `SquadTask.read_stats`, and a question with none is kept for evaluation
but left out of training)."""

from __future__ import annotations

import functools
import logging

from keras_bert.core.errors import DataError
from keras_bert.tasks.squad.reading import SquadExample, SquadReadStats, labelled_example
from keras_bert.tasks.tfds_source import (
    TfdsLayout,
    feature_names,
    record_text,
    require_features,
)

logger = logging.getLogger("keras_bert")

TFDS_NAMES = {"squad1": "squad/v1.1", "squad2": "squad/v2.0"}
"""Task name -> the tensorflow-datasets dataset that holds it."""
_SPLITS = {"train": "train", "dev": "validation"}


def squad_tfds_layout(task) -> TfdsLayout:
    """The `TfdsLayout` of a `SquadTask`: its dataset, the splits "train" and "dev",
    and a reader that fills `task.read_stats` as `read_examples` does."""
    return TfdsLayout(TFDS_NAMES[task.name], _SPLITS, functools.partial(_reader, task))


def _reader(task, builder, name: str):
    require_features(builder, name, ("id", "question", "context", "answers"))
    has_impossible = "is_impossible" in feature_names(builder)

    def read(as_numpy, dataset, where: str, labelled: bool) -> list[SquadExample]:
        stats = SquadReadStats(path=where)
        examples, seen = [], set()
        for record, r in enumerate(as_numpy(dataset)):
            qid, question, context = (record_text(r["id"]), record_text(r["question"]),
                                      record_text(r["context"]))
            if qid in seen:
                raise DataError(f"record {record}: question id {qid!r} appears twice.",
                                path=where)
            seen.add(qid)
            stats.questions += 1
            if not labelled:
                examples.append(SquadExample(qid, question, context))
                continue
            # The JSON layout read_squad checks, so the target is chosen (and mismatched
            # answers are counted and logged) exactly as for the benchmark's files.
            answers = r["answers"]
            qa = {"answers": [{"text": record_text(t), "answer_start": int(s)}
                              for t, s in zip(answers["text"], answers["answer_start"])]}
            if has_impossible:
                qa["is_impossible"] = bool(r["is_impossible"])
            examples.append(labelled_example(qa, qid, question, context,
                                             f"record {record}", where, task.version_2,
                                             stats))
        stats.examples = len(examples)
        if stats.mismatched_answers:
            logger.warning("%s: %d answer(s) do not match their context at answer_start "
                           "and were skipped as training targets; %d question(s) with no "
                           "matching answer will not be trained on.", where,
                           len(stats.mismatched_answers), len(stats.skipped_questions))
        task.read_stats[where] = stats
        return examples

    return read
