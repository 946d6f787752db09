"""`keras-bert demo`: the docstring corpus, the derived task, and the whole job on a small
budget in a subprocess: every artifact is checked, the next-sentence labels must be
balanced, and the pretrained model must beat both the untrained one and the
most-frequent-token baseline on held-out masked words (the baseline and the label
balance are recomputed here from the TFRecords, not taken from the demo's report)."""

import collections
import glob
import inspect
import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf
from conftest import REPO

from keras_bert.pipelines.demo import corpus as demo_corpus
from keras_bert.tasks.glue.classification import TextClassificationTask

SMALL = ["--num_train_steps", "400", "--train_batch_size", "32", "--max_corpus_mb", "0.6",
         "--vocab_size", "1500", "--task_examples_per_class", "150",
         "--finetune_epochs", "3"]


def test_english_sentences_keep_prose_and_drop_code_and_parameters():
    docstring = """Computes the mean of the elements across the axis.

    Reduces the input along the given axis, e.g. The rows. Unless keepdims is true, the
    rank drops by one.

    Args:
        axis: The dimensions to reduce.

    Example:

    >>> x = tf.constant([[1., 1.], [2., 2.]])
    >>> tf.reduce_mean(x)

    See `tf.math.reduce_sum` for details on the other arguments.
    """
    assert demo_corpus.english_sentences(inspect.cleandoc(docstring)) == [
        "Computes the mean of the elements across the axis.",
        "Reduces the input along the given axis, e.g. The rows.",
        "Unless keepdims is true, the rank drops by one."]


def test_sentences_split_after_abbreviations_and_initials_only():
    assert demo_corpus.split_sentences("See the notes, i.e. The log. Written by J. Doe. Done!") == [
        "See the notes, i.e. The log.", "Written by J. Doe.", "Done!"]


def test_docstrings_are_read_without_importing(tmp_path):
    module = tmp_path / "module.py"
    module.write_text('"""A module that is parsed and never run by the corpus builder."""\n'
                      'raise SystemExit("imported!")\n'
                      'class C:\n    """Holds one thing that the corpus builder reads."""\n'
                      '    def f(self):\n'
                      '        """Returns the answer to the question that was asked."""\n')
    assert demo_corpus.file_document(str(module)) == [
        "A module that is parsed and never run by the corpus builder.",
        "Holds one thing that the corpus builder reads.",
        "Returns the answer to the question that was asked."]


def test_task_examples_are_balanced_and_held_out_by_document():
    sentence = "Sentence {} of document {} from {} has enough words in it."
    corpus = {source: [[sentence.format(s, d, source) for s in range(5)] for d in range(20)]
              for source in ("alpha", "beta")}
    corpus["beta"].append(["The numpy name makes this sentence unusable for the task."] * 3)
    train, dev = demo_corpus.task_examples(corpus, per_class=40, seed=0)
    counts = collections.Counter(label for _, label in train)
    assert counts == {"alpha": 40, "beta": 40}
    # Documents 5 and 15 of each source are held out: 2 documents x 5 sentences.
    assert collections.Counter(label for _, label in dev) == {"alpha": 10, "beta": 10}
    held_out = {f"document {d} " for d in (5, 15)}
    assert all(any(h in s for h in held_out) for s, _ in dev)
    assert not any(any(h in s for h in held_out) for s, _ in train)
    assert not any("numpy" in s for s, _ in train + dev)


