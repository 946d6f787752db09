"""The TensorFlow backend's fast paths of the model stage, all in this one module.

The layers (`layers.attention`, `layers.transformer`, `layers.heads`,
`layers.dropout`), the encoder's eager call and the MLM loss are written in `keras.ops`
and run on every Keras 3 backend (TensorFlow, JAX, PyTorch). On the TensorFlow backend
(`ENABLED`: `keras.backend.backend() == "tensorflow"`) they call the functions here
instead, which compute the same values with the TensorFlow ops that its CPU kernels and
grappler run fastest (`benchmarks/pretraining_throughput.py`; profiled once with
`git show 9273a48:benchmarks/profile_step.py`):

- `dense_rows`: a projection as one 2-D MatMul and a BiasAdd on [batch * seq, in] rows
  (a batched einsum runs as BatchMatMulV2, slower, and a plain add is not fused);
- `gelu`, `gelu_tanh`: forms grappler fuses into the preceding MatMul, with cheaper
  eager forms (and a bfloat16 gradient that avoids the slow Erfc kernel);
- `keep_mask`, `bert_dropout`: dropout from 16 random bits an element, not a float;
- `self_attention`, `feed_forward`, `masked_lm_logits`: the layers' calls on those rows,
  with the softmax and GELU ops named in profiles;
- `eager_inference`, `forget_compiled_call`: the encoder's eager inference call as one
  `tf.function`, and dropping it once the encoder's weights are replaced;
- `sum_over_replicas`: the cross-replica sum of a `tf.distribute` strategy;
- `dense_gradient`, `fused_adam_update`, `clip_summed_and_apply`: the optimizer's
  (`keras_bert.training.optimization`) embedding gradients summed before Adam, Adam as
  TensorFlow's fused `ResourceApplyAdam` kernel, and `global_clipnorm` applied to the
  gradient summed over a `tf.distribute` strategy's replicas.

The functions that read kernels serve float layers only (LoRA included: a LoRA layer's
`kernel` is its base kernel plus the scaled low-rank product). A layer quantized by
`Model.quantize` keeps its raw int8/int4 kernel and its scale apart, so the layers'
calls leave these paths for their `keras.ops` form, which calls a quantized sublayer
itself (`layers.attention.quantized`).

Nothing else in the model stage imports TensorFlow, and this module imports it only on
the TensorFlow backend, so `import keras_bert.model` under JAX or PyTorch never loads it.
"""

from __future__ import annotations

import weakref

import keras
import numpy as np

# The one switch: every fast path below runs only on the TensorFlow backend.
ENABLED = keras.backend.backend() == "tensorflow"

if ENABLED:
    import tensorflow as tf

_BITS = 16
_LEVELS = 1 << _BITS
_SQRT_HALF = 0.7071067811865476
_TANH_GELU_A = 1.5957691216057308  # 2 * sqrt(2 / pi)
_TANH_GELU_B = _TANH_GELU_A * 0.044715

# encoder -> its compiled inference call (kept outside the model so that SavedModel
# export and Keras tracking never see it).
_COMPILED_CALLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def dense_rows(rows, kernel, bias, dtype, scale=None):
    """`rows @ kernel + bias` as one 2-D MatMul and a BiasAdd.

    `rows` is [n, in]; `kernel` is any Dense/EinsumDense kernel whose leading axes
    multiply to `in` (it is reshaped to [in, out]). This is the fastest form for
    TF's CPU kernels, eager and graph alike (batched einsums run as BatchMatMulV2, which
    is slower, and a plain add is not fused with the MatMul). `scale`, if given,
    multiplies kernel and bias (cheaper than scaling the product).

    Example:

    >>> y = dense_rows(tf.ones((2, 4)), tf.ones((4, 2, 3)), tf.zeros((2, 3)), "float32")
    >>> tuple(y.shape), float(y[0, 0])
    ((2, 6), 4.0)
    """
    kernel = tf.cast(kernel, dtype)
    kernel = tf.reshape(kernel, (rows.shape[-1], -1))
    bias = tf.reshape(tf.cast(bias, dtype), (-1,))
    if scale is not None:
        kernel, bias = kernel * scale, bias * scale
    return tf.nn.bias_add(tf.matmul(rows, kernel), bias)


