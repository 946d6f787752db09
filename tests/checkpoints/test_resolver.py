"""One resolver for a checkpoint (issue 33): `resolve_checkpoint` turns every kind of
checkpoint `load_encoder` takes, and a `keras-bert finetune` run directory, into its
config (read before any weights load), vocab file, casing and tokenizer; a given vocab
or casing overrides the checkpoint's own; a missing vocab is named."""

import json
import os
import shutil

import keras
import pytest
import tensorflow as tf
from conftest import minilm_path
from export_support import VOCAB, finetuned_run, tiny_config
from training_support import write_config, write_pretraining_records, write_vocab

from keras_bert.checkpoints import (
    ResolvedCheckpoint,
    is_finetuning_run,
    read_config,
    resolve_checkpoint,
    save_encoder,
    save_google_checkpoint,
)
from keras_bert.cli import main
from keras_bert.core.errors import CheckpointError, InputNotFoundError, VocabMismatchError
from keras_bert.model.config import BertConfig
from keras_bert.model.encoder import BertEncoder
from keras_bert.text.tokenizer import load_vocab

TINY = BertConfig.from_preset("tiny", vocab_size=64)


def _vocab_beside(directory):
    return write_vocab(os.path.join(directory, "vocab.txt"))


def _check(resolved, path, config, vocab, lower_case, finetuning=False):
    assert isinstance(resolved, ResolvedCheckpoint)
    assert resolved.path == str(path) and resolved.config == config
    assert resolved.vocab_file == str(vocab) and resolved.lower_case is lower_case
    assert resolved.finetuning_run is finetuning
    assert resolved.check_vocab() == config.vocab_size
    assert resolved.tokenizer().lower_case is lower_case


# --- every checkpoint kind ----------------------------------------------------------------

def test_hugging_face_minilm():
    path = minilm_path()
    resolved = resolve_checkpoint(path)
    assert (resolved.config.num_layers, resolved.config.hidden_size) == (6, 384)
    _check(resolved, path, read_config(path), os.path.join(path, "vocab.txt"), True)
    assert resolved.pretraining_run is None
    assert resolved.owner == f"the checkpoint {path!r}"
    ids = resolved.tokenizer().tokenize(["Hello World"]).flat_values.numpy()
    vocab = load_vocab(resolved.vocab_file)
    assert [vocab[i] for i in ids] == ["hello", "world"]


@pytest.mark.filterwarnings("ignore:lower_case=False:UserWarning")
def test_google_tf1_directory_and_prefix(tmp_path):
    directory = tmp_path / "cased_L-2_H-128_A-2"  # a cased vocab, by Google's naming
    prefix = save_google_checkpoint(BertEncoder(TINY), directory)
    vocab = _vocab_beside(directory)
    for path in (directory, prefix):
        _check(resolve_checkpoint(path), path, TINY, vocab, False)


def test_keras_bert_directory(tmp_path):
    directory = tmp_path / "ours"
    save_encoder(BertEncoder(TINY), directory)
    vocab = _vocab_beside(directory)
    _check(resolve_checkpoint(directory), directory, TINY, vocab, True)


@pytest.mark.official
def test_model_garden_tf2_checkpoint(tmp_path):
    networks = pytest.importorskip("official.nlp.modeling.networks",
                                   reason="pip install keras_bert[official]")
    encoder = networks.BertEncoderV2(vocab_size=64, hidden_size=32, num_layers=2,
                                     num_attention_heads=4, inner_dim=64,
                                     max_sequence_length=64, type_vocab_size=2)
    encoder({k: tf.zeros((1, 4), tf.int32)
             for k in ("input_word_ids", "input_mask", "input_type_ids")})
    prefix = tf.train.Checkpoint(encoder=encoder).save(str(tmp_path / "tf2" / "ckpt"))
    (tmp_path / "tf2" / "bert_config.json").write_text(json.dumps(TINY.replace(
        hidden_size=32, num_heads=4, intermediate_size=64,
        max_position_embeddings=64).to_google_dict()))
    vocab = _vocab_beside(tmp_path / "tf2")
    for path in (tmp_path / "tf2", prefix):
        resolved = resolve_checkpoint(path)
        assert resolved.config == read_config(path) and resolved.config.hidden_size == 32
        assert resolved.vocab_file == vocab and resolved.check_vocab() == 64


@pytest.fixture(scope="module")
def pretraining_run(tmp_path_factory):
    """A 2-step `keras-bert pretrain` run with a checkpoint at each step."""
    root = tmp_path_factory.mktemp("pretraining")
    data = write_pretraining_records(str(root / "data"), num_examples=32)
    vocab = write_vocab(str(root / "vocab.txt"))
    run = root / "run"
    assert main(["pretrain", "--input_file", data, "--output_dir", str(run), "--config",
                 write_config(str(root / "bert_config.json")), "--vocab_file", vocab,
                 "--train_batch_size", "8", "--num_train_steps", "2",
                 "--num_warmup_steps", "1", "--save_checkpoints_steps", "1", "--log_steps",
                 "1", "--noprogress"]) == 0
    return run


