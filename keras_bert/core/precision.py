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
keras_bert.core.errors.ArgumentError: precision must be one of float32, mixed_bfloat16, got 'bf16'.
"""

from __future__ import annotations

import functools

from keras_bert.core.errors import ArgumentError

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


@functools.lru_cache(maxsize=None)
def cpu_bfloat16_instructions() -> tuple[str, ...] | None:
    """The CPU's native bfloat16 instruction sets among AVX512-BF16 and AMX-BF16 (from
    /proc/cpuinfo's flags), or None where /proc/cpuinfo cannot be read (not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line.partition(":")[2].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return None
    return tuple(name for name in ("avx512_bf16", "amx_bf16") if name in flags)


def bfloat16_cpu_note(precision: str, accelerated: bool = False) -> str | None:
    """One line to print when `precision` computes in bfloat16 on a CPU without native
    bfloat16 instructions (where it is emulated, and slower than float32); None when
    there is nothing to say: float32, an accelerator (`accelerated`), a CPU with
    AVX512-BF16 or AMX, or a CPU that cannot be inspected.

    Example:

    >>> bfloat16_cpu_note("float32") is None
    True
    """
    if precision != MIXED_BFLOAT16 or accelerated:
        return None
    native = cpu_bfloat16_instructions()
    if native is None or native:
        return None
    return ("mixed_bfloat16: this CPU has neither AVX512-BF16 nor AMX, so bfloat16 is "
            "emulated and slower than float32 here (float32 is the default).")