def gelu(x):
    """Exact GELU, x * Phi(x), in TensorFlow ops.

    Executed eagerly it takes 4 element-wise ops instead of `tf.nn.gelu`'s 5. In a
    graph it is 0.5 x (1 + erf(x / sqrt 2)), a pattern grappler fuses into the
    preceding MatMul (as it does `tf.nn.gelu`) and whose gradient is 2.6x faster than
    `tf.nn.gelu`'s in bfloat16 (that one goes through a slow bfloat16 Erfc kernel; a
    sixth of a mixed_bfloat16 training step, profiled once).

    Example:

    >>> round(float(gelu(tf.constant(1.0))), 6)
    0.841345
    """
    if tf.executing_eagerly():
        return (x * 0.5) * tf.math.erfc(x * -_SQRT_HALF)
    with tf.name_scope("gelu"):  # names its ops (and their gradients) in profiles
        return 0.5 * x * (1.0 + tf.math.erf(x * _SQRT_HALF))


def gelu_tanh(x):
    """The tanh approximation of GELU in TensorFlow ops.

    Executed eagerly it is written as x * sigmoid(2z), which equals
    0.5 x (1 + tanh(z)) and takes 6 element-wise ops instead of 8; in a graph it is
    `tf.nn.gelu(approximate=True)`, which grappler fuses into the preceding MatMul.

    Example:

    >>> round(float(gelu_tanh(tf.constant(1.0))), 6)
    0.841192
    """
    if tf.executing_eagerly():
        return x * tf.math.sigmoid(x * (_TANH_GELU_A + _TANH_GELU_B * tf.math.square(x)))
    return tf.nn.gelu(x, approximate=True)


def dropout_threshold(rate: float) -> int:
    """The 16-bit number below which an element is dropped.

    Example:

    >>> dropout_threshold(0.1), round(dropout_threshold(0.1) / 65536, 7)
    (6554, 0.1000061)
    """
    return min(_LEVELS - 1, max(1, round(rate * _LEVELS)))


