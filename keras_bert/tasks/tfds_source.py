"""Fine-tuning examples read from prepared tensorflow-datasets instead of the benchmark's
own files (`keras-bert finetune --task sst2 --tfds glue/sst2`).

Nothing is downloaded: the dataset must already be prepared in the tfds data directory
(`tfds build glue/sst2` or `tfds.load("glue/sst2", download=True)` on a machine with
network access, then copied or shared). tensorflow-datasets is an optional extra
(`pip install -e ".[datasets]"`), imported only when a dataset is read.

Records become the task's own examples, so everything after reading (features, models,
metrics, submission files) is the same as for the benchmark files:

* GLUE (`glue/<task>`): tfds's class names are mapped by name to the label strings of
  the GLUE TSVs (sst2 "negative"/"positive" -> "0"/"1", MNLI's names as they are, ...);
  the `idx` feature (the row number in GLUE's TSV) is the guid, and examples come back
  in that order. Test splits carry the label -1, read as None.
* SQuAD (`squad/v1.1`, `squad/v2.0`): the training target is chosen as `read_squad`
  chooses it (the first answer that matches the context at its answer_start; the
  others are counted in `SquadTask.read_stats`, and a question with none is kept for
  evaluation but left out of training).
* CoNLL-2003 (`conll2003`): the `tokens` and the `ner` tags by name. tfds keeps no
  line numbers, so `NerExample.line` is 0.

SWAG is not in tensorflow-datasets.
"""

from __future__ import annotations

import logging
import re

from keras_bert.errors import ArgumentError, DataError, InputNotFoundError, MismatchError
from keras_bert.tasks.base import Task
from keras_bert.tasks.glue import GlueExample, GlueTask
from keras_bert.tasks.squad import SquadExample, SquadReadStats, _labelled_example
from keras_bert.tasks.tagging import NerExample

logger = logging.getLogger("keras_bert")

_GLUE_BATCH = 4096  # GLUE records read per batch (scalar features only)

# Per GLUE task: the tfds text features (in GlueExample's text_a, text_b order) and the
# tfds class name -> the label string of the GLUE TSV (None: STS-B's float score).
_GLUE = {
    "cola": (("sentence",), {"unacceptable": "0", "acceptable": "1"}),
    "sst2": (("sentence",), {"negative": "0", "positive": "1"}),
    "mrpc": (("sentence1", "sentence2"), {"not_equivalent": "0", "equivalent": "1"}),
    "stsb": (("sentence1", "sentence2"), None),
    "qqp": (("question1", "question2"), {"not_duplicate": "0", "duplicate": "1"}),
    "mnli": (("premise", "hypothesis"), {"entailment": "entailment", "neutral": "neutral",
                                         "contradiction": "contradiction"}),
    "qnli": (("question", "sentence"), {"entailment": "entailment",
                                        "not_entailment": "not_entailment"}),
    "rte": (("sentence1", "sentence2"), {"entailment": "entailment",
                                         "not_entailment": "not_entailment"}),
    "wnli": (("sentence1", "sentence2"), {"not_entailment": "0", "entailment": "1"}),
}
_NER_TAGS = frozenset(["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC",
                       "B-MISC", "I-MISC"])
_SQUAD = {"squad1": "squad/v1.1", "squad2": "squad/v2.0"}

# keras_bert's split names -> tfds's, per task family.
_GLUE_SPLITS = {"train": "train", "dev": "validation", "dev_matched": "validation_matched",
                "dev_mismatched": "validation_mismatched", "test": "test",
                "test_matched": "test_matched", "test_mismatched": "test_mismatched"}
_SQUAD_SPLITS = {"train": "train", "dev": "validation"}
_NER_SPLITS = {"train": "train", "dev": "dev", "valid": "dev", "test": "test"}


