"""`serve_text` of a multiple-choice (SWAG) model.

Inputs (UTF-8 strings, checked in the graph; another rank or batch size is
INVALID_ARGUMENT naming the input):

* `text` [batch]: the context (SWAG's `sent1`, sentence A of every choice);
* `text_pair` [batch]: the start of the continuation (SWAG's `sent2`; may be "");
* `endings` [batch, E]: the candidate endings, any E >= 1 (the model's trained number,
  4 for SWAG, is what it was fitted on, but any number is scored). A blank ending (no
  word pieces: "", whitespace, zero-width characters; `keras_bert.tasks.multiple_choice.task`
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

import tensorflow as tf

from keras_bert.tasks.multiple_choice.task import NO_ANSWER
from keras_bert.tasks.serving import choice_string_batches

NO_ENDING = NO_ANSWER  # `label` of a row whose endings are all blank


def serve_choices(module, inputs):
    """`serve_text` for `module` (a `ServingModule` of a multiple-choice model); blank
    endings follow `keras_bert.tasks.multiple_choice.task`'s rule."""
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
