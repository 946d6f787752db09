"""The demo's corpus, built from text found on this machine: the English docstrings of
installed Python libraries, read with `ast` (never imported), split into sentences,
deduplicated across the corpus and grouped into documents of 40+ sentences, 1 document
in 10 held out; and the derived task's examples ("which library is this sentence
from?") drawn from the same documents."""

from __future__ import annotations

import ast
import concurrent.futures
import importlib.util
import multiprocessing
import os
import random
import re
import sys
import sysconfig

from keras_bert.core.fileio import atomic_write

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
# Words of grammar rather than content: prose has some; the demo masks no such word.
FUNCTION_WORDS = frozenset(
    "the a an is are was be been of to and in on for with as by this that it which or "
    "if not can will from".split())
# The derived task asks which library a sentence is from: sentences that name one are
# left out of it, so the model must go by vocabulary and style.
_NAMES_A_LIBRARY = re.compile(r"\b(python|numpy|np|tensorflow|tf|keras|scipy|jax|torch)\b",
                              re.IGNORECASE)


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
            and any(w.lower() in FUNCTION_WORDS for w in words))


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
        if isinstance(node, _DOCUMENTED):
            docstring = ast.get_docstring(node)
            if docstring:
                sentences.extend(english_sentences(docstring))
        # Definitions are statements, and statements sit only in the statement lists of
        # other statements (and of except and case clauses), never in expressions: only
        # those are walked, in the order ast.iter_child_nodes gives them.
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                for child in value:
                    if isinstance(child, _HOLDS_STATEMENTS):
                        collect(child)

    collect(tree)
    return sentences


_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


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
        read = _file_documents(files)
        for sentences in tqdm.tqdm(read, total=len(files), desc=f"corpus {source}",
                                   unit="file", leave=False, disable=not progress):
            for sentence in sentences:
                if sentence not in seen:
                    seen.add(sentence)
                    current.append(sentence)
                    size += len(sentence) + 1
            if len(current) >= min_sentences:
                documents.append(current)
                current = []
            if size >= per_source:
                read.close()
                break
        if len(current) >= 2:
            documents.append(current)
        corpus[source] = documents
    return corpus


def _file_documents(files):
    """`file_document` of each file, in order, parsed by one process per CPU core
    (forked: `ast` parsing is pure Python; not once TensorFlow is loaded, whose threads
    a fork does not copy). Closing the generator cancels the files not yet parsed."""
    workers = min(os.cpu_count() or 1, 8)
    if (workers < 2 or len(files) < 2 or "tensorflow" in sys.modules
            or "fork" not in multiprocessing.get_all_start_methods()):
        yield from map(file_document, files)
        return
    pool = concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("fork"))
    try:
        yield from pool.map(file_document, files, chunksize=4)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


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