def tfds_dataset_name(task: Task) -> str:
    """The tensorflow-datasets name that holds `task` ("glue/sst2", "squad/v2.0",
    "conll2003"); `ArgumentError` for a task tfds does not have (SWAG).

    Example:

    >>> from keras_bert.tasks.registry import get_task
    >>> tfds_dataset_name(get_task("mnli")), tfds_dataset_name(get_task("squad1"))
    ('glue/mnli', 'squad/v1.1')
    """
    if task.family == "glue" and task.name in _GLUE:
        return f"glue/{task.name}"
    if task.family == "squad" and task.name in _SQUAD:
        return _SQUAD[task.name]
    if task.family == "tagging" and task.name == "ner":
        return "conll2003"
    if task.name == "swag":
        raise ArgumentError("SWAG is not in tensorflow-datasets; read it from the "
                            "benchmark's files (a data_dir) instead.", field="name")
    raise ArgumentError(f"Task {task.name!r} cannot be read from tensorflow-datasets; "
                        "read it from the benchmark's files (a data_dir) instead.",
                        field="name")


def tfds_split_name(task: Task, split: str) -> str:
    """tfds's name of keras_bert's `split` ("train", "dev", "dev_matched", "test", ...)
    of `task`. A tfds slice after the name is kept ("train[:10%]").

    Example:

    >>> from keras_bert.tasks.registry import get_task
    >>> tfds_split_name(get_task("mnli"), "dev_mismatched")
    'validation_mismatched'
    >>> tfds_split_name(get_task("sst2"), "dev"), tfds_split_name(get_task("ner"), "dev")
    ('validation', 'dev')
    >>> tfds_split_name(get_task("squad2"), "train[:1000]")
    'train[:1000]'
    """
    tfds_dataset_name(task)  # raises for a task tfds does not have
    match = re.fullmatch(r"([a-z_]+)(\[[^\]]*\])?", split)
    base, piece = (match.group(1), match.group(2) or "") if match else (split, "")
    if isinstance(task, GlueTask):
        known = ("train", *task.dev_splits, *task.test_splits)
        if base == "test" and "test" not in task.test_splits:
            base = task.test_splits[0]  # MNLI: test means test_matched, as for the files
        table = {s: _GLUE_SPLITS[s] for s in known}
    else:
        table = _SQUAD_SPLITS if task.family == "squad" else _NER_SPLITS
    if base not in table:
        raise ArgumentError(f"{task.name} has no split {split!r} in tensorflow-datasets; "
                            f"expected one of {sorted(table)} (optionally sliced, e.g. "
                            "'train[:10%]').", field="split")
    return table[base] + piece


def tfds_examples(task: Task, name: str, split: str, data_dir: str | None = None,
                  labelled: bool = True) -> list:
    """The examples of one split of a prepared tensorflow-datasets dataset, as the task's
    own example class (`GlueExample`, `SquadExample`, `NerExample`).

    Args:
        task: the task (`keras_bert.tasks.registry.get_task(...)`).
        name: the tfds dataset that holds it: "glue/<task>" (e.g. "glue/mnli"),
            "squad/v1.1" (squad1), "squad/v2.0" (squad2) or "conll2003" (ner), with
            an optional ":version".
        split: keras_bert's split name: "train", "dev" (MNLI: "dev_matched",
            "dev_mismatched"), "test" (MNLI: "test_matched", "test_mismatched");
            a tfds slice may follow ("train[:1000]").
        data_dir: the tfds data directory it was prepared in (None: tfds's default,
            `$TFDS_DATA_DIR` or ~/tensorflow_datasets).
        labelled: False ignores labels, answers and tags (GLUE test splits have none
            either way).

    Returns:
        the examples; GLUE in the order of the benchmark's TSV.

    Raises:
        ArgumentError: `name` does not hold `task`, an unknown split, or a task
            tensorflow-datasets does not have (SWAG).
        InputNotFoundError: tensorflow-datasets is not installed, or the dataset is
            not prepared in `data_dir` (nothing is downloaded).
        MismatchError: the prepared dataset's label names are not the ones expected.
        DataError: a malformed record (named by its place in the split).

    Example:

    >>> from keras_bert.tasks.registry import get_task
    >>> examples = tfds_examples(get_task("sst2"), "glue/sst2", "dev")  # doctest: +SKIP
    >>> examples[0].label, examples[0].text_b  # doctest: +SKIP
    ('1', None)
    >>> tfds_examples(get_task("sst2"), "glue/mrpc", "dev")
    Traceback (most recent call last):
    ...
    keras_bert.errors.ArgumentError: tensorflow-datasets 'glue/mrpc' does not hold task sst2: read it from 'glue/sst2'.
    """
    expected = tfds_dataset_name(task)
    given = name.partition(":")[0]
    if given == "conll2003/conll2003":  # the builder's only config, named explicitly
        given = "conll2003"
    if given != expected:
        raise ArgumentError(f"tensorflow-datasets {name!r} does not hold task {task.name}: "
                            f"read it from {expected!r}.", field="name")
    tfds_split = tfds_split_name(task, split)
    tfds = _import_tfds()
    builder = _builder(tfds, name, data_dir)
    where = f"{name} ({split})"
    if isinstance(task, GlueTask):
        read = _glue_reader(task, builder, name)
    elif task.family == "squad":
        read = _squad_reader(task, builder, name)
    else:
        read = _ner_reader(builder, name)
    dataset = _as_dataset(builder, name, split, tfds_split)
    examples = read(tfds.as_numpy, dataset, where, labelled)
    if not examples:
        raise DataError("holds no examples (an empty split).", path=where)
    return examples


