"""Sends SIGTERM or SIGINT to `keras-bert export` at many delays and reports, per trial,
a JSON line: the exit code, seconds from the signal to the exit, whether stderr held a
traceback or a dropped exception ("Exception ignored"), its line count, and whether the
output holds anything partial (a temporary, or a version without its saved_model.pb).

    python scripts/signal_probe.py --delays 0.3,1,2,3,4,6,8,12 --signals TERM,INT \
        --gc_trials 4 > probe.jsonl

`--gc_trials N` adds N runs in which the signal is sent from inside a garbage-collector
callback (the handler then runs inside it, where an exception is dropped), at a random
moment of the export. The model is a tiny random-weight SST-2 classifier (the plumbing
is under test, not the model). The last line sums the trials up.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

# Run as the child: the gc callback sends the signal from inside a collection.
GC_CHILD = """
import gc, os, signal, sys, time
from keras_bert.cli import entry_point
at = time.monotonic() + float(sys.argv[1])
signum = getattr(signal, sys.argv[2])
sent = []
def send_inside_gc(phase, info):
    if not sent and phase == "start" and time.monotonic() >= at:
        sent.append(time.monotonic())
        print(f"SENT {time.time()}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signum)
        for _ in range(10000):  # the handler runs here, inside the callback
            pass
gc.callbacks.append(send_inside_gc)
sys.argv[1:] = sys.argv[3:]
sys.exit(entry_point())
"""


def trial(run_dir: str, root: str, signame: str, delay: float, in_gc: bool) -> dict:
    out = tempfile.mkdtemp(dir=root)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TMPDIR": root}
    args = ["export", "--checkpoint", run_dir, "--output_dir", out, "--nowarmup", "--quiet"]
    if in_gc:
        command = [sys.executable, "-c", GC_CHILD, str(delay), f"SIG{signame}", *args]
    else:
        command = [sys.executable, "-m", "keras_bert", *args]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
    sent = None
    if not in_gc:
        time.sleep(delay)
        if process.poll() is None:
            process.send_signal(getattr(signal, f"SIG{signame}"))
            sent = time.monotonic()
    _, stderr = process.communicate(timeout=600)
    ended = time.monotonic()
    lines = [line for line in stderr.splitlines() if line.strip()]
    if in_gc:
        sent_lines = [line for line in lines if line.startswith("SENT ")]
        lines = [line for line in lines if not line.startswith("SENT ")]
        if sent_lines:
            sent = ended - (time.time() - float(sent_lines[0].split()[1]))
    partial = []
    for dirpath, dirnames, filenames in os.walk(out):
        for name in dirnames + filenames:
            if name.startswith("."):
                partial.append(os.path.join(dirpath, name))
    for model in os.listdir(out):
        for version in os.listdir(os.path.join(out, model)):
            path = os.path.join(out, model, version)
            if version.isdigit() and not os.path.isfile(os.path.join(path, "saved_model.pb")):
                partial.append(path)
    return {"signal": f"SIG{signame}", "delay_s": delay, "in_gc_callback": in_gc,
            "sent": sent is not None, "exit_code": process.returncode,
            "seconds_to_exit": None if sent is None else round(ended - sent, 2),
            "total_s": round(ended - started, 2), "stderr_lines": len(lines),
            "traceback": "Traceback" in stderr, "dropped": "Exception ignored" in stderr,
            "last_line": lines[-1] if lines else "", "partial": partial}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delays", default="0.3,1,2,3,4,6,8,12")
    parser.add_argument("--signals", default="TERM,INT")
    parser.add_argument("--gc_trials", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from export_support import tiny_sst2_run

    root = tempfile.mkdtemp(prefix="signal_probe_")
    run_dir = tiny_sst2_run(os.path.join(root, "run_sst2"))
    rng = random.Random(args.seed)
    plan = [(s, float(d), False) for s in args.signals.split(",")
            for d in args.delays.split(",")]
    plan += [(rng.choice(args.signals.split(",")), round(rng.uniform(4, 12), 1), True)
             for _ in range(args.gc_trials)]
    results = []
    for signame, delay, in_gc in plan:
        result = trial(run_dir, root, signame, delay, in_gc)
        results.append(result)
        print(json.dumps(result), flush=True)
    expected = {"SIGTERM": 143, "SIGINT": 130}
    sent = [r for r in results if r["sent"]]
    good = [r for r in sent if r["exit_code"] == expected[r["signal"]]
            and r["stderr_lines"] == 1 and not r["traceback"] and not r["dropped"]
            and r["seconds_to_exit"] <= 8 and not r["partial"]]
    print(json.dumps({"summary": True, "trials": len(results), "signalled": len(sent),
                      "clean": len(good),
                      "max_seconds_to_exit": max((r["seconds_to_exit"] for r in sent),
                                                 default=None),
                      "cpu": _cpu()}))


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + f", {os.cpu_count()} cores"
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
