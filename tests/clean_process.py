"""The script of a fresh process where keras_bert cannot be imported: it loads exported
SavedModels with tensorflow and tensorflow_text only and runs their signatures.

Run as `python -I SCRIPT JOBS_JSON OUT_NPZ REPO`: JOBS_JSON maps a key to (SavedModel
path, signature, input names), with the inputs in JOBS_JSON + ".npz" under
"key|name"; the outputs go to OUT_NPZ under "key|output" (a "tokenize" job calls the
preprocessor's `tokenize`: "key|values" and "key|splits"), and the last line printed is
{"blocked": ..., "keras_bert_modules": [...]}.
"""

import json
import os
import subprocess
import sys

import numpy as np
from conftest import REPO

# The start of every clean-process script: keras_bert cannot be imported (sys.argv[3] is
# the repository, taken off sys.path); `blocked` says the block held.
BLOCK_KERAS_BERT = r'''
import importlib.abc, json, os, sys

class _NoKerasBert(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "keras_bert" or name.startswith("keras_bert."):
            raise ImportError("keras_bert is not available in this process")

sys.meta_path.insert(0, _NoKerasBert())
repo = sys.argv[3]
sys.path = [p for p in sys.path if p and p != repo and not p.startswith(repo + '/')]
try:
    import keras_bert  # noqa: F401
    blocked = False
except ImportError:
    blocked = True
'''

CLEAN_PROCESS = BLOCK_KERAS_BERT + r'''
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

jobs = json.load(open(sys.argv[1]))
inputs = np.load(sys.argv[1] + ".npz", allow_pickle=True)
results = {}
loaded = {}
for key, (path, signature, names) in jobs.items():
    if path not in loaded:
        loaded[path] = tf.saved_model.load(path)
    obj = loaded[path]
    args = {n: tf.constant(inputs[key + "|" + n]) for n in names}
    if signature == "tokenize":
        ids = obj.tokenize(args["text"])
        results[key + "|values"] = ids.flat_values.numpy()
        results[key + "|splits"] = ids.row_splits.numpy()
        continue
    for name, value in obj.signatures[signature](**args).items():
        results[key + "|" + name] = value.numpy()
np.savez(sys.argv[2], **results)
print(json.dumps({"blocked": blocked,
                  "keras_bert_modules": sorted(m for m in sys.modules
                                               if m.startswith("keras_bert"))}))
'''


def run_clean_process(root, jobs: dict, arrays: dict, timeout: int = 300) -> tuple[dict, dict]:
    """Runs `jobs` (see the module docstring) in a fresh process in directory `root`;
    returns (its report, its outputs by "key|name")."""
    job_file = str(root / "jobs.json")
    with open(job_file, "w") as f:
        json.dump(jobs, f)
    np.savez(job_file + ".npz", **arrays)
    script = root / "clean_process.py"
    script.write_text(CLEAN_PROCESS)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-I", str(script), job_file, str(root / "out.npz"),
                           REPO], capture_output=True, text=True, cwd=root, env=env,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    with np.load(root / "out.npz", allow_pickle=True) as out:
        return report, dict(out)
