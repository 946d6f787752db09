"""Writing a LiteRT (TensorFlow Lite) model: `export_litert`; running one: `LiteRTModel`.

`export_litert` writes `OUTPUT_DIR/NAME/VERSION/model.tflite` with `export_saved_model`'s
versioning (the next version, written to a hidden temporary directory and renamed into
place once complete) and model card (`VERSION/assets.extra/keras_bert.json`, plus
`format`, `quantize` and `litert`: custom ops, runtime limits, file size). Its
signatures have the SavedModel's names, inputs and outputs:

* `serving_default`: token ids (int32 [batch, seq]; [batch, choices, seq] for multiple
  choice), any batch and sequence length;
* `serve_text`: raw UTF-8 strings [batch], tokenized in the graph exactly like
  `BertTokenizer.tokenize` (`keras_bert.text.litert_ops`), for every family; multiple
  choice, the tagger and SQuAD (windows over passages, answers) are in
  `keras_bert.tasks.tagging.litert_serving`.

Built-in ops and tensorflow-text's LiteRT kernels only (`LITERT_TEXT_OPS`, registered
by `tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`), no Flex op: the export reads
the converted file's custom ops and fails on any other.

LiteRT has no assert op, so the SavedModel's in-graph input checks cannot run: ids out
of range still fail the call (LiteRT's gather refuses them), other bad input gives
undefined outputs. `LiteRTModel` runs the SavedModel's checks in Python before each
call (`ArgumentError` naming the input).

Under any runner, text with nothing left after cleaning ("", NUL, zero-width or blank
characters, in every family, cased or uncased) is answered as the SavedModel answers it
(the graphs avoid LiteRT kernels that divide by a zero size), a batch of 0 strings gives
0 rows, and a multiple-choice batch without an endings column fails the call
(RuntimeError), never the process; `LiteRTModel` refuses the last two (`ArgumentError`).
A LiteRT interpreter is not thread-safe; `LiteRTModel` is (a lock around its one).

`quantize`: "none" (float32), "dynamic_int8" (`tf.lite.Optimize.DEFAULT`: int8 weights,
the embedding tables included, float activations) or "float16" (float16 weights).
"""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import tensorflow as tf

from keras_bert.core import fileio
from keras_bert.core.errors import ArgumentError, KerasBertError
from keras_bert.export.card import MODEL_CARD, describe_signature, model_card
from keras_bert.export.saved_model import check_name
from keras_bert.export.signatures import ServingModule
from keras_bert.export.source import ExportSource
from keras_bert.export.versions import claim_version
from keras_bert.model.encoder import INPUT_NAMES
from keras_bert.text.litert_ops import LITERT_TEXT_OPS, LiteTokenizer, pack

FORMAT = "litert"
LITERT_FILE = "model.tflite"
QUANTIZATIONS = ("none", "dynamic_int8", "float16")
REGISTERER = "tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS"

WORD_OUTPUTS = ("words", "labels", "word_start", "word_end")


class LiteRTModule(ServingModule):
    """`ServingModule` for LiteRT: the same model outputs, `serving_default` without the
    in-graph asserts (LiteRT has no assert op; `LiteRTModel` checks instead), and a
    `serve_text` built from `keras_bert.text.litert_ops`'s ops."""

    def __init__(self, source: ExportSource, text: bool = True):
        super().__init__(source, jit_compile=False, text=False)
        self.text = text
        self.lite_tokenizer = LiteTokenizer(source.tokenizer) if self.text else None
        if self.text:
            specs = {name: tf.TensorSpec([None] * rank, tf.string, name=name)
                     for name, rank in source.serving.text_ranks.items()}
            self.serve_text = tf.function(self._lite_text, input_signature=[specs],
                                          autograph=False)  # plain graph code: faster

    def _serve_ids(self, inputs):
        return self.model_outputs(inputs)

    def pack_text(self, segments):
        tok = self.source.tokenizer
        return pack(segments, self.source.max_seq_length, tok.cls_id, tok.sep_id, tok.pad_id)

    def _lite_text(self, inputs):
        return self.serving.serve_lite_text(self, inputs)


def custom_ops_of(model: bytes) -> list[str]:
    """The custom (non built-in) op names of a .tflite flatbuffer, sorted."""
    from tensorflow.lite.tools import flatbuffer_utils

    codes = flatbuffer_utils.convert_bytearray_to_object(bytearray(model)).operatorCodes
    return sorted({c.customCode.decode() for c in codes if c.customCode})


def flat_signature(function, name: str):
    """`function` (one dict argument, a tf.function with an input signature) as a
    concrete function of keyword tensors called `name`: what the converter turns into
    the LiteRT signature `name` with the same input names."""
    (specs,) = function.input_signature
    names = sorted(specs)

    def call(*args):
        return function(dict(zip(names, args)))

    call.__name__ = name
    return tf.function(call, input_signature=[specs[n] for n in names],
                       autograph=False).get_concrete_function()


