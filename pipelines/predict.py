"""Predict with a fine-tuned model on a file in the task's own layout.

GLUE: --input is a TSV in the task's layout with its header (a label column, if
present, is ignored); --output gets `index<TAB>prediction` rows, one per input row in
input order, each prediction written as the data writes labels (`0`/`1`, `entailment`,
a number for STS-B). SQuAD: --input is SQuAD JSON; --output is the `predictions.json`
(question id -> answer text; `nbest_predictions.json` and, for v2.0, `null_odds.json`
beside it). NER: CoNLL text in, `word gold prediction` lines out. SWAG: CSV in,
`index,prediction` out. classification: a TSV or CSV with the run's text column(s)
(the label column may be left out; labels given must be the run's) in,
`index<TAB>label` out (the `id` column, else the row number); tagging: words one per
line (tags optional; tags given must be the run's) in, `word prediction` lines out.

Example:

    keras-bert predict --model runs/sst2 --task sst2 --input reviews.tsv \\
        --output predictions.tsv
"""

from __future__ import annotations

import argparse

from keras_bert.pipelines.plumbing import (
    add_options,
    library_logging,
    require_directory,
    require_file,
    require_output_file,
)
from keras_bert.pipelines.plumbing.finetune_flags import add_eval_batch_size
from keras_bert.tasks.finetuning.options import PredictOptions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, PredictOptions)
    add_eval_batch_size(parser)


def run(args: argparse.Namespace) -> int:
    from keras_bert.core.errors import DataError
    from keras_bert.tasks.finetuning import load_finetuned, predict_split

    require_directory(args.model, "--model")
    require_file(args.input, "--input")
    require_output_file(args.output, "--output")
    with library_logging():
        finetuned = load_finetuned(args.model, task=args.task)
        task = finetuned.task
        examples = task.read_examples(args.input, labelled=False)
        if not examples:
            raise DataError("holds no examples.", path=args.input)
        predictions = predict_split(task, finetuned.model, examples,
                                    finetuned.featurize(examples, args.input),
                                    finetuned.settings,
                                    args.eval_batch_size)
    task.write_predictions(examples, predictions, args.output)
    print(f"Wrote {len(predictions)} predictions to {args.output}.")
    return 0
