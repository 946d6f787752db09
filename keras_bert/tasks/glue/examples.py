"""A GLUE example, and GLUE examples read from tensorflow-datasets (`glue/<task>`: the
text features by name, the class index mapped back to the TSV's label string, the
records put back in `idx` order)."""

from __future__ import annotations

import dataclasses

from keras_bert.core.errors import DataError, MismatchError
from keras_bert.tasks.tfds_source import class_names, record_text, require_features


@dataclasses.dataclass(frozen=True)
class GlueExample:
    """One row of a GLUE file.

    Attributes:
        guid: the row's id: its `index` (or QQP `id`) column, else its 0-based row
            number in the file. Submission files are keyed by it.
        text_a: the first sentence.
        text_b: the second sentence of a pair task, else None.
        label: the label string ("entailment", "1", ...), the STS-B score as a float,
            or None for unlabelled data.
    """

    guid: str
    text_a: str
    text_b: str | None
    label: str | float | None = None


# --- tensorflow-datasets --------------------------------------------------------------

# Per GLUE task: the tfds text features (in GlueExample's text_a, text_b order) and the
# tfds class name -> the label string of the GLUE TSV (None: STS-B's float score).
GLUE_TFDS_FEATURES = {
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
TFDS_SPLITS = {"train": "train", "dev": "validation", "dev_matched": "validation_matched",
                "dev_mismatched": "validation_mismatched", "test": "test",
                "test_matched": "test_matched", "test_mismatched": "test_mismatched"}
TFDS_BATCH = 4096  # records read per batch (scalar features only)


def tfds_reader(task, builder, name: str):
    """The reader of `task` (a `GlueTask`) from the tfds builder `builder`."""
    text_features, mapping = GLUE_TFDS_FEATURES[task.name]
    require_features(builder, name, (*text_features, "label", "idx"))
    label_feature = builder.info.features["label"]
    if mapping is None:
        if getattr(label_feature, "names", None):
            raise MismatchError(f"tensorflow-datasets {name!r} has class labels "
                                f"{list(label_feature.names)}; STS-B expects a float score.")
        strings = None
    else:
        names = class_names(label_feature, name, "label", mapping)
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
        for batch in as_numpy(dataset.batch(TFDS_BATCH)):
            texts = [batch[f] for f in text_features]
            for i, idx in enumerate(batch["idx"]):
                label = label_of(batch["label"][i], where, record) if labelled else None
                text_b = record_text(texts[1][i]) if len(texts) > 1 else None
                rows.append((int(idx), GlueExample(str(int(idx)), record_text(texts[0][i]),
                                                   text_b, label)))
                record += 1
        rows.sort(key=lambda row: row[0])  # tfds stores records in hashed-key order
        return [example for _, example in rows]

    return read
