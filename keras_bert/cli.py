"""The `keras-bert` command. Each subcommand lives in `pipelines/<module>.py`, which
defines `add_arguments(parser)` and `run(args) -> int`; this file only dispatches."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# subcommand -> (module, one-line help)
COMMANDS = {
    "encode": ("pipelines.encode", "encode sentences with a preset or loaded BERT encoder"),
    "vocab": ("pipelines.vocab", "learn a WordPiece vocab.txt from a text corpus"),
    "create-pretraining-data": ("pipelines.create_pretraining_data",
                                "write masked-LM/NSP TFRecords from raw text"),
    "pretrain": ("pipelines.pretrain", "pretrain BERT (MLM + NSP) with model.fit on a "
                 "tf.distribute strategy"),
    "demo": ("pipelines.demo", "end to end on local text: vocab, TFRecords, pretraining, "
             "masked-token predictions"),
}


def parse_boolean(text: str) -> bool:
    """An absl-style boolean flag value, as google-research/bert's flags take them:
    true/false, yes/no, 1/0 (`--do_lower_case=false`)."""
    value = text.strip().lower()
    if value in ("1", "true", "t", "yes", "y"):
        return True
    if value in ("0", "false", "f", "no", "n"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="keras-bert", description="BERT for TensorFlow/Keras: data, training, export.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name != module_name:
                raise
            continue  # not shipped in this build
        p = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text))
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
