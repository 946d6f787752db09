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
import sys
import time

from keras_bert.vocab import learn_vocab, write_vocab


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input_file", required=True,
                        help="input text: comma-separated globs of plain or gzip files")
    parser.add_argument("--output_file", required=True, help="the vocab.txt to write")
    parser.add_argument("--vocab_size", type=int, default=30522,
                        help="tokens in the vocabulary, reserved ones included "
                             "(default: %(default)s)")
    parser.add_argument("--do_lower_case", action=argparse.BooleanOptionalAction,
                        default=True,
                        help="learn an uncased vocabulary: lower-case and strip accents "
                             "(default: %(default)s)")
    parser.add_argument("--num_unused", type=int, default=99,
                        help="[unusedN] slots to reserve; with 99 or more, [UNK]=100, "
                             "[CLS]=101, [SEP]=102, [MASK]=103 as in Google's vocabularies "
                             "(default: %(default)s)")
    parser.add_argument("--max_lines", type=int, default=None,
                        help="read only this many non-empty lines (default: all)")
    parser.add_argument("--min_count", type=int, default=10,
                        help="lowest piece frequency the threshold search may use "
                             "(default: %(default)s)")
    parser.add_argument("--max_unique_chars", type=int, default=1000,
                        help="alphabet size; words with rarer characters are skipped "
                             "(default: %(default)s)")
    parser.add_argument("--max_token_length", type=int, default=50,
                        help="longer words are not counted (default: %(default)s)")
    parser.add_argument("--num_iterations", type=int, default=4,
                        help="refinement passes of the learner (default: %(default)s)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show a progress bar (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    start = time.monotonic()
    try:
        tokens = learn_vocab(
            args.input_file, args.vocab_size, lower_case=args.do_lower_case,
            num_unused=args.num_unused, max_lines=args.max_lines, min_count=args.min_count,
            max_unique_chars=args.max_unique_chars, max_token_length=args.max_token_length,
            num_iterations=args.num_iterations, progress=args.progress)
        write_vocab(tokens, args.output_file)
    except (FileNotFoundError, PermissionError, ValueError) as e:
        print(f"keras-bert vocab: error: {e}", file=sys.stderr)
        return 2
    unused = sum(t.startswith("[unused") for t in tokens)
    print(f"Wrote {len(tokens)} tokens ({unused} [unusedN] slots, "
          f"{'uncased' if args.do_lower_case else 'cased'}) to {args.output_file} in "
          f"{time.monotonic() - start:.1f} s.")
    if unused > args.num_unused:
        print(f"Note: the corpus gave only {len(tokens) - unused - 5} pieces at "
              f"--min_count={args.min_count}, so {unused - args.num_unused} extra [unusedN] "
              "slots fill the vocabulary; lower --min_count or add text for more pieces.")
    return 0
