"""A checkpoint's vocab: the vocab.txt beside it, whether it is lower-cased, and the
check that a vocab file belongs to the model (same size, same tokens).
"""

from __future__ import annotations

import json
import os

from keras_bert.checkpoints.finetuning_runs import is_finetuning_run
from keras_bert.checkpoints.keras_hub import (
    is_keras_hub_preset,
    keras_hub_lower_case,
    keras_hub_vocab,
)
from keras_bert.checkpoints.loading import config_file
from keras_bert.checkpoints.remote import resolve_checkpoint_name
from keras_bert.checkpoints.training_runs import find_run_directory, read_run_record
from keras_bert.core import fileio
from keras_bert.core.errors import UserInputError, VocabMismatchError
from keras_bert.core.run_files import FINETUNED_MODEL
from keras_bert.text.vocab import VOCAB_FILE


def check_vocab_matches(vocab_file: str | os.PathLike, vocab_size: int, owner: str, *,
                        checkpoint: str | os.PathLike | None = None,
                        exact: bool = False) -> int:
    """Raises `VocabMismatchError` (a `MismatchError`, and an `ArgumentError` of field
    "vocab_file") unless `vocab_file` belongs to the model: it must have exactly
    `vocab_size` tokens (the vocab size of `owner`, e.g. a checkpoint's config), and,
    when `checkpoint` has a vocab.txt of its own beside it, the same token on every
    line as that one (only its `[unusedN]` slots may hold new tokens, as Google's README
    suggests for adding words; with `exact`, not even those: a fine-tuned model was
    trained with its own vocab.txt, new tokens and all). A vocab of another model gives
    wrong ids without any other sign: every sentence embeds alike. Returns the file's
    token count.

    Where `vocab_file` is `checkpoint`'s own vocab.txt (none was given), a size that
    differs is the checkpoint's fault, not an argument's: the error names its config
    file and its vocab.txt, and its `field` is None.

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), VOCAB_FILE)
    >>> _ = open(path, "w").write("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n")
    >>> check_vocab_matches(path, 30522, "the model 'bert-base'")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.VocabMismatchError: the vocab .../vocab.txt has 4 tokens but the model 'bert-base' has 30522; use the vocab.txt that came with the model.
    """
    from keras_bert.text.tokenizer import load_vocab

    tokens = load_vocab(vocab_file)
    size = len(tokens)
    own = checkpoint_vocab(checkpoint) if checkpoint is not None else None
    is_own = own is not None and os.path.abspath(own) == os.path.abspath(os.fspath(vocab_file))
    if size != vocab_size and is_own:
        raise _inconsistent_checkpoint(os.fspath(checkpoint), own, size, vocab_size)
    if size != vocab_size:
        raise VocabMismatchError(f"the vocab {os.fspath(vocab_file)} has {size} tokens but "
                                 f"{owner} has {vocab_size}; use the vocab.txt that came "
                                 "with the model.")
    if own is None or is_own:
        return size
    own_tokens = load_vocab(own)
    remedy = ("leave vocab_file out to use it, or give a copy of it" if exact else
              "use the model's vocab.txt (only its [unusedN] lines may be replaced by new "
              "tokens)")
    for line, (token, expected) in enumerate(zip(tokens, own_tokens), start=1):
        if token != expected and (exact or not expected.startswith("[unused")):
            raise VocabMismatchError(
                f"the vocab {os.fspath(vocab_file)} is not the vocab of {owner}: line {line} "
                f"holds {token!r} where the model's own {own} has {expected!r}, so the "
                f"token ids would not match the embeddings; {remedy}.")
    if len(own_tokens) != size:
        raise VocabMismatchError(
            f"the vocab {os.fspath(vocab_file)} is not the vocab of {owner}: it has {size} "
            f"tokens, the model's own {own} {len(own_tokens)}; {remedy}.")
    return size


