"""What `keras-bert attention` and `keras-bert plot` are asked for, declared once
(`AttentionOptions`, `PlotOptions`; the text and the run directory themselves are
arguments); the commands build their flags from these declarations
(`keras_bert.core.checks.option`)."""

from __future__ import annotations

import dataclasses

from keras_bert.core.checks import REQUIRED, option


@dataclasses.dataclass(frozen=True, kw_only=True)
class AttentionOptions:
    """A model's attention on one text (or pair), drawn into `output_dir`."""

    pair: str | None = option(None, "a second text (segment B)")
    model: str = option(
        REQUIRED, "checkpoint (Hugging Face dir, Google TF1 or tf-models-official TF2 "
        "checkpoint, keras_bert dir) or a `keras-bert finetune` output directory")
    output_dir: str = option("attention",
                             "where the PNGs and the summary go (default: %(default)s)")
    vocab_file: str | None = option(None, "vocab.txt (default: the one beside the model)")
    do_lower_case: bool | None = option(
        None, "lower-case and strip accents; auto reads the model's tokenizer_config.json "
        "(a fine-tuned run: its own setting), else assumes uncased")
    max_seq_length: int | None = option(
        None, "most tokens, [CLS]/[SEP] included; longer input is truncated, with a note "
        "(default: the model's max_position_embeddings)", at_least=1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlotOptions:
    """A run's training curves, drawn into `output_dir`."""

    output_dir: str | None = option(
        None, "where training_curves.png goes (default: RUN_DIR/plots)")
