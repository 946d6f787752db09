"""BERT's optimizer: Adam with decoupled weight decay (or LAMB), the linear warmup and
linear decay learning rate, global-norm clipping and gradient accumulation.

Keras 3's optimizers provide decoupled decay (`keras.optimizers.AdamW`),
`exclude_from_weight_decay`, `global_clipnorm` and `gradient_accumulation_steps`. Added
here: the schedule of google-research/bert's `optimization.py`; LAMB as You et al. (2019)
pretrain BERT with it (weight decay inside the trust ratio); and clipping of the summed
gradient under tf.distribute, where Keras's TF backend clips each replica's gradient
before the cross-replica sum.

The optimizers run on every Keras 3 backend; on TensorFlow they take the fast paths of
`keras_bert.model.tf_fast` (the fused Adam kernel, clipping after the cross-replica
sum). This module does not import TensorFlow itself.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.model import tf_fast

# Variables whose name contains one of these get no weight decay (LayerNorm gamma/beta
# and biases); defined with the task models, whose default `compile` uses it too.
from keras_bert.model.models import WEIGHT_DECAY_EXCLUDED
from keras_bert.training.options import OPTIMIZERS


@keras.saving.register_keras_serializable(package="keras_bert")
class LinearWarmupDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `peak_learning_rate`, then linear decay to zero.

    As google-research/bert and tf-models-official compute it: for update `t` (from 0),
    `peak * t / warmup_steps` while `t < warmup_steps`, else
    `peak * max(0, 1 - t / total_steps)` (the decay is measured from step 0, so it
    starts just below the peak).

    Keras evaluates a schedule at the optimizer's micro-step counter; with gradient
    accumulation over N micro-batches pass `gradient_accumulation_steps=N` so `t` counts
    updates.

    Args:
        peak_learning_rate: the rate at the end of warmup.
        warmup_steps: updates of linear warmup (0 for none).
        total_steps: the update at which the rate reaches zero.
        gradient_accumulation_steps: micro-batches per update.

    Example:

    >>> schedule = LinearWarmupDecay(1e-4, warmup_steps=10, total_steps=100)
    >>> [round(float(schedule(t)), 8) for t in (0, 5, 10, 55, 100, 200)]
    [0.0, 5e-05, 9e-05, 4.5e-05, 0.0, 0.0]
    """

    def __init__(self, peak_learning_rate: float, warmup_steps: int, total_steps: int,
                 gradient_accumulation_steps: int = 1):
        if total_steps < 1:
            raise ValueError(f"total_steps must be >= 1, got {total_steps}.")
        if not 0 <= warmup_steps <= total_steps:
            raise ValueError(f"warmup_steps must be in [0, total_steps={total_steps}], got "
                             f"{warmup_steps}.")
        if gradient_accumulation_steps < 1:
            raise ValueError("gradient_accumulation_steps must be >= 1, got "
                             f"{gradient_accumulation_steps}.")
        self.peak_learning_rate = float(peak_learning_rate)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.gradient_accumulation_steps = int(gradient_accumulation_steps)

    def __call__(self, step):
        # The step's own integer dtype (int64 on TensorFlow, int32 on JAX).
        update = ops.floor_divide(step, self.gradient_accumulation_steps)
        t = ops.cast(update, "float32")
        decayed = self.peak_learning_rate * ops.maximum(0.0, 1.0 - t / self.total_steps)
        if not self.warmup_steps:
            return decayed
        warmup = self.peak_learning_rate * t / self.warmup_steps
        return ops.where(t < self.warmup_steps, warmup, decayed)

    def get_config(self):
        return {"peak_learning_rate": self.peak_learning_rate,
                "warmup_steps": self.warmup_steps, "total_steps": self.total_steps,
                "gradient_accumulation_steps": self.gradient_accumulation_steps}


class _ClipSummedGradients:
    """Clips the cross-replica sum of the gradients to `global_clipnorm`.

    Keras's TF backend applies `global_clipnorm` to each replica's own gradient and sums
    the clipped gradients afterwards, which bounds per-replica norms instead of the
    norm of the batch's gradient. Clipping after the sum makes N replicas compute what
    one device computes (with gradient accumulation: the averaged micro-batch
    gradients, as on one device).
    """

    def _clip_gradients(self, grads):
        if self.global_clipnorm and tf_fast.ENABLED:
            return grads  # done in _backend_update_step, after the cross-replica sum
        # JAX and PyTorch compute one gradient of the whole batch (under
        # keras.distribution too): Keras's own clipping is the summed gradient's.
        return super()._clip_gradients(grads)

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if not (self.global_clipnorm and tf_fast.ENABLED):
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        tf_fast.clip_summed_and_apply(self, grads, trainable_variables, learning_rate)


