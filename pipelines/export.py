"""Export an encoder or a fine-tuned model as a SavedModel for TF Serving and TF Hub.

Writes OUTPUT_DIR/NAME/VERSION/ (TF Serving's layout; VERSION is one more than the
highest existing one, nothing is overwritten) with the signatures `serving_default`
(token ids: input_word_ids, input_mask, input_type_ids; [batch, choices, seq] for a
multiple-choice model) and `serve_text` (raw strings: text, and text_pair for pair
tasks; text, text_pair and endings [batch, endings] for multiple choice), the TF
Serving warmup requests and the model card
assets.extra/keras_bert.json, which is printed (with --quiet, only where it went). The SavedModel needs only TensorFlow and
tensorflow-text where it runs. An encoder also gets VERSION/preprocessor/, a TF
Hub-style preprocessing SavedModel (tokenize, bert_pack_inputs).

With `--format litert` it writes OUTPUT_DIR/NAME/VERSION/model.tflite instead (LiteRT,
TensorFlow Lite: the same two signatures, tensorflow-text's LiteRT kernels and built-in
ops only) with the same model card, its weights optionally quantized (`--quantize
dynamic_int8` or `float16`); see keras_bert.export.litert. A SavedModel's weights are
quantized by the model's own Keras quantization with `--quantize int8`, `int4` or
`float8` (as `model.quantize(mode)` then `model.export(...)` in Python). With `--format onnx`:
OUTPUT_DIR/NAME/VERSION/model.onnx, the ids signature (serving_default) converted by
tf2onnx (the `onnx` extra), float32; see keras_bert.export.onnx.

A task model saved in Python (`model.save("embedder.keras")`: a sentence embedder, a
classifier) exports from its `.keras` file in every format, as its `export()` writes
it (its own tokenizer and length: --vocab_file and --do_lower_case do not apply).

Example:

    keras-bert export --checkpoint runs/sst2 --output_dir saved_models
    keras-bert export --checkpoint uncased_L-12_H-768_A-12 --name bert_base \\
        --precision mixed_bfloat16
    keras-bert export --checkpoint runs/sst2 --format litert --quantize dynamic_int8
    keras-bert export --checkpoint runs/sst2 --quantize int8
    keras-bert export --checkpoint runs/sst2 --format onnx
    keras-bert export --checkpoint minilm_embedder.keras --format litert \\
        --quantize dynamic_int8
"""

from __future__ import annotations

import argparse
import json
import os
import re
import warnings

from keras_bert.core import stopping
from keras_bert.core.errors import ArgumentError, InputNotFoundError
from keras_bert.export.options import (
    FORMAT_ALIASES,
    KERAS_QUANTIZE,
    LITERT_QUANTIZE,
    ExportOptions,
)
from keras_bert.pipelines.plumbing import (
    OUTPUT,
    add_options,
    library_logging,
    native_logs_hidden,
    require_file,
    require_output_directory,
)

# The flags that only the SavedModel takes: name -> the value that means "not given".
SAVED_MODEL_ONLY = {"precision": ("float32",), "xla": (False,),
                    "serving_compatible": (False,), "warmup": (None, False)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, ExportOptions)


def default_name(checkpoint: str) -> str:
    """A model name from a checkpoint path: its directory name, cleaned up."""
    path = os.path.normpath(os.path.abspath(checkpoint))
    if is_keras_file(path):
        path = path[:-len(".keras")]  # embedder.keras -> "embedder"
    elif os.path.isfile(path) or os.path.isfile(path + ".index"):
        path = os.path.dirname(path)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(path)).lstrip(".-") or "model"
    return f"model_{name}" if name.isdigit() else name


def run(args: argparse.Namespace) -> int:
    # SIGTERM stops an export as Ctrl-C does (exit 143): the version being written is
    # removed, and so are NAME/ and --output_dir if this export created them. The C++
    # converters' log lines are shown with --debug only.
    with stopping.stop_on_signals(), native_logs_hidden(not args.debug):
        card, path = _export(args)
    if OUTPUT.mode == "text":
        print(json.dumps(card, indent=2, sort_keys=True))
    print(f"Exported {card['kind']} to {path}")
    return 0


