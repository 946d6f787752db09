"""`keras-bert finetune / evaluate / predict` end to end through the CLI, one run per task
family, on tiny files in each benchmark's real layout (tests/fixtures/tasks) and, when
present, the shared GLUE data. A tiny random-weight BERT keeps it fast: these check the
plumbing and file formats, not accuracy (benchmarks/glue_finetune.py measures that)."""

import csv
import json
import math
import os
import subprocess
import sys
import warnings

import pytest
from conftest import REPO, SHARED_DATA

from keras_bert.cli import main

TASK_DATA = os.path.join(REPO, "tests", "fixtures", "tasks")
VOCAB = os.path.join(REPO, "tests", "fixtures", "tokenization", "vocab_rich.txt")
TINY = ["--preset", "tiny", "--vocab_file", VOCAB, "--do_lower_case=false",
        "--max_seq_length", "48", "--num_train_epochs", "1", "--train_batch_size", "8",
        "--noprogress"]


def _finetune(task, data_dir, out, *extra):
    code = main(["finetune", "--task", task, "--data_dir", data_dir, "--output_dir", str(out),
                 *TINY, *extra])
    assert code == 0
    with open(out / "metrics.json") as f:
        return json.load(f)


def _tsv(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f]


def test_glue_mnli_both_dev_splits_and_submission_files(tmp_path, capsys):
    data = os.path.join(TASK_DATA, "glue", "MNLI")
    out = tmp_path / "mnli"
    metrics = _finetune("mnli", data, out)
    assert 0 <= metrics["accuracy"] <= 1 and 0 <= metrics["dev_mismatched"]["accuracy"] <= 1
    assert "mnli dev: accuracy" in capsys.readouterr().out
    assert sorted(os.listdir(out)) == ["finetune_config.json", "logs", "metrics.json",
                                       "mnli-mm.tsv", "mnli.tsv", "model.keras", "vocab.txt"]
    assert sorted(os.listdir(out / "logs")) == ["train", "validation"]  # TensorBoard
    rows = _tsv(out / "mnli.tsv")
    with open(os.path.join(data, "dev_matched.tsv"), encoding="utf-8") as f:
        dev_rows = sum(1 for _ in f) - 1
    assert rows[0] == ["index", "prediction"] and len(rows) == dev_rows + 1
    assert {r[1] for r in rows[1:]} <= {"contradiction", "entailment", "neutral"}

    # evaluate recomputes the same metrics from the saved model.
    before = json.loads((out / "metrics.json").read_text())
    assert main(["evaluate", "--model", str(out), "--task", "mnli", "--data_dir", data]) == 0
    after = json.loads((out / "metrics.json").read_text())
    assert after["accuracy"] == pytest.approx(before["accuracy"])
    assert after["dev_mismatched"]["accuracy"] == pytest.approx(
        before["dev_mismatched"]["accuracy"])

    # predict: the task's own TSV layout in (labels ignored), one prediction per row out,
    # the same predictions as the dev file written at fine-tuning time.
    predictions = tmp_path / "pred.tsv"
    assert main(["predict", "--model", str(out), "--task", "mnli", "--input",
                 os.path.join(data, "dev_matched.tsv"), "--output", str(predictions)]) == 0
    assert _tsv(predictions) == rows


def test_glue_regression_stsb(tmp_path):
    metrics = _finetune("stsb", os.path.join(TASK_DATA, "glue", "STS-B"), tmp_path / "stsb")
    assert set(metrics) >= {"pearson", "spearmanr"}
    rows = _tsv(tmp_path / "stsb" / "stsb.tsv")
    assert all(isinstance(float(r[1]), float) for r in rows[1:])


@pytest.mark.skipif(not os.path.isdir(os.path.join(SHARED_DATA, "glue", "MRPC")),
                    reason="../shared/data/glue/MRPC is not present")
