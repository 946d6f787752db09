"""keras_bert.plotting and the `attention` / `plot` commands: the heat maps show the
encoder's own attention probabilities over the real tokens, the per-head summary matches
hand computation, training curves are read back from what pretraining and fine-tuning
really write, and bad input is one line with exit status 2 and nothing written."""

import ast
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from conftest import REPO
from training_support import write_config, write_pretraining_records, write_vocab

from keras_bert import BertConfig, BertEncoder, BertTokenizer
from keras_bert.cli import main
from keras_bert.plotting import (
    ATTENTION_PROBS_FILE,
    ATTENTION_SUMMARY_FILE,
    TRAINING_CURVES_FILE,
    PlottingUnavailableError,
    attention_figure,
    attention_maps,
    attention_png_name,
    attention_summary,
    read_training_curves,
    training_curves_figure,
    write_attention_plots,
    write_files,
    write_training_plots,
)
from keras_bert.training import MetricsLogger

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
         "a", "dog", "ran", "##s", "."]
ID = {token: i for i, token in enumerate(VOCAB)}
TASK_VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _tiny_encoder(output_attentions=True):
    config = BertConfig.from_preset("tiny", vocab_size=len(VOCAB), hidden_size=32,
                                    num_heads=4, intermediate_size=64,
                                    max_position_embeddings=32)
    return BertEncoder(config, output_attentions=output_attentions)


@pytest.fixture(scope="module")
def encoder():
    keras.utils.set_random_seed(7)
    return _tiny_encoder()


@pytest.fixture(scope="module")
def maps(encoder):
    return attention_maps(encoder, BertTokenizer(VOCAB), "The cats sat.", pair="a dog ran",
                          max_seq_length=16)


@pytest.fixture(scope="module")
def pretrain_run(tmp_path_factory):
    """A real 4-step `keras-bert pretrain` run (a keras_bert checkpoint with vocab.txt)."""
    base = tmp_path_factory.mktemp("pretrain")
    data = write_pretraining_records(str(base / "data"), num_examples=32)
    run = str(base / "run")
    assert main(["pretrain", "--input_file", data, "--output_dir", run,
                 "--config", write_config(str(base / "bert_config.json")),
                 "--vocab_file", write_vocab(str(base / "vocab.txt")),
                 "--train_batch_size", "8", "--num_train_steps", "4",
                 "--num_warmup_steps", "1", "--log_steps", "2", "--noprogress"]) == 0
    return run


@pytest.fixture(scope="module")
def finetune_run(tmp_path_factory):
    """A real 2-epoch `keras-bert finetune` run (STS-B, tiny random-weight BERT)."""
    run = str(tmp_path_factory.mktemp("finetune") / "stsb")
    assert main(["finetune", "--task", "stsb", "--data_dir",
                 os.path.join(REPO, "tests", "fixtures", "tasks", "glue", "STS-B"),
                 "--output_dir", run, "--preset", "tiny", "--vocab_file", TASK_VOCAB,
                 "--do_lower_case=false", "--max_seq_length", "32", "--num_train_epochs", "2",
                 "--train_batch_size", "8", "--noprogress"]) == 0
    return run


# --- attention maps -------------------------------------------------------------------------

def test_attention_maps_are_the_encoders_probabilities_without_padding(encoder, maps):
    tokens = ["[CLS]", "the", "cat", "##s", "sat", ".", "[SEP]", "a", "dog", "ran", "[SEP]"]
    assert maps.tokens == tokens
    n, seq = len(tokens), 16
    # The encoder run independently on the padded input, packed by hand.
    ids = np.zeros((1, seq), "int32")
    ids[0, :n] = [ID[t] for t in tokens]
    mask = (np.arange(seq) < n).astype("int32")[None]
    types = np.zeros((1, seq), "int32")
    types[0, 7:n] = 1
    out = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types},
                  training=False)
    padded = np.stack([np.asarray(p)[0] for p in out["attention_probs"]])  # [L, A, 16, 16]
    assert maps.probs.shape == (2, 4, n, n) == padded[:, :, :n, :n].shape
    np.testing.assert_allclose(maps.probs, padded[:, :, :n, :n], atol=1e-5)
    # Rows sum to 1 over the real keys: padding took no attention and is not plotted.
    np.testing.assert_allclose(maps.probs.sum(-1), 1.0, atol=1e-5)
    assert padded[:, :, :n, n:].max() < 1e-6
    np.testing.assert_array_equal(maps.type_ids, types[0, :n])
    assert not maps.truncated

    # An encoder built without output_attentions is copied into one with it.
    plain = _tiny_encoder(output_attentions=False)
    plain.set_weights(encoder.get_weights())
    again = attention_maps(plain, BertTokenizer(VOCAB), "The cats sat.", pair="a dog ran",
                           max_seq_length=16)
    np.testing.assert_allclose(again.probs, maps.probs, atol=1e-6)


