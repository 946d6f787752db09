"""Config files read as their source meant them: a Hugging Face config.json without
`model_type` is still Hugging Face's (its "gelu" the exact GELU), Google's
bert_config.json stays Google's (its "gelu" the tanh form); every field is checked for
its type and range, and a fault names the file and the field as the file names it; a
checkpoint whose own vocab.txt and config disagree is its fault, not --vocab_file's; a
config.json that is not a JSON object says so, with the line and column of a JSON fault.
"""

import json
import os
import shutil

import numpy as np
import pytest
from cli_support import one_line_error
from conftest import minilm_path

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import load_encoder, open_artifact, read_config
from keras_bert.checkpoints.keras_hub_writing import save_keras_hub_preset
from keras_bert.checkpoints.names import encoder_slots, google_to_hf_name
from keras_bert.cli import main
from keras_bert.core.errors import ArgumentError, DataError, VocabMismatchError

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(27)]
# A tiny exact-GELU encoder with an epsilon of its own (both are what a Hugging Face
# config.json records and a Google bert_config.json cannot), its weights large enough
# for the two GELUs to differ clearly.
TINY = BertConfig.from_preset("tiny", vocab_size=len(TOKENS), num_layers=1,
                              max_position_embeddings=16, hidden_act="gelu",
                              layer_norm_eps=1e-6, initializer_range=0.3)
# The keys Hugging Face and Google share: all an old Hugging Face config.json may have.
SHARED_KEYS = ("attention_probs_dropout_prob", "hidden_act", "hidden_dropout_prob",
               "hidden_size", "initializer_range", "intermediate_size",
               "max_position_embeddings", "num_attention_heads", "num_hidden_layers",
               "type_vocab_size", "vocab_size")


def _write_vocab(path, tokens=TOKENS):
    path.write_text("".join(f"{t}\n" for t in tokens), encoding="utf-8")


def _hf_checkpoint(directory, config=TINY, seed=0):
    """A Hugging Face BertModel directory written by hand (safetensors, bare keys) from a
    random encoder; returns the encoder."""
    import keras
    from safetensors.numpy import save_file

    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(config)
    tensors = {}
    for slot in encoder_slots(encoder):
        value = slot.to_google()
        tensors[google_to_hf_name(slot.google_name, "")] = np.ascontiguousarray(
            value.T if slot.hf_transpose else value, dtype=np.float32)
    directory.mkdir()
    save_file(tensors, str(directory / "model.safetensors"))
    (directory / "config.json").write_text(json.dumps(config.to_hf_dict()))
    _write_vocab(directory / "vocab.txt")
    return encoder


def _edit_config(directory, change, name="config.json"):
    path = directory / name
    config = json.loads(path.read_text())
    change(config)
    path.write_text(json.dumps(config))


def _cli_error_line(argv, capsys):
    """The one line on stderr of a `keras-bert` run that ends as a user mistake (exit 2,
    no traceback), as `one_line_error` checks it, for words it must not hold."""
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (argv, code, err)
    return lines[0]


def _batch():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, len(TOKENS), size=(2, 12)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 8:] = 0
    return {"input_word_ids": ids, "input_mask": mask,
            "input_type_ids": np.zeros_like(ids)}


# --- Hugging Face's config.json without model_type ----------------------------------------

def test_an_old_hf_config_without_model_type_loads_as_with_it(tmp_path):
    original = _hf_checkpoint(tmp_path / "new")
    shutil.copytree(tmp_path / "new", tmp_path / "old")
    _edit_config(tmp_path / "old", lambda c: c.pop("model_type"))
    shutil.copytree(tmp_path / "new", tmp_path / "bare")
    _edit_config(tmp_path / "bare", lambda c: [c.pop(k) for k in list(c)
                                               if k not in SHARED_KEYS])
    assert "model_type" not in json.loads((tmp_path / "bare" / "config.json").read_text())
    batch = _batch()

    def outputs(config):  # the original weights in an encoder of `config`
        encoder = BertEncoder(config)
        encoder.set_weights(original.get_weights())
        return np.asarray(encoder(batch)["sequence_output"])

    # The bare file has no layer_norm_eps of its own: Hugging Face's default 1e-12.
    expected = {"new": TINY, "old": TINY, "bare": TINY.replace(layer_norm_eps=1e-12)}
    for name, config in expected.items():
        assert read_config(tmp_path / name) == config, name
        np.testing.assert_allclose(load_encoder(tmp_path / name)(batch)["sequence_output"],
                                   outputs(config), atol=1e-6, rtol=0, err_msg=name)
    # Read as Google's (tanh) GELU, the outputs would move by far more than that.
    tanh = outputs(expected["bare"].replace(hidden_act="gelu_tanh"))
    assert np.abs(tanh - outputs(expected["bare"])).max() > 1e-4


