"""The flags and checks that `keras-bert finetune`, `evaluate` and `predict` share: the
fine-tuned model a command reads, the prediction batch size, and the task's data given
as --data_dir or --tfds.
"""

from __future__ import annotations

import argparse

from keras_bert.core.errors import ArgumentError
from keras_bert.pipelines.flags import add_options, require_directory
from keras_bert.tasks.finetuning.options import FinetuneOptions
from keras_bert.tasks.registry import TASK_NAMES


def add_finetuned_model(parser: argparse.ArgumentParser) -> None:
    """--model (a `keras-bert finetune` output directory) and the --task it was
    fine-tuned on."""
    parser.add_argument("--model", required=True,
                        help="a `keras-bert finetune` output directory")
    parser.add_argument("--task", required=True, choices=TASK_NAMES, metavar="TASK",
                        help="the task the model was fine-tuned on")


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