def test_attention_maps_truncate_like_bert(encoder):
    maps = attention_maps(encoder, BertTokenizer(VOCAB), "the cat sat on the mat",
                          pair="a dog", max_seq_length=7)
    # longest_first: the longer segment gives up tokens until 7 fit.
    assert maps.tokens == ["[CLS]", "the", "cat", "[SEP]", "a", "dog", "[SEP]"]
    assert maps.truncated and maps.probs.shape[-1] == 7


def test_attention_figure_has_one_panel_per_head_showing_its_probabilities(maps):
    for layer in range(maps.num_layers):
        figure = attention_figure(maps, layer)
        panels = [ax for ax in figure.axes if ax.images]
        assert len(panels) == maps.num_heads == 4
        assert len(figure.axes) == maps.num_heads + 1  # and one shared colorbar
        for head, ax in enumerate(panels):
            assert ax.get_title() == f"head {head}"
            np.testing.assert_array_equal(np.asarray(ax.images[0].get_array()),
                                          maps.probs[layer, head])
            assert [t.get_text() for t in ax.get_xticklabels()] == maps.tokens
            assert [t.get_text() for t in ax.get_yticklabels()] == maps.tokens
    with pytest.raises(ValueError, match="layer 2 is out of range"):
        attention_figure(maps, 2)


def test_attention_summary_matches_hand_computation():
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    head0 = [[0.5, 0.5, 0.0, 0.0],
             [0.25, 0.25, 0.25, 0.25],
             [0.0, 1.0, 0.0, 0.0],
             [0.1, 0.2, 0.3, 0.4]]
    probs = np.array([[head0, np.eye(4)]])  # 1 layer, 2 heads
    first, second = attention_summary(probs, tokens)
    entropy_row3 = -(0.1 * np.log(0.1) + 0.2 * np.log(0.2) + 0.3 * np.log(0.3)
                     + 0.4 * np.log(0.4))
    assert first == pytest.approx({
        "layer": 0, "head": 0,
        "cls": (0.5 + 0.25 + 0.0 + 0.1) / 4,
        "sep": (0.0 + 0.25 + 0.0 + 0.4) / 4,
        "previous": (0.25 + 1.0 + 0.3) / 3,  # p[1,0], p[2,1], p[3,2]
        "next": (0.5 + 0.25 + 0.0) / 3,  # p[0,1], p[1,2], p[2,3]
        "entropy": (np.log(2) + np.log(4) + 0.0 + entropy_row3) / 4})
    # Attending to oneself: [CLS] and [SEP] only from themselves, nothing to neighbours.
    assert second == pytest.approx({"layer": 0, "head": 1, "cls": 0.25, "sep": 0.25,
                                    "previous": 0.0, "next": 0.0, "entropy": 0.0})
    # Two [SEP]s (a pair) both count; a uniform head has entropy ln n.
    uniform = attention_summary(np.full((1, 5, 5), 0.2), ["[CLS]", "a", "[SEP]", "b", "[SEP]"])
    assert uniform[0]["sep"] == pytest.approx(0.4)
    assert uniform[0]["cls"] == pytest.approx(0.2)
    assert uniform[0]["entropy"] == pytest.approx(np.log(5))
    with pytest.raises(ValueError, match="n = 3 tokens"):
        attention_summary(probs, tokens[:3])