@keras.saving.register_keras_serializable(package="keras_bert")
class AdamW(_ClipSummedGradients, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` whose `global_clipnorm` clips the gradient summed over
    replicas (see `_ClipSummedGradients`); identical to it on one device.

    On the TensorFlow backend each variable's Adam update is TensorFlow's fused
    `ResourceApplyAdam` kernel (the same arithmetic as Keras's `Adam.update_step`, in
    one op instead of about ten) when the variable is a plain TF variable; under a
    multi-replica strategy, with `amsgrad`, and on JAX and PyTorch it is Keras's update.
    Sparse gradients (embedding lookups, TensorFlow only) are summed into a dense
    gradient first: Keras's Adam treats repeated rows of an `IndexedSlices` as separate
    gradients in its second moment, which is not Adam.

    Example:

    >>> w = keras.Variable([1.0, 1.0])
    >>> AdamW(learning_rate=0.1, weight_decay=0.0, global_clipnorm=1.0).apply(
    ...     [keras.ops.convert_to_tensor([3.0, 4.0])], [w])
    >>> [round(float(x), 3) for x in w.numpy()]
    [0.9, 0.9]
    """

    def update_step(self, gradient, variable, learning_rate):
        if not tf_fast.ENABLED:
            return super().update_step(gradient, variable, learning_rate)
        gradient = tf_fast.dense_gradient(gradient)
        if not tf_fast.fused_adam_update(self, gradient, variable, learning_rate):
            return super().update_step(gradient, variable, learning_rate)


@keras.saving.register_keras_serializable(package="keras_bert")
class Lamb(_ClipSummedGradients, keras.optimizers.Lamb):
    """LAMB as used to pretrain BERT with large batches (You et al., 2019, Algorithm 2).

    Differs from `keras.optimizers.Lamb` in two ways, both as in the paper and in the
    LAMB that tf-models-official pretrains with: the weight decay is part of the
    update whose norm sets the trust ratio (`r = m̂ / (√v̂ + ε) + λw`), and variables
    excluded from weight decay (`exclude_from_weight_decay`) are also excluded from the
    layer-wise adaptation (their trust ratio is 1).

    Example:

    >>> opt = Lamb(learning_rate=0.1, weight_decay=0.01)
    >>> w = keras.Variable([3.0, 4.0], name="kernel")
    >>> opt.apply([keras.ops.convert_to_tensor([0.5, 0.5])], [w])
    >>> [round(float(x), 4) for x in w.numpy()]  # moved by lr * ||w|| = 0.5 along r
    [2.6482, 3.6447]
    """

    def _apply_weight_decay(self, variables):
        # The decay is applied inside `update_step`, through the trust ratio.
        return

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        step = ops.cast(self.iterations + 1, variable.dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, (gradient - m) * (1 - self.beta_1))
        self.assign_add(v, (ops.square(gradient) - v) * (1 - self.beta_2))
        m_hat = m / (1.0 - ops.power(ops.cast(self.beta_1, variable.dtype), step))
        v_hat = v / (1.0 - ops.power(ops.cast(self.beta_2, variable.dtype), step))
        update = m_hat / (ops.sqrt(v_hat) + self.epsilon)
        if self.weight_decay and self._use_weight_decay(variable):
            update = update + ops.cast(self.weight_decay, variable.dtype) * variable
            w_norm = ops.sqrt(ops.sum(ops.square(variable)))
            u_norm = ops.sqrt(ops.sum(ops.square(update)))
            ratio = ops.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0)
            update = ratio * update
        self.assign_sub(variable, lr * update)


def create_optimizer(learning_rate: float | keras.optimizers.schedules.LearningRateSchedule,
                     num_train_steps: int | None = None, num_warmup_steps: int = 0, *,
                     optimizer: str = "adamw", weight_decay: float = 0.01,
                     beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-6,
                     global_clipnorm: float | None = 1.0,
                     gradient_accumulation_steps: int = 1) -> keras.optimizers.Optimizer:
    """The optimizer BERT is pretrained with (paper Appendix A.2).

    `AdamW`: Adam with decoupled weight decay 0.01 that skips LayerNorm and bias variables
    (`WEIGHT_DECAY_EXCLUDED`), β1 0.9, β2 0.999, ε 1e-6, gradients clipped to global
    norm 1.0, and the `LinearWarmupDecay` schedule; `optimizer="lamb"` gives `Lamb`
    with the same exclusions. One difference from the TF1 original remains: Keras's
    Adam uses bias correction, which the original's `AdamWeightDecayOptimizer` left out.

    Args:
        learning_rate: the peak rate, or a ready schedule.
        num_train_steps: updates until the rate reaches zero; None keeps
            `learning_rate` constant (no schedule, no warmup).
        num_warmup_steps: updates of linear warmup.
        optimizer: "adamw" or "lamb".
        weight_decay: the decoupled weight decay rate λ.
        beta_1, beta_2, epsilon: Adam's moment decay rates and epsilon.
        global_clipnorm: clip the gradients to this global norm; None for no clipping.
        gradient_accumulation_steps: average the gradients of this many micro-batches
            before each update (Keras's built-in accumulation); 1 for none.

    Example:

    >>> opt = create_optimizer(1e-4, num_train_steps=1000, num_warmup_steps=100)
    >>> type(opt).__name__, opt.weight_decay, opt.epsilon, opt.global_clipnorm
    ('AdamW', 0.01, 1e-06, 1.0)
    >>> create_optimizer(1e-3, 1000, optimizer="lamb").__class__.__name__
    'Lamb'
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}.")
    if gradient_accumulation_steps < 1:
        raise ValueError("gradient_accumulation_steps must be >= 1, got "
                         f"{gradient_accumulation_steps}.")
    if isinstance(learning_rate, keras.optimizers.schedules.LearningRateSchedule):
        schedule = learning_rate
    elif num_train_steps is None:
        if num_warmup_steps:
            raise ValueError("num_warmup_steps needs num_train_steps (the schedule's end).")
        schedule = float(learning_rate)
    else:
        schedule = LinearWarmupDecay(learning_rate, num_warmup_steps, num_train_steps,
                                     gradient_accumulation_steps)
    cls = AdamW if optimizer == "adamw" else Lamb
    opt = cls(learning_rate=schedule, weight_decay=weight_decay, beta_1=beta_1,
              beta_2=beta_2, epsilon=epsilon, global_clipnorm=global_clipnorm,
              gradient_accumulation_steps=(gradient_accumulation_steps
                                           if gradient_accumulation_steps > 1 else None))
    opt.exclude_from_weight_decay(var_names=list(WEIGHT_DECAY_EXCLUDED))
    return opt
