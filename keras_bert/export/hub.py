"""The TF Hub pair: an encoder export that is a reusable SavedModel, and its preprocessor.

`HubEncoder`'s `__call__` takes the id dict (with `training`) and returns the encoder's
dict with `encoder_outputs` as a list, and `variables` / `trainable_variables` are
exposed, so `hub.KerasLayer(path, trainable=True)` fine-tunes it. `Preprocessor` is the
matching preprocessing SavedModel (written to `VERSION/preprocessor/`) with `tokenize`
(strings -> ragged ids [batch, (tokens)]) and `bert_pack_inputs` (a list of ragged
segments, `seq_length` -> the id dict), like the public TF Hub BERT preprocessors.
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow_text import combine_segments, pad_model_inputs

from keras_bert.export.signatures import ServingModule, id_specs
from keras_bert.export.source import DEFAULT_SEQ_LENGTH, ExportSource
from keras_bert.text.packing import truncate_segments
from keras_bert.text.tokenizer import BertTokenizer

PREPROCESSOR_DIR = "preprocessor"


class HubEncoder(ServingModule):
    """An encoder export that is also a TF Hub-style reusable SavedModel."""

    def __init__(self, source: ExportSource, jit_compile: bool = False, text: bool = True):
        super().__init__(source, jit_compile, text)
        self.__call__ = tf.function(self._hub_call)
        for training in (False, True):
            self.__call__.get_concrete_function(id_specs(), training=training)
        # hub.KerasLayer also reads `variables` and `trainable_variables` (set above).
        self.regularization_losses = []

    def _hub_call(self, inputs, training=False):
        out = self._source.model(inputs, training=training)
        return {"pooled_output": tf.cast(out["pooled_output"], tf.float32),
                "sequence_output": tf.cast(out["sequence_output"], tf.float32),
                "encoder_outputs": [tf.cast(x, tf.float32) for x in out["encoder_outputs"]]}


class Preprocessor(tf.Module):
    """TF Hub BERT preprocessor style: `tokenize`, `bert_pack_inputs` and `__call__`."""

    def __init__(self, tokenizer: BertTokenizer, vocab_file: str, seq_length: int):
        super().__init__(name="keras_bert_preprocessor")
        self._tokenizer = tokenizer  # constants, or the tables tracked below
        if tokenizer.tables is not None:  # a core-ops tokenizer's lookup table
            self.tokenizer_tables = tokenizer.tables
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
