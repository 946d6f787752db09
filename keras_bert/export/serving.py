"""What `keras_bert.export` asks of a model kind, and what the families' serving shares.

`ModelServing` is a model kind's answer to export (its outputs, `serve_text` in a
SavedModel and in LiteRT, model-card fields, warmup shapes); each family's folder
subclasses it in its `serving` module beside its SavedModel (`serving`) and LiteRT
(`litert_serving`) `serve_text` code, `Task.serving` gives a fine-tuned model's, and
`keras_bert.tasks.export_sources` finds a kind's class (its `KINDS`). The export stage names
no family.
The kinds (`KINDS`) and their outputs:

* encoder (`keras_bert.tasks.export_sources.EncoderServing`): `pooled_output` [batch, H], `sequence_output`
  [batch, seq, H], `encoder_outputs` [batch, L, seq, H];
* classifier (`keras_bert.tasks.glue.serving`): `logits`, `probabilities`, `label`
  (the label names stored in the model); regression: `score`;
* span labeler (`keras_bert.tasks.squad.serving`): `start_logits`, `end_logits` and,
  from `serve_text` (question as `text`, passage as `text_pair`), `answer`,
  `answer_start`, `answer_end`, `score` and `has_answer` over passages of any length;
* tagger (`keras_bert.tasks.tagging.serving`): `logits` and per-token `labels` ("" on
  padding), and from `serve_text` a label per whitespace word with the words and their
  character offsets;
* multiple choice (`keras_bert.tasks.multiple_choice.serving`): ids [batch, choices,
  seq] give `logits` and `probabilities` [batch, choices] and `label`, the int32 index
  of the best choice;
* embedding (`keras_bert.tasks.embedding.serving`): `embedding` [batch, width], a
  sentence embedder's vector (pooling, Dense and Normalize inside the model).

The checks that turn the raw text inputs into batches of strings (a bad rank or batch
size is INVALID_ARGUMENT naming the input) are here too."""

from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar

import tensorflow as tf


def string_batches(inputs: dict) -> dict:
    """The text inputs as [batch] vectors of strings; another rank, or a `text_pair`
    with another number of strings than `text`, is INVALID_ARGUMENT naming the input."""
    checks = [tf.debugging.assert_equal(tf.rank(value), 1, message=(
        f"{name} must be a 1-D batch of strings, shape [batch]"))
        for name, value in sorted(inputs.items())]
    if "text_pair" in inputs:
        checks.append(tf.debugging.assert_equal(
            tf.size(inputs["text"]), tf.size(inputs["text_pair"]),
            message="text_pair must hold one string per text"))
    with tf.control_dependencies(checks):
        return {name: tf.reshape(value, [-1]) for name, value in inputs.items()}


def choice_string_batches(inputs: dict) -> dict:
    """Multiple choice's text inputs: `text` and `text_pair` as [batch] vectors (as
    `string_batches` checks them) and `endings` as a [batch, endings] matrix with at
    least one column; another rank, batch size or no column is INVALID_ARGUMENT
    naming the input."""
    endings = inputs["endings"]
    strings = string_batches({k: v for k, v in inputs.items() if k != "endings"})
    shape = tf.shape(endings)
    checks = [tf.debugging.assert_equal(tf.rank(endings), 2, message=(
        "endings must be a 2-D batch of strings, shape [batch, endings]"))]
    with tf.control_dependencies(checks):  # the shape is read only once the rank is 2
        checks = [
            tf.debugging.assert_equal(shape[0], tf.size(strings["text"]), message=(
                "endings must hold one row of endings per text")),
            tf.debugging.assert_positive(shape[-1], message=(
                "endings must hold at least one ending per text (\"\" for none)")),
        ]
    with tf.control_dependencies(checks):
        strings["endings"] = tf.reshape(endings, [-1, shape[-1]])
    return strings


@functools.cache
def whitespace_code_points() -> tuple[int, ...]:
    """The code points Python's `str.split()` splits at (`str.isspace()`), as this
    Python's Unicode version defines them.

    Example:

    >>> [hex(c) for c in whitespace_code_points()[:6]]
    ['0x9', '0xa', '0xb', '0xc', '0xd', '0x1c']
    """
    return tuple(c for c in range(0x110000) if chr(c).isspace())


