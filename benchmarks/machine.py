"""The machine a benchmark ran on: the CPU's /proc/cpuinfo fields, read once for all the
scripts in this directory (each prints them in its own format)."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def cpu_fields() -> dict[str, str]:
    """The first processor's /proc/cpuinfo fields ("model name", "cpu family", "model",
    "stepping", "flags", ...); empty where there is no /proc/cpuinfo."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor is enough
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def cpu_flags() -> set[str]:
    """The CPU's instruction-set flags (avx512f, avx512_bf16, amx_bf16, ...)."""
    return set(cpu_fields().get("flags", "").split())
