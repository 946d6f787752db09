"""`serve_text` of a multiple-choice (SWAG) model.

Inputs (UTF-8 strings, checked in the graph; another rank or batch size is
INVALID_ARGUMENT naming the input):

* `text` [batch]: the context (SWAG's `sent1`, sentence A of every choice);
* `text_pair` [batch]: the start of the continuation (SWAG's `sent2`; may be "");
* `endings` [batch, E]: the candidate endings, any E >= 1 (the model's trained number,
  4 for SWAG, is what it was fitted on, but any number is scored). A blank ending (no
  word pieces: "", whitespace, zero-width characters; `keras_bert.tasks.multiple_choice.endings`
  states the rule) means "no ending here", so rows may have fewer endings than E.

Choice k of a row is packed as `[CLS] text [SEP] text_pair + " " + endings[k] [SEP]`,
exactly as `keras-bert predict --task swag` packs a SWAG row (`SwagExample.choices()`),
cut to max_seq_length by google-research/bert's longest-first rule.

Outputs:

* `logits` float32 [batch, E]: the model's score of each choice as packed (a blank
  ending is scored too, as `text_pair` alone; read `probabilities` and `label`);
* `probabilities` float32 [batch, E]: softmax over the row's non-blank endings, 0 for
  the blank ones;
* `label` int32 [batch]: the index of the best non-blank ending; -1 (with all
  probabilities 0) for a row whose endings are all blank, which never fails the request.

`keras-bert predict --task swag` answers the same label (`SwagTask.decode`).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import tensorflow as tf

from keras_bert.export.serving import ModelServing, choice_string_batches
from keras_bert.tasks.multiple_choice import litert_serving
from keras_bert.tasks.multiple_choice.endings import NO_ANSWER

NO_ENDING = NO_ANSWER  # `label` of a row whose endings are all blank


def serve_choices(module, inputs):
    """`serve_text` for `module` (a `ServingModule` of a multiple-choice model); blank
    endings follow `keras_bert.tasks.multiple_choice.endings`'s rule."""
    inputs = choice_string_batches(inputs)
    text, pair, endings = inputs["text"], inputs["text_pair"], inputs["endings"]
    batch, count = tf.shape(endings)[0], tf.shape(endings)[1]
    tokenizer = module.source.tokenizer
    # Sentence B of each choice, as SwagExample.choices() writes it.
    continuations = tf.strings.join([tf.broadcast_to(pair[:, None], tf.shape(endings)),
                                     endings], separator=" ")
    contexts = tf.gather(tokenizer.tokenize(text), tf.repeat(tf.range(batch), count))
    packed = module.pack([contexts, tokenizer.tokenize(tf.reshape(continuations, [-1]))])
    out = module.model_outputs({
        k: tf.reshape(v, tf.stack([batch, count, tf.shape(v)[1]])) for k, v in packed.items()})
    # Blank: no word pieces of its own (the task's rule, as `blank_endings`).
    present = tf.reshape(tokenizer.tokenize(tf.reshape(endings, [-1])).row_lengths() > 0,
                         [batch, count])
    logits = tf.where(present, out["logits"], tf.constant(float("-inf")))
    any_present = tf.reduce_any(present, axis=1)
    # A row without endings would softmax to NaN: its probabilities are 0 instead.
    probabilities = tf.where(present & any_present[:, None], tf.nn.softmax(logits, axis=-1),
                             0.0)
    label = tf.argmax(logits, axis=-1, output_type=tf.int32)
    out["probabilities"] = probabilities
    out["label"] = tf.where(any_present, label, NO_ENDING)
    return out


@dataclasses.dataclass(frozen=True)
class ChoiceServing(ModelServing):
    """A multiple-choice model (`BertMultipleChoice`, SWAG): ids [batch, choices, seq]
    (any number of choices) give `logits` and `probabilities` [batch, choices] and
    `label`, the index of the best choice; `serve_text` is `serve_choices`.

    Attributes:
        num_choices: the number of endings the model was trained on.
    """

    kind: ClassVar[str] = "multiple_choice"
    has_choices: ClassVar[bool] = True
    pair: bool = True
    num_choices: int | None = None

    @property
    def text_inputs(self) -> tuple[str, ...]:
        return ("text", "text_pair", "endings")

    @property
    def text_ranks(self) -> dict[str, int]:
        return {"text": 1, "text_pair": 1, "endings": 2}

    def forward(self, model, inputs) -> dict:
        # BertMultipleChoice's own graph, with the choices folded into the batch here:
        # the Keras model takes only the number of choices it was built with (its
        # inputs are [batch, num_choices, seq]); its dropout is the identity at
        # inference, so the encoder and the choice head are all there is to run.
        shape = tf.shape(inputs["input_word_ids"])
        flat = {k: tf.reshape(v, [-1, shape[-1]]) for k, v in inputs.items()}
        pooled = model.encoder(flat, training=False)["pooled_output"]
        scores = model.get_layer("choice_score")(pooled, training=False)
        logits = tf.reshape(tf.cast(scores, tf.float32), shape[:2])
        return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1)}

    def named_outputs(self, out: dict, inputs: dict) -> dict:
        # Endings have no names: the label is an index.
        return {**out, "label": tf.argmax(out["logits"], axis=-1, output_type=tf.int32)}

    def serve_text(self, module, inputs: dict) -> dict:
        return serve_choices(module, inputs)

    def serve_lite_text(self, module, inputs: dict) -> dict:
        return litert_serving.serve_choices(module, inputs)

    def card_fields(self) -> dict:
        return {"num_choices": self.num_choices}

    def truncation(self, max_seq_length: int) -> str:
        return ("each choice, [CLS] text [SEP] text_pair + ' ' + ending [SEP], longer than "
                f"max_seq_length ({max_seq_length}) word pieces is cut as in "
                "fine-tuning and `keras-bert predict` (google-research/bert's longest-first "
                "rule: a piece off the end of the longer of the context and the "
                "continuation until it fits)")

    def warmup_choices(self, model) -> tuple[int, ...]:
        return (self.num_choices or model.num_choices,)
