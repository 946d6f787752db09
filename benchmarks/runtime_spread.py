"""How far apart two runtimes' outputs are in the tests that compare them, per CPU kind.

The tests that compare two runtimes (LiteRT/XNNPACK and ONNX Runtime against
TensorFlow, XLA against TensorFlow's own kernels, JAX and torch against TensorFlow or
the Hugging Face reference) assert closeness with `np.testing.assert_allclose` or a
threshold on a difference. This script runs exactly those tests, with their own
fixtures, once per CPU setting below, and records every comparison they make: the
largest absolute difference, the largest relative one and the scale of the values
(this file also serves as the pytest plugin that records them: `-p runtime_spread`).

CPU settings: TensorFlow's oneDNN kernels (and the oneDNN sgemm that its Eigen
contractions call even with TF_ENABLE_ONEDNN_OPTS=0) obey ONEDNN_MAX_CPU_ISA, so a
capable CPU can run the code paths of an older one; it cannot run a newer one's (on a
CPU without AMX, AVX512_CORE_AMX is the CPU's own best ISA, as DEFAULT is).
TF_ENABLE_ONEDNN_OPTS=0 is what TensorFlow does by itself on CPUs without AVX512_VNNI,
AVX512_BF16, AVX_VNNI or AMX (an AVX2-only EPYC, for one): its Eigen kernels. LiteRT's
XNNPACK picks its kernels from cpuinfo at run time and has no environment override, and
XLA:CPU, JAX and ONNX Runtime do not read ONEDNN_MAX_CPU_ISA: their side is this CPU's
in every row.

    python benchmarks/runtime_spread.py                  # all settings, JSON lines
    python benchmarks/runtime_spread.py --out benchmarks/results/runtime_spread_<cpu>.jsonl
    python benchmarks/runtime_spread.py --settings 1:DEFAULT,0:AVX2

Each output line is one (setting, comparison site) pair: the CPU, the setting, the test
file and line of the comparison, and the worst differences seen there; then one
"summary" line per site with the worst over all settings.
"""

import argparse
import collections
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time

import harness
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")
LOG = "RUNTIME_SPREAD_LOG"

# The tests that compare two runtimes' outputs (README: the default suite's).
TARGETS = [
    # XLA (jit_compile) against TensorFlow's kernels.
    "tests/model/test_encoder.py::test_jit_compile_matches_eager",
    "tests/model/test_encoder.py::test_gelu_matches_its_formula_eager_and_in_graphs",
    "tests/training/test_training.py::test_fused_adamw_update_equals_keras_adamw",
    "tests/training/test_training.py::test_train_step_compiles_with_xla_and_static_shapes",
    # LiteRT (XNNPACK) against the Keras model or the SavedModel.
    "tests/export/test_export_litert.py::test_serving_default_equals_keras",
    "tests/export/test_export_litert.py::test_classifier_serve_text_equals_keras_on_package_ids",
    "tests/export/test_export_litert.py::test_multiple_choice_serve_text_equals_keras",
    "tests/export/test_export_litert.py::test_squad_serve_text_equals_the_saved_models",
    "tests/export/test_export_litert.py::test_squad_v2_and_scores_that_tie_in_float32",
    "tests/export/test_litert_odd_inputs.py",
    "tests/tasks/test_multiple_choice_blank_endings.py::test_saved_model_serve_text_follows_the_rule",
    "tests/tasks/test_multiple_choice_blank_endings.py::test_litert_serve_text_follows_the_rule",
    "tests/checkpoints/test_keras_hub_presets.py::"
    "test_export_serves_a_keras_hub_classifier_preset_on_raw_text",
    # ONNX Runtime against the Keras model.
    "tests/export/test_export_onnx.py",
    # JAX / torch against TensorFlow and the Hugging Face reference.
    "tests/model/test_backends.py::test_keras_files_move_between_tensorflow_and_jax",
    "tests/model/test_backends.py::test_minilm_loads_without_tensorflow_and_matches_hugging_face",
    # The SavedModel's graph against the Keras model (both TensorFlow).
    "tests/export/test_export_sources.py::test_cli_exports_an_earlier_step",
    "tests/export/test_export_sources.py::test_a_vocab_with_a_byte_order_mark_reads_as_the_plain_one",
]

SETTINGS = ["1:DEFAULT", "1:AVX512_CORE_AMX", "1:AVX512_CORE_BF16", "1:AVX512_CORE_VNNI",
            "1:AVX512_CORE", "1:AVX2", "0:DEFAULT", "0:AVX2"]


# --- the plugin: records what each comparison in a test saw ------------------------------


def _record(entry):
    path = os.environ.get(LOG)
    if not path:
        return
    entry["test"] = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def _site(depth=2):
    """file:line of the first caller in tests/."""
    for frame in inspect.stack()[depth:]:
        if os.path.abspath(frame.filename).startswith(TESTS + os.sep):
            return f"{os.path.relpath(frame.filename, REPO)}:{frame.lineno}"
    return "?"


def _spread(actual, desired):
    a = np.asarray(actual, dtype=np.float64)
    d = np.asarray(desired, dtype=np.float64)
    a, d = np.broadcast_arrays(a, d)
    finite = np.isfinite(a) & np.isfinite(d)
    diff = np.abs(a - d)[finite]
    scale = np.abs(d)[finite]
    if diff.size == 0:
        return 0.0, 0.0, 0.0
    rel = diff / np.maximum(scale, np.finfo(np.float32).tiny)
    return float(diff.max()), float(rel[diff > 0].max() if (diff > 0).any() else 0.0), \
        float(scale.max())