def _float32(x):
    return tf.cast(x, tf.float32)


@dataclasses.dataclass(frozen=True)
class ModelServing:
    """What export needs to know about one kind of model, asked by `keras_bert.export`
    (which names no kind itself): the outputs of its forward pass, how its string
    outputs are named, its `serve_text` in a SavedModel and in LiteRT, and its model-card
    fields. Each family's folder subclasses it; `Task.serving` gives a fine-tuned
    model's, `keras_bert.tasks.export_sources.EncoderServing` a bare encoder's.

    Attributes:
        pair: whether `serve_text` takes `text_pair` as well as `text`.
        label_names: class names in index order (classifiers, taggers), else None.

    Class attributes: `kind` (the card's name of it), `has_choices` (ids are
    [batch, choices, seq]), `hub_reusable` (a TF Hub-style encoder export).

    Example:

    >>> serving = ModelServing(pair=True)
    >>> serving.text_inputs
    ('text', 'text_pair')
    """

    kind: ClassVar[str] = ""
    has_choices: ClassVar[bool] = False
    hub_reusable: ClassVar[bool] = False
    pair: bool = False
    label_names: tuple[str, ...] | None = None

    @property
    def text_inputs(self) -> tuple[str, ...]:
        """The names of `serve_text`'s string inputs."""
        return ("text", "text_pair") if self.pair else ("text",)

    @property
    def text_ranks(self) -> dict[str, int]:
        """Each text input's rank ([batch] strings unless a subclass says more)."""
        return {name: 1 for name in self.text_inputs}

    def encoder_of(self, model):
        """The `BertEncoder` inside `model`."""
        return model.encoder

    def forward(self, model, inputs) -> dict:
        """The model's float32 outputs, by name, on the id dict `inputs`."""
        return {"logits": _float32(model(inputs, training=False))}

    def named_outputs(self, out: dict, inputs: dict) -> dict:
        """`out` with the outputs named from the logits added (with `tf.gather` only:
        the same graph serves in LiteRT, which has no string select)."""
        return out

    def text_outputs(self, module, packed: dict) -> dict:
        """`serve_text`'s outputs for the packed ids (`module`'s model outputs)."""
        return module.model_outputs(packed)

    def serve_text(self, module, inputs: dict) -> dict:
        """The SavedModel's `serve_text`: tokenize, pack, run (the families whose text
        is more than that override it)."""
        inputs = string_batches(inputs)
        tokenizer = module.source.tokenizer
        segments = [tokenizer.tokenize(inputs[name]) for name in self.text_inputs]
        return self.text_outputs(module, module.pack(segments))

    def serve_lite_text(self, module, inputs: dict) -> dict:
        """The LiteRT `serve_text`, in `keras_bert.text.litert_ops`'s ops."""
        segments = module.lite_tokenizer.tokenize(*(inputs[n] for n in self.text_inputs))
        return self.text_outputs(module, module.pack_text(segments if self.pair
                                                          else [segments]))

    def check_seq_length(self, max_seq_length: int) -> None:
        """Raises `ArgumentError` when `serve_text` cannot work at `max_seq_length`."""

    def card_fields(self) -> dict:
        """Fields of the model card beyond the common ones."""
        return {}

    def truncation(self, max_seq_length: int) -> str:
        """What `serve_text` does with a text longer than the model takes."""
        return (f"a text (or pair) longer than max_seq_length ({max_seq_length}) word "
                "pieces, [CLS] and [SEP] included, is cut as in fine-tuning (google-research/"
                "bert's longest-first rule): the model sees its beginning only")

    def warmup_choices(self, model) -> tuple[int, ...]:
        """The choices axis of warmup requests: () or (number of choices,)."""
        return ()

    def litert_limits(self, text: bool) -> dict:
        """Runtime limits of the LiteRT model beyond the common ones."""
        return {}


def label_lookup(label_names, best, keep=None):
    """The names of the `best` indices; "" where `keep` is False (gather only)."""
    names = tf.constant([*label_names, ""])
    if keep is not None:
        best = tf.where(keep, best, len(label_names))
    return tf.gather(names, best)
