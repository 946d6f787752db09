"""What `keras-bert export` is asked for, declared once (`ExportOptions`): the format and
its quantization, the checkpoint, where and under which name the export goes, and the
serving settings; the command builds its flags from these declarations
(`keras_bert.core.checks.option`)."""

from __future__ import annotations

import dataclasses

from keras_bert.core.checks import REQUIRED, option
from keras_bert.core.precision import PRECISIONS
from keras_bert.text.options import WINDOWED_INPUTS

# format -> what it writes.
FORMATS = {
    "saved_model": "a SavedModel for TF Serving and TF Hub (default)",
    "litert": "model.tflite for LiteRT (TensorFlow Lite), tensorflow-text's LiteRT "
              "kernels and built-in ops only",
    "onnx": "model.onnx of the ids signature (serving_default) through tf2onnx, float32 "
            "(pip install 'keras_bert[onnx]')",
}
# Python's `export(format="tf_saved_model")` (keras-hub's name) works on the command line.
FORMAT_ALIASES = {"tf_saved_model": "saved_model"}
# LiteRT's converter quantizes a .tflite; Keras's `model.quantize(mode)` a SavedModel.
LITERT_QUANTIZE = ("dynamic_int8", "float16")
KERAS_QUANTIZE = ("int8", "int4", "float8")
QUANTIZE = ("none", *LITERT_QUANTIZE, *KERAS_QUANTIZE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportOptions:
    """An export: `checkpoint` (required) written as `format` under
    `output_dir`/`name`/VERSION/, with the serving settings of the SavedModel."""

    format: str = option("saved_model", "; ".join(f"{k}: {v}" for k, v in FORMATS.items())
                         + " (also spelled tf_saved_model)",
                         choices=sorted([*FORMATS, *FORMAT_ALIASES]))
    quantize: str = option(
        "none", "none (float32); litert: dynamic_int8 (int8 weights, embeddings included, "
        "float activations) or float16 weights; saved_model: int8, int4 or float8, the "
        "model's Keras quantization (model.quantize) before the export (default: "
        "%(default)s)",
        choices=QUANTIZE)
    checkpoint: str = option(
        REQUIRED, "a `keras-bert finetune` output directory, or an encoder checkpoint: "
        "Hugging Face directory, Google TF1 or tf-models-official TF2 checkpoint, keras_bert "
        "directory, or a `keras-bert pretrain` run directory or training checkpoint "
        "(RUN/checkpoints/ckpt-STEP; RUN/checkpoints for the newest)")
    output_dir: str = option("saved_models",
                             "where NAME/VERSION/ is written (default: %(default)s)")
    name: str | None = option(None, "model name, the directory under --output_dir (default: "
                                    "the checkpoint's directory name)")
    precision: str = option(
        "float32", "float32, or mixed_bfloat16: bfloat16 compute with float32 weights, "
        "inputs and outputs (CPUs with AMX/AVX512-BF16, GPUs) (default: %(default)s)",
        choices=PRECISIONS)
    max_seq_length: int | None = option(
        None, "tokens per sequence for serve_text, [CLS]/[SEP] included; longer texts are "
        f"truncated, except {WINDOWED_INPUTS}, read in windows "
        "(default: the fine-tuning run's, else 128)", at_least=1)
    vocab_file: str | None = option(
        None, "vocab.txt of an encoder checkpoint (default: the one beside it); with a "
        "fine-tuning run, only a copy of the run's own")
    do_lower_case: bool | None = option(
        None, "lower-case and strip accents; auto reads the checkpoint's "
        "tokenizer_config.json, else assumes uncased (fine-tuned runs keep theirs)")
    xla: bool = option(False, "compile the model part of the signatures with XLA")
    serve_text: bool = option(
        True, "add the serve_text signature (raw strings; needs a model server with "
        "tensorflow-text's ops); without it only serving_default (ids)")
    serving_compatible: bool = option(
        False, "tokenize in serve_text with TensorFlow core ops only, so that any stock TF "
        "Serving loads the model (same ids, slower tokenizing); by default "
        "serve_text uses tensorflow-text's FastBertNormalize and "
        "FastWordpieceTokenizeWithOffsets, registered by stock TF Serving 2.12 and "
        "later (the model card's `ops` lists them)")
    warmup: bool | None = option(
        None, "write assets.extra/tf_serving_warmup_requests (needs tensorflow-serving-api, "
        "the `export` extra); auto writes it when that is installed and says so when "
        "it is not")
