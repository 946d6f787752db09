"""Claim: `BertTextEmbedder.encode` against sentence-transformers' `encode` (torch, same
threads), float32 on CPU: 2,000 held-out STS-B dev sentences (sentence1, then sentence2:
the first 2,000), batch 32, models loaded and warmed, timed round-robin in one process;
the ratio of keras_bert's seconds to theirs (goal <= 0.67), the max |diff| of the
embeddings; with avx512_bf16, keras_bert mixed_bfloat16's time and cosine to float32.

    python benchmarks/embedding_encode.py > benchmarks/results/embedding_encode_2cpu.jsonl
"""

import argparse
import csv
import os
import statistics

import numpy as np
from harness import GLUE, cpu_flags, emit, machine, minilm, round_robin, versions

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--sentences", type=int, default=2000)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--batch_size", type=int, default=32)
args = parser.parse_args()

with open(os.path.join(GLUE, "STS-B", "dev.tsv"), encoding="utf-8", newline="") as f:
    rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
texts = ([r["sentence1"] for r in rows] + [r["sentence2"] for r in rows])[:args.sentences]
threads = len(os.sched_getaffinity(0))

import keras_bert  # noqa: E402  (TensorFlow before torch, as the package runs)

path = minilm()
models = {"keras_bert_float32": keras_bert.BertTextEmbedder.from_preset(path)}
bfloat16 = "avx512_bf16" in cpu_flags() or "amx_bf16" in cpu_flags()
if bfloat16:
    models["keras_bert_mixed_bfloat16"] = keras_bert.BertTextEmbedder.from_preset(
        path, dtype="mixed_bfloat16")

import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

torch.set_num_threads(threads)
st = SentenceTransformer(path, device="cpu")
out = {}


encoders = {**{name: m.encode for name, m in models.items()},
            "sentence_transformers_float32": st.encode}
variants = {name: (lambda name=name, fn=fn: out.__setitem__(
    name, fn(texts, batch_size=args.batch_size))) for name, fn in encoders.items()}
times = round_robin(variants, rounds=args.rounds, warmup=1)
reference = out["sentence_transformers_float32"]
for name, seconds in times.items():
    row = {"variant": name, "sentences": len(texts), "batch_size": args.batch_size,
           "rounds_s": [round(s, 3) for s in seconds],
           "median_s": round(statistics.median(seconds), 3)}
    if name.startswith("keras_bert"):
        row["max_abs_diff_to_sentence_transformers"] = float(np.abs(out[name] - reference).max())
    if name == "keras_bert_mixed_bfloat16":
        a, b = out[name], out["keras_bert_float32"]
        cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        row.update(cosine_to_float32_min=float(cosine.min()),
                   cosine_to_float32_mean=float(cosine.mean()))
    emit(row)
ratio = statistics.median(times["keras_bert_float32"]) / statistics.median(
    times["sentence_transformers_float32"])
emit({"summary": "keras_bert float32 / sentence-transformers float32 seconds",
      "ratio": round(ratio, 3), "goal": 0.67, "met": ratio <= 0.67, "threads": threads,
      **machine(), **versions("tensorflow", "keras", "torch", "sentence-transformers")})
