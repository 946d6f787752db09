"""The one resolver for a checkpoint: a path -> its config (read before any weights
load), its vocab file, its casing and its tokenizer (`resolve_checkpoint`). It takes
every kind of checkpoint `load_encoder` takes (Google TF1, Hugging Face, tf-models-official
TF2, keras_bert's own directory, a `keras-bert pretrain` run directory or one of its
training checkpoints) and a `keras-bert finetune` run directory (its encoder's config, its
own vocab.txt and the casing its record gives). Every command that starts from a
checkpoint resolves it here, so each finds a model's vocab and casing the same way.
"""

from __future__ import annotations

import dataclasses
import functools
import os

from keras_bert.checkpoints.finetuning_runs import (
    check_finetuning_run,
    finetuned_encoder_config,
    is_finetuning_run,
)
from keras_bert.checkpoints.loading import read_config
from keras_bert.checkpoints.training_runs import find_run_directory
from keras_bert.checkpoints.vocab import (
    check_vocab_matches,
    checkpoint_lower_case,
    checkpoint_vocab,
)
from keras_bert.core.errors import InputNotFoundError
from keras_bert.model.config import BertConfig
from keras_bert.text.vocab import VOCAB_FILE


@dataclasses.dataclass
class ResolvedCheckpoint:
    """A checkpoint path read up to its weights: what a model built from it needs.

    Attributes:
        path: the checkpoint as given (a directory, or a TF checkpoint prefix).
        config: the encoder's `BertConfig`, read before any weights load.
        vocab_file: the vocab given, else the checkpoint's own (`checkpoint_vocab`);
            None only where `resolve_checkpoint` was told `require_vocab=False`.
        owner: how messages name the model (e.g. "the checkpoint 'bert'").
        finetuning_run: whether `path` is a `keras-bert finetune` run directory.
        pretraining_run: the `keras-bert pretrain` run directory `path` names (the run,
            its checkpoints/ or a `ckpt-STEP` in it), else None.
        record: a fine-tuning run's record (finetune_config.json), else None.
        given_lower_case: the casing given, else None (see `lower_case`).
    """

    path: str
    config: BertConfig
    vocab_file: str | None
    owner: str
    finetuning_run: bool = False
    pretraining_run: str | None = None
    record: dict | None = dataclasses.field(default=None, repr=False)
    given_lower_case: bool | None = None

    @functools.cached_property
    def lower_case(self) -> bool:
        """Whether the vocab is uncased: the casing given, else a fine-tuning run's
        recorded one, else `checkpoint_lower_case` (read on first use)."""
        if self.given_lower_case is not None:
            return self.given_lower_case
        if self.record is not None:
            return self.record["lower_case"]
        return checkpoint_lower_case(self.path)

    @property
    def own_vocab(self) -> str | None:
        """The vocab that came with the checkpoint (`checkpoint_vocab`), or None."""
        return checkpoint_vocab(self.path)

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


def resolve_checkpoint(path: str | os.PathLike, vocab_file: str | os.PathLike | None = None,
                       lower_case: bool | None = None, *, owner: str | None = None,
                       vocab_remedy: str = "give its vocab_file.",
                       require_vocab: bool = True,
                       finetuning_runs: bool = True) -> ResolvedCheckpoint:
    """Reads a checkpoint's config and finds its vocab and casing, before any weights load.

    Args:
        path: any checkpoint `load_encoder` takes, or (with `finetuning_runs`) a
            `keras-bert finetune` run directory, whose files are checked, whose encoder's
            config is read from its model.keras and whose casing is its record's.
        vocab_file, lower_case: given, they override the checkpoint's own.
        owner: how messages name the model (default: "the checkpoint 'PATH'", or "the
            fine-tuned run 'PATH'").
        vocab_remedy: what the missing-vocab message tells the user to do.
        require_vocab: raise when neither a vocab is given nor one came with the
            checkpoint (else `vocab_file` is None).
        finetuning_runs: read a fine-tuning run directory as one; without, it is read as
            an encoder checkpoint (which it is not: `read_config` says what it lacks).

    Raises:
        InputNotFoundError: no checkpoint at `path` (see `read_config`), a fine-tuning
            run without its files, or no vocab (with `require_vocab`).
        CheckpointError, DataError: an unreadable checkpoint or run record.

    Example:

    >>> import tempfile
    >>> from keras_bert.checkpoints.native import save_encoder
    >>> from keras_bert.model.encoder import BertEncoder
    >>> directory = os.path.join(tempfile.mkdtemp(), "cased_tiny")
    >>> save_encoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=5)), directory)
    >>> resolve_checkpoint(directory)
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.InputNotFoundError: the checkpoint '.../cased_tiny' has no vocab.txt beside it; give its vocab_file.
    >>> _ = open(os.path.join(directory, VOCAB_FILE), "w").write("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\nhi\\n")
    >>> resolved = resolve_checkpoint(directory)
    >>> resolved.config.vocab_size, resolved.lower_case, resolved.finetuning_run
    (5, False, False)
    >>> resolved.check_vocab()
    5
    """
    path = os.fspath(path)
    record = None
    finetuning = finetuning_runs and is_finetuning_run(path)
    if finetuning:
        record = check_finetuning_run(path)
        config = finetuned_encoder_config(path)
    else:
        config = read_config(path)  # names a missing or unrecognised checkpoint first
    owner = owner or (f"the fine-tuned run {path!r}" if finetuning else
                      f"the checkpoint {path!r}")
    vocab = os.fspath(vocab_file) if vocab_file else checkpoint_vocab(path)
    if vocab is None and require_vocab:
        raise InputNotFoundError(f"{owner} has no {VOCAB_FILE} beside it; {vocab_remedy}")
    return ResolvedCheckpoint(path, config, vocab, owner, finetuning_run=finetuning,
                              pretraining_run=find_run_directory(path), record=record,
                              given_lower_case=lower_case)
