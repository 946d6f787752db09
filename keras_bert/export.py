"""SavedModel export for TF Serving and TF Hub-style reuse.

`export_saved_model` writes an encoder or a fine-tuned task model as a SavedModel that
runs with TensorFlow and tensorflow-text alone (this package need not be installed
where it is served), in TF Serving's layout `OUTPUT_DIR/NAME/VERSION/`: every export is
a new numeric version, written to a hidden temporary directory and renamed into place
only once complete.

Signatures (the names TF Serving clients use):

* `serving_default`: token ids with the TF Hub BERT names `input_word_ids`,
  `input_mask`, `input_type_ids` (int32 [batch, seq], any batch and seq up to the
  model's `max_position_embeddings`). Ids outside the vocabulary, type ids outside
  `type_vocab_size`, masks other than 0/1 and inputs of different shapes are rejected
  with INVALID_ARGUMENT (never wrapped or clipped).
* `serve_text`: raw UTF-8 strings `text` (and `text_pair` for pair tasks) [batch],
  tokenized in-graph exactly like `keras_bert.BertTokenizer` (tensorflow-text ops, no
  `py_function`), packed and truncated as in fine-tuning to `max_seq_length`.
  Sequence outputs are cut to the longest input of the batch.

Outputs: encoder `pooled_output` [batch, H], `sequence_output` [batch, seq, H],
`encoder_outputs` [batch, L, seq, H]; classifier `logits`, `probabilities`, `label`
(the label names stored in the model); regression `score`; span labeler
`start_logits`, `end_logits` and, from `serve_text` (question as `text`, passage as
`text_pair`), `answer`; tagger `logits` and per-token `labels` ("" on padding).

An encoder export is also a TF Hub-style reusable SavedModel: its `__call__` takes the
id dict (with `training`) and returns the dict above with `encoder_outputs` as a list,
and `variables` / `trainable_variables` are exposed, so `hub.KerasLayer(path,
trainable=True)` fine-tunes it. Beside it, `VERSION/preprocessor/` holds the matching
preprocessing SavedModel with `tokenize` (strings -> ragged ids [batch, (tokens)]) and
`bert_pack_inputs` (a list of ragged segments, `seq_length` -> the id dict), like the
public TF Hub BERT preprocessors.

`assets.extra/keras_bert.json` is the model card (config, vocab checksum, casing,
lengths, label names, source, precision, export time) and
`assets.extra/tf_serving_warmup_requests` holds TF Serving warmup requests
(`PredictionLog` records; needs the `tensorflow-serving-api` extra).
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import os
import re

import keras
import tensorflow as tf
from tensorflow_text import combine_segments, pad_model_inputs

from keras_bert import io
from keras_bert.checkpoints import (
    check_vocab_matches,
    checkpoint_lower_case,
    checkpoint_vocab,
    load_encoder,
    read_config,
)
from keras_bert.config import BertConfig
from keras_bert.encoder import INPUT_NAMES
from keras_bert.errors import ArgumentError, InputNotFoundError
from keras_bert.preprocessing import pack_inputs, truncate_segments
from keras_bert.tokenization import BertTokenizer

PRECISIONS = ("float32", "mixed_bfloat16")
KINDS = ("encoder", "classifier", "regression", "span_labeler", "tagger")
MODEL_CARD = "keras_bert.json"
WARMUP_FILE = "tf_serving_warmup_requests"
PREPROCESSOR_DIR = "preprocessor"
DEFAULT_SEQ_LENGTH = 128
_NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclasses.dataclass
class ExportSource:
    """What an export is made of: the Keras model and how text reaches it.

    Attributes:
        model: the encoder or the task model (Keras, already at the export precision).
        kind: one of `KINDS`.
        tokenizer: the `BertTokenizer` of the model's vocabulary.
        vocab_file: the vocab.txt (copied into the SavedModel's assets).
        max_seq_length: tokens per sequence for `serve_text`, [CLS]/[SEP] included.
        label_names: class names in index order (classifier, tagger), else None.
        pair: whether `serve_text` takes `text_pair` (pair tasks, span labeler).
        source: the checkpoint or fine-tuned directory it came from.
        task: the fine-tuning task name, or None for an encoder.
        max_query_length, max_answer_length: span labeler decoding (SQuAD settings).
        null_score_diff_threshold: SQuAD v2: "" when null score - best span > it;
            None for v1.1 (always an answer).
    """

    model: keras.Model
    kind: str
    tokenizer: BertTokenizer
    vocab_file: str
    max_seq_length: int
    label_names: tuple[str, ...] | None = None
    pair: bool = False
    source: str | None = None
    task: str | None = None
    max_query_length: int = 64
    max_answer_length: int = 30
    null_score_diff_threshold: float | None = None

    @property
    def encoder(self):
        return self.model if self.kind == "encoder" else self.model.encoder

    @property
    def config(self) -> BertConfig:
        return self.encoder.config


def is_finetuned_dir(path: str | os.PathLike) -> bool:
    """Whether `path` is a run directory written by `keras-bert finetune`."""
    from keras_bert.tasks.finetuning import CONFIG_FILE, MODEL_FILE

    path = os.fspath(path)
    return (os.path.isdir(path) and os.path.isfile(os.path.join(path, CONFIG_FILE))
            and os.path.isfile(os.path.join(path, MODEL_FILE)))


def load_export_source(checkpoint: str | os.PathLike, precision: str = "float32",
                       max_seq_length: int | None = None, vocab_file: str | None = None,
                       lower_case: bool | None = None) -> ExportSource:
    """Reads what `export_saved_model` exports from a checkpoint path.

    Args:
        checkpoint: a fine-tuned run directory (`keras-bert finetune`'s output_dir), or
            any checkpoint `load_encoder` takes (Hugging Face, Google TF1, keras_bert).
        precision: "float32" or "mixed_bfloat16" (bfloat16 compute, float32 weights
            and outputs).
        max_seq_length: `serve_text`'s sequence length; default: the fine-tuning
            run's, else 128 (at most the model's `max_position_embeddings`).
        vocab_file, lower_case: for an encoder checkpoint without a vocab.txt beside
            it, or to override its casing (default: read from the checkpoint).
    """
    check_precision(precision)
    checkpoint = os.fspath(checkpoint)
    if not os.path.exists(checkpoint) and not os.path.isfile(checkpoint + ".index"):
        raise InputNotFoundError(f"checkpoint {checkpoint!r} does not exist.")
    if is_finetuned_dir(checkpoint):
        return _finetuned_source(checkpoint, precision, max_seq_length)
    if vocab_file is None:
        vocab_file = checkpoint_vocab(checkpoint)
        if vocab_file is None:
            raise InputNotFoundError(f"the checkpoint {checkpoint!r} has no vocab.txt beside "
                                     "it; give its vocab_file.")
    if lower_case is None:
        lower_case = checkpoint_lower_case(checkpoint)
    # Checked before the weights load.
    config = read_config(checkpoint)
    check_vocab_matches(vocab_file, config.vocab_size, f"the checkpoint {checkpoint!r}",
                        checkpoint=checkpoint)
    seq = _seq_length(max_seq_length or DEFAULT_SEQ_LENGTH, config,
                      explicit=max_seq_length is not None)
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case)
    encoder = load_encoder(checkpoint, dtype=_policy(precision))
    return ExportSource(encoder, "encoder", tokenizer, os.fspath(vocab_file), seq,
                        source=checkpoint)


def _finetuned_source(path: str, precision: str, max_seq_length: int | None) -> ExportSource:
    from keras_bert.tasks.finetuning import load_finetuned

    run = load_finetuned(path)
    task, settings = run.task, run.settings
    model = run.model if precision == "float32" else _with_policy(run.model, _policy(precision))
    family = task.family
    fields: dict = {}
    if family == "glue":
        if task.is_regression:
            kind = "regression"
        else:
            kind, fields["label_names"] = "classifier", tuple(task.labels)
        fields["pair"] = len(task.text_columns) > 1
    elif family == "squad":
        kind, fields["pair"] = "span_labeler", True
        fields["max_query_length"] = settings.max_query_length
        fields["max_answer_length"] = settings.max_answer_length
        if task.name == "squad2":
            fields["null_score_diff_threshold"] = float(
                getattr(task, "null_score_diff_threshold", 0.0))
    elif family == "tagging":
        kind, fields["label_names"] = "tagger", tuple(task.labels)
    else:
        raise ArgumentError(f"{path!r} is a {task.name} ({family}) model; export takes "
                            "encoders and GLUE, SQuAD and NER models.", field="checkpoint")
    encoder_config = model.encoder.config
    seq = _seq_length(max_seq_length or settings.max_seq_length, encoder_config,
                      explicit=max_seq_length is not None)
    return ExportSource(model, kind, run.tokenizer, os.path.join(path, "vocab.txt"), seq,
                        source=path, task=task.name, **fields)


def _with_policy(model: keras.Model, policy: str) -> keras.Model:
    """The same task model with its encoder (and so its heads) at another dtype policy."""
    config = model.get_config()
    config["encoder"]["config"]["dtype"] = policy
    clone = model.__class__.from_config(config)
    clone.set_weights(model.get_weights())
    return clone


def _policy(precision: str):
    return None if precision == "float32" else keras.DTypePolicy(precision)


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ArgumentError(f"precision must be one of {', '.join(PRECISIONS)}, got "
                            f"{precision!r}.", field="precision")
    return precision


def check_name(name: str) -> str:
    """A model name usable as TF Serving's model directory (not a version number)."""
    if not _NAME_PATTERN.fullmatch(name or "") or name.isdigit():
        raise ArgumentError(f"name {name!r} must be letters, digits, '_', '.' or '-' (not "
                            "only digits: those are versions).", field="name")
    return name


def _seq_length(seq: int, config: BertConfig, explicit: bool) -> int:
    if seq < 3:
        raise ArgumentError(f"max_seq_length must be >= 3, got {seq}.", field="max_seq_length")
    if seq > config.max_position_embeddings:
        if explicit:
            raise ArgumentError(f"max_seq_length {seq} exceeds the model's "
                                f"max_position_embeddings {config.max_position_embeddings}.",
                                field="max_seq_length")
        seq = config.max_position_embeddings
    return seq


# --- the exported objects -----------------------------------------------------------------

def _id_specs():
    return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}


