"""Scoring a split (`predict_split`): every example scored exactly once, in its own
place, whatever the batch size, and the predict step traced once."""

import numpy as np
import pytest

from keras_bert.model.config import BertConfig
from keras_bert.model.encoder import BertEncoder
from keras_bert.tasks.base import Features, FeatureSettings, feature_dataset, length_order
from keras_bert.tasks.finetuning.scoring import predict_split
from keras_bert.tasks.glue.task import GlueExample
from keras_bert.tasks.registry import get_task
from keras_bert.training.tracing import TraceClock

SENTENCES = ["A dog runs.", "The man plays the piano in the park.", "Kids play.",
             "A woman slices an onion.", "Two kids play football in the park today.", "Yes",
             "A dog is running in a park.", "Children are playing a game.",
             "The man plays.", "A woman slices an onion and a man plays the piano."]


def _features(lengths):
    """Features whose first token is their own index, each `lengths[i]` long."""
    n, seq = len(lengths), max(lengths) + 2
    ids = np.zeros((n, seq), np.int32)
    for i, length in enumerate(lengths):
        ids[i, :length] = 1
        ids[i, 0] = 100 + i
    return Features(inputs={"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32),
                            "input_type_ids": np.zeros_like(ids)},
                    labels=None, lengths=np.asarray(lengths), example_index=np.arange(n))


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, 10, 64])
@pytest.mark.parametrize("by_length", [False, True])
def test_evaluation_batches_hold_every_feature_once(batch_size, by_length):
    lengths = [5, 1, 7, 3, 3, 9, 2, 6, 4, 8]
    features = _features(lengths)
    order = length_order(features) if by_length else None
    seen = []
    for batch in feature_dataset(features, batch_size, with_labels=False, order=order):
        ids = batch["input_word_ids"].numpy()
        rows = (ids[:, 0] - 100).tolist()
        seen += rows
        # Each batch is cut to its longest sequence, and keeps every real token.
        assert ids.shape[1] == max(lengths[r] for r in rows)
        assert batch["input_mask"].numpy().sum(axis=1).tolist() == [lengths[r] for r in rows]
    assert sorted(seen) == list(range(len(lengths)))
    expected = np.argsort(lengths, kind="stable").tolist() if by_length else list(range(10))
    assert seen == expected


def test_evaluation_order_must_be_a_permutation():
    with pytest.raises(ValueError, match="permutation"):
        feature_dataset(_features([2, 3, 4]), 2, with_labels=False, order=[0, 0, 1])


def test_every_example_is_scored_once_in_its_place_whatever_the_batch_size(tokenizer):
    # STS-B predictions are the model's output itself, so each can be checked against
    # the model run on that one example alone, unpadded.
    task = get_task("stsb")
    examples = [GlueExample(str(i), SENTENCES[i], SENTENCES[-1 - i], 1.0)
                for i in range(len(SENTENCES))]
    settings = FeatureSettings(max_seq_length=32)
    features = task.features(examples, tokenizer, settings)
    config = BertConfig.from_preset("tiny", vocab_size=tokenizer.vocab_size,
                                      max_position_embeddings=64, hidden_size=32,
                                      num_heads=4, intermediate_size=64)
    model = task.build_model(BertEncoder(config))
    alone = []
    for i, length in enumerate(features.lengths):
        x = {k: v[i:i + 1, :length] for k, v in features.inputs.items()}
        alone.append(float(np.asarray(model(x, training=False)).reshape(-1)[0]))
    assert len(set(features.lengths.tolist())) > 3  # batches of different lengths
    clock = TraceClock()
    clock.watch(model)
    for batch_size in (1, 3, 4, 10, 64):
        predicted = predict_split(task, model, examples, features, settings, batch_size)
        assert len(predicted) == len(examples)
        np.testing.assert_allclose(predicted, alone, rtol=1e-4, atol=1e-5)
    # Batches of every size and length ran on the first call's one trace.
    assert clock.traces["predict_step"] == 1


def test_metrics_json_is_strict_json_with_the_reason_beside_a_null(tmp_path):
    import json
    import math

    from keras_bert.tasks.finetuning.scoring import write_metrics

    path = str(tmp_path / "metrics.json")
    write_metrics(path, {"pearson": float("nan"), "spearmanr": 0.5,
                         "dev_mismatched": {"accuracy": float("inf")}})

    def no_constants(name):
        raise AssertionError(f"{name} is not JSON")

    with open(path) as f:
        metrics = json.loads(f.read(), parse_constant=no_constants)
    assert metrics["pearson"] is None and "not a number" in metrics["pearson_null_reason"]
    assert metrics["spearmanr"] == 0.5 and not math.isnan(metrics["spearmanr"])
    assert metrics["dev_mismatched"]["accuracy"] is None
    assert "accuracy_null_reason" in metrics["dev_mismatched"]
