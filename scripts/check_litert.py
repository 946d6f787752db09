"""Does a LiteRT export classify raw sentences as the float SavedModel does?

Given a fine-tuned classifier exported three times (`keras-bert export` as a SavedModel,
and with `--format litert` at `--quantize none` and `dynamic_int8`), this runs every
sentence of a GLUE-style TSV (`sentence<TAB>label` with a header, e.g. SST-2 rows the
model was not trained on) through each one's `serve_text` in a fresh process where
keras_bert cannot be imported: the SavedModel with tensorflow + tensorflow-text, the
`.tflite` files with tensorflow's LiteRT interpreter (`InterpreterWithCustomOps`) and tensorflow-text's LiteRT
kernels (`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`), one sentence per call
and the label names from the model card. Prints one JSON line: accuracy of each
against the gold labels, how often the LiteRT labels equal the SavedModel's, the
largest logit difference, and the file sizes against the SavedModel's variables.

    python scripts/check_litert.py --sentences /tmp/sst2/data/dev.tsv \
        --saved_model saved_models/sst2/1 --litert lite/sst2/2 --litert_int8 lite/sst2/1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

CLEAN = r'''
import importlib.abc, json, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "keras_bert":
            raise ImportError("keras_bert is not available here")
sys.meta_path.insert(0, _Block())
sys.path = [p for p in sys.path if p and not p.startswith(sys.argv[3])]
import numpy as np
import tensorflow as tf
import tensorflow_text
from tensorflow_text import tflite_registrar

kind, path = sys.argv[1].split("=", 1)
sentences = json.load(open(sys.argv[2]))
logits, labels = [], []
if kind == "saved_model":
    fn = tf.saved_model.load(path).signatures["serve_text"]
    for i in range(0, len(sentences), 32):
        out = fn(text=tf.constant(sentences[i:i + 32]))
        logits.extend(out["logits"].numpy().tolist())
        labels.extend(x.decode() for x in out["label"].numpy())
else:
    card = json.load(open(path + "/assets.extra/keras_bert.json"))
    from tensorflow.lite.python.interpreter import InterpreterWithCustomOps
    interpreter = InterpreterWithCustomOps(
        model_path=path + "/model.tflite",
        custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
    runner = interpreter.get_signature_runner("serve_text")
    for sentence in sentences:
        out = runner(text=np.array([sentence], dtype=object))
        logits.append(out["logits"][0].tolist())
        labels.append(card["label_names"][int(np.argmax(out["logits"][0]))])
print(json.dumps({"logits": logits, "labels": labels,
                  "keras_bert_loaded": any(m.startswith("keras_bert") for m in sys.modules)}))
'''


def _serve(kind: str, path: str, sentences_json: str, repo: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CLEAN, f"{kind}={path}", sentences_json, repo],
        capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if proc.returncode:
        sys.exit(f"{kind} {path} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out["keras_bert_loaded"]:
        sys.exit("keras_bert was importable in the clean process")
    return out


def _size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", required=True, help="TSV: sentence<TAB>label")
    parser.add_argument("--saved_model", required=True, help="the SavedModel VERSION dir")
    parser.add_argument("--litert", required=True, help="--quantize none VERSION dir")
    parser.add_argument("--litert_int8", required=True, help="--quantize dynamic_int8 dir")
    args = parser.parse_args()
    with open(args.sentences, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    sentences, gold = [r[0] for r in rows], [r[1] for r in rows]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(sentences, f)
    runs = {kind: _serve(kind.split(":")[0], path, f.name, repo) for kind, path in (
        ("saved_model", args.saved_model), ("litert:none", args.litert),
        ("litert:dynamic_int8", args.litert_int8))}
    os.unlink(f.name)
    reference = runs["saved_model"]
    base = np.array(reference["logits"])
    result = {"sentences": len(sentences)}
    for kind, run in runs.items():
        accuracy = float(np.mean([a == b for a, b in zip(run["labels"], gold)]))
        result[kind] = {"accuracy": round(accuracy, 4)}
        if kind != "saved_model":
            result[kind].update({
                "accuracy_minus_saved_model": round(
                    accuracy - result["saved_model"]["accuracy"], 4),
                "same_label_as_saved_model": round(float(np.mean(
                    [a == b for a, b in zip(run["labels"], reference["labels"])])), 4),
                "max_abs_logit_difference": float(np.max(np.abs(np.array(run["logits"])
                                                                 - base)))})
    variables = _size(os.path.join(args.saved_model, "variables"))
    result["sizes_bytes"] = {
        "saved_model_variables": variables,
        **{kind: os.path.getsize(os.path.join(path, "model.tflite")) for kind, path in (
            ("litert:none", args.litert), ("litert:dynamic_int8", args.litert_int8))}}
    result["int8_size_over_variables"] = round(
        result["sizes_bytes"]["litert:dynamic_int8"] / variables, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