def _inconsistent_checkpoint(checkpoint: str, vocab: str, size: int,
                             vocab_size: int) -> VocabMismatchError:
    """The error for a checkpoint whose own vocab.txt and config disagree on the vocab's
    size: no vocab was given (its field is None), so no argument is to blame."""
    if is_finetuning_run(checkpoint):
        config = os.path.join(checkpoint, FINETUNED_MODEL)
    else:
        try:
            config = config_file(checkpoint)
        except UserInputError:  # not a checkpoint read_config takes
            config = None
    where = config or f"the config of {checkpoint} (read off its variable shapes)"
    return VocabMismatchError(
        f"the checkpoint {checkpoint} does not agree with itself: {where} gives vocab_size "
        f"{vocab_size} but its vocab {vocab} has {size} tokens (one a line, one per row of "
        "the word embeddings), so one of the two files is not the model's; replace that "
        "vocab.txt with the one the model was trained with, or correct vocab_size in the "
        "config if it is the wrong one.", field=None)


def checkpoint_vocab(path: str | os.PathLike) -> str | None:
    """The vocab file (`VOCAB_FILE`) that came with a checkpoint or run directory, or
    None: the one in `path` when it is a directory (any checkpoint directory, a
    `keras-bert finetune` or `keras-bert pretrain` run directory), else the one beside
    it (a checkpoint file, or a TF checkpoint prefix such as Google's `bert_model.ckpt`);
    failing those, the one in the `keras-bert pretrain` run directory `path` is in
    (`RUN/checkpoints`, `RUN/checkpoints/ckpt-STEP`). Paths may be local or anything
    `tf.io.gfile` opens (gs://, ...). Every command finds a model's vocab by this rule.

    Example:

    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> checkpoint = os.path.join(run, "checkpoints", "ckpt-200")
    >>> checkpoint_vocab(checkpoint) is None
    True
    >>> _ = open(os.path.join(run, "run_config.json"), "w").write("{}")
    >>> _ = open(os.path.join(run, VOCAB_FILE), "w").write("[PAD]\\n")
    >>> checkpoint_vocab(checkpoint) == os.path.join(run, VOCAB_FILE)
    True
    >>> checkpoint_vocab(os.path.join(run, "bert_model.ckpt")) == os.path.join(run, VOCAB_FILE)
    True
    """
    path = resolve_checkpoint_name(os.fspath(path))
    directory = path if fileio.isdir(path) else os.path.dirname(path)
    for place in (directory, find_run_directory(path)):
        candidate = place is not None and os.path.join(place, VOCAB_FILE)
        if candidate and fileio.exists(candidate) and not fileio.isdir(candidate):
            return candidate
    return keras_hub_vocab(path) if not fileio.is_remote(path) else None


def checkpoint_lower_case(path: str | os.PathLike) -> bool:
    """Whether a checkpoint's vocab is uncased: its `tokenizer_config.json`'s
    `do_lower_case` (Hugging Face), else, for a `keras-bert pretrain` run or its
    checkpoints, the `do_lower_case` its pretraining data was made with (as run_config.json
    records it), else a "cased" in the checkpoint's directory name
    (`cased_L-12_H-768_A-12`), else True (the common uncased vocab).

    Example:

    >>> checkpoint_lower_case("/models/cased_L-12_H-768_A-12")
    False
    """
    path = resolve_checkpoint_name(os.fspath(path))
    # A file or a Google checkpoint prefix names its directory; anything else is one.
    is_file = os.path.isfile(path) or os.path.isfile(path + ".index")
    directory = os.path.dirname(path) if is_file else path
    if is_keras_hub_preset(directory):  # its tokenizer.json's `lowercase`
        return keras_hub_lower_case(directory)
    config = os.path.join(directory, "tokenizer_config.json")
    if os.path.isfile(config):
        with open(config, encoding="utf-8") as f:
            return bool(json.load(f).get("do_lower_case", True))
    run_dir = find_run_directory(path)
    if run_dir is not None:  # the casing of the data the run was trained on
        recorded = (read_run_record(run_dir).get("data_settings") or {}).get("do_lower_case")
        if isinstance(recorded, bool):
            return recorded
        directory = run_dir
    name = os.path.basename(os.path.normpath(directory)).lower()
    return not (name.startswith("cased") or "_cased" in name or "-cased" in name)
