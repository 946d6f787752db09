"""What an export is made of (`ExportSource`): the model at its precision, its
tokenizer and settings. Every export format (the SavedModel, and the formats that sit
beside it) starts from one; `keras_bert.tasks.exporting.load_export_source` opens a
fine-tuned run directory or an encoder checkpoint into one, and a task model's
`export()` makes one of itself.
"""

from __future__ import annotations

import dataclasses

import keras

from keras_bert.core.errors import ArgumentError
from keras_bert.export.serving import ModelServing
from keras_bert.model.config import BertConfig
from keras_bert.text.tokenizer import BertTokenizer

DEFAULT_SEQ_LENGTH = 128


@dataclasses.dataclass
class ExportSource:
    """What an export is made of: the Keras model and how text reaches it.

    Attributes:
        model: the encoder or the task model (Keras, already at the export precision).
        serving: what the model's kind serves (`keras_bert.export.serving.ModelServing`:
            its outputs, `serve_text`, card fields;
            `keras_bert.tasks.export_sources.EncoderServing()` for an encoder,
            `Task.serving` for a fine-tuned model).
        tokenizer: the `BertTokenizer` of the model's vocabulary.
        vocab_file: the vocab.txt (copied into the SavedModel's assets).
        max_seq_length: tokens per sequence for `serve_text`, [CLS]/[SEP] included.
        source: the checkpoint or fine-tuned directory it came from.
        task: the fine-tuning task name, or None for an encoder.
    """

    model: keras.Model
    serving: ModelServing
    tokenizer: BertTokenizer
    vocab_file: str
    max_seq_length: int
    source: str | None = None
    task: str | None = None

    @property
    def kind(self) -> str:
        """The model's kind (one of `keras_bert.tasks.export_sources.KINDS`), as the model
        card names it."""
        return self.serving.kind

    @property
    def label_names(self) -> tuple[str, ...] | None:
        """Class names in index order (classifier, tagger), else None."""
        return self.serving.label_names

    @property
    def pair(self) -> bool:
        """Whether `serve_text` takes `text_pair`."""
        return self.serving.pair

    @property
    def text_inputs(self) -> tuple[str, ...]:
        """The names of `serve_text`'s string inputs."""
        return self.serving.text_inputs

    @property
    def encoder(self):
        return self.serving.encoder_of(self.model)

    @property
    def config(self) -> BertConfig:
        return self.encoder.config


def export_policy(precision: str):
    """The dtype policy of an export `precision` (None: float32, the default)."""
    return None if precision == "float32" else keras.DTypePolicy(precision)


def checked_seq_length(seq: int, config: BertConfig, explicit: bool) -> int:
    """`seq` checked against the model (`explicit`: asked for, so too long is an error;
    else cut to the model's `max_position_embeddings`)."""
    if seq < 3:
        raise ArgumentError(f"max_seq_length must be >= 3, got {seq}.", field="max_seq_length")
    if seq > config.max_position_embeddings:
        if explicit:
            raise ArgumentError(f"max_seq_length {seq} exceeds the model's "
                                f"max_position_embeddings {config.max_position_embeddings}.",
                                field="max_seq_length")
        seq = config.max_position_embeddings
    return seq
