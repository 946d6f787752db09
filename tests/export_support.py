"""What the export tests (SavedModel, LiteRT, ONNX) share: random id inputs, the Keras
model's own outputs named as the exported signatures name them, fine-tuned run
directories, and scripts run in a fresh process (`run_python`)."""

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import warnings

import numpy as np
import tensorflow as tf

from keras_bert.checkpoints import FINETUNE_CONFIG, FINETUNED_MODEL
from keras_bert.model.config import BertConfig
from keras_bert.tasks.finetuning import FinetuneOptions
from keras_bert.tasks.registry import get_task
from keras_bert.text.tokenizer import BertTokenizer, VocabularyWarning

# The tokenizer test vocabulary (CJK, accents, punctuation) the export tests share.
VOCAB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tokenization",
                     "vocab_rich.txt")


def tiny_config(vocab_size):
    """The export tests' encoder: 2 layers, H=32, 4 heads, 64 positions."""
    return BertConfig.from_preset("tiny", vocab_size=vocab_size, max_position_embeddings=64,
                                  hidden_size=32, num_heads=4, intermediate_size=64)


def rich_tokenizer(lower_case):
    """`BertTokenizer` of `VOCAB` (its vocabulary warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyWarning)
        return BertTokenizer(VOCAB, lower_case=lower_case)


def random_ids(batch=3, seq=11, vocab=6000, seed=0):
    """Ids of rows of decreasing length (padding after), with a second segment."""
    rng = np.random.default_rng(seed)
    lengths = np.array([seq - 3 * i for i in range(batch)])
    mask = (np.arange(seq)[None] < lengths[:, None]).astype(np.int32)
    ids = rng.integers(5, vocab, (batch, seq)).astype(np.int32) * mask
    types = ((np.arange(seq)[None] >= lengths[:, None] // 2) * mask).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def keras_outputs(kind, model, inputs):
    """The Keras model's outputs through its inference path (`predict`, a traced graph).
    Called op by op instead, the outputs at padding positions (masked, meaningless)
    differ by up to ~1e-4 on a real checkpoint from oneDNN's eager kernels; real
    positions agree either way."""
    out = model.predict_on_batch(inputs)
    if kind == "encoder":
        return {"pooled_output": out["pooled_output"],
                "sequence_output": out["sequence_output"],
                "encoder_outputs": np.stack([np.asarray(x) for x in out["encoder_outputs"]],
                                            axis=1)}
    if kind == "classifier":
        return {"logits": out, "probabilities": tf.nn.softmax(out).numpy()}
    if kind == "regression":
        return {"score": np.asarray(out)[:, 0]}
    if kind == "span_labeler":
        return dict(out)
    return {"logits": out}


def finetuned_run(vocab, seq, directory, task_name, encoder, task_config, **options):
    """A run directory as `keras-bert finetune` writes it (its own file names and
    record, `vocab` copied beside it, `seq` as max_seq_length), with a random-weight
    head: building it here keeps the tests fast."""
    task = get_task(task_name)
    task.restore(task_config)
    model = task.build_model(encoder)
    os.makedirs(directory)
    model.save(os.path.join(directory, FINETUNED_MODEL))
    shutil.copyfile(vocab, os.path.join(directory, "vocab.txt"))
    record = {"task": task_name, "task_config": task_config,
              "options": dataclasses.asdict(FinetuneOptions(max_seq_length=seq, **options)),
              "learning_rate": 2e-5, "seed": 1, "checkpoint": None, "preset": "tiny",
              "lower_case": False, "history": []}
    with open(os.path.join(directory, FINETUNE_CONFIG), "w") as f:
        json.dump(record, f)
    return model


def tiny_sst2_run(directory):
    """A tiny random-weight SST-2 run directory (max_seq_length 16) at `directory`: what
    the export plumbing tests export."""
    from keras_bert.model.encoder import BertEncoder

    encoder = BertEncoder(tiny_config(rich_tokenizer(False).vocab_size))
    finetuned_run(VOCAB, 16, directory, "sst2", encoder, {"task": "sst2", "labels": ["0", "1"]})
    return str(directory)


def run_python(root, script, *args, timeout=300):
    """Runs the Python source `script` as a fresh process (`python -I`, no PYTHONPATH)
    in directory `root` with `args`; returns the finished `subprocess.CompletedProcess`.
    A crash in native code shows as a negative returncode: see `exit_report`."""
    path = os.path.join(root, "script.py")
    with open(path, "w") as f:
        f.write(script)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-I", path, *map(str, args)], capture_output=True,
                          text=True, cwd=root, env=env, timeout=timeout)


def exit_report(proc) -> str:
    """How a `run_python` process ended (the signal that killed it, if one did), the
    last lines of its stdout (what it was doing) and the end of its stderr."""
    code = proc.returncode
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
    last = "\n".join(proc.stdout.strip().splitlines()[-3:])
    return f"{how}; stdout ends: {last}\nstderr ends: {proc.stderr[-2500:]}"
