"""Sentence embeddings (sentence-transformers' models on BERT), the embedding family:

- `model`: `BertTextEmbedder`, texts -> one vector each (`encode`, `encode_query`,
  `encode_documents`, `similarity`), from a sentence-transformers folder (its modules)
  or any BERT checkpoint (mean pooling + normalize);
- `encoding`: `encode`'s loop (sort by length, batch, one trace, input order back);
- `layers`: the Keras layers after the encoder: `SentencePooling` (every pooling mode of
  sentence-transformers), `L2Normalize`;
- `index`: a corpus's embeddings kept with a manifest and searched, exact or through
  faiss (`build_index`, `open_index`, `search`; `keras-bert search`);
- `serving`: `EmbeddingServing`, what export serves (`embedding`);
- `task`: `SentenceEmbeddingTask`, texts -> features (a `--task` name for saved models
  only: it has no benchmark files to fine-tune on).
"""

from keras_bert.tasks.registry import register_task


@register_task("embedding", order=60, listed=False)
def embedding_task(name: str):
    """Sentence embeddings of single texts."""
    from keras_bert.tasks.embedding.task import SentenceEmbeddingTask

    return SentenceEmbeddingTask()
