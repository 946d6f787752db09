"""The fine-tuning task models' shared base: `TaskModel`, a `keras_bert.model.models.
BertTask` (encoder, heads, config, dtype policy, quantize/LoRA) with its raw-text face
(`TextFace`: an optional preprocessor, `from_preset`, `fit`, `evaluate` and `predict`
on raw text, `compile()` with the paper's recipe, `export()`), and the heads the
families share (`DenseHeadTask`) plus `BertFeatureExtractor`.

The face is implemented by `keras_bert.tasks.keras_face`, imported when a method first
needs it (it loads TensorFlow; defining and registering the classes needs Keras only),
and `export()` by `keras_bert.tasks.exporting`. Each family's folder holds its task model
(`tasks/glue/model.py`: `BertClassifier`, `tasks/squad/model.py`: `BertSpanLabeler`,
`tasks/tagging/model.py`: `BertTokenClassifier` and the taggers,
`tasks/multiple_choice/model.py`: `BertMultipleChoice`). A model without a preprocessor
takes ids exactly as before, and never loads one.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.model.encoder import BertEncoder
from keras_bert.model.models import (
    BertTask,
    float32_logits,
    head_initializer,
)
from keras_bert.model.models import encoder_inputs as fresh_inputs
from keras_bert.tasks import recipe


def _face():
    """`keras_bert.tasks.keras_face`, which implements the raw-text methods."""
    from keras_bert.tasks import keras_face

    return keras_face


def preprocessor_from_config(config: dict):
    """The `TextPreprocessor` a saved model's config holds."""
    return _face().TextPreprocessor.from_config(config)


