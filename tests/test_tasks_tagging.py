import os

import keras
import numpy as np
import pytest
from conftest import REPO

from keras_bert import BertConfig, BertEncoder, BertTokenizer
from keras_bert.errors import ArgumentError, DataError
from keras_bert.tasks.base import FeatureSettings, feature_dataset
from keras_bert.tasks.tagging import NerExample, NerTask
from keras_bert.tasks.tagging_models import IGNORE_LABEL, BertFeatureBasedTagger, BertNerTagger

DATA = os.path.join(REPO, "tests", "data", "tasks", "conll2003")
TRAIN_TAGS = ("O", "B-LOC", "I-LOC", "I-MISC", "I-ORG", "I-PER")


@pytest.fixture(scope="module")
def small_tokenizer():
    return BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "anna", "visit",
                          "##ed", "oslo", "."])


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_read_conll():
    task = NerTask()
    train = task.read_examples(task.split_path(DATA, "train"))
    assert [len(e.words) for e in train] == [8, 6, 5]  # -DOCSTART- lines are skipped
    assert train[0].words[:4] == ("Anna", "Berg", "visited", "Oslo")
    assert train[0].tags[:4] == ("I-PER", "I-PER", "O", "I-LOC")
    assert train[1].tags[2:4] == ("I-LOC", "B-LOC")  # IOB1: B- between two LOC chunks
    assert [e.line for e in train] == [3, 12, 21]
    assert task.split_path(DATA, "dev").endswith("valid.txt")
    dev = task.read_examples(task.split_path(DATA, "dev"), labelled=False)
    assert dev[0] == NerExample(("Berg", "left", "Acme", "."), None, 3)
    assert NerTask.label_list_of(train) == TRAIN_TAGS


def test_read_errors(tmp_path):
    task = NerTask()
    with pytest.raises(DataError, match=r"tag\.txt:2: tag 'PER' is not 'O'"):
        task.read_examples(_write(tmp_path, "tag.txt", "Anna NNP B-NP I-PER\nBerg NNP B-NP PER\n"))
    with pytest.raises(DataError, match=r"cols\.txt:3: has 2 columns, expected 4"):
        task.read_examples(_write(tmp_path, "cols.txt", "a X X O\n\nb I-PER\n"))
    with pytest.raises(DataError, match=r"one\.txt:1: has one column"):
        task.read_examples(_write(tmp_path, "one.txt", "Anna\n"))
    with pytest.raises(DataError, match="has no sentences"):
        task.read_examples(_write(tmp_path, "empty.txt", "-DOCSTART- -X- -X- O\n\n\n"))
    words = task.read_examples(_write(tmp_path, "words.txt", "Anna\nsings\n\nOk\n"),
                               labelled=False)
    assert [e.words for e in words] == [("Anna", "sings"), ("Ok",)]
    with pytest.raises(ArgumentError, match="no split"):
        task.split_path(DATA, "dev_matched")


def test_label_on_first_sub_token(small_tokenizer):
    task = NerTask()
    examples = [NerExample(("Anna", "visited", "Oslo", "."), ("I-PER", "O", "I-LOC", "O")),
                NerExample(("visited", "\u200b"), ("O", "I-MISC"))]  # a word of no pieces
    features = task.features(examples, small_tokenizer, FeatureSettings(max_seq_length=9))
    assert task.labels == ("O", "I-LOC", "I-MISC", "I-PER")
    per, loc, misc, o, x = 3, 1, 2, 0, IGNORE_LABEL
    # [CLS] anna visit ##ed oslo . [SEP]
    assert features.inputs["input_word_ids"][0].tolist() == [2, 5, 6, 7, 8, 9, 3, 0, 0]
    assert features.labels[0].tolist() == [x, per, o, x, loc, o, x, x, x]
    # The zero-piece word becomes [UNK] and keeps its label.
    assert features.inputs["input_word_ids"][1].tolist() == [2, 6, 7, 1, 3, 0, 0, 0, 0]
    assert features.labels[1].tolist() == [x, o, x, misc, x, x, x, x, x]
    assert features.lengths.tolist() == [7, 5]
    assert features.inputs["input_mask"].sum(axis=1).tolist() == [7, 5]
    assert not features.inputs["input_type_ids"].any()
    assert features.extra["truncated_words"] == 0
    assert features.extra["word_positions"].tolist() == [1, 2, 4, 5, 1, 3]
    assert features.extra["word_splits"].tolist() == [0, 4, 6]


