"""Pretraining data creation: wall time, CPU time and peak memory (RSS and PSS of the
whole process tree) of `keras-bert create-pretraining-data` next to tf-models-official's
port of google-research/bert's script, on the same input and settings, one process each.

    python benchmarks/pretraining_data_throughput.py

Every row reads the corpus repeated `--repeat` times; keras_bert runs `--runs` times
(median); with apache-beam installed a `keras_bert-beam` row runs `--runner beam` on the
DirectRunner with two workers. (That peak memory stays flat as the corpus grows is
tests/data/test_pretraining_data.py's slow test.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
import psutil


def repeated_corpus(corpus: Path, times: int, directory: str) -> str:
    """The corpus `times` times in one file, a blank line between the copies."""
    path = os.path.join(directory, f"corpus-x{times}.txt")
    text = corpus.read_text(encoding="utf-8").rstrip("\n") + "\n\n"
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(times):
            f.write(text)
    return path


BEAM_DIRECT_2_WORKERS = ("--runner=DirectRunner --direct_num_workers=2 "
                         "--direct_running_mode=multi_processing")


def measure(command: list[str]) -> dict:
    """Wall time and peak memory of a command and all its child processes."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
           "PYTHONPATH": os.pathsep.join([harness.REPO, os.environ.get("PYTHONPATH", "")])}
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
    root = psutil.Process(process.pid)
    peak_rss = peak_pss = max_process = 0
    next_pss = start
    while process.poll() is None:
        now = time.perf_counter()
        sample_pss = now >= next_pss
        if sample_pss:
            next_pss = now + 0.5
        rss = pss = 0
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in tree:
            try:
                info = p.memory_full_info() if sample_pss else p.memory_info()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            rss += info.rss
            pss += info.pss if sample_pss else 0
            max_process = max(max_process, info.rss)
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        time.sleep(0.05)
    stdout, stderr = process.communicate()
    wall = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    if process.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{stderr[-3000:]}")
    mb = 1 / 2**20
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mb": round(peak_rss * mb),
            "peak_pss_mb": round(peak_pss * mb), "max_process_rss_mb": round(max_process * mb),
            "stdout": stdout, "stderr": stderr}


def run_reference(input_file: str, vocab: str, args, directory: str) -> dict:
    output = os.path.join(directory, "reference.tfrecord")
    result = measure([sys.executable, "-m", "official.nlp.data.create_pretraining_data",
                      f"--input_file={input_file}", f"--output_file={output}",
                      f"--vocab_file={vocab}", "--do_lower_case=True",
                      f"--max_seq_length={args.max_seq_length}",
                      f"--max_predictions_per_seq={args.max_predictions_per_seq}",
                      f"--dupe_factor={args.dupe_factor}", "--random_seed=12345"])
    written = re.search(r"Wrote (\d+) total instances", result.pop("stderr"))
    result.pop("stdout")
    result["instances"] = int(written.group(1)) if written else None
    os.remove(output)
    return result


