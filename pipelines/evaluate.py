"""Score a fine-tuned model on a task's dev split(s) with the official metrics.

--model is the output directory of `keras-bert finetune`; --data_dir holds the task's
files in the benchmark's layout (its dev split is read: GLUE dev.tsv, MNLI
dev_matched.tsv and dev_mismatched.tsv, SQuAD dev-v1.1.json / dev-v2.0.json, CoNLL
valid.txt, SWAG val.csv; your own data: classification dev.tsv or dev.csv, tagging
dev.txt, embedding pairs dev.tsv or dev.csv). For the sentence-embedding tasks (--task
sts: STS-B-style dev.tsv, Spearman of the cosine; --task embedding: your pairs, scored
or by retrieval) --model may also be a sentence-transformers folder or any checkpoint. metrics.json in --model is rewritten (atomically) with the
new scores; --output_dir writes it, and the dev predictions, elsewhere instead.

Example:

    keras-bert evaluate --model runs/mrpc --task mrpc --data_dir glue/MRPC
    keras-bert evaluate --task sts --model all-MiniLM-L6-v2/ --data_dir glue/STS-B \
        --output_dir scores/
"""

from __future__ import annotations

import argparse
import os

from keras_bert.pipelines.plumbing import (
    add_options,
    library_logging,
    require_directory,
    require_output_directory,
)
from keras_bert.pipelines.plumbing.finetune_flags import add_eval_batch_size, require_task_data
from keras_bert.tasks.finetuning.options import EvaluateOptions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, EvaluateOptions, only=("model", "task", "data_dir", "tfds",
                                               "tfds_data_dir", "output_dir"))
    add_eval_batch_size(parser)
    add_options(parser, EvaluateOptions, only=("progress",))


def run(args: argparse.Namespace) -> int:
    from keras_bert.core.run_files import METRICS
    from keras_bert.tasks.finetuning import (
        TaskSource,
        dev_metrics,
        metrics_summary,
        prediction_file,
        score_split,
        write_metrics,
    )
    from keras_bert.tasks.finetuning.run_directory import scoring_model

    require_directory(args.model, "--model")
    require_task_data(args)
    if args.output_dir:
        require_output_directory(args.output_dir, "--output_dir")
    with library_logging():
        finetuned = scoring_model(args.model, task=args.task)
        task = finetuned.task
        source = TaskSource(task, args.data_dir, args.tfds, args.tfds_data_dir)
        splits = []
        for split in task.dev_splits:
            where, examples = source.read(split)
            splits.append((split, examples, finetuned.featurize(examples, where)))
        results = {split: score_split(task, finetuned.model, examples, features,
                                      finetuned.settings, args.eval_batch_size,
                                      progress=args.progress)
                   for split, examples, features in splits}
    metrics = dev_metrics({split: results[split]["metrics"] for split in task.dev_splits})
    metrics["task"] = task.name
    target = args.output_dir or args.model
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
        for split, examples, _ in splits:
            task.write_predictions(examples, results[split]["predictions"],
                                   os.path.join(args.output_dir, prediction_file(task, split)))
    print(f"{task.name} dev: {metrics_summary(task, metrics)}")
    if args.output_dir or finetuned.record:  # a model that is no run is left as it is
        write_metrics(os.path.join(target, METRICS), metrics)
        print(f"Metrics: {os.path.join(target, METRICS)}")
    return 0
