"""Every odd source given to `keras-bert export --checkpoint` gets a clear answer (issue
32): an empty directory and an export are named as such; `keras-bert pretrain`'s
training checkpoints (`RUN/checkpoints/ckpt-STEP`, `RUN/checkpoints`, a run stopped
before its end) load with the run's config and vocab; a damaged finetune_config.json is
named with its line and column; a vocab.txt with a UTF-8 byte-order mark reads as the
plain one; a vocab given with a fine-tuned run must be the run's own. Mistakes exit 2
with one line naming the file."""

import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
from export_support import VOCAB, finetuned_run, rich_tokenizer, tiny_config
from training_support import write_config, write_pretraining_records, write_vocab

from keras_bert import BertEncoder
from keras_bert.checkpoints import load_encoder, load_pretrainer, save_encoder
from keras_bert.cli import main
from keras_bert.core.errors import ArgumentError, DataError, MismatchError
from keras_bert.tasks.export_sources import load_export_source
from keras_bert.tasks.finetuning import load_finetuned
from keras_bert.text.packing import pack_inputs
from keras_bert.text.tokenizer import BertTokenizer

TEXTS = ["Hello, World! This is BERT.", "Café naïve résumé — ÅNGSTRÖM Straße",
         "北京欢迎你。東京タワー", "don't stop-believing... (really?!)", ""]


def _fails(argv, capsys) -> str:
    """Runs a command that must fail with exit 2 and one line on stderr; that line."""
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    return err[0]


def _export_args(checkpoint, tmp_path, *extra):
    return ["export", "--checkpoint", str(checkpoint), "--output_dir",
            str(tmp_path / "saved_models"), "--name", "model", "--nowarmup", *extra]


# --- 1. an empty directory, an export ---------------------------------------------------

