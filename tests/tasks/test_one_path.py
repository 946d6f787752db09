"""One model, one path: `keras-bert finetune` and `from_preset` + `compile()` + `fit`
build and train the same task object with the same recipe, so the same seed, rows and
settings give the same weights; the run's model.keras is that object, which
`keras.saving.load_model` opens in a fresh process and whose `classify` gives
`keras-bert predict`'s labels."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from conftest import REPO, VOCAB

import keras_bert
from keras_bert.checkpoints import save_encoder
from keras_bert.cli import main
from keras_bert.model.config import BertConfig
from keras_bert.model.encoder import BertEncoder

SEQ, BATCH, EPOCHS, SEED = 24, 8, 2, 3


def _rows(count, offset):
    words = ["the", "film", "was", "a", "story", "of", "time", "and", "data", "model"]
    rng = np.random.default_rng(offset)
    rows = []
    for _ in range(count):
        label = int(rng.integers(2))
        body = " ".join(rng.choice(words, size=int(rng.integers(2, 9))))
        rows.append((f"{body} {'new' if label else 'not'} {body[:5]}".strip(), label))
    return rows


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("one_path")
    checkpoint = root / "tiny"
    save_encoder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=len(VOCAB))), checkpoint)
    (checkpoint / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    train, dev = _rows(40, 0), _rows(16, 1)
    data = root / "SST-2"
    data.mkdir()
    for name, rows in (("train.tsv", train), ("dev.tsv", dev)):
        (data / name).write_text("sentence\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows),
                                 encoding="utf-8")
    run = root / "run"
    assert main(["finetune", "--task", "sst2", "--data_dir", str(data), "--output_dir",
                 str(run), "--checkpoint", str(checkpoint), "--max_seq_length", str(SEQ),
                 "--num_train_epochs", str(EPOCHS), "--train_batch_size", str(BATCH),
                 "--seed", str(SEED), "--quiet"]) == 0
    return {"checkpoint": str(checkpoint), "train": train, "dev": dev, "data": str(data),
            "run": str(run), "root": root}


def test_the_command_and_python_train_the_same_model(trained):
    keras.utils.set_random_seed(SEED)
    model = keras_bert.BertClassifier.from_preset(trained["checkpoint"], num_classes=2,
                                                  sequence_length=SEQ)
    model.compile()
    model.fit([t for t, _ in trained["train"]], [y for _, y in trained["train"]],
              batch_size=BATCH, epochs=EPOCHS, verbose=0)
    command = keras.saving.load_model(os.path.join(trained["run"], "model.keras"))
    assert type(command) is type(model)
    for ours, theirs in zip(model.get_weights(), command.get_weights(), strict=True):
        np.testing.assert_allclose(theirs, ours, atol=2e-5)
    texts = [t for t, _ in trained["dev"]]
    np.testing.assert_allclose(command.predict(texts, verbose=0),
                               model.predict(texts, verbose=0), atol=1e-4)
    # Not the checkpoint's weights: both trained.
    fresh = keras_bert.BertClassifier.from_preset(trained["checkpoint"], num_classes=2)
    assert not np.allclose(fresh.encoder.get_weights()[0], model.encoder.get_weights()[0])


PROBE = r'''
import json, sys
import keras, keras_bert
model = keras.saving.load_model(sys.argv[1])
texts = [line.split("\t")[0] for line in open(sys.argv[2], encoding="utf-8").read().splitlines()[1:]]
print(json.dumps({"class": type(model).__name__,
                  "labels": [label for label, _ in model.classify(texts)]}))
'''


def test_the_runs_model_keras_opens_fresh_and_classifies_as_predict_does(trained, tmp_path):
    out = tmp_path / "predictions.tsv"
    dev = os.path.join(trained["data"], "dev.tsv")
    assert main(["predict", "--model", trained["run"], "--task", "sst2", "--input", dev,
                 "--output", str(out), "--quiet"]) == 0
    predicted = [row.split("\t")[1] for row in out.read_text(encoding="utf-8").splitlines()[1:]]
    proc = subprocess.run([sys.executable, "-c", PROBE,
                           os.path.join(trained["run"], "model.keras"), dev],
                          capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["class"] == "BertClassifier"
    assert result["labels"] == predicted and len(predicted) == len(trained["dev"])
