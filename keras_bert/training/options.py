"""`PretrainingOptions`: how to pretrain (batch, steps, learning rate, optimizer,
checkpoint and logging intervals, precision, seed), each checked when it is made; and
`PretrainJobOptions`, what `keras-bert pretrain` is asked for besides."""

from __future__ import annotations

import dataclasses

from keras_bert.core.checks import REQUIRED, OptionChecks, option
from keras_bert.core.precision import TRAINING_PRECISIONS

OPTIMIZERS = ("adamw", "lamb")
# Strategy names (keras_bert.training.distribute makes them tf.distribute strategies).
STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """How to pretrain; the defaults are the paper's (Appendix A.2) where it gives one.
    Each field's range and flag help are declared with it (`keras_bert.core.checks.option`).

    Args:
        train_batch_size: sequences per optimizer update, over all replicas (global).
        max_seq_length, max_predictions_per_seq: None takes them from the TFRecords;
            a value that differs from the data is an error.
        num_train_steps: optimizer updates.
        num_warmup_steps: updates of linear learning-rate warmup.
        learning_rate: the peak learning rate.
        optimizer: "adamw" (BERT's) or "lamb" (for large batches).
        weight_decay: decoupled weight decay, not applied to LayerNorm and biases.
        gradient_accumulation_steps: micro-batches per update; each micro-batch is
            `train_batch_size / gradient_accumulation_steps` sequences. The step
            options count updates; the progress bar, the checkpoint numbers and the
            `step` of train_log.jsonl count micro-batches.
        steps_per_execution: training steps per `tf.function` call (Keras's
            `steps_per_execution`; the callbacks run between calls, so it must divide
            `save_checkpoints_steps`, `log_steps` and `num_train_steps`, counted in
            micro-batches); None: 1, or on TPU the largest divisor of the three, and of
            the step a resumed run starts at, up to 1000. See
            `keras_bert.training.pretraining.steps_per_execution`.
        save_checkpoints_steps: updates between checkpoints.
        keep_checkpoints: checkpoints kept.
        log_steps: updates per logging window (TensorBoard, train_log.jsonl).
        jit_compile: compile the train step with XLA; None lets Keras decide.
        mixed_precision: "auto" (bfloat16 on TPU, float16 with loss scaling on GPU,
            float32 on CPU), "float32", "mixed_float16" or "mixed_bfloat16".
        seed: seeds the initialization, dropout and the input order.
        shuffle_buffer_size: records in the input shuffle buffer.
        next_sentence: train the NSP head; None: as the data was made (its sidecar),
            else True.

    Example:

    >>> PretrainingOptions(num_train_steps=1000, num_warmup_steps=100).learning_rate
    0.0001
    """

    train_batch_size: int = option(
        32, "global batch: sequences per update over all replicas", at_least=1)
    max_seq_length: int | None = option(
        None, "must match the data if given (default: read from the TFRecords)", at_least=1)
    max_predictions_per_seq: int | None = option(
        None, "must match the data if given (default: read from the TFRecords)", at_least=1)
    num_train_steps: int = option(100_000, "optimizer updates", at_least=1)
    num_warmup_steps: int = option(
        10_000, "updates of linear learning-rate warmup", at_least=0)
    learning_rate: float = option(
        1e-4, "peak learning rate, decayed linearly to 0", greater_than=0)
    optimizer: str = option(
        "adamw", "adamw (BERT's) or lamb (large batches)", choices=OPTIMIZERS)
    weight_decay: float = option(
        0.01, "decoupled weight decay, not on LayerNorm/bias", at_least=0)
    gradient_accumulation_steps: int = option(
        1, "micro-batches per update, for small accelerators", at_least=1)
    steps_per_execution: int | None = option(
        None, "training steps per tf.function call; checkpoints, logs and a stop signal "
        "wait for the call to end (default: 1; on TPU the largest divisor of the "
        "checkpoint and log intervals and num_train_steps, up to 1000)", at_least=1)
    save_checkpoints_steps: int = option(1000, "steps between checkpoints", at_least=1)
    keep_checkpoints: int = option(3, "checkpoints kept", at_least=1)
    log_steps: int = option(100, "steps per TensorBoard/train_log.jsonl record", at_least=1)
    jit_compile: bool | None = option(
        None, "compile the train step with XLA (auto: Keras decides)")
    mixed_precision: str = option(
        "auto", "the Keras dtype policy; auto: bfloat16 on TPU, float16 with loss scaling "
        "on GPU, float32 on CPU; mixed_bfloat16 trained 1.28x as fast as float32 on a CPU "
        "with AVX512-BF16 (docs/model.md)", choices=TRAINING_PRECISIONS,
        flags=("--precision", "--mixed_precision"))
    seed: int = option(12345, "seeds initialization, dropout and input order")
    shuffle_buffer_size: int = option(
        10_000, "records in the input shuffle buffer", at_least=1, flags=())
    next_sentence: bool | None = option(
        None, "train the NSP head (auto: as the data was made)", flags=())

    def __post_init__(self):
        checks = OptionChecks("pretraining options", self)
        checks.check(lambda: self.num_warmup_steps <= self.num_train_steps,
                     "num_warmup_steps", f"must be in [0, num_train_steps="
                     f"{self.num_train_steps}], got {self.num_warmup_steps}",
                     needs=("num_train_steps",))
        checks.raise_if_any()

    def micro_steps(self, updates: int) -> int:
        """Training steps (micro-batches) for a number of optimizer updates."""
        return updates * self.gradient_accumulation_steps


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainJobOptions:
    """What `keras-bert pretrain` is asked for besides the `PretrainingOptions`: the data,
    the run directory, the model to start from, the strategy, and whether to resume or
    replace a run; declared once (its flags are made from them)."""

    input_file: str = option(REQUIRED, "pretraining TFRecords: comma-separated globs")
    output_dir: str = option(REQUIRED, "run directory: encoder, metrics.json, checkpoints/, "
                                       "logs/ (reused to resume)")
    config: str | None = option(
        None, "a preset (tiny, mini, small, medium, base, large) or a bert_config.json / "
        "config.json; a preset takes --vocab_file's size (default: the --init_checkpoint's "
        "config, else base)")
    vocab_file: str | None = option(
        None, "the vocab.txt the data was made with; checked against the model and data")
    init_checkpoint: str | None = option(
        None, "start from these weights (Google TF1, tf-models-official TF2, Hugging Face "
        "or keras_bert checkpoint)")
    strategy: str = option(
        "auto", "tf.distribute strategy (default: %(default)s: TPU if --tpu, multi_worker "
        "if TF_CONFIG lists workers, mirrored with several GPUs, else one device); under "
        "KERAS_BACKEND=jax, auto is data parallel over the local devices "
        "(keras.distribution) and one_device the first", choices=STRATEGIES)
    tpu: str | None = option(
        None, "TPU for --strategy tpu: 'local' on a TPU VM, a Cloud TPU name or "
        "grpc://HOST:PORT")
    resume: bool = option(False, "continue the run in --output_dir to a new "
                                 "--num_train_steps (with the same settings a rerun resumes "
                                 "by itself)")
    overwrite: bool = option(False, "start a new run in place of the one in --output_dir "
                                    "that was made with other settings")
    progress: bool = option(True, "show a progress bar")
