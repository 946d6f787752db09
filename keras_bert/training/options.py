"""`PretrainingOptions`: how to pretrain (batch, steps, learning rate, optimizer,
checkpoint and logging intervals, precision, seed), each checked when it is made."""

from __future__ import annotations

import dataclasses

from keras_bert.core.checks import OptionChecks
from keras_bert.core.precision import TRAINING_PRECISIONS

OPTIMIZERS = ("adamw", "lamb")
# Strategy names (keras_bert.training.distribute makes them tf.distribute strategies).
STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """How to pretrain; the defaults are the paper's (Appendix A.2) where it gives one.

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

    train_batch_size: int = 32
    max_seq_length: int | None = None
    max_predictions_per_seq: int | None = None
    num_train_steps: int = 100_000
    num_warmup_steps: int = 10_000
    learning_rate: float = 1e-4
    optimizer: str = "adamw"
    weight_decay: float = 0.01
    gradient_accumulation_steps: int = 1
    steps_per_execution: int | None = None
    save_checkpoints_steps: int = 1000
    keep_checkpoints: int = 3
    log_steps: int = 100
    jit_compile: bool | None = None
    mixed_precision: str = "auto"
    seed: int = 12345
    shuffle_buffer_size: int = 10_000
    next_sentence: bool | None = None

    def __post_init__(self):
        checks = OptionChecks("pretraining options", self)
        checks.at_least(0, "weight_decay")
        checks.at_least(1, "train_batch_size", "num_train_steps", "gradient_accumulation_steps",
                        "save_checkpoints_steps", "keep_checkpoints", "log_steps",
                        "shuffle_buffer_size", "max_seq_length", "max_predictions_per_seq",
                        "steps_per_execution")
        checks.check(lambda: 0 <= self.num_warmup_steps <= self.num_train_steps,
                     "num_warmup_steps", f"must be in [0, num_train_steps="
                     f"{self.num_train_steps}], got {self.num_warmup_steps}",
                     needs=("num_train_steps",))
        checks.greater_than(0, "learning_rate")
        checks.one_of("optimizer", OPTIMIZERS)
        checks.one_of("mixed_precision", TRAINING_PRECISIONS)
        checks.raise_if_any()

    def micro_steps(self, updates: int) -> int:
        """Training steps (micro-batches) for a number of optimizer updates."""
        return updates * self.gradient_accumulation_steps