def _convert(module: LiteRTModule, functions: dict, quantize: str) -> bytes:
    # The converter saves what it is given: only the variables (the module's functions
    # would be traced and saved again for nothing).
    holder = tf.__internal__.tracking.AutoTrackable()
    holder.variables = module.variables
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [flat_signature(f, name) for name, f in functions.items()], holder)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True  # tensorflow-text's; audited below
    if quantize != "none":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantize == "float16":
        converter.target_spec.supported_types = [tf.float16]
    model = converter.convert()
    unknown = sorted(set(custom_ops_of(model)) - set(LITERT_TEXT_OPS))
    if unknown:
        raise KerasBertError(f"the LiteRT model needs ops without a LiteRT kernel: "
                             f"{', '.join(unknown)}; this export cannot run in LiteRT.")
    return model


def check_quantize(quantize: str) -> str:
    """`quantize`, or `ArgumentError` unless one of `QUANTIZATIONS`."""
    if quantize not in QUANTIZATIONS:
        raise ArgumentError(f"quantize must be one of {', '.join(QUANTIZATIONS)}, got "
                            f"{quantize!r}.", field="quantize")
    return quantize


def export_litert(source: ExportSource, output_dir: str | os.PathLike, name: str,
                  quantize: str = "none", text: bool = True) -> tuple[str, dict]:
    """Writes `source` as `output_dir/name/<next version>/model.tflite`, atomically.

    Args:
        source: from `load_export_source` at float32 (LiteRT computes in float32;
            `quantize` makes the weights smaller).
        output_dir, name: as in `export_saved_model`.
        quantize: "none", "dynamic_int8" or "float16" (see the module docstring).
        text: add `serve_text`.

    Returns:
        (the version directory, the model card).
    """
    check_name(name)
    check_quantize(quantize)
    if source.encoder.dtype_policy.name != "float32":
        raise ArgumentError("LiteRT models compute in float32: load the source at float32 "
                            f"(not {source.encoder.dtype_policy.name}).", field="precision")
    model_dir = os.path.join(os.fspath(output_dir), name)
    fileio.check_writable(model_dir, kind="directory", what="output_dir")
    module = LiteRTModule(source, text)
    functions = {"serving_default": module.serve_ids}
    if module.text:
        functions["serve_text"] = module.serve_text
    model = _convert(module, functions, quantize)
    described = {k: describe_signature(f.get_concrete_function())
                 for k, f in functions.items()}
    with claim_version(model_dir) as (version, directory):
        card = model_card(source, "float32", described, False, version, name, module.text)
        card.update({"format": FORMAT, "quantize": quantize,
                     "litert": litert_card(source, module, model)})
        with open(os.path.join(directory, LITERT_FILE), "wb") as f:
            f.write(model)
        extra = os.path.join(directory, "assets.extra")
        os.makedirs(extra, exist_ok=True)
        fileio.write_json(os.path.join(extra, MODEL_CARD), card)
    return os.path.join(model_dir, str(version)), card


def litert_card(source: ExportSource, module: LiteRTModule, model: bytes) -> dict:
    """The card's `litert` entry: file, custom ops, serve_text, runtime limits."""
    config = source.config
    return {
        "file": LITERT_FILE, "size_bytes": len(model),
        "custom_ops": custom_ops_of(model), "custom_op_registerer": REGISTERER,
        "flex_ops": False,
        "serve_text": module.text,
        "limits": {
            "batch": "any batch size (the interpreter resizes its inputs per call)",
            "seq": f"serving_default: 1 to {config.max_position_embeddings} positions; "
                   f"serve_text packs to max_seq_length {source.max_seq_length}",
            "checks": "no in-graph input checks (LiteRT has no assert op): ids out of "
                      "range fail the call, other bad input gives undefined outputs; "
                      "keras_bert's LiteRTModel checks inputs as the SavedModel does",
            "max_word_bytes": 4 * source.tokenizer.max_chars_per_word,
            **source.serving.litert_limits(module.text),
        },
    }


def load_interpreter(path: str | os.PathLike, num_threads: int | None = None):
    """A LiteRT interpreter of `path` with tensorflow-text's ops registered:
    `ai_edge_litert` when installed, else TensorFlow's own (deprecated) one."""
    import tensorflow_text

    registerers = tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS
    try:
        from ai_edge_litert.interpreter import InterpreterWithCustomOps
    except ImportError:
        from tensorflow.lite.python.interpreter import InterpreterWithCustomOps
    return InterpreterWithCustomOps(model_path=os.fspath(path), num_threads=num_threads,
                                    custom_op_registerers=registerers)