@pytest.mark.parametrize("name,extra,expected", [
    ("config.json", {}, "gelu"),  # Hugging Face's file name
    ("bert_config.json", {}, "gelu_tanh"),  # Google's: its "gelu" is the tanh form
    ("my_config.json", {}, "gelu_tanh"),
    ("bert_config.json", {"layer_norm_eps": 1e-12}, "gelu"),  # a key only HF writes
    ("bert_config.json", {"transformers_version": "4.1.0"}, "gelu"),
    ("config.json", {"gelu_approximation": "tanh"}, "gelu_tanh"),  # keras_bert's Google key
])
def test_the_format_is_told_by_its_keys_and_file_name(tmp_path, name, extra, expected):
    google = {**BertConfig.from_preset("base").to_google_dict(), "hidden_act": "gelu"}
    google.pop("gelu_approximation")
    (tmp_path / name).write_text(json.dumps({**google, **extra}))
    assert BertConfig.from_json_file(tmp_path / name).hidden_act == expected


def test_minilm_config_json_without_model_type_reads_the_same(tmp_path):
    source = minilm_path()
    copy = tmp_path / "minilm"
    copy.mkdir()
    for name in os.listdir(source):
        if name != "config.json":
            os.symlink(os.path.join(source, name), copy / name)
    config = json.loads(open(os.path.join(source, "config.json"), encoding="utf-8").read())
    assert config.pop("model_type") == "bert" and config["hidden_act"] == "gelu"
    (copy / "config.json").write_text(json.dumps(config))
    assert read_config(copy) == read_config(source)
    assert read_config(copy).hidden_act == "gelu"


# --- each field's type and range ----------------------------------------------------------

@pytest.mark.parametrize("key,value,expected", [
    ("num_hidden_layers", True, "num_hidden_layers must be an integer, got True"),
    ("num_hidden_layers", 2.0, "num_hidden_layers must be an integer, got 2.0"),
    ("num_hidden_layers", 0, "num_hidden_layers must be >= 1, got 0"),
    ("hidden_size", "128", "hidden_size must be an integer, got '128'"),
    ("vocab_size", None, "vocab_size must be an integer, got None"),
    ("num_attention_heads", 3, "hidden_size (128) must be divisible by num_attention_heads (3)"),
    ("hidden_dropout_prob", 1.0, "hidden_dropout_prob must be in [0.0, 1.0), got 1.0"),
    ("attention_probs_dropout_prob", "0.1",
     "attention_probs_dropout_prob must be a finite number, got '0.1'"),
    ("layer_norm_eps", 0, "layer_norm_eps must be > 0, got 0"),
    ("initializer_range", False, "initializer_range must be a finite number, got False"),
    ("hidden_act", ["gelu"], "Unsupported hidden_act ['gelu']"),
])
def test_a_field_of_the_wrong_type_or_range_is_named(tmp_path, key, value, expected):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY.to_hf_dict(), key: value}))
    with pytest.raises(DataError) as error:
        BertConfig.from_json_file(path)
    assert str(error.value).startswith(f"{path}: ") and expected in str(error.value)


def test_google_fields_are_named_as_the_file_names_them(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({**TINY.to_google_dict(), "num_hidden_layers": True,
                                "hidden_dropout_prob": -0.5}))
    with pytest.raises(DataError, match=r"bert_config.json: Invalid BertConfig: "
                       r"num_hidden_layers must be an integer, got True; "
                       r"hidden_dropout_prob must be in \[0.0, 1.0\), got -0.5\.$"):
        BertConfig.from_json_file(path)
    # Built directly, a BertConfig names its own fields still.
    with pytest.raises(ArgumentError, match="num_layers must be an integer, got True"):
        BertConfig(num_layers=True)


