"""The task models' raw-text face (issue 41): `fit` / `evaluate` / `predict` on Python
lists, numpy arrays and tf.data of strings with dynamic padding, the one readable call
per family (`classify`, `answer`, `tag`, `choose`) decoded as `keras-bert predict`
decodes, `compile()` with the recipe, a `.keras` file that reloads in a fresh process
after `import keras_bert` with its compile state, `export()` served by TensorFlow alone,
`from_preset` of a fine-tuning run, and clear errors. Tiny random-weight encoders over
tests/fixtures's vocabulary keep it fast: these test the plumbing; the real MiniLM run
is `benchmarks/recipe.py`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import REPO
from export_support import VOCAB, rich_tokenizer, tiny_config

import keras_bert
import keras_bert.cli
from keras_bert.core.errors import ArgumentError
from keras_bert.tasks.keras_face import TextPreprocessor, classification_task
from keras_bert.tasks.registry import get_task

SQUAD_DEV = os.path.join(REPO, "tests", "fixtures", "tasks", "squad", "dev-v1.1.json")
TEXTS = ["a gripping and moving film", "dull , long and empty", "wonderful acting",
         "a waste of time", "the best story this year", "boring"]
LABELS = ["pos", "neg", "pos", "neg", "pos", "neg"]


def _encoder(seed=0):
    keras.utils.set_random_seed(seed)
    return keras_bert.BertEncoder(tiny_config(rich_tokenizer(False).vocab_size))


def _classifier(labels=("neg", "pos"), pair=False, seq=32):
    preprocessor = TextPreprocessor.for_task(classification_task(list(labels), pair=pair),
                                             VOCAB, lower_case=False, sequence_length=seq)
    return keras_bert.BertClassifier(_encoder(), num_classes=len(labels),
                                     preprocessor=preprocessor)


def _run(script, *args, env=None):
    child = subprocess.run([sys.executable, "-c", script, *map(str, args)],
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **(env or {})})
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(child.stdout.strip().splitlines()[-1])


# --- fit / evaluate / predict on raw text ----------------------------------------------


def test_fit_on_lists_learns_and_evaluate_reports_the_metric():
    model = _classifier()
    model.compile()
    before = model.predict(TEXTS, verbose=0)
    history = model.fit(TEXTS * 4, LABELS * 4, batch_size=4, epochs=3, seed=1, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    after = model.predict(TEXTS, verbose=0)
    assert after.shape == (len(TEXTS), 2) and not np.allclose(before, after)
    # The recipe was sized for this run: 6 steps per epoch, 3 epochs, 10% warmup.
    schedule = model.optimizer.get_config()["learning_rate"]["config"]
    assert schedule["total_steps"] == 18 and schedule["warmup_steps"] == 1
    results = model.evaluate(TEXTS, LABELS, return_dict=True, verbose=0)
    predicted = np.argmax(after, axis=-1)
    expected = np.mean(predicted == np.array([1, 0, 1, 0, 1, 0]))
    assert results["accuracy"] == pytest.approx(expected)


def test_inputs_in_every_form_give_the_same_outputs():
    model = _classifier()
    reference = model.predict(TEXTS, verbose=0)
    as_array = model.predict(np.array(TEXTS), verbose=0)
    elements = model.predict(tf.data.Dataset.from_tensor_slices(TEXTS), verbose=0)
    batches = model.predict(tf.data.Dataset.from_tensor_slices(TEXTS).batch(4), verbose=0)
    for got in (as_array, elements, batches):
        np.testing.assert_allclose(got, reference, atol=1e-6)
    # Labels inside a dataset, as names or indices.
    model.compile()
    labelled = tf.data.Dataset.from_tensor_slices((TEXTS, [1, 0, 1, 0, 1, 0])).batch(2)
    a = model.evaluate(labelled, return_dict=True, verbose=0)
    b = model.evaluate(TEXTS, LABELS, return_dict=True, verbose=0)
    assert a["accuracy"] == pytest.approx(b["accuracy"])


def test_batches_are_padded_to_their_longest_sequence():
    model = _classifier(seq=32)
    dataset = model.preprocessor.dataset(["short", "a much longer sentence than the other",
                                          "tiny", "x"], batch_size=2)[0]
    lengths = [x["input_word_ids"].shape[1] for x in dataset]
    tokens = [len(rich_tokenizer(False).tokenize(t)) for t in
              ["a much longer sentence than the other", "x"]]
    assert lengths == [tokens[0] + 2, max(len(rich_tokenizer(False).tokenize("tiny")),
                                          tokens[1]) + 2]


def test_pairs_and_regression():
    pair_model = _classifier(pair=True)
    a = pair_model.predict((["a man plays", "a cat"], ["someone plays", "a dog"]), verbose=0)
    b = pair_model.predict({"text": ["a man plays", "a cat"],
                            "text_pair": ["someone plays", "a dog"]}, verbose=0)
    c = pair_model.predict([("a man plays", "someone plays"), ("a cat", "a dog")], verbose=0)
    np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(a, c, atol=1e-6)
    regressor = keras_bert.BertClassifier(
        _encoder(), num_classes=1, preprocessor=TextPreprocessor.for_task(
            classification_task(None, num_classes=1), VOCAB, lower_case=False,
            sequence_length=32))
    regressor.compile()
    regressor.fit(TEXTS, [4.5, 0.5, 4.0, 1.0, 5.0, 0.0], batch_size=3, verbose=0)
    scores = regressor.classify(TEXTS[:2])
    assert all(isinstance(s, float) and p is None for s, p in scores)


def test_classify_names_the_label_with_its_probability():
    model = _classifier()
    logits = model.predict(TEXTS, verbose=0)
    got = model.classify(TEXTS)
    probabilities = tf.nn.softmax(logits).numpy()
    assert [label for label, _ in got] == [("neg", "pos")[i] for i in logits.argmax(-1)]
    np.testing.assert_allclose([p for _, p in got], probabilities.max(-1), atol=1e-6)
    assert model.classify(TEXTS[0]) == got[0]


def test_tagger_and_multiple_choice_train_and_read():
    labels = ("O", "B-PER", "I-PER", "B-LOC")
    task = get_task("ner")
    task.restore({"task": "ner", "labels": list(labels)})
    tagger = task.build_model(_encoder())
    tagger.preprocessor = TextPreprocessor(task, rich_tokenizer(False),
                                           keras_bert.FinetuneOptions(
                                               max_seq_length=32).feature_settings())
    tagger.compile()
    sentences = ["Ann lives in Paris", "Bob Smith ran"]
    tags = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "I-PER", "O"]]
    tagger.fit(sentences * 4, tags * 4, batch_size=4, verbose=0)
    tagged = tagger.tag(sentences)
    assert [[w for w, _ in s] for s in tagged] == [s.split() for s in sentences]
    assert all(t in labels for s in tagged for _, t in s)
    assert tagger.tag([["Ann", "ran"]])[0][0][0] == "Ann"

    swag = get_task("swag")
    chooser = swag.build_model(_encoder())
    chooser.preprocessor = TextPreprocessor(swag, rich_tokenizer(False),
                                            keras_bert.FinetuneOptions(
                                                max_seq_length=32).feature_settings())
    chooser.compile()
    x = {"context": ["She opens the door .", "He drinks"],
         "endings": [["She walks in .", "It sings .", "Rain eats ."], ["water .", "a car ."]]}
    chooser.fit(x, [0, 0], batch_size=2, verbose=0)
    (index, text), second = chooser.choose(x["context"], x["endings"])
    assert x["endings"][0][index] == text and second[0] in (0, 1)


def test_mistakes_are_named():
    ids_only = keras_bert.BertClassifier(_encoder(), num_classes=2)
    with pytest.raises(ArgumentError, match="from_preset"):
        ids_only.classify(["text"])
    model = _classifier()
    with pytest.raises(ArgumentError, match="'maybe' is not one of"):
        model.fit(TEXTS[:2], ["pos", "maybe"], verbose=0)
    with pytest.raises(ArgumentError, match="class index 0-1"):
        model.fit(TEXTS[:2], [0, 2], verbose=0)
    with pytest.raises(ArgumentError, match="2 inputs but 3 labels"):
        model.fit(TEXTS[:2], [0, 1, 1], verbose=0)
    with pytest.raises(ArgumentError, match="single texts"):
        model.predict((["a"], ["b"]), verbose=0)


# --- save, reload, export --------------------------------------------------------------


_RELOAD = """
import json, sys
import keras, keras_bert  # nothing else: the .keras file holds the rest
model = keras.saving.load_model(sys.argv[1])
texts = json.loads(sys.argv[2])
print(json.dumps({"logits": model.predict(texts, verbose=0).tolist(),
                  "compiled": model.compiled,
                  "metrics": model.evaluate(texts, json.loads(sys.argv[3]), return_dict=True,
                                            verbose=0),
                  "trainable": len(model.trainable_weights)}))
