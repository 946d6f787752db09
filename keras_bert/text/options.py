"""What `keras-bert vocab` is asked for, declared once (`VocabOptions`): the corpus, the
vocab.txt to write and the settings of `keras_bert.text.vocab_learning.learn_vocab`;
the command builds its flags from these declarations (`keras_bert.core.checks.option`)."""

from __future__ import annotations

import dataclasses

from keras_bert.core.checks import REQUIRED, option

# The inputs the tasks read in windows (`keras_bert.tasks.windows`) rather than
# truncate, as the commands' help names them.
WINDOWED_INPUTS = "SQuAD passages and NER sentences"


@dataclasses.dataclass(frozen=True, kw_only=True)
class VocabOptions:
    """A WordPiece vocabulary learned from `input_file` and written to `output_file`."""

    input_file: str = option(REQUIRED,
                             "input text: comma-separated globs of plain or gzip files")
    output_file: str = option(REQUIRED, "the vocab.txt to write")
    vocab_size: int = option(30522, "tokens in the vocabulary, reserved ones included "
                                    "(default: %(default)s)", at_least=1)
    do_lower_case: bool = option(True,
                                 "learn an uncased vocabulary: lower-case and strip accents")
    num_unused: int = option(
        99, "[unusedN] slots to reserve; with 99 or more, [UNK]=100, [CLS]=101, [SEP]=102, "
        "[MASK]=103 as in Google's vocabularies (default: %(default)s)", at_least=0)
    max_lines: int | None = option(
        None, "read only this many non-empty lines (default: all)", at_least=1)
    min_count: int = option(10, "lowest piece frequency the threshold search may use "
                                "(default: %(default)s)", at_least=1)
    max_unique_chars: int = option(1000, "alphabet size; words with rarer characters are "
                                         "skipped (default: %(default)s)", at_least=1)
    max_token_length: int = option(50, "longer words are not counted (default: %(default)s)",
                                   at_least=1)
    num_iterations: int = option(4, "refinement passes of the learner (default: %(default)s)",
                                 at_least=1)
    progress: bool = option(True, "show a progress bar")