class LiteRTModel:
    """An exported `model.tflite`, its signatures checked like the SavedModel's.

    Safe to share between threads: a LiteRT interpreter is not (two calls at once
    corrupt its memory and can kill the process), so each call holds the model's lock
    around the interpreter; calls from several threads run one at a time on one
    interpreter (a lock, not an interpreter per thread: one copy of the model in
    memory; for parallel calls, give each thread its own `LiteRTModel`).

    Args:
        path: the version directory (or the .tflite file in it).
        num_threads: LiteRT's CPU threads (default: its own).

    Example (a classifier):

        model = LiteRTModel("saved_models/sst2/1")
        model.serve_text(text=["a gripping film"])["label"]   # array([b'1'])
    """

    def __init__(self, path: str | os.PathLike, num_threads: int | None = None):
        path = os.fspath(path)
        directory = os.path.dirname(path) if path.endswith(".tflite") else path
        file = path if path.endswith(".tflite") else os.path.join(path, LITERT_FILE)
        if not os.path.isfile(file):
            raise ArgumentError(f"{file!r} does not exist.", field="path")
        with open(os.path.join(directory, "assets.extra", MODEL_CARD)) as f:
            self.card = json.load(f)
        self.interpreter = load_interpreter(file, num_threads)
        self._runners = {}
        self._lock = threading.Lock()  # around every use of the interpreter

    @property
    def signatures(self) -> list[str]:
        return sorted(self.interpreter.get_signature_list())

    def run(self, signature: str, **inputs) -> dict:
        """Calls `signature` with numpy-convertible inputs; returns its outputs."""
        if signature not in self.signatures:
            raise ArgumentError(f"the model has no signature {signature!r}; it has "
                                f"{', '.join(self.signatures)}.", field="signature")
        spec = self.card["signatures"][signature]["inputs"]
        missing = sorted(set(spec) - set(inputs))
        extra = sorted(set(inputs) - set(spec))
        if missing or extra:
            raise ArgumentError(f"{signature} takes {', '.join(sorted(spec))}; missing: "
                                f"{missing}, unknown: {extra}.", field="inputs")
        check = check_ids if signature == "serving_default" else check_text
        arrays = check(inputs, self.card)
        with self._lock:  # resize, invoke and read the outputs (copies) as one
            if signature not in self._runners:
                self._runners[signature] = self.interpreter.get_signature_runner(signature)
            out = self._runners[signature](**arrays)
        if "num_words" in out:  # the tagger's words: as many columns as the most words
            out.update({k: out[k][:, :out["num_words"].max()] for k in WORD_OUTPUTS})
        return out

    def serve_text(self, **inputs) -> dict:
        return self.run("serve_text", **inputs)

    def serving_default(self, **inputs) -> dict:
        return self.run("serving_default", **inputs)


def check_ids(inputs: dict, card: dict) -> dict:
    """The SavedModel's `serving_default` checks, in numpy: int32 arrays, or
    `ArgumentError` naming the input."""
    config = card["config"]
    rank = len(card["signatures"]["serving_default"]["inputs"]["input_word_ids"]["shape"])
    arrays = {name: np.asarray(inputs[name]) for name in INPUT_NAMES}
    ids, mask, types = (arrays[n] for n in INPUT_NAMES)
    limits = {"input_word_ids": (config["vocab_size"], "the vocabulary size"),
              "input_type_ids": (config["type_vocab_size"], "type_vocab_size"),
              "input_mask": (2, "0 and 1 only")}
    for name, value in arrays.items():
        if value.ndim != rank or not np.issubdtype(value.dtype, np.integer):
            raise ArgumentError(f"{name} must be an integer array of rank {rank}, got "
                                f"{value.dtype} of shape {value.shape}.", field=name)
        if value.shape != ids.shape:
            raise ArgumentError(f"{name} must have the shape of input_word_ids.", field=name)
        if value.size == 0:
            raise ArgumentError(f"{name} is empty (batch, choices and sequence length "
                                "must be >= 1).", field=name)
        size, what = limits[name]
        if value.min() < 0 or value.max() >= size:
            raise ArgumentError(f"{name} must be in [0, {size}) ({what}).", field=name)
    if ids.shape[-1] > config["max_position_embeddings"]:
        raise ArgumentError(f"sequences are longer than the model's "
                            f"{config['max_position_embeddings']} positions.",
                            field="input_word_ids")
    if not (mask.max(axis=-1) > 0).all():
        raise ArgumentError("every row of input_mask needs a 1 (its [CLS] at least).",
                            field="input_mask")
    return {name: value.astype(np.int32) for name, value in arrays.items()}


def check_text(inputs: dict, card: dict) -> dict:
    """`serve_text`'s inputs as numpy arrays of bytes at the ranks the card's signature
    gives: `text` (and `text_pair`) [batch], and a [batch, n >= 1] input such as
    multiple choice's `endings`, batch >= 1; else `ArgumentError` naming it."""
    specs = card["signatures"]["serve_text"]["inputs"]
    arrays = {}
    for name, value in inputs.items():
        value = np.asarray(value, dtype=object)
        rank = len(specs[name]["shape"])
        if value.ndim != rank or 0 in value.shape or len(value) != len(inputs["text"]):
            raise ArgumentError(f"{name} must be a {rank}-D batch of strings with one "
                                f"{'row' if rank == 2 else 'string'} per text and at least "
                                f"one string, got shape {value.shape}.", field=name)
        try:
            arrays[name] = np.vectorize(_utf8, otypes=[object])(value)
        except TypeError as e:
            raise ArgumentError(f"{name} must hold strings: {e}", field=name) from None
    return arrays


def _utf8(value):
    if isinstance(value, (str, bytes)):
        return value.encode("utf-8") if isinstance(value, str) else value
    raise TypeError(f"{type(value).__name__} is not str or bytes")
