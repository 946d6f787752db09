import os

import keras
import numpy as np
import pytest
from conftest import REPO

from keras_bert import BertConfig, BertEncoder, BertTokenizer
from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.tasks.base import FeatureSettings, feature_dataset, truncation_report
from keras_bert.tasks.tagging.model import IGNORE_LABEL, BertFeatureBasedTagger, BertNerTagger
from keras_bert.tasks.tagging.task import NerExample, NerTask
from keras_bert.tasks.windows import (
    best_windows,
    max_context_windows,
    window_spans,
    window_table,
)

DATA = os.path.join(REPO, "tests", "fixtures", "tasks", "conll2003")
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
    # One feature per sentence that fits: nothing is windowed or cut.
    assert features.example_index.tolist() == [0, 1]
    assert features.extra["truncated_tokens"].tolist() == [0, 0]
    assert features.extra["word_features"].tolist() == [0, 0, 0, 0, 1, 1]
    assert features.extra["word_positions"].tolist() == [1, 2, 4, 5, 1, 3]
    assert features.extra["word_splits"].tolist() == [0, 4, 6]


def test_windows_and_decode(small_tokenizer, tmp_path):
    task = NerTask(labels=("O", "I-LOC", "I-PER"))
    examples = [NerExample(("Anna", "visited", "Oslo", "."), ("I-PER", "O", "I-LOC", "O")),
                NerExample(("Oslo",), ("I-LOC",))]
    # anna visit ##ed oslo . = 5 pieces, 3 to a window, starts 1 apart: windows at
    # pieces 0, 1 and 2. The second sentence fits in one.
    settings = FeatureSettings(max_seq_length=5, doc_stride=1)
    features = task.features(examples, small_tokenizer, settings)
    assert features.inputs["input_word_ids"].tolist() == [
        [2, 5, 6, 7, 3], [2, 6, 7, 8, 3], [2, 7, 8, 9, 3], [2, 8, 3, 0, 0]]
    assert features.lengths.tolist() == [5, 5, 5, 3]
    assert features.example_index.tolist() == [0, 0, 0, 1]
    # Every window labels the first pieces it holds (##ed is no first piece).
    per, loc, o, x = 2, 1, 0, IGNORE_LABEL
    assert features.labels.tolist() == [[x, per, o, x, x], [x, o, x, loc, x],
                                        [x, x, loc, o, x], [x, loc, x, x, x]]
    # Max context, min(left, right) + 0.01 * 3: anna only in window 0; visit 1 in
    # window 0 against 0 in window 1; oslo 0 in window 1 against 1 in window 2; "."
    # only in window 2.
    assert features.extra["word_features"].tolist() == [0, 0, 2, 2, 3]
    assert features.extra["word_positions"].tolist() == [1, 2, 2, 3, 1]
    assert features.extra["truncated_tokens"].tolist() == [0, 0]  # windows cut nothing
    assert truncation_report(features, 5) == ("no example was cut to max_seq_length 5",
                                              False)
    logits = np.zeros((4, 5, 3), np.float32)
    logits[0, 1, per] = logits[0, 2, loc] = 5.0  # anna -> I-PER, visited -> I-LOC
    logits[2, 2, o] = logits[2, 3, per] = 5.0  # oslo -> O, "." -> I-PER
    logits[3, 1, loc] = 5.0  # the second sentence's Oslo -> I-LOC
    logits[1, 1, per] = logits[1, 3, per] = 9.0  # visit, oslo out of context: not read
    logits[0, 3, per] = 9.0  # a continuation piece: never read
    predictions = task.decode(examples, features, logits, settings)
    assert predictions == [["I-PER", "I-LOC", "O", "I-PER"], ["I-LOC"]]
    metrics = task.evaluate(examples, predictions)  # 2 of 4 chunks right, 2 of 3 found
    assert metrics == pytest.approx({"precision": 1 / 2, "recall": 2 / 3, "f1": 4 / 7})
    path = str(tmp_path / "ner.txt")
    task.write_predictions(examples, predictions, path)
    assert open(path).read() == ("Anna I-PER I-PER\nvisited O I-LOC\nOslo I-LOC O\n"
                                 ". O I-PER\n\nOslo I-LOC I-LOC\n\n")
    with pytest.raises(ArgumentError, match="outputs"):
        task.decode(examples, features, logits[0])
    with pytest.raises(ArgumentError, match="outputs"):
        task.decode(examples[:1], features, logits)


def test_a_sentence_that_fits_is_not_windowed(small_tokenizer):
    """doc_stride only matters past max_seq_length: the features are the same."""
    task = NerTask(labels=("O", "I-PER"))
    examples = [NerExample(("Anna", "visited", "Oslo"), ("I-PER", "O", "O"))]
    one, other = (task.features(examples, small_tokenizer,
                                FeatureSettings(max_seq_length=6, doc_stride=stride))
                  for stride in (1, 128))
    assert one.inputs["input_word_ids"].tolist() == [[2, 5, 6, 7, 8, 3]]
    for a, b in ((one.inputs, other.inputs), (one.extra, other.extra)):
        assert all(np.array_equal(a[k], b[k]) for k in a)
    assert np.array_equal(one.labels, other.labels)
    with pytest.raises(ArgumentError, match="doc_stride"):
        task.features(examples, small_tokenizer, FeatureSettings(doc_stride=0))


