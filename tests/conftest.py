import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from keras_bert import BertConfig  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.join(os.path.dirname(REPO), "shared", "data")


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1234)
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.fixture
def tiny_config():
    return BertConfig.from_preset("tiny", vocab_size=64, max_position_embeddings=64,
                                  hidden_size=32, num_heads=4, intermediate_size=64)


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