def _text_specs(pair: bool):
    specs = {"text": tf.TensorSpec([None], tf.string, name="text")}
    if pair:
        specs["text_pair"] = tf.TensorSpec([None], tf.string, name="text_pair")
    return specs


class _ServingModule(tf.__internal__.tracking.AutoTrackable):
    """The exported object: the model's variables, the tokenizer and the signatures."""

    def __init__(self, source: ExportSource, jit_compile: bool = False, text: bool = True):
        # The model and tokenizer are reached through `_source` (not tracked): the saved
        # object graph holds the underlying tf.Variables that the functions capture, as
        # Keras' own export does. Tracking the Keras model instead gives a SavedModel
        # that loads in TF2 but whose variables a session-based loader (TF Serving,
        # saved_model_cli run) cannot find.
        self._source = source
        model = source.model
        self.variables = [v.value for v in model.variables]
        self.trainable_variables = [v.value for v in model.trainable_variables]
        self.vocab_file = tf.saved_model.Asset(source.vocab_file)
        config = source.config
        self._vocab_size = config.vocab_size
        self._type_vocab_size = config.type_vocab_size
        self._max_positions = config.max_position_embeddings
        names = source.label_names
        self._label_names = None if names is None else tf.constant(list(names))
        self.forward = tf.function(self._forward, jit_compile=jit_compile,
                                   input_signature=[_id_specs()])
        self.serve_ids = tf.function(self._serve_ids, input_signature=[_id_specs()])
        if text:  # without it the graph has no tensorflow-text ops
            self.serve_text = tf.function(self._serve_text,
                                          input_signature=[_text_specs(source.pair)])

    # The model, in inference mode, with float32 outputs.
    def _forward(self, inputs):
        out = self._source.model(inputs, training=False)
        kind = self._source.kind
        if kind == "encoder":
            return {"pooled_output": tf.cast(out["pooled_output"], tf.float32),
                    "sequence_output": tf.cast(out["sequence_output"], tf.float32),
                    "encoder_outputs": tf.cast(tf.stack(out["encoder_outputs"], axis=1),
                                               tf.float32)}
        if kind == "classifier":
            logits = tf.cast(out, tf.float32)
            return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1)}
        if kind == "regression":
            return {"score": tf.cast(out, tf.float32)[:, 0]}
        if kind == "span_labeler":
            return {"start_logits": tf.cast(out["start_logits"], tf.float32),
                    "end_logits": tf.cast(out["end_logits"], tf.float32)}
        return {"logits": tf.cast(out, tf.float32)}

    def _outputs(self, inputs):
        out = dict(self.forward(inputs))
        if self._source.kind == "classifier":
            out["label"] = tf.gather(self._label_names, tf.argmax(out["logits"], axis=-1))
        elif self._source.kind == "tagger":
            labels = tf.gather(self._label_names, tf.argmax(out["logits"], axis=-1))
            out["labels"] = tf.where(inputs["input_mask"] > 0, labels, "")
        return out

    def _check_ids(self, inputs):
        ids, mask, types = (inputs[name] for name in INPUT_NAMES)
        shape = tf.shape(ids)
        checks = [
            tf.debugging.assert_equal(tf.shape(mask), shape, message=(
                "input_mask must have the shape of input_word_ids")),
            tf.debugging.assert_equal(tf.shape(types), shape, message=(
                "input_type_ids must have the shape of input_word_ids")),
            tf.debugging.assert_less_equal(shape[1], self._max_positions, message=(
                f"sequences are longer than the model's {self._max_positions} positions")),
            tf.debugging.assert_non_negative(ids, message="input_word_ids must be >= 0"),
            tf.debugging.assert_less(ids, self._vocab_size, message=(
                f"input_word_ids must be < the vocabulary size {self._vocab_size}")),
            tf.debugging.assert_non_negative(types, message="input_type_ids must be >= 0"),
            tf.debugging.assert_less(types, self._type_vocab_size, message=(
                f"input_type_ids must be < type_vocab_size {self._type_vocab_size}")),
            tf.debugging.assert_equal(tf.reduce_all((mask == 0) | (mask == 1)), True,
                                      message="input_mask must hold only 0 and 1"),
        ]
        with tf.control_dependencies(checks):
            return {name: tf.identity(inputs[name]) for name in INPUT_NAMES}

    def _serve_ids(self, inputs):
        return self._outputs(self._check_ids(inputs))

    def _pack(self, segments, truncation="longest_first"):
        tok = self._source.tokenizer
        packed = pack_inputs(segments, self._source.max_seq_length, cls_id=tok.cls_id,
                             sep_id=tok.sep_id, pad_id=tok.pad_id, truncation=truncation)
        # Cut the padding to the batch's longest input (attention masks it anyway).
        longest = tf.maximum(tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1)), 1)
        return {k: v[:, :longest] for k, v in packed.items()}

    def _serve_text(self, inputs):
        source = self._source
        if source.kind == "span_labeler":
            return self._serve_question(inputs["text"], inputs["text_pair"])
        tokenizer = source.tokenizer
        segments = [tokenizer.tokenize(inputs["text"])]
        if source.pair:
            segments.append(tokenizer.tokenize(inputs["text_pair"]))
        packed = self._pack(segments)
        out = self._outputs(packed)
        if source.kind == "encoder":
            out["input_mask"] = packed["input_mask"]
        return out

    def _serve_question(self, question, passage):
        """SQuAD-style: [CLS] question [SEP] passage [SEP] (the question cut to
        max_query_length, the passage to what is left), then the best span of at most
        max_answer_length tokens inside the passage, as the passage's text."""
        source = self._source
        tokenizer = source.tokenizer
        q = tokenizer.tokenize(question)[:, :source.max_query_length]
        p, starts, ends = tokenizer.tokenize_with_offsets(passage, unit="byte")
        packed = self._pack([q, p], truncation="waterfall")
        out = self._outputs(packed)
        start_logits, end_logits = out["start_logits"], out["end_logits"]
        mask, types = packed["input_mask"], packed["input_type_ids"]
        seq = tf.shape(mask)[1]
        passage_len = tf.reduce_sum(types * mask, axis=1) - 1  # without the last [SEP]
        first = tf.reduce_sum(mask, axis=1) - passage_len - 1  # position of token 0
        positions = tf.range(seq)[None, :]
        inside = (positions >= first[:, None]) & (positions < (first + passage_len)[:, None])
        i = tf.range(seq)[:, None]
        j = tf.range(seq)[None, :]
        span_ok = (j >= i) & (j - i < source.max_answer_length)
        valid = inside[:, :, None] & inside[:, None, :] & span_ok[None]
        scores = start_logits[:, :, None] + end_logits[:, None, :]
        neg = tf.fill(tf.shape(scores), tf.constant(float("-inf")))
        flat = tf.reshape(tf.where(valid, scores, neg), [tf.shape(mask)[0], -1])
        best = tf.argmax(flat, axis=1, output_type=tf.int32)
        best_score = tf.reduce_max(flat, axis=1)
        has_span = tf.reduce_any(tf.reshape(valid, [tf.shape(mask)[0], -1]), axis=1)
        start_token = tf.maximum(best // seq - first, 0)
        end_token = tf.maximum(best % seq - first, 0)
        starts = starts.to_tensor(default_value=0)
        ends = ends.to_tensor(default_value=0)
        has_span &= tf.shape(starts, out_type=tf.int32)[1] > 0
        start_byte = tf.gather(starts, start_token[:, None], batch_dims=1)[:, 0]
        end_byte = tf.gather(ends, end_token[:, None], batch_dims=1)[:, 0]
        answer = tf.strings.substr(passage, tf.cast(start_byte, tf.int32),
                                   tf.cast(end_byte - start_byte, tf.int32), unit="BYTE")
        keep = has_span
        if source.null_score_diff_threshold is not None:
            null_score = start_logits[:, 0] + end_logits[:, 0]
            keep &= ~(null_score - best_score > source.null_score_diff_threshold)
        out["answer"] = tf.where(keep, answer, "")
        return out


class _HubEncoder(_ServingModule):
    """An encoder export that is also a TF Hub-style reusable SavedModel."""

    def __init__(self, source: ExportSource, jit_compile: bool = False, text: bool = True):
        super().__init__(source, jit_compile, text)
        self.__call__ = tf.function(self._hub_call)
        for training in (False, True):
            self.__call__.get_concrete_function(_id_specs(), training=training)
        # hub.KerasLayer also reads `variables` and `trainable_variables` (set above).
        self.regularization_losses = []

    def _hub_call(self, inputs, training=False):
        out = self._source.model(inputs, training=training)
        return {"pooled_output": tf.cast(out["pooled_output"], tf.float32),
                "sequence_output": tf.cast(out["sequence_output"], tf.float32),
                "encoder_outputs": [tf.cast(x, tf.float32) for x in out["encoder_outputs"]]}


class _Preprocessor(tf.Module):
    """TF Hub BERT preprocessor style: `tokenize`, `bert_pack_inputs` and `__call__`."""

    def __init__(self, tokenizer: BertTokenizer, vocab_file: str, seq_length: int):
        super().__init__(name="keras_bert_preprocessor")
        self._tokenizer = tokenizer  # constants only; nothing to track
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self._seq_length = seq_length
        self.tokenize = tf.function(self._tokenize, input_signature=[
            tf.TensorSpec([None], tf.string)])
        self.bert_pack_inputs = _Packer(tokenizer)
        self.__call__ = tf.function(self._call, input_signature=[
            tf.TensorSpec([None], tf.string)])

    def _tokenize(self, text):
        return tf.cast(self._tokenizer.tokenize(text), tf.int32)

    def _call(self, text):
        return self.bert_pack_inputs.__call__([self._tokenize(text)],
                                              seq_length=self._seq_length)


class _Packer(tf.Module):
    def __init__(self, tokenizer: BertTokenizer):
        super().__init__(name="bert_pack_inputs")
        self._ids = (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
        self.__call__ = tf.function(self._pack)
        ragged = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1)
        for count in (1, 2):
            self.__call__.get_concrete_function([ragged] * count,
                                                tf.TensorSpec([], tf.int32))

    def _pack(self, inputs, seq_length=DEFAULT_SEQ_LENGTH):
        cls_id, sep_id, pad_id = self._ids
        segments = [tf.cast(s, tf.int64) for s in inputs]
        budget = tf.cast(seq_length, tf.int64) - len(segments) - 1
        trimmed = truncate_segments(segments, budget)
        ids, type_ids = combine_segments(trimmed, start_of_sequence_id=cls_id,
                                         end_of_segment_id=sep_id)
        word_ids, mask = pad_model_inputs(ids, max_seq_length=seq_length, pad_value=pad_id)
        type_ids, _ = pad_model_inputs(type_ids, max_seq_length=seq_length)
        return {"input_word_ids": tf.cast(word_ids, tf.int32),
                "input_mask": tf.cast(mask, tf.int32),
                "input_type_ids": tf.cast(type_ids, tf.int32)}


# --- writing -------------------------------------------------------------------------------

def next_version(model_dir: str) -> int:
    """1 + the highest numeric version under `model_dir` (1 if none)."""
    versions = [int(n) for n in (os.listdir(model_dir) if os.path.isdir(model_dir) else [])
                if n.isdigit()]
    return max(versions, default=0) + 1


def model_card(source: ExportSource, precision: str, signatures: dict, jit_compile: bool,
               version: int, name: str, text: bool = True) -> dict:
    """The `assets.extra/keras_bert.json` record of an export."""
    try:
        version_of_package = importlib.metadata.version("keras_bert")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        version_of_package = None
    return {
        "name": name, "version": version, "kind": source.kind, "task": source.task,
        "source_checkpoint": os.path.abspath(source.source) if source.source else None,
        "config": source.config.to_dict(),
        "vocab_size": source.tokenizer.vocab_size,
        "vocab_sha256": io.file_sha256(source.vocab_file),
        "lower_case": source.tokenizer.lower_case,
        "max_seq_length": source.max_seq_length,
        "label_names": None if source.label_names is None else list(source.label_names),
        "text_inputs": (["text", "text_pair"] if source.pair else ["text"]) if text else [],
        "precision": precision, "xla": jit_compile,
        "signatures": signatures,
        "export_time": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "keras_bert_version": version_of_package, "tensorflow_version": tf.__version__,
    }


def _describe(fn) -> dict:
    def spec(s):
        return {"dtype": s.dtype.name, "shape": [None if d is None else int(d)
                                                 for d in s.shape.as_list()]}

    args, kwargs = fn.structured_input_signature
    inputs = kwargs or args[0]  # the signature's one dict argument
    return {"inputs": {k: spec(v) for k, v in sorted(inputs.items())},
            "outputs": {k: spec(v) for k, v in sorted(fn.structured_outputs.items())}}


def warmup_requests(source: ExportSource, model_name: str, text: bool = True) -> list:
    """TF Serving warmup records (`PredictionLog`s) for each signature at a few shapes."""
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

    for batch, seq in ((1, 16), (8, 64), (1, source.max_seq_length)):
        seq = min(seq, source.max_seq_length)
        ids = np.full((batch, seq), word, np.int32)
        ids[:, 0], ids[:, -1] = tok.cls_id, tok.sep_id
        add("serving_default", {"input_word_ids": ids,
                                "input_mask": np.ones((batch, seq), np.int32),
                                "input_type_ids": np.zeros((batch, seq), np.int32)})
    token = tok.vocabulary[word]
    for batch, words in ((1, 8), (8, 40), (1, source.max_seq_length)) if text else ():
        text = np.array([" ".join([token] * words)] * batch, dtype=object)
        inputs = {"text": text}
        if source.pair:
            inputs["text_pair"] = text
        add("serve_text", inputs)
    return logs


def export_saved_model(source: ExportSource, output_dir: str | os.PathLike, name: str,
                       precision: str = "float32", jit_compile: bool = False,
                       warmup: bool = True, text: bool = True) -> tuple[str, dict]:
    """Writes `source` to `output_dir/name/<next version>/`, atomically.

    Args:
        source: from `load_export_source` (its model at `precision` already).
        output_dir: the TF Serving model base directory's parent (e.g. saved_models).
        name: the model name (directory under `output_dir`).
        precision: recorded in the model card ("float32" or "mixed_bfloat16").
        jit_compile: compile the model part of every signature with XLA.
        warmup: write `assets.extra/tf_serving_warmup_requests` (needs
            `tensorflow-serving-api`).
        text: add the `serve_text` signature. Without it the SavedModel has no
            tensorflow-text ops, for model servers built without them (the encoder's
            preprocessor SavedModel is written either way).

    Returns:
        (the version directory, the model card).
    """
    check_name(name)
    check_precision(precision)
    model_dir = os.path.join(os.fspath(output_dir), name)
    io.check_writable(model_dir, kind="directory", what="output_dir")
    if warmup:
        check_serving_api()
    module = (_HubEncoder if source.kind == "encoder" else _ServingModule)(
        source, jit_compile, text)
    signatures = {"serving_default": module.serve_ids.get_concrete_function()}
    if text:
        signatures["serve_text"] = module.serve_text.get_concrete_function()
    version = next_version(model_dir)
    card = model_card(source, precision, {k: _describe(v) for k, v in signatures.items()},
                      jit_compile, version, name, text)

    def write(directory):
        tf.saved_model.save(module, directory, signatures=signatures)
        extra = os.path.join(directory, "assets.extra")
        os.makedirs(extra, exist_ok=True)
        io.write_json(os.path.join(extra, MODEL_CARD), card)
        if warmup:
            with tf.io.TFRecordWriter(os.path.join(extra, WARMUP_FILE)) as writer:
                for log in warmup_requests(source, name, text):
                    writer.write(log.SerializeToString())
        if source.kind == "encoder":
            tf.saved_model.save(
                _Preprocessor(source.tokenizer, source.vocab_file, source.max_seq_length),
                os.path.join(directory, PREPROCESSOR_DIR))

    target = os.path.join(model_dir, str(version))
    io.atomic_directory(target, write)
    return target, card


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
