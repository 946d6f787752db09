"""Text to ids, as google-research/bert's tokenization defines them:

- `unicode_tables`: BasicTokenizer's character rules as code-point tables;
- `basic_tokenizer`: BasicTokenizer in-graph (the words WordPiece splits);
- `tokenizer`: `BertTokenizer` (WordPiece on tensorflow-text, FullTokenizer's ids);
- `core_wordpiece`: WordPiece in TensorFlow core ops only (`--serving_compatible`);
- `vocab`: reading Google vocab.txt files and the special tokens;
- `vocab_learning`: learning a WordPiece vocab.txt from a corpus;
- `packing`: one or two segments -> the encoder's inputs (`BertPreprocessor`);
- `litert_ops`: the same tokenizer and packing in LiteRT's ops (`LiteTokenizer`);
- `options`: `VocabOptions`, what `keras-bert vocab` is asked for, declared once.
"""