def test_glue_mrpc_on_the_real_files(tmp_path):
    metrics = _finetune("mrpc", os.path.join(SHARED_DATA, "glue", "MRPC"), tmp_path / "mrpc",
                        "--max_train_examples", "64")
    assert set(metrics) >= {"accuracy", "f1"}
    assert len(_tsv(tmp_path / "mrpc" / "mrpc.tsv")) == 409  # header + 408 dev pairs


@pytest.mark.parametrize("task", ["squad1", "squad2"])
def test_squad(tmp_path, task):
    data = os.path.join(TASK_DATA, "squad")
    out = tmp_path / task
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metrics = _finetune(task, data, out, "--max_query_length", "16", "--doc_stride", "16",
                            "--num_train_epochs", "2")
    # The span labeler leaves the pooler unused: no "Gradients do not exist" noise.
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    assert 0 <= metrics["exact_match"] <= 100 and 0 <= metrics["f1"] <= 100
    names = sorted(os.listdir(out))
    assert {"predictions.json", "nbest_predictions.json"} <= set(names)
    predictions = json.loads((out / "predictions.json").read_text())
    dev = "dev-v1.1.json" if task == "squad1" else "dev-v2.0.json"
    with open(os.path.join(data, dev), encoding="utf-8") as f:
        ids = {q["id"] for a in json.load(f)["data"] for p in a["paragraphs"] for q in p["qas"]}
    assert set(predictions) == ids and all(isinstance(v, str) for v in predictions.values())
    if task == "squad2":
        assert "best_threshold" in metrics and "null_odds.json" in names
    else:
        assert "null_odds.json" not in names
    output = tmp_path / "out" / "predictions.json"
    assert main(["predict", "--model", str(out), "--task", task, "--input",
                 os.path.join(data, dev), "--output", str(output)]) == 0
    assert set(json.loads(output.read_text())) == ids
    if task == "squad1":  # a fresh process, where nothing imported the task models yet
        fresh = tmp_path / "fresh" / "predictions.json"
        proc = subprocess.run([sys.executable, "-m", "keras_bert", "predict", "--model",
                               str(out), "--task", task, "--input", os.path.join(data, dev),
                               "--output", str(fresh), "--quiet"], capture_output=True,
                              text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert json.loads(fresh.read_text()) == json.loads(output.read_text())


def test_ner_and_its_feature_based_variant(tmp_path):
    data = os.path.join(TASK_DATA, "conll2003")
    metrics = _finetune("ner", data, tmp_path / "ner")
    assert set(metrics) >= {"precision", "recall", "f1"}
    lines = (tmp_path / "ner" / "predictions.txt").read_text().splitlines()
    words = [line.split() for line in lines if line.strip()]
    assert words and all(len(w) == 3 for w in words)  # word, gold tag, predicted tag
    # The feature-based model concatenates the last four layers: the 2-layer tiny preset
    # is refused up front, the 4-layer mini one trains.
    assert main(["finetune", "--task", "ner", "--data_dir", data, "--output_dir",
                 str(tmp_path / "ner_fb"), *TINY, "--feature_based"]) == 2
    assert not (tmp_path / "ner_fb").exists()
    metrics = _finetune("ner", data, tmp_path / "ner_fb", "--feature_based", "--preset", "mini")
    assert set(metrics) >= {"precision", "recall", "f1"}


def test_swag(tmp_path):
    data = os.path.join(TASK_DATA, "swag")
    metrics = _finetune("swag", data, tmp_path / "swag")
    assert 0 <= metrics["accuracy"] <= 1
    with open(tmp_path / "swag" / "predictions.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["index", "prediction"] and {r[1] for r in rows[1:]} <= set("0123")


@pytest.mark.parametrize("task,directory", [("cola", "CoLA"), ("qqp", "QQP")])
def test_glue_predict_on_test_files_without_labels(tmp_path, task, directory):
    # CoLA: headerless train/dev rows, a test.tsv with an "index sentence" header; QQP:
    # rows keyed by an "id" column. The whole GLUE download's root works as --data_dir.
    root = os.path.join(TASK_DATA, "glue")
    out = tmp_path / task
    metrics = _finetune(task, root, out)
    assert set(metrics) >= set({"cola": ["matthews_corrcoef"], "qqp": ["accuracy", "f1"]}[task])
    dev = _tsv(out / f"{task}.tsv")
    assert dev[0] == ["index", "prediction"] and {r[1] for r in dev[1:]} <= {"0", "1"}
    if task == "qqp":
        assert [r[0] for r in dev[1:]] == ["40", "41"]  # the dev file's ids, in order
    test = os.path.join(root, directory, "test.tsv")
    output = tmp_path / "test_predictions.tsv"
    assert main(["predict", "--model", str(out), "--task", task, "--input", test,
                 "--output", str(output)]) == 0
    rows = _tsv(output)
    inputs = _tsv(test)[1:]
    assert rows[0] == ["index", "prediction"]
    assert [r[0] for r in rows[1:]] == [r[0] for r in inputs]  # one per row, in order
    assert {r[1] for r in rows[1:]} <= {"0", "1"}


def test_squad2_dev_files_evaluate_and_threshold_agree(tmp_path):
    # The dev predictions are decided at the threshold chosen on dev and saved with the
    # model: predictions.json answers exactly the questions whose null odds are at most
    # best_threshold, and `evaluate` on the same dev file gives the same scores.
    data = os.path.join(TASK_DATA, "squad")
    out = tmp_path / "squad2"
    metrics = _finetune("squad2", data, out, "--max_query_length", "16", "--doc_stride", "16")
    predictions = json.loads((out / "predictions.json").read_text())
    null_odds = json.loads((out / "null_odds.json").read_text())
    nbest = json.loads((out / "nbest_predictions.json").read_text())
    assert set(predictions) == set(null_odds) == set(nbest)
    tau = metrics["best_threshold"]
    assert all((predictions[q] == "") == (null_odds[q] > tau) for q in predictions)
    assert metrics["f1"] == pytest.approx(metrics["best_f1"])
    for entries in nbest.values():
        assert set(entries[0]) == {"text", "probability", "start_logit", "end_logit"}
        assert sum(e["probability"] for e in entries) == pytest.approx(1.0)
    record = json.loads((out / "finetune_config.json").read_text())
    assert record["task_config"]["null_score_diff_threshold"] == tau
    assert main(["evaluate", "--model", str(out), "--task", "squad2", "--data_dir", data,
                 "--noprogress"]) == 0
    again = json.loads((out / "metrics.json").read_text())
    for key in ("exact_match", "f1", "HasAns_f1", "NoAns_f1", "best_f1", "best_threshold"):
        assert again[key] == pytest.approx(metrics[key]), key


def test_saved_run_loads_without_optimizer_state(tmp_path):
    import zipfile

    import h5py

    from keras_bert.tasks.finetuning import load_finetuned

    data = os.path.join(TASK_DATA, "glue", "STS-B")
    out = tmp_path / "stsb"
    _finetune("stsb", data, out)
    with zipfile.ZipFile(out / "model.keras") as archive:
        archive.extract("model.weights.h5", tmp_path)
    with h5py.File(tmp_path / "model.weights.h5") as weights:
        assert "optimizer" not in weights, "AdamW's moments are not saved with the model"
    run = load_finetuned(str(out), task="stsb")
    assert run.task.is_regression and run.settings.max_seq_length == 48
    assert run.record["data_dir"] == data and run.record["task"] == "stsb"


def test_squad_gets_the_papers_sequence_length_by_default(tmp_path):
    from keras_bert.tasks.finetuning import FinetuneOptions, Finetuning

    squad = Finetuning("squad1", os.path.join(TASK_DATA, "squad"), str(tmp_path / "a"),
                       preset="tiny", vocab_file=VOCAB, lower_case=False, progress=False)
    glue = Finetuning("wnli", os.path.join(TASK_DATA, "glue", "WNLI"), str(tmp_path / "b"),
                      preset="tiny", vocab_file=VOCAB, lower_case=False, progress=False)
    assert (squad.options.max_seq_length, squad.settings.max_seq_length) == (384, 384)
    assert glue.options.max_seq_length == 128
    # An explicit length is kept.
    short = Finetuning("squad1", os.path.join(TASK_DATA, "squad"), str(tmp_path / "c"),
                       preset="tiny", vocab_file=VOCAB, lower_case=False, progress=False,
                       options=FinetuneOptions(max_seq_length=64, max_query_length=16))
    assert short.settings.max_seq_length == 64


@pytest.mark.slow  # long (CI time); its neighbours cover the default run
def test_restarts_keep_the_best_seed_on_dev_in_mixed_bfloat16(tmp_path):
    data = os.path.join(TASK_DATA, "glue", "STS-B")
    out = tmp_path / "stsb"
    metrics = _finetune("stsb", data, out, "--num_restarts", "3", "--seed", "7",
                        "--precision", "mixed_bfloat16", "--learning_rate", "1e-3")
    record = json.loads((out / "finetune_config.json").read_text())
    finals = {}
    for entry in record["history"]:  # one entry per epoch of each restart
        finals[entry["restart"]] = entry["dev"]["dev"]["spearmanr"]
    assert sorted(finals) == [0, 1, 2]
    # Ties keep the earlier seed; a restart whose predictions are all equal has an
    # undefined (NaN) Spearman and ranks last (in bfloat16 a tiny regression model can
    # round every prediction to one value).
    best = max(finals, key=lambda r: (finals[r] if finals[r] == finals[r] else -math.inf,
                                      -r))
    assert finals[best] == finals[best]  # at least one restart has a defined score
    assert metrics["seed"] == record["seed"] == 7 + best
    assert metrics["spearmanr"] == pytest.approx(finals[best])
    assert record["options"]["precision"] == "mixed_bfloat16"
    # The saved model is the kept restart's: evaluate finds its dev scores again.
    assert main(["evaluate", "--model", str(out), "--task", "stsb", "--data_dir", data,
                 "--noprogress"]) == 0
    again = json.loads((out / "metrics.json").read_text())
    assert again["spearmanr"] == pytest.approx(metrics["spearmanr"], abs=1e-6)
    assert again["pearson"] == pytest.approx(metrics["pearson"], abs=1e-3)


def test_training_traces_its_step_once_for_every_epoch_and_length(tmp_path, monkeypatch):
    # The train step is traced once per fit whatever the batches' lengths and the number
    # of epochs (the optimizer's variables exist before the first step; a tf.function
    # that makes variables is traced twice), and the dev scoring after every epoch reuses
    # one predict trace, a short last batch included. Python in a step runs only when
    # Keras traces it.
    import keras

    from keras_bert.tasks.glue.model import BertClassifier

    traces = []

    def counting_train_step(self, data):
        traces.append("train")
        return keras.Model.train_step(self, data)

    def counting_predict_step(self, data):
        traces.append("predict")
        return keras.Model.predict_step(self, data)

    monkeypatch.setattr(BertClassifier, "train_step", counting_train_step)
    monkeypatch.setattr(BertClassifier, "predict_step", counting_predict_step)
    # 4 training rows in batches of 3 and 3 dev rows in batches of 2: a short last batch
    # in both, and sequence lengths that differ from batch to batch.
    metrics = _finetune("stsb", os.path.join(TASK_DATA, "glue", "STS-B"), tmp_path / "stsb",
                        "--num_train_epochs", "2", "--train_batch_size", "3",
                        "--eval_batch_size", "2")
    assert sorted(traces) == ["predict", "train"]
    # The run reports what it traced and how long that took.
    assert {k: v["traces"] for k, v in metrics["traces"].items()} == {
        "train_step": 1, "predict_step": 1}
    assert 0 < metrics["trace_seconds"] <= metrics["train_seconds"]


def test_truncation_is_reported_and_a_large_share_warned(tmp_path, capsys):
    # Pairs cut to a few tokens train silently wrong: every run says how many examples
    # were cut, and warns when it is a large share.
    _finetune("qnli", os.path.join(TASK_DATA, "glue", "QNLI"), tmp_path / "qnli",
              "--max_seq_length", "8")
    out = capsys.readouterr()
    text = out.out + out.err
    assert "train.tsv: " in text and "were cut to max_seq_length 8" in text
    assert "raise --max_seq_length" in text
    code = main(["evaluate", "--model", str(tmp_path / "qnli"), "--task", "qnli", "--data_dir",
                 os.path.join(TASK_DATA, "glue", "QNLI"), "--output_dir",
                 str(tmp_path / "eval"), "--noprogress"])
    assert code == 0
    out = capsys.readouterr()
    assert "were cut to max_seq_length 8" in out.out + out.err


def test_finetune_continues_from_a_finetuned_runs_encoder(tmp_path, capsys):
    # Intermediate-task transfer (MNLI, then RTE, in the paper's follow-ups): --checkpoint
    # takes a fine-tuning run directory; its encoder is kept, its head replaced.
    import keras
    import numpy as np

    first = tmp_path / "stsb"
    _finetune("stsb", os.path.join(TASK_DATA, "glue", "STS-B"), first)
    second = tmp_path / "qnli"
    code = main(["finetune", "--task", "qnli", "--data_dir",
                 os.path.join(TASK_DATA, "glue", "QNLI"), "--output_dir", str(second),
                 "--checkpoint", str(first), "--max_seq_length", "48",
                 "--num_train_epochs", "1", "--learning_rate", "1e-12", "--noprogress"])
    assert code == 0
    out = capsys.readouterr()
    assert "its stsb head is replaced by a new qnli head" in out.out + out.err
    record = json.loads((second / "finetune_config.json").read_text())
    assert record["checkpoint"] == str(first) and record["task"] == "qnli"
    # With a learning rate of 1e-12 the encoder is the first run's, weight for weight.
    before = keras.saving.load_model(first / "model.keras", compile=False).encoder
    after = keras.saving.load_model(second / "model.keras", compile=False).encoder
    for a, b in zip(before.get_weights(), after.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_lora_rank_trains_the_low_rank_factors_and_the_head_only(tmp_path):
    """`--lora_rank 4` fine-tunes what `enable_lora(4)` trains: the run's model.keras
    (opened by Keras alone) trains the encoder's LoRA factors and the head, the same
    variables as the Python object with `enable_lora(4)`, and far fewer than all."""
    import keras
    import numpy as np

    import keras_bert
    from keras_bert.model.config import BertConfig

    out = tmp_path / "lora"
    _finetune("sst2", os.path.join(TASK_DATA, "glue", "SST-2"), out, "--lora_rank", "4")
    model = keras.saving.load_model(out / "model.keras")

    def count(variables):
        return sum(int(np.prod(v.shape)) for v in variables)

    trained = sorted(v.path for v in model.trainable_variables)
    assert trained and all("lora" in path or "pooler" in path or "logits" in path
                           for path in trained), trained
    assert count(model.trainable_variables) < 0.1 * count(model.variables)
    with open(VOCAB, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    reference = keras_bert.BertClassifier(keras_bert.BertEncoder(
        BertConfig.from_preset("tiny", vocab_size=vocab_size)), num_classes=2)
    reference.enable_lora(4)
    assert count(model.trainable_variables) == count(reference.trainable_variables)
    assert json.loads((out / "finetune_config.json").read_text())["options"]["lora_rank"] == 4


def test_lora_rank_and_feature_based_are_refused_together(tmp_path, capsys):
    data = os.path.join(TASK_DATA, "conll2003")
    assert main(["finetune", "--task", "ner", "--data_dir", data, "--output_dir",
                 str(tmp_path / "x"), *TINY, "--feature_based", "--lora_rank", "4"]) == 2
    err = capsys.readouterr().err
    assert "lora_rank" in err and "feature_based" in err
    assert not (tmp_path / "x").exists()
