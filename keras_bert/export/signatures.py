"""The SavedModel's signatures and the object that holds them.

`ServingModule` wraps an `ExportSource`'s model with the signatures TF Serving clients
call:

* `serving_default`: token ids with the TF Hub BERT names `input_word_ids`,
  `input_mask`, `input_type_ids` (int32 [batch, seq], any batch and seq up to the
  model's `max_position_embeddings`). Ids outside the vocabulary, type ids outside
  `type_vocab_size`, masks other than 0/1 and inputs of different shapes are rejected
  with INVALID_ARGUMENT (never wrapped or clipped).
* `serve_text`: raw UTF-8 strings `text` (and `text_pair` for pair tasks) [batch],
  tokenized in-graph exactly like `keras_bert.BertTokenizer` (tensorflow-text ops, no
  `py_function`), packed and truncated as in fine-tuning to `max_seq_length`.
  Ids of sequence length 0 and rows whose `input_mask` is all 0 are rejected too, and
  so is text of another rank than 1 (the signature declares any shape and checks it,
  naming the input).
  Sequence outputs are cut to the longest input of the batch.

Outputs: encoder `pooled_output` [batch, H], `sequence_output` [batch, seq, H],
`encoder_outputs` [batch, L, seq, H]; classifier `logits`, `probabilities`, `label`
(the label names stored in the model); regression `score`; span labeler
`start_logits`, `end_logits` and, from `serve_text` (question as `text`, passage as
`text_pair`), `answer`, `answer_start`, `answer_end`, `score` and `has_answer` over
passages of any length (`keras_bert.tasks.squad.serving`); tagger `logits` and
per-token `labels` ("" on padding) from `serving_default`, and from `serve_text` a label
per whitespace word with the words and their character offsets
(`keras_bert.tasks.tagging.serving`).

Multiple choice (SWAG) takes its ids as [batch, choices, seq] (any number of choices,
each choice's row checked like a sequence above) and gives `logits` and
`probabilities` [batch, choices] and `label`, the int32 index of the best choice; its
`serve_text` is described in `keras_bert.tasks.multiple_choice.serving`.
"""

from __future__ import annotations

import importlib

import tensorflow as tf

from keras_bert.export.source import ExportSource
from keras_bert.model.encoder import INPUT_NAMES
from keras_bert.tasks.serving import string_batches
from keras_bert.text.packing import pack_inputs


def id_specs(choices: bool = False):
    """The id inputs' specs: int32 [batch, seq] under the TF Hub BERT names, or
    [batch, choices, seq] with `choices` (multiple choice)."""
    shape = [None, None, None] if choices else [None, None]
    return {name: tf.TensorSpec(shape, tf.int32, name=name) for name in INPUT_NAMES}


def _text_specs(names):
    # Any shape is accepted and checked in the graph: a signature declared [None] would
    # let a scalar or a 2-D request through to ops that fail with internal errors (the
    # signature wrapper does not check ranks, and the graph is optimized for rank 1).
    return {name: tf.TensorSpec(None, tf.string, name=name) for name in names}


# The families whose `serve_text` is more than "tokenize, pack, run": kind -> (module,
# function(serving_module, inputs) -> outputs).
_TEXT_SERVERS = {
    "span_labeler": ("keras_bert.tasks.squad.serving", "serve_questions"),
    "tagger": ("keras_bert.tasks.tagging.serving", "serve_words"),
    "multiple_choice": ("keras_bert.tasks.multiple_choice.serving", "serve_choices"),
}


