"""Sentence and sentence-pair classification and regression (paper §4.1), the GLUE
family:

- `task`: the nine GLUE tasks (reading their TSV files, features, decoding, the official
  metrics, submission files);
- `classification`: `TextClassificationTask`, your own labelled data (`--task
  classification`: TSV or CSV files, label names learnt from the training file) and
  your own labels (the task behind `BertClassifier.from_preset`);
- `examples`: `GlueExample`, and GLUE read from tensorflow-datasets;
- `table`: reading those TSV/CSV files (the text and `label` columns by header name);
- `serving`: what export serves of a classifier (`logits`, `probabilities`, `label`) or
  a regressor (`score`); their `serve_text` is `ModelServing`'s common one (tokenize,
  pack, run), in a SavedModel and in LiteRT alike.
"""

from keras_bert.tasks.registry import GLUE_NAMES, register_task


@register_task(*GLUE_NAMES, order=10)
def glue_task(name: str):
    """A fresh copy of the GLUE task `name`."""
    import copy

    from keras_bert.tasks.glue.task import GLUE_TASKS

    return copy.deepcopy(GLUE_TASKS[name])


@register_task("classification", order=50)
def classification_task(name: str):
    """Your own labelled texts: label names learnt from the training file (a saved
    run's config restores them, or its regression)."""
    from keras_bert.tasks.glue.classification import TextClassificationTask

    return TextClassificationTask.from_data()


# Demo runs saved before the demo used `classification` name their task "library":
# they open as the generic classification task (same layout, labels restored).
register_task("library", listed=False)(classification_task)