def _export(args: argparse.Namespace) -> tuple[dict, str]:
    from keras_bert import export
    from keras_bert.checkpoints.opener import artifact_exists
    from keras_bert.tasks.export_sources import load_export_source

    # Everything is checked before any weights load (a checkpoint by name is fetched
    # when the export loads it).
    checkpoint = args.checkpoint
    args.format = FORMAT_ALIASES.get(args.format, args.format)
    if not artifact_exists(checkpoint):
        raise InputNotFoundError(f"--checkpoint {checkpoint!r} does not exist.")
    if args.vocab_file:
        require_file(args.vocab_file, "--vocab_file")
    if args.name is not None and not args.name.strip():
        raise ArgumentError(f"--name {args.name!r} is empty; give a model name (letters, "
                            "digits, '_', '.', '-') or leave --name out to use the "
                            "checkpoint's directory name.", field="name")
    name = export.check_name(args.name if args.name is not None else default_name(checkpoint))
    require_output_directory(args.output_dir, "--output_dir")
    require_output_directory(os.path.join(args.output_dir, name), "--output_dir/--name")
    check_format_flags(args)
    if is_keras_file(checkpoint):
        return run_keras_file(args, checkpoint, name)
    if args.format != "saved_model":
        return run_other_format(args, checkpoint, name)
    warmup = args.warmup
    if warmup is None:
        warmup = export.serving_api_available()
        if not warmup:
            warnings.warn("no TF Serving warmup file: it needs tensorflow-serving-api "
                          "(pip install 'keras_bert[export]'); the export works without it.",
                          stacklevel=2)
    elif warmup:
        export.check_serving_api()
    with library_logging():
        source = load_export_source(
            checkpoint, precision=args.precision, max_seq_length=args.max_seq_length,
            vocab_file=args.vocab_file, lower_case=args.do_lower_case)
        if args.quantize != "none":  # the model's own Keras quantization
            quantize_model(source.model, args.quantize)
        path, card = export.export_saved_model(
            source, args.output_dir, name, precision=args.precision, jit_compile=args.xla,
            warmup=warmup, text=args.serve_text,
            serving_compatible=args.serving_compatible)
    return card, path


def quantize_model(model, mode: str) -> None:
    """`model.quantize(mode)`, without Keras's notes on the layers that have nothing to
    quantize (LayerNorm, dropout)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.quantize(mode)


def check_format_flags(args: argparse.Namespace) -> None:
    """A flag of another format than --format's is a mistake, not ignored."""
    if args.quantize != "none":
        takes = {"litert": LITERT_QUANTIZE, "saved_model": KERAS_QUANTIZE}.get(args.format, ())
        if args.quantize not in takes:
            raise ArgumentError(
                f"--quantize {args.quantize} is not for --format {args.format}: "
                + (f"it takes {', '.join(takes)}." if takes else "it keeps float weights; "
                   f"--format litert takes {', '.join(LITERT_QUANTIZE)}, --format "
                   f"saved_model {', '.join(KERAS_QUANTIZE)}."), field="quantize")
    if args.format == "onnx":  # before any weights load
        from keras_bert.export.onnx import check_onnx_converter

        check_onnx_converter()
    if args.format != "saved_model":
        given = [k for k, unset in SAVED_MODEL_ONLY.items() if getattr(args, k) not in unset]
        if given:
            raise ArgumentError(f"--{given[0]} is for --format saved_model; --format "
                                f"{args.format} takes none of "
                                f"{', '.join('--' + k for k in SAVED_MODEL_ONLY)}.",
                                field=given[0])


def is_keras_file(path: str) -> bool:
    """Whether `path` is a saved model file (`model.save`'s `.keras`)."""
    return path.endswith(".keras") and os.path.isfile(path)


def run_keras_file(args: argparse.Namespace, checkpoint: str, name: str
                   ) -> tuple[dict, str]:
    """The export of a saved `.keras` task model, through its own `export()`."""
    from keras_bert import export
    from keras_bert.core.fileio import read_json
    from keras_bert.tasks import exporting

    for flag in ("vocab_file", "do_lower_case"):
        if getattr(args, flag) is not None:
            raise ArgumentError(f"--{flag} is for encoder checkpoints: the .keras model "
                                f"{checkpoint!r} keeps its own tokenizer.", field=flag)
    warmup = args.warmup
    if args.format != "saved_model":
        warmup = False
    elif warmup is None:
        warmup = export.serving_api_available()
    elif warmup:
        export.check_serving_api()
    kwargs = {"litert": {"quantize": args.quantize, "text": args.serve_text}, "onnx": {},
              "saved_model": {"precision": args.precision, "jit_compile": args.xla,
                              "warmup": warmup, "text": args.serve_text,
                              "serving_compatible": args.serving_compatible}}[args.format]
    with library_logging():
        model = exporting.load_task_model_file(checkpoint, precision=args.precision,
                                     max_seq_length=args.max_seq_length)
        if args.format == "saved_model" and args.quantize != "none":
            quantize_model(model, args.quantize)
        path = exporting.export(model, os.path.join(args.output_dir, name),
                                format=args.format, **kwargs)
    return read_json(os.path.join(path, "assets.extra", export.MODEL_CARD)), path


def run_other_format(args: argparse.Namespace, checkpoint: str, name: str
                     ) -> tuple[dict, str]:
    """The export of --format other than saved_model (one branch a format)."""
    from keras_bert import export
    from keras_bert.tasks.export_sources import load_export_source

    with library_logging():
        source = load_export_source(
            checkpoint, max_seq_length=args.max_seq_length, vocab_file=args.vocab_file,
            lower_case=args.do_lower_case)
        if args.format == "litert":
            path, card = export.export_litert(source, args.output_dir, name,
                                              quantize=args.quantize, text=args.serve_text)
        else:
            path, card = export.export_onnx(source, args.output_dir, name)
    return card, path
