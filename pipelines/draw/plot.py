"""Draw the loss and metric curves of a pretraining or fine-tuning run as a PNG.

RUN_DIR is the output directory of `keras-bert pretrain` (its TensorBoard event files
under logs/, else train_log.jsonl: loss, masked-LM and next-sentence loss and accuracy,
learning rate, per logged step) or of `keras-bert finetune` (the per-epoch history in
finetune_config.json: the training loss and every dev split's metrics). Writes
training_curves.png (one panel per metric, one line per split) into --output_dir
(default: RUN_DIR/plots). Needs matplotlib (`pip install "keras_bert[plot]"`).

Example:

    keras-bert plot runs/pretrain
    keras-bert plot runs/mrpc --output_dir mrpc_plots
"""


from __future__ import annotations

import argparse
import os
import sys

from keras_bert.pipelines.plumbing import add_options, require_output_directory
from keras_bert.plotting.options import PlotOptions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR",
                        help="output directory of keras-bert pretrain or finetune")
    add_options(parser, PlotOptions)


def run(args) -> int:
    from keras_bert.plotting import read_training_curves, write_training_plots

    output_dir = args.output_dir or os.path.join(args.run_dir, "plots")
    curves = read_training_curves(args.run_dir)  # names a missing or empty RUN_DIR first
    require_output_directory(output_dir, "--output_dir")
    written = write_training_plots(curves, output_dir)  # all files or none
    print(f"{curves.kind} run {args.run_dir}: read {len(curves.sources)} file(s)")
    for metric in curves.metrics:
        last = ", ".join(f"{line} {ys[-1]:.4g} at {curves.x_label} {xs[-1]}"
                         for line, (xs, ys) in curves.curves[metric].items())
        print(f"  {metric}: {last}")
    print(f"wrote {written[0]}")
    sys.stdout.flush()
    return 0