"""


def _trained_and_reloaded(model, path):
    """`model` compiled, fitted, saved to `path` and reloaded in a fresh process: what
    `_RELOAD` reports, its logits checked against this process's."""
    model.compile()
    model.fit(TEXTS, LABELS, batch_size=3, verbose=0)
    model.save(str(path))
    got = _run(_RELOAD, path, json.dumps(TEXTS), json.dumps(LABELS))
    np.testing.assert_allclose(got["logits"], model.predict(TEXTS, verbose=0), atol=1e-5)
    return got


def test_a_saved_model_reloads_in_a_fresh_process(tmp_path):
    got = _trained_and_reloaded(_classifier(), tmp_path / "clf.keras")
    assert got["compiled"] and "accuracy" in got["metrics"]


def test_a_lora_model_reloads_equal(tmp_path):
    model = _classifier()
    model.enable_lora(4)
    got = _trained_and_reloaded(model, tmp_path / "lora.keras")
    assert got["trainable"] == len(model.trainable_weights)


_SERVE = """
import json, sys
import tensorflow as tf, tensorflow_text  # noqa: F401 (the tokenizer's ops)
loaded = tf.saved_model.load(sys.argv[1])
out = loaded.signatures["serve_text"](text=tf.constant(json.loads(sys.argv[2])))
print(json.dumps({k: v.numpy().tolist() for k, v in out.items() if v.dtype != tf.string}))
"""


