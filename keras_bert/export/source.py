"""What an export is made of: the model at its precision, its tokenizer and settings.

`load_export_source` reads a fine-tuned run directory or an encoder checkpoint into an
`ExportSource`, checking the precision, the vocabulary and the sequence length before
any weights load. Every export format (the SavedModel, and the formats that sit beside
it) starts from one.
"""

from __future__ import annotations

import dataclasses
import os

import keras

from keras_bert.checkpoints import (
    check_vocab_matches,
    checkpoint_vocab,
    describe_export,
    load_encoder,
    load_keras_hub_classifier,
    resolve_checkpoint,
    resolve_checkpoint_name,
)
from keras_bert.checkpoints.keras_hub import read_keras_hub_task
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


def is_finetuned_dir(path: str | os.PathLike) -> bool:
    """Whether `path` is a run directory written by `keras-bert finetune` (its
    finetune_config.json is there; its model.keras may have been lost)."""
    from keras_bert.tasks.finetuning.run_directory import is_run_directory

    return is_run_directory(os.fspath(path))


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
    if is_finetuned_dir(checkpoint):
        if vocab_file is not None:
            _check_run_vocab(checkpoint, vocab_file)
        return _finetuned_source(checkpoint, precision, max_seq_length)
    _check_not_empty_or_an_export(checkpoint)
    # Checked before the weights load: config, vocab (the one rule), casing, length.
    resolved = resolve_checkpoint(checkpoint, vocab_file, lower_case)
    resolved.check_vocab()
    task = read_keras_hub_task(checkpoint)  # a keras-hub task preset: its classifier
    seq = _seq_length(max_seq_length or (task and task.sequence_length) or DEFAULT_SEQ_LENGTH,
                      resolved.config, explicit=max_seq_length is not None)
    if task is None:
        model = load_encoder(checkpoint, dtype=_policy(precision))
        serving = EncoderServing()
    else:  # keras-hub's classifier has no label names: its classes are their indices
        model = load_keras_hub_classifier(checkpoint, dtype=_policy(precision))
        serving = serving_for(model, tuple(str(i) for i in range(task.num_classes)))
    return ExportSource(model, serving, resolved.tokenizer(),
                        without_byte_order_mark(resolved.vocab_file), seq, source=checkpoint)


def _check_not_empty_or_an_export(path: str) -> None:
    """Names an empty directory, and an export given as the checkpoint to export."""
    if not os.path.isdir(path):
        return
    if not os.listdir(path):
        raise InputNotFoundError(
            f"{path!r} is empty; give a fine-tuning run directory (`keras-bert finetune`'s "
            "output_dir) or an encoder checkpoint (a keras_bert, Hugging Face, Google TF1 "
            "or tf-models-official checkpoint, or a `keras-bert pretrain` run directory).")
    export = describe_export(path)
    if export is not None:
        what, came_from = export
        raise InputNotFoundError(
            f"{path!r} is {what}; an export cannot be re-exported: give the fine-tuning run "
            f"directory it came from{came_from}.")


def _check_run_vocab(path: str, vocab_file: str | os.PathLike) -> None:
    """A vocab given with a fine-tuned run must be the run's own (a copy will do): the
    run is exported with its own vocab.txt, and another vocab would not be used."""
    own = checkpoint_vocab(path)
    if own is not None:  # else `load_finetuned` names what the run lacks
        check_vocab_matches(vocab_file, len(load_vocab(own)),
                            f"the fine-tuning run {path!r}", checkpoint=path, exact=True)


def _finetuned_source(path: str, precision: str, max_seq_length: int | None) -> ExportSource:
    from keras_bert.tasks.finetuning import MODEL_FILE, load_finetuned

    model_file = os.path.join(path, MODEL_FILE)
    if not os.path.isfile(model_file):
        # Named here: read as an encoder checkpoint, the directory would get a list of
        # encoder checkpoint files instead.
        raise InputNotFoundError(f"{path!r} is a fine-tuning run directory without its "
                                 f"model file: {model_file!r} is missing; copy it there "
                                 "again, or re-run `keras-bert finetune`.")
    run = load_finetuned(path)
    task, settings = run.task, run.settings
    model = run.model if precision == "float32" else with_dtype_policy(run.model, _policy(precision))
    serving = task.serving(settings)
    if serving is None:
        raise ArgumentError(f"{path!r} is a {task.name} ({task.family}) model, which has no "
                            "serving to export; export takes encoders and the models of "
                            "the tasks that serve them (`Task.serving`).", field="checkpoint")
    seq = _seq_length(max_seq_length or settings.max_seq_length, model.encoder.config,
                      explicit=max_seq_length is not None)
    serving.check_seq_length(seq)
    return ExportSource(model, serving, run.tokenizer,
                        without_byte_order_mark(checkpoint_vocab(path)), seq,
                        source=path, task=task.name)


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
