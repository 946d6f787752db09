"""How fast `keras-bert --help` and `keras-bert COMMAND --help` answer (whole processes,
median of --runs), beside a bare `import tensorflow`; the goal: at most 0.5 s.

    python benchmarks/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

import harness

GOAL_S = 0.5


def _seconds(argv: list[str], runs: int) -> list[float]:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    command = shutil.which("keras-bert")
    if command is None:
        sys.exit("keras-bert is not on PATH: pip install -e . first")
    from keras_bert.cli import COMMANDS

    rows = [["--help"]] + [[name, "--help"] for name in COMMANDS]
    medians = {}
    for row in rows:
        times = _seconds([command, *row], args.runs)
        medians[" ".join(row)] = statistics.median(times)
        harness.emit({"argv": " ".join(row), "median_s": round(statistics.median(times), 3),
                      "max_s": round(max(times), 3), "runs": args.runs})
    tf_times = _seconds([sys.executable, "-c", "import tensorflow"], max(3, args.runs // 2))
    slowest = max(medians.values())
    harness.emit({
        "summary": "cli_startup", "goal_s": GOAL_S,
        "keras_bert_help_median_s": round(medians["--help"], 3),
        "slowest_command_help_median_s": round(slowest, 3),
        "slowest_command": max(medians, key=medians.get),
        "import_tensorflow_median_s": round(statistics.median(tf_times), 3),
        "meets_goal": slowest <= GOAL_S, "cpu": harness.cpu()})


if __name__ == "__main__":
    main()
