"""Every public layer and model survives get_config/from_config and a .keras file with its
dtype policy (float32 and mixed_bfloat16) and its outputs."""

import keras
import numpy as np
import pytest
from conftest import random_batch
from harness import run_serialization_test, sublayer_policies

from keras_bert import BertEncoder
from keras_bert.model.layers import (
    BertEmbeddings,
    BertPooler,
    BertSelfAttention,
    MaskedLMHead,
    TransformerBlock,
    attention_bias,
)
from keras_bert.model.models import BertPretrainer
from keras_bert.tasks.task_models import (
    BertClassifier,
    BertFeatureExtractor,
    BertMultipleChoice,
    BertSpanLabeler,
    BertTokenClassifier,
)

POLICIES = ["float32", "mixed_bfloat16"]


@keras.saving.register_keras_serializable(package="keras_bert_tests")
class TiedHead(keras.layers.Layer):
    """A word embedding and the `MaskedLMHead` tied to it, so that the head (whose config
    leaves the embedding out) can go through a .keras file."""

    def __init__(self, vocab_size, hidden_size, hidden_act="gelu", **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.hidden_size, self.hidden_act = vocab_size, hidden_size, hidden_act
        self.embedding = keras.layers.Embedding(vocab_size, hidden_size,
                                                dtype=self.dtype_policy, name="embedding")
        self.embedding.build()
        self.head = MaskedLMHead(self.embedding, hidden_act=hidden_act,
                                 dtype=self.dtype_policy, name="head")

    def build(self, sequence_output_shape, masked_positions_shape):
        self.head.build()

    def call(self, sequence_output, masked_positions):
        return self.head(sequence_output, masked_positions)

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size, "hidden_act": self.hidden_act}


def _hidden(batch=2, seq=6, width=16, seed=0):
    return np.random.default_rng(seed).normal(size=(batch, seq, width)).astype("float32")