def _import_tfds():
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        raise InputNotFoundError(
            "Reading a task from tensorflow-datasets needs the package "
            "tensorflow-datasets: pip install -e \".[datasets]\" (or pip install "
            "tensorflow-datasets).") from None
    return tfds


def _builder(tfds, name: str, data_dir: str | None):
    try:
        return tfds.builder(name, data_dir=data_dir, try_gcs=False)
    except (AssertionError, ValueError) as e:  # e.g. a version tfds does not have
        raise ArgumentError(f"tensorflow-datasets cannot open {name!r}: {e}",
                            field="name") from None


def _as_dataset(builder, name: str, split: str, tfds_split: str):
    try:
        return builder.as_dataset(split=tfds_split, shuffle_files=False)
    except AssertionError:
        # tfds' way of saying "not prepared"; anything else is not ours to explain.
        if builder.is_prepared():
            raise
        raise InputNotFoundError(
            f"tensorflow-datasets {name!r} is not prepared in {builder.data_dir_root!s} "
            f"(no {builder.data_dir!s}), and nothing is downloaded here: prepare it first "
            f"on a machine with network access (`tfds build {name} --data_dir DIR`, or "
            f"`tfds.load({name!r}, data_dir=DIR, download=True)`), then give that "
            "data directory.") from None
    except ValueError as e:  # tfds: "Unknown split ..." or a bad slice
        raise ArgumentError(f"{name} has no split {tfds_split!r} (keras_bert's {split!r}) "
                            f"prepared: {e}", field="split") from None


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _feature_names(builder) -> set[str]:
    return set(builder.info.features.keys())


def _require(builder, name: str, features) -> None:
    missing = [f for f in features if f not in _feature_names(builder)]
    if missing:
        raise MismatchError(f"tensorflow-datasets {name!r} has no feature(s) {missing} "
                            f"(it has {sorted(_feature_names(builder))}); keras_bert "
                            "expects the layout of tensorflow-datasets 4.9.")


def _class_names(feature, name: str, what: str, expected) -> list[str]:
    """A ClassLabel's names, checked to be the `expected` set (by name, any order)."""
    names = list(getattr(feature, "names", None) or ())
    if sorted(names) != sorted(expected):
        raise MismatchError(f"tensorflow-datasets {name!r} has the {what} names {names}, "
                            f"not the ones keras_bert maps to this task's labels: "
                            f"{sorted(expected)}.")
    return names


# --- GLUE ---------------------------------------------------------------------------


