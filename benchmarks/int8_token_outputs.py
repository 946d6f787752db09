"""How far int8 moves an encoder's per-token outputs (`sequence_output`, what NER and
SQuAD heads read): keras_bert's LiteRT `dynamic_int8` beside ONNX Runtime's
`quantize_dynamic` of Hugging Face's ONNX export, each against its own float32 model, on
SST-2 sentences at batch 1: token cosine (mean, 1st percentile, min), relative error, the
largest difference and the pooled output's cosine. A first line compares the two floats.

    python benchmarks/int8_token_outputs.py --litert_float L/1 --litert_int8 L/2 \\
        --onnx_float hf.onnx --onnx_int8 hf_int8.onnx --vocab VOCAB \\
        --sentences SST-2/train.tsv --count 200   # serving_latency.py --workdir W writes them
"""

from __future__ import annotations

import argparse
import csv
import json
import os

import numpy as np


def _sentences(path: str, count: int) -> list[str]:
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [r[0] for r in rows[1:]][-count:]


def _ids(vocab: str, sentences: list[str], seq: int) -> list[dict]:
    import tensorflow as tf

    from keras_bert.text.packing import pack_inputs
    from keras_bert.text.tokenizer import BertTokenizer

    tok = BertTokenizer(vocab, lower_case=True)
    out = []
    for s in sentences:  # batch 1, as served: no padding
        packed = pack_inputs([tok.tokenize(tf.constant([s]))], seq, cls_id=tok.cls_id,
                             sep_id=tok.sep_id, pad_id=tok.pad_id)
        n = int(packed["input_mask"].numpy().sum())
        out.append({k: v.numpy()[:, :n].astype(np.int32) for k, v in packed.items()})
    return out


def _litert(path: str):
    from keras_bert.export import LiteRTModel

    run = LiteRTModel(path, num_threads=2).serving_default
    return lambda ids: (lambda o: (o["sequence_output"][0], o["pooled_output"][0]))(
        run(**ids))


def _onnx(path: str):
    import onnxruntime as ort

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])

    def run(ids):
        seq, pooled = session.run(None, {
            "input_ids": ids["input_word_ids"].astype(np.int64),
            "attention_mask": ids["input_mask"].astype(np.int64),
            "token_type_ids": ids["input_type_ids"].astype(np.int64)})
        return seq[0], pooled[0]

    return run


def _compare(name: str, float_run, int8_run, inputs: list[dict]) -> dict:
    cosines, relative, pooled_cos = [], [], []
    worst = (0.0, None)
    for ids in inputs:
        (f_seq, f_pool), (q_seq, q_pool) = float_run(ids), int8_run(ids)
        dot = (f_seq * q_seq).sum(-1)
        norms = np.linalg.norm(f_seq, axis=-1) * np.linalg.norm(q_seq, axis=-1)
        cosines.extend((dot / norms).tolist())
        relative.extend((np.linalg.norm(q_seq - f_seq, axis=-1)
                         / np.linalg.norm(f_seq, axis=-1)).tolist())
        diff = np.abs(q_seq - f_seq)
        if diff.max() > worst[0]:
            at = np.unravel_index(diff.argmax(), diff.shape)
            worst = (float(diff.max()), {"position": int(at[0]), "unit": int(at[1]),
                                         "float": float(f_seq[at]), "int8": float(q_seq[at]),
                                         "tokens": int(f_seq.shape[0])})
        pooled_cos.append(float(f_pool @ q_pool / np.linalg.norm(f_pool)
                                / np.linalg.norm(q_pool)))
    cosines, relative = np.array(cosines), np.array(relative)
    return {"runtime": name, "sentences": len(inputs), "tokens": int(cosines.size),
            "token_cosine_mean": round(float(cosines.mean()), 5),
            "token_cosine_p1": round(float(np.percentile(cosines, 1)), 5),
            "token_cosine_min": round(float(cosines.min()), 5),
            "token_relative_error_mean": round(float(relative.mean()), 5),
            "token_relative_error_max": round(float(relative.max()), 5),
            "max_abs_diff": round(worst[0], 4), "max_abs_diff_at": worst[1],
            "pooled_cosine_min": round(min(pooled_cos), 5)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("litert_float", "litert_int8", "onnx_float", "onnx_int8", "vocab",
                 "sentences"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seq", type=int, default=128)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    inputs = _ids(args.vocab, _sentences(args.sentences, args.count), args.seq)
    litert_float, onnx_float = _litert(args.litert_float), _onnx(args.onnx_float)
    # The two float32 models first: the same checkpoint, so (nearly) the same outputs.
    for name, f, q in (("float32: onnxruntime against litert", litert_float, onnx_float),
                       ("litert_dynamic_int8", litert_float, _litert(args.litert_int8)),
                       ("onnxruntime_quantize_dynamic", onnx_float, _onnx(args.onnx_int8))):
        print(json.dumps(_compare(name, f, q, inputs)), flush=True)


if __name__ == "__main__":
    main()
