"""What `keras-bert encode` is asked for, declared once (`EncodeOptions`): the sentences'
file, the encoder and its vocab, the length, the pooling of token vectors into one (by
default the model's own: `keras_bert.BertTextEmbedder`), the
batch and the precision, and where the embeddings go; the command builds its flags from
these declarations (`keras_bert.core.checks.option`)."""

from __future__ import annotations

import dataclasses

from keras_bert.core.checks import option
from keras_bert.core.precision import PRECISIONS

# How token vectors become a sentence's: the mean of its real tokens, [CLS]'s, the pooler's.
POOLINGS = ("mean", "cls", "pooled")


@dataclasses.dataclass(frozen=True, kw_only=True)
class EncodeOptions:
    """Sentences embedded by an encoder (the sentences themselves are arguments)."""

    input_file: str | None = option(None, "a text file with one sentence per line")
    model: str | None = option(
        None, "checkpoint: Hugging Face dir, Google TF1 or tf-models-official TF2 "
        "checkpoint, or keras_bert dir (default: the installed MiniLM-L6-H384)")
    vocab_file: str | None = option(None, "vocab.txt (default: the one beside the model)")
    do_lower_case: bool | None = option(
        None, "lower-case and strip accents; auto reads the model's tokenizer_config.json, "
        "else assumes uncased")
    max_seq_length: int | None = option(
        None, "tokens per sentence, [CLS]/[SEP] included; longer sentences are truncated, "
        "with a note (default: a sentence-transformers folder's max_seq_length, else "
        "min(512, the model's positions))", at_least=1)
    pooling: str | None = option(
        None, "override the model's pooling: the mean of real tokens, the [CLS] vector, or "
        "the tanh pooler output, unnormalized (default: what a sentence-transformers "
        "folder's modules say, pooling, Dense and Normalize, else mean + normalize)",
        choices=POOLINGS)
    batch_size: int = option(32, "sentences per forward pass (default: %(default)s)",
                             at_least=1)
    precision: str = option(
        "float32", "float32, or mixed_bfloat16: bfloat16 compute with float32 weights and "
        "embeddings (faster on CPUs with AVX512-BF16 or AMX; embeddings within about 1e-3 "
        "cosine distance of float32's) (default: %(default)s)", choices=PRECISIONS)
    output: str | None = option(None, "write the embeddings [n, H] to this .npy file")
    progress: bool = option(True, "show a progress bar")