def test_pretraining_run_and_its_training_checkpoints(pretraining_run):
    run = pretraining_run
    expected = read_config(run)
    for path in (run, run / "checkpoints", run / "checkpoints" / "ckpt-1"):
        resolved = resolve_checkpoint(path)
        _check(resolved, path, expected, run / "vocab.txt", True)
        assert resolved.pretraining_run == str(run)
        assert resolved.own_vocab == str(run / "vocab.txt")


# --- a fine-tuning run directory --------------------------------------------------------

@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """A tiny MRPC run directory (the rich vocab, recorded as cased)."""
    run = tmp_path_factory.mktemp("finetuned") / "mrpc"
    config = tiny_config(len(load_vocab(VOCAB)))
    finetuned_run(VOCAB, 24, str(run), "mrpc", BertEncoder(config),
                  {"task": "mrpc", "labels": ["0", "1"]})
    return run, config


def test_a_finetuning_run_gives_its_encoder_config_vocab_and_casing(finetuned, monkeypatch):
    run, config = finetuned

    def no_loading(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(keras.models, "load_model", no_loading)
    assert is_finetuning_run(run)
    resolved = resolve_checkpoint(run)
    _check(resolved, run, config, run / "vocab.txt", False, finetuning=True)
    assert resolved.record["task"] == "mrpc" and resolved.pretraining_run is None
    assert resolved.owner == f"the fine-tuned run {str(run)!r}"
    # An explicit casing overrides the run's record.
    assert resolve_checkpoint(run, lower_case=True).lower_case is True


def test_a_finetuning_run_is_no_checkpoint_where_runs_are_not_taken(finetuned):
    run, _ = finetuned
    with pytest.raises(InputNotFoundError, match="holds no BERT checkpoint"):
        resolve_checkpoint(run, finetuning_runs=False)


@pytest.mark.parametrize("lost", ["model.keras", "vocab.txt"])
def test_a_finetuning_run_without_its_files_names_the_missing_one(finetuned, tmp_path, lost):
    run = tmp_path / "run"
    shutil.copytree(finetuned[0], run)
    os.remove(run / lost)
    with pytest.raises(InputNotFoundError, match=f"is not a fine-tuned model: it has no {lost}"):
        resolve_checkpoint(run)


def test_a_finetuning_run_with_a_damaged_model_file_is_named(finetuned, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finetuned[0], run)
    (run / "model.keras").write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(CheckpointError, match="model.keras is unreadable or truncated"):
        resolve_checkpoint(run)


# --- the vocab: given, missing, not the model's --------------------------------------------

def test_a_given_vocab_overrides_the_checkpoints_own(tmp_path):
    directory = tmp_path / "ours"
    save_encoder(BertEncoder(TINY), directory)
    _vocab_beside(directory)
    other = write_vocab(str(tmp_path / "copy.txt"))
    resolved = resolve_checkpoint(directory, vocab_file=other, lower_case=False)
    assert resolved.vocab_file == other and resolved.lower_case is False
    assert resolved.own_vocab == str(directory / "vocab.txt")
    assert resolved.check_vocab() == 64


def test_a_vocab_of_another_model_is_refused_naming_the_owner(tmp_path):
    directory = tmp_path / "ours"
    save_encoder(BertEncoder(TINY), directory)
    short = write_vocab(str(tmp_path / "short.txt"), vocab_size=30)
    resolved = resolve_checkpoint(directory, vocab_file=short, owner="the model 'ours'")
    with pytest.raises(VocabMismatchError, match="has 30 tokens but the model 'ours' has 64"):
        resolved.check_vocab()


def test_a_missing_vocab_is_named_with_what_to_do(tmp_path):
    directory = tmp_path / "ours"
    save_encoder(BertEncoder(TINY), directory)
    with pytest.raises(InputNotFoundError, match=r"the checkpoint '.*ours' has no vocab.txt "
                                                 r"beside it; give its vocab_file\.$"):
        resolve_checkpoint(directory)
    with pytest.raises(InputNotFoundError, match="the model 'm' has no vocab.txt beside it; "
                                                 "pass --vocab_file$"):
        resolve_checkpoint(directory, owner="the model 'm'", vocab_remedy="pass --vocab_file")
    resolved = resolve_checkpoint(directory, require_vocab=False)
    assert resolved.vocab_file is None and resolved.config == TINY


def test_no_checkpoint_at_the_path(tmp_path):
    with pytest.raises(InputNotFoundError, match="No checkpoint at"):
        resolve_checkpoint(tmp_path / "missing")
    with pytest.raises(InputNotFoundError, match="is empty"):
        resolve_checkpoint(tmp_path)
