"""Sentence and sentence-pair classification and regression (paper §4.1), the GLUE
family:

- `task`: the nine GLUE tasks (reading their TSV files, features, decoding, the official
  metrics, submission files);
- `library`: the demo's derived task in GLUE's layout ("which library is this docstring
  sentence from?").

Their `serve_text` is the plain one (tokenize, pack, run the classifier or regression
head) that `keras_bert.export.signatures` builds for any family without its own.
"""
