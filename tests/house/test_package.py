"""`import keras_bert`: light, and the same whatever the process's command line."""

import json
import subprocess
import sys

import pytest
from conftest import REPO

PROBE = r'''
import json, sys
sys.argv = {argv!r}
import keras_bert
loaded_at_import = sorted(m for m in sys.modules
                          if m == "tensorflow" or m.startswith("keras_bert."))
config = keras_bert.BertConfig.from_preset("tiny", vocab_size=10)
print(json.dumps({{"at_import": loaded_at_import, "vocab": config.vocab_size,
                  "config_module": type(config).__module__}}))
'''


@pytest.mark.parametrize("argv", [["-c"], ["keras-bert"], ["/usr/bin/keras-bert", "demo"],
                                  ["-m"]])
def test_import_loads_nothing_heavy_whatever_argv_holds(argv):
    proc = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # The facade's loader (and its package's docstring-only __init__), nothing else.
    assert result["at_import"] == ["keras_bert.core", "keras_bert.core.lazy"]
    assert result["vocab"] == 10 and result["config_module"] == "keras_bert.model.config"


def test_unknown_names_are_attribute_errors():
    import keras_bert

    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        keras_bert.NoSuchThing  # noqa: B018
    assert "BertEncoder" in dir(keras_bert) and "BertEncoder" in keras_bert.__all__


def test_the_init_does_not_read_the_command_line():
    # It reads `sys.modules` (is Keras imported?), never the command line.
    with open(f"{REPO}/keras_bert/__init__.py", encoding="utf-8") as f:
        source = f.read()
    assert "argv" not in source


def test_no_import_hook_anywhere():
    import glob

    for path in glob.glob(f"{REPO}/keras_bert/**/*.py", recursive=True):
        with open(path, encoding="utf-8") as f:
            assert "meta_path" not in f.read(), path


LOAD_AFTER_IMPORT = r'''
import sys
import keras, keras_bert
model = keras.saving.load_model(sys.argv[1])
print(type(model).__module__, type(model).__name__)
'''


def test_keras_then_keras_bert_loads_a_saved_classifier_in_a_fresh_process(tmp_path):
    import numpy as np

    from keras_bert import BertConfig, BertEncoder
    from keras_bert.tasks.glue.model import BertClassifier

    model = BertClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=20)),
                           num_classes=3)
    x = {"input_word_ids": np.ones((1, 4), "int32"), "input_mask": np.ones((1, 4), "int32"),
         "input_type_ids": np.zeros((1, 4), "int32")}
    model(x)
    path = str(tmp_path / "classifier.keras")
    model.save(path)
    proc = subprocess.run([sys.executable, "-c", LOAD_AFTER_IMPORT, path], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-2:] == ["keras_bert.tasks.glue.model", "BertClassifier"]
