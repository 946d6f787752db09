"""Matching checkpoint arrays to model variables, for every format.

Every variable is matched by name and shape: a missing or mis-shaped variable raises an
error naming it and both shapes, and checkpoint variables that nothing used are reported
through the `keras_bert` logger (optimizer slots are counted, not listed). A file that
its library cannot parse becomes a `CheckpointError` that names it.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from keras_bert.checkpoints.names import Slot
from keras_bert.core.errors import CheckpointError, KerasBertError
from keras_bert.model.config import BertConfig

logger = logging.getLogger("keras_bert")

# Optimizer and bookkeeping variables found in Google's pretraining checkpoints and in
# TF2 object-based ones (optimizer slots, the optimizer's own variables, save_counter).
_OPTIMIZER_VARIABLE = re.compile(r"(/adam_[mv]$|/Adam(_\d+)?$|^global_step$|_power$"
                                 r"|/\.OPTIMIZER_SLOT/|^optimizer/|^save_counter/)")


def tensorflow_for(what: str):
    """The `tensorflow` module, to read or write `what` (TensorFlow's checkpoint formats:
    Google TF1, tf-models-official, `keras-bert pretrain`'s training checkpoints).

    Hugging Face and keras_bert checkpoints load without TensorFlow (on the JAX or
    PyTorch backend); where TensorFlow is not installed, these formats raise a
    `CheckpointError` that says so.
    """
    try:
        import tensorflow as tf
    except ImportError as e:
        raise CheckpointError(
            f"{what} needs TensorFlow (its checkpoint reader), which is not installed "
            f"here ({e}): pip install tensorflow (Keras can keep another backend), or "
            "convert the checkpoint where TensorFlow is to a Hugging Face or keras_bert "
            "one (`load_encoder` then `save_encoder`), which loads without it.") from e
    return tf


class NamedCheckpoint(NamedTuple):
    """A checkpoint whose variables are read by name (Google TF1 or Hugging Face)."""

    config: BertConfig
    read: Callable[[str], np.ndarray | None]
    available: set[str]
    source: str
    # Hugging Face stores dense kernels transposed.
    transpose_kernels: bool
    # The checkpoint's name of a slot; None: its Google name.
    names: Callable[[Slot], str] | None


def assign_slots(slots: list[Slot], read: Callable[[str], np.ndarray | None], source: str,
                 transpose_kernels: bool = False, names: Callable[[Slot], str] | None = None,
                 native_shapes: bool = False):
    """Assigns every slot from `read(name)`; raises on a missing or mis-shaped variable.

    Checkpoint arrays have the slot's Google shape, or with `native_shapes` the model
    variable's own shape (TF2 checkpoints store the same EinsumDense layouts). Shapes
    are checked before anything is assigned, so a failed load leaves the model as it
    was. Returns the set of checkpoint names that were used.
    """
    names = names or (lambda s: s.google_name)
    values, used = [], set()
    for slot in slots:
        key = names(slot)
        expected = tuple(slot.variable.shape) if native_shapes else tuple(slot.google_shape)
        array = read(key)
        if array is None:
            raise CheckpointError(f"{source}: variable {key!r} is missing (the model needs "
                                  f"it with shape {expected}).")
        if transpose_kernels and slot.hf_transpose:
            array = np.transpose(array)
        if tuple(array.shape) != expected:
            raise CheckpointError(
                f"{source}: variable {key!r} has shape {tuple(array.shape)} but the model "
                f"expects {expected}; does the config match the weights?")
        values.append(slot.from_google(np.asarray(array, dtype=np.float32)))
        used.add(key)
    for slot, value in zip(slots, values):
        slot.variable.assign(value.astype(slot.variable.dtype))
    return used


def report_unused(source: str, available: set[str], used: set[str], expected_extra=()):
    """Logs the checkpoint variables that were not used: optimizer ones counted, others
    listed (as a warning unless all of them start with one of `expected_extra`)."""
    unused = sorted(available - used)
    optimizer = [n for n in unused if _OPTIMIZER_VARIABLE.search(n)]
    others = [n for n in unused if n not in optimizer]
    if optimizer:
        logger.info("%s: skipped %d optimizer/bookkeeping variables (e.g. %s).", source,
                    len(optimizer), optimizer[0])
    if others:
        level = logging.INFO if all(n.startswith(tuple(expected_extra)) for n in others) \
            else logging.WARNING
        logger.log(level, "%s: %d checkpoint variables were not used by this model: %s",
                   source, len(others), ", ".join(others))
    return others


@contextlib.contextmanager
def unreadable(path: str):
    """Turns a library's failure to parse a checkpoint file (truncated, corrupt, not the
    format) into a `CheckpointError` that names the file; keras_bert's own errors (a
    field out of range, JSON that is not valid) pass as they are."""
    try:
        yield
    except KerasBertError:
        raise
    except Exception as e:  # safetensors, h5py and TF raise their own types
        if isinstance(e, (FileNotFoundError, PermissionError)):
            raise
        raise CheckpointError(f"{path} cannot be read ({type(e).__name__}: "
                              f"{' '.join(str(e).split())[:200]}); it may be truncated or "
                              "corrupt: download or save it again.") from e