def _bias(batch=2, seq=6):
    mask = np.ones((batch, seq), "int32")
    mask[1, seq // 2:] = 0
    return attention_bias(mask)


def _positions():
    return np.array([[1, 2, 0], [3, 5, 4]], "int32")


def _layer_case(kind, policy):
    """(layer, inputs, from_config_kwargs) for one public layer."""
    if kind == "BertEmbeddings":
        layer = BertEmbeddings(vocab_size=30, hidden_size=16, max_position_embeddings=16,
                               dtype=policy)
        ids = np.random.default_rng(0).integers(0, 30, size=(2, 6)).astype("int32")
        return layer, (ids, np.zeros_like(ids)), {}
    if kind == "BertSelfAttention":
        return (BertSelfAttention(num_heads=2, head_size=8, dtype=policy),
                (_hidden(), _bias()), {})
    if kind == "TransformerBlock":
        return (TransformerBlock(num_heads=2, intermediate_size=32, hidden_act="gelu_tanh",
                                 dtype=policy), (_hidden(), _bias()), {})
    if kind == "BertPooler":
        return BertPooler(hidden_size=16, dtype=policy), _hidden(), {}
    if kind == "MaskedLMHead":
        embedding = keras.layers.Embedding(30, 16, dtype=policy)
        embedding.build()
        return (MaskedLMHead(embedding, hidden_act="relu", dtype=policy),
                (_hidden(), _positions()), {"embedding": embedding})
    raise ValueError(kind)


LAYERS = ["BertEmbeddings", "BertSelfAttention", "TransformerBlock", "BertPooler",
          "MaskedLMHead"]


def test_every_public_layer_is_covered():
    import keras_bert.model.layers

    public = {name for name in keras_bert.model.layers.__all__
              if isinstance(getattr(keras_bert.model.layers, name), type)
              and issubclass(getattr(keras_bert.model.layers, name), keras.layers.Layer)}
    assert public == set(LAYERS)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("kind", LAYERS)
def test_layer_serialization(kind, policy, tmp_path):
    layer, inputs, from_config_kwargs = _layer_case(kind, policy)
    assert layer.get_config()["dtype"]["config"]["name"] == policy
    # MaskedLMHead cannot be loaded on its own (its config leaves the embedding out):
    # it goes through a .keras file in `TiedHead` below and in BertPretrainer.
    run_serialization_test(layer, inputs, tmp_path, from_config_kwargs=from_config_kwargs,
                           keras_file=kind != "MaskedLMHead")


@pytest.mark.parametrize("policy", POLICIES)
def test_masked_lm_head_in_a_keras_file(policy, tmp_path):
    layer = TiedHead(vocab_size=30, hidden_size=16, hidden_act="gelu_tanh", dtype=policy)
    restored = run_serialization_test(layer, (_hidden(), _positions()), tmp_path)
    assert restored.head.dtype_policy.name == policy
    assert restored.head.embedding is restored.embedding


def _multiple_choice_batch():
    batch = random_batch(seq=8)
    return {k: np.stack([v, v[::-1]], 1) for k, v in batch.items()}


MODELS = {
    "BertEncoder": lambda e: e,
    "BertEncoder(output_attentions)": None,
    "BertPretrainer": lambda e: BertPretrainer(e),
    "BertPretrainer(mlm only)": lambda e: BertPretrainer(e, next_sentence=False),
    "BertClassifier": lambda e: BertClassifier(e, num_classes=3),
    "BertClassifier(regression)": lambda e: BertClassifier(e, num_classes=1, dropout=0.2),
    "BertSpanLabeler": lambda e: BertSpanLabeler(e),
    "BertTokenClassifier": lambda e: BertTokenClassifier(e, num_classes=4),
    "BertMultipleChoice": lambda e: BertMultipleChoice(e, num_choices=2),
    "BertFeatureExtractor": lambda e: BertFeatureExtractor(e, layers=(-2, -1), combine="sum"),
}


def test_every_model_is_covered():
    import keras_bert.model.models
    import keras_bert.tasks.glue.model
    import keras_bert.tasks.multiple_choice.model
    import keras_bert.tasks.squad.model
    import keras_bert.tasks.task_model

    # The model stage's and the families' own classes (the taggers have their tests).
    modules = (keras_bert.model.models, keras_bert.tasks.task_model,
               keras_bert.tasks.glue.model, keras_bert.tasks.squad.model,
               keras_bert.tasks.multiple_choice.model)
    public = {name for module in modules for name, value in vars(module).items()
              if not name.startswith("_") and isinstance(value, type)
              and issubclass(value, keras.Model) and value.__module__ == module.__name__
              and keras.saving.get_registered_name(value).startswith("keras_bert>")}
    public.add("BertTokenClassifier")
    assert public | {"BertEncoder"} == {name.split("(")[0] for name in MODELS}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("kind", list(MODELS))
def test_model_serialization(kind, policy, tiny_config, tmp_path):
    encoder = BertEncoder(tiny_config, output_attentions="output_attentions" in kind,
                          dtype=policy)
    model = (MODELS[kind] or (lambda e: e))(encoder)
    if kind.startswith("BertMultipleChoice"):
        x = _multiple_choice_batch()
    else:
        x = random_batch(seq=8)
    if kind.startswith("BertPretrainer"):
        x["masked_lm_positions"] = np.array([[1, 2]] * 3, "int32")
    assert model.dtype_policy.name == policy
    restored = run_serialization_test(model, x, tmp_path)
    restored_encoder = restored if isinstance(restored, BertEncoder) else restored.encoder
    assert restored_encoder.dtype_policy.name == policy
    assert restored_encoder.transformer_layers[0].attention.query.dtype_policy.name == policy


def test_mixed_bfloat16_encoder_and_classifier_survive_a_keras_file(tiny_config, tmp_path):
    x = random_batch()
    encoder = BertEncoder(tiny_config, dtype="mixed_bfloat16")
    classifier = BertClassifier(BertEncoder(tiny_config, dtype="mixed_bfloat16"), num_classes=3)
    for model in (encoder, classifier):
        path = str(tmp_path / f"{model.name}.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
        restored_encoder = restored if isinstance(restored, BertEncoder) else restored.encoder
        assert restored.dtype_policy.name == "mixed_bfloat16"
        assert restored_encoder.dtype_policy.name == "mixed_bfloat16"
        assert restored_encoder.embeddings.compute_dtype == "bfloat16"
        assert restored_encoder(x)["sequence_output"].dtype == "bfloat16"
        assert all(v.dtype == "float32" for v in restored.weights)
        assert sublayer_policies(restored) == sublayer_policies(model)
        for a, b in zip(keras.tree.flatten(model(x)), keras.tree.flatten(restored(x))):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(np.asarray(keras.ops.cast(b, "float32")),
                                          np.asarray(keras.ops.cast(a, "float32")))
    # The task's head follows the encoder's policy up to its output layer, which computes
    # in float32 (a bfloat16 regression output would keep 8 significant bits).
    assert classifier.get_layer("classifier_dropout").compute_dtype == "bfloat16"
    assert classifier.get_layer("logits").compute_dtype == "float32"
    assert classifier(x).dtype == "float32"


def test_policy_is_the_one_at_construction_not_at_loading(tiny_config, tmp_path):
    # Built under a global mixed policy, loaded under float32: stays mixed (and back).
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    mixed = BertClassifier(BertEncoder(tiny_config), num_classes=2)
    mixed.save(str(tmp_path / "mixed.keras"))
    keras.mixed_precision.set_global_policy("float32")
    assert keras.saving.load_model(str(tmp_path / "mixed.keras")).encoder.dtype_policy.name \
        == "mixed_bfloat16"
    full = BertEncoder(tiny_config)
    full.save(str(tmp_path / "full.keras"))
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    assert keras.saving.load_model(str(tmp_path / "full.keras")).dtype_policy.name == "float32"


def test_config_without_dtype_takes_the_global_policy(tiny_config):
    # Configs written before the encoder recorded its dtype still load.
    config = BertEncoder(tiny_config).get_config()
    del config["dtype"]
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    assert BertEncoder.from_config(config).dtype_policy.name == "mixed_bfloat16"
