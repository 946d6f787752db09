"""Every `keras-bert` subcommand's flags come from declared options: each flag but the
shared ones (--help, --quiet, --json, --debug) is a field of an options dataclass,
declared once with `keras_bert.core.checks.option`, and made into the flag by
`keras_bert.pipelines.plumbing.add_options`; and pipelines/ keeps the commands at its
top with two rooms beside them (plumbing/, demo/)."""

import argparse
import dataclasses
import os
import subprocess

import pytest
from conftest import REPO

from keras_bert.cli import COMMANDS, build_parser
from keras_bert.core.checks import declaration
from keras_bert.data.options import PretrainingDataJobOptions, PretrainingDataOptions
from keras_bert.export.options import ExportOptions
from keras_bert.model.options import EncodeOptions, SearchOptions
from keras_bert.pipelines.demo.job import DemoOptions
from keras_bert.pipelines.plumbing.field_flags import option_flags
from keras_bert.plotting.options import AttentionOptions, PlotOptions
from keras_bert.tasks.finetuning.options import (
    EvaluateOptions,
    FinetuneJobOptions,
    FinetuneOptions,
    PredictOptions,
)
from keras_bert.text.options import VocabOptions
from keras_bert.training.options import PretrainingOptions, PretrainJobOptions

# subcommand -> its own options (every declared field a flag of it), then the options it
# borrows flags from.
COMMAND_OPTIONS = {
    "encode": (EncodeOptions,),
    "search": (SearchOptions,),
    "vocab": (VocabOptions,),
    "create-pretraining-data": (PretrainingDataJobOptions, PretrainingDataOptions),
    "pretrain": (PretrainJobOptions, PretrainingOptions),
    "finetune": (FinetuneJobOptions, FinetuneOptions),
    "evaluate": (EvaluateOptions, FinetuneOptions),
    "predict": (PredictOptions, FinetuneOptions),
    "export": (ExportOptions,),
    "demo": (DemoOptions,),
    "attention": (AttentionOptions,),
    "plot": (PlotOptions,),
}
SHARED_FLAGS = {"-h", "--help", "--quiet", "--json", "--debug"}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions
                if isinstance(a, argparse._SubParsersAction)).choices


def test_every_command_names_its_options():
    assert set(COMMAND_OPTIONS) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMAND_OPTIONS))
def test_every_flag_is_a_declared_options_field(name):
    parser = _subparsers()[name]
    classes = COMMAND_OPTIONS[name]
    declared = {}
    for options_class in reversed(classes):  # the command's own options win
        for field in dataclasses.fields(options_class):
            if declaration(field) is not None and option_flags(field):
                declared[field.name] = field
    made = set()
    for action in parser._actions:
        flags = set(action.option_strings)
        if not flags or flags <= SHARED_FLAGS:
            continue  # an argument (not a flag), or a flag every command shares
        field = declared.get(action.dest)
        assert field is not None, f"{name}: {sorted(flags)} is declared by no options field"
        if action.help == argparse.SUPPRESS:  # --noNAME / --no-NAME of a boolean field
            assert flags == {f"--no{field.name}", f"--no-{field.name}"}, (name, flags)
            continue
        assert action.option_strings == list(option_flags(field)), (name, field.name)
        assert action.help.startswith(declaration(field).help), (name, field.name)
        made.add(field.name)
    own = {f.name for f in dataclasses.fields(classes[0])
           if declaration(f) is not None and option_flags(f)}
    assert own <= made, f"{name}: declared but not flags: {sorted(own - made)}"


def test_a_required_field_is_a_required_flag():
    parser = _subparsers()["export"]
    checkpoint = next(a for a in parser._actions if a.dest == "checkpoint")
    assert checkpoint.required and checkpoint.default is None
    task = next(a for a in _subparsers()["evaluate"]._actions if a.dest == "task")
    assert task.required and task.metavar == "TASK"


def test_pipelines_keeps_the_commands_at_its_top_and_two_rooms():
    tracked = subprocess.run(["git", "ls-files", "pipelines"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.split()
    if not tracked:  # not a git checkout: what is on disk
        tracked = [f"pipelines/{n}" for n in os.listdir(os.path.join(REPO, "pipelines"))
                   if n != "__pycache__"]
    top = {path.split("/")[1] for path in tracked}
    assert len(top) <= 12, sorted(top)
    assert {"plumbing", "demo", "__init__.py"} <= top
