"""The opener: one function (`open_artifact`) takes any artifact keras_bert reads, by
path or by name, and says what it is (`Artifact.kind`) with what a model built from it
needs, read before any weights load: its encoder's config, its vocab file, its casing,
its labels, and for a `keras-bert finetune` run or a keras-hub task preset what it saved
of its task; `Artifact.load` then builds its model.

It takes every checkpoint `load_encoder` takes (keras_bert's own directory, Hugging
Face, Google TF1, tf-models-official TF2, a keras-hub preset, a `keras-bert pretrain`
run directory or one of its training checkpoints, `hf://` and Google release names), a
keras-hub `BertTextClassifier` preset, a `keras-bert finetune` run directory and (when
asked) a saved `.keras` model file. Every command, export, fine-tuning and the task
models' `from_preset` open their sources here and ask the artifact what it is: none of
them tests a path's kind itself, so each finds a model's kind, vocab and casing the
same way, and a fine-tuning run's record is read once.

A run's task and preprocessor belong to the tasks stage, which comes after this one:
`keras_bert.tasks.finetuning.run_directory.load_run` takes an opened run from here. The
artifact itself gives a run's record, labels and Keras model.
"""

from __future__ import annotations

import dataclasses
import functools
import os

from keras_bert.checkpoints.finetuning_runs import (
    check_finetuning_run,
    finetuned_encoder_config,
    is_finetuning_run,
    keras_archive_encoder_config,
)
from keras_bert.checkpoints.keras_hub import KERAS_HUB_TASK, read_keras_hub_task
from keras_bert.checkpoints.loading import detect_format, format_config, load_encoder
from keras_bert.checkpoints.native import check_keras_archive
from keras_bert.checkpoints.remote import is_checkpoint_name, resolve_checkpoint_name
from keras_bert.checkpoints.training_runs import find_run_directory
from keras_bert.checkpoints.vocab import (
    check_vocab_matches,
    checkpoint_lower_case,
    checkpoint_vocab,
)
from keras_bert.core.errors import CheckpointError, InputNotFoundError
from keras_bert.core.run_files import FINETUNED_MODEL
from keras_bert.model.config import BertConfig
from keras_bert.text.vocab import VOCAB_FILE

# What an artifact is (`Artifact.kind`): a checkpoint by its format (keras_bert's own
# directory, Hugging Face, Google TF1, tf-models-official TF2, a keras-hub backbone
# preset), a keras-hub task preset, a `keras-bert pretrain` run (the run, its
# checkpoints/ or a ckpt-STEP in it), a `keras-bert finetune` run, a `.keras` file.
KINDS = ("keras_bert", "hf", "google", "tf2", "keras_hub", "keras_hub_task",
         "pretraining_run", "finetuning_run", "keras_file")
KERAS_FILE_SUFFIX = ".keras"


