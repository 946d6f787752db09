"""Pretrain BERT (masked LM + next sentence prediction) with model.fit on a tf.distribute
strategy: one device, local GPUs (mirrored), several machines (multi_worker, from
TF_CONFIG) or a TPU.

The same command runs on Keras's JAX backend (`KERAS_BACKEND=jax`: data parallel over the
local devices through keras.distribution) and PyTorch backend, with the same files.

Input: TFRecords from `keras-bert create-pretraining-data`. Output, in --output_dir: the
trained encoder (`keras_bert.load_encoder(OUTPUT_DIR)` loads it), metrics.json with the
final masked-LM/next-sentence accuracy and loss, checkpoints/ (rerunning the same
command resumes from the last one), logs/ for TensorBoard and train_log.jsonl. A SIGTERM
saves a checkpoint and exits with status 143. Flags keep google-research/bert's
run_pretraining.py names where the meaning is the same.

Example:

    keras-bert pretrain --input_file='data/pretraining/*.tfrecord' \\
        --output_dir=runs/base --config=base --vocab_file=vocab.txt \\
        --train_batch_size=256 --num_train_steps=1000000 --num_warmup_steps=10000 \\
        --learning_rate=1e-4 --strategy=mirrored
"""

from __future__ import annotations

import argparse
import os

from keras_bert.core.errors import ArgumentError, MismatchError
from keras_bert.pipelines.plumbing import (
    EXIT_TERMINATED,
    SIGNAL_EXIT_CODES,
    add_options,
    blame,
    json_progress_callback,
    library_logging,
    options_from_args,
    require_output_directory,
)
from keras_bert.training.options import PretrainingOptions, PretrainJobOptions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, PretrainJobOptions, only=("input_file", "output_dir", "config",
                                                  "vocab_file", "init_checkpoint"))
    add_options(parser, PretrainingOptions)
    add_options(parser, PretrainJobOptions, only=("strategy", "tpu", "resume", "overwrite",
                                                  "progress"))


def run(args: argparse.Namespace) -> int:
    from keras_bert.training.pretraining import Pretraining

    require_output_directory(args.output_dir, "--output_dir")
    # The run's own messages (strategy, resuming at step N, a stop signal) go to stderr.
    with library_logging():
        # A run in --output_dir made with other settings is --output_dir's mistake (the
        # message names --resume and --overwrite: see field_flags.in_flag_terms).
        try:
            with blame("output_dir", MismatchError):
                pretraining = Pretraining(
                    args.input_file, args.output_dir, args.config,
                    options_from_args(PretrainingOptions, args),
                    vocab_file=args.vocab_file, strategy=args.strategy, tpu=args.tpu,
                    init_checkpoint=args.init_checkpoint, progress=args.progress,
                    overwrite=args.overwrite, resume=args.resume)
        except ConnectionError as e:  # an unreachable --tpu is the user's address to fix
            raise ArgumentError(str(e), field="tpu") from None
        # --json: a progress event per logging window (and the last step).
        progress = json_progress_callback("pretrain", pretraining.total_steps,
                                          every=max(1, args.log_steps),
                                          initial_step=pretraining.start_step)
        metrics = pretraining.fit(callbacks=[progress] if progress else [])
    if metrics.get("preempted"):
        signal = metrics.get("signal", "SIGTERM")
        print(f"Stopped by {signal} at step {metrics['step']}; saved {metrics['checkpoint']}. "
              "Run the same command again to resume.")
        return SIGNAL_EXIT_CODES.get(signal, EXIT_TERMINATED)
    if pretraining.is_chief:
        _print_summary(args.output_dir, metrics)
    return 0


def _print_summary(output_dir: str, metrics: dict) -> None:
    line = (f"Trained to step {metrics['step']}: masked-LM accuracy "
            f"{metrics['masked_lm_accuracy']:.4f} (loss {metrics['masked_lm_loss']:.4f})")
    if "next_sentence_accuracy" in metrics:
        line += (f", next-sentence accuracy {metrics['next_sentence_accuracy']:.4f} (loss "
                 f"{metrics['next_sentence_loss']:.4f})")
    print(line + ".")
    print(f"Encoder:      {output_dir} (keras_bert.load_encoder)")
    print(f"Metrics:      {os.path.join(output_dir, 'metrics.json')}")
    print(f"Checkpoints:  {os.path.join(output_dir, 'checkpoints')}")
    print(f"TensorBoard:  tensorboard --logdir {os.path.join(output_dir, 'logs')}")