def test_write_attention_plots(tmp_path, maps):
    import matplotlib.image

    out = tmp_path / "maps"
    written = write_attention_plots(maps, str(out), {"text": "The cats sat."})
    pngs = [attention_png_name(layer) for layer in range(maps.num_layers)]
    assert sorted(os.listdir(out)) == sorted(pngs + [ATTENTION_PROBS_FILE,
                                                     ATTENTION_SUMMARY_FILE])
    assert sorted(written) == sorted(str(out / name) for name in os.listdir(out))
    for name in pngs:
        assert (out / name).read_bytes().startswith(PNG_MAGIC)
        assert matplotlib.image.imread(str(out / name)).shape[2] in (3, 4)
    np.testing.assert_array_equal(np.load(out / ATTENTION_PROBS_FILE), maps.probs)
    record = json.loads((out / ATTENTION_SUMMARY_FILE).read_text())
    assert record["text"] == "The cats sat." and record["tokens"] == maps.tokens
    assert (record["num_layers"], record["num_heads"]) == (2, 4)
    expected = attention_summary(maps.probs, maps.tokens)
    assert len(record["heads"]) == len(expected)
    for saved, head in zip(record["heads"], expected):  # approx takes one dict at a time
        assert saved == pytest.approx(head)


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    out = tmp_path / "new"
    with pytest.raises(TypeError):
        write_files(str(out), {"a.png": b"done", "b.json": 5})  # 5 cannot be written
    assert not out.exists()
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "other.txt").write_text("x")
    with pytest.raises(TypeError):
        write_files(str(tmp_path / "kept"), {"a.png": b"done", "b.json": 5})
    assert os.listdir(tmp_path / "kept") == ["other.txt"]


# --- training curves ------------------------------------------------------------------------

