"""Where a step's time goes: the TensorFlow profiler's trace of a few steps, summed by op
type and by op, printed as JSON lines (top ops by time).

    python benchmarks/profile_step.py --workload pretrain --precision mixed_bfloat16
    python benchmarks/profile_step.py --workload encoder --precision float32

`pretrain` is the step `benchmarks/pretraining_throughput.py` times for keras_bert
(`BertPretrainer`, MLM + NSP, AdamW, L6/H384/A12/I1536, batch 32, seq 128, 20
predictions); `encoder` is the encoder's forward pass in a `tf.function`. The trace
(`tf.profiler.experimental`) is read from its XSpace protobuf directly: every TF op the
executor ran on the host is an event named "op_name:OpType" on a thread line; their
durations are summed over the traced steps and divided by the step count. Ops run in
parallel on 2 threads, so the sum of op times is CPU time, not wall time: the JSON gives
both, and each op's share of the op time. `--top` sets how many ops are listed.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys
import tempfile
import time

from keras_bert.core.precision import PRECISIONS

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Cost centres the issue asks about: an op is matched by its name (the layer or
# optimizer it belongs to) first, then by its type.
NAME_CATEGORIES = (
    ("dropout", r"dropout"),
    ("gelu", r"[Gg]elu|Erfc?\b"),
    ("softmax", r"softmax"),
    ("layer_norm", r"layer_norm"),
    ("optimizer", r"adam_w|AdamW|optimizer|clip|global_norm|Assign"),
    ("loss", r"compile_loss|SparseSoftmaxCrossEntropy|masked_lm_loss"),
)
TYPE_CATEGORIES = (
    ("matmul", r"MatMul|Einsum"),
    ("bias_add_grad", r"BiasAddGrad"),
    ("softmax", r"Softmax"),
    ("cast", r"^Cast$"),
    ("reshape_transpose", r"Transpose|Reshape"),
    ("gather_scatter", r"Gather|Scatter|UnsortedSegment"),
    ("variable_io", r"ReadVariable|Resource"),
    ("elementwise", r"^(Mul|Sub|AddV2|Add|AddN|RealDiv|Neg|Square|Sqrt|Rsqrt|Exp|Sum|Mean|"
                    r"SelectV2|Maximum|Minimum|Tile|BroadcastTo)$"),
)


def categorize(op_type: str, op_name: str = "") -> str:
    if not re.search(r"MatMul", op_type):  # a MatMul stays a matmul wherever it is
        for name, pattern in NAME_CATEGORIES:
            if re.search(pattern, op_name) or re.search(pattern, op_type):
                return name
    for name, pattern in TYPE_CATEGORIES:
        if re.search(pattern, op_type):
            return name
    return "other"


def summarize_trace(logdir: str, steps: int, top: int) -> dict:
    """Sums the host op events of the newest trace in `logdir`, per step."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    path = max(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True),
               key=os.path.getmtime)
    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    by_type, by_op = collections.Counter(), collections.Counter()
    counts = collections.Counter()
    intervals = []  # (start ps, end ps, op type, op name) of every op event
    for plane in space.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if ":" not in name or "::" in name:  # framework events, not ops
                    continue
                op_name, op_type = name.rsplit(":", 1)
                if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", op_type):
                    continue
                ms = event.duration_ps / 1e9
                start = line.timestamp_ns * 1000 + event.offset_ps
                intervals.append((start, start + event.duration_ps, op_type, op_name))
                by_type[op_type] += ms
                by_op[f"{op_type} {op_name}"] += ms
                counts[op_type] += 1
    total = sum(by_type.values())
    categories = collections.Counter()
    for key, ms in by_op.items():
        categories[categorize(*key.split(" ", 1))] += ms
    wall, wall_by_category, idle = wall_shares(intervals)
    per_step = lambda ms: round(ms / steps, 2)  # noqa: E731
    return {
        "op_ms_per_step": per_step(total),
        "traced_wall_ms_per_step": per_step(wall),
        "no_op_running_ms_per_step": per_step(idle),
        # Wall time, each instant split evenly among the ops running then.
        "wall_by_category": {k: {"ms_per_step": per_step(v), "share": round(v / wall, 3)}
                             for k, v in wall_by_category.most_common()},
        "categories": {k: {"ms_per_step": per_step(v), "share": round(v / total, 3)}
                       for k, v in categories.most_common()},
        "top_op_types": [{"op": k, "ms_per_step": per_step(v), "share": round(v / total, 3),
                          "calls_per_step": counts[k] // steps}
                         for k, v in by_type.most_common(top)],
        "top_ops": [{"op": k, "ms_per_step": per_step(v), "share": round(v / total, 3)}
                    for k, v in by_op.most_common(top)],
    }


def wall_shares(intervals):
    """(wall ms from the first op to the last, Counter of category -> wall ms with each
    instant split evenly among the ops running, ms when no op ran)."""
    points = sorted([(start, 1, i) for i, (start, _, _, _) in enumerate(intervals)]
                    + [(end, -1, i) for i, (_, end, _, _) in enumerate(intervals)])
    running, shares, idle = set(), collections.Counter(), 0.0
    previous = points[0][0] if points else 0
    for time_ps, kind, i in points:
        span = (time_ps - previous) / 1e9
        if running:
            for j in running:
                shares[categorize(*intervals[j][2:])] += span / len(running)
        else:
            idle += span
        previous = time_ps
        (running.add if kind == 1 else running.discard)(i)
    wall = (points[-1][0] - points[0][0]) / 1e9 if points else 0.0
    return wall, shares, idle


def build_step(workload: str, batch: int, seq: int, predictions: int, xla: bool):
    import numpy as np
    import tensorflow as tf
    from pretraining_throughput import SHAPE, _batch, _keras_bert

    b = _batch(batch, seq, predictions, SHAPE["vocab_size"])
    if workload == "pretrain":
        return _keras_bert(b, xla)
    from keras_bert import BertConfig, BertEncoder

    encoder = BertEncoder(BertConfig(**SHAPE))
    inputs = {"input_word_ids": tf.constant(b["ids"]), "input_mask": tf.constant(b["mask"]),
              "input_type_ids": tf.constant(b["types"])}
    forward = tf.function(lambda x: encoder(x)["sequence_output"], jit_compile=xla)
    return lambda: np.asarray(forward(inputs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=("pretrain", "encoder"), default="pretrain")
    parser.add_argument("--precision", choices=PRECISIONS,
                        default="mixed_bfloat16")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--predictions", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3, help="traced steps")
    parser.add_argument("--xla", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--logdir", help="keep the trace here (default: a temporary dir)")
    args = parser.parse_args()

    import keras
    import tensorflow as tf

    keras.mixed_precision.set_global_policy(args.precision)
    step = build_step(args.workload, args.batch, args.seq, args.predictions, args.xla)
    for _ in range(args.warmup):
        step()
    untraced = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        untraced.append(time.perf_counter() - start)
    logdir = args.logdir or tempfile.mkdtemp(prefix="kb_profile_")
    tf.profiler.experimental.start(logdir)
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    traced_s = (time.perf_counter() - start) / args.steps
    tf.profiler.experimental.stop()
    summary = summarize_trace(logdir, args.steps, args.top)
    wall = sorted(untraced)[len(untraced) // 2]
    print(json.dumps({"profile": args.workload, "precision": args.precision, "xla": args.xla,
                      "batch": args.batch, "seq": args.seq,
                      "step_ms_untraced": round(wall * 1e3, 1),
                      "seq_per_s_untraced": round(args.batch / wall, 2),
                      "step_ms_traced": round(traced_s * 1e3, 1), **summary}, indent=1))


if __name__ == "__main__":
    main()
