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

Ids of a model with choices (`ModelServing.has_choices`) are [batch, choices, seq] (any
number of choices, each choice's row checked like a sequence above).

The outputs, and `serve_text` where it does more than tokenize, pack and run, are the
model kind's: `ServingModule` asks its `ExportSource.serving`
(`keras_bert.export.serving.ModelServing`, whose module docstring lists every kind's
outputs) and names no kind itself.
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert.export.source import ExportSource
from keras_bert.model.encoder import INPUT_NAMES
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
        self._choices = source.serving.has_choices
        self.forward = tf.function(self._forward, jit_compile=jit_compile,
                                   input_signature=[id_specs(self._choices)])
        self.serve_ids = tf.function(self._serve_ids,
                                     input_signature=[id_specs(self._choices)])
        if text:  # without it the graph has no tensorflow-text ops
            self.serve_text = tf.function(self._serve_text,
                                          input_signature=[_text_specs(source.text_inputs)])

    @property
    def source(self) -> ExportSource:
        """What the module exports (not tracked: see `__init__`)."""
        return self._source

    @property
    def serving(self):
        """What the model's kind serves (`ExportSource.serving`)."""
        return self._source.serving

    # The model, in inference mode, with float32 outputs.
    def _forward(self, inputs):
        return self.serving.forward(self._source.model, inputs)

    def model_outputs(self, inputs):
        """The forward pass's outputs and those named from them (labels)."""
        return self.serving.named_outputs(dict(self.forward(inputs)), inputs)

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
        return self.serving.serve_text(self, inputs)