def _glue_reader(task: GlueTask, builder, name: str):
    text_features, mapping = _GLUE[task.name]
    _require(builder, name, (*text_features, "label", "idx"))
    label_feature = builder.info.features["label"]
    if mapping is None:
        if getattr(label_feature, "names", None):
            raise MismatchError(f"tensorflow-datasets {name!r} has class labels "
                                f"{list(label_feature.names)}; STS-B expects a float score.")
        strings = None
    else:
        names = _class_names(label_feature, name, "label", mapping)
        strings = [mapping[n] for n in names]  # class index -> GLUE label string
        if not set(strings) <= set(task.labels):
            raise MismatchError(f"GLUE {task.name}'s labels {list(task.labels)} do not "
                                f"include {sorted(set(strings) - set(task.labels))}.")

    def label_of(value, where: str, record: int):
        if strings is None:
            value = float(value)
            return None if value == -1.0 else value  # -1: an unlabelled (test) record
        value = int(value)
        if value == -1:
            return None
        if not 0 <= value < len(strings):
            raise DataError(f"record {record}: label {value} is not a class index of "
                            f"{strings}.", path=where)
        return strings[value]

    def read(as_numpy, dataset, where: str, labelled: bool) -> list[GlueExample]:
        rows = []
        record = 0
        for batch in as_numpy(dataset.batch(_GLUE_BATCH)):
            texts = [batch[f] for f in text_features]
            for i, idx in enumerate(batch["idx"]):
                label = label_of(batch["label"][i], where, record) if labelled else None
                text_b = _text(texts[1][i]) if len(texts) > 1 else None
                rows.append((int(idx), GlueExample(str(int(idx)), _text(texts[0][i]),
                                                   text_b, label)))
                record += 1
        rows.sort(key=lambda row: row[0])  # tfds stores records in hashed-key order
        return [example for _, example in rows]

    return read


# --- SQuAD --------------------------------------------------------------------------


def _squad_reader(task, builder, name: str):
    _require(builder, name, ("id", "question", "context", "answers"))
    has_impossible = "is_impossible" in _feature_names(builder)

    def read(as_numpy, dataset, where: str, labelled: bool) -> list[SquadExample]:
        stats = SquadReadStats(path=where)
        examples, seen = [], set()
        for record, r in enumerate(as_numpy(dataset)):
            qid, question, context = (_text(r["id"]), _text(r["question"]),
                                      _text(r["context"]))
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
            qa = {"answers": [{"text": _text(t), "answer_start": int(s)}
                              for t, s in zip(answers["text"], answers["answer_start"])]}
            if has_impossible:
                qa["is_impossible"] = bool(r["is_impossible"])
            examples.append(_labelled_example(qa, qid, question, context,
                                              f"record {record}", where, task.version_2,
                                              stats))
        stats.examples = len(examples)
        if stats.mismatched_answers:
            logger.warning("%s: %d answer(s) do not match their context at answer_start "
                           "and were skipped as training targets; %d question(s) with no "
                           "matching answer will not be trained on.", where,
                           len(stats.mismatched_answers), len(stats.skipped_questions))
        if hasattr(task, "read_stats"):
            task.read_stats[where] = stats
        return examples

    return read


# --- CoNLL-2003 ---------------------------------------------------------------------


def _ner_reader(builder, name: str):
    _require(builder, name, ("tokens", "ner"))
    feature = builder.info.features["ner"]
    tags = _class_names(getattr(feature, "feature", feature), name, "ner tag", _NER_TAGS)

    def read(as_numpy, dataset, where: str, labelled: bool) -> list[NerExample]:
        examples = []
        for record, r in enumerate(as_numpy(dataset)):
            words = tuple(_text(w) for w in r["tokens"])
            if not words:
                continue  # no sentence (the file reader skips blank lines alike)
            sentence_tags = None
            if labelled:
                ids = [int(t) for t in r["ner"]]
                if len(ids) != len(words):
                    raise DataError(f"record {record} has {len(words)} tokens but "
                                    f"{len(ids)} ner tags.", path=where)
                bad = [t for t in ids if not 0 <= t < len(tags)]
                if bad:
                    raise DataError(f"record {record}: ner tag index {bad[0]} is not one "
                                    f"of the {len(tags)} tags {tags}.", path=where)
                sentence_tags = tuple(tags[t] for t in ids)
            examples.append(NerExample(words, sentence_tags))
        return examples

    return read
