"""BERT's whole story on text found on this machine: pretrain, fine-tune, beat a
baseline, export, serve. No network; about 4 minutes on 2 CPU cores.

1. corpus: the English docstrings of the installed Python standard library, numpy,
   tensorflow and keras (parsed with `ast`, never imported), one document per module
   (all its docstrings in source order), short modules joined with the next ones into
   documents of 40+ sentences, so that next-sentence pairs are half "random next" as in
   the paper (the balance is printed). 1 document in 10 is held out.
2. a WordPiece vocab learned from it (`keras_bert.vocab`);
3. masked-LM / next-sentence TFRecords (`keras_bert.data.pretraining`; every pair
   fills the sequence: short_seq_prob 0, see `_run`);
4. a tiny BERT (L2/H128) pretrained under the default tf.distribute strategy
   (`keras_bert.training.Pretraining`);
5. held-out masked-LM and next-sentence accuracy, untrained and trained, next to their
   trivial baselines (always guess the most frequent masked token of the training
   data; always the majority next-sentence label), and masked-word guesses;
6. a derived task, "which library does this docstring sentence come from?"
   (`keras_bert.tasks.library`: balanced classes; training sentences from the
   pretraining documents, held-out ones from the held-out documents; sentences that
   name a library left out), fine-tuned with `keras_bert.tasks.finetuning.Finetuning`
   (what `keras-bert finetune` runs) from the pretrained encoder and from a random one
   with the same steps, learning rate and seed, and both held-out accuracies printed
   next to the majority class: the paper's claim in miniature;
7. the fine-tuned model exported by `keras_bert.export` to
   `--export_dir/demo/VERSION/` (default saved_models/demo/VERSION/), reloaded with
   `tf.saved_model.load`, and two held-out sentences classified through its
   `serve_text` signature;
8. the attention of one sentence (`keras_bert.plotting`: a PNG per layer, every head)
   and the training curves drawn, and every artifact's path printed with what to run
   next.

Every number printed is also in OUTPUT_DIR/demo_metrics.json. A rerun into the same
--output_dir reuses the finished steps (the settings must be the same).

Example:

    keras-bert demo
    keras-bert demo --output_dir /tmp/demo --num_train_steps 300 --json > progress.jsonl
"""

from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import importlib.util
import json
import os
import random
import re
import shutil
import sysconfig
import time

import numpy as np

from keras_bert.errors import DataError, OutputError
from keras_bert.io import atomic_write, write_json
from keras_bert.pipelines.flags import (
    add_boolean,
    emit,
    json_progress_callback,
    library_logging,
    positive_float,
    positive_int,
    removed_on_error,
    require_output_directory,
    say,
)

DEFAULT_SOURCES = ("stdlib", "numpy", "tensorflow", "keras")
METRICS_FILE = "demo_metrics.json"
EXPORT_NAME = "demo"
_SKIPPED_DIRECTORIES = {"site-packages", "dist-packages", "test", "tests", "idle_test",
                        "__pycache__"}
# Docstring sections that hold code or parameter lists rather than prose.
_SECTION = re.compile(
    r"^(args|arguments|parameters|params|returns?|yields?|raises|examples?|usage|see also|"
    r"references|attributes|methods|call arguments|input shape|output shape|inputs|"
    r"outputs)\s*:?$", re.IGNORECASE)
_UNDERLINE = re.compile(r"^[-=~^*]{3,}$")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
# A period after these ends no sentence ("e.g. The ...", "Dr. Smith").
_ABBREVIATIONS = frozenset(
    "e.g. i.e. etc. vs. cf. al. approx. resp. mr. mrs. ms. dr. prof. st. no. fig. eq. "
    "sec. ch. vol. ed. inc. ltd. jr. sr.".split())
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
_NOT_PROSE = (">>>", "```", "::", "{", "}", "=", "`", "\\", "http", "|", "_")
_FUNCTION_WORDS = frozenset(
    "the a an is are was be been of to and in on for with as by this that it which or "
    "if not can will from".split())