def run_ours(input_file: str, vocab: str, args, directory: str,
             beam_options: str | None = None) -> dict:
    output = tempfile.mkdtemp(dir=directory)
    command = [sys.executable, "-m", "keras_bert", "create-pretraining-data",
               f"--input_file={input_file}", f"--output_dir={output}", f"--vocab_file={vocab}",
               f"--max_seq_length={args.max_seq_length}",
               f"--max_predictions_per_seq={args.max_predictions_per_seq}",
               f"--dupe_factor={args.dupe_factor}", "--random_seed=12345", "--noprogress"]
    if beam_options is not None:
        command += ["--runner=beam", f"--beam_options={beam_options}"]
    result = measure(command)
    result.pop("stdout"), result.pop("stderr")
    with open(os.path.join(output, "pretraining_data.json"), encoding="utf-8") as f:
        totals = json.load(f)["totals"]
    result["instances"] = totals["instances"]
    result["random_next"] = round(totals["random_next_instances"] / totals["instances"], 4)
    for path in Path(output).iterdir():
        path.unlink()
    os.rmdir(output)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path(harness.CORPUS))
    parser.add_argument("--vocab_file", default=None, help="default: MiniLM's uncased vocab")
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--skip_reference", action="store_true")
    parser.add_argument("--skip_beam", action="store_true",
                        help="no keras_bert-beam row (it is skipped anyway without apache-beam)")
    parser.add_argument("--runs", type=int, default=3,
                        help="runs of keras_bert; the comparison takes the median (default: 3)")
    args = parser.parse_args(argv)
    if not args.corpus.exists():
        print(f"no corpus at {args.corpus}; pass --corpus", file=sys.stderr)
        return 2
    vocab = args.vocab_file or os.path.join(harness.minilm(), "vocab.txt")
    settings = {"repeat": args.repeat, "max_seq_length": args.max_seq_length,
                "max_predictions_per_seq": args.max_predictions_per_seq,
                "dupe_factor": args.dupe_factor, "cpus": os.cpu_count(), "cpu_model": harness.cpu()}
    impls = ["tf-models-official"] * (not args.skip_reference) + ["keras_bert"]
    if not args.skip_beam and importlib.util.find_spec("apache_beam"):
        impls.append("keras_bert-beam")
    elif not args.skip_beam:
        harness.emit({"impl": "keras_bert-beam", "skipped": "apache-beam is not installed: "
                      "pip install -e \".[beam]\""})
    results = {}
    with tempfile.TemporaryDirectory() as directory:
        input_file = repeated_corpus(args.corpus, args.repeat, directory)
        for impl in impls:
            if impl == "tf-models-official":
                result = run_reference(input_file, vocab, args, directory)
            elif impl == "keras_bert-beam":
                result = {**run_ours(input_file, vocab, args, directory, BEAM_DIRECT_2_WORKERS),
                          "beam_options": BEAM_DIRECT_2_WORKERS}
            else:
                # --runs runs, counted by the median wall time: a run of a few seconds on
                # two cores is easily disturbed.
                attempts = []
                for attempt in range(args.runs):
                    attempts.append({**run_ours(input_file, vocab, args, directory),
                                     "run": attempt + 1})
                    harness.emit({"impl": impl, **attempts[-1]})
                result = {**sorted(attempts, key=lambda r: r["wall_s"])[len(attempts) // 2],
                          "run": f"median of {args.runs}"}
            results[impl] = record = {
                "impl": impl, "corpus_mb": round(os.path.getsize(input_file) / 1e6, 2),
                **settings, **result}
            harness.emit(record)
    ours, reference = results["keras_bert"], results.get("tf-models-official")
    summary = {"comparison": f"corpus x{args.repeat}", "cpu_model": settings["cpu_model"],
               "cpus": settings["cpus"], "keras_bert_wall_s": ours["wall_s"],
               "keras_bert_cpu_s": ours["cpu_s"]}
    beam = results.get("keras_bert-beam")
    if beam:
        summary.update(beam_wall_s=beam["wall_s"], beam_cpu_s=beam["cpu_s"],
                       beam_vs_local=round(beam["wall_s"] / ours["wall_s"], 1),
                       beam_same_instances=beam["instances"] == ours["instances"])
    if reference:
        summary.update(reference_wall_s=reference["wall_s"], reference_cpu_s=reference["cpu_s"],
                       speedup=round(reference["wall_s"] / ours["wall_s"], 1),
                       cpu_ratio=round(reference["cpu_s"] / ours["cpu_s"], 1),
                       reference_peak_rss_mb=reference["peak_rss_mb"],
                       keras_bert_peak_rss_mb=ours["peak_rss_mb"],
                       reference_peak_pss_mb=reference["peak_pss_mb"],
                       keras_bert_peak_pss_mb=ours["peak_pss_mb"])
    harness.emit(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
