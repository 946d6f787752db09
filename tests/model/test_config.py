import json

import pytest

from keras_bert import PRESETS, BertConfig, BertEncoder


# BERT-large's count is the same code path at 3x the build time: -m slow runs it.
@pytest.mark.parametrize("preset,expected", [
    ("base", 109_482_240), pytest.param("large", 335_141_888, marks=pytest.mark.slow)])
def test_paper_parameter_counts_match_hugging_face(preset, expected):
    # Hugging Face BertModel (with pooler) counts, vocab 30522, 512 positions, 2 types.
    encoder = BertEncoder(BertConfig.from_preset(preset))
    assert encoder.count_params() == expected


def test_small_bert_grid():
    shapes = {name: (p["num_layers"], p["hidden_size"], p["num_heads"]) for name, p in PRESETS.items()}
    assert shapes["tiny"] == (2, 128, 2)
    assert shapes["mini"] == (4, 256, 4)
    assert shapes["small"] == (4, 512, 8)
    assert shapes["medium"] == (8, 512, 8)
    assert shapes["base"] == (12, 768, 12)
    assert shapes["large"] == (24, 1024, 16)


def test_google_bert_config_json(tmp_path):
    # The bert_config.json that ships with Google's uncased_L-12_H-768_A-12.
    google = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
              "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
              "intermediate_size": 3072, "max_position_embeddings": 512,
              "num_attention_heads": 12, "num_hidden_layers": 12, "type_vocab_size": 2,
              "vocab_size": 30522}
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(google))
    cfg = BertConfig.from_json_file(path)
    # google-research/bert's "gelu" is the tanh approximation.
    assert cfg.hidden_act == "gelu_tanh"
    assert cfg == BertConfig.from_preset("base", hidden_act="gelu_tanh")
    cfg.to_json_file(tmp_path / "out.json", format="google")
    assert json.loads((tmp_path / "out.json").read_text()) == google


def test_hugging_face_config_json(tmp_path):
    hf = {"model_type": "bert", "hidden_act": "gelu", "hidden_size": 384,
          "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536,
          "vocab_size": 30522, "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
          "type_vocab_size": 2}
    (tmp_path / "config.json").write_text(json.dumps(hf))
    cfg = BertConfig.from_json_file(tmp_path / "config.json")
    assert (cfg.num_layers, cfg.hidden_size, cfg.num_heads, cfg.hidden_act) == (6, 384, 12, "gelu")
    cfg.to_json_file(tmp_path / "back.json", format="hf")
    assert BertConfig.from_json_file(tmp_path / "back.json") == cfg
    cfg.to_json_file(tmp_path / "ours.json")
    assert BertConfig.from_json_file(tmp_path / "ours.json") == cfg


def test_exact_gelu_round_trips_through_google_format(tmp_path):
    cfg = BertConfig.from_preset("mini", hidden_act="gelu")
    d = cfg.to_google_dict()
    # Google's code reads "gelu" (as tanh); the marker keeps keras_bert exact.
    assert d["hidden_act"] == "gelu" and d["gelu_approximation"] == "none"
    cfg.to_json_file(tmp_path / "bert_config.json", format="google")
    assert BertConfig.from_json_file(tmp_path / "bert_config.json") == cfg
    assert "gelu_approximation" not in cfg.replace(hidden_act="gelu_tanh").to_google_dict()


@pytest.mark.parametrize("kwargs,match", [
    ({"hidden_size": 100, "num_heads": 12}, "divisible"),
    ({"num_layers": 0}, "num_layers must be >= 1, got 0"),
    ({"vocab_size": "100"}, "vocab_size must be an integer"),
    ({"hidden_act": "swishy"}, "hidden_act"),
    ({"hidden_dropout": 1.5}, "hidden_dropout"),
])
def test_bad_config_values_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BertConfig(**kwargs)


def test_unknown_preset_lists_available():
    with pytest.raises(ValueError, match="available presets"):
        BertConfig.from_preset("huge")


def test_config_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        BertConfig.from_json_file(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        BertConfig.from_json_file(tmp_path / "bad.json")
    (tmp_path / "roberta.json").write_text(json.dumps({"model_type": "roberta"}))
    with pytest.raises(ValueError, match="only 'bert'"):
        BertConfig.from_json_file(tmp_path / "roberta.json")
