"""Task models on top of a `BertEncoder`: pretraining (MLM + NSP) and the paper's
fine-tuning heads (§4): sequence classification/regression, SQuAD spans, token tagging,
multiple choice, and frozen feature extraction.

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
from keras_bert.model.text_face import (
    ChoiceFace,
    ClassifierFace,
    SpanFace,
    TaggerFace,
    TextFace,
    preprocessor_from_config,
)

# Variables whose name contains one of these get no weight decay: the LayerNorm scale and
# offset (Keras names them gamma/beta) and every bias, the masked-LM output bias included.
# google-research/bert excludes "LayerNorm", "layer_norm" and "bias" the same way. Keras
# matches these as regular expressions against `variable.name` (not the path), in
# `exclude_from_weight_decay(var_names=...)`.
WEIGHT_DECAY_EXCLUDED = ("gamma", "beta", "bias")


def _initializer(encoder):
    return keras.initializers.TruncatedNormal(stddev=encoder.config.initializer_range)


def _float32(x):
    # Logits leave the model in float32 so losses stay stable under mixed precision.
    return ops.cast(x, "float32")


class BertTask(TextFace, Adaptation, keras.Model):
    """The base of every task model: an encoder plus heads as one functional model.

    It serializes the encoder with the model, follows the encoder's dtype policy, and
    fills in the task's standard loss, metrics and optimizer in `compile()`. A subclass
    builds its graph, passes `inputs`/`outputs` here, and lists in `config_fields` the
    constructor arguments (besides `encoder` and `name`) that `get_config` records (or
    overrides `task_config`).

    `quantize(mode)` quantizes encoder and heads; `enable_lora(rank)` trains low-rank
    updates of the encoder's attention and the whole heads (see `BertEncoder`). With a
    `preprocessor` it also takes raw text (`TextFace`: `from_preset`, `fit`, ...).
    """

    config_fields: tuple[str, ...] = ()

    def __init__(self, encoder: BertEncoder, *, inputs, outputs, preprocessor=None, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.encoder = encoder
        self.preprocessor = preprocessor
        self._encoder_revision = encoder.weights_revision
        # Keras' functional models take the global policy; a task model follows its
        # encoder's (as its heads do), so that a mixed-precision encoder makes a
        # mixed-precision model also after `from_config` or `.keras` loading.
        self.dtype_policy = encoder.dtype_policy

    def task_config(self) -> dict:
        """The constructor arguments besides `encoder` and `name`, for `get_config`."""
        return {field: getattr(self, field) for field in self.config_fields}

    def get_config(self):
        preprocessor = None if self.preprocessor is None else self.preprocessor.get_config()
        return {"encoder": keras.saving.serialize_keras_object(self.encoder),
                "name": self.name, "trainable": self.trainable, **self.task_config(),
                **({"preprocessor": preprocessor} if preprocessor else {})}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        if config.get("preprocessor") is not None:  # the vocabulary, labels, settings
            config["preprocessor"] = preprocessor_from_config(config["preprocessor"])
        return cls(**config)

    # Most tasks classify: integer labels against logits over the last axis.
    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def compile(self, optimizer="auto", loss="auto", metrics="auto", *,
                learning_rate: float | None = None, **kwargs):
        """Like `keras.Model.compile`; "auto" picks the task's standard choice.

        The default optimizer is AdamW with the paper's fine-tuning learning rate 2e-5,
        weight decay 0.01, epsilon 1e-6, and LayerNorm/bias variables excluded from decay.
        A `fit` on raw text (a model with a preprocessor) then replaces it with the
        paper's whole recipe sized for that run: 10% warmup, linear decay, global norm
        clipping 1.0, and peak rate `learning_rate`, by default the top of Google's
        fine-tuning grid for the model's size: 5e-5 from BERT-Base's width (768) up,
        1e-4 below it (the small BERTs' grid; `keras_bert.tasks.keras_face`).
        """
        recipe = optimizer == "auto"
        if recipe:
            optimizer = keras.optimizers.AdamW(learning_rate=2e-5, weight_decay=0.01,
                                               epsilon=1e-6)
            optimizer.exclude_from_weight_decay(var_names=list(WEIGHT_DECAY_EXCLUDED))
        if loss == "auto":
            loss = self.default_loss()
        if metrics == "auto":
            metrics = self.default_metrics()
        self._recipe_pending = False
        if recipe:  # a `fit` on raw text sizes the recipe's schedule (TextFace)
            if learning_rate is None:
                learning_rate = 5e-5 if self.encoder.config.hidden_size >= 768 else 1e-4
            self._mark_recipe(loss, metrics, learning_rate=learning_rate)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def fit(self, *args, **kwargs):
        """`keras.Model.fit` (with `TextFace`'s raw text). A head on the sequence output
        (span labeler, tagger) leaves the encoder's pooler without gradients, which is
        right; Keras's warning of it at every trace is left out (only the one naming
        the pooler's variables and nothing else)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_unused_pooler_warning(self.encoder),
                                    category=UserWarning)
            return super().fit(*args, **kwargs)


def _unused_pooler_warning(encoder: BertEncoder) -> str:
    """A pattern of Keras's "Gradients do not exist for variables [...]" warning that
    lists some or all of `encoder`'s pooler variables and no other."""
    names = "|".join(re.escape(w.path) for w in encoder.pooler.weights)
    return rf"Gradients do not exist for variables \[(?:'(?:{names})'(?:, )?)+\] "


@keras.saving.register_keras_serializable(package="keras_bert")
class _FoldChoices(keras.layers.Layer):
    """[batch, choices, seq] -> [batch * choices, seq]; the seq length is only known at
    call time, so this cannot be a static `Reshape`."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_spec(self, x):
        batch = None if x.shape[0] is None or x.shape[1] is None else x.shape[0] * x.shape[1]
        return keras.KerasTensor((batch, x.shape[-1]), dtype=x.dtype)


def _encoder_inputs(encoder):
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


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
        inputs = _encoder_inputs(encoder)
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
            nsp_head = keras.layers.Dense(2, kernel_initializer=_initializer(encoder),
                                          dtype=encoder.dtype_policy, name="next_sentence")
            outputs["next_sentence"] = _float32(nsp_head(enc_out["pooled_output"]))
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


class DenseHeadTask(BertTask):
    """The shared constructor of the heads that put dropout and one dense layer on an
    encoder output: the classifier, the tagger and multiple choice (paper §4).

    `dropout` defaults to the encoder's `hidden_dropout`; `encoder_inputs` maps the
    model's inputs to what the encoder receives (multiple choice folds its choices into
    the batch), and `logits_shape` reshapes the logits (back to [batch, choices]).
    """

    config_fields = ("dropout",)

    def __init__(self, encoder: BertEncoder, *, units: int, dropout: float | None,
                 output: str, inputs=None, encoder_inputs=None, head_name: str = "logits",
                 logits_shape=None, **kwargs):
        dropout = encoder.config.hidden_dropout if dropout is None else dropout
        inputs = _encoder_inputs(encoder) if inputs is None else inputs
        features = encoder(inputs if encoder_inputs is None else encoder_inputs)[output]
        features = keras.layers.Dropout(dropout, dtype=encoder.dtype_policy,
                                        name="classifier_dropout")(features)
        logits = _float32(keras.layers.Dense(units, kernel_initializer=_initializer(encoder),
                                             dtype="float32", name=head_name)(features))
        if logits_shape is not None:
            logits = ops.reshape(logits, logits_shape)
        super().__init__(encoder, inputs=inputs, outputs=logits, **kwargs)
        self.dropout = dropout


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(ClassifierFace, DenseHeadTask):
    """Sentence or sentence-pair classification from the pooled [CLS] output (paper §4.1).

    With `num_classes=1` it is a regressor (e.g. STS-B) trained with mean squared error.
    Output: float32 logits [batch, num_classes].

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)),
    ...                        num_classes=3)
    >>> x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 8), "int32")}
    >>> tuple(model(x).shape)
    (2, 3)
    """

    config_fields = ("num_classes", "dropout")

    def __init__(self, encoder: BertEncoder, num_classes: int = 2, dropout: float | None = None,
                 name: str = "bert_classifier", **kwargs):
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1 (1 means regression), got {num_classes}.")
        super().__init__(encoder, units=num_classes, dropout=dropout, output="pooled_output",
                         name=name, **kwargs)
        self.num_classes = num_classes

    def default_loss(self):
        if self.num_classes == 1:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        if self.num_classes == 1:
            return [keras.metrics.MeanSquaredError(name="mse")]
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]


@keras.saving.register_keras_serializable(package="keras_bert")
class BertSpanLabeler(SpanFace, BertTask):
    """SQuAD-style extractive QA: start and end logits over the sequence (paper §4.2/4.3).

    Outputs `start_logits` and `end_logits`, float32 [batch, seq]. Labels are the start
    and end token indices; SQuAD v2 "no answer" examples point both at [CLS] (index 0).
    Decode predictions with `keras_bert.tasks.squad.best_span`.

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertSpanLabeler(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)))
    >>> x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 8), "int32")}
    >>> tuple(model(x)["start_logits"].shape)
    (2, 8)
    """

    def __init__(self, encoder: BertEncoder, name: str = "bert_span_labeler", **kwargs):
        inputs = _encoder_inputs(encoder)
        seq = encoder(inputs)["sequence_output"]
        logits = keras.layers.Dense(2, kernel_initializer=_initializer(encoder),
                                    dtype=encoder.dtype_policy, name="span_logits")(seq)
        logits = _float32(logits)
        outputs = {"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}
        super().__init__(encoder, inputs=inputs, outputs=outputs, name=name, **kwargs)

    def default_loss(self):
        ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"start_logits": ce, "end_logits": ce}

    def default_metrics(self):
        return None

    def compile(self, optimizer="auto", loss="auto", metrics="auto", *,
                learning_rate: float | None = None, **kwargs):
        # The paper's objective is the mean of the start and end log-likelihoods.
        if loss == "auto":
            kwargs.setdefault("loss_weights", {"start_logits": 0.5, "end_logits": 0.5})
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        learning_rate=learning_rate, **kwargs)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(TaggerFace, DenseHeadTask):
    """Per-token tagging, e.g. NER (paper §5.3): float32 logits [batch, seq, num_classes].

    Pass `sample_weight=input_mask` (or a first-sub-token mask) to `fit` so padding and
    continuation pieces do not count.

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertTokenClassifier(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)),
    ...                             num_classes=9)
    >>> x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 8), "int32")}
    >>> tuple(model(x).shape)
    (2, 8, 9)
    """

    config_fields = ("num_classes", "dropout")

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout: float | None = None,
                 name: str = "bert_token_classifier", **kwargs):
        if num_classes < 2:
            raise ValueError(f"num_classes must be >= 2 for tagging, got {num_classes}.")
        super().__init__(encoder, units=num_classes, dropout=dropout, output="sequence_output",
                         name=name, **kwargs)
        self.num_classes = num_classes

@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoice(ChoiceFace, DenseHeadTask):
    """SWAG-style multiple choice (paper §4.4): each (context, choice) pair is encoded,
    its pooled output scored by one dense unit, and the scores softmaxed over choices.

    Inputs are the encoder dict with int32 tensors shaped [batch, num_choices, seq].
    Output: float32 logits [batch, num_choices].

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertMultipleChoice(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)),
    ...                            num_choices=4)
    >>> x = {"input_word_ids": np.ones((2, 4, 8), "int32"),
    ...      "input_mask": np.ones((2, 4, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 4, 8), "int32")}
    >>> tuple(model(x).shape)
    (2, 4)
    """

    config_fields = ("num_choices", "dropout")

    def __init__(self, encoder: BertEncoder, num_choices: int, dropout: float | None = None,
                 name: str = "bert_multiple_choice", **kwargs):
        if num_choices < 2:
            raise ValueError(f"num_choices must be >= 2, got {num_choices}.")
        inputs = {name: keras.Input(shape=(num_choices, None), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        flat = {k: _FoldChoices(name=f"fold_{k}")(v) for k, v in inputs.items()}
        super().__init__(encoder, units=1, dropout=dropout, output="pooled_output",
                         inputs=inputs, encoder_inputs=flat, head_name="choice_score",
                         logits_shape=(-1, num_choices), name=name, **kwargs)
        self.num_choices = num_choices


@keras.saving.register_keras_serializable(package="keras_bert")
class BertFeatureExtractor(BertTask):
    """Frozen contextual features, the paper's feature-based approach (§5.3, Table 7).

    The extractor is frozen: it has no trainable weights, runs the encoder in inference
    mode (no dropout) and passes no gradient back to it. The encoder object passed in is
    left as it is (still trainable, e.g. by another model that shares it). The output
    combines the hidden states of `layers` (indices into the L transformer layers,
    negative from the top) by "concat" (the paper's best: the last four layers
    concatenated, 4H wide) or "sum". Output: [batch, seq, width].

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> enc = BertEncoder(BertConfig.from_preset("tiny", vocab_size=50))
    >>> model = BertFeatureExtractor(enc, layers=(-2, -1))
    >>> x = {"input_word_ids": np.ones((1, 5), "int32"), "input_mask": np.ones((1, 5), "int32"),
    ...      "input_type_ids": np.zeros((1, 5), "int32")}
    >>> tuple(model(x).shape)
    (1, 5, 256)
    """

    freezes_encoder = True  # LoRA factors would never train (`enable_lora` refuses)

    def __init__(self, encoder: BertEncoder, layers=(-4, -3, -2, -1), combine: str = "concat",
                 name: str = "bert_feature_extractor", **kwargs):
        num_layers = encoder.config.num_layers
        layers = tuple(int(i) for i in layers)
        if not layers or any(not -num_layers <= i < num_layers for i in layers):
            raise ValueError(f"layers {layers} must index the encoder's {num_layers} layers "
                             f"(from {-num_layers} to {num_layers - 1}).")
        if combine not in ("concat", "sum"):
            raise ValueError(f"combine must be 'concat' or 'sum', got {combine!r}.")
        inputs = _encoder_inputs(encoder)
        hidden = encoder(inputs)["encoder_outputs"]
        picked = [hidden[i] for i in layers]
        out = ops.concatenate(picked, axis=-1) if combine == "concat" else sum(picked[1:],
                                                                              picked[0])
        out = ops.stop_gradient(out)
        super().__init__(encoder, inputs=inputs, outputs=out, name=name, **kwargs)
        self.layers_used = layers
        self.combine = combine

    def task_config(self):
        return {"layers": list(self.layers_used), "combine": self.combine}

    def default_loss(self):
        raise NotImplementedError("BertFeatureExtractor is frozen and has nothing to train; "
                                  "put a model on top of its features and compile that.")

    def call(self, inputs, training=None, mask=None, **kwargs):
        # Frozen features: the encoder always runs in inference mode (no dropout).
        return super().call(inputs, training=False, mask=mask, **kwargs)

    # Frozen here only: Keras keeps trainability on the (shared) variables and a
    # sublayer's `trainable` setter would freeze the caller's encoder everywhere.
    @property
    def trainable_weights(self):
        return []

    @property
    def trainable_variables(self):
        return []

    @property
    def non_trainable_weights(self):
        return self.weights

    @property
    def non_trainable_variables(self):
        return self.variables