# The derived task asks which library a sentence is from: sentences that name one are
# left out of it, so the model must go by vocabulary and style.
_NAMES_A_LIBRARY = re.compile(r"\b(python|numpy|np|tensorflow|tf|keras|scipy|jax|torch)\b",
                              re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    """What the demo builds; a rerun into the same directory must use the same."""

    sources: tuple[str, ...] = DEFAULT_SOURCES
    max_corpus_mb: float = 3.0
    vocab_size: int = 4096
    max_seq_length: int = 64
    max_predictions_per_seq: int = 10
    dupe_factor: int = 3
    num_train_steps: int = 2000
    train_batch_size: int = 64
    learning_rate: float = 2e-3
    task_examples_per_class: int = 400
    finetune_epochs: float = 6.0
    finetune_learning_rate: float = 1e-3
    seed: int = 12345


# --- 1. corpus ----------------------------------------------------------------------

def source_directories(sources) -> list[str]:
    """The directories whose `.py` files are read for one source: "stdlib" or an
    installed package (found without importing it)."""
    roots = []
    for name in sources:
        if name == "stdlib":
            roots.append(sysconfig.get_paths()["stdlib"])
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
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


def split_sentences(text: str) -> list[str]:
    """Splits prose at ".", "!" or "?" followed by a capital letter, except after an
    abbreviation ("e.g.", "i.e.", "Dr.", ...) or an initial ("J. Smith").

    Example:

    >>> split_sentences("Sorts the list, e.g. By key. It is stable! Ask J. Smith why.")
    ['Sorts the list, e.g. By key.', 'It is stable!', 'Ask J. Smith why.']
    """
    sentences, start = [], 0
    for match in _SENTENCE_BREAK.finditer(text):
        last_word = text[start:match.start()].rsplit(None, 1)[-1]
        if last_word.lower() in _ABBREVIATIONS or re.fullmatch(r"[A-Z]\.", last_word):
            continue
        sentences.append(text[start:match.start()])
        start = match.end()
    sentences.append(text[start:])
    return [s.strip() for s in sentences if s.strip()]


def english_sentences(docstring: str) -> list[str]:
    """The sentences of a docstring's prose paragraphs: indented blocks (code, parameter
    descriptions), sections such as "Args:" or "Examples", lists and anything with
    code-like characters are left out.

    Example:

    >>> english_sentences('''Reads a file into memory.
    ...
    ... The whole file is read at once, e.g. For a log. Large files may not fit.
    ...
    ... Args:
    ...     path: the file.
    ... ''')
    ['Reads a file into memory.', 'The whole file is read at once, e.g. For a log.', \
'Large files may not fit.']
    """
    sentences, paragraph, in_section = [], [], False

    def flush():
        text = " ".join(paragraph)
        paragraph.clear()
        if not text or text[:2] in ("- ", "* ") or re.match(r"\d+[.)] ", text):
            return
        for sentence in split_sentences(text):
            if len(sentence) <= 300 and sentence[-1:] in ".!?" and _is_prose(sentence):
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


def file_document(path: str) -> list[str]:
    """One document per Python file, read with `ast` (never imported): the English
    sentences of every docstring in it (the module's, then its classes', functions'
    and methods') in source order.

    A module is what it documents, so its docstrings read as one text; documents this
    long keep the next-sentence labels balanced (a document's last sentence left alone
    in a chunk must be paired with a random next sentence).

    Example:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "m.py")
    >>> lines = ["'''Tools for reading the files of a project.'''",
    ...          "def f():", "    '''Returns the name of the file that was opened.'''",
    ...          "class C:", "    '''Holds the state of one open file in memory.'''",
    ...          "    def g(self):", "        '''Closes the file and frees its buffer.'''"]
    >>> _ = open(path, "w").write(chr(10).join(lines))
    >>> for sentence in file_document(path):
    ...     print(sentence)
    Tools for reading the files of a project.
    Returns the name of the file that was opened.
    Holds the state of one open file in memory.
    Closes the file and frees its buffer.
    """
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError, RecursionError):
        return []
    sentences: list[str] = []

    def collect(node) -> None:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node)
            if docstring:
                sentences.extend(english_sentences(docstring))
        for child in ast.iter_child_nodes(node):
            collect(child)

    collect(tree)
    return sentences


def corpus_documents(sources, max_chars: int, min_sentences: int = 40,
                     progress: bool = True) -> dict[str, list[list[str]]]:
    """source -> its documents (lists of sentences), each source up to
    `max_chars / len(sources)` characters.

    A document is the docstrings of one module (`file_document`), joined with the
    modules that follow it in the same source until it has `min_sentences` sentences:
    BERT's sampling pairs a chunk of one sentence (a document's last sentence, left
    alone) with a random next sentence, so many short documents would tip the
    next-sentence labels towards "random next". A sentence seen before anywhere in the
    corpus is dropped (docstrings repeat themselves)."""
    import tqdm

    per_source = max_chars / max(1, len(sources))
    seen: set[str] = set()
    corpus = {}
    for source in sources:
        files = python_files(source_directories([source]))
        documents, current, size = [], [], 0
        for path in tqdm.tqdm(files, desc=f"corpus {source}", unit="file", leave=False,
                              disable=not progress):
            for sentence in file_document(path):
                if sentence not in seen:
                    seen.add(sentence)
                    current.append(sentence)
                    size += len(sentence) + 1
            if len(current) >= min_sentences:
                documents.append(current)
                current = []
            if size >= per_source:
                break
        if len(current) >= 2:
            documents.append(current)
        corpus[source] = documents
    return corpus


