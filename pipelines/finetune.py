"""Fine-tune a pretrained BERT on one of the paper's tasks and score it on dev.

Tasks: GLUE (cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli) from the benchmark's
TSV files, SQuAD v1.1/v2.0 (squad1, squad2) from its JSON files, CoNLL-2003 NER (ner)
and SWAG (swag). --data_dir holds the task's files as the benchmark distributes them
(e.g. GLUE's SST-2/ with train.tsv and dev.tsv; SQuAD's train-v1.1.json and
dev-v1.1.json; CoNLL's train.txt, valid.txt, test.txt; SWAG's train.csv, val.csv).

Your own labelled data: --task classification reads train.tsv (or .csv) and dev.tsv
(or .csv) with a header naming a `text` column (or `text_a` and `text_b` for pairs)
and a `label` column (`keras_bert.tasks.glue.table`); --task tagging reads train.txt
and dev.txt, a word and its tag per line and a blank line between sentences
(`keras_bert.tasks.tagging.generic`). Their label sets are learnt from the training
file and saved with the run.

Defaults are the paper's recipe: batch 32, 3 epochs, 10% warmup then linear decay,
AdamW with weight decay 0.01 (not on LayerNorm and biases), dropout 0.1. The output
directory receives the fine-tuned model (model.keras, vocab.txt,
finetune_config.json), metrics.json with the official dev metrics, and the dev
predictions in the benchmark's submission format; `keras-bert evaluate`, `predict`
and `export` take it as --model.

Shapes: each batch is cut to its longest sequence and the train and predict steps are
traced once over relaxed shapes, so batches of every length (the short last one too)
share one trace; training batches group similar lengths (--group_by_length=false
turns that off), dev batches run shortest first. metrics.json reports the traces and
the seconds they took (trace_seconds). Under KERAS_BACKEND=jax (or torch), which
compile each shape anew, a batch's length is rounded up to a quarter of
--max_seq_length (at least 16): a few compiled lengths; the model written is the same
model.keras, which `evaluate`, `predict` and `export` read on the TensorFlow backend.

Interruptions: SIGTERM (a preemption notice) stops the run as Ctrl-C does, removes its
temporary files and exits 143 (Ctrl-C: 130), leaving nothing beside --output_dir.
Fine-tuning does not resume mid-run: the same command run again starts the run over,
and first removes what a killed run (kill -9) left.

Example:

    keras-bert finetune --task mrpc --data_dir glue/MRPC \\
        --checkpoint uncased_L-12_H-768_A-12 --output_dir runs/mrpc --learning_rate 2e-5
    keras-bert finetune --task classification --data_dir my_reviews \\
        --checkpoint uncased_L-12_H-768_A-12 --output_dir runs/reviews
"""

from __future__ import annotations

import argparse
import os
import sys

from keras_bert.core.errors import OutputError
from keras_bert.pipelines.plumbing import (
    EXIT_INTERRUPTED,
    SIGNAL_EXIT_CODES,
    add_options,
    blame,
    emit,
    json_progress_callback,
    library_logging,
    options_from_args,
)
from keras_bert.pipelines.plumbing.finetune_flags import require_task_data
from keras_bert.tasks.finetuning.options import FinetuneJobOptions, FinetuneOptions

# The flags of `FinetuneJobOptions` shown before the hyperparameters (`FinetuneOptions`);
# its other flags follow them.
FIRST_FLAGS = ("task", "data_dir", "tfds", "tfds_data_dir", "checkpoint", "preset",
               "vocab_file", "output_dir", "do_lower_case")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, FinetuneJobOptions, only=FIRST_FLAGS)
    add_options(parser, FinetuneOptions)
    add_options(parser, FinetuneJobOptions, only=("overwrite", "progress"))


def run(args: argparse.Namespace) -> int:
    from keras_bert.tasks.finetuning import Finetuning, metrics_summary

    require_task_data(args)
    options = options_from_args(FinetuneOptions, args)
    with library_logging():
        with blame("output_dir", OutputError):  # e.g. it holds another run: --overwrite
            finetuning = Finetuning(
                args.task, args.data_dir, args.output_dir, checkpoint=args.checkpoint,
                preset=args.preset, options=options, vocab_file=args.vocab_file,
                lower_case=args.do_lower_case, overwrite=args.overwrite,
                progress=args.progress, tfds=args.tfds, tfds_data_dir=args.tfds_data_dir)
        # --json: a progress event per epoch (with the dev metrics as val_*).
        progress = json_progress_callback(
            "finetune", round(finetuning.steps_per_epoch() * options.num_train_epochs),
            every=50)
        try:
            # Another run may have written --output_dir meanwhile: nothing is replaced.
            with blame("output_dir", OutputError):
                metrics = finetuning.run(callbacks=[progress] if progress else [])
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (RunTerminated)
            return _stopped(getattr(e, "signal_name", "SIGINT"), args.output_dir)
    shown = metrics_summary(finetuning.task, metrics)
    print(f"{args.task} dev: {shown} (seed {metrics['seed']}, {metrics['train_seconds']:.0f} s)")
    print(f"Model and predictions: {os.path.abspath(args.output_dir)}")
    return 0


def _stopped(signal_name: str, output_dir: str) -> int:
    """Reports a run stopped by a signal (its temporaries already removed) and returns
    the exit code."""
    what = "terminated by SIGTERM" if signal_name == "SIGTERM" else "interrupted"
    message = (f"{what}; its temporary files are removed and --output_dir "
               f"{os.path.abspath(output_dir)!r} is as it was. Fine-tuning does not resume "
               "mid-run: run the same command again to start it over.")
    code = SIGNAL_EXIT_CODES.get(signal_name, EXIT_INTERRUPTED)
    print(f"\nkeras-bert finetune: {message}", file=sys.stderr)
    emit("error", exit_code=code, message=message)
    return code