class ServingModule(tf.__internal__.tracking.AutoTrackable):
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
        if source.tokenizer.tables is not None:  # a core-ops tokenizer's lookup table
            self.tokenizer_tables = source.tokenizer.tables
        config = source.config
        self._vocab_size = config.vocab_size
        self._type_vocab_size = config.type_vocab_size
        self._max_positions = config.max_position_embeddings
        names = source.label_names
        self._label_names = None if names is None else tf.constant(list(names))
        self._choices = source.kind == "multiple_choice"
        self.forward = tf.function(self._forward, jit_compile=jit_compile,
                                   input_signature=[id_specs(self._choices)])
        self.serve_ids = tf.function(self._serve_ids,
                                     input_signature=[id_specs(self._choices)])
        # Looked up here, not while tracing (AutoGraph would try to convert the import).
        self._text_server = None
        if source.kind in _TEXT_SERVERS:
            module_name, function = _TEXT_SERVERS[source.kind]
            self._text_server = getattr(importlib.import_module(module_name), function)
        if text:  # without it the graph has no tensorflow-text ops
            self.serve_text = tf.function(self._serve_text,
                                          input_signature=[_text_specs(source.text_inputs)])

    @property
    def source(self) -> ExportSource:
        """What the module exports (not tracked: see `__init__`)."""
        return self._source

    # The model, in inference mode, with float32 outputs.
    def _forward(self, inputs):
        kind = self._source.kind
        if kind == "multiple_choice":
            logits = self._choice_logits(inputs)
            return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1)}
        out = self._source.model(inputs, training=False)
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

    def _choice_logits(self, inputs):
        # BertMultipleChoice's own graph, with the choices folded into the batch here:
        # the Keras model takes only the number of choices it was built with (its
        # inputs are [batch, num_choices, seq]); its dropout is the identity at
        # inference, so the encoder and the choice head are all there is to run.
        model = self._source.model
        shape = tf.shape(inputs["input_word_ids"])
        flat = {k: tf.reshape(v, [-1, shape[-1]]) for k, v in inputs.items()}
        pooled = model.encoder(flat, training=False)["pooled_output"]
        scores = model.get_layer("choice_score")(pooled, training=False)
        return tf.reshape(tf.cast(scores, tf.float32), shape[:2])

    def model_outputs(self, inputs):
        out = dict(self.forward(inputs))
        if self._source.kind == "multiple_choice":  # endings have no names: an index
            out["label"] = tf.argmax(out["logits"], axis=-1, output_type=tf.int32)
        elif self._source.kind == "classifier":
            out["label"] = tf.gather(self._label_names, tf.argmax(out["logits"], axis=-1))
        elif self._source.kind == "tagger":
            labels = tf.gather(self._label_names, tf.argmax(out["logits"], axis=-1))
            out["labels"] = tf.where(inputs["input_mask"] > 0, labels, "")
        return out

    def _check_ids(self, inputs):
        ids, mask, types = (inputs[name] for name in INPUT_NAMES)
        shape = tf.shape(ids)
        seq = shape[-1]  # [batch, seq], or [batch, choices, seq] (multiple choice)
        row = "every choice of input_mask" if self._choices else "every row of input_mask"
        checks = [
            tf.debugging.assert_equal(tf.shape(mask), shape, message=(
                "input_mask must have the shape of input_word_ids")),
            tf.debugging.assert_equal(tf.shape(types), shape, message=(
                "input_type_ids must have the shape of input_word_ids")),
            tf.debugging.assert_less_equal(seq, self._max_positions, message=(
                f"sequences are longer than the model's {self._max_positions} positions")),
            tf.debugging.assert_non_negative(ids, message="input_word_ids must be >= 0"),
            tf.debugging.assert_less(ids, self._vocab_size, message=(
                f"input_word_ids must be < the vocabulary size {self._vocab_size}")),
            tf.debugging.assert_non_negative(types, message="input_type_ids must be >= 0"),
            tf.debugging.assert_less(types, self._type_vocab_size, message=(
                f"input_type_ids must be < type_vocab_size {self._type_vocab_size}")),
            tf.debugging.assert_equal(tf.reduce_all((mask == 0) | (mask == 1)), True,
                                      message="input_mask must hold only 0 and 1"),
            tf.debugging.assert_positive(seq, message=(
                "input_word_ids has sequence length 0; send at least [CLS] and [SEP]")),
            # A row with no token to attend to has no defined output: refused.
            tf.debugging.assert_equal(tf.reduce_all(tf.reduce_max(mask, axis=-1) > 0), True,
                                      message=f"{row} needs a 1 (its [CLS] at least); a "
                                              "row of 0s marks no token"),
        ]
        if self._choices:  # the best of no choices is undefined
            checks.append(tf.debugging.assert_positive(shape[1], message=(
                "input_word_ids has 0 choices; send [batch, choices >= 1, seq]")))
        with tf.control_dependencies(checks):
            return {name: tf.identity(inputs[name]) for name in INPUT_NAMES}

    def _serve_ids(self, inputs):
        return self.model_outputs(self._check_ids(inputs))

    def pack(self, segments, truncation="longest_first"):
        tok = self._source.tokenizer
        packed = pack_inputs(segments, self._source.max_seq_length, cls_id=tok.cls_id,
                             sep_id=tok.sep_id, pad_id=tok.pad_id, truncation=truncation)
        # Cut the padding to the batch's longest input (attention masks it anyway).
        longest = tf.maximum(tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1)), 1)
        return {k: v[:, :longest] for k, v in packed.items()}

    def _serve_text(self, inputs):
        source = self._source
        if self._text_server is not None:
            return self._text_server(self, inputs)
        inputs = string_batches(inputs)
        tokenizer = source.tokenizer
        segments = [tokenizer.tokenize(inputs["text"])]
        if source.pair:
            segments.append(tokenizer.tokenize(inputs["text_pair"]))
        packed = self.pack(segments)
        out = self.model_outputs(packed)
        if source.kind == "encoder":
            out["input_mask"] = packed["input_mask"]
        return out
