"""The run directory `Finetuning.run` writes and `load_finetuned` reads back (its file
names are `keras_bert.checkpoints.finetuning_runs`'s, where the opener reads runs), the
check that an output directory may receive a run, the clearing of what a killed run left
beside it, and `FinetunedModel`, the loaded run that `keras-bert evaluate`, `predict`,
`export` and `attention` start from.
"""

from __future__ import annotations

import dataclasses
import logging
import os

import keras

from keras_bert.checkpoints.finetuning_runs import check_finetuning_run
from keras_bert.core import fileio
from keras_bert.core.errors import MismatchError, OutputError, Setting
from keras_bert.core.run_files import FINETUNE_CONFIG, FINETUNE_LOGS_SUFFIX
from keras_bert.tasks.base import Features, FeatureSettings, Task, log_truncation
from keras_bert.tasks.finetuning.options import FinetuneOptions
from keras_bert.tasks.registry import get_task, register_task_models
from keras_bert.tasks.text_preprocessor import TextPreprocessor
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.vocab import VOCAB_FILE

logger = logging.getLogger("keras_bert")


def temporary_logs(output_dir: str) -> str:
    """A fresh hidden directory name beside `output_dir` for the run's logs."""
    return fileio.temporary_path(output_dir + FINETUNE_LOGS_SUFFIX)


def remove_leftovers(output_dir: str) -> list[str]:
    """Clears what an earlier run of `output_dir` left when it was killed (kill -9, a
    lost machine: no cleanup ran): the hidden temporaries beside it of the run directory,
    its logs and a replaced run moved aside, when the process that wrote them has ended
    (a run at work in the same output_dir keeps its own). A replaced run found moved aside while
    `output_dir` is missing (killed in the middle of `overwrite`'s two renames) is put
    back first. Returns the removed paths. Fine-tuning does not resume mid-run: a rerun
    starts clean."""
    parent, name = os.path.split(os.path.abspath(output_dir))
    if not os.path.isdir(parent):
        return []
    # fileio.atomic_directory moves a replaced directory aside as ".<name>.old.tmp-*/previous".
    aside = name + ".old"
    if not os.path.exists(output_dir):
        for entry in sorted(os.listdir(parent)):
            previous = os.path.join(parent, entry, "previous")
            pid = fileio.temporary_writer(entry)
            if (fileio.temporary_target(entry) == aside and os.path.isdir(previous)
                    and (pid is None or not fileio.process_alive(pid))):
                os.replace(previous, output_dir)
                logger.warning("Restored %s, the run an interrupted overwrite had moved "
                               "aside.", output_dir)
                break
    owned = {name, name + FINETUNE_LOGS_SUFFIX, aside}
    # Another run of this output_dir may be at work: only an ended process's leftovers.
    removed = fileio.remove_dead_temporaries(parent, owned=lambda target: target in owned,
                                             unmarked=True)
    for path in removed:
        logger.info("Removed %s, left by an interrupted run.", path)
    return removed


def check_output_dir(output_dir: str, overwrite: bool) -> None:
    """Refuses an `output_dir` that cannot be written, or that holds files (another
    run's or not) unless `overwrite`."""
    fileio.check_writable(output_dir, kind="directory", what="output_dir")
    if os.path.isdir(output_dir) and os.listdir(output_dir) and not overwrite:
        what = "another fine-tuning run" if os.path.isfile(
            os.path.join(output_dir, FINETUNE_CONFIG)) else "files"
        raise OutputError.advising(
            f"output_dir {output_dir!r} already holds {what}; choose a new directory, or "
            "pass ", Setting("overwrite", True), " to replace it once the new run is "
            "complete.")


@dataclasses.dataclass
class FinetunedModel:
    """A fine-tuned run directory, loaded: the model, its task (with its saved config),
    tokenizer and feature settings."""

    path: str
    model: keras.Model
    task: Task
    tokenizer: BertTokenizer
    settings: FeatureSettings
    record: dict

    def featurize(self, examples, where: str = "input") -> Features:
        """The examples' features; how many truncation cut is logged (for `where`)."""
        features = self.task.features(examples, self.tokenizer, self.settings)
        log_truncation(features, self.settings.max_seq_length, where)
        return features


def scoring_model(path: str, task: str | None = None) -> FinetunedModel:
    """What `keras-bert evaluate` and `predict` score: the run directory `path`
    (`load_finetuned`); for the embedding family's tasks (`embedding`, `sts`) also any
    model `BertTextEmbedder.from_preset` opens (a sentence-transformers folder, a
    checkpoint, a saved embedder, a run of either task), read and scored as `task`."""
    if task is None or get_task(task).family != "embedding":
        return load_finetuned(path, task)
    register_task_models()
    from keras_bert.tasks.registry import task_model_class

    model = task_model_class("embedding", "BertTextEmbedder").from_preset(path)
    preprocessor = model.preprocessor
    return FinetunedModel(path, model, get_task(task), preprocessor.tokenizer,
                          preprocessor.settings, {})


def restore_run(path: str, record: dict, task: str | None = None
                ) -> tuple[Task, FinetuneOptions]:
    """The task (with its saved config) and the options of the run directory `path`
    whose record (`check_finetuning_run`) is `record`; `task`, when given, must be the
    task it was trained on."""
    if task is not None and task != record["task"]:
        raise MismatchError(f"{path!r} was fine-tuned for {record['task']!r}, not {task!r}.")
    saved = get_task(record["task"])
    saved.restore(record.get("task_config", {}))
    return saved, FinetuneOptions(**record["options"])


def load_finetuned(path: str, task: str | None = None) -> FinetunedModel:
    """Loads a directory written by `Finetuning.run`; `task`, when given, must be the
    task it was trained on."""
    from keras_bert.checkpoints.opener import open_artifact

    check_finetuning_run(path)  # names what a directory lacks to be a run
    return load_run(open_artifact(path), task)


def load_run(run, task: str | None = None) -> FinetunedModel:
    """Loads the fine-tuning run `run` (an `Artifact` of `open_artifact`): its
    model.keras, the task model with its preprocessor (task, vocabulary, casing,
    settings), as `keras.saving.load_model` gives it. A run written before the model
    held its preprocessor (release 9273a48 and earlier) gets one from its record and
    vocab.txt: the one reader of that layout."""
    # The task models register their Keras classes when their modules are imported.
    register_task_models()
    path, record = run.path, run.record
    saved, options = restore_run(path, record, task)
    model = run.load()
    if model.preprocessor is None:  # the layout of release 9273a48 and earlier
        tokenizer = BertTokenizer(os.path.join(path, VOCAB_FILE),
                                  lower_case=record["lower_case"])
        model.preprocessor = TextPreprocessor(saved, tokenizer, options.feature_settings())
    elif model.preprocessor.task.name != saved.name:
        raise MismatchError(f"{path!r} holds a {model.preprocessor.task.name} model, but its "
                            f"{FINETUNE_CONFIG} records the task {saved.name!r}; copy the "
                            "run again, or re-run `keras-bert finetune`.")
    preprocessor = model.preprocessor
    return FinetunedModel(path, model, preprocessor.task, preprocessor.tokenizer,
                          preprocessor.settings, record)
