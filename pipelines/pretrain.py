"""Pretrain BERT (masked LM + next sentence prediction) with model.fit on a tf.distribute
strategy: one device, local GPUs (mirrored), several machines (multi_worker, from
TF_CONFIG) or a TPU.

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
from keras_bert.core.precision import TRAINING_PRECISIONS
from keras_bert.pipelines.flags import (
    EXIT_TERMINATED,
    SIGNAL_EXIT_CODES,
    add_boolean,
    blame,
    json_progress_callback,
    library_logging,
    nonnegative_float,
    nonnegative_int,
    options_from_args,
    positive_float,
    positive_int,
    require_output_directory,
)
from keras_bert.training.options import OPTIMIZERS, STRATEGIES, PretrainingOptions

_DEFAULTS = PretrainingOptions()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--input_file", required=True,
        help="pretraining TFRecords: comma-separated globs")
    add("--output_dir", required=True,
        help="run directory: encoder, metrics.json, checkpoints/, logs/ (reused to resume)")
    add("--config", default=None,
        help="a preset (tiny, mini, small, medium, base, large) or a bert_config.json / "
             "config.json; a preset takes --vocab_file's size (default: the "
             "--init_checkpoint's config, else base)")
    add("--vocab_file", default=None,
        help="the vocab.txt the data was made with; checked against the model and data")
    add("--init_checkpoint", default=None,
        help="start from these weights (Google TF1, tf-models-official TF2, Hugging Face "
             "or keras_bert checkpoint)")
    add("--train_batch_size", type=positive_int, default=_DEFAULTS.train_batch_size,
        help="global batch: sequences per update over all replicas (default: %(default)s)")
    add("--max_seq_length", type=positive_int, default=None,
        help="must match the data if given (default: read from the TFRecords)")
    add("--max_predictions_per_seq", type=positive_int, default=None,
        help="must match the data if given (default: read from the TFRecords)")
    add("--num_train_steps", type=positive_int, default=_DEFAULTS.num_train_steps,
        help="optimizer updates (default: %(default)s)")
    add("--num_warmup_steps", type=nonnegative_int, default=_DEFAULTS.num_warmup_steps,
        help="updates of linear learning-rate warmup (default: %(default)s)")
    add("--learning_rate", type=positive_float, default=_DEFAULTS.learning_rate,
        help="peak learning rate, decayed linearly to 0 (default: %(default)s)")
    add("--optimizer", choices=OPTIMIZERS, default=_DEFAULTS.optimizer,
        help="adamw (BERT's) or lamb (large batches) (default: %(default)s)")
    add("--weight_decay", type=nonnegative_float, default=_DEFAULTS.weight_decay,
        help="decoupled weight decay, not on LayerNorm/bias (default: %(default)s)")
    add("--gradient_accumulation_steps", type=positive_int,
        default=_DEFAULTS.gradient_accumulation_steps,
        help="micro-batches per update, for small accelerators (default: %(default)s)")
    add("--strategy", choices=STRATEGIES, default="auto",
        help="tf.distribute strategy (default: %(default)s: TPU if --tpu, multi_worker if "
             "TF_CONFIG lists workers, mirrored with several GPUs, else one device)")
    add("--tpu", default=None,
        help="TPU for --strategy tpu: 'local' on a TPU VM, a Cloud TPU name or "
             "grpc://HOST:PORT")
    add("--save_checkpoints_steps", type=positive_int, default=_DEFAULTS.save_checkpoints_steps,
        help="steps between checkpoints (default: %(default)s)")
    add("--keep_checkpoints", type=positive_int, default=_DEFAULTS.keep_checkpoints,
        help="checkpoints kept (default: %(default)s)")
    add("--log_steps", type=positive_int, default=_DEFAULTS.log_steps,
        help="steps per TensorBoard/train_log.jsonl record (default: %(default)s)")
    add("--steps_per_execution", type=positive_int, default=None,
        help="training steps per tf.function call; checkpoints, logs and a stop signal "
             "wait for the call to end (default: 1; on TPU the largest divisor of the "
             "checkpoint and log intervals and --num_train_steps, up to 1000)")
    add_boolean(parser, "jit_compile", None, "compile the train step with XLA (auto: Keras "
                "decides)")
    add("--precision", "--mixed_precision", dest="mixed_precision", choices=TRAINING_PRECISIONS,
        default=_DEFAULTS.mixed_precision,
        help="the Keras dtype policy; auto: bfloat16 on TPU, float16 with loss scaling on "
             "GPU, float32 on CPU; mixed_bfloat16 trained 1.28x as fast as float32 on a "
             "CPU with AVX512-BF16 (README, Measured here)")
    add("--seed", type=int, default=_DEFAULTS.seed,
        help="seeds initialization, dropout and input order (default: %(default)s)")
    add_boolean(parser, "resume", False, "continue the run in --output_dir to a new "
                "--num_train_steps (with the same settings a rerun resumes by itself)")
    add_boolean(parser, "overwrite", False, "start a new run in place of the one in "
                "--output_dir that was made with other settings")
    add_boolean(parser, "progress", True, "show a progress bar")


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
