"""The end-to-end demo: a BERT pretrained from scratch on text found on this machine.

With no arguments and no network it:

1. builds a corpus of English prose from the docstrings of the installed Python standard
   library, numpy, tensorflow and keras (parsed from their source files with `ast`, not
   imported; nothing is downloaded), one sentence a line and a blank line between
   docstrings, holding out 5% of the docstrings;
2. learns a WordPiece vocab from it (`keras_bert.vocab.learn_vocab`);
3. writes masked-LM/next-sentence TFRecords for training and held-out evaluation
   (`keras_bert.data.pretraining.create_pretraining_data`);
4. pretrains a tiny BERT (L2/H128) with `keras_bert.training.Pretraining` under the
   default strategy, with a progress bar;
5. shows the masked-word guesses of the untrained and the trained model on held-out
   sentences, and masked-LM accuracy on the held-out instances before and after.

Everything goes under --output_dir (default ./keras_bert_demo); the paths are printed.
Rerunning with the same directory reuses what is complete. About 5 minutes on 2 CPU
cores (4.7 measured; 7 while other jobs shared the cores).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import sysconfig
import time

import keras
import numpy as np
import tensorflow as tf

from keras_bert.config import BertConfig
from keras_bert.data.pretraining import PretrainingDataOptions, create_pretraining_data
from keras_bert.data.tfrecords import pretraining_dataset
from keras_bert.encoder import BertEncoder
from keras_bert.errors import DataError, OutputError
from keras_bert.io import atomic_write, write_json
from keras_bert.models import BertPretrainer
from keras_bert.pipelines.flags import (
    add_boolean,
    positive_float,
    positive_int,
    removed_on_error,
    require_output_directory,
)
from keras_bert.tokenization import BertTokenizer
from keras_bert.training import Pretraining, PretrainingOptions, pretraining_losses
from keras_bert.vocab import learn_vocab, write_vocab

DEFAULT_SOURCES = ("stdlib", "numpy", "tensorflow", "keras")
_SKIPPED_DIRECTORIES = {"site-packages", "dist-packages", "test", "tests", "idle_test",
                        "__pycache__"}
# Docstring sections that hold code or parameter lists rather than prose.
_SECTION = re.compile(
    r"^(args|arguments|parameters|params|returns?|yields?|raises|examples?|usage|see also|"
    r"references|attributes|methods|call arguments|input shape|output shape|inputs|"
    r"outputs)\s*:?$", re.IGNORECASE)
_UNDERLINE = re.compile(r"^[-=~^*]{3,}$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
_NOT_PROSE = (">>>", "```", "::", "{", "}", "=", "`", "\\", "http", "|", "_")
_FUNCTION_WORDS = frozenset(
    "the a an is are was be been of to and in on for with as by this that it which or "
    "if not can will from".split())


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    """What the demo builds; a rerun into the same directory must use the same."""

    sources: tuple[str, ...] = DEFAULT_SOURCES
    max_corpus_mb: float = 3.0
    vocab_size: int = 4096
    max_seq_length: int = 64
    max_predictions_per_seq: int = 10
    dupe_factor: int = 3
    num_train_steps: int = 1500
    train_batch_size: int = 64
    learning_rate: float = 2e-3
    seed: int = 12345


# --- 1. corpus ----------------------------------------------------------------------

def source_directories(sources) -> list[str]:
    """The directories whose `.py` files are read: "stdlib" or an installed package."""
    roots = []
    for name in sources:
        if name == "stdlib":
            roots.append(sysconfig.get_paths()["stdlib"])
            continue
        spec = importlib.util.find_spec(name)  # locates the package without importing it
        if spec is None or not spec.submodule_search_locations:
            print(f"  (skipping {name}: not installed)")
            continue
        roots.extend(spec.submodule_search_locations)
    return roots


def python_files(roots) -> list[str]:
    files = []
    for root in roots:
        for directory, subdirectories, names in os.walk(root):
            subdirectories[:] = sorted(d for d in subdirectories
                                       if d not in _SKIPPED_DIRECTORIES and d[0] != ".")
            files.extend(os.path.join(directory, n) for n in sorted(names) if n.endswith(".py"))
    return files


def _is_prose(sentence: str) -> bool:
    if not sentence.isascii() or any(mark in sentence for mark in _NOT_PROSE):
        return False
    tokens = sentence.split()
    words = [t for t in tokens if _WORD.fullmatch(t.strip(".,;:()!?\"'"))]
    return (len(words) >= 5 and len(words) >= 0.8 * len(tokens)
            and any(w.lower() in _FUNCTION_WORDS for w in words))


def english_sentences(docstring: str) -> list[str]:
    """The sentences of a docstring's prose paragraphs: indented blocks (code, parameter
    descriptions), sections such as "Args:" or "Examples", lists and anything with
    code-like characters are left out.

    Example:

    >>> english_sentences('''Reads a file into memory.
    ...
    ... The whole file is read at once. Large files may not fit.
    ...
    ... Args:
    ...     path: the file.
    ... ''')
    ['Reads a file into memory.', 'The whole file is read at once.', 'Large files may not fit.']
    """
    sentences, paragraph, in_section = [], [], False

    def flush():
        text = " ".join(paragraph)
        paragraph.clear()
        if not text or text[:2] in ("- ", "* ") or re.match(r"\d+[.)] ", text):
            return
        for sentence in _SENTENCE_END.split(text):
            if len(sentence) <= 400 and sentence[-1:] in ".!?" and _is_prose(sentence):
                sentences.append(sentence)

    for line in docstring.splitlines():
        stripped = line.strip()
        if not stripped or line[:1].isspace():
            flush()
            continue
        if _SECTION.match(stripped) or _UNDERLINE.match(stripped):
            flush()
            in_section = True
            continue
        if in_section and stripped.endswith(":"):
            continue
        in_section = False
        paragraph.append(stripped)
    flush()
    return sentences


def docstring_documents(files, max_chars: int) -> list[list[str]]:
    """One document (its English sentences) per distinct docstring, up to `max_chars`."""
    documents, seen, size = [], set(), 0
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), filename=path)
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                     ast.AsyncFunctionDef)):
                continue
            docstring = ast.get_docstring(node)
            sentences = english_sentences(docstring) if docstring else []
            key = "\n".join(sentences)
            if not sentences or key in seen:
                continue
            seen.add(key)
            documents.append(sentences)
            size += len(key) + 2
            if size >= max_chars:
                return documents
    return documents


def is_held_out(document: list[str]) -> bool:
    """1 in 20 documents, chosen by a hash of the text (stable across runs)."""
    return hashlib.sha256("\n".join(document).encode()).digest()[0] % 20 == 0


def write_documents(documents, path: str) -> None:
    with atomic_write(path) as f:
        for document in documents:
            f.write("\n".join(document) + "\n\n")


# --- 5. predictions -------------------------------------------------------------------

def masked_examples(sentences, tokenizer, count: int = 5, max_tokens: int = 40):
    """Held-out sentences with one word to guess: a word of 4+ letters that is one token
    in the vocab and not a function word, near the middle of the sentence."""
    examples = []
    for sentence in sentences:
        ids = np.asarray(tokenizer.tokenize([sentence])[0])
        if not 8 <= len(ids) <= max_tokens:
            continue
        pieces = [tokenizer.id_to_token(int(i)) for i in ids]
        candidates = [i for i, p in enumerate(pieces)
                      if p.isalpha() and len(p) >= 4 and p not in _FUNCTION_WORDS
                      and (i + 1 == len(pieces) or not pieces[i + 1].startswith("##"))]
        if not candidates:
            continue
        position = min(candidates, key=lambda i: abs(i - len(pieces) / 2))
        examples.append({"sentence": sentence, "ids": ids, "position": position,
                         "answer": pieces[position]})
        if len(examples) == count:
            break
    return examples


def guesses(model, tokenizer, examples, k: int = 3) -> list[list[str]]:
    """The model's top-k tokens for the masked word of each example."""
    length = max(len(e["ids"]) for e in examples) + 2
    ids = np.zeros((len(examples), length), "int32")
    mask = np.zeros_like(ids)
    for row, e in enumerate(examples):
        tokens = [tokenizer.cls_id, *e["ids"], tokenizer.sep_id]
        tokens[1 + e["position"]] = tokenizer.mask_id
        ids[row, :len(tokens)] = tokens
        mask[row, :len(tokens)] = 1
    positions = np.array([[1 + e["position"]] for e in examples], "int32")
    logits = model({"input_word_ids": ids, "input_mask": mask,
                    "input_type_ids": np.zeros_like(ids), "masked_lm_positions": positions},
                   training=False)["masked_lm"]
    top = np.argsort(-np.asarray(logits)[:, 0, :], axis=-1)[:, :k]
    return [[tokenizer.id_to_token(int(i)) for i in row] for row in top]


