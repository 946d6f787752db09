"""The official metrics of the paper's fine-tuning tasks, in numpy only, one module a
benchmark:

- `glue`: GLUE (§4.1): `accuracy`, binary `f1_score` (MRPC, QQP), `matthews_corrcoef`
  (CoLA), `pearson` and `spearmanr` (STS-B), gathered per task by `glue_metrics`.
- `squad`: SQuAD v1.1 / v2.0 (§4.2, §4.3): `normalize_answer`, `squad_exact_match`,
  `squad_f1` and `squad_evaluate`, which follow the official evaluate-v2.0.py script (on
  v1.1 data it gives evaluate-v1.1.py's numbers).
- `ner`: CoNLL-2003 NER (§5.3): `ner_span_metrics`, entity-level precision/recall/F1
  counted the way the conlleval script counts chunks.
- `retrieval`: sentence embeddings, as sentence-transformers' evaluators compute them:
  `sts_metrics` (Spearman and Pearson of the cosine with gold scores) and
  `retrieval_metrics` (recall@1/5/10, MRR@10, nDCG@10 of a query-by-document matrix).

Scales: every value is a fraction in [0, 1] (the papers print GLUE and NER scores
multiplied by 100, but result files keep fractions), except the SQuAD scores, which
are percentages (0-100) as the official SQuAD scripts write them.
"""

from keras_bert.metrics.glue import (
    GLUE_METRIC_NAMES,
    accuracy,
    f1_score,
    glue_metrics,
    glue_task_key,
    matthews_corrcoef,
    pearson,
    spearmanr,
)
from keras_bert.metrics.ner import ner_chunks, ner_span_metrics
from keras_bert.metrics.squad import (
    normalize_answer,
    squad_evaluate,
    squad_exact_match,
    squad_f1,
)

__all__ = [
    "GLUE_METRIC_NAMES", "accuracy", "f1_score", "glue_metrics", "glue_task_key",
    "matthews_corrcoef", "ner_chunks", "ner_span_metrics", "normalize_answer", "pearson",
    "spearmanr", "squad_evaluate", "squad_exact_match", "squad_f1",
]
