"""Opening checkpoints for export: what chooses a family's serving, above the
family-agnostic export stage (`keras_bert.export`).

- `serving_class`, `serving_for`: a model kind's `ModelServing` (the family's `serving`
  module), and that of a model that comes without a fine-tuning run;
- `load_export_source`: a fine-tuned run directory or an encoder checkpoint (through
  `keras_bert.checkpoints.open_artifact`, which says what it is) as an `ExportSource`,
  the precision, the vocabulary and the sequence length checked before any weights load.
"""

from __future__ import annotations

import importlib
import os

import tensorflow as tf

from keras_bert.checkpoints import (
    Artifact,
    check_vocab_matches,
    open_artifact,
    resolve_checkpoint_name,
)
from keras_bert.checkpoints.loading import NoCheckpointError
from keras_bert.core.errors import ArgumentError, InputNotFoundError
from keras_bert.core.precision import check_precision
from keras_bert.export.serving import ModelServing
from keras_bert.export.source import (
    DEFAULT_SEQ_LENGTH,
    ExportSource,
    checked_seq_length,
    export_policy,
)
from keras_bert.model.encoder import BertEncoder
from keras_bert.model.models import with_dtype_policy
from keras_bert.tasks.glue.model import BertClassifier, load_keras_hub_classifier
from keras_bert.text.vocab import load_vocab, without_byte_order_mark


class EncoderServing(ModelServing):
    """A bare encoder: `pooled_output`, `sequence_output`, `encoder_outputs` [batch, L,
    seq, H], and from `serve_text` also the `input_mask` it packed; its SavedModel is
    TF Hub-style reusable."""

    kind = "encoder"
    hub_reusable = True

    def encoder_of(self, model):
        return model

    def forward(self, model, inputs) -> dict:
        out = model(inputs, training=False)
        return {"pooled_output": _float32(out["pooled_output"]),
                "sequence_output": _float32(out["sequence_output"]),
                "encoder_outputs": _float32(tf.stack(out["encoder_outputs"], axis=1))}

    def text_outputs(self, module, packed: dict) -> dict:
        return {**module.model_outputs(packed), "input_mask": packed["input_mask"]}



def _float32(x):
    return tf.cast(x, tf.float32)


# kind -> (module, class): the `ModelServing` of each kind an export can hold, imported
# when asked for.
_SERVINGS = {
    "encoder": ("keras_bert.tasks.export_sources", "EncoderServing"),
    "classifier": ("keras_bert.tasks.glue.serving", "ClassifierServing"),
    "regression": ("keras_bert.tasks.glue.serving", "RegressionServing"),
    "span_labeler": ("keras_bert.tasks.squad.serving", "SpanServing"),
    "tagger": ("keras_bert.tasks.tagging.serving", "TaggerServing"),
    "multiple_choice": ("keras_bert.tasks.multiple_choice.serving", "ChoiceServing"),
    "embedding": ("keras_bert.tasks.embedding.serving", "EmbeddingServing"),
}
# The model kinds an export can hold (the model card's `kind`).
KINDS = tuple(_SERVINGS)


def serving_class(kind: str) -> type[ModelServing]:
    """The `ModelServing` subclass of a model kind (one of `KINDS`).

    Example:

    >>> serving = serving_class("classifier")(label_names=("neg", "pos"), pair=True)
    >>> serving.kind, serving.text_inputs
    ('classifier', ('text', 'text_pair'))
    """
    module, name = _SERVINGS[kind]
    return getattr(importlib.import_module(module), name)


def serving_for(model, label_names: tuple[str, ...] | None = None,
                pair: bool = False) -> ModelServing:
    """The `ModelServing` of a model that comes without a fine-tuning run (a keras-hub
    classifier preset, say): a bare encoder's, or a sequence classifier's with
    `label_names` (its regression form when it has one output); `ArgumentError` for any
    other model, whose serving needs its task's settings (`Task.serving`)."""
    if isinstance(model, BertEncoder):
        return EncoderServing()
    if isinstance(model, BertClassifier):
        if model.num_classes == 1:
            return serving_class("regression")(pair=pair)
        return serving_class("classifier")(pair=pair, label_names=label_names)
    raise ArgumentError(f"a {type(model).__name__} is served from its fine-tuning run "
                        "directory (its task's settings); give that directory.",
                        field="checkpoint")


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
    seq = checked_seq_length(
        max_seq_length or (task and task.sequence_length) or DEFAULT_SEQ_LENGTH,
        artifact.config, explicit=max_seq_length is not None)
    model = (artifact.load(dtype=export_policy(precision)) if task is None
             else load_keras_hub_classifier(artifact.local_path,
                                            dtype=export_policy(precision)))
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
        finetuned.model, export_policy(precision))
    serving = task.serving(settings)
    if serving is None:
        raise ArgumentError(f"{path!r} is a {task.name} ({task.family}) model, which has no "
                            "serving to export; export takes encoders and the models of "
                            "the tasks that serve them (`Task.serving`).", field="checkpoint")
    seq = checked_seq_length(max_seq_length or settings.max_seq_length, model.encoder.config,
                      explicit=max_seq_length is not None)
    serving.check_seq_length(seq)
    return ExportSource(model, serving, finetuned.tokenizer,
                        without_byte_order_mark(run.own_vocab), seq, source=path,
                        task=task.name)
