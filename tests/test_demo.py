"""`keras-bert demo`: the docstring corpus, and the whole job on a small budget, which
must leave the trained model clearly better than the untrained one on held-out text."""

import json
import os

import keras_bert
from keras_bert import cli
from keras_bert.pipelines import demo

SMALL = ["--num_train_steps", "250", "--train_batch_size", "32", "--max_corpus_mb", "0.6",
         "--vocab_size", "1500", "--noprogress"]


def test_english_sentences_keep_prose_and_drop_code_and_parameters():
    docstring = """Computes the mean of the elements across the axis.

    Reduces the input along the given axis. Unless keepdims is true, the rank drops
    by one.

    Args:
        axis: The dimensions to reduce.

    Example:

    >>> x = tf.constant([[1., 1.], [2., 2.]])
    >>> tf.reduce_mean(x)

    See `tf.math.reduce_sum` for details on the other arguments.
    """
    import inspect

    assert demo.english_sentences(inspect.cleandoc(docstring)) == [
        "Computes the mean of the elements across the axis.",
        "Reduces the input along the given axis.",
        "Unless keepdims is true, the rank drops by one."]


def test_docstrings_are_read_without_importing(tmp_path):
    module = tmp_path / "module.py"
    module.write_text('"""A module that is parsed and never run by the corpus builder."""\n'
                      'raise SystemExit("imported!")\n'
                      'def f():\n    """Returns the answer to the question that was asked."""\n')
    documents = demo.docstring_documents([str(module)], max_chars=10**6)
    assert documents == [["A module that is parsed and never run by the corpus builder."],
                         ["Returns the answer to the question that was asked."]]


def test_demo_trains_a_model_that_beats_the_untrained_one(tmp_path, capsys):
    out = str(tmp_path / "demo")
    assert cli.main(["demo", "--output_dir", out, *SMALL]) == 0
    printed = capsys.readouterr().out
    results = json.load(open(os.path.join(out, "demo_results.json")))
    before = results["heldout"]["untrained"]["masked_lm_accuracy"]
    after = results["heldout"]["trained"]["masked_lm_accuracy"]
    assert after > before + 0.03, results["heldout"]
    assert results["heldout"]["trained"]["masked_lm_loss"] < (
        results["heldout"]["untrained"]["masked_lm_loss"] - 1.0)
    # Predictions were shown for held-out sentences, and every output path was printed.
    assert printed.count("[MASK]") == len(results["predictions"]) >= 3
    for path in results["paths"].values():
        assert os.path.exists(path), path
        if not path.endswith("heldout.txt") and "heldout" not in path:
            assert path in printed
    assert keras_bert.load_encoder(results["paths"]["run"]).config.vocab_size == 1500

    # A rerun reuses the finished work; other settings are refused.
    assert cli.main(["demo", "--output_dir", out, *SMALL]) == 0
    assert "reusing" in capsys.readouterr().out
    assert cli.main(["demo", "--output_dir", out, *SMALL, "--seed", "1"]) == 2
    assert "other settings (seed)" in capsys.readouterr().err