def _logged_run(run):
    """A run directory written by MetricsLogger, pretraining's logger: TensorBoard events
    in logs/train and train_log.jsonl, one record per 2 steps."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    logger = MetricsLogger(os.path.join(run, "logs", "train"), log_steps=2,
                           jsonl_path=os.path.join(run, "train_log.jsonl"),
                           global_batch_size=2)
    x = np.random.default_rng(0).normal(size=(12, 2))
    model.fit(x, x.sum(1, keepdims=True), batch_size=2, verbose=0, callbacks=[logger])
    with open(os.path.join(run, "train_log.jsonl")) as f:
        return [json.loads(line) for line in f]


def test_curves_from_tensorboard_events_and_jsonl(tmp_path):
    import tensorflow as tf

    run = str(tmp_path / "run")
    records = _logged_run(run)
    assert [r["step"] for r in records] == [2, 4, 6]
    curves = read_training_curves(run)
    assert curves.kind == "pretraining" and curves.x_label == "step"
    assert curves.metrics == ["loss", "mae", "learning_rate"]  # throughput left out
    for metric in curves.metrics:
        xs, ys = curves.curves[metric]["train"]
        assert xs == [2, 4, 6]
        assert ys == pytest.approx([r[metric] for r in records], rel=1e-6)
    assert any("tfevents" in s for s in curves.sources)

    # A resumed run logs step 6 again later, and an evaluation split has its own line.
    with tf.summary.create_file_writer(os.path.join(run, "logs", "train")).as_default():
        tf.summary.scalar("loss", 0.125, step=6)
    with tf.summary.create_file_writer(os.path.join(run, "logs", "eval")).as_default():
        for step, value in ((4, 2.0), (6, 1.5)):
            tf.summary.scalar("loss", value, step=step)
    tf.summary.flush()
    curves = read_training_curves(run)
    assert curves.curves["loss"]["train"][1][-1] == pytest.approx(0.125)
    assert curves.curves["loss"]["eval"] == ([4, 6], [2.0, 1.5])

    figure = training_curves_figure(curves)
    assert [ax.get_title() for ax in figure.axes] == curves.metrics
    loss_panel = figure.axes[0]
    lines = {line.get_label(): line for line in loss_panel.get_lines()}
    assert set(lines) == {"train", "eval"}
    np.testing.assert_allclose(lines["eval"].get_ydata(), [2.0, 1.5])

    # Without event files, train_log.jsonl; a step logged twice keeps its last record.
    import shutil

    shutil.rmtree(os.path.join(run, "logs"))
    with open(os.path.join(run, "train_log.jsonl"), "a") as f:
        f.write(json.dumps({"step": 4, "loss": 0.5, "mae": 0.25}) + "\n")
    curves = read_training_curves(run)
    assert curves.curves["loss"]["train"][0] == [2, 4, 6]
    assert curves.curves["loss"]["train"][1][1] == 0.5
    assert curves.sources == [os.path.join(run, "train_log.jsonl")]


def test_plot_a_real_pretraining_run(tmp_path, pretrain_run, capsys):
    with open(os.path.join(pretrain_run, "train_log.jsonl")) as f:
        records = [json.loads(line) for line in f]
    curves = read_training_curves(pretrain_run)
    assert {"loss", "masked_lm_accuracy", "next_sentence_accuracy", "masked_lm_loss",
            "next_sentence_loss", "learning_rate"} == set(curves.metrics)
    assert curves.curves["masked_lm_loss"]["train"] == (
        [2, 4], pytest.approx([r["masked_lm_loss"] for r in records], rel=1e-6))

    assert main(["plot", pretrain_run]) == 0
    png = os.path.join(pretrain_run, "plots", TRAINING_CURVES_FILE)
    assert open(png, "rb").read().startswith(PNG_MAGIC)
    assert f"wrote {png}" in capsys.readouterr().out


def test_plot_a_real_finetuning_run(tmp_path, finetune_run, capsys):
    with open(os.path.join(finetune_run, "finetune_config.json")) as f:
        history = json.load(f)["history"]
    curves = read_training_curves(finetune_run)
    assert curves.kind == "fine-tuning" and curves.x_label == "epoch"
    assert curves.metrics == ["loss", "pearson", "spearmanr"]
    assert curves.curves["loss"] == {"train": ([1, 2], [h["loss"] for h in history])}
    assert curves.curves["pearson"] == {
        "dev": ([1, 2], [h["dev"]["dev"]["pearson"] for h in history])}

    out = tmp_path / "plots"
    assert main(["plot", finetune_run, "--output_dir", str(out)]) == 0
    assert os.listdir(out) == [TRAINING_CURVES_FILE]
    assert (out / TRAINING_CURVES_FILE).read_bytes().startswith(PNG_MAGIC)
    assert "fine-tuning run" in capsys.readouterr().out


def test_finetuning_restarts_are_separate_lines(tmp_path):
    history = [{"restart": r, "epoch": e, "loss": 1.0 / (e + r),
                "dev": {"dev_matched": {"accuracy": 0.5 + 0.1 * e, "count": 3}}}
               for r in (0, 1) for e in (1, 2)]
    (tmp_path / "finetune_config.json").write_text(json.dumps({"history": history}))
    curves = read_training_curves(str(tmp_path))
    # Named as finetune prints them: restart 1 is the first.
    assert set(curves.curves["loss"]) == {"train (restart 1)", "train (restart 2)"}
    assert curves.curves["accuracy"]["dev_matched (restart 2)"] == ([1, 2], [0.6, 0.7])
    assert "count" not in curves.curves  # counts are not curves
    write_training_plots(curves, str(tmp_path / "plots"))
    assert (tmp_path / "plots" / TRAINING_CURVES_FILE).read_bytes().startswith(PNG_MAGIC)


# --- the commands ---------------------------------------------------------------------------

def test_attention_command_on_a_checkpoint_and_a_finetuned_run(tmp_path, pretrain_run,
                                                               finetune_run, capsys):
    from keras_bert import load_encoder

    out = tmp_path / "att"
    assert main(["attention", "--model", pretrain_run, "w1 w2 w3", "--pair", "w7",
                 "--output_dir", str(out)]) == 0
    printed = capsys.readouterr().out
    record = json.loads((out / ATTENTION_SUMMARY_FILE).read_text())
    assert record["tokens"] == ["[CLS]", "w1", "w2", "w3", "[SEP]", "w7", "[SEP]"]
    assert len(record["heads"]) == 2 * 4  # the test config: 2 layers x 4 heads
    assert sorted(os.listdir(out)) == sorted([ATTENTION_PROBS_FILE, ATTENTION_SUMMARY_FILE,
                                              "attention_layer_0.png", "attention_layer_1.png"])
    # The saved probabilities are the checkpoint's, and the table printed is the summary.
    encoder = load_encoder(pretrain_run, output_attentions=True)
    ids = np.array([[2, 6, 7, 8, 3, 12, 3]], "int32")  # write_vocab: w<i> has id 5 + i
    out_probs = encoder({"input_word_ids": ids, "input_mask": np.ones_like(ids),
                         "input_type_ids": np.array([[0, 0, 0, 0, 0, 1, 1]], "int32")})
    np.testing.assert_allclose(np.load(out / ATTENTION_PROBS_FILE),
                               np.stack([np.asarray(p)[0] for p in
                                         out_probs["attention_probs"]]), atol=1e-5)
    head = record["heads"][5]
    assert (f"    1    1 {head['cls']:>7.3f} {head['sep']:>6.3f} {head['previous']:>6.3f} "
            f"{head['next']:>6.3f} {head['entropy']:>7.3f}") in printed

    out = tmp_path / "att_ft"
    assert main(["attention", "--model", finetune_run, "A man is playing.",
                 "--output_dir", str(out)]) == 0
    record = json.loads((out / ATTENTION_SUMMARY_FILE).read_text())
    assert record["tokens"][0] == "[CLS]" and record["tokens"][-1] == "[SEP]"
    assert record["lower_case"] is False  # the fine-tuned run's own setting
    probs = np.load(out / ATTENTION_PROBS_FILE)
    assert probs.shape[:2] == (2, 2)  # the "tiny" preset: 2 layers x 2 heads
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)


def _bad_input_rows(tmp_path, pretrain_run, finetune_run):
    empty = tmp_path / "empty"
    empty.mkdir()
    no_logs = tmp_path / "no_logs"
    (no_logs / "logs").mkdir(parents=True)
    (no_logs / "notes.txt").write_text("x")
    no_history = tmp_path / "no_history"
    no_history.mkdir()
    (no_history / "finetune_config.json").write_text(json.dumps({"task": "stsb"}))
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    out = str(tmp_path / "out")
    return [
        (["attention", "--model", str(tmp_path / "missing"), "hi", "--output_dir", out],
         "missing"),
        (["attention", "--model", pretrain_run, "--output_dir", out], "no text"),
        (["attention", "--model", pretrain_run, "  ", "--output_dir", out], "text is empty"),
        (["attention", "hi", "--output_dir", out], "--model"),
        (["attention", "--model", str(empty), "hi", "--output_dir", out], str(empty)),
        (["attention", "--model", pretrain_run, "w1", "--max_seq_length", "500",
          "--output_dir", out], "--max_seq_length 500"),
        (["attention", "--model", pretrain_run, "w1", "--vocab_file", TASK_VOCAB,
          "--output_dir", out], "vocab_rich.txt"),
        (["attention", "--model", pretrain_run, "w1", "--output_dir", str(a_file)],
         "a_file"),
        (["plot", str(tmp_path / "missing"), "--output_dir", out], "missing"),
        (["plot", str(empty), "--output_dir", out], "is empty"),
        (["plot", str(no_logs), "--output_dir", out], "no_logs"),
        (["plot", str(no_history), "--output_dir", out], "no per-epoch history"),
        (["plot", str(a_file), "--output_dir", out], "is a file"),
        (["plot", finetune_run, "--output_dir", str(a_file)], "a_file"),
    ]


def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, pretrain_run,
                                                          finetune_run, capsys):
    before = {run: sorted(os.listdir(run)) for run in (pretrain_run, finetune_run)}
    for argv, named in _bad_input_rows(tmp_path, pretrain_run, finetune_run):
        code = _exit_code(argv)
        err = capsys.readouterr().err
        assert code == 2, (argv, err)
        assert err.count("\n") == 1 and named in err, (argv, err)
        assert "Traceback" not in err
        assert not os.path.exists(tmp_path / "out"), argv
    assert before == {run: sorted(os.listdir(run)) for run in (pretrain_run, finetune_run)}


def _exit_code(argv):
    try:
        return main(argv)
    except SystemExit as e:  # argparse's own usage errors
        return e.code


def test_without_matplotlib_a_clear_error_names_the_extra(tmp_path, monkeypatch, maps,
                                                          finetune_run, capsys):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends",
                 "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(PlottingUnavailableError, match=r"keras_bert\[plot\]"):
        attention_figure(maps, 0)
    out = tmp_path / "plots"
    assert main(["plot", finetune_run, "--output_dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'pip install "keras_bert[plot]"' in err
    assert not out.exists()


def test_matplotlib_is_imported_only_to_draw():
    # keras_bert never imports matplotlib at module level (Keras itself may, when it is
    # installed), so the package and both commands load without it.
    plotting = [os.path.join("keras_bert", "plotting", name)
                for name in sorted(os.listdir(os.path.join(REPO, "keras_bert", "plotting")))
                if name.endswith(".py")]
    for path in (*plotting, "pipelines/draw/attention.py", "pipelines/draw/plot.py"):
        tree = ast.parse(open(os.path.join(REPO, path), encoding="utf-8").read())
        for node in tree.body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.startswith("matplotlib") for n in names), path
    script = ("import sys; sys.modules['matplotlib'] = None\n"
              "import keras_bert, keras_bert.plotting\n"
              "from keras_bert.cli import build_parser\n"
              "sub = next(a for a in build_parser()._actions if a.dest == 'command')\n"
              "print(sorted(n for n in sub.choices if n in ('attention', 'plot')))\n"
              "print('unavailable' in sub.choices['plot'].format_help())\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["['attention', 'plot']", "False"]
