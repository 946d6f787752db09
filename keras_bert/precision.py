"""Precision names: the Keras dtype policies keras_bert runs under, defined once for the
library and every command.

- `PRECISIONS`: what fine-tuning, evaluation, encoding and export take. float32, or
  bfloat16 compute with float32 variables (fast where the CPU has AVX512-BF16 or AMX);
  no loss scaling is needed, so it suits every stage that runs on CPUs and TPUs.
- `TRAINING_PRECISIONS`: what pretraining takes: those, plus "mixed_float16" (GPUs;
  Keras adds dynamic loss scaling) and "auto" (chosen from the strategy's devices).

Example:

>>> check_precision("mixed_bfloat16")
'mixed_bfloat16'
>>> check_precision("bf16")
Traceback (most recent call last):
...
keras_bert.errors.ArgumentError: precision must be one of float32, mixed_bfloat16, got 'bf16'.
"""

from __future__ import annotations

from keras_bert.errors import ArgumentError

FLOAT32 = "float32"
MIXED_BFLOAT16 = "mixed_bfloat16"
MIXED_FLOAT16 = "mixed_float16"
AUTO = "auto"

PRECISIONS = (FLOAT32, MIXED_BFLOAT16)
TRAINING_PRECISIONS = (AUTO, FLOAT32, MIXED_FLOAT16, MIXED_BFLOAT16)


def check_precision(name: str, allowed: tuple[str, ...] = PRECISIONS,
                    field: str = "precision") -> str:
    """Returns `name` if it is one of `allowed`; raises `ArgumentError` (naming `field`)
    otherwise."""
    if name not in allowed:
        raise ArgumentError(f"{field} must be one of {', '.join(allowed)}, got {name!r}.",
                            field=field)
    return name
