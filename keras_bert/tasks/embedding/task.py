"""`SentenceEmbeddingTask`: single texts -> packed, truncated features for
`BertTextEmbedder` (`[CLS] text [SEP]`, cut to `max_seq_length` as sentence-transformers
cuts), and the model's embeddings back as one float32 row per text. It has no benchmark
files and no metric: fine-tuning embeddings is not offered.

Example:

>>> from keras_bert.text.tokenizer import BertTokenizer
>>> tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
>>> f = SentenceEmbeddingTask().features(["a b a", "b"], tok, FeatureSettings(max_seq_length=4))
>>> f.inputs["input_word_ids"].tolist(), f.lengths.tolist()
([[2, 5, 6, 3], [2, 6, 3, 0]], [4, 3])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from keras_bert.core.errors import ArgumentError
from keras_bert.tasks.base import TRUNCATED_TOKENS, Features, FeatureSettings, Task
from keras_bert.tasks.common import encode_text_segments, read_lines, text_list


class SentenceEmbeddingTask(Task):
    """Texts in, one embedding each out (`BertTextEmbedder`)."""

    name = "embedding"
    family = "embedding"
    metric_names = ()
    main_metric = ""

    def split_path(self, data_dir: str, split: str) -> str:
        import os

        return os.path.join(data_dir, f"{split}.txt")

    def read_examples(self, path: str, labelled: bool = True) -> list:
        """One text a non-blank line."""
        return [line for _, line in read_lines(path) if line.strip()]

    def text_examples(self, x, y=None) -> list:
        if y is not None:
            raise ArgumentError("sentence embeddings take texts only, no labels.", field="y")
        return text_list(x, "texts")

    def features(self, examples: Sequence, tokenizer, settings: FeatureSettings) -> Features:
        dropped: list = []
        inputs = encode_text_segments(tokenizer, [list(examples)], settings.max_seq_length,
                                      dropped)
        return Features(inputs=inputs, labels=None,
                        lengths=inputs["input_mask"].sum(axis=1).astype(np.int32),
                        example_index=np.arange(len(examples)),
                        extra={TRUNCATED_TOKENS: np.asarray(dropped, np.int64)})

    def serving(self, settings: FeatureSettings):
        """What export serves of an embedder: `embedding` [batch, width]."""
        from keras_bert.tasks.embedding.serving import EmbeddingServing

        return EmbeddingServing()

    def build_model(self, encoder, **kwargs):
        from keras_bert.tasks.registry import task_model_class

        return task_model_class("embedding", "BertTextEmbedder")(encoder, **kwargs)

    def decode(self, examples, features, outputs, settings) -> list:
        return list(np.asarray(outputs, np.float32))

    def evaluate(self, examples, predictions) -> dict:
        raise ArgumentError("sentence embeddings have no built-in metric.", field="task")

    def write_predictions(self, examples, predictions, path: str) -> None:
        from keras_bert.core.fileio import atomic_write

        with atomic_write(path, "wb") as f:
            np.save(f, np.stack(predictions).astype(np.float32))
