"""The model stage's task-model base and the pretrainer: `BertTask` (an encoder plus
heads as one functional `keras.Model`, with its config, dtype policy, default loss and
metrics, and `quantize` / `enable_lora`) and `BertPretrainer`, BERT's pretraining model
(MLM + NSP, paper §3.1).

The fine-tuning task models (classification, spans, tagging, multiple choice, features)
extend `BertTask` with their raw-text face in the tasks stage
(`keras_bert.tasks.task_model` and each family's `model` module).

Every task model is a functional `keras.Model` that takes the encoder's input dict
(plus `masked_lm_positions` for the pretrainer), trains with `compile()` + `fit()`,
and serializes through `get_config` / `.keras` files. `compile()` called without a loss
fills in the task's standard loss and metrics.
"""

from __future__ import annotations

import re
import warnings

import keras
from keras import ops

from keras_bert.model.adaptation import Adaptation
from keras_bert.model.encoder import INPUT_NAMES, BertEncoder
from keras_bert.model.layers import MaskedLMHead
from keras_bert.model.losses import pretraining_losses

# Variables whose name contains one of these get no weight decay: the LayerNorm scale and
# offset (Keras names them gamma/beta) and every bias, the masked-LM output bias included.
# google-research/bert excludes "LayerNorm", "layer_norm" and "bias" the same way. Keras
# matches these as regular expressions against `variable.name` (not the path), in
# `exclude_from_weight_decay(var_names=...)`.
WEIGHT_DECAY_EXCLUDED = ("gamma", "beta", "bias")

def head_initializer(encoder):
    """The initializer of a head's dense layer: the encoder's truncated normal."""
    return keras.initializers.TruncatedNormal(stddev=encoder.config.initializer_range)


def float32_logits(x):
    """`x` in float32: logits leave the model in float32 so losses stay stable under
    mixed precision."""
    return ops.cast(x, "float32")


