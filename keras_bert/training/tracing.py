"""How often, and for how long, Keras traces a model's step functions (`TraceClock`).

Keras runs `train_step`, `test_step` and `predict_step` as Python only while it traces
them into a `tf.function` graph; every later step runs the graph. Timing the Python body
of those methods therefore measures tracing, and counting its calls counts the traces:
with keras_bert's input pipelines (batch and sequence axes of unknown size) a `fit`
traces its step once, whatever the batches' lengths.

Keras's `predict` calls its function on each batch's tensors, not on the dataset's
iterator, so it would trace its step for the first batch's shape and again, relaxed,
for the next shape; `trace_predict_once` traces it on the dataset's own shapes first.
"""

from __future__ import annotations

import functools
import time

import keras
import tensorflow as tf

STEP_METHODS = ("train_step", "test_step", "predict_step")


class TraceClock:
    """Counts and times the traces of the step functions of the models it watches.

    Example:

    >>> import numpy as np
    >>> clock = TraceClock()
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> clock.watch(model)
    >>> _ = model.predict(np.zeros((5, 2)), batch_size=2, verbose=0)
    >>> clock.traces["predict_step"]  # batches of 2, then a short one: traced again
    2
    >>> clock.unwatch(model)
    """

    def __init__(self):
        self.traces = dict.fromkeys(STEP_METHODS, 0)
        self.seconds = dict.fromkeys(STEP_METHODS, 0.0)

    def watch(self, model: keras.Model) -> None:
        """Wraps `model`'s step methods (on the instance; the class is untouched)."""
        for name in STEP_METHODS:
            setattr(model, name, self._timed(name, getattr(model, name)))

    @staticmethod
    def unwatch(model: keras.Model) -> None:
        """Removes the wrappers `watch` put on `model`."""
        for name in STEP_METHODS:
            if name in vars(model):
                object.__delattr__(model, name)

    def _timed(self, name: str, step):
        @functools.wraps(step)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return step(*args, **kwargs)
            finally:
                self.traces[name] += 1
                self.seconds[name] += time.perf_counter() - start

        return timed

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())

    def summary(self) -> dict:
        """{"train_step": {"traces": n, "seconds": s}, ...} for the steps traced at least
        once, seconds rounded to 0.01."""
        return {name: {"traces": self.traces[name], "seconds": round(self.seconds[name], 2)}
                for name in STEP_METHODS if self.traces[name]}


def trace_predict_once(model: keras.Model, dataset: tf.data.Dataset) -> None:
    """Traces `model`'s predict function on `dataset`'s element spec (axes of unknown
    size stay unknown), so that `model.predict(dataset)` runs every batch, whatever its
    size and length, on that one trace; a model whose predict function exists already
    (traced by an earlier `predict`) is left as it is.

    Example:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> clock = TraceClock()
    >>> clock.watch(model)
    >>> dataset = tf.data.Dataset.from_tensor_slices(np.zeros((5, 2), "float32")).batch(2)
    >>> trace_predict_once(model, dataset)
    >>> _ = model.predict(dataset, verbose=0)
    >>> clock.traces["predict_step"]
    1
    """
    if (model.predict_function is not None or model.run_eagerly
            or keras.backend.backend() != "tensorflow"):  # JAX compiles per shape
        return
    model.make_predict_function()
    if model.steps_per_execution == 1:  # else Keras calls it on a list of batches
        model.predict_function.get_concrete_function([dataset.element_spec])
