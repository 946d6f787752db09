"""`.keras` files saved before the package moved into stage folders (`keras_bert/layers`
-> `keras_bert/model/layers`, `keras_bert/models` -> `keras_bert/model/models` -> each task family's
`keras_bert/tasks/FAMILY/model.py`, ...) still
load, and give the outputs they gave when saved.

`tests/fixtures/keras_files_c0e3879/` was written by the code of commit c0e3879 (the last one
with the old layout): a tiny classifier, span labeler, tagger, multiple-choice model and
pretrainer, each `.keras` file with its inputs and outputs in `outputs.npz` (made by the
old code, so an independent reference for the new)."""

import os

import keras
import numpy as np
import pytest
from conftest import REPO

import keras_bert.tasks.task_models  # noqa: F401  (registers the classes, as README says)

DATA = os.path.join(REPO, "tests", "fixtures", "keras_files_c0e3879")
NAMES = ["classifier", "span_labeler", "tagger", "multiple_choice", "pretrainer"]


@pytest.mark.parametrize("name", NAMES)
def test_an_old_keras_file_loads_and_gives_its_outputs(name):
    arrays = np.load(os.path.join(DATA, "outputs.npz"))
    model = keras.saving.load_model(os.path.join(DATA, f"{name}.keras"))
    inputs = {k.split("|")[2]: arrays[k] for k in arrays.files
              if k.startswith(f"{name}|input|")}
    out = model.predict_on_batch(inputs)
    out = out if isinstance(out, dict) else {"out": out}
    expected = {k.split("|")[1]: arrays[k] for k in arrays.files
                if k.startswith(f"{name}|") and "|input|" not in k}
    assert sorted(out) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(np.asarray(out[key]), value, atol=1e-5, err_msg=key)