def test_truncation_and_decode(small_tokenizer, tmp_path):
    task = NerTask(labels=("O", "I-LOC", "I-PER"))
    examples = [NerExample(("Anna", "visited", "Oslo", "."), ("I-PER", "O", "I-LOC", "O"))]
    # Room for 3 pieces: anna visit ##ed; "Oslo" and "." are cut.
    features = task.features(examples, small_tokenizer, FeatureSettings(max_seq_length=5))
    assert features.inputs["input_word_ids"][0].tolist() == [2, 5, 6, 7, 3]
    assert features.labels[0].tolist() == [-1, 2, 0, -1, -1]
    assert features.extra["truncated_words"] == 2
    # Word pieces cut: oslo and "." (anna visit ##ed oslo . = 5 pieces, room for 3).
    assert features.extra["truncated_tokens"].tolist() == [2]
    assert features.extra["word_positions"].tolist() == [1, 2, -1, -1]
    logits = np.zeros((1, 5, 3), np.float32)
    logits[0, 1, 2] = logits[0, 2, 1] = 5.0  # anna -> I-PER, visited -> I-LOC
    logits[0, 3, 2] = 9.0  # a continuation piece: never read
    predictions = task.decode(examples, features, logits)
    assert predictions == [["I-PER", "I-LOC", "O", "O"]]
    metrics = task.evaluate(examples, predictions)
    assert metrics == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5})
    path = str(tmp_path / "ner.txt")
    task.write_predictions(examples, predictions, path)
    assert open(path).read() == ("Anna I-PER I-PER\nvisited O I-LOC\nOslo I-LOC O\n"
                                 ". O O\n\n")
    with pytest.raises(ArgumentError, match="outputs"):
        task.decode(examples, features, logits[0])


def test_unknown_tags_and_config(small_tokenizer):
    task = NerTask()
    with pytest.raises(ArgumentError, match="no label list"):
        task.build_model(None)
    with pytest.raises(ArgumentError, match="no label list"):
        task.features([NerExample(("anna",))], small_tokenizer, FeatureSettings())
    task.features([NerExample(("anna", "oslo"), ("I-PER", "O"))], small_tokenizer,
                  FeatureSettings(max_seq_length=8))
    dev = task.features([NerExample(("anna", "oslo"), ("I-PER", "B-LOC"))], small_tokenizer,
                        FeatureSettings(max_seq_length=8))
    assert dev.labels[0, :3].tolist() == [-1, 1, -1] and dev.extra["unknown_tags"] == 1
    restored = NerTask()
    restored.restore(task.config())
    assert restored.labels == ("O", "I-PER") and task.config()["task"] == "ner"
    assert NerTask.from_config(task.config()).labels == restored.labels
    unlabelled = restored.features([NerExample(("anna",))], small_tokenizer, FeatureSettings())
    assert unlabelled.labels is None
    with pytest.raises(ArgumentError, match="distinct"):
        NerTask(labels=["O", "O"])


def _encoder(tokenizer, num_layers=2):
    return BertEncoder(BertConfig.from_preset(
        "tiny", vocab_size=tokenizer.vocab_size, hidden_size=32, num_heads=4,
        intermediate_size=64, max_position_embeddings=64, num_layers=num_layers))


