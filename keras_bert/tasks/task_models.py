"""Every fine-tuning task model class, by the family folder that defines it; importing
this module registers them all with Keras (each class registers when it is defined), so
`keras.saving.load_model` opens any of them.

Example:

>>> sorted(name for name in __all__ if name.startswith("BertN"))
['BertNerTagger']
"""

from keras_bert.tasks.embedding.model import BertTextEmbedder
from keras_bert.tasks.glue.model import BertClassifier
from keras_bert.tasks.multiple_choice.model import BertMultipleChoice
from keras_bert.tasks.squad.model import BertSpanLabeler
from keras_bert.tasks.tagging.model import (
    BertFeatureBasedTagger,
    BertNerTagger,
    BertTokenClassifier,
    MaskedTokenAccuracy,
)
from keras_bert.tasks.task_model import BertFeatureExtractor, TaskModel

__all__ = ["BertClassifier", "BertFeatureBasedTagger", "BertFeatureExtractor",
           "BertMultipleChoice", "BertNerTagger", "BertSpanLabeler", "BertTextEmbedder",
           "BertTokenClassifier", "MaskedTokenAccuracy", "TaskModel"]
