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
- `task`: `SentenceEmbeddingTask` (`--task embedding`: texts and pairs -> features, your
  own pairs to fine-tune on) and `StsTask` (`--task sts`: STS-B-style scored pairs);
- `losses`: multiple negatives ranking, CoSENT and cosine similarity losses.
"""

from keras_bert.tasks.registry import register_task


@register_task("embedding", order=70)
def embedding_task(name: str):
    """Sentence embeddings: your own pairs (scored or not) to fine-tune on."""
    from keras_bert.tasks.embedding.task import SentenceEmbeddingTask

    return SentenceEmbeddingTask()


@register_task("sts", order=71)
def sts_task(name: str):
    """Semantic textual similarity: STS-B-style scored pairs, by the cosine's Spearman."""
    from keras_bert.tasks.embedding.task import StsTask

    return StsTask()
