"""What a pretraining run trains and reads: the model config (a preset, a config file or
the init checkpoint's, checked against each other), the `BertPretrainer` to start from
and the training dataset."""

from __future__ import annotations

import logging
import os

import tensorflow as tf

from keras_bert.checkpoints import (
    Artifact,
    CheckpointError,
    load_encoder,
    load_pretrainer,
    open_artifact,
)
from keras_bert.core import errors
from keras_bert.core.errors import ArgumentError, InputNotFoundError, MismatchError, UserInputError
from keras_bert.data import inspection
from keras_bert.data.masking import MaskedLmMasker
from keras_bert.data.tfrecords import pretraining_dataset
from keras_bert.model.config import PRESETS, BertConfig
from keras_bert.model.encoder import BertEncoder
from keras_bert.model.models import BertPretrainer
from keras_bert.training import preflight

logger = logging.getLogger("keras_bert")


def resolve_config(config: BertConfig | str | None, vocab_file: str | None = None
                   ) -> BertConfig:
    """A `BertConfig` from a config, a preset name or a config file.

    A preset takes the vocab's size when `vocab_file` is given (a preset describes the
    architecture, not a vocab); a config file is used exactly as written.

    Raises:
        ArgumentError: `config` is neither a preset nor a file (field "config").
        DataError: the config file is malformed or lacks a required field.

    Example:

    >>> resolve_config("tiny").num_layers
    2
    >>> resolve_config("huge")
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: config 'huge' is neither a preset (...) nor a config file.
    """
    if isinstance(config, BertConfig):
        return config
    config = os.fspath(config or "base")
    if os.path.isfile(config):
        return BertConfig.from_json_file(config)
    if config in PRESETS:
        overrides = {"vocab_size": preflight.vocab_size_of(vocab_file)} if vocab_file else {}
        return BertConfig.from_preset(config, **overrides)
    if os.path.isdir(config):
        raise ArgumentError(f"config {config!r} is a directory; give the config file inside "
                            "it, or pass the checkpoint as init_checkpoint.", field="config")
    raise ArgumentError(f"config {config!r} is neither a preset ({sorted(PRESETS)}) nor a "
                        "config file.", field="config")


def _describe_config(config: BertConfig | str | None) -> str:
    if isinstance(config, BertConfig):
        return "the given config"
    return f"config {os.fspath(config or 'base')}"


def _resolve_init_checkpoint(init_checkpoint: str) -> Artifact:
    """The init checkpoint's config and its own vocab (None where none came with it); a
    fine-tuning run directory is not a pretraining checkpoint."""
    try:
        return open_artifact(init_checkpoint, require_vocab=False, finetuning_runs=False)
    except FileNotFoundError as e:
        if isinstance(e, UserInputError):
            raise
        raise InputNotFoundError(f"init_checkpoint: {e}") from None


def _check_config_matches_checkpoint(config: BertConfig, checkpoint_config: BertConfig,
                                     init_checkpoint: str, config_source: str) -> None:
    if config == checkpoint_config:
        return
    differs = {k: (v, getattr(checkpoint_config, k)) for k, v in config.to_dict().items()
               if getattr(checkpoint_config, k) != v}
    raise MismatchError(
        f"{config_source} differs from init_checkpoint {init_checkpoint}'s config in "
        f"{differs} (given, checkpoint); leave config out to use the checkpoint's.")


def resolve_model_config(config: BertConfig | str | None, init_checkpoint: str | None,
                         vocab_file: str | None = None
                         ) -> tuple[BertConfig, str, Artifact | None]:
    """The config a run trains, how messages name its source, and the resolved
    `init_checkpoint` (its own vocab among what it gives; None without one): `config`
    (see `resolve_config`), else the `init_checkpoint`'s, else "base"; `config` and
    `init_checkpoint` together must agree.

    Raises:
        ArgumentError, DataError: see `resolve_config`.
        InputNotFoundError: no checkpoint at `init_checkpoint`.
        MismatchError: `config` differs from the checkpoint's config.
    """
    explicit_config, config_source = None, "the model"
    if config is not None or not init_checkpoint:
        explicit_config = resolve_config(config, vocab_file)
        config_source = _describe_config(config)
    if not init_checkpoint:
        return explicit_config, config_source, None
    checkpoint = _resolve_init_checkpoint(init_checkpoint)
    if explicit_config is not None:
        _check_config_matches_checkpoint(explicit_config, checkpoint.config,
                                         init_checkpoint, config_source)
    else:
        config_source = f"init_checkpoint {init_checkpoint}"
    return checkpoint.config, config_source, checkpoint


