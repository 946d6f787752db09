"""TF Serving warmup requests: `assets.extra/tf_serving_warmup_requests`.

The records are `PredictionLog`s, whose protos come with the optional
`tensorflow-serving-api` extra (`pip install "keras_bert[export]"`); it is imported only
when they are built or checked for.
"""

from __future__ import annotations

import os

import tensorflow as tf

from keras_bert.core.errors import ArgumentError
from keras_bert.export.source import ExportSource

WARMUP_FILE = "tf_serving_warmup_requests"


def warmup_requests(source: ExportSource, model_name: str, text: bool = True) -> list:
    """TF Serving warmup records (`PredictionLog`s) for each signature at a few shapes:
    ids [batch, seq] ([batch, choices, seq] for a model with choices, at its number of
    choices) and strings for each of `source.text_inputs` ([batch], or [batch, choices]
    for an input of rank 2)."""
    import numpy as np
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    tok = source.tokenizer
    word = next((i for i, t in enumerate(tok.vocabulary)
                 if t.isalpha() and not t.startswith("[")), tok.unk_id)
    logs = []

    def add(signature, inputs):
        request = predict_pb2.PredictRequest(model_spec=model_pb2.ModelSpec(
            name=model_name, signature_name=signature))
        for key, value in inputs.items():
            request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
        logs.append(prediction_log_pb2.PredictionLog(
            predict_log=prediction_log_pb2.PredictLog(request=request)))

    # A model with choices takes [batch, choices, seq] ids and [batch, choices] strings
    # where its `serve_text` takes a matrix (multiple choice's endings).
    choices = source.serving.warmup_choices(source.model)
    ranks = source.serving.text_ranks
    for batch, seq in ((1, 16), (8, 64), (1, source.max_seq_length)):
        seq = min(seq, source.max_seq_length)
        shape = (batch, *choices, seq)
        ids = np.full(shape, word, np.int32)
        ids[..., 0], ids[..., -1] = tok.cls_id, tok.sep_id
        add("serving_default", {"input_word_ids": ids,
                                "input_mask": np.ones(shape, np.int32),
                                "input_type_ids": np.zeros(shape, np.int32)})
    token = tok.vocabulary[word]
    for batch, words in ((1, 8), (8, 40), (1, source.max_seq_length)) if text else ():
        value = " ".join([token] * words)
        add("serve_text", {name: np.full((batch, *choices)[:rank], value, dtype=object)
                           for name, rank in ranks.items()})
    return logs


def serving_api_available() -> bool:
    """Whether tensorflow-serving-api (the warmup file's protos) is installed."""
    try:
        import tensorflow_serving.apis.prediction_log_pb2  # noqa: F401
    except ImportError:
        return False
    return True


def check_serving_api() -> None:
    """Raises `ArgumentError` unless tensorflow-serving-api (warmup protos) imports."""
    try:
        import tensorflow_serving.apis.prediction_log_pb2  # noqa: F401
    except ImportError as e:
        raise ArgumentError(
            f"the TF Serving warmup file needs tensorflow-serving-api ({e}); install "
            "keras_bert[export], or export without warmup requests (--nowarmup).",
            field="warmup") from None


def write_warmup_requests(directory: str, source: ExportSource, model_name: str,
                          text: bool = True) -> None:
    """Writes `warmup_requests` as the TFRecord file `directory/WARMUP_FILE`."""
    with tf.io.TFRecordWriter(os.path.join(directory, WARMUP_FILE)) as writer:
        for log in warmup_requests(source, model_name, text):
            writer.write(log.SerializeToString())