def encoder_inputs(encoder):
    """A fresh `keras.Input` per encoder input (int32 [batch, seq])."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


def default_optimizer():
    """AdamW with the paper's fine-tuning learning rate 2e-5, weight decay 0.01,
    epsilon 1e-6, LayerNorm/bias variables excluded from decay."""
    optimizer = keras.optimizers.AdamW(learning_rate=2e-5, weight_decay=0.01, epsilon=1e-6)
    optimizer.exclude_from_weight_decay(var_names=list(WEIGHT_DECAY_EXCLUDED))
    return optimizer


def with_dtype_policy(model, policy):
    """The same task model (a `BertTask` wrapping an `encoder`) with its encoder, and so
    its heads, at another dtype policy; the weights are copied."""
    config = model.get_config()
    config["encoder"]["config"]["dtype"] = policy
    clone = model.__class__.from_config(config)
    clone.set_weights(model.get_weights())
    return clone


class BertTask(Adaptation, keras.Model):
    """The base of every task model: an encoder plus heads as one functional model.

    It serializes the encoder with the model, follows the encoder's dtype policy, and
    fills in the task's standard loss, metrics and optimizer in `compile()`. A subclass
    builds its graph, passes `inputs`/`outputs` here, and lists in `config_fields` the
    constructor arguments (besides `encoder` and `name`) that `get_config` records (or
    overrides `task_config`).

    `quantize(mode)` quantizes encoder and heads; `enable_lora(rank)` trains low-rank
    updates of the encoder's attention and the whole heads (see `BertEncoder`). The
    fine-tuning task models add raw text to it (`keras_bert.tasks.task_model.TaskModel`).
    """

    config_fields: tuple[str, ...] = ()

    def __init__(self, encoder: BertEncoder, *, inputs, outputs, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.encoder = encoder
        self._encoder_revision = encoder.weights_revision
        # Keras' functional models take the global policy; a task model follows its
        # encoder's (as its heads do), so that a mixed-precision encoder makes a
        # mixed-precision model also after `from_config` or `.keras` loading.
        self.dtype_policy = encoder.dtype_policy

    def task_config(self) -> dict:
        """The constructor arguments besides `encoder` and `name`, for `get_config`."""
        return {field: getattr(self, field) for field in self.config_fields}

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder),
                "name": self.name, "trainable": self.trainable, **self.task_config()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)

    # Most tasks classify: integer labels against logits over the last axis.
    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Like `keras.Model.compile`; "auto" picks the task's standard choice: the
        task's loss and metrics, and `default_optimizer()` (AdamW with the paper's
        fine-tuning learning rate 2e-5, weight decay 0.01, epsilon 1e-6, LayerNorm/bias
        variables excluded from decay)."""
        if optimizer == "auto":
            optimizer = default_optimizer()
        if loss == "auto":
            loss = self.default_loss()
        if metrics == "auto":
            metrics = self.default_metrics()
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def fit(self, *args, **kwargs):
        """`keras.Model.fit`. A head on the sequence output (span labeler, tagger) leaves
        the encoder's pooler without gradients, which is right; Keras's warning of it at
        every trace is left out (only the one naming the pooler's variables and nothing
        else)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_unused_pooler_warning(self.encoder),
                                    category=UserWarning)
            return super().fit(*args, **kwargs)

    def compile_from_config(self, config):
        """Compiles with the saved compile state (a reloaded model evaluates without
        `compile()`)."""
        config = keras.saving.deserialize_keras_object(config)
        keras.Model.compile(self, **config)
        if getattr(self, "optimizer", None) is not None and self.built:
            self.optimizer.build(self.trainable_variables)
            _fresh_when_saved_without_state(self.optimizer)


def _fresh_when_saved_without_state(optimizer) -> None:
    """A file saved without its optimizer's state (a `keras-bert finetune` run's
    model.keras leaves AdamW's moments out) reloads with a fresh optimizer, as
    `compile()` gives, instead of Keras's "Skipping variable loading for optimizer"
    warning, which a user can do nothing about; saved state still loads, and a partial
    one still warns."""
    load = optimizer.load_own_variables

    def load_own_variables(store):
        if len(store.keys()) == 0:
            return
        load(store)

    optimizer.load_own_variables = load_own_variables


def _unused_pooler_warning(encoder: BertEncoder) -> str:
    """A pattern of Keras's "Gradients do not exist for variables [...]" warning that
    lists some or all of `encoder`'s pooler variables and no other."""
    names = "|".join(re.escape(w.path) for w in encoder.pooler.weights)
    return rf"Gradients do not exist for variables \[(?:'(?:{names})'(?:, )?)+\] "


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPretrainer(BertTask):
    """BERT's pretraining model: masked LM (decoder tied to the word embeddings) and
    next-sentence prediction (paper §3.1).

    Inputs: the encoder dict plus `masked_lm_positions` (int32 [batch, P]).
    Outputs: `masked_lm`, logits float32 [batch, P, vocab], and, unless
    `next_sentence=False`, `next_sentence`, logits float32 [batch, 2] (label 1 = random
    next sentence, as in google-research/bert). With the default compile, the logged
    metrics are `masked_lm_loss`, `masked_lm_accuracy`, `next_sentence_loss` and
    `next_sentence_accuracy`.

    `split_features` turns the pretraining reader's flat feature dict into the
    `(x, y, sample_weight)` that `fit` takes; with the default loss
    (`keras_bert.model.losses.MaskedLMLoss`), the MLM loss is averaged over the real
    predictions (`masked_lm_weights`) of the whole global batch, as in the original.

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> enc = BertEncoder(BertConfig.from_preset("tiny", vocab_size=50))
    >>> model = BertPretrainer(enc)
    >>> x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 8), "int32"),
    ...      "masked_lm_positions": np.array([[1, 2], [3, 0]], "int32")}
    >>> out = model(x)
    >>> tuple(out["masked_lm"].shape), tuple(out["next_sentence"].shape)
    ((2, 2, 50), (2, 2))
    """

    config_fields = ("next_sentence",)

    def __init__(self, encoder: BertEncoder, next_sentence: bool = True,
                 name: str = "bert_pretrainer", **kwargs):
        cfg = encoder.config
        inputs = encoder_inputs(encoder)
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32",
                                                    name="masked_lm_positions")
        enc_out = encoder({k: inputs[k] for k in INPUT_NAMES})
        mlm_head = MaskedLMHead(encoder.word_embeddings, hidden_act=cfg.hidden_act,
                                layer_norm_eps=cfg.layer_norm_eps,
                                initializer_range=cfg.initializer_range,
                                dtype=encoder.dtype_policy, name="masked_lm")
        outputs = {"masked_lm": mlm_head(enc_out["sequence_output"],
                                                inputs["masked_lm_positions"])}
        nsp_head = None
        if next_sentence:
            nsp_head = keras.layers.Dense(2, kernel_initializer=head_initializer(encoder),
                                          dtype=encoder.dtype_policy, name="next_sentence")
            outputs["next_sentence"] = float32_logits(nsp_head(enc_out["pooled_output"]))
        super().__init__(encoder, inputs=inputs, outputs=outputs, name=name, **kwargs)
        self.next_sentence = next_sentence
        self.masked_lm = mlm_head
        self.next_sentence_head = nsp_head

    def default_loss(self):
        # MaskedLMLoss: the average over the global batch's real predictions, also under
        # a distribution strategy (a per-replica mean would weight replicas alike).
        return pretraining_losses(self.next_sentence)

    def default_metrics(self):
        metrics = {"masked_lm": [keras.metrics.SparseCategoricalAccuracy(
            name="accuracy")]}
        if self.next_sentence:
            metrics["next_sentence"] = [keras.metrics.SparseCategoricalAccuracy(
                name="accuracy")]
        return metrics

    def split_features(self, features: dict):
        """Maps the pretraining reader's flat dict to `(x, y, sample_weight)` for `fit`."""
        x = {k: features[k] for k in (*INPUT_NAMES, "masked_lm_positions")}
        y = {"masked_lm": features["masked_lm_ids"]}
        sample_weight = {"masked_lm": features["masked_lm_weights"]}
        if self.next_sentence:
            y["next_sentence"] = features["next_sentence_labels"]
            # Float ones of the labels' [batch, 1] shape, in plain arithmetic: tf.data
            # runs this on TF tensors whatever the Keras backend (keras.ops would not).
            sample_weight["next_sentence"] = features["masked_lm_weights"][:, :1] * 0 + 1
        return x, y, sample_weight
