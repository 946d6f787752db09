"""What an export is made of: the model at its precision, its tokenizer and settings.

`load_export_source` opens a fine-tuned run directory or an encoder checkpoint
(`keras_bert.checkpoints.open_artifact`, which says what it is) into an `ExportSource`,
checking the precision, the vocabulary and the sequence length before any weights load. Every export format (the SavedModel, and the formats that sit beside
it) starts from one.
"""

from __future__ import annotations

import dataclasses
import os

import keras

from keras_bert.checkpoints import (
    Artifact,
    check_vocab_matches,
    open_artifact,
    resolve_checkpoint_name,
)
from keras_bert.checkpoints.loading import NoCheckpointError
from keras_bert.core.errors import ArgumentError, InputNotFoundError
from keras_bert.core.precision import check_precision
from keras_bert.model.config import BertConfig
from keras_bert.tasks.common import with_dtype_policy
from keras_bert.tasks.serving import (  # noqa: F401 (KINDS: named here too)
    KINDS,
    EncoderServing,
    ModelServing,
    serving_for,
)
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.vocab import load_vocab, without_byte_order_mark

DEFAULT_SEQ_LENGTH = 128


@dataclasses.dataclass
class ExportSource:
    """What an export is made of: the Keras model and how text reaches it.

    Attributes:
        model: the encoder or the task model (Keras, already at the export precision).
        serving: what the model's kind serves (`keras_bert.tasks.serving.ModelServing`:
            its outputs, `serve_text`, card fields; `EncoderServing()` for an encoder,
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
        """The model's kind (one of `KINDS`), as the model card names it."""
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


def load_export_source(checkpoint: str | os.PathLike, precision: str = "float32",
                       max_seq_length: int | None = None, vocab_file: str | None = None,
                       lower_case: bool | None = None) -> ExportSource:
    """Reads what `export_saved_model` exports from a checkpoint path.

    Args:
        checkpoint: a fine-tuned run directory (`keras-bert finetune`'s output_dir), or
            any checkpoint `load_encoder` takes (Hugging Face, Google TF1, keras_bert,
            tf-models-official, and `keras-bert pretrain`'s run directory or one of its
            training checkpoints, `RUN/checkpoints/ckpt-STEP`, with the run's vocab).
        precision: "float32" or "mixed_bfloat16" (bfloat16 compute, float32 weights
            and outputs).
        max_seq_length: `serve_text`'s sequence length; default: the fine-tuning
            run's, else 128 (at most the model's `max_position_embeddings`).
        vocab_file, lower_case: for an encoder checkpoint without a vocab.txt beside
            it, or to override its casing (default: read from the checkpoint). A
            fine-tuned run uses its own vocab.txt: a `vocab_file` given with it must
            hold the same tokens (`VocabMismatchError` otherwise, naming both files).

    Raises:
        InputNotFoundError: no checkpoint at `checkpoint`: it does not exist, is an
            empty directory, or is an export (which cannot be exported again).
    """
    check_precision(precision)
    checkpoint = resolve_checkpoint_name(os.fspath(checkpoint))
    if not os.path.exists(checkpoint) and not os.path.isfile(checkpoint + ".index"):
        raise InputNotFoundError(f"checkpoint {checkpoint!r} does not exist.")
    try:  # config, vocab (the one rule), casing: read before the weights load
        artifact = open_artifact(checkpoint, vocab_file, lower_case)
    except NoCheckpointError as e:  # an empty directory, or an export
        raise _not_exportable(e) from None
    if artifact.kind == "finetuning_run":
        if vocab_file is not None:
            _check_run_vocab(artifact, vocab_file)
        return _finetuned_source(artifact, precision, max_seq_length)
    artifact.check_vocab()
    task = artifact.hub_task  # a keras-hub task preset: its classifier
    seq = _seq_length(max_seq_length or (task and task.sequence_length) or DEFAULT_SEQ_LENGTH,
                      artifact.config, explicit=max_seq_length is not None)
    model = artifact.load(dtype=_policy(precision))
    if task is None:
        serving = EncoderServing()
    else:  # keras-hub's classifier has no label names: its classes are their indices
        serving = serving_for(model, artifact.labels)
    return ExportSource(model, serving, artifact.tokenizer(),
                        without_byte_order_mark(artifact.vocab_file), seq, source=checkpoint)


def _not_exportable(e: NoCheckpointError) -> Exception:
    """An empty directory, and an export given as the checkpoint to export, named with
    what to give instead."""
    if e.empty:
        return InputNotFoundError(
            f"{e.path!r} is empty; give a fine-tuning run directory (`keras-bert finetune`'s "
            "output_dir) or an encoder checkpoint (a keras_bert, Hugging Face, Google TF1 "
            "or tf-models-official checkpoint, or a `keras-bert pretrain` run directory).")
    if e.export is not None:
        what, came_from = e.export
        return InputNotFoundError(
            f"{e.path!r} is {what}; an export cannot be re-exported: give the fine-tuning run "
            f"directory it came from{came_from}.")
    return e


def _check_run_vocab(run: Artifact, vocab_file: str | os.PathLike) -> None:
    """A vocab given with a fine-tuned run must be the run's own (a copy will do): the
    run is exported with its own vocab.txt, and another vocab would not be used."""
    check_vocab_matches(vocab_file, len(load_vocab(run.own_vocab)),
                        f"the fine-tuning run {run.path!r}", checkpoint=run.path, exact=True)


def _finetuned_source(run: Artifact, precision: str, max_seq_length: int | None
                      ) -> ExportSource:
    path = run.path
    from keras_bert.tasks.finetuning.run_directory import load_run

    finetuned = load_run(run)
    task, settings = finetuned.task, finetuned.settings
    model = finetuned.model if precision == "float32" else with_dtype_policy(
        finetuned.model, _policy(precision))
    serving = task.serving(settings)
    if serving is None:
        raise ArgumentError(f"{path!r} is a {task.name} ({task.family}) model, which has no "
                            "serving to export; export takes encoders and the models of "
                            "the tasks that serve them (`Task.serving`).", field="checkpoint")
    seq = _seq_length(max_seq_length or settings.max_seq_length, model.encoder.config,
                      explicit=max_seq_length is not None)
    serving.check_seq_length(seq)
    return ExportSource(model, serving, finetuned.tokenizer,
                        without_byte_order_mark(run.own_vocab), seq, source=path,
                        task=task.name)


def _policy(precision: str):
    return None if precision == "float32" else keras.DTypePolicy(precision)


def _seq_length(seq: int, config: BertConfig, explicit: bool) -> int:
    if seq < 3:
        raise ArgumentError(f"max_seq_length must be >= 3, got {seq}.", field="max_seq_length")
    if seq > config.max_position_embeddings:
        if explicit:
            raise ArgumentError(f"max_seq_length {seq} exceeds the model's "
                                f"max_position_embeddings {config.max_position_embeddings}.",
                                field="max_seq_length")
        seq = config.max_position_embeddings
    return seq
