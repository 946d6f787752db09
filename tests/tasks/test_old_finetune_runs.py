"""A fine-tuning run directory written by release 9273a48 keeps working: `keras-bert
predict` writes the file that release wrote, `BertClassifier.from_preset(RUN)` gives the
logits it gave (within 1e-5), and `keras-bert export` exits 0.

`tests/fixtures/finetune_run_9273a48/` was made by the code of commit 9273a48 (before
the run directory's layout changes), so its outputs are an independent reference:

    keras-bert finetune --task sst2 --data_dir data/SST-2 --output_dir run_sst2 \
        --preset tiny --vocab_file vocab.txt --max_seq_length 24 --num_train_epochs 3 \
        --learning_rate 1e-3 --train_batch_size 16 --seed 1
    keras-bert predict --model run_sst2 --task sst2 --input data/SST-2/dev.tsv \
        --output predictions.tsv
    # logits.npz: BertClassifier.from_preset("run_sst2").predict(texts of dev.tsv)

(`vocab.txt` is tests/conftest.py's VOCAB; the data is synthetic: label 1 when a
sentence holds "new", 0 when it holds "not".)"""

import os
import shutil

import numpy as np
import pytest
from conftest import REPO

import keras_bert
from keras_bert.cli import main

FIXTURE = os.path.join(REPO, "tests", "fixtures", "finetune_run_9273a48")


@pytest.fixture
def run(tmp_path):
    # A copy: no command may write into the committed fixture.
    return shutil.copytree(os.path.join(FIXTURE, "run_sst2"), tmp_path / "run_sst2")


def test_predict_writes_the_file_that_release_wrote(run, tmp_path):
    out = tmp_path / "predictions.tsv"
    assert main(["predict", "--model", str(run), "--task", "sst2", "--input",
                 os.path.join(FIXTURE, "data", "SST-2", "dev.tsv"), "--output", str(out),
                 "--quiet"]) == 0
    with open(os.path.join(FIXTURE, "predictions.tsv"), encoding="utf-8") as f:
        expected = f.read()
    assert out.read_text(encoding="utf-8") == expected
    assert len({row.split("\t")[1] for row in expected.splitlines()[1:]}) == 2


def test_from_preset_of_the_run_gives_that_release_logits(run):
    reference = np.load(os.path.join(FIXTURE, "logits.npz"))
    model = keras_bert.BertClassifier.from_preset(str(run))
    logits = model.predict([str(t) for t in reference["texts"]], verbose=0)
    np.testing.assert_allclose(logits, reference["logits"], atol=1e-5)


# Python's name of the format is the command's too.
@pytest.mark.parametrize("spelling", ["saved_model", "tf_saved_model"])
def test_export_of_the_run_exits_0(run, tmp_path, spelling):
    assert main(["export", "--checkpoint", str(run), "--output_dir", str(tmp_path / "out"),
                 "--name", "old", "--format", spelling, "--nowarmup", "--quiet"]) == 0
    versions = os.listdir(tmp_path / "out" / "old")
    assert versions == ["1"]
    assert os.path.exists(tmp_path / "out" / "old" / "1" / "saved_model.pb")


def test_the_runs_model_file_reloads_in_keras_without_warnings(run):
    """The run saved no optimizer state (AdamW's moments are of no use to predict):
    Keras alone reloads it compiled, with a fresh optimizer and no warning about
    skipped optimizer variables; a trained model's optimizer state still reloads."""
    import warnings

    import keras

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = keras.saving.load_model(os.path.join(str(run), "model.keras"))
    assert type(model).__name__ == "BertClassifier" and model.compiled
    assert int(model.optimizer.iterations.numpy()) == 0
    x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
         "input_type_ids": np.zeros((2, 8), "int32")}
    model.fit(x, np.array([0, 1]), verbose=0)
    path = os.path.join(str(run), "trained.keras")
    model.save(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = keras.saving.load_model(path)
    assert int(again.optimizer.iterations.numpy()) == 1
