"""CoNLL-2003 NER (paper §5.3), the token-tagging family:

- `task`: reading CoNLL files, windows over long sentences, a label per word from its
  first piece, the official entity F1, `NerTask`;
- `models`: the fine-tuned tagger and the feature-based variant (frozen encoder, its
  last four layers, a BiLSTM), with masked accuracy;
- `serving`: the SavedModel's `serve_text` (a label per whitespace word);
- `litert_serving`: the same in LiteRT's ops.
"""