def is_held_out(index: int) -> bool:
    """Documents 5, 15, 25, ... of each source are held out (1 in 10)."""
    return index % 10 == 5


def write_documents(documents, path: str) -> None:
    with atomic_write(path) as f:
        for document in documents:
            f.write("\n".join(document) + "\n\n")


def read_documents(path: str) -> list[list[str]]:
    with open(path, encoding="utf-8") as f:
        return [d.split("\n") for d in f.read().split("\n\n") if d.strip()]


def task_examples(corpus: dict[str, list[list[str]]], per_class: int, seed: int
                  ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The derived task's (sentence, library) examples: train from the pretraining
    documents, dev from the held-out ones, the same number for every library (at most
    `per_class` train and `per_class // 2` dev), shuffled; sentences naming a library
    are left out."""
    rng = random.Random(seed)
    pools = {"train": {}, "dev": {}}
    for source, documents in corpus.items():
        for split in pools:
            pools[split][source] = [
                s for i, d in enumerate(documents) if is_held_out(i) == (split == "dev")
                for s in d if not _NAMES_A_LIBRARY.search(s)]
    splits = {}
    for split, cap in (("train", per_class), ("dev", max(1, per_class // 2))):
        count = min([cap, *(len(p) for p in pools[split].values())])
        examples = []
        for source, sentences in pools[split].items():
            examples += [(s, source) for s in rng.sample(sentences, count)]
        rng.shuffle(examples)
        splits[split] = examples
    return splits["train"], splits["dev"]


# --- 5. held-out evaluation -------------------------------------------------------------

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


def guesses(model, tokenizer, examples, k: int = 3) -> list[dict]:
    """The model's top-k tokens for the masked word of each example, and the rank of
    the right answer among all the vocab's tokens (1: the model's first choice)."""
    length = max(len(e["ids"]) for e in examples) + 2
    ids = np.zeros((len(examples), length), "int32")
    mask = np.zeros_like(ids)
    for row, e in enumerate(examples):
        tokens = [tokenizer.cls_id, *e["ids"], tokenizer.sep_id]
        tokens[1 + e["position"]] = tokenizer.mask_id
        ids[row, :len(tokens)] = tokens
        mask[row, :len(tokens)] = 1
    positions = np.array([[1 + e["position"]] for e in examples], "int32")
    logits = np.asarray(model({"input_word_ids": ids, "input_mask": mask,
                               "input_type_ids": np.zeros_like(ids),
                               "masked_lm_positions": positions},
                              training=False)["masked_lm"])[:, 0, :]
    results = []
    for row, e in enumerate(examples):
        answer = int(e["ids"][e["position"]])
        order = np.argsort(-logits[row])
        results.append({"top": [tokenizer.id_to_token(int(i)) for i in order[:k]],
                        "answer_rank": int(np.nonzero(order == answer)[0][0]) + 1})
    return results


def _records(pattern: str, settings: DemoSettings, batch_size: int = 256):
    from keras_bert.data.tfrecords import pretraining_dataset

    return pretraining_dataset(pattern, batch_size, max_seq_length=settings.max_seq_length,
                               max_predictions_per_seq=settings.max_predictions_per_seq,
                               is_training=False, drop_remainder=False)


def training_label_statistics(pattern: str, settings: DemoSettings) -> dict:
    """What the trivial baselines learn from the training TFRecords: the most frequent
    masked token (real masked positions only) and the majority next-sentence label."""
    token_counts = collections.Counter()
    labels = collections.Counter()
    for batch in _records(pattern, settings):
        ids = batch["masked_lm_ids"].numpy()
        weights = batch["masked_lm_weights"].numpy()
        token_counts.update(ids[weights > 0].tolist())
        labels.update(batch["next_sentence_labels"].numpy().ravel().tolist())
    token, _ = token_counts.most_common(1)[0]
    majority, _ = labels.most_common(1)[0]
    return {"most_frequent_token_id": int(token), "majority_next_sentence_label": int(majority),
            "masked_tokens": int(sum(token_counts.values())),
            "random_next_fraction": labels[1] / max(1, sum(labels.values()))}


def heldout_evaluation(models: dict, pattern: str, settings: DemoSettings,
                       statistics: dict, max_instances: int = 4096) -> dict:
    """Masked-LM and next-sentence accuracy of each model and of the two trivial
    baselines on the same held-out instances (the first `max_instances`) and the same
    masked positions."""
    import tensorflow as tf

    batch = 64
    instances = _records(pattern, settings, batch).unbatch().take(max_instances)
    dataset = instances.batch(batch).cache()
    total, hits, nsp_total, nsp_hits, steps = 0.0, 0.0, 0, 0, 0
    for features in dataset:
        steps += 1
        weights = features["masked_lm_weights"].numpy()
        ids = features["masked_lm_ids"].numpy()
        total += weights.sum()
        hits += (weights * (ids == statistics["most_frequent_token_id"])).sum()
        labels = features["next_sentence_labels"].numpy().ravel()
        nsp_total += labels.size
        nsp_hits += int((labels == statistics["majority_next_sentence_label"]).sum())
    results = {"instances": nsp_total, "masked_positions": int(total),
               "baselines": {"most_frequent_token_mlm_accuracy": round(float(hits / total), 4),
                             "majority_class_nsp_accuracy": round(nsp_hits / nsp_total, 4)}}
    for name, model in models.items():
        split = dataset.map(model.split_features, num_parallel_calls=tf.data.AUTOTUNE)
        scores = model.evaluate(split, steps=steps, verbose=0, return_dict=True)
        results[name] = {k: round(float(v), 4) for k, v in scores.items()}
    return results


# --- 7. serving -----------------------------------------------------------------------------

def serve(version_dir: str, sentences: list[str]) -> list[dict]:
    """Reloads an exported SavedModel (TensorFlow alone) and classifies `sentences`
    through its `serve_text` signature: label and probability of each."""
    import tensorflow as tf

    loaded = tf.saved_model.load(version_dir)
    outputs = loaded.signatures["serve_text"](text=tf.constant(sentences))
    labels = [v.decode() for v in outputs["label"].numpy()]
    probabilities = outputs["probabilities"].numpy()
    return [{"sentence": s, "label": label, "probability": round(float(p.max()), 4)}
            for s, label, p in zip(sentences, labels, probabilities)]


# --- the job ------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = DemoSettings()
    add = parser.add_argument
    add("--output_dir", default="keras_bert_demo",
        help="where everything but the SavedModel goes (default: %(default)s)")
    add("--export_dir", default="saved_models",
        help=f"where the SavedModel goes, as {EXPORT_NAME}/VERSION/ (default: %(default)s)")
    add("--sources", default=",".join(defaults.sources),
        help="modules whose docstrings form the corpus, and the derived task's classes: "
             "stdlib and/or installed packages (default: %(default)s)")
    add("--max_corpus_mb", type=positive_float, default=defaults.max_corpus_mb,
        help="corpus size cap in millions of characters, shared by the sources "
             "(default: %(default)s)")
    add("--vocab_size", type=positive_int, default=defaults.vocab_size,
        help="WordPiece vocab size (default: %(default)s)")
    add("--num_train_steps", type=positive_int, default=defaults.num_train_steps,
        help="pretraining steps (default: %(default)s)")
    add("--train_batch_size", type=positive_int, default=defaults.train_batch_size,
        help="pretraining sequences per step (default: %(default)s)")
    add("--task_examples_per_class", type=positive_int,
        default=defaults.task_examples_per_class,
        help="derived task: training sentences per library (at most half as many held "
             "out) "
             "(default: %(default)s)")
    add("--finetune_epochs", type=positive_float, default=defaults.finetune_epochs,
        help="derived task: fine-tuning epochs, the same for both initialisations "
             "(default: %(default)s)")
    add("--finetune_learning_rate", type=positive_float,
        default=defaults.finetune_learning_rate,
        help="derived task: peak learning rate (default: %(default)s)")
    add("--seed", type=int, default=defaults.seed,
        help="fixes corpus split, data, initialization and order (default: %(default)s)")
    add_boolean(parser, "progress", True, "show progress bars")


def _settings(args) -> DemoSettings:
    return DemoSettings(
        sources=tuple(s.strip() for s in args.sources.split(",") if s.strip()),
        max_corpus_mb=args.max_corpus_mb, vocab_size=args.vocab_size,
        num_train_steps=args.num_train_steps, train_batch_size=args.train_batch_size,
        task_examples_per_class=args.task_examples_per_class,
        finetune_epochs=args.finetune_epochs,
        finetune_learning_rate=args.finetune_learning_rate, seed=args.seed)


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


STAGES = 8


class _Stages:
    """Stage headers (progress lines, or JSON progress events) and their timings."""

    def __init__(self):
        self.timings: dict[str, float] = {}
        self._current = None

    def start(self, number: int, key: str, title: str) -> None:
        self.end()
        say(f"\n[{number}/{STAGES}] {title}")
        emit("progress", stage=key, number=number, of=STAGES, title=title)
        self._current = (key, time.monotonic())

    def end(self) -> None:
        if self._current:
            key, started = self._current
            self.timings[key + "_s"] = round(time.monotonic() - started, 1)
            self._current = None


def _fraction(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def run(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if len(settings.sources) < 2:
        from keras_bert.errors import ArgumentError

        raise ArgumentError("--sources needs two or more sources: the derived task tells "
                            "them apart.", field="sources")
    out = os.path.abspath(args.output_dir)
    require_output_directory(out, "--output_dir")
    require_output_directory(args.export_dir, "--export_dir")
    with removed_on_error(out), library_logging():
        return _run(args, settings, out)


def _run(args: argparse.Namespace, settings: DemoSettings, out: str) -> int:
    import keras

    _check_directory(out, settings)
    started = time.monotonic()
    stages = _Stages()
    paths = {"corpus": os.path.join(out, "corpus", "train.txt"),
             "heldout_corpus": os.path.join(out, "corpus", "heldout.txt"),
             "vocab": os.path.join(out, "vocab.txt"),
             "train_data": os.path.join(out, "data", "train"),
             "heldout_data": os.path.join(out, "data", "heldout"),
             "pretrain_run": os.path.join(out, "pretrain"),
             "random_init": os.path.join(out, "random_init"),
             "task_data": os.path.join(out, "task"),
             "finetune_pretrained": os.path.join(out, "finetune", "pretrained"),
             "finetune_random": os.path.join(out, "finetune", "random_init"),
             "attention": os.path.join(out, "attention"),
             "plots": os.path.join(out, "plots"),
             "metrics": os.path.join(out, METRICS_FILE)}
    report: dict = {"settings": {**dataclasses.asdict(settings),
                                 "sources": list(settings.sources)}}

    # 1. corpus ---------------------------------------------------------------------
    stages.start(1, "corpus", "Corpus: docstrings of " + ", ".join(settings.sources)
                 + " (one document per module)")
    corpus_record = os.path.join(out, "corpus", "corpus.json")
    if os.path.exists(corpus_record):
        say(f"  reusing {os.path.dirname(paths['corpus'])}")
        with open(corpus_record, encoding="utf-8") as f:
            report["corpus"] = json.load(f)
    else:
        corpus = corpus_documents(settings.sources, int(settings.max_corpus_mb * 1e6),
                                  progress=args.progress)
        found = {s: len(d) for s, d in corpus.items()}
        if min(found.values()) < 10:
            raise DataError(f"too few multi-sentence docstring documents per source "
                            f"({found}); choose --sources that are installed and "
                            "documented.")
        documents = [d for ds in corpus.values() for d in ds]
        train = [d for ds in corpus.values() for i, d in enumerate(ds) if not is_held_out(i)]
        heldout = [d for ds in corpus.values() for i, d in enumerate(ds) if is_held_out(i)]
        train_task, dev_task = task_examples(corpus, settings.task_examples_per_class,
                                             settings.seed)
        if len(dev_task) < 10 * len(settings.sources):
            raise DataError(f"the held-out documents give only {len(dev_task)} task "
                            "sentences; raise --max_corpus_mb.")
        from keras_bert.tasks.library import write_split

        os.makedirs(paths["task_data"], exist_ok=True)
        write_split(os.path.join(paths["task_data"], "train.tsv"), train_task)
        write_split(os.path.join(paths["task_data"], "dev.tsv"), dev_task)
        write_documents(train, paths["corpus"])
        write_documents(heldout, paths["heldout_corpus"])
        report["corpus"] = {
            "documents": len(documents), "heldout_documents": len(heldout),
            "sentences": sum(len(d) for d in documents),
            "sentences_per_document": round(sum(len(d) for d in documents)
                                            / len(documents), 2),
            "per_source": {s: {"documents": len(ds), "sentences": sum(len(d) for d in ds)}
                           for s, ds in corpus.items()},
            "task_train_examples": len(train_task), "task_dev_examples": len(dev_task)}
        write_json(corpus_record, report["corpus"], sort_keys=False)
    c = report["corpus"]
    say(f"  {c['documents']} documents, {c['sentences']} sentences "
        f"({c['sentences_per_document']} per document); {c['heldout_documents']} "
        "documents held out")
    for source, counts in c["per_source"].items():
        say(f"    {source:<12} {counts['documents']:>5} documents {counts['sentences']:>6} "
            "sentences")
    say(f"  -> {paths['corpus']}\n  -> {paths['heldout_corpus']}")

    # 2. vocab ------------------------------------------------------------------------
    stages.start(2, "vocab", f"WordPiece vocab of {settings.vocab_size} tokens")
    if os.path.exists(paths["vocab"]):
        say(f"  reusing {paths['vocab']}")
    else:
        from keras_bert.vocab import learn_vocab, write_vocab

        write_vocab(learn_vocab(paths["corpus"], settings.vocab_size, num_unused=10,
                                min_count=2, progress=args.progress), paths["vocab"])
    say(f"  -> {paths['vocab']}")

    # 3. TFRecords --------------------------------------------------------------------
    stages.start(3, "data", "Masked-LM / next-sentence TFRecords")
    from keras_bert.data.pretraining import PretrainingDataOptions, create_pretraining_data

    data_options = PretrainingDataOptions(
        max_seq_length=settings.max_seq_length,
        max_predictions_per_seq=settings.max_predictions_per_seq,
        dupe_factor=settings.dupe_factor, random_seed=settings.seed,
        # google-research/bert shortens 10% of the pairs (to match short fine-tuning
        # inputs). Docstring sentences are short, so such a pair's chunk is often one
        # sentence, which is always paired with a random next one: the labels would
        # drift from the paper's 50/50. Here every pair fills the sequence.
        short_seq_prob=0.0)
    balance = {}
    for corpus_key, target in (("corpus", "train_data"), ("heldout_corpus", "heldout_data")):
        totals = create_pretraining_data(paths[corpus_key], paths[target], paths["vocab"],
                                         data_options, num_workers=1,
                                         progress=args.progress)["totals"]
        split = "train" if target == "train_data" else "heldout"
        instances, random_next = totals.get("instances", 0), totals.get(
            "random_next_instances", 0)
        balance[split] = {"instances": instances, "random_next": random_next,
                          "random_next_fraction": _fraction(random_next, instances)}
        say(f"  {split:<8} {instances:>6} instances, next-sentence labels: "
            f"{100 * _fraction(random_next, instances):.1f}% random next, "
            f"{100 - 100 * _fraction(random_next, instances):.1f}% actual next "
            f"-> {paths[target]}")
    report["nsp_label_balance"] = balance
    say("  (the paper: 50% / 50%)")

    # 4. pretraining ------------------------------------------------------------------
    from keras_bert.config import BertConfig
    from keras_bert.encoder import BertEncoder
    from keras_bert.models import BertPretrainer
    from keras_bert.training import Pretraining, PretrainingOptions, pretraining_losses

    stages.start(4, "pretrain", f"Pretraining a tiny BERT (L2/H128) for "
                 f"{settings.num_train_steps} steps of {settings.train_batch_size} sequences")
    config = BertConfig.from_preset("tiny", vocab_size=settings.vocab_size,
                                    max_position_embeddings=settings.max_seq_length)
    options = PretrainingOptions(
        train_batch_size=settings.train_batch_size, num_train_steps=settings.num_train_steps,
        num_warmup_steps=settings.num_train_steps // 10,
        learning_rate=settings.learning_rate,
        save_checkpoints_steps=max(1, settings.num_train_steps // 5),
        log_steps=max(1, settings.num_train_steps // 30), seed=settings.seed)
    pretraining = Pretraining(os.path.join(paths["train_data"], "*.tfrecord"),
                              paths["pretrain_run"], config, options,
                              vocab_file=paths["vocab"], progress=args.progress)
    # A random initialisation of the same model: the "untrained" side of every comparison.
    keras.utils.set_random_seed(settings.seed)
    untrained = BertPretrainer(BertEncoder(config))
    untrained.compile(loss=pretraining_losses(), metrics="auto")
    callback = json_progress_callback("pretrain", settings.num_train_steps,
                                      every=max(1, settings.num_train_steps // 30))
    pretraining.fit(callbacks=[callback] if callback else [])
    if not os.path.exists(os.path.join(paths["random_init"], "vocab.txt")):
        from keras_bert.checkpoints import save_encoder

        save_encoder(untrained.encoder, paths["random_init"])
        shutil.copyfile(paths["vocab"], os.path.join(paths["random_init"], "vocab.txt"))
    say(f"  -> {paths['pretrain_run']} (checkpoints/, the encoder, metrics.json, "
        "TensorBoard logs/)")

    # 5. held-out evaluation --------------------------------------------------------------
    stages.start(5, "heldout", "Held-out masked-LM and next-sentence accuracy, "
                 "untrained -> pretrained, against trivial baselines")
    from keras_bert.tokenization import BertTokenizer

    tokenizer = BertTokenizer(paths["vocab"], lower_case=True)
    statistics = training_label_statistics(os.path.join(paths["train_data"], "*.tfrecord"),
                                           settings)
    heldout = heldout_evaluation({"untrained": untrained, "pretrained": pretraining.model},
                                 os.path.join(paths["heldout_data"], "*.tfrecord"), settings,
                                 statistics)
    frequent = tokenizer.id_to_token(statistics["most_frequent_token_id"])
    nsp_majority = ("random next" if statistics["majority_next_sentence_label"]
                    else "actual next")
    heldout["baselines"]["most_frequent_token"] = frequent
    heldout["baselines"]["majority_next_sentence_label"] = nsp_majority
    b = heldout["baselines"]
    say(f"  {heldout['instances']} held-out instances, {heldout['masked_positions']} masked "
        "positions")
    rows = [(f"baseline: always {frequent!r} / {nsp_majority!r}",
             b["most_frequent_token_mlm_accuracy"], b["majority_class_nsp_accuracy"])]
    rows += [(f"{name} BERT", heldout[name]["masked_lm_accuracy"],
              heldout[name]["next_sentence_accuracy"]) for name in ("untrained", "pretrained")]
    width = max(len(row[0]) for row in rows) + 2
    print(f"  {'':<{width}}{'masked-LM acc':>14}{'next-sentence acc':>19}")
    for label, mlm, nsp in rows:
        print(f"  {label:<{width}}{mlm:>14.3f}{nsp:>19.3f}")
    examples = masked_examples([s for d in read_documents(paths["heldout_corpus"])
                                for s in d], tokenizer)
    shown = []
    if examples:
        before = guesses(untrained, tokenizer, examples)
        after = guesses(pretraining.model, tokenizer, examples)
        print(f"\n  Masked words in held-out sentences: top 3 guesses, and the rank of the "
              f"answer among the {settings.vocab_size} tokens")
        for example, b_guess, a_guess in zip(examples, before, after):
            left = tokenizer.detokenize([example["ids"][:example["position"]]])[0].numpy()
            right = tokenizer.detokenize([example["ids"][example["position"] + 1:]])[0].numpy()
            print(f"\n  {left.decode()} [MASK] {right.decode()}")
            print(f"    answer {example['answer']!r}: untrained {', '.join(b_guess['top'])} "
                  f"(answer #{b_guess['answer_rank']}); pretrained "
                  f"{', '.join(a_guess['top'])} (answer #{a_guess['answer_rank']})")
            shown.append({"sentence": example["sentence"], "answer": example["answer"],
                          "untrained": b_guess, "pretrained": a_guess})
    report["heldout"] = heldout
    report["masked_word_guesses"] = shown

    # 6. fine-tuning ------------------------------------------------------------------------
    from keras_bert.tasks.finetuning import FinetuneOptions, Finetuning
    from keras_bert.tasks.library import LibraryTask

    task = LibraryTask(settings.sources)
    stages.start(6, "finetune", "Fine-tuning \"which library is this docstring sentence "
                 "from?\" from the pretrained and from a random encoder (same budget)")
    finetune_options = FinetuneOptions(
        max_seq_length=settings.max_seq_length, train_batch_size=32,
        learning_rate=settings.finetune_learning_rate,
        num_train_epochs=settings.finetune_epochs, seed=settings.seed)
    finetuned = {}
    for init, checkpoint, target in (
            ("pretrained", paths["pretrain_run"], paths["finetune_pretrained"]),
            ("random_init", paths["random_init"], paths["finetune_random"])):
        metrics_path = os.path.join(target, "metrics.json")
        if os.path.exists(metrics_path):
            say(f"  reusing {target}")
            with open(metrics_path, encoding="utf-8") as f:
                finetuned[init] = json.load(f)
            continue
        say(f"  from the {init.replace('_', ' ')} encoder ({checkpoint}):")
        finetuning = Finetuning(task, paths["task_data"], target, checkpoint=checkpoint,
                                options=finetune_options, overwrite=True,
                                progress=args.progress)
        steps = finetuning.steps_per_epoch()
        callback = json_progress_callback(
            f"finetune {init}", round(steps * settings.finetune_epochs), every=steps)
        finetuned[init] = finetuning.run(callbacks=[callback] if callback else [])
        emit("progress", stage="finetune", init=init,
             accuracy=float(finetuned[init]["accuracy"]))
    task_examples_count = {"train": c["task_train_examples"], "dev": c["task_dev_examples"]}
    majority = round(1 / len(settings.sources), 4)  # the classes are balanced
    report["finetune"] = {
        "task": "which library a docstring sentence comes from",
        "labels": list(settings.sources), "train_examples": task_examples_count["train"],
        "dev_examples": task_examples_count["dev"],
        "majority_class_accuracy": majority,
        "pretrained_accuracy": round(float(finetuned["pretrained"]["accuracy"]), 4),
        "random_init_accuracy": round(float(finetuned["random_init"]["accuracy"]), 4),
        "learning_rate": settings.finetune_learning_rate,
        "epochs": settings.finetune_epochs, "seed": settings.seed}
    f = report["finetune"]
    print(f"  {task_examples_count['train']} training and {task_examples_count['dev']} "
          f"held-out sentences, {len(settings.sources)} balanced classes")
    print(f"  held-out accuracy: majority class {majority:.3f}, random init "
          f"{f['random_init_accuracy']:.3f}, pretrained {f['pretrained_accuracy']:.3f}")

    # 7. export and serve -------------------------------------------------------------------
    stages.start(7, "export", "Export the fine-tuned classifier as a SavedModel, reload it, "
                 "classify through serve_text")
    from keras_bert.export import export_saved_model, load_export_source, serving_api_available

    # As `keras-bert export --checkpoint RUN` does it; the warmup file is an extra.
    warmup = serving_api_available()
    version_dir, card = export_saved_model(
        load_export_source(paths["finetune_pretrained"]), args.export_dir, EXPORT_NAME,
        warmup=warmup)
    version_dir = os.path.abspath(version_dir)
    say(f"  -> {version_dir}")
    dev = task.read_examples(os.path.join(paths["task_data"], "dev.tsv"))
    # Two short held-out sentences from different libraries (short: readable heat maps).
    short = [e for e in dev if len(e.text_a.split()) <= 14] or dev
    picked = [short[0]] + [e for e in short if e.label != short[0].label][:1]
    served = serve(version_dir, [e.text_a for e in picked])
    for example, result in zip(picked, served):
        result["truth"] = example.label
        print(f"  serve_text({example.text_a!r})\n    -> {result['label']} "
              f"(p={result['probability']:.2f}; it is from {example.label})")
    report["export"] = {"path": version_dir, "version": card.get("version"),
                        "signatures": sorted(card.get("signatures", {})), "warmup": warmup}
    report["serve_text"] = served

    # 8. pictures ------------------------------------------------------------------------
    stages.start(8, "pictures", "Pictures: attention of one sentence, training curves")
    pictures = {}
    try:
        from keras_bert.checkpoints import load_encoder
        from keras_bert.plotting import (
            attention_maps,
            read_training_curves,
            write_attention_plots,
            write_training_plots,
        )

        sentence = picked[0].text_a
        maps = attention_maps(load_encoder(paths["pretrain_run"]), tokenizer, sentence,
                              max_seq_length=settings.max_seq_length)
        pictures["attention"] = write_attention_plots(
            maps, paths["attention"], {"model": paths["pretrain_run"], "text": sentence})
        for name, run_dir in (("pretrain", paths["pretrain_run"]),
                              ("finetune_pretrained", paths["finetune_pretrained"]),
                              ("finetune_random_init", paths["finetune_random"])):
            pictures[name] = write_training_plots(read_training_curves(run_dir),
                                                  os.path.join(paths["plots"], name))
        say(f"  attention of {sentence!r}: {maps.num_layers} layers x {maps.num_heads} heads")
        for files in pictures.values():
            for path in files:
                if path.endswith(".png"):
                    say(f"  -> {path}")
    except ImportError as e:  # matplotlib is an optional extra
        print(f"  (no pictures: {e})")
    report["pictures"] = {k: [p for p in v if p.endswith(".png")] for k, v in pictures.items()}
    stages.end()

    stages.timings["total_s"] = round(time.monotonic() - started, 1)
    report["timings"] = stages.timings
    report["paths"] = {**paths, "saved_model": version_dir}
    report = json.loads(json.dumps(report, default=float))  # numpy scalars as numbers
    write_json(paths["metrics"], report, sort_keys=False)
    emit("result", metrics=paths["metrics"], heldout=report["heldout"],
         nsp_label_balance=balance, finetune=f, export=report["export"])

    print(f"\nDone in {stages.timings['total_s'] / 60:.1f} min. Outputs:")
    for name in ("corpus", "vocab", "train_data", "pretrain_run", "task_data",
                 "finetune_pretrained", "finetune_random", "attention", "plots", "metrics"):
        print(f"  {name + ':':<21} {paths[name]}")
    print(f"  {'saved_model:':<21} {version_dir}")
    say("\nNext:")
    say(f"  tensorboard --logdir {os.path.join(paths['pretrain_run'], 'logs')}")
    say(f"  keras-bert attention --model {paths['pretrain_run']} \"Returns a copy of the "
        f"array.\" --output_dir {os.path.join(out, 'attention_2')}")
    say(f"  keras-bert plot {paths['finetune_pretrained']}")
    say(f"  keras-bert encode --model {paths['pretrain_run']} \"Opens a file.\" "
        "\"Reads a file.\"")
    say(f"  saved_model_cli show --dir {version_dir} --signature_def serve_text "
        "--tag_set serve")
    return 0