def _records(pattern):
    spec = {"masked_lm_ids": tf.io.FixedLenFeature([10], tf.int64),
            "masked_lm_weights": tf.io.FixedLenFeature([10], tf.float32),
            "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64)}
    files = sorted(glob.glob(pattern))
    assert files, pattern
    batches = [tf.io.parse_example(b, spec)
               for b in tf.data.TFRecordDataset(files).batch(1024)]
    return {k: np.concatenate([b[k].numpy() for b in batches]) for k in spec}


def _event_tags(directory):
    files = glob.glob(os.path.join(directory, "events.out.tfevents.*"))
    assert files, directory
    tags = set()
    for record in tf.data.TFRecordDataset(files):
        event = tf.compat.v1.Event.FromString(record.numpy())
        tags.update(value.tag for value in event.summary.value)
    return tags


def test_demo_end_to_end(tmp_path):
    out, saved = tmp_path / "demo", tmp_path / "saved_models"
    proc = subprocess.run(
        [sys.executable, "-m", "keras_bert", "demo", "--output_dir", str(out),
         "--export_dir", str(saved), *SMALL, "--json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=900,
        env={**os.environ, "PYTHONPATH": REPO})
    assert proc.returncode == 0, proc.stderr[-3000:]
    # --json: stdout holds only JSON objects: stage and step progress, then the result.
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    stages = [e["stage"] for e in events if e["event"] == "progress" and "number" in e]
    assert stages == ["corpus", "vocab", "data", "pretrain", "heldout", "finetune",
                      "export", "pictures"]
    assert any(e.get("stage") == "pretrain" and e.get("step") == int(SMALL[1]) for e in events)
    assert events[-1]["event"] == "result" and events[-1]["exit_code"] == 0
    # The human-readable report went to stderr.
    assert "masked-LM acc" in proc.stderr and "serve_text(" in proc.stderr

    metrics = json.loads((out / "demo_metrics.json").read_text())
    paths = metrics["paths"]
    for name, path in paths.items():
        assert os.path.exists(path), (name, path)
    assert len(open(paths["vocab"]).read().splitlines()) == 1500
    assert glob.glob(os.path.join(paths["pretrain_run"], "checkpoints", "*"))
    import keras_bert

    assert keras_bert.load_encoder(paths["pretrain_run"]).config.vocab_size == 1500
    for init in ("finetune_pretrained", "finetune_random"):
        assert os.path.isfile(os.path.join(paths[init], "model.keras"))
    version = saved / "demo" / "1"
    assert paths["saved_model"] == str(version)
    assert (version / "saved_model.pb").is_file()
    pngs = metrics["pictures"]
    assert len(pngs["attention"]) == 2  # L2: one PNG per layer
    for files in pngs.values():
        for png in files:
            assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert set(pngs) == {"attention", "pretrain", "finetune_pretrained",
                         "finetune_random_init"}

    # Next-sentence labels within 45-55% random, counted here from the TFRecords.
    train = _records(os.path.join(paths["train_data"], "*.tfrecord"))
    random_next = train["next_sentence_labels"].mean()
    assert 0.45 <= random_next <= 0.55, random_next
    assert metrics["nsp_label_balance"]["train"]["random_next_fraction"] == round(
        float(random_next), 4)

    # The most-frequent-token baseline, recomputed on the same held-out masked positions
    # (the small held-out set is evaluated whole).
    ids, weights = train["masked_lm_ids"], train["masked_lm_weights"]
    frequent = collections.Counter(ids[weights > 0].tolist()).most_common(1)[0][0]
    heldout = _records(os.path.join(paths["heldout_data"], "*.tfrecord"))
    h_ids, h_weights = heldout["masked_lm_ids"], heldout["masked_lm_weights"]
    baseline = float((h_weights * (h_ids == frequent)).sum() / h_weights.sum())
    report = metrics["heldout"]
    assert report["masked_positions"] == int(h_weights.sum())
    assert abs(report["baselines"]["most_frequent_token_mlm_accuracy"] - baseline) < 1e-4
    pretrained = report["pretrained"]["masked_lm_accuracy"]
    assert pretrained > report["untrained"]["masked_lm_accuracy"] + 0.02, report
    assert pretrained > baseline + 0.01, report
    # The NSP baseline is the training majority label on the held-out labels.
    majority = int(train["next_sentence_labels"].mean() >= 0.5)
    assert report["baselines"]["majority_class_nsp_accuracy"] == round(
        float((heldout["next_sentence_labels"] == majority).mean()), 4)

    # Fine-tuning ran on the derived task from both initialisations; serve_text answered
    # with the task's labels.
    finetune = metrics["finetune"]
    labels = ["stdlib", "numpy", "tensorflow", "keras"]
    assert finetune["labels"] == labels
    # The fine-tuned run opens by its task name, as `keras-bert export` opens it.
    from keras_bert.tasks.finetuning import load_finetuned

    assert list(load_finetuned(paths["finetune_pretrained"]).task.labels) == labels
    dev = TextClassificationTask(labels).read_examples(
        os.path.join(paths["task_data"], "dev.tsv"))
    assert finetune["dev_examples"] == len(dev) and finetune["majority_class_accuracy"] == 0.25
    for init in ("pretrained_accuracy", "random_init_accuracy"):
        assert 0 <= finetune[init] <= 1
    assert [r["label"] in labels for r in metrics["serve_text"]] == [True, True]
    # Fine-tuning wrote TensorBoard logs (train loss, dev accuracy per epoch) and a JSON
    # progress event per epoch.
    for init in ("finetune_pretrained", "finetune_random"):
        tags = {split: _event_tags(os.path.join(paths[init], "logs", split))
                for split in ("train", "validation")}
        assert "epoch_loss" in tags["train"] and "epoch_accuracy" in tags["validation"], tags
    epochs = [e for e in events if e.get("stage") == "finetune pretrained" and "epoch" in e]
    assert [e["epoch"] for e in epochs] == [1, 2, 3]
    history = json.loads(open(os.path.join(paths["finetune_pretrained"],
                                           "finetune_config.json")).read())["history"]
    assert [e["val_accuracy"] for e in epochs] == [h["dev"]["dev"]["accuracy"]
                                                   for h in history]

    # A rerun with other settings is refused before any work.
    proc = subprocess.run(
        [sys.executable, "-m", "keras_bert", "demo", "--output_dir", str(out),
         "--export_dir", str(saved), *SMALL, "--seed", "1"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "PYTHONPATH": REPO})
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("use another --output_dir or remove it.")
    assert "other settings (seed)" in proc.stderr
