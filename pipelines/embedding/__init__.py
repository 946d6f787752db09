"""The commands over sentence embeddings (`keras_bert.BertTextEmbedder`).

- `encode`: `keras-bert encode`, sentences -> embeddings and their cosine similarities;
- `search`: `keras-bert search`, the corpus lines nearest each query, over a kept index
  (`keras_bert.tasks.embedding.index`).
"""
