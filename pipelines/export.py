"""Export an encoder or a fine-tuned model as a SavedModel for TF Serving and TF Hub.

Writes OUTPUT_DIR/NAME/VERSION/ (TF Serving's layout; VERSION is one more than the
highest existing one, nothing is overwritten) with the signatures `serving_default`
(token ids: input_word_ids, input_mask, input_type_ids; [batch, choices, seq] for a
multiple-choice model) and `serve_text` (raw strings: text, and text_pair for pair
tasks; text, text_pair and endings [batch, endings] for multiple choice), the TF
Serving warmup requests and the model card
assets.extra/keras_bert.json, which is printed. The SavedModel needs only TensorFlow and
tensorflow-text where it runs. An encoder also gets VERSION/preprocessor/, a TF
Hub-style preprocessing SavedModel (tokenize, bert_pack_inputs).

Example:

    keras-bert export --checkpoint runs/sst2 --output_dir saved_models
    keras-bert export --checkpoint uncased_L-12_H-768_A-12 --name bert_base \\
        --precision mixed_bfloat16
"""

from __future__ import annotations

import argparse
import json
import os
import re
import warnings

from keras_bert.errors import InputNotFoundError
from keras_bert.pipelines.flags import (
    add_boolean,
    library_logging,
    positive_int,
    require_file,
    require_output_directory,
)
from keras_bert.precision import PRECISIONS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--checkpoint", required=True,
        help="a `keras-bert finetune` output directory, or an encoder checkpoint: Hugging "
             "Face directory, Google TF1 or tf-models-official TF2 checkpoint, or keras_bert "
             "directory")
    add("--output_dir", default="saved_models",
        help="where NAME/VERSION/ is written (default: %(default)s)")
    add("--name", help="model name, the directory under --output_dir (default: the "
                       "checkpoint's directory name)")
    add("--precision", default="float32", choices=PRECISIONS,
        help="float32, or mixed_bfloat16: bfloat16 compute with float32 weights, inputs "
             "and outputs (CPUs with AMX/AVX512-BF16, GPUs) (default: %(default)s)")
    add("--max_seq_length", type=positive_int,
        help="tokens per sequence for serve_text, [CLS]/[SEP] included; longer texts are "
             "truncated, except SQuAD passages and NER sentences, read in windows "
             "(default: the fine-tuning run's, else 128)")
    add("--vocab_file", help="vocab.txt of an encoder checkpoint (default: the one beside it)")
    add_boolean(parser, "do_lower_case", None,
                "lower-case and strip accents; auto reads the checkpoint's "
                "tokenizer_config.json, else assumes uncased (fine-tuned runs keep theirs)")
    add_boolean(parser, "xla", False, "compile the model part of the signatures with XLA")
    add_boolean(parser, "serve_text", True,
                "add the serve_text signature (raw strings; needs a model server with "
                "tensorflow-text's ops); without it only serving_default (ids)")
    add_boolean(parser, "serving_compatible", False,
                "tokenize in serve_text with TensorFlow core ops only, so that any stock TF "
                "Serving loads the model (same ids, slower tokenizing); by default "
                "serve_text uses tensorflow-text's FastBertNormalize and "
                "FastWordpieceTokenizeWithOffsets, registered by stock TF Serving 2.12 and "
                "later (the model card's `ops` lists them)")
    add_boolean(parser, "warmup", None,
                "write assets.extra/tf_serving_warmup_requests (needs tensorflow-serving-api, "
                "the `export` extra); auto writes it when that is installed and says so when "
                "it is not")


def default_name(checkpoint: str) -> str:
    """A model name from a checkpoint path: its directory name, cleaned up."""
    path = os.path.normpath(os.path.abspath(checkpoint))
    if os.path.isfile(path) or os.path.isfile(path + ".index"):
        path = os.path.dirname(path)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(path)).lstrip(".-") or "model"
    return f"model_{name}" if name.isdigit() else name


def run(args: argparse.Namespace) -> int:
    from keras_bert import export

    # Everything is checked before any weights load.
    checkpoint = args.checkpoint
    if not os.path.exists(checkpoint) and not os.path.isfile(checkpoint + ".index"):
        raise InputNotFoundError(f"--checkpoint {checkpoint!r} does not exist.")
    if args.vocab_file:
        require_file(args.vocab_file, "--vocab_file")
    name = export.check_name(args.name or default_name(checkpoint))
    require_output_directory(args.output_dir, "--output_dir")
    require_output_directory(os.path.join(args.output_dir, name), "--output_dir/--name")
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
        source = export.load_export_source(
            checkpoint, precision=args.precision, max_seq_length=args.max_seq_length,
            vocab_file=args.vocab_file, lower_case=args.do_lower_case)
        path, card = export.export_saved_model(
            source, args.output_dir, name, precision=args.precision, jit_compile=args.xla,
            warmup=warmup, text=args.serve_text,
            serving_compatible=args.serving_compatible)
    print(json.dumps(card, indent=2, sort_keys=True))
    print(f"Exported {card['kind']} to {path}")
    return 0
