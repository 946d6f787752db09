"""What `keras-bert finetune`, `evaluate` and `predict` share besides their declared
options (`keras_bert.tasks.finetuning.options`): the prediction batch size as
`FinetuneOptions` declares it, and the check of the task's data given as --data_dir or
--tfds.
"""

from __future__ import annotations

import argparse

from keras_bert.core.errors import ArgumentError
from keras_bert.pipelines.plumbing.arguments import add_options
from keras_bert.pipelines.plumbing.paths import require_directory
from keras_bert.tasks.finetuning.options import FinetuneOptions


def add_eval_batch_size(parser: argparse.ArgumentParser) -> None:
    """--eval_batch_size, as `keras-bert finetune` declares it (`FinetuneOptions`)."""
    add_options(parser, FinetuneOptions, only=("eval_batch_size",))


def require_task_data(args: argparse.Namespace) -> None:
    """Exactly one of --data_dir (an existing directory) and --tfds."""
    if bool(args.data_dir) == bool(args.tfds):
        raise ArgumentError("give the task's data with --data_dir or --tfds (one of them)",
                            field="data_dir")
    if args.data_dir:
        require_directory(args.data_dir, "--data_dir")