def test_a_one_layer_model_is_not_built_from_true(tmp_path, capsys):
    _hf_checkpoint(tmp_path / "m")
    _edit_config(tmp_path / "m", lambda c: c.update(num_hidden_layers=True))
    one_line_error(["encode", "w1 w2", "--model", str(tmp_path / "m")], capsys,
                    str(tmp_path / "m" / "config.json"), "num_hidden_layers", "True",
                    "must be an integer")


def test_a_keras_hub_backbone_field_is_checked(tmp_path):
    encoder = BertEncoder(TINY.replace(hidden_act="gelu_tanh", layer_norm_eps=1e-12))
    _write_vocab(tmp_path / "vocab.txt")
    save_keras_hub_preset(encoder, tmp_path / "p", tmp_path / "vocab.txt")

    def change(c):
        c["config"]["num_layers"] = True
        c["config"]["dropout"] = 1.5

    _edit_config(tmp_path / "p", change)
    with pytest.raises(DataError) as error:
        read_config(tmp_path / "p")
    message = str(error.value)
    assert message.startswith(str(tmp_path / "p" / "config.json"))
    assert "num_layers must be an integer, got True" in message
    assert message.count("dropout must be in [0.0, 1.0), got 1.5") == 1  # one key, once


# --- a checkpoint whose own vocab.txt and config disagree ---------------------------------

def test_a_checkpoints_own_vocab_of_another_size_blames_the_checkpoint(tmp_path, capsys):
    model = tmp_path / "m"
    _hf_checkpoint(model)
    _write_vocab(model / "vocab.txt", TOKENS + ["extra"])
    resolved = open_artifact(model)
    with pytest.raises(VocabMismatchError) as error:
        resolved.check_vocab()
    message = str(error.value)
    assert error.value.field is None
    assert str(model / "config.json") in message and str(model / "vocab.txt") in message
    assert "vocab_size 32" in message and "33 tokens" in message
    assert "vocab_file" not in message
    line = _cli_error_line(["encode", "w1", "--model", str(model)], capsys)
    assert str(model / "config.json") in line and str(model / "vocab.txt") in line
    assert "vocab_file" not in line


def test_a_given_vocab_of_another_size_still_blames_vocab_file(tmp_path, capsys):
    model = tmp_path / "m"
    _hf_checkpoint(model)
    _write_vocab(tmp_path / "other.txt", TOKENS + ["extra"])
    with pytest.raises(VocabMismatchError) as error:
        open_artifact(model, tmp_path / "other.txt").check_vocab()
    assert error.value.field == "vocab_file"
    one_line_error(["encode", "w1", "--model", str(model), "--vocab_file",
                     str(tmp_path / "other.txt")], capsys, "--vocab_file", "other.txt")


# --- config.json that is not a JSON object ------------------------------------------------

def _keras_hub_preset(tmp_path, text):
    encoder = BertEncoder(TINY.replace(hidden_act="gelu_tanh", layer_norm_eps=1e-12))
    _write_vocab(tmp_path / "vocab.txt")
    save_keras_hub_preset(encoder, tmp_path / "p", tmp_path / "vocab.txt")
    (tmp_path / "p" / "config.json").write_text(text)
    return tmp_path / "p"


def test_a_keras_hub_config_that_is_not_json_names_line_and_column(tmp_path, capsys):
    preset = _keras_hub_preset(tmp_path, '{"module": "keras_hub.src.models.bert",\n'
                                         '  "class_name" "BertBackbone"}')
    with pytest.raises(DataError) as error:
        read_config(preset)
    assert str(error.value).startswith(f"{preset / 'config.json'}:2: not valid JSON at "
                                       "line 2, column 16")
    assert error.value.line == 2
    one_line_error(["encode", "w1", "--model", str(preset)], capsys,
                    f"{preset / 'config.json'}:2", "line 2, column 16")


@pytest.mark.parametrize("kind", ["keras_hub", "hf"])
def test_a_config_json_holding_a_list_says_so(tmp_path, capsys, kind):
    if kind == "hf":
        model = tmp_path / "m"
        _hf_checkpoint(model)
        (model / "config.json").write_text("[1, 2]")
    else:
        model = _keras_hub_preset(tmp_path, "[1, 2]")
    with pytest.raises(DataError, match=r"config.json: holds a JSON list, expected an "
                                        r"object with|serialized keras-hub BertBackbone"):
        read_config(model)
    one_line_error(["encode", "w1", "--model", str(model)], capsys,
                    str(model / "config.json"), "holds a JSON list, expected")