def test_export_serves_raw_text_like_predict(tmp_path):
    model = _classifier()
    version = model.export(str(tmp_path / "sst"), warmup=False)
    assert os.path.basename(version) == "1" and os.path.isfile(
        os.path.join(version, "saved_model.pb"))
    served = _run(_SERVE, version, json.dumps(TEXTS))
    np.testing.assert_allclose(served["logits"], model.predict(TEXTS, verbose=0), atol=1e-4)


def test_a_squad_run_answers_as_its_predictions_json(tmp_path):
    """A squad1 run of `keras-bert finetune` (tiny, random start) opened with
    `BertSpanLabeler.from_preset`: `answer` gives the answers the run wrote to its
    predictions.json for the dev articles, which it never trained on."""
    # Dev: passages the run never trains on (the training file's are others).
    squad = tmp_path / "squad"
    squad.mkdir()
    shutil.copyfile(os.path.join(os.path.dirname(SQUAD_DEV), "train-v1.1.json"),
                    squad / "train-v1.1.json")
    passages = [("The lighthouse on the northern cape was built in 1871 by a stonemason "
                 "named Oskar Lind, who carried every block from the quarry by boat.",
                 [("Who built the lighthouse?", "Oskar Lind"),
                  ("When was the lighthouse built?", "1871")]),
                ("Blue herons nest in tall reeds along the river, and they return each "
                 "spring after wintering near the southern coast.",
                 [("Where do blue herons nest?", "in tall reeds along the river"),
                  ("When do the herons return?", "each spring")])]
    articles = [{"title": "unseen", "paragraphs": [
        {"context": context, "qas": [
            {"id": f"q{i}{j}", "question": q,
             "answers": [{"text": a, "answer_start": context.index(a)}]}
            for j, (q, a) in enumerate(qas)]} for i, (context, qas) in enumerate(passages)]}]
    with open(squad / "dev-v1.1.json", "w") as f:
        json.dump({"version": "1.1", "data": articles}, f)
    with open(squad / "train-v1.1.json") as f:
        train_contexts = {p["context"] for a in json.load(f)["data"] for p in a["paragraphs"]}
    assert not train_contexts & {context for context, _ in passages}
    run = tmp_path / "squad_run"
    code = keras_bert.cli.main([
        "finetune", "--task", "squad1", "--data_dir", str(squad), "--output_dir", str(run),
        "--preset", "tiny", "--vocab_file", VOCAB, "--do_lower_case=false",
        "--max_seq_length", "64", "--doc_stride", "16", "--max_query_length", "16",
        "--train_batch_size", "8", "--num_train_epochs", "1", "--noprogress", "--quiet"])
    assert code == 0
    questions, contexts, ids = [], [], []
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                questions.append(qa["question"])
                contexts.append(paragraph["context"])
                ids.append(qa["id"])
    labeler = keras_bert.BertSpanLabeler.from_preset(str(run))
    assert labeler.preprocessor.settings.doc_stride == 16
    with open(run / "predictions.json") as f:
        expected = json.load(f)
    assert labeler.answer(questions, contexts) == [expected[i] for i in ids]


def test_from_preset_of_a_keras_file_and_a_checkpoint(tmp_path):
    model = _classifier()
    path = str(tmp_path / "clf.keras")
    model.save(path)
    again = keras_bert.BertClassifier.from_preset(path)
    np.testing.assert_allclose(again.predict(TEXTS, verbose=0),
                               model.predict(TEXTS, verbose=0), atol=1e-6)
    with pytest.raises(ArgumentError, match="not a BertSpanLabeler"):
        keras_bert.BertSpanLabeler.from_preset(path)
    checkpoint = str(tmp_path / "encoder")
    keras_bert.save_encoder(_encoder(), checkpoint)
    shutil.copyfile(VOCAB, os.path.join(checkpoint, "vocab.txt"))
    fresh = keras_bert.BertClassifier.from_preset(checkpoint, label_names=["a", "b", "c"],
                                                  sequence_length=24, lower_case=False)
    assert fresh.num_classes == 3 and fresh.preprocessor.sequence_length == 24
    assert {label for label, _ in fresh.classify(TEXTS)} <= {"a", "b", "c"}


