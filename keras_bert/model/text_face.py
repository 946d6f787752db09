"""The Keras face of the task models: an optional preprocessor, `from_preset`, `fit`,
`evaluate` and `predict` on raw text, `classify` / `answer` / `tag` / `choose`,
`compile()` with the paper's recipe, `export()`, and a compile state that survives
`save()` and `keras.saving.load_model`.

The model stage imports no later stage: reading checkpoints and text is the tasks
stage's (`keras_bert.tasks.keras_face`), writing SavedModels the export stage's
(`keras_bert.export.models`), which the package facade wires in
(`keras_bert.core.wiring`). A model without a preprocessor takes ids exactly as before,
and never loads them.
"""

from __future__ import annotations

import keras

from keras_bert.core import wiring

TASK_FACE = "task_face"  # keras_bert.tasks.keras_face
TASK_EXPORT = "task_export"  # keras_bert.export.models


def _face():
    return wiring.provider(TASK_FACE)


def preprocessor_from_config(config: dict):
    """The `TextPreprocessor` a saved model's config holds."""
    return _face().TextPreprocessor.from_config(config)


class TextFace:
    """What every task model (`BertTask`) adds for raw text; see the module docstring.

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

    def compile_from_config(self, config):
        """Compiles with the saved compile state (a reloaded model evaluates without
        `compile()`)."""
        config = keras.saving.deserialize_keras_object(config)
        keras.Model.compile(self, **config)
        if getattr(self, "optimizer", None) is not None and self.built:
            self.optimizer.build(self.trainable_variables)
            _fresh_when_saved_without_state(self.optimizer)

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
        return wiring.provider(TASK_EXPORT).export(self, filepath, format=format, **kwargs)


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