def build_pretrainer(config: BertConfig, init_checkpoint: str | None,
                     next_sentence: bool) -> BertPretrainer:
    """A new pretrainer of `config`, or one with `init_checkpoint`'s weights (whose
    config `resolve_model_config` has checked against `config` already). The heads a
    checkpoint lacks (an encoder-only one, or no next-sentence head) start from scratch.
    """
    if not init_checkpoint:
        return BertPretrainer(BertEncoder(config), next_sentence=next_sentence)
    try:
        loaded = load_pretrainer(init_checkpoint)
    except (CheckpointError, errors.CheckpointError) as e:
        # An encoder-only checkpoint; one that cannot be read fails here too, and the
        # note below would mislead.
        encoder = load_encoder(init_checkpoint)
        logger.info("%s; starting the pretraining heads from scratch.", e)
        loaded = BertPretrainer(encoder, next_sentence=next_sentence)
    if loaded.next_sentence == next_sentence:
        return loaded
    model = BertPretrainer(loaded.encoder, next_sentence=next_sentence)
    model.masked_lm.set_weights(loaded.masked_lm.get_weights())
    return model


def build_dataset(info: inspection.PretrainingDataInfo, model: BertPretrainer,
                  batch_size: int, max_predictions_per_seq: int, *, seed: int,
                  shuffle_buffer_size: int = 10_000, skip_batches: int = 0,
                  vocab_file: str | None = None) -> tf.data.Dataset:
    """The training input: `(x, y, sample_weight)` batches of `batch_size` sequences
    (the global micro-batch; the strategy splits it over replicas), shuffled by `seed`
    and starting after `skip_batches` batches, so a resumed run continues where the
    interrupted one stopped. Unmasked files (dynamic masking) are masked here with the
    sidecar's settings, which needs the vocab.

    Multi-worker runs shard the data by batch (`AutoShardPolicy.DATA`): every worker
    reads the same global batch and keeps its replicas' part of it, so a step sees the
    same examples for any number of workers.

    Example:

    >>> info = inspection.inspect_pretraining_data("data/*.tfrecord")  # doctest: +SKIP
    >>> x, y, sample_weight = next(iter(build_dataset(info, model, 32, 20,
    ...                                               seed=1)))  # doctest: +SKIP
    >>> sorted(y)  # doctest: +SKIP
    ['masked_lm', 'next_sentence']
    """
    masker = None
    if info.dynamic_masking:
        check_masking_vocab(info, vocab_file)
        masker = MaskedLmMasker(
            vocab_file, max_predictions_per_seq=max_predictions_per_seq,
            masked_lm_prob=info.settings.get("masked_lm_prob", 0.15),
            whole_word_mask=info.settings.get("do_whole_word_mask", False))
    dataset = pretraining_dataset(
        list(info.files), batch_size, max_seq_length=info.max_seq_length,
        max_predictions_per_seq=max_predictions_per_seq, is_training=True, masker=masker,
        seed=seed, shuffle_buffer_size=shuffle_buffer_size, drop_remainder=True,
        skip_batches=skip_batches)
    dataset = dataset.map(model.split_features, num_parallel_calls=tf.data.AUTOTUNE)
    # The next batches are ready while a step runs.
    dataset = dataset.prefetch(tf.data.AUTOTUNE)
    data_options = tf.data.Options()
    data_options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA)
    return dataset.with_options(data_options)


def check_masking_vocab(info: inspection.PretrainingDataInfo, vocab_file: str | None
                        ) -> None:
    """Raises `ArgumentError` (field "vocab_file") when the data needs masking while
    training (dynamic masking) and no vocab is given."""
    if info.dynamic_masking and not vocab_file:
        raise ArgumentError(
            f"{info.files[0]} holds unmasked instances (dynamic masking); they are masked "
            "while training, which needs the vocab: give vocab_file.", field="vocab_file")