@dataclasses.dataclass
class Artifact:
    """An artifact opened by `open_artifact`, read up to its weights.

    Attributes:
        path: the artifact as given (a directory, a TF checkpoint prefix, a file, a name).
        kind: what it is, one of `KINDS`.
        config: its encoder's `BertConfig`, read before any weights load (None only for
            a `.keras` file that holds no `BertEncoder`).
        vocab_file: the vocab given, else the artifact's own (`checkpoint_vocab`); None
            where `open_artifact` was told `require_vocab=False`, or for a `.keras` file
            (its preprocessor holds its own).
        owner: how messages name the model (e.g. "the checkpoint 'bert'").
        checkpoint_format: how `load_encoder` reads its weights (`detect_format`'s
            format), None for a fine-tuning run and a `.keras` file.
        local_path: `path` with a name (`hf://...`, a Google release) resolved to its
            local copy.
        pretraining_run: the `keras-bert pretrain` run directory `path` names, else None.
        record: a fine-tuning run's record (finetune_config.json, read once), else None.
        given_lower_case: the casing given, else None (see `lower_case`).
    """

    path: str
    kind: str
    config: BertConfig | None
    vocab_file: str | None
    owner: str
    checkpoint_format: str | None = None
    local_path: str | None = None
    pretraining_run: str | None = None
    record: dict | None = dataclasses.field(default=None, repr=False)
    given_lower_case: bool | None = None

    @functools.cached_property
    def lower_case(self) -> bool | None:
        """Whether the vocab is uncased: the casing given, else a fine-tuning run's
        recorded one, else `checkpoint_lower_case` (read on first use); None for a
        `.keras` file (its preprocessor keeps its own)."""
        if self.given_lower_case is not None:
            return self.given_lower_case
        if self.record is not None:
            return self.record["lower_case"]
        if self.kind == "keras_file":
            return None
        return checkpoint_lower_case(self.path)

    @functools.cached_property
    def hub_task(self):
        """A keras-hub task preset's classifier (`read_keras_hub_task`: its classes,
        head and sequence length), read on first use; None for any other kind."""
        return read_keras_hub_task(self.local_path) if self.kind == "keras_hub_task" else None

    @property
    def labels(self) -> tuple[str, ...] | None:
        """Class names in index order: a fine-tuning run's task's (None for a task
        without a label list), a keras-hub classifier's class indices; else None."""
        if self.kind == "finetuning_run":
            labels = (self.record.get("task_config") or {}).get("labels")
            return None if labels is None else tuple(labels)
        if self.kind == "keras_hub_task":
            return tuple(str(i) for i in range(self.hub_task.num_classes))
        return None

    @property
    def own_vocab(self) -> str | None:
        """The vocab that came with the artifact (`checkpoint_vocab`), or None."""
        return None if self.kind == "keras_file" else checkpoint_vocab(self.path)

    def check_vocab(self, *, exact: bool = False, against_own: bool = True) -> int:
        """Raises `VocabMismatchError` unless `vocab_file` fits the model: its size, and,
        with `against_own`, its tokens against the checkpoint's own vocab.txt (see
        `check_vocab_matches`, `exact` too). Returns the vocab's token count."""
        own = self.own_vocab
        # The checkpoint's own vocab (none was given) is always named as its own: a size
        # that differs is the checkpoint's fault, not the vocab_file argument's.
        is_own = own is not None and os.path.abspath(own) == os.path.abspath(self.vocab_file)
        return check_vocab_matches(self.vocab_file, self.config.vocab_size, self.owner,
                                   checkpoint=self.path if against_own or is_own else None,
                                   exact=exact)

    def tokenizer(self):
        """The `BertTokenizer` of `vocab_file` with `lower_case`."""
        from keras_bert.text.tokenizer import BertTokenizer

        return BertTokenizer(self.vocab_file, lower_case=self.lower_case)

    def load(self, dtype=None):
        """The artifact's model: a checkpoint's `BertEncoder` (see `load_encoder`), a
        fine-tuning run's task model, a `.keras` file's model (a keras-hub task preset's
        classifier: `keras_bert.tasks.glue.model.load_keras_hub_classifier`). `dtype` (a dtype policy) is for checkpoints; a saved
        model (a run, a `.keras` file) keeps its own."""
        if self.kind in ("finetuning_run", "keras_file"):
            import keras

            # A run's model.keras (checked whole when the run was opened); its task
            # and preprocessor: keras_bert.tasks.finetuning.run_directory.load_run.
            path = (os.path.join(self.path, FINETUNED_MODEL) if self.kind == "finetuning_run"
                    else self.local_path)
            return keras.saving.load_model(path, compile=self.kind == "keras_file")
        if self.kind == "keras_hub_task":  # its classifier is the tasks stage's
            raise CheckpointError(
                f"{self.path!r} is a keras-hub classifier preset: open it with "
                "keras_bert.BertClassifier.from_preset (or keras_bert.tasks.glue.model."
                "load_keras_hub_classifier); load_encoder() gives its backbone.")
        return load_encoder(self.path, dtype=dtype)

    def load_encoder(self, dtype=None, output_attentions: bool = False):
        """The artifact's `BertEncoder` alone: a checkpoint's (a keras-hub task preset's
        backbone too), or a fresh encoder (`dtype`, `output_attentions`) with the weights
        of a fine-tuning run's or a `.keras` model's."""
        if self.kind in ("finetuning_run", "keras_file"):
            from keras_bert.model.encoder import BertEncoder

            if self.config is None:
                raise CheckpointError(f"{self.path!r} holds no BertEncoder; load it with "
                                      "load().")
            encoder = BertEncoder(self.config, output_attentions=output_attentions,
                                  dtype=dtype)
            encoder.set_weights(self.load().encoder.get_weights())
            return encoder
        return load_encoder(self.path, output_attentions=output_attentions, dtype=dtype)


def artifact_exists(path: str | os.PathLike) -> bool:
    """Whether `path` can name an artifact before it is opened: a checkpoint name
    (`hf://...`, a Google release, fetched when opened), an existing file or directory,
    or a TF checkpoint prefix (`ckpt-STEP` beside its `.index`).

    Example:

    >>> artifact_exists("/nonexistent/model"), artifact_exists("hf://org/name")
    (False, True)
    """
    path = os.fspath(path)
    return (is_checkpoint_name(path) or os.path.exists(path)
            or os.path.isfile(path + ".index"))