def test_an_empty_directory_says_so_and_what_to_give(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    err = _fails(_export_args(empty, tmp_path), capsys)
    assert f"{str(empty)!r} is empty" in err, err
    assert "fine-tuning run directory" in err and "encoder checkpoint" in err, err
    assert "vocab" not in err, err
    assert not (tmp_path / "saved_models").exists()


def _fake_export(version_dir, model_file, source=None):
    os.makedirs(version_dir / "assets.extra")
    (version_dir / model_file).write_bytes(b"")
    if source:
        (version_dir / "assets.extra" / "keras_bert.json").write_text(
            json.dumps({"source_checkpoint": source}))


@pytest.mark.parametrize("layout, expected", [
    ("savedmodel_version", "is an exported SavedModel (a TF Serving version directory)"),
    ("savedmodel_name", "directory of exported versions (1, 2), the newest an exported "
                        "SavedModel"),
    ("litert_version", "is an exported LiteRT model (a version directory)"),
    ("no_card", "is an exported SavedModel (a TF Serving version directory)"),
])
def test_an_export_says_it_cannot_be_re_exported_and_names_its_source(tmp_path, capsys,
                                                                       layout, expected):
    name = tmp_path / "exports" / "sst2"
    source = None if layout == "no_card" else "/runs/sst2_finetuned"
    model_file = "model.tflite" if layout == "litert_version" else "saved_model.pb"
    _fake_export(name / "1", model_file, "/runs/older")
    _fake_export(name / "2", model_file, source)
    given = name if layout == "savedmodel_name" else name / "2"
    err = _fails(_export_args(given, tmp_path), capsys)
    assert repr(str(given)) in err and expected in err, err
    assert "an export cannot be re-exported" in err, err
    assert "give the fine-tuning run directory it came from" in err, err
    if source:
        assert f"source_checkpoint names it: {source}" in err, err
    else:
        assert "assets.extra/keras_bert.json" in err, err
    assert "vocab" not in err, err
    # The other commands that read checkpoints say what it is too.
    with pytest.raises(FileNotFoundError, match="not a checkpoint: an export"):
        load_encoder(given)


# --- 2. keras-bert pretrain's training checkpoints ------------------------------------------

@pytest.fixture(scope="module")
def pretraining_run(tmp_path_factory):
    """A 4-step `keras-bert pretrain` run with dropout (its seed states are checkpointed
    too), checkpoints at steps 2 and 4."""
    root = tmp_path_factory.mktemp("pretraining")
    data = write_pretraining_records(str(root / "data"), num_examples=64)
    config = write_config(str(root / "bert_config.json"), hidden_dropout=0.1,
                          attention_dropout=0.1)
    vocab = write_vocab(str(root / "vocab.txt"))
    run = root / "run"
    assert main(["pretrain", "--input_file", data, "--output_dir", str(run), "--config",
                 config, "--vocab_file", vocab, "--train_batch_size", "8",
                 "--num_train_steps", "4", "--num_warmup_steps", "1",
                 "--save_checkpoints_steps", "2", "--log_steps", "2", "--noprogress"]) == 0
    assert os.path.isfile(run / "checkpoints" / "ckpt-2.index")
    return run


def _checkpoint_encoder_values(prefix, count):
    """The first `count` model variables of a training checkpoint, read by TF's reader:
    the pretrainer's variables in order, the encoder's first."""
    reader = tf.train.load_checkpoint(str(prefix))
    keys = sorted(k for k in reader.get_variable_to_shape_map() if k.startswith("model/"))
    return [(key, reader.get_tensor(key)) for key in keys[:count]]


def _weights(encoder):
    return [np.asarray(v) for v in encoder.variables]


@pytest.mark.parametrize("step", [2, 4])
def test_a_training_checkpoint_gives_the_encoder_at_its_step(pretraining_run, step):
    prefix = pretraining_run / "checkpoints" / f"ckpt-{step}"
    source = load_export_source(prefix)
    assert source.kind == "encoder"
    assert source.vocab_file == str(pretraining_run / "vocab.txt")
    recorded = json.loads((pretraining_run / "run_config.json").read_text())["bert_config"]
    assert source.config.to_dict() == recorded
    saved = _checkpoint_encoder_values(prefix, len(source.encoder.variables))
    for variable, (key, value) in zip(source.encoder.variables, saved):
        assert key.split("-", 1)[1].startswith(variable.name + "/"), (key, variable.path)
        np.testing.assert_array_equal(np.asarray(variable), value, err_msg=key)


def test_an_earlier_step_differs_and_checkpoints_dir_is_the_newest(pretraining_run):
    earlier = load_encoder(pretraining_run / "checkpoints" / "ckpt-2")
    newest = load_encoder(pretraining_run / "checkpoints")
    final = load_encoder(pretraining_run)  # the trained encoder the run saved at its end
    assert any(not np.array_equal(a, b) for a, b in zip(_weights(earlier), _weights(newest)))
    for a, b in zip(final.get_weights(), newest.get_weights()):
        np.testing.assert_array_equal(a, b)
    # The heads come along for pretraining on from a step.
    pretrainer = load_pretrainer(pretraining_run / "checkpoints" / "ckpt-2")
    assert pretrainer.next_sentence
    for a, b in zip(pretrainer.encoder.get_weights(), earlier.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_a_run_stopped_before_its_end_gives_its_newest_checkpoint(pretraining_run, tmp_path):
    run = tmp_path / "stopped"
    shutil.copytree(pretraining_run, run)
    for name in ("keras_bert_config.json", "encoder.weights.h5", "metrics.json"):
        os.remove(run / name)
    source = load_export_source(run)
    assert source.vocab_file == str(run / "vocab.txt")
    newest = load_encoder(pretraining_run / "checkpoints" / "ckpt-4")
    for a, b in zip(source.encoder.get_weights(), newest.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_cli_exports_an_earlier_step(pretraining_run, tmp_path, capsys):
    prefix = pretraining_run / "checkpoints" / "ckpt-2"
    assert main(_export_args(prefix, tmp_path, "--noserve_text", "--max_seq_length",
                             "16")) == 0
    path = capsys.readouterr().out.strip().splitlines()[-1].split(" to ", 1)[1]
    with open(os.path.join(path, "assets.extra", "keras_bert.json"), encoding="utf-8") as f:
        card = json.load(f)
    assert card["source_checkpoint"] == str(prefix)
    ids = {"input_word_ids": np.array([[2, 7, 8, 9, 3, 0]], np.int32),
           "input_mask": np.array([[1, 1, 1, 1, 1, 0]], np.int32),
           "input_type_ids": np.zeros((1, 6), np.int32)}
    served = tf.saved_model.load(path).signatures["serving_default"](
        **{k: tf.constant(v) for k, v in ids.items()})
    expected = load_encoder(prefix)(ids, training=False)["pooled_output"]
    np.testing.assert_allclose(served["pooled_output"], expected, atol=1e-5, rtol=0)


def test_a_training_checkpoint_away_from_its_run_names_run_config(pretraining_run, tmp_path,
                                                                 capsys):
    away = tmp_path / "copied"
    away.mkdir()
    for name in os.listdir(pretraining_run / "checkpoints"):
        if name.startswith("ckpt-2."):
            shutil.copy(pretraining_run / "checkpoints" / name, away)
    shutil.copy(pretraining_run / "vocab.txt", away)
    err = _fails(_export_args(away / "ckpt-2", tmp_path), capsys)
    assert "training checkpoint of `keras-bert pretrain`" in err, err
    assert str(tmp_path / "run_config.json") in err and "tf-models-official" not in err, err


def test_a_run_without_a_checkpoint_says_so(pretraining_run, tmp_path, capsys):
    run = tmp_path / "died_early"
    run.mkdir()
    shutil.copy(pretraining_run / "run_config.json", run)
    shutil.copy(pretraining_run / "vocab.txt", run)
    err = _fails(_export_args(run, tmp_path), capsys)
    assert "`keras-bert pretrain` run directory without a checkpoint" in err, err


def test_a_damaged_run_config_is_named(pretraining_run, tmp_path, capsys):
    run = tmp_path / "damaged"
    shutil.copytree(pretraining_run, run)
    (run / "run_config.json").write_text('{"bert_config": {"vocab_size": 64,')
    err = _fails(_export_args(run / "checkpoints", tmp_path), capsys)
    assert str(run / "run_config.json") in err and "cannot be read" in err, err


# --- 3. a damaged finetune_config.json -------------------------------------------------

@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """A tiny MRPC run directory (the rich vocab, cased) and its model."""
    run = tmp_path_factory.mktemp("finetuned") / "mrpc"
    model = finetuned_run(VOCAB, 24, str(run), "mrpc",
                          BertEncoder(tiny_config(rich_tokenizer(False).vocab_size)),
                          {"task": "mrpc", "labels": ["0", "1"]})
    return run, model


def _copy_run(finetuned, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(finetuned[0], copy)
    return copy


@pytest.mark.parametrize("text, message", [
    ('{"task": "mrpc",\n "options": {"max_seq_length": 24}\n', "is not valid JSON (line 3, "
                                                                "column 1"),
    ('{"task": "mrpc" "options": {}}', "is not valid JSON (line 1, column 17"),
    ("", "is not valid JSON (line 1, column 1"),
    ('["mrpc"]', "is not a fine-tuning record: it holds an array, not a JSON object"),
    ('{"options": {}, "lower_case": true}', "its 'task' is missing (a string expected)"),
    ('{"task": "mrpc", "options": 3, "lower_case": true}',
     "its 'options' is 3 (an object expected)"),
])
def test_a_damaged_finetune_config_is_named_with_line_and_column(finetuned, tmp_path, capsys,
                                                                 text, message):
    run = _copy_run(finetuned, tmp_path)
    record = run / "finetune_config.json"
    record.write_text(text)
    err = _fails(_export_args(run, tmp_path), capsys)
    assert str(record) in err and message in err, err
    assert "keras-bert finetune" in err and "JSONDecodeError" not in err, err
    with pytest.raises(DataError, match=re.escape(message)):
        load_finetuned(str(run))


# --- 4. a vocab.txt with a byte-order mark ------------------------------------------------

def test_a_vocab_with_a_byte_order_mark_reads_as_the_plain_one(tmp_path, capsys):
    plain = rich_tokenizer(False)
    with_mark = tmp_path / "encoder" / "vocab.txt"
    encoder = BertEncoder(tiny_config(plain.vocab_size))
    save_encoder(encoder, with_mark.parent)
    with_mark.write_bytes(b"\xef\xbb\xbf" + open(VOCAB, "rb").read())
    tokenizer = BertTokenizer(str(with_mark), lower_case=False)
    assert tokenizer.vocabulary == plain.vocabulary and tokenizer.pad_id == 0
    expected = plain.tokenize(TEXTS).to_list()
    assert tokenizer.tokenize(TEXTS).to_list() == expected

    assert main(_export_args(with_mark.parent, tmp_path, "--max_seq_length", "16",
                             "--do_lower_case=false")) == 0
    path = capsys.readouterr().out.strip().splitlines()[-1].split(" to ", 1)[1]
    # The in-graph tokenizer of the export and its TF Hub preprocessor: the plain ids.
    preprocessor = tf.saved_model.load(os.path.join(path, "preprocessor"))
    assert preprocessor.tokenize(tf.constant(TEXTS)).to_list() == expected
    served = tf.saved_model.load(path).signatures["serve_text"](text=tf.constant(TEXTS))
    packed = pack_inputs([plain.tokenize(TEXTS)], 16, cls_id=plain.cls_id,
                         sep_id=plain.sep_id)
    np.testing.assert_array_equal(served["input_mask"], packed["input_mask"])
    np.testing.assert_allclose(served["pooled_output"],
                               encoder(packed, training=False)["pooled_output"],
                               atol=1e-5, rtol=0)
    # The vocab in the export's assets has no mark for other readers to take as a token.
    with open(os.path.join(path, "assets", "vocab.txt"), "rb") as f:
        assert f.read() == open(VOCAB, "rb").read()

    # ... and the export itself, given back as a checkpoint, names where it came from.
    err = _fails(_export_args(path, tmp_path), capsys)
    assert "is an exported SavedModel" in err, err
    assert f"source_checkpoint names it: {with_mark.parent}" in err, err


# --- 5. a vocab given with a fine-tuned run -----------------------------------------------

def test_a_vocab_other_than_the_runs_is_refused_naming_both(finetuned, tmp_path, capsys):
    run = finetuned[0]
    tokens = open(VOCAB, encoding="utf-8").read().splitlines()
    tokens[-1], tokens[-2] = tokens[-2], tokens[-1]
    other = tmp_path / "other_vocab.txt"
    other.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    err = _fails(_export_args(run, tmp_path, "--vocab_file", str(other)), capsys)
    assert str(other) in err and str(run / "vocab.txt") in err, err
    assert f"line {len(tokens) - 1}" in err, err
    assert not (tmp_path / "saved_models").exists()
    with pytest.raises(ArgumentError) as error:
        load_export_source(run, vocab_file=str(other))
    assert error.value.field == "vocab_file" and isinstance(error.value, MismatchError)


def test_a_copy_of_the_runs_vocab_is_the_runs(finetuned, tmp_path):
    copy = tmp_path / "copy.txt"
    shutil.copy(VOCAB, copy)
    source = load_export_source(finetuned[0], vocab_file=str(copy))
    assert source.kind == "classifier"
    assert source.tokenizer.vocabulary == rich_tokenizer(False).vocabulary


def test_a_run_vocab_with_a_new_word_in_an_unused_slot_is_refused(tmp_path):
    # A checkpoint's [unusedN] slots may take new words before fine-tuning; a fine-tuned
    # run was trained with its own vocab, so for it they are tokens like any other.
    tokens = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
        f"w{i}" for i in range(26)]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    finetuned_run(str(vocab), 16, str(run), "mrpc", BertEncoder(tiny_config(len(tokens))),
                  {"task": "mrpc", "labels": ["0", "1"]})
    new_word = tmp_path / "new_word.txt"
    new_word.write_text("\n".join(tokens[:1] + ["covid"] + tokens[2:]) + "\n",
                        encoding="utf-8")
    with pytest.raises(MismatchError, match="line 2 holds 'covid'"):
        load_export_source(run, vocab_file=str(new_word))
