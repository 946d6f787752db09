"""One opener for every artifact (issues 33 and the opener's): `open_artifact` turns every
kind of checkpoint `load_encoder` takes (by path, `hf://` name), a keras-hub backbone or
task preset, a `keras-bert pretrain` run, a `keras-bert finetune` run directory and a
`.keras` file into what it is (`kind`), its config (read before any weights load), vocab
file, casing, labels, tokenizer and `load()`; a given vocab or casing overrides the
artifact's own; a missing vocab is named; a fine-tuning run's record is read once."""

import json
import os
import shutil

import checkpoint_names_support as support
import keras
import pytest
import tensorflow as tf
from conftest import minilm_path
from export_support import VOCAB, finetuned_run, tiny_config
from training_support import write_config, write_pretraining_records, write_vocab

from keras_bert.checkpoints import (
    KINDS,
    Artifact,
    open_artifact,
    read_config,
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


def _check(resolved, path, config, vocab, lower_case, kind):
    assert isinstance(resolved, Artifact) and kind in KINDS
    assert resolved.path == str(path) and resolved.config == config
    assert resolved.vocab_file == str(vocab) and resolved.lower_case is lower_case
    assert resolved.kind == kind
    assert resolved.check_vocab() == config.vocab_size
    assert resolved.tokenizer().lower_case is lower_case


# --- every checkpoint kind ----------------------------------------------------------------

def test_hugging_face_minilm():
    path = minilm_path()
    resolved = open_artifact(path)
    assert (resolved.config.num_layers, resolved.config.hidden_size) == (6, 384)
    _check(resolved, path, read_config(path), os.path.join(path, "vocab.txt"), True, "hf")
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
        _check(open_artifact(path), path, TINY, vocab, False, "google")


def test_keras_bert_directory(tmp_path):
    directory = tmp_path / "ours"
    save_encoder(BertEncoder(TINY), directory)
    vocab = _vocab_beside(directory)
    _check(open_artifact(directory), directory, TINY, vocab, True, "keras_bert")


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
        resolved = open_artifact(path)
        assert resolved.config == read_config(path) and resolved.config.hidden_size == 32
        assert resolved.vocab_file == vocab and resolved.check_vocab() == 64
        assert resolved.kind == "tf2"


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
        resolved = open_artifact(path)
        _check(resolved, path, expected, run / "vocab.txt", True, "pretraining_run")
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
    resolved = open_artifact(run)
    _check(resolved, run, config, run / "vocab.txt", False, "finetuning_run")
    assert resolved.record["task"] == "mrpc" and resolved.pretraining_run is None
    assert resolved.owner == f"the fine-tuned run {str(run)!r}"
    # An explicit casing overrides the run's record.
    assert open_artifact(run, lower_case=True).lower_case is True


def test_a_finetuning_run_is_no_checkpoint_where_runs_are_not_taken(finetuned):
    run, _ = finetuned
    with pytest.raises(InputNotFoundError, match="holds no BERT checkpoint"):
        open_artifact(run, finetuning_runs=False)


@pytest.mark.parametrize("lost", ["model.keras", "vocab.txt"])
def test_a_finetuning_run_without_its_files_names_the_missing_one(finetuned, tmp_path, lost):
    run = tmp_path / "run"
    shutil.copytree(finetuned[0], run)
    os.remove(run / lost)
    said = ("a fine-tuning run directory without its model file" if lost == "model.keras"
            else f"is not a fine-tuned model: it has no {lost}")
    with pytest.raises(InputNotFoundError, match=said):
        open_artifact(run)


def test_a_finetuning_run_with_a_damaged_model_file_is_named(finetuned, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finetuned[0], run)
    (run / "model.keras").write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(CheckpointError, match="model.keras is unreadable or truncated"):
        open_artifact(run)


# --- the vocab: given, missing, not the model's --------------------------------------------

def test_a_given_vocab_overrides_the_checkpoints_own(tmp_path):
    directory = tmp_path / "ours"
    save_encoder(BertEncoder(TINY), directory)
    _vocab_beside(directory)
    other = write_vocab(str(tmp_path / "copy.txt"))
    resolved = open_artifact(directory, vocab_file=other, lower_case=False)
    assert resolved.vocab_file == other and resolved.lower_case is False
    assert resolved.own_vocab == str(directory / "vocab.txt")
    assert resolved.check_vocab() == 64


def test_a_vocab_of_another_model_is_refused_naming_the_owner(tmp_path):
    directory = tmp_path / "ours"
    save_encoder(BertEncoder(TINY), directory)
    short = write_vocab(str(tmp_path / "short.txt"), vocab_size=30)
    resolved = open_artifact(directory, vocab_file=short, owner="the model 'ours'")
    with pytest.raises(VocabMismatchError, match="has 30 tokens but the model 'ours' has 64"):
        resolved.check_vocab()


def test_a_missing_vocab_is_named_with_what_to_do(tmp_path):
    directory = tmp_path / "ours"
    save_encoder(BertEncoder(TINY), directory)
    with pytest.raises(InputNotFoundError, match=r"the checkpoint '.*ours' has no vocab.txt "
                                                 r"beside it; give its vocab_file\.$"):
        open_artifact(directory)
    with pytest.raises(InputNotFoundError, match="the model 'm' has no vocab.txt beside it; "
                                                 "pass --vocab_file$"):
        open_artifact(directory, owner="the model 'm'", vocab_remedy="pass --vocab_file")
    resolved = open_artifact(directory, require_vocab=False)
    assert resolved.vocab_file is None and resolved.config == TINY


def test_no_checkpoint_at_the_path(tmp_path):
    with pytest.raises(InputNotFoundError, match="No checkpoint at"):
        open_artifact(tmp_path / "missing")
    with pytest.raises(InputNotFoundError, match="is empty"):
        open_artifact(tmp_path)


# --- what each kind loads, its labels; keras-hub presets, .keras files, names -------------

def test_each_checkpoint_kind_loads_its_encoder(tmp_path):
    google = tmp_path / "cased_L-2_H-128_A-2"
    save_google_checkpoint(BertEncoder(TINY), google)
    ours = tmp_path / "ours"
    save_encoder(BertEncoder(TINY), ours)
    for directory in (google, ours):
        _vocab_beside(directory)
        artifact = open_artifact(directory)
        assert artifact.labels is None and artifact.record is None and artifact.hub_task is None
        encoder = artifact.load()
        assert isinstance(encoder, BertEncoder) and encoder.config == TINY
        assert artifact.load_encoder().config == TINY


HUB_TINY = TINY.replace(hidden_act="gelu_tanh")


def test_keras_hub_backbone_and_task_presets(tmp_path):
    from keras_bert.checkpoints import save_keras_hub_preset
    from keras_bert.tasks.glue.model import BertClassifier

    vocab = write_vocab(str(tmp_path / "vocab.txt"))
    encoder = BertEncoder(HUB_TINY)
    save_keras_hub_preset(encoder, tmp_path / "backbone", vocab, lower_case=False)
    save_keras_hub_preset(BertClassifier(encoder, num_classes=3), tmp_path / "task", vocab,
                          sequence_length=32)
    backbone = open_artifact(tmp_path / "backbone")
    assert (backbone.kind, backbone.config, backbone.lower_case) == ("keras_hub", HUB_TINY,
                                                                     False)
    assert backbone.vocab_file.endswith(os.path.join("tokenizer", "vocabulary.txt"))
    assert backbone.labels is None and backbone.hub_task is None
    assert isinstance(backbone.load(), BertEncoder)
    task = open_artifact(tmp_path / "task")
    assert (task.kind, task.config, task.lower_case) == ("keras_hub_task", HUB_TINY, True)
    assert task.labels == ("0", "1", "2") and task.hub_task.sequence_length == 32
    assert task.check_vocab() == 64
    with pytest.raises(CheckpointError, match="keras-hub classifier preset: open it with"):
        task.load()  # the classifier is the tasks stage's
    assert isinstance(BertClassifier.from_keras_hub_preset(task.local_path), BertClassifier)
    assert isinstance(task.load_encoder(), BertEncoder)  # its backbone alone


def test_a_finetuning_run_gives_its_task_labels_and_model(finetuned, monkeypatch):
    from keras_bert.checkpoints import finetuning_runs
    from keras_bert.tasks.glue.model import BertClassifier

    reads = []
    read = finetuning_runs.read_finetuning_record
    monkeypatch.setattr(finetuning_runs, "read_finetuning_record",
                        lambda *a, **k: reads.append(a) or read(*a, **k))
    run, config = finetuned
    artifact = open_artifact(run)
    assert artifact.record["task"] == "mrpc" and artifact.labels == ("0", "1")
    assert artifact.record["options"]["max_seq_length"] == 24
    model = artifact.load()
    assert isinstance(model, BertClassifier) and model.encoder.config == config
    encoder = artifact.load_encoder()
    assert type(encoder) is BertEncoder and encoder.config == config
    for got, want in zip(encoder.get_weights(), model.encoder.get_weights()):
        assert (got == want).all()
    from keras_bert.tasks.finetuning.run_directory import load_run

    run = load_run(artifact)
    assert run.tokenizer.lower_case is False and run.settings.max_seq_length == 24
    assert run.task.name == "mrpc" and run.model.preprocessor.task is run.task
    assert len(reads) == 1  # the record: read once, when the run was opened


def test_a_finetuning_run_is_read_once_on_the_way_to_export(finetuned, monkeypatch):
    from keras_bert.checkpoints import finetuning_runs
    from keras_bert.tasks.export_sources import load_export_source

    reads = []
    read = finetuning_runs.read_finetuning_record
    monkeypatch.setattr(finetuning_runs, "read_finetuning_record",
                        lambda *a, **k: reads.append(a) or read(*a, **k))
    source = load_export_source(finetuned[0])
    assert source.task == "mrpc" and source.label_names == ("0", "1")
    assert len(reads) == 1


def test_a_keras_file(finetuned, tmp_path):
    from keras_bert.core.errors import InputNotFoundError as NotFound
    from keras_bert.tasks.glue.model import BertClassifier

    path = tmp_path / "classifier.keras"
    shutil.copyfile(finetuned[0] / "model.keras", path)
    artifact = open_artifact(path, keras_files=True)
    assert (artifact.kind, artifact.config, artifact.vocab_file) == ("keras_file",
                                                                     finetuned[1], None)
    assert artifact.lower_case is None and artifact.labels is None
    assert isinstance(artifact.load(), BertClassifier)
    with pytest.raises(NotFound, match="is a file, not a checkpoint"):
        open_artifact(path)  # where .keras files are not taken
    with pytest.raises(NotFound, match="no .keras file at"):
        open_artifact(tmp_path / "missing.keras", keras_files=True)


def test_an_empty_directory_and_an_export_say_what_they_are(tmp_path):
    from keras_bert.checkpoints.loading import NoCheckpointError

    with pytest.raises(NoCheckpointError, match="is empty") as caught:
        open_artifact(tmp_path)
    assert caught.value.empty and caught.value.export is None
    version = tmp_path / "sst2" / "1"
    version.mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"")
    with pytest.raises(NoCheckpointError, match="not a checkpoint: an export") as caught:
        open_artifact(version)
    assert not caught.value.empty and "SavedModel" in caught.value.export[0]


hf_cache = support.hf_cache  # an offline hub cache laid out by hand


def test_an_hf_name_opens_its_cached_snapshot(hf_cache):
    model = minilm_path()
    files = {n: os.path.join(model, n) for n in os.listdir(model)
             if os.path.isfile(os.path.join(model, n))}
    snapshot = support.cache_repo(hf_cache, "sentence-transformers/all-MiniLM-L6-v2",
                                  support.MAIN_COMMIT, files)
    artifact = open_artifact(support.MINILM)
    assert artifact.kind == "hf" and artifact.path == support.MINILM
    assert os.path.samefile(artifact.local_path, snapshot)
    assert artifact.config.hidden_size == 384 and artifact.lower_case is True
    assert os.path.samefile(artifact.vocab_file, os.path.join(snapshot, "vocab.txt"))