class TextFace:
    """What every fine-tuning task model (`TaskModel`) adds for raw text; see the module
    docstring.

    `preprocessor`: a `keras_bert.tasks.keras_face.TextPreprocessor`, or None (ids only).
    """

    preprocessor = None
    _recipe_pending = False

    @classmethod
    def from_preset(cls, source, **kwargs):
        """The task model with its preprocessor, ready for `fit`/`predict` on text.

        `source` is anything `keras_bert.load_encoder` takes (a checkpoint of any
        format, `hf://ORG/NAME`, a Google release name, a keras-hub preset, a
        pretraining run), a `keras-bert finetune` run directory (its head, labels,
        casing and sequence length) or a saved `.keras` file. Keyword arguments:
        `num_classes`, `label_names` (a classifier's or tagger's labels),
        `sequence_length` (default: the model's positions, at most 512),
        `lower_case` and `vocab_file` (default: the checkpoint's own), `task` (a
        `--task` name whose reading and decoding to use, e.g. "squad2"), a span
        labeler's or tagger's windows (`max_query_length`, `doc_stride`; by default
        SQuAD's 64 and 128, cut down to fit a short `sequence_length`), and what the
        model's constructor takes (`dropout`). Every argument is checked before any
        weights load: an unknown one, a value out of range, or one that contradicts
        another (or a saved model's own classes, labels or task) raises an
        `ArgumentError` naming it.

        Example:

            classifier = keras_bert.BertClassifier.from_preset(
                "hf://sentence-transformers/all-MiniLM-L6-v2", num_classes=2,
                sequence_length=64)
        """
        return _face().from_preset(cls, source, **kwargs)

    def _takes_text(self, x) -> bool:
        # Text, or a list with None or no numbers in it: the raw-text path names what is
        # wrong with it (ids go to Keras as before); text without a preprocessor says how
        # to get one.
        if not _face().takes_text(x):
            return False
        if self.preprocessor is None:
            _face().preprocessor_of(self)
        return True

    # --- training and inference on raw text ---------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, shuffle=True, **kwargs):
        """`keras.Model.fit`; with a preprocessor, `x` may also be raw text: Python
        lists, numpy arrays or tf.data of strings (pairs as `(texts, text_pairs)` or
        `{"text": ..., "text_pair": ...}`; see the family's `Task.text_examples`), and
        `y` integer labels or label names. Lists are shuffled each epoch (`shuffle`,
        from `seed`), each batch is padded to its longest sequence, and a model
        compiled with `compile()` gets the recipe's schedule sized for this run."""
        if self._takes_text(x):
            return _face().fit(self, x, y, batch_size=batch_size, epochs=epochs,
                               shuffle=shuffle, **kwargs)
        kwargs.pop("seed", None)
        if self._recipe_pending:  # ids: the recipe's schedule, when the steps are known
            steps = _steps_per_epoch(x, batch_size, kwargs.get("steps_per_epoch"))
            if steps is not None:
                _face().size_recipe(self, steps * epochs)
        return super().fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=shuffle,
                           **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """`keras.Model.evaluate`; with a preprocessor, also on raw text and labels."""
        if self._takes_text(x):
            return _face().evaluate(self, x, y, batch_size=batch_size, **kwargs)
        return super().evaluate(x, y, batch_size=batch_size, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict`; with a preprocessor, also on raw text (the model's
        outputs, one row per input; per window for SQuAD passages and long sentences)."""
        if self._takes_text(x):
            return _face().predict(self, x, batch_size=batch_size, **kwargs)
        return super().predict(x, batch_size=batch_size, **kwargs)

    # --- compile state ----------------------------------------------------------------------
    def _mark_recipe(self, loss, metrics, learning_rate):
        """`compile()` without an optimizer: the recipe is sized by the next `fit` on
        raw text (which knows the steps)."""
        self._recipe_pending = True
        # Kept out of Keras's tracking: a tracked metric stays among `model.metrics`
        # after a later `compile(optimizer=...)`, never updated, and its 0.0 shadowed the
        # real "accuracy" in `evaluate`'s results.
        object.__setattr__(self, "_recipe_loss", loss)
        object.__setattr__(self, "_recipe_metrics", metrics)
        self._recipe_learning_rate = learning_rate

    # --- export -------------------------------------------------------------------------------
    def export(self, filepath, format="tf_saved_model", **kwargs):
        """Writes the model for serving, with its tokenizer inside, as `keras-bert
        export` does: `format="tf_saved_model"` (or "saved_model", as the command
        says) a SavedModel with `serving_default` (ids) and `serve_text` (raw text),
        model card and TF Serving warmup file, at `filepath/VERSION/` (TF Serving's
        layout; the next free version); "litert" a
        `model.tflite` there; "onnx" a `model.onnx` (ids). Returns the version
        directory. Needs a preprocessor (`from_preset`) and the TensorFlow backend."""
        _check_export_arguments(filepath, format, kwargs)
        from keras_bert.tasks.exporting import export

        return export(self, filepath, format=format, **kwargs)


# What `export` passes on to each format's writer (keras_bert.export: export_saved_model,
# export_litert, export_onnx); other formats are refused by the export stage itself.
EXPORT_ARGUMENTS = {"tf_saved_model": ("precision", "jit_compile", "warmup", "text",
                                       "serving_compatible"),
                    "litert": ("quantize", "text"), "onnx": ("precision", "opset")}
EXPORT_ARGUMENTS["saved_model"] = EXPORT_ARGUMENTS["tf_saved_model"]


def _check_export_arguments(filepath, format, kwargs) -> None:
    """`ArgumentError` for a `filepath` that is no path or a keyword the format's
    writer does not take, before any work."""
    import os

    from keras_bert.core.errors import ArgumentError

    if not isinstance(filepath, (str, os.PathLike)) or not os.fspath(filepath):
        raise ArgumentError(f"export: filepath must be a directory path, got {filepath!r}.",
                            field="filepath")
    accepted = EXPORT_ARGUMENTS.get(format) if isinstance(format, str) else None
    for name in kwargs if accepted is not None else ():
        if name not in accepted:
            import difflib

            close = difflib.get_close_matches(name, accepted, n=1)
            raise ArgumentError(
                f"export: unknown argument {name!r} for format={format!r}"
                + (f"; did you mean {close[0]!r}?" if close else ".")
                + f" It takes {', '.join(accepted)}.", field=name)


class ClassifierFace:
    def classify(self, texts, batch_size=None):
        """Per text (or pair), `(label name, probability)`; regression: `(score,
        None)`. One text (a string) gives one tuple.

        Example:

            classifier.classify(["a gripping film", "dull and long"])
            # [('1', 0.97), ('0', 0.93)]
        """
        return _face().classify(self, texts, batch_size=batch_size)


class SpanFace:
    def answer(self, questions, contexts, batch_size=None):
        """Per question, its answer: a span of its context, decoded as `keras-bert
        predict` decodes (windows over long passages, n-best, the SQuAD v2 threshold:
        "" for no answer). One question (a string) gives one answer."""
        return _face().answer(self, questions, contexts, batch_size=batch_size)


class TaggerFace:
    def tag(self, texts, batch_size=None):
        """Per sentence (a string, split on whitespace, or a list of words), its
        `(word, label)` pairs; one sentence (a string) gives one list."""
        return _face().tag(self, texts, batch_size=batch_size)


class ChoiceFace:
    def choose(self, contexts, endings, batch_size=None):
        """Per context, `(index, text)` of its most likely ending (2-4 endings each);
        one context (a string, with one list of endings) gives one tuple."""
        return _face().choose(self, contexts, endings, batch_size=batch_size)


def _steps_per_epoch(x, batch_size, steps_per_epoch) -> int | None:
    """Updates per epoch of a `fit` on ids: `steps_per_epoch`, a tf.data dataset's known
    length, or arrays (a dict of them) in batches of `batch_size` (Keras's 32); None
    when they cannot be counted (a generator, an endless dataset)."""
    import math

    if steps_per_epoch:
        return int(steps_per_epoch)
    cardinality = getattr(x, "cardinality", None)
    if callable(cardinality):
        count = int(cardinality())
        return count if count > 0 else None
    first = next(iter(x.values())) if isinstance(x, dict) and x else x
    shape = getattr(first, "shape", None)
    if not shape:
        return None
    return math.ceil(int(shape[0]) / (batch_size or 32))


class TaskModel(TextFace, BertTask):
    """A fine-tuning task model: `BertTask` with the raw-text face (`TextFace`) and an
    optional `preprocessor`, saved with the model."""

    def __init__(self, encoder: BertEncoder, *, inputs, outputs, preprocessor=None, **kwargs):
        super().__init__(encoder, inputs=inputs, outputs=outputs, **kwargs)
        self.preprocessor = preprocessor

    def get_config(self):
        config = super().get_config()
        if self.preprocessor is not None:  # the vocabulary, labels, settings
            config["preprocessor"] = self.preprocessor.get_config()
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("preprocessor") is not None:
            config["preprocessor"] = preprocessor_from_config(config["preprocessor"])
        return super().from_config(config)

    def _family(self) -> str | None:
        """The task family: its preprocessor's task's, else the one whose model this
        class is (`text_inputs.FAMILY_MODELS`)."""
        if self.preprocessor is not None:
            return self.preprocessor.task.family
        from keras_bert.tasks.text_inputs import FAMILY_MODELS

        names = {klass.__name__ for klass in type(self).__mro__}
        return next((family for family, (name, _) in FAMILY_MODELS.items() if name in names),
                    None)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", *,
                learning_rate: float | None = None, **kwargs):
        """Like `keras.Model.compile`; "auto" picks the task's standard choice.

        The default optimizer is the recipe (`keras_bert.tasks.recipe`), the one
        `keras-bert finetune` trains with: AdamW (weight decay 0.01 off LayerNorm and
        biases, epsilon 1e-6), 10% warmup then linear decay, global norm clipping 1.0,
        sized by the next `fit` (on raw text, or on ids whose steps it can count: arrays,
        a tf.data of known length, `steps_per_epoch`), at the peak rate `learning_rate`,
        by default the recipe's for the model's width and task family
        (`recipe.learning_rate`: e.g. 2e-4 for a small classifier such as MiniLM, 2e-5
        for BERT-Base's).
        """
        if loss == "auto":
            loss = self.default_loss()
        if metrics == "auto":
            metrics = self.default_metrics()
        self._recipe_pending = False
        if optimizer == "auto":  # a `fit` on raw text sizes the recipe's schedule
            if learning_rate is None:
                learning_rate = recipe.learning_rate(
                    self.encoder.config, self._family(),
                    feature_based=type(self).__name__ == "BertFeatureBasedTagger")
            self._mark_recipe(loss, metrics, learning_rate=learning_rate)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)


class DenseHeadTask(TaskModel):
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
        inputs = fresh_inputs(encoder) if inputs is None else inputs
        features = encoder(inputs if encoder_inputs is None else encoder_inputs)[output]
        features = keras.layers.Dropout(dropout, dtype=encoder.dtype_policy,
                                        name="classifier_dropout")(features)
        logits = float32_logits(keras.layers.Dense(units, kernel_initializer=head_initializer(encoder),
                                             dtype="float32", name=head_name)(features))
        if logits_shape is not None:
            logits = ops.reshape(logits, logits_shape)
        super().__init__(encoder, inputs=inputs, outputs=logits, **kwargs)
        self.dropout = dropout


@keras.saving.register_keras_serializable(package="keras_bert")
class BertFeatureExtractor(TaskModel):
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
        inputs = fresh_inputs(encoder)
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
