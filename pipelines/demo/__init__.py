"""BERT's whole story on text found on this machine: pretrain, fine-tune, beat a
baseline, export, serve. No network; about 8 minutes on 2 AVX2 CPU cores.

1. corpus: the English docstrings of the installed Python standard library, numpy,
   tensorflow and keras (parsed with `ast`, never imported), one document per module
   (all its docstrings in source order), short modules joined with the next ones into
   documents of 40+ sentences, so that next-sentence pairs are half "random next" as in
   the paper (the balance is printed). 1 document in 10 is held out.
2. a WordPiece vocab learned from it (`keras_bert.text.vocab_learning`);
3. masked-LM / next-sentence TFRecords (`keras_bert.data.pretraining`; every pair
   fills the sequence: short_seq_prob 0, see
   `demo.stages.write_tfrecords`);
4. a tiny BERT (L2/H64, 4 heads) pretrained under the default tf.distribute strategy
   (`keras_bert.training.Pretraining`);
5. held-out masked-LM and next-sentence accuracy, untrained and trained, next to their
   trivial baselines (always guess the most frequent masked token of the training
   data; always the majority next-sentence label), and masked-word guesses;
6. a derived task, "which library does this docstring sentence come from?"
   (written in the generic `classification` task's layout, train.tsv and dev.tsv with
   `text` and `label` columns; balanced classes; training sentences from the
   pretraining documents, held-out ones from the held-out documents; sentences that
   name a library left out), fine-tuned as that task with `Finetuning`
   (what `keras-bert finetune` runs) from the pretrained encoder and from a random one
   with the same steps, learning rate and seed, and both held-out accuracies printed
   next to the majority class: the paper's claim in miniature;
7. the fine-tuned model exported by `keras_bert.export` to
   `--export_dir/demo/VERSION/` (default saved_models/demo/VERSION/), reloaded with
   `tf.saved_model.load`, and two held-out sentences classified through its
   `serve_text` signature;
8. the attention of one sentence (`keras_bert.plotting`: a PNG per layer, every head)
   and the training curves drawn, and every artifact's path printed with what to run
   next.

Every number printed is also in OUTPUT_DIR/demo_metrics.json. A rerun into the same
--output_dir reuses the finished steps (the settings must be the same).

Example:

    keras-bert demo
    keras-bert demo --output_dir /tmp/demo --num_train_steps 300 --json > progress.jsonl
"""

from __future__ import annotations

# The demo's folder: this module is the subcommand (its docstring the command's help);
# `job` holds what every stage shares (`DemoSettings`, recorded in the output directory;
# `DemoOptions`, the flags declared once; the artifacts' paths, stage headers, report),
# `corpus` the docstring corpus, its held-out documents and the derived task's examples,
# `stages` the stages from the corpus to the pictures, and `evaluation` held-out
# masked-LM and next-sentence accuracy next to trivial baselines.
import argparse
import dataclasses
import json
import os
import time

from keras_bert.core.fileio import write_json
from keras_bert.pipelines.demo.job import (
    DemoJob,
    DemoOptions,
    DemoSettings,
    StageLog,
    check_directory,
    demo_paths,
    settings_from_args,
)
from keras_bert.pipelines.demo.stages import (
    build_corpus,
    draw_pictures,
    evaluate_heldout,
    export_and_serve,
    finetune,
    learn_wordpiece_vocab,
    pretrain,
    write_tfrecords,
)
from keras_bert.pipelines.plumbing import (
    add_options,
    emit,
    library_logging,
    removed_on_error,
    require_output_directory,
    say,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, DemoOptions)


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    if len(settings.sources) < 2:
        from keras_bert.core.errors import ArgumentError

        raise ArgumentError("--sources needs two or more sources: the derived task tells "
                            "them apart.", field="sources")
    out = os.path.abspath(args.output_dir)
    require_output_directory(out, "--output_dir")
    require_output_directory(args.export_dir, "--export_dir")
    with removed_on_error(out), library_logging():
        return _run(args, settings, out)


def _run(args: argparse.Namespace, settings: DemoSettings, out: str) -> int:
    check_directory(out, settings)
    job = DemoJob(settings=settings, out=out, export_dir=args.export_dir,
                  progress=args.progress, stages=StageLog(), paths=demo_paths(out),
                  report={"settings": {**dataclasses.asdict(settings),
                                       "sources": list(settings.sources)}})
    build_corpus(job)
    learn_wordpiece_vocab(job)
    write_tfrecords(job)
    pretrained, untrained = pretrain(job)
    tokenizer = evaluate_heldout(job, pretrained, untrained)
    task = finetune(job)
    version_dir, picked = export_and_serve(job, task)
    draw_pictures(job, tokenizer, picked[0].text_a)
    job.stages.end()
    summarize(job, version_dir)
    return 0


def summarize(job: DemoJob, version_dir: str) -> None:
    """The timings, demo_metrics.json (every number printed), the artifacts' paths and
    what to run next."""
    paths, stages, report = job.paths, job.stages, job.report
    balance, finetuned = report["nsp_label_balance"], report["finetune"]
    stages.timings["total_s"] = round(time.monotonic() - stages.started, 1)
    stages.timings["total_cpu_s"] = round(time.process_time() - stages.cpu_started, 1)
    report["timings"] = stages.timings
    report["paths"] = {**paths, "saved_model": version_dir}
    report = json.loads(json.dumps(report, default=float))  # numpy scalars as numbers
    write_json(paths["metrics"], report, sort_keys=False)
    emit("result", metrics=paths["metrics"], heldout=report["heldout"],
         nsp_label_balance=balance, finetune=finetuned, export=report["export"])

    print(f"\nDone in {stages.timings['total_s'] / 60:.1f} min. Outputs:")
    for name in ("corpus", "vocab", "train_data", "pretrain_run", "task_data",
                 "finetune_pretrained", "finetune_random", "attention", "plots", "metrics"):
        print(f"  {name + ':':<21} {paths[name]}")
    print(f"  {'saved_model:':<21} {version_dir}")
    say("\nNext:")
    say(f"  tensorboard --logdir {os.path.join(paths['pretrain_run'], 'logs')}")
    say(f"  keras-bert attention --model {paths['pretrain_run']} \"Returns a copy of the "
        f"array.\" --output_dir {os.path.join(job.out, 'attention_2')}")
    say(f"  keras-bert plot {paths['finetune_pretrained']}")
    say(f"  keras-bert encode --model {paths['pretrain_run']} \"Opens a file.\" "
        "\"Reads a file.\"")
    say(f"  saved_model_cli show --dir {version_dir} --signature_def serve_text "
        "--tag_set serve")
