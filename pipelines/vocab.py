"""Learn a WordPiece vocab.txt from a text corpus.

Input: text files (comma-separated globs, plain or gzip; any number of sentences a line).
The corpus is streamed, never loaded whole: only word counts are kept. Output: a
vocab.txt of exactly --vocab_size tokens, [PAD], [unused0]..[unused98], [UNK], [CLS],
[SEP], [MASK], further [unusedN] slots, then the learned pieces (Google's layout), written
atomically (a temporary file renamed into place).

Example:

    keras-bert vocab --input_file='corpus/*.txt' --output_file=vocab.txt \\
        --vocab_size=30522 --do_lower_case
"""

from __future__ import annotations

import argparse
import time

from keras_bert.core.input_files import expand_patterns
from keras_bert.pipelines.plumbing import add_options, require_output_file
from keras_bert.text.options import VocabOptions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, VocabOptions)


def run(args: argparse.Namespace) -> int:
    from keras_bert.text.vocab_learning import learn_vocab, write_vocab

    start = time.monotonic()
    # Checked before the corpus is read: minutes of counting must not end in an error.
    require_output_file(args.output_file, "the output vocab file")
    files = expand_patterns(args.input_file, what="corpus file")
    tokens = learn_vocab(
        files, args.vocab_size, lower_case=args.do_lower_case,
        num_unused=args.num_unused, max_lines=args.max_lines, min_count=args.min_count,
        max_unique_chars=args.max_unique_chars, max_token_length=args.max_token_length,
        num_iterations=args.num_iterations, progress=args.progress)
    write_vocab(tokens, args.output_file)
    unused = sum(t.startswith("[unused") for t in tokens)
    print(f"Wrote {len(tokens)} tokens ({unused} [unusedN] slots, "
          f"{'uncased' if args.do_lower_case else 'cased'}) to {args.output_file} in "
          f"{time.monotonic() - start:.1f} s.")
    if unused > args.num_unused:
        print(f"Note: the corpus gave only {len(tokens) - unused - 5} pieces at "
              f"--min_count={args.min_count}, so {unused - args.num_unused} extra [unusedN] "
              "slots fill the vocabulary; lower --min_count or add text for more pieces.")
    return 0