def pytest_configure(config):
    original = np.testing.assert_allclose

    def recording_assert_allclose(actual, desired, rtol=1e-7, atol=0, *args, **kwargs):
        try:
            if np.asarray(desired).dtype.kind in "fc" or np.asarray(actual).dtype.kind in "fc":
                max_abs, max_rel, scale = _spread(actual, desired)
                _record({"site": _site(), "max_abs": max_abs, "max_rel": max_rel,
                         "scale": scale, "atol": atol, "rtol": rtol})
        except Exception as e:  # recording must never change a test's outcome
            _record({"site": _site(), "error": repr(e)})
        return original(actual, desired, rtol, atol, *args, **kwargs)

    np.testing.assert_allclose = recording_assert_allclose


def pytest_runtest_setup(item):
    # tests/model/test_backends.py compares in its child processes and returns the differences.
    module = getattr(item, "module", None)
    run = getattr(module, "run_without_tensorflow", None)
    if run is None or getattr(run, "_recording", False):
        return

    def recording_run(*args, **kwargs):
        result = run(*args, **kwargs)
        for kind, value in (result.get("diffs") or {}).items():
            values = value if isinstance(value, (list, tuple)) else [value]
            _record({"site": _site() + f" [{kind}]", "max_abs": float(max(values)),
                     "max_rel": None, "scale": None, "atol": None, "rtol": None})
        return result

    recording_run._recording = True
    module.run_without_tensorflow = recording_run


# --- the driver ---------------------------------------------------------------------------


def run_setting(setting, targets, workers):
    opts, isa = setting.split(":")
    with tempfile.TemporaryDirectory(prefix="runtime_spread_") as tmp:
        log = os.path.join(tmp, "log.jsonl")
        env = {**os.environ, LOG: log, "TF_ENABLE_ONEDNN_OPTS": opts,
               "TF_CPP_MIN_LOG_LEVEL": "2",
               "PYTHONPATH": os.pathsep.join(filter(None, [os.path.dirname(__file__),
                                                           os.environ.get("PYTHONPATH")]))}
        env.pop("ONEDNN_MAX_CPU_ISA", None)
        if isa != "DEFAULT":
            env["ONEDNN_MAX_CPU_ISA"] = isa
        command = [sys.executable, "-m", "pytest", "-q", "-p", "runtime_spread", "-p",
                   "no:randomly", *targets]
        if workers > 1:
            command += ["-n", str(workers), "--dist", "loadfile"]
        start = time.time()
        proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        seconds = time.time() - start
        entries = []
        if os.path.exists(log):
            with open(log) as f:
                entries = [json.loads(line) for line in f]
    out = proc.stdout.strip().splitlines()
    failed = [line.split(" - ")[0][len("FAILED "):] for line in out if line.startswith("FAILED ")]
    return entries, {"returncode": proc.returncode, "seconds": round(seconds, 1),
                     "pytest": out[-1] if out else "", "failed": failed}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", default=",".join(SETTINGS),
                        help="comma-separated TF_ENABLE_ONEDNN_OPTS:ONEDNN_MAX_CPU_ISA pairs")
    parser.add_argument("--targets", nargs="*", default=TARGETS, help="pytest node ids")
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers")
    parser.add_argument("--out", help="also write the JSON lines to this file")
    parser.add_argument("--append", action="store_true",
                        help="keep the runs already in --out (their settings count in the "
                             "summary) and add these settings' runs")
    args = parser.parse_args(argv)
    cpu = harness.cpu()
    lines, worst = [], collections.defaultdict(dict)

    def emit(entry):
        text = json.dumps(entry)
        print(text, flush=True)
        lines.append(text)

    def account(row, setting):
        w = worst[row["site"]]
        if row["max_abs"] >= w.get("max_abs", -1.0):
            w.update(max_abs=row["max_abs"], at=setting)
        w["max_rel"] = max(w.get("max_rel", 0.0), row["max_rel"])
        w["scale"] = max(w.get("scale", 0.0), row["scale"])
        w["atol"], w["rtol"] = row["atol"], row["rtol"]

    if args.append and args.out and os.path.exists(args.out):
        with open(args.out) as f:
            for line in f:
                row = json.loads(line)
                if row["kind"] in ("run", "site"):
                    lines.append(line.strip())
                if row["kind"] == "site":
                    account(row, f'{row["onednn_opts"]}:{row["onednn_max_cpu_isa"]}')

    for setting in args.settings.split(","):
        entries, info = run_setting(setting, args.targets, args.workers)
        opts, isa = setting.split(":")
        emit({"kind": "run", "cpu": cpu, "onednn_opts": opts, "onednn_max_cpu_isa": isa,
              **info})
        by_site = collections.defaultdict(list)
        for e in entries:
            if "error" not in e:
                by_site[e["site"]].append(e)
        for site, es in sorted(by_site.items()):
            row = {"kind": "site", "cpu": cpu, "onednn_opts": opts, "onednn_max_cpu_isa": isa,
                   "site": site, "tests": sorted({e["test"] for e in es}), "calls": len(es),
                   "max_abs": max(e["max_abs"] for e in es),
                   "max_rel": max((e["max_rel"] or 0.0) for e in es),
                   "scale": max((e["scale"] or 0.0) for e in es),
                   "atol": es[0]["atol"], "rtol": es[0]["rtol"]}
            emit(row)
            account(row, setting)
    for site, w in sorted(worst.items()):
        emit({"kind": "summary", "cpu": cpu, "site": site, "worst_max_abs": w["max_abs"],
              "worst_at": w["at"], "worst_max_rel": w["max_rel"], "scale": w["scale"],
              "atol": w["atol"], "rtol": w["rtol"]})
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
