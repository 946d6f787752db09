"""`keras-bert export --quantize int8|int4|float8`: the SavedModel of a run quantized by
the model's own Keras quantization (`model.quantize(mode)`), as Python's
`model.quantize(mode)` then `model.export(...)` writes it; LiteRT keeps its converter's
modes, and a mode of the other format is refused before any work."""

import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import REPO

from keras_bert.cli import main

RUN = os.path.join(REPO, "tests", "fixtures", "finetune_run_9273a48", "run_sst2")
TEXTS = ["a new film", "not a good one", "new and bright", "it is not new"] * 4


def _export(tmp_path, name, *flags):
    assert main(["export", "--checkpoint", RUN, "--output_dir", str(tmp_path), "--name",
                 name, "--nowarmup", "--quiet", *flags]) == 0
    return os.path.join(tmp_path, name, "1")


def _serve(path):
    loaded = tf.saved_model.load(path)
    logits = loaded.signatures["serve_text"](text=tf.constant(TEXTS))["logits"].numpy()
    dtypes = {v.dtype.name for v in loaded.variables}
    return logits, dtypes


def test_int8_saved_model_serves_close_to_the_float_one(tmp_path):
    float_logits, float_dtypes = _serve(_export(tmp_path, "float"))
    int8_logits, int8_dtypes = _serve(_export(tmp_path, "int8", "--quantize", "int8"))
    assert "int8" in int8_dtypes and "int8" not in float_dtypes
    scale = np.abs(float_logits).max()
    assert np.abs(int8_logits - float_logits).max() < 0.05 * scale + 1e-3
    assert not np.array_equal(int8_logits, float_logits)  # quantized, not the float model


@pytest.mark.parametrize("fmt,mode", [("litert", "int8"), ("saved_model", "float16"),
                                      ("onnx", "int4")])
def test_a_mode_of_another_format_is_refused_before_any_work(tmp_path, capsys, fmt, mode):
    assert main(["export", "--checkpoint", RUN, "--output_dir", str(tmp_path / "out"),
                 "--format", fmt, "--quantize", mode, "--quiet"]) == 2
    assert f"--quantize {mode} is not for --format {fmt}" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "out")