def test_windows_in_tensorflow_equal_the_python_rule():
    """`window_table` and `best_windows` (the exported graph's) against `window_spans`
    and `max_context_windows` (the features') on every small case."""
    lengths = list(range(0, 30))
    for size in range(1, 8):
        for stride in range(1, 10):
            table = {k: v.numpy() for k, v in window_table(lengths, size, stride).items()}
            expected = [window_spans(n, size, stride) for n in lengths]
            got = [list(zip(table["start"][a:b].tolist(), table["length"][a:b].tolist()))
                   for a, b in zip(table["splits"][:-1], table["splits"][1:])]
            assert got == expected, (size, stride)
            assert table["sequence"].tolist() == [i for i, e in enumerate(expected)
                                                  for _ in e]
            tokens = [t for n in lengths for t in range(n)]
            sequences = [i for i, n in enumerate(lengths) for _ in range(n)]
            best = best_windows(tokens, sequences, lengths, size, stride).numpy().tolist()
            assert best == [int(w) for n, spans in zip(lengths, expected)
                            for w in max_context_windows(spans, n)], (size, stride)
    # Per-sequence window sizes (SQuAD: what the question leaves).
    table = window_table([5, 5], [2, 4], 3)
    assert table["start"].numpy().tolist() == [0, 2, 4, 0, 3]
    assert table["length"].numpy().tolist() == [2, 2, 1, 4, 2]
    assert best_windows([4, 2], [0, 1], [5, 5], [2, 4], 3).numpy().tolist() == [2, 0]


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


def _windowed_reference(tok, pieces_of, example, tags, seq, stride):
    """Features of one example built piece by piece: run_squad's windows and max-context
    score written out as loops. (ids, labels) per window, (window, position) per word."""
    pieces, first = [], []  # (id, tag index or IGNORE_LABEL); each word's first piece
    for word, tag in zip(example.words, example.tags):
        first.append(len(pieces))
        for k, piece in enumerate(pieces_of[word] or [tok.unk_id]):
            pieces.append((piece, tags.index(tag) if k == 0 else IGNORE_LABEL))
    room, windows, start = seq - 2, [], 0
    while True:
        windows.append((start, min(room, len(pieces) - start)))
        if start + windows[-1][1] >= len(pieces):
            break
        start += min(room, stride)
    rows = [([tok.cls_id] + [p for p, _ in pieces[s:s + n]] + [tok.sep_id],
             [IGNORE_LABEL] + [t for _, t in pieces[s:s + n]] + [IGNORE_LABEL])
            for s, n in windows]
    where = []
    for p in first:
        scores = [(min(p - s, s + n - 1 - p) + 0.01 * n, -w) for w, (s, n) in enumerate(windows)
                  if s <= p < s + n]
        w = -max(scores)[1]
        where.append((w, 1 + p - windows[w][0]))
    return rows, where


def test_features_match_a_word_by_word_reference(small_tokenizer):
    """The vectorized windows and alignment against plain loops, on random sentences
    some of which fit and some of which need two or more windows."""
    tok = small_tokenizer
    rng = np.random.default_rng(0)
    vocabulary = ["Anna", "visited", "Oslo", ".", "visit", "\u200b", "zebra"]
    tags = ["O", "I-PER", "B-PER", "I-LOC"]
    examples = [NerExample(tuple(vocabulary[i] for i in rng.integers(0, 7, n)),
                           tuple(tags[i] for i in rng.integers(0, 4, n)))
                for n in rng.integers(1, 12, size=60)]
    task = NerTask(labels=tags)
    pieces_of = {w: tok.tokenize(w).numpy().tolist() for w in vocabulary}
    seq = 7
    for stride in (1, 2, 5):
        features = task.features(examples, tok, FeatureSettings(max_seq_length=seq,
                                                                 doc_stride=stride))
        row, windowed = 0, 0
        splits = features.extra["word_splits"]
        for i, example in enumerate(examples):
            rows, where = _windowed_reference(tok, pieces_of, example, tags, seq, stride)
            windowed += len(rows) > 1
            for ids, labels in rows:
                pad = seq - len(ids)
                assert features.inputs["input_word_ids"][row].tolist() == ids + [0] * pad
                assert features.labels[row].tolist() == labels + [IGNORE_LABEL] * pad
                assert features.lengths[row] == len(ids)
                assert features.example_index[row] == i
                row += 1
            got = list(zip(features.extra["word_features"][splits[i]:splits[i + 1]].tolist(),
                           features.extra["word_positions"][splits[i]:splits[i + 1]].tolist()))
            assert got == [(row - len(rows) + w, p) for w, p in where]
        assert row == len(features) and windowed > 10
