"""Sentence and sentence-pair classification and regression (paper §4.1), the GLUE
family:

- `task`: the nine GLUE tasks (reading their TSV files, features, decoding, the official
  metrics, submission files);
- `classification`: `TextClassificationTask`, your own labels (the task behind
  `BertClassifier.from_preset`);
- `library`: the demo's derived task in GLUE's layout ("which library is this docstring
  sentence from?");
- `serving`: what export serves of a classifier (`logits`, `probabilities`, `label`) or
  a regressor (`score`); their `serve_text` is `ModelServing`'s common one (tokenize,
  pack, run), in a SavedModel and in LiteRT alike.
"""