def heldout_metrics(model, pattern: str, num_instances: int, max_seq_length: int,
                    max_predictions: int, max_instances: int = 2560) -> dict:
    """Masked-LM and NSP accuracy and loss of `model` on (up to `max_instances` of) the
    held-out TFRecords."""
    batch = 64
    dataset = pretraining_dataset(pattern, batch, max_seq_length=max_seq_length,
                                  max_predictions_per_seq=max_predictions,
                                  is_training=False, drop_remainder=False)
    dataset = dataset.map(model.split_features, num_parallel_calls=tf.data.AUTOTUNE)
    steps = -(-min(num_instances, max_instances) // batch)
    results = model.evaluate(dataset.repeat(), steps=steps, verbose=0, return_dict=True)
    return {k: round(float(v), 4) for k, v in results.items()}


# --- the job ------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = DemoSettings()
    parser.add_argument("--output_dir", default="keras_bert_demo",
                        help="where everything goes (default: %(default)s)")
    parser.add_argument("--sources", default=",".join(defaults.sources),
                        help="modules whose docstrings form the corpus: stdlib and/or "
                             "installed packages (default: %(default)s)")
    parser.add_argument("--max_corpus_mb", type=positive_float, default=defaults.max_corpus_mb,
                        help="corpus size cap in millions of characters "
                             "(default: %(default)s)")
    parser.add_argument("--vocab_size", type=positive_int, default=defaults.vocab_size,
                        help="WordPiece vocab size (default: %(default)s)")
    parser.add_argument("--num_train_steps", type=positive_int, default=defaults.num_train_steps,
                        help="pretraining steps (default: %(default)s)")
    parser.add_argument("--train_batch_size", type=positive_int, default=defaults.train_batch_size,
                        help="sequences per step (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=defaults.seed,
                        help="fixes corpus split, data, initialization and order "
                             "(default: %(default)s)")
    add_boolean(parser, "progress", True, "show progress bars")


def _settings(args) -> DemoSettings:
    return DemoSettings(
        sources=tuple(s.strip() for s in args.sources.split(",") if s.strip()),
        max_corpus_mb=args.max_corpus_mb, vocab_size=args.vocab_size,
        num_train_steps=args.num_train_steps, train_batch_size=args.train_batch_size,
        seed=args.seed)


def _check_directory(output_dir: str, settings: DemoSettings) -> None:
    """A rerun reuses complete work only if it was made with the same settings."""
    path = os.path.join(output_dir, "demo_settings.json")
    record = dataclasses.asdict(settings)
    record["sources"] = list(record["sources"])
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            previous = json.load(f)
        if previous != record:
            changed = sorted(k for k in record if previous.get(k) != record[k])
            raise OutputError(f"{output_dir} holds a demo made with other settings "
                              f"({', '.join(changed)}); use another --output_dir or remove it.")
        return
    write_json(path, record, sort_keys=False)


def _stage(number: int, title: str) -> float:
    print(f"\n[{number}/5] {title}", flush=True)
    return time.monotonic()


def run(args: argparse.Namespace) -> int:
    settings = _settings(args)
    out = os.path.abspath(args.output_dir)
    require_output_directory(out, "--output_dir")
    with removed_on_error(out):
        return _run(args, settings, out)


def _run(args: argparse.Namespace, settings: DemoSettings, out: str) -> int:
    _check_directory(out, settings)
    started = time.monotonic()
    timings = {}
    paths = {"corpus": os.path.join(out, "corpus", "train.txt"),
             "heldout_corpus": os.path.join(out, "corpus", "heldout.txt"),
             "vocab": os.path.join(out, "vocab.txt"),
             "train_data": os.path.join(out, "data", "train"),
             "heldout_data": os.path.join(out, "data", "heldout"),
             "run": os.path.join(out, "run"),
             "results": os.path.join(out, "demo_results.json")}

    t = _stage(1, "Corpus: English sentences from the docstrings of "
               + ", ".join(settings.sources))
    if os.path.exists(paths["heldout_corpus"]):
        print(f"  reusing {paths['corpus']}")
        with open(paths["heldout_corpus"], encoding="utf-8") as f:
            heldout = [d.split("\n") for d in f.read().split("\n\n") if d.strip()]
    else:
        files = python_files(source_directories(settings.sources))
        documents = docstring_documents(files, int(settings.max_corpus_mb * 1e6))
        if len(documents) < 100:
            raise DataError(f"found too little docstring prose ({len(documents)} docstrings) "
                            f"in {settings.sources}; add sources with --sources.")
        heldout = [d for d in documents if is_held_out(d)]
        train = [d for d in documents if not is_held_out(d)]
        os.makedirs(os.path.dirname(paths["corpus"]), exist_ok=True)
        write_documents(train, paths["corpus"])
        write_documents(heldout, paths["heldout_corpus"])
        sentences = sum(len(d) for d in documents)
        print(f"  {len(files)} Python files -> {len(documents)} docstrings, {sentences} "
              f"sentences ({len(heldout)} docstrings held out)")
    print(f"  -> {paths['corpus']}\n  -> {paths['heldout_corpus']}")
    timings["corpus_s"] = time.monotonic() - t

    t = _stage(2, f"WordPiece vocab of {settings.vocab_size} tokens")
    if os.path.exists(paths["vocab"]):
        print(f"  reusing {paths['vocab']}")
    else:
        write_vocab(learn_vocab(paths["corpus"], settings.vocab_size, num_unused=10,
                                min_count=2, progress=args.progress), paths["vocab"])
    print(f"  -> {paths['vocab']}")
    timings["vocab_s"] = time.monotonic() - t

    t = _stage(3, "Masked-LM / next-sentence TFRecords")
    data_options = PretrainingDataOptions(
        max_seq_length=settings.max_seq_length,
        max_predictions_per_seq=settings.max_predictions_per_seq,
        dupe_factor=settings.dupe_factor, random_seed=settings.seed)
    instances = {}
    for corpus, target in (("corpus", "train_data"), ("heldout_corpus", "heldout_data")):
        summary = create_pretraining_data(paths[corpus], paths[target], paths["vocab"],
                                          data_options, num_workers=1,
                                          progress=args.progress)
        instances[target] = summary["totals"].get("instances", 0)
        print(f"  {instances[target]} instances -> {paths[target]}")
    timings["data_s"] = time.monotonic() - t

    t = _stage(4, f"Pretraining a tiny BERT (L2/H128) for {settings.num_train_steps} steps")
    config = BertConfig.from_preset("tiny", vocab_size=settings.vocab_size,
                                    max_position_embeddings=settings.max_seq_length)
    options = PretrainingOptions(
        train_batch_size=settings.train_batch_size, num_train_steps=settings.num_train_steps,
        num_warmup_steps=settings.num_train_steps // 10,
        learning_rate=settings.learning_rate,
        save_checkpoints_steps=max(1, settings.num_train_steps // 5),
        log_steps=max(1, settings.num_train_steps // 20), seed=settings.seed)
    pretraining = Pretraining(os.path.join(paths["train_data"], "*.tfrecord"), paths["run"],
                              config, options, vocab_file=paths["vocab"],
                              progress=args.progress)
    # The same initialization, untrained, for the "before" side.
    keras.utils.set_random_seed(settings.seed)
    untrained = BertPretrainer(BertEncoder(config))
    untrained.compile(loss=pretraining_losses(), metrics="auto")
    pretraining.fit()
    timings["pretrain_s"] = time.monotonic() - t
    print(f"  -> {paths['run']} (encoder: keras_bert.load_encoder, metrics.json, "
          "TensorBoard logs/)")

    t = _stage(5, "Masked words in held-out sentences: untrained -> trained")
    tokenizer = BertTokenizer(paths["vocab"], lower_case=True)
    examples = masked_examples([s for d in heldout for s in d], tokenizer)
    before = guesses(untrained, tokenizer, examples)
    after = guesses(pretraining.model, tokenizer, examples)
    shown = []
    for example, b, a in zip(examples, before, after):
        words = tokenizer.detokenize([example["ids"][:example["position"]]])[0].numpy()
        rest = tokenizer.detokenize([example["ids"][example["position"] + 1:]])[0].numpy()
        print(f"\n  {words.decode()} [MASK] {rest.decode()}")
        print(f"    answer: {example['answer']:<14} untrained: {', '.join(b):<36} "
              f"trained: {', '.join(a)}")
        shown.append({"sentence": example["sentence"], "answer": example["answer"],
                      "untrained": b, "trained": a})
    heldout_pattern = os.path.join(paths["heldout_data"], "*.tfrecord")
    metrics = {name: heldout_metrics(model, heldout_pattern, instances["heldout_data"],
                                     settings.max_seq_length,
                                     settings.max_predictions_per_seq)
               for name, model in (("untrained", untrained), ("trained", pretraining.model))}
    for name in ("untrained", "trained"):
        m = metrics[name]
        print(f"\n  held-out {name:>9}: masked-LM accuracy {m['masked_lm_accuracy']:.3f} "
              f"(loss {m['masked_lm_loss']:.2f}), next-sentence accuracy "
              f"{m['next_sentence_accuracy']:.3f}", end="")
    print()
    timings["predictions_s"] = time.monotonic() - t
    timings["total_s"] = time.monotonic() - started

    results = {"heldout": metrics, "predictions": shown, "paths": paths,
               "timings": {k: round(v, 1) for k, v in timings.items()},
               "settings": dataclasses.asdict(settings)}
    write_json(paths["results"], results, sort_keys=False)
    print(f"\nDone in {timings['total_s'] / 60:.1f} min. Outputs in {out}:")
    for name in ("corpus", "vocab", "train_data", "run", "results"):
        print(f"  {name + ':':<12} {paths[name]}")
    print(f"  TensorBoard: tensorboard --logdir {os.path.join(paths['run'], 'logs')}")
    return 0
