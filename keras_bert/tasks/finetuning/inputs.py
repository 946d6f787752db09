"""What a fine-tuning run reads, checked before any training: the task's splits
(`TaskSource`: the benchmark's files or a tensorflow-datasets dataset) and the model to
start from (`model_source`: a checkpoint, or a preset with random weights, and its
vocab).
"""

from __future__ import annotations

import os

from keras_bert.checkpoints import Artifact, check_vocab_matches, open_artifact
from keras_bert.core.errors import ArgumentError, DataError, InputNotFoundError
from keras_bert.model.config import PRESETS, BertConfig
from keras_bert.tasks.base import Task


class TaskSource:
    """Where a task's splits come from: the benchmark's files or tensorflow-datasets
    (exactly one of `data_dir` and `tfds`)."""

    def __init__(self, task: Task, data_dir: str | None, tfds: str | None,
                 tfds_data_dir: str | None):
        if bool(data_dir) == bool(tfds):
            raise ArgumentError("give either a data_dir (the benchmark's files) or a tfds "
                                "dataset name.", field="data_dir")
        self.task, self.data_dir, self.tfds, self.tfds_data_dir = (
            task, data_dir, tfds, tfds_data_dir)
        if data_dir and not os.path.isdir(data_dir):
            raise InputNotFoundError(f"data_dir {data_dir!r} is not a directory.")

    def read(self, split: str) -> tuple[str, list]:
        """(a label for messages, the examples) of one split."""
        if self.tfds:
            from keras_bert.tasks.tfds_source import tfds_examples

            return (f"{self.tfds} ({split})",
                    tfds_examples(self.task, self.tfds, split, self.tfds_data_dir))
        path = self.task.split_path(self.data_dir, split)
        if os.path.isdir(path):
            raise InputNotFoundError(f"the {split} split of {self.task.name} is {path}, which "
                                     "is a directory: it must be the split's file itself.")
        if not os.path.isfile(path):
            raise InputNotFoundError(f"the {split} split of {self.task.name} is missing: no "
                                     f"{path} (expected the benchmark's own file layout).")
        examples = self.task.read_examples(path)
        if not examples:
            raise DataError("holds no examples (an empty split).", path=path)
        return path, examples


def model_source(checkpoint: str | None, preset: str | None, vocab_file: str | None,
                 lower_case: bool | None
                 ) -> tuple[BertConfig, str, bool, Artifact | None]:
    """(config, vocab file, lower_case, the opened checkpoint) of the model a run starts
    from: exactly one of a `checkpoint` (opened by `open_artifact`: its vocab.txt and
    casing unless given; a `keras-bert finetune` run directory gives its encoder, for
    intermediate-task transfer) or a `preset` (random weights, no artifact; needs
    `vocab_file`, lower-cases unless told otherwise). The vocab must fit the model's
    embeddings. Nothing is loaded: a fine-tuning run's record (read once, when it is
    opened) and task are checked here, its model when it is built.

    Example:

    >>> model_source(None, "tiny", None, None)
    Traceback (most recent call last):
    ...
    keras_bert.core.errors.ArgumentError: a preset has no vocab; give vocab_file.
    """
    if bool(checkpoint) == bool(preset):
        raise ArgumentError("give either a checkpoint or a preset (random weights).",
                            field="checkpoint")
    artifact = None
    if checkpoint:
        artifact = open_artifact(checkpoint, vocab_file, lower_case)
        if artifact.kind == "finetuning_run":  # its task and options, checked before training
            from keras_bert.tasks.finetuning.run_directory import restore_run

            restore_run(artifact.path, artifact.record)
        config, vocab, lower_case, owner = (artifact.config, artifact.vocab_file,
                                            artifact.lower_case, artifact.owner)
    else:
        if preset not in PRESETS:
            raise ArgumentError(f"preset {preset!r} is not one of {sorted(PRESETS)}.",
                                field="preset")
        if not vocab_file:
            raise ArgumentError("a preset has no vocab; give vocab_file.", field="vocab_file")
        from keras_bert.text.tokenizer import load_vocab

        config = BertConfig.from_preset(preset, vocab_size=len(load_vocab(vocab_file)))
        vocab, owner = vocab_file, f"the preset {preset!r}"
        lower_case = True if lower_case is None else lower_case
    if not os.path.isfile(vocab):
        raise InputNotFoundError(f"vocab_file {vocab!r} does not exist.")
    check_vocab_matches(vocab, config.vocab_size, owner, checkpoint=checkpoint)
    return config, vocab, lower_case, artifact