def keep_mask(shape, rate: float, seed, dtype):
    """A [shape] tensor of 1 / (1 - rate) where an element is kept and 0 where dropped.

    `seed` is a shape-[2] integer tensor, as for `tf.random.stateless_uniform`. Half as
    many 32-bit Philox words as elements are drawn, each read as two 16-bit numbers: an
    element is dropped when its number is below `dropout_threshold(rate)`.

    Example:

    >>> m = keep_mask((1000,), 0.5, tf.constant([1, 2]), "float32")
    >>> sorted(set(m.numpy().tolist()))
    [0.0, 2.0]
    """
    size = tf.reduce_prod(shape)
    words = tf.random.stateless_uniform(((size + 1) // 2,), seed, minval=None, maxval=None,
                                        dtype=tf.uint32)
    numbers = tf.reshape(tf.bitcast(words, tf.uint16), (-1,))[:size]
    keep = tf.reshape(numbers >= tf.constant(dropout_threshold(rate), tf.uint16), shape)
    # A cast and a multiply: a third faster than selecting between two scalars.
    return tf.cast(keep, dtype) * tf.constant(1.0 / (1.0 - rate), dtype)


def bert_dropout(layer, inputs):
    """`BertDropout`'s training call (rate > 0, no `noise_shape`): `inputs` times
    `keep_mask`, seeded from the layer's `keras.random.SeedGenerator`."""
    if layer.rate >= 1:
        return tf.zeros_like(inputs)
    seed = layer.seed_generator.next()
    # XLA wants int32 stateless seeds; the generator's state may be int64 or uint32.
    seed = tf.cast(tf.math.floormod(tf.cast(seed, tf.int64), 2**31 - 1), tf.int32)
    return inputs * keep_mask(tf.shape(inputs), layer.rate, seed, inputs.dtype)


def self_attention(layer, x, bias, training=None, return_probs=False):
    """`BertSelfAttention.call`: the projections use the EinsumDense kernels as plain
    [H, H] matrices on the [batch * seq, H] rows (one MatMul + BiasAdd each); the
    1/sqrt(H/A) scale is folded into the query kernel and bias instead of scaling the
    scores."""
    dtype = layer.compute_dtype
    batch, seq = tf.shape(x)[0], tf.shape(x)[1]
    rows = tf.reshape(x, (-1, layer.query.kernel.shape[0]))

    def heads(projection, scale=None):
        y = dense_rows(rows, projection.kernel, projection.bias, dtype, scale)
        y = tf.reshape(y, (batch, seq, layer.num_heads, layer.head_size))
        return tf.transpose(y, (0, 2, 1, 3))            # [batch, A, seq, H/A]

    q = heads(layer.query, layer._scale)
    k, v = heads(layer.key), heads(layer.value)
    scores = tf.matmul(q, k, transpose_b=True)          # [batch, A, seq, seq]
    with tf.name_scope("softmax"):  # names its ops (and their gradients) in profiles
        probs = tf.nn.softmax(tf.cast(scores, "float32") + tf.cast(bias, "float32"))
        probs = tf.cast(probs, dtype)
    context = tf.matmul(layer.dropout(probs, training=training), v)
    context = tf.reshape(tf.transpose(context, (0, 2, 1, 3)),
                         (-1, layer.num_heads * layer.head_size))
    out = dense_rows(context, layer.output_dense.kernel, layer.output_dense.bias, dtype)
    out = tf.reshape(out, (batch, seq, out.shape[-1]))
    return (out, probs) if return_probs else out


def feed_forward(block, x, training=None):
    """`TransformerBlock`'s feed-forward network and its dropout on the [batch * seq, H]
    rows of `x` (MatMul + BiasAdd, like the attention), shaped back like `x`."""
    dtype = block.compute_dtype
    rows = tf.reshape(x, (-1, x.shape[-1]))
    h = block._activation(dense_rows(rows, block.intermediate.kernel,
                                     block.intermediate.bias, dtype))
    h = dense_rows(h, block.output_dense.kernel, block.output_dense.bias, dtype)
    return tf.reshape(block.output_dropout(h, training=training), tf.shape(x))


def masked_lm_logits(head, x):
    """`MaskedLMHead.call` after the gather: float32 logits [batch, P, vocab] of the
    gathered hidden states `x` [batch, P, H]."""
    batch, predictions = tf.shape(x)[0], tf.shape(x)[1]
    rows = tf.reshape(x, (-1, x.shape[-1]))
    dtype = head.compute_dtype
    rows = head.transform.activation(dense_rows(
        rows, head.transform.kernel, head.transform.bias, dtype))
    rows = head.layer_norm(rows)
    # The decoder reads the [vocab, H] table as it is (transpose_b): no transposed
    # copy of the table forward, nor of its gradient backward.
    table = tf.cast(head.embedding.embeddings, dtype)
    logits = tf.matmul(rows, table, transpose_b=True)
    logits = tf.nn.bias_add(tf.cast(logits, "float32"), tf.cast(head.output_bias, "float32"))
    return tf.reshape(logits, (batch, predictions, -1))


def eager_inference(encoder, inputs, input_names, call):
    """The encoder's outputs for `inputs` through one `tf.function` per encoder (traced
    once per input signature, `reduce_retracing`), or None where that does not apply:
    not executing eagerly, or `inputs` not a dict of exactly `input_names` holding numpy
    arrays or tensors. `call(encoder, inputs)` is the encoder's own inference call."""
    if not (tf.executing_eagerly() and isinstance(inputs, dict)
            and set(inputs) == set(input_names)
            and all(isinstance(v, (np.ndarray, tf.Tensor)) for v in inputs.values())):
        return None
    compiled = _COMPILED_CALLS.get(encoder)
    if compiled is None:
        model = weakref.ref(encoder)  # the cache must not keep the encoder alive
        compiled = tf.function(lambda x: call(model(), x), reduce_retracing=True,
                               autograph=False)
        _COMPILED_CALLS[encoder] = compiled
    return compiled({name: tf.convert_to_tensor(value) for name, value in inputs.items()})


def forget_compiled_call(encoder) -> None:
    """Drops `encoder`'s compiled inference call (`eager_inference`), if any: it was
    traced with the variables and code path of the weights it had then, so after
    `quantize` or `enable_lora` the next eager call traces anew."""
    _COMPILED_CALLS.pop(encoder, None)


def sum_over_replicas(value):
    """Sums `value` over the replicas of the current `tf.distribute` strategy; outside a
    replica context, or with one replica, it is `value` itself."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(tf.distribute.ReduceOp.SUM, tf.stop_gradient(value))


def dense_gradient(gradient):
    """An embedding lookup's `tf.IndexedSlices` gradient summed into a dense one (other
    gradients as they are). Its indices repeat, one slice per token; Keras's Adam
    updates the second moment with the sum of the squared slices, not the square of
    their sum, so a repeated row's step would not be Adam's."""
    if isinstance(gradient, tf.IndexedSlices):
        return tf.convert_to_tensor(gradient)
    return gradient


def _resource_handle(variable):
    """The resource handle of a plain (not distributed) TF variable, else None."""
    if isinstance(variable, keras.Variable):
        variable = variable.value
    if isinstance(variable, tf.distribute.DistributedValues):
        return None
    return getattr(variable, "handle", None)


def fused_adam_update(optimizer, gradient, variable, learning_rate) -> bool:
    """Adam's update of `variable` (Keras's `Adam.update_step` arithmetic) as one
    `ResourceApplyAdam` kernel; False, doing nothing, where that does not apply:
    `amsgrad`, or a variable or moment that is not a plain TF variable (a
    multi-replica strategy's)."""
    index = optimizer._get_variable_index(variable)
    handles = [_resource_handle(x) for x in (variable, optimizer._momentums[index],
                                             optimizer._velocities[index])]
    if optimizer.amsgrad or any(h is None for h in handles):
        return False
    dtype = variable.dtype
    step = tf.cast(optimizer.iterations + 1, dtype)
    beta_1, beta_2 = tf.cast(optimizer.beta_1, dtype), tf.cast(optimizer.beta_2, dtype)
    tf.raw_ops.ResourceApplyAdam(
        var=handles[0], m=handles[1], v=handles[2], beta1_power=tf.pow(beta_1, step),
        beta2_power=tf.pow(beta_2, step), lr=tf.cast(learning_rate, dtype),
        beta1=beta_1, beta2=beta_2, epsilon=tf.cast(optimizer.epsilon, dtype),
        grad=tf.cast(gradient, dtype))
    return True


def clip_summed_and_apply(optimizer, grads, trainable_variables, learning_rate) -> None:
    """The TF backend optimizer's update step with `global_clipnorm` applied to the
    gradients summed over the strategy's replicas (Keras's TF backend clips each
    replica's gradient before the sum)."""
    variables = [v.value if isinstance(v, keras.Variable) else v
                 for v in trainable_variables]
    summed = optimizer._all_reduce_sum_gradients(list(zip(grads, variables)))
    clipped, _ = tf.clip_by_global_norm([g for g, _ in summed], optimizer.global_clipnorm)
    tf.__internal__.distribute.interim.maybe_merge_call(
        optimizer._distributed_tf_update_step, optimizer._distribution_strategy,
        list(zip(clipped, variables)), learning_rate)
