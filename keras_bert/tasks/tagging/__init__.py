"""CoNLL-2003 NER (paper §5.3) and your own tagged words, the token-tagging family:

- `task`: reading CoNLL files, windows over long sentences, a label per word from its
  first piece, the official entity F1, `NerTask`;
- `examples`: `NerExample`, and CoNLL-2003 read from tensorflow-datasets;
- `generic`: `TaggingTask` (`--task tagging`), your own CoNLL-style data (a word and
  its tag per line), any tag set learnt from the training file;
- `serving`: the SavedModel's `serve_text` (a label per whitespace word);
- `litert_serving`: the same in LiteRT's ops.
"""

from keras_bert.tasks.registry import register_task


@register_task("ner", order=30)
def ner_task(name: str):
    """CoNLL-2003 NER (its labels learnt from the training file)."""
    from keras_bert.tasks.tagging.task import NerTask

    return NerTask()


@register_task("tagging", order=60)
def tagging_task(name: str):
    """Your own tagged words: any tag set, learnt from the training file."""
    from keras_bert.tasks.tagging.generic import TaggingTask

    return TaggingTask()