def test_from_preset_of_a_keras_hub_classifier_keeps_its_head(tmp_path):
    from keras_bert.checkpoints import save_keras_hub_preset

    keras.utils.set_random_seed(4)
    config = tiny_config(rich_tokenizer(False).vocab_size).replace(hidden_act="gelu_tanh")
    trained = keras_bert.BertClassifier(keras_bert.BertEncoder(config), num_classes=3)
    preset = str(tmp_path / "hub")
    save_keras_hub_preset(trained, preset, VOCAB, lower_case=False, sequence_length=24)
    model = keras_bert.BertClassifier.from_preset(preset)
    assert model.num_classes == 3 and model.preprocessor.sequence_length == 24
    reference = keras_bert.BertClassifier(trained.encoder, num_classes=3, preprocessor=(
        TextPreprocessor.for_task(classification_task(["0", "1", "2"]), VOCAB,
                                  lower_case=False, sequence_length=24)))
    reference.get_layer("logits").set_weights(trained.get_layer("logits").get_weights())
    np.testing.assert_allclose(model.predict(TEXTS, verbose=0),
                               reference.predict(TEXTS, verbose=0), atol=1e-5)
    with pytest.raises(ArgumentError, match="3 classes, not 2"):
        keras_bert.BertClassifier.from_preset(preset, num_classes=2)


_JAX = """
import json, sys
import keras, numpy as np, keras_bert
from keras_bert.tasks.keras_face import TextPreprocessor, classification_task
sys.path.insert(0, sys.argv[1])
from export_support import VOCAB, rich_tokenizer, tiny_config
keras.utils.set_random_seed(0)
model = keras_bert.BertClassifier(
    keras_bert.BertEncoder(tiny_config(rich_tokenizer(False).vocab_size)), num_classes=2,
    preprocessor=TextPreprocessor.for_task(classification_task(["neg", "pos"]), VOCAB,
                                           lower_case=False, sequence_length=32))
model.compile()
texts, labels = json.loads(sys.argv[2]), json.loads(sys.argv[3])
history = model.fit(texts * 4, labels * 4, batch_size=4, epochs=2, seed=1, verbose=0)
model.save(sys.argv[4])
again = keras.saving.load_model(sys.argv[4])
print(json.dumps({"backend": keras.backend.backend(), "loss": history.history["loss"],
                  "accuracy": model.evaluate(texts, labels, return_dict=True,
                                             verbose=0)["accuracy"],
                  "same": float(np.abs(again.predict(texts, verbose=0)
                                       - model.predict(texts, verbose=0)).max())}))
"""


@pytest.mark.parametrize("backend", ["jax", pytest.param("torch", marks=pytest.mark.slow)])
def test_fit_evaluate_save_load_on_another_backend(backend, tmp_path):
    pytest.importorskip(backend)
    got = _run(_JAX, os.path.join(REPO, "tests"), json.dumps(TEXTS), json.dumps(LABELS),
               tmp_path / f"{backend}.keras", env={"KERAS_BACKEND": backend})
    assert got["backend"] == backend and got["loss"][-1] < got["loss"][0]
    assert 0 <= got["accuracy"] <= 1 and got["same"] < 1e-5


def test_a_quantized_model_exports_and_refuses_a_keras_file(tmp_path):
    import warnings

    model = _classifier()
    logits = model.predict(TEXTS, verbose=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LayerNorm and dropout have nothing to quantize
        model.quantize("int8")
    with pytest.raises(ArgumentError, match="quantize"):
        model.save(str(tmp_path / "q.keras"))
    assert not (tmp_path / "q.keras").exists()
    version = model.export(str(tmp_path / "q"), warmup=False)
    served = _run(_SERVE, version, json.dumps(TEXTS))
    np.testing.assert_allclose(served["logits"], model.predict(TEXTS, verbose=0), atol=1e-4)
    assert np.abs(np.asarray(served["logits"]) - logits).max() > 0  # int8 weights served


@pytest.mark.slow
@pytest.mark.parametrize("format", ["litert", "onnx"])
def test_export_to_litert_and_onnx(format, tmp_path):
    model = _classifier()
    version = model.export(str(tmp_path / "m"), format=format)
    assert os.listdir(version) and any(
        name.endswith(".tflite" if format == "litert" else ".onnx") for name in os.listdir(version))