def test_fine_tuning_end_to_end(tokenizer, tmp_path):
    task = NerTask()
    settings = FeatureSettings(max_seq_length=24)
    train_examples = task.read_examples(task.split_path(DATA, "train"))
    train = task.features(train_examples, tokenizer, settings)
    assert task.labels == TRAIN_TAGS
    model = task.build_model(_encoder(tokenizer))
    assert isinstance(model, BertNerTagger) and model.num_classes == len(TRAIN_TAGS)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit(feature_dataset(train, 2, training=True, seed=0), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])

    # The default loss is the cross-entropy averaged over labelled positions only.
    batch = next(iter(feature_dataset(train, 3)))
    logits = model.predict_on_batch(batch[0])
    labels = batch[1].numpy()
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    mask = labels != IGNORE_LABEL
    expected = -np.mean(log_probs[mask, labels[mask]])
    assert float(model.loss(labels, logits)) == pytest.approx(expected, rel=1e-5)

    dev_examples = task.read_examples(task.split_path(DATA, "dev"))
    dev = task.features(dev_examples, tokenizer, settings)
    # Batches of one are cut to different lengths: predict returns ragged outputs.
    outputs = model.predict(feature_dataset(dev, 1, with_labels=False), verbose=0)
    predictions = task.decode(dev_examples, dev, outputs, settings)
    assert [len(p) for p in predictions] == [len(e.words) for e in dev_examples]
    assert all(t in TRAIN_TAGS for p in predictions for t in p)
    assert set(task.evaluate(dev_examples, predictions)) == {"precision", "recall", "f1"}
    path = str(tmp_path / "dev.txt")
    task.write_predictions(dev_examples, predictions, path)
    blocks = open(path).read().split("\n\n")
    assert blocks[-1] == "" and len(blocks) == len(dev_examples) + 1
    first = [line.split(" ") for line in blocks[0].splitlines()]
    assert [row[:2] for row in first] == [[w, t] for w, t in zip(dev_examples[0].words,
                                                                 dev_examples[0].tags)]
    assert [row[2] for row in first] == predictions[0]


def test_feature_based_end_to_end(tokenizer, tmp_path):
    task = NerTask()
    settings = FeatureSettings(max_seq_length=24)
    train = task.features(task.read_examples(task.split_path(DATA, "train")), tokenizer,
                          settings)
    encoder = _encoder(tokenizer, num_layers=4)
    model = task.build_model(encoder, feature_based=True, lstm_units=8)
    assert isinstance(model, BertFeatureBasedTagger)
    assert model.layers_used == (-4, -3, -2, -1)
    encoder_before = [w.numpy() for w in encoder.weights]
    model.compile()
    model.fit(feature_dataset(train, 2, training=True, seed=0), epochs=1, verbose=0)
    assert all(np.array_equal(a, w.numpy()) for a, w in zip(encoder_before, encoder.weights))
    assert encoder.trainable  # frozen inside the tagger only
    assert not any(w is v for w in model.trainable_weights for v in encoder.weights)
    x = next(iter(feature_dataset(train, 3, with_labels=False)))
    out = model.predict_on_batch(x)
    assert out.shape == (3, x["input_word_ids"].shape[1], len(TRAIN_TAGS))

    path = str(tmp_path / "tagger.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BertFeatureBasedTagger) and loaded.lstm_units == 8
    np.testing.assert_allclose(loaded.predict_on_batch(x), out, atol=1e-5)
    assert len(loaded.trainable_weights) == len(model.trainable_weights) == 14


def test_features_match_a_word_by_word_reference(small_tokenizer):
    """The vectorized alignment against the plain loop it replaces."""
    tok = small_tokenizer
    rng = np.random.default_rng(0)
    vocabulary = ["Anna", "visited", "Oslo", ".", "visit", "\u200b", "zebra"]
    tags = ["O", "I-PER", "B-PER", "I-LOC"]
    examples = [NerExample(tuple(vocabulary[i] for i in rng.integers(0, 7, n)),
                           tuple(tags[i] for i in rng.integers(0, 4, n)))
                for n in rng.integers(1, 9, size=40)]
    task = NerTask(labels=tags)
    seq = 7
    features = task.features(examples, tok, FeatureSettings(max_seq_length=seq))
    truncated = 0
    for i, example in enumerate(examples):
        ids, labels, positions = [tok.cls_id], [IGNORE_LABEL], []
        for word, tag in zip(example.words, example.tags):
            pieces = tok.tokenize(word).numpy().tolist() or [tok.unk_id]
            positions.append(len(ids) if len(ids) < seq - 1 else -1)
            truncated += positions[-1] < 0
            for k, piece in enumerate(pieces):
                if len(ids) < seq - 1:
                    ids.append(piece)
                    labels.append(tags.index(tag) if k == 0 else IGNORE_LABEL)
        ids.append(tok.sep_id)
        labels.append(IGNORE_LABEL)
        pad = seq - len(ids)
        assert features.inputs["input_word_ids"][i].tolist() == ids + [tok.pad_id] * pad
        assert features.labels[i].tolist() == labels + [IGNORE_LABEL] * pad
        splits = features.extra["word_splits"]
        assert features.extra["word_positions"][splits[i]:splits[i + 1]].tolist() == positions
        assert features.lengths[i] == len(ids)
    assert features.extra["truncated_words"] == truncated > 0
