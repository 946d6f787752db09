"""Pretraining quality: BERT-mini (L4/H256/A4/I1024) pretrained from scratch on the
shared English corpus for a fixed step budget; masked-LM and next-sentence accuracy on
held-out instances along the way, and the curves as a PNG.

    python benchmarks/pretraining_quality.py                     # 2000 steps
    python benchmarks/pretraining_quality.py --steps 300 --eval_every 100

The corpus (../shared/data/corpus/docs-en.txt: one sentence a line, documents separated
by blank lines) is split by document: 1 in 20 documents is held out. A WordPiece vocab is
learned from the training part, both parts become masked-LM/NSP TFRecords (sequence 128,
20 predictions, dupe factor 5), and `keras_bert.training.Pretraining` trains with BERT's
optimizer (AdamW, warmup then linear decay). Every --eval_every steps a copy of the model
is evaluated on up to 2048 held-out instances. Prints one JSON line per evaluation and a
final summary line; writes quality.json and quality.png into --output_dir.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CORPUS = os.path.join(os.path.dirname(REPO), "shared", "data", "corpus", "docs-en.txt")
EVAL_BATCH = 64


def split_corpus(path: str, train_path: str, heldout_path: str) -> tuple[int, int]:
    """Writes 19 in 20 documents to `train_path`, the rest to `heldout_path`, by a hash of
    each document's text (stable across runs)."""
    with open(path, encoding="utf-8") as f:
        documents = [d.strip() for d in f.read().split("\n\n") if d.strip()]
    parts = {True: [], False: []}
    for document in documents:
        parts[hashlib.sha256(document.encode()).digest()[0] % 20 == 0].append(document)
    for target, docs in ((train_path, parts[False]), (heldout_path, parts[True])):
        with open(target, "w", encoding="utf-8") as f:
            f.write("\n\n".join(docs) + "\n")
    return len(parts[False]), len(parts[True])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=DEFAULT_CORPUS)
    parser.add_argument("--output_dir", default="/tmp/keras_bert_quality")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--eval_every", type=int, default=250)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=5e-4)
    parser.add_argument("--vocab_size", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args()
    if not os.path.isfile(args.corpus):
        raise SystemExit(f"No corpus at {args.corpus}; pass --corpus.")

    import keras
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import tensorflow as tf

    from keras_bert import BertConfig, BertPretrainer
    from keras_bert.data.options import PretrainingDataOptions
    from keras_bert.data.pretraining import create_pretraining_data
    from keras_bert.data.tfrecords import pretraining_dataset
    from keras_bert.text.vocab_learning import learn_vocab, write_vocab
    from keras_bert.training import Pretraining, PretrainingOptions, pretraining_losses

    out = args.output_dir
    os.makedirs(out, exist_ok=True)
    started = time.monotonic()
    train_txt, heldout_txt = os.path.join(out, "train.txt"), os.path.join(out, "heldout.txt")
    num_train_docs, num_heldout_docs = split_corpus(args.corpus, train_txt, heldout_txt)
    vocab = os.path.join(out, "vocab.txt")
    if not os.path.exists(vocab):
        write_vocab(learn_vocab(train_txt, args.vocab_size, progress=False), vocab)
    data_options = PretrainingDataOptions(max_seq_length=128, max_predictions_per_seq=20,
                                          dupe_factor=5, random_seed=args.seed)
    counts = {}
    for name, text in (("train", train_txt), ("heldout", heldout_txt)):
        summary = create_pretraining_data(text, os.path.join(out, "data", name), vocab,
                                          data_options, num_workers=1, progress=False)
        counts[name] = summary["totals"]["instances"]
    prepared = time.monotonic() - started

    config = BertConfig.from_preset("mini", vocab_size=args.vocab_size)
    options = PretrainingOptions(
        train_batch_size=args.batch, num_train_steps=args.steps,
        num_warmup_steps=max(1, args.steps // 10), learning_rate=args.learning_rate,
        save_checkpoints_steps=args.eval_every, log_steps=math.gcd(args.eval_every, 50),
        seed=args.seed)
    run = Pretraining(os.path.join(out, "data", "train", "*.tfrecord"),
                      os.path.join(out, "run"), config, options, vocab_file=vocab,
                      progress=False)
    heldout = pretraining_dataset(os.path.join(out, "data", "heldout", "*.tfrecord"),
                                  EVAL_BATCH, max_seq_length=128, max_predictions_per_seq=20,
                                  is_training=False, drop_remainder=False)
    heldout = heldout.map(run.model.split_features).cache()
    eval_steps = max(1, min(2048, counts["heldout"]) // EVAL_BATCH)
    evaluator = BertPretrainer.from_config(run.model.get_config())
    evaluator.compile(loss=pretraining_losses(), metrics="auto")
    curve = []

    def evaluate(step):
        evaluator.set_weights(run.model.get_weights())
        result = evaluator.evaluate(heldout.repeat(), steps=eval_steps, verbose=0,
                                    return_dict=True)
        point = {"step": step, **{f"heldout_{k}": round(float(v), 4) for k, v in result.items()}}
        curve.append(point)
        print(json.dumps(point), flush=True)

    class Evaluate(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = run.start_step + batch + 1
            if step % args.eval_every == 0 or step == run.total_steps:
                evaluate(step)

    if run.start_step == 0:
        evaluate(0)
    train_started = time.monotonic()
    final = run.fit(callbacks=[Evaluate()])
    train_seconds = time.monotonic() - train_started
    with open(os.path.join(out, "run", "train_log.jsonl"), encoding="utf-8") as f:
        train_log = [json.loads(line) for line in f]

    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    steps = [r["step"] for r in train_log]
    axes[0].plot(steps, [r["masked_lm_accuracy"] for r in train_log], label="MLM acc (train)")
    axes[0].plot([p["step"] for p in curve], [p["heldout_masked_lm_accuracy"] for p in curve],
                 "o-", label="MLM acc (held-out)")
    axes[0].plot(steps, [r["next_sentence_accuracy"] for r in train_log], label="NSP acc (train)")
    axes[0].plot([p["step"] for p in curve], [p["heldout_next_sentence_accuracy"] for p in curve],
                 "o-", label="NSP acc (held-out)")
    axes[0].set_xlabel("step")
    axes[0].set_ylabel("accuracy")
    axes[0].legend()
    axes[1].plot(steps, [r["masked_lm_loss"] for r in train_log], label="MLM loss (train)")
    axes[1].plot([p["step"] for p in curve], [p["heldout_masked_lm_loss"] for p in curve], "o-",
                 label="MLM loss (held-out)")
    axes[1].set_xlabel("step")
    axes[1].set_ylabel("loss")
    axes[1].legend()
    figure.suptitle(f"BERT-mini (L4/H256) on docs-en.txt, batch {args.batch}, "
                    f"{args.steps} steps")
    figure.tight_layout()
    plot = os.path.join(out, "quality.png")
    figure.savefig(plot, dpi=100)

    summary = {"summary": "pretraining_quality", "model": "L4/H256/A4/I1024",
               "corpus": args.corpus, "train_documents": num_train_docs,
               "heldout_documents": num_heldout_docs, "train_instances": counts["train"],
               "heldout_instances": counts["heldout"],
               "heldout_instances_evaluated": eval_steps * EVAL_BATCH,
               "vocab_size": args.vocab_size, "steps": args.steps, "batch": args.batch,
               "learning_rate": args.learning_rate, "final_heldout": curve[-1],
               "initial_heldout": curve[0] if curve[0]["step"] == 0 else None,
               "final_train_window": {k: final.get(k) for k in (
                   "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                   "next_sentence_loss")},
               "data_prep_s": round(prepared, 1), "train_s": round(train_seconds, 1),
               "steps_per_s": round(args.steps / train_seconds, 3),
               "plot": plot, "tf_version": tf.__version__}
    with open(os.path.join(out, "quality.json"), "w", encoding="utf-8") as f:
        json.dump({"summary": summary, "curve": curve, "train_log": train_log}, f, indent=1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