def open_artifact(path: str | os.PathLike, vocab_file: str | os.PathLike | None = None,
                  lower_case: bool | None = None, *, owner: str | None = None,
                  vocab_remedy: str = "give its vocab_file.", require_vocab: bool = True,
                  finetuning_runs: bool = True, keras_files: bool = False) -> Artifact:
    """Opens any artifact: says what it is, reads its config and finds its vocab and
    casing, before any weights load.

    Args:
        path: any checkpoint `load_encoder` takes (a path, `hf://ORG/NAME`, a Google
            release name), a keras-hub task preset, (with `finetuning_runs`) a
            `keras-bert finetune` run directory, whose files are checked, whose record is
            read, whose encoder's config is read from its model.keras and whose casing
            is its record's, or (with `keras_files`) a saved `.keras` model file.
        vocab_file, lower_case: given, they override the artifact's own.
        owner: how messages name the model (default: "the checkpoint 'PATH'", or "the
            fine-tuned run 'PATH'").
        vocab_remedy: what the missing-vocab message tells the user to do.
        require_vocab: raise when neither a vocab is given nor one came with the
            checkpoint (else `vocab_file` is None).
        finetuning_runs: read a fine-tuning run directory as one; without, it is read as
            an encoder checkpoint (which it is not: `read_config` says what it lacks).
        keras_files: take a path ending in `.keras` as a saved model file; without, it
            is read as a checkpoint (which it is not: `read_config` says so).

    Raises:
        InputNotFoundError: no artifact at `path` (see `read_config`;
            `loading.NoCheckpointError` for a directory that holds none, an export
            among them), a fine-tuning run without its files, no vocab (with
            `require_vocab`).
        CheckpointError, DataError: an unreadable checkpoint or run record.

    Example:

    >>> import tempfile
    >>> from keras_bert.checkpoints.native import save_encoder
    >>> from keras_bert.model.encoder import BertEncoder
    >>> directory = os.path.join(tempfile.mkdtemp(), "cased_tiny")
    >>> save_encoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=5)), directory)
    >>> open_artifact(directory)
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.InputNotFoundError: the checkpoint '.../cased_tiny' has no vocab.txt beside it; give its vocab_file.
    >>> _ = open(os.path.join(directory, VOCAB_FILE), "w").write("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\nhi\\n")
    >>> artifact = open_artifact(directory)
    >>> artifact.kind, artifact.config.vocab_size, artifact.lower_case, artifact.labels
    ('keras_bert', 5, False, None)
    >>> artifact.check_vocab()
    5
    >>> type(artifact.load()).__name__
    'BertEncoder'
    """
    path = os.fspath(path)
    if keras_files and path.endswith(KERAS_FILE_SUFFIX):
        return _keras_file(path, vocab_file, lower_case, owner)
    record, fmt, local = None, None, path
    finetuning = finetuning_runs and is_finetuning_run(path)
    if finetuning:
        kind = "finetuning_run"
        record = check_finetuning_run(path)
        config = finetuned_encoder_config(path)
    else:
        fmt, resolved = detect_format(path)  # names a missing or unrecognised checkpoint
        config = format_config(fmt, resolved)
        local = resolve_checkpoint_name(path)
        kind = _checkpoint_kind(fmt, local)
    owner = owner or (f"the fine-tuned run {path!r}" if finetuning else
                      f"the checkpoint {path!r}")
    vocab = os.fspath(vocab_file) if vocab_file else checkpoint_vocab(path)
    if vocab is None and require_vocab:
        raise InputNotFoundError(f"{owner} has no {VOCAB_FILE} beside it; {vocab_remedy}")
    return Artifact(path, kind, config, vocab, owner, checkpoint_format=fmt,
                    local_path=local, pretraining_run=find_run_directory(path),
                    record=record, given_lower_case=lower_case)


def _checkpoint_kind(fmt: str, local: str) -> str:
    if find_run_directory(local) is not None:
        return "pretraining_run"
    if fmt == "training":  # a training checkpoint outside its run (read_config says so)
        return "pretraining_run"
    if fmt == "keras_hub" and os.path.isfile(os.path.join(local, KERAS_HUB_TASK)):
        return "keras_hub_task"
    return fmt


def _keras_file(path: str, vocab_file, lower_case, owner) -> Artifact:
    """A saved `.keras` model file: its encoder's config where it holds a `BertEncoder`
    (else None: loading it says what it holds)."""
    if not os.path.isfile(path):
        raise InputNotFoundError(f"no .keras file at {path!r}.")
    # Keras reports a truncated file as "File not found": say what it is instead.
    check_keras_archive(path, remedy="copy it again whole, or save the model again "
                                     "(model.save writes a .keras file all or nothing)")
    try:
        config = keras_archive_encoder_config(path)
    except Exception:  # noqa: BLE001 (not a readable archive: loading it says why)
        config = None
    return Artifact(path, "keras_file", config,
                    os.fspath(vocab_file) if vocab_file else None,
                    owner or f"the model file {path!r}", local_path=path,
                    given_lower_case=lower_case)
