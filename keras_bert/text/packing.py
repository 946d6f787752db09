"""Input packing: token ids of one or two segments -> the encoder's input dict.

BERT's inputs are `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, with segment (type) ids 0
up to and including the first `[SEP]` and 1 after it, an input mask of 1 for real
tokens, and padding to a fixed length. Too-long inputs are cut the way
google-research/bert's `_truncate_seq_pair` does (drop the last token of the longer
segment until the pair fits, the second on ties), or with a budget split across the
segments (tensorflow-text's round-robin and waterfall trimmers).
"""

from __future__ import annotations

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.core.errors import ArgumentError
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.vocab import CLS_TOKEN, PAD_TOKEN, SEP_TOKEN

TRUNCATION_METHODS = ("longest_first", "round_robin", "waterfall")


def truncate_segments(segments, max_length, method: str = "longest_first"):
    """Cuts segments of token ids so that together they have at most `max_length`.

    Args:
        segments: a list of int `tf.RaggedTensor`s [batch, (tokens)].
        max_length: the total budget per example (a Python int or a scalar tensor).
        method: "longest_first": google-research/bert's rule: drop the last token of
            the longer segment until the total fits, the second one on ties (one or two
            segments). "round_robin": give the segments one token each in turn until the
            budget is spent (tensorflow-text `RoundRobinTrimmer`). "waterfall": fill
            the first segment, then the next with what is left (`WaterfallTrimmer`).

    Returns:
        the list of truncated segments.

    Example:

    >>> a = tf.ragged.constant([[1, 2, 3, 4, 5]])
    >>> b = tf.ragged.constant([[6, 7]])
    >>> [s.to_list() for s in truncate_segments([a, b], 5)]
    [[[1, 2, 3]], [[6, 7]]]
    """
    segments = list(segments)
    if method not in TRUNCATION_METHODS:
        raise ValueError(f"Unknown truncation method {method!r}; choose one of "
                         f"{TRUNCATION_METHODS}.")
    if not 1 <= len(segments) <= (2 if method == "longest_first" else len(segments)):
        raise ValueError(f"truncation {method!r} takes one or two segments, got "
                         f"{len(segments)}; use 'round_robin' or 'waterfall' for more.")
    if method == "round_robin":
        return tf_text.RoundRobinTrimmer(max_length).trim(segments)
    if method == "waterfall":
        return tf_text.WaterfallTrimmer(max_length).trim(segments)
    max_length = tf.cast(max_length, tf.int64)
    if len(segments) == 1:
        return [segments[0][:, :max_length]]
    a, b = segments
    len_a, len_b = a.row_lengths(), b.row_lengths()
    # Closed form of the pop-from-the-longer loop: the longer side shrinks to meet the
    # shorter; once equal they shrink alternately, b first, so a keeps ceil(max/2).
    keep_a = tf.minimum(len_a, tf.maximum(max_length - len_b, (max_length + 1) // 2))
    keep_b = tf.minimum(len_b, max_length - keep_a)
    return [_keep_first(a, keep_a), _keep_first(b, keep_b)]


def _keep_first(segment, lengths):
    positions = tf.ragged.range(segment.row_lengths())
    return tf.ragged.boolean_mask(segment, positions < lengths[:, None])


def pack_inputs(segments, seq_length: int, *, cls_id: int, sep_id: int, pad_id: int = 0,
                truncation: str = "longest_first") -> dict:
    """Packs segments into `[CLS] A [SEP] (B [SEP])`, padded to `seq_length`.

    Args:
        segments: a list of one or two int `tf.RaggedTensor`s [batch, (tokens)] (word
            pieces without special tokens, e.g. from `BertTokenizer.tokenize`).
        seq_length: the fixed output length, special tokens included.
        cls_id, sep_id, pad_id: ids of `[CLS]`, `[SEP]` and `[PAD]`.
        truncation: how to cut too-long inputs; see `truncate_segments`.

    Returns:
        `{"input_word_ids", "input_mask", "input_type_ids"}`, int32 [batch, seq_length].

    Example:

    >>> packed = pack_inputs([tf.ragged.constant([[7, 8]]), tf.ragged.constant([[9]])],
    ...                      seq_length=8, cls_id=2, sep_id=3)
    >>> packed["input_word_ids"].numpy().tolist()
    [[2, 7, 8, 3, 9, 3, 0, 0]]
    >>> packed["input_type_ids"].numpy().tolist()
    [[0, 0, 0, 0, 1, 1, 0, 0]]
    """
    segments = list(segments)
    if not segments:
        raise ValueError("pack_inputs needs at least one segment.")
    budget = seq_length - len(segments) - 1  # [CLS] and one [SEP] per segment
    if budget < 0:
        raise ValueError(f"seq_length={seq_length} leaves no room for the "
                         f"{len(segments) + 1} special tokens of {len(segments)} segment(s).")
    segments = [tf.cast(s, tf.int64) for s in segments]
    trimmed = truncate_segments(segments, budget, truncation)
    ids, type_ids = tf_text.combine_segments(
        trimmed, start_of_sequence_id=cls_id, end_of_segment_id=sep_id)
    word_ids, mask = tf_text.pad_model_inputs(ids, max_seq_length=seq_length,
                                              pad_value=pad_id)
    type_ids, _ = tf_text.pad_model_inputs(type_ids, max_seq_length=seq_length)
    return {"input_word_ids": tf.cast(word_ids, tf.int32),
            "input_mask": tf.cast(mask, tf.int32),
            "input_type_ids": tf.cast(type_ids, tf.int32)}


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(keras.layers.Layer):
    """Strings (or pairs of strings) -> the encoder's input dict, as a Keras layer.

    Tokenizes with a `BertTokenizer`, truncates, adds `[CLS]`/`[SEP]`, and pads to
    `seq_length`. Use it in `tf.data` (`dataset.map(preprocessor)`) for `model.fit`,
    or as the first layer of a model with a string input. It runs TF ops, so it needs
    the TensorFlow backend.

    Saving: `get_config` embeds the tokenizer's vocabulary (about 230 KB of JSON for a
    30k vocab), so a `.keras` file that contains the layer is self-contained and loads
    without the original vocab.txt.

    Args:
        tokenizer: a `BertTokenizer` (or its `get_config()` dict). Its vocabulary must
            contain `[CLS]`, `[SEP]` and `[PAD]`.
        seq_length: the fixed output length, special tokens included.
        truncation: "longest_first" (google-research/bert), "round_robin" or
            "waterfall"; see `truncate_segments`.

    Call args:
        inputs: a string tensor [batch] (or a scalar string), or a tuple/list of one or
            two such tensors for sentence pairs; a Python list of strings is a batch
            (keras-hub's habit), and a tuple of two such lists a batch of pairs.

    Returns:
        `{"input_word_ids", "input_mask", "input_type_ids"}`: int32 [batch, seq_length]
        ([seq_length] for scalar inputs).

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!"]
    >>> preprocessor = BertPreprocessor(BertTokenizer(vocab), seq_length=8)
    >>> out = preprocessor((tf.constant(["Hello!"]), tf.constant(["world"])))
    >>> out["input_word_ids"].numpy().tolist()
    [[2, 5, 7, 3, 6, 3, 0, 0]]
    >>> out["input_mask"].numpy().tolist()
    [[1, 1, 1, 1, 1, 1, 0, 0]]
    """

    def __init__(self, tokenizer: BertTokenizer | dict, seq_length: int = 128,
                 truncation: str = "longest_first", **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        if isinstance(tokenizer, dict):
            tokenizer = BertTokenizer.from_config(tokenizer)
        if not isinstance(tokenizer, BertTokenizer):
            raise TypeError("BertPreprocessor needs a keras_bert.BertTokenizer, got "
                            f"{type(tokenizer).__name__}.")
        if not isinstance(seq_length, int) or seq_length < 3:
            raise ValueError("seq_length must be an integer >= 3 ([CLS] A [SEP] B [SEP] "
                             f"needs 3 special tokens), got {seq_length!r}.")
        if truncation not in TRUNCATION_METHODS:
            raise ValueError(f"Unknown truncation {truncation!r}; choose one of "
                             f"{TRUNCATION_METHODS}.")
        missing = [t for t in (CLS_TOKEN, SEP_TOKEN, PAD_TOKEN)
                   if t not in tokenizer.vocabulary]
        if missing:
            raise ValueError(f"The tokenizer's vocabulary lacks {missing}, which packing "
                             "needs; use a Google vocab.txt or one from learn_vocab.")
        self.tokenizer = tokenizer
        self.seq_length = seq_length
        self.truncation = truncation
        # String inputs must reach `call` untouched (no conversion to float tensors).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True

    def __call__(self, inputs, *args, **kwargs):
        # Python lists become tensors here, so that a mistake in them is named plainly.
        return super().__call__(_python_batches(inputs), *args, **kwargs)

    def call(self, inputs):
        if isinstance(inputs, dict):
            raise TypeError("BertPreprocessor takes a string tensor or a tuple of one or "
                            "two string tensors, not a dict.")
        segments = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
        if not 1 <= len(segments) <= 2:
            raise ValueError(f"BertPreprocessor takes one or two segments, got "
                             f"{len(segments)}.")
        segments = [tf.convert_to_tensor(s) for s in segments]
        ranks = {s.shape.rank for s in segments}
        if len(ranks) != 1 or ranks - {0, 1}:
            raise ValueError("BertPreprocessor inputs must all be scalars or all be "
                             f"vectors [batch] of strings; got shapes "
                             f"{[s.shape for s in segments]}.")
        scalar = ranks == {0}
        if scalar:
            segments = [s[None] for s in segments]
        packed = pack_inputs(
            [self.tokenizer.tokenize(s) for s in segments], self.seq_length,
            cls_id=self.tokenizer.cls_id, sep_id=self.tokenizer.sep_id,
            pad_id=self.tokenizer.pad_id, truncation=self.truncation)
        if scalar:
            packed = {k: v[0] for k, v in packed.items()}
        return packed

    def get_config(self):
        return {**super().get_config(), "tokenizer": self.tokenizer.get_config(),
                "seq_length": self.seq_length, "truncation": self.truncation}


def _is_python_texts(value) -> bool:
    """A Python list (or tuple) of strings (or other Python values, not tensors): a
    batch of texts, as keras-hub's preprocessors take it."""
    return isinstance(value, (list, tuple)) and (not value or not any(
        tf.is_tensor(v) or hasattr(v, "dtype") or isinstance(v, (list, tuple))
        for v in value))


def _python_batch(texts, what: str):
    for i, text in enumerate(texts):
        if not isinstance(text, (str, bytes)):
            raise ArgumentError(f"BertPreprocessor: {what}[{i}] is {text!r} "
                                f"({type(text).__name__}), not a string.", field="inputs")
    if not texts:
        raise ArgumentError(f"BertPreprocessor: {what} is empty; give at least one text.",
                            field="inputs")
    return tf.constant(list(texts), dtype=tf.string)


def _python_batches(inputs):
    """`inputs` with Python lists of strings as string tensors [batch]: a list of
    strings is one batch, a tuple of two lists a batch of pairs (of equal length)."""
    if isinstance(inputs, list) and _is_python_texts(inputs):
        return _python_batch(inputs, "inputs")
    if (isinstance(inputs, tuple) and inputs
            and all(isinstance(v, (list, tuple)) for v in inputs)
            and all(_is_python_texts(v) for v in inputs)):
        if len({len(v) for v in inputs}) > 1:
            raise ArgumentError(f"BertPreprocessor: pairs need as many second texts as "
                                f"first ones; got {len(inputs[0])} texts but "
                                f"{len(inputs[1])} text pairs.", field="inputs")
        return tuple(_python_batch(v, f"inputs[{i}]") for i, v in enumerate(inputs))
    return inputs
