"""The `keras-bert` command. Each subcommand is a module of `pipelines/` (installed as
`keras_bert.pipelines`; `demo` the demo's folder, `encode` and `search` in `embedding/`,
`attention` and `plot` in `draw/`) that defines `add_arguments(parser)` and
`run(args) -> int` and whose docstring is the command's help; this file only dispatches.
Exit codes and error reporting follow `keras_bert.pipelines.plumbing` (2 for a user
mistake, 1 for a failure, `--debug` for the traceback)."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import signal
import sys

# subcommand -> (module, one-line help)
COMMANDS = {
    "encode": ("keras_bert.pipelines.embedding.encode",
               "encode sentences with a preset or loaded BERT encoder"),
    "search": ("keras_bert.pipelines.embedding.search",
               "find the corpus lines nearest each query by their sentence embeddings"),
    "vocab": ("keras_bert.pipelines.vocab", "learn a WordPiece vocab.txt from a text corpus"),
    "create-pretraining-data": ("keras_bert.pipelines.create_pretraining_data",
                                "write masked-LM/NSP TFRecords from raw text"),
    "pretrain": ("keras_bert.pipelines.pretrain", "pretrain BERT (MLM + NSP) with model.fit "
                 "on a tf.distribute strategy"),
    "finetune": ("keras_bert.pipelines.finetune", "fine-tune on GLUE, SQuAD, NER or SWAG "
                 "and score dev with the official metrics"),
    "evaluate": ("keras_bert.pipelines.evaluate", "score a fine-tuned model on a task's dev "
                 "split"),
    "predict": ("keras_bert.pipelines.predict", "predict with a fine-tuned model on a file in "
                "the task's layout"),
    "export": ("keras_bert.pipelines.export", "export an encoder or fine-tuned model as a "
               "SavedModel for TF Serving and TF Hub"),
    "demo": ("keras_bert.pipelines.demo", "end to end on local text: vocab, TFRecords, "
             "pretraining, masked-token predictions"),
    "attention": ("keras_bert.pipelines.draw.attention", "draw a model's attention on a text as "
                  "heat maps, with a per-head summary"),
    "plot": ("keras_bert.pipelines.draw.plot", "draw the loss and metric curves of a pretraining "
             "or fine-tuning run"),
}


def build_parser(load=None):
    """The `keras-bert` parser. The subcommands named in `load` (every one when None) get
    their full parsers, which imports their modules; the others are listed with their
    one-line help only, so that `keras-bert --help` and `keras-bert COMMAND ...` load
    no other command's module (and no TensorFlow before the command's work)."""
    from keras_bert.pipelines import plumbing

    parser = plumbing.ArgumentParser(
        prog="keras-bert", description="BERT for TensorFlow/Keras: data, training, export.",
        epilog="Every command takes --help (with an example), --quiet, --json, --debug,\n"
               "and @FILE to read more arguments from FILE, one a line.\n"
               "Exit codes: 0 ok, 2 bad usage or bad input, 1 failure, 130 Ctrl-C,\n"
               "143 SIGTERM.\n\n"
               "Example:\n\n    keras-bert demo",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                parser_class=plumbing.ArgumentParser)
    for name, (module_name, help_text) in COMMANDS.items():
        if load is not None and name not in load:
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            # Shown, not dropped: running it says what is missing.
            p = sub.add_parser(name, help=f"{help_text} (unavailable: {e})", add_help=False)
            p.set_defaults(_run=_unavailable(name, e), _prog=f"keras-bert {name}")
            continue
        p = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        plumbing.add_output_flags(p)
        plumbing.add_debug(p)
        p.set_defaults(_run=module.run, _prog=f"keras-bert {name}")
    return parser


def _command(argv: list[str]):
    """The subcommands whose parsers `argv` needs: the one it names (none for bare
    `--help`), or None (all) when arguments come from an @FILE before the command."""
    for arg in argv:
        if arg.startswith("@"):
            return None
        if not arg.startswith("-"):
            return [arg]
    return []


def _unavailable(name: str, error: ImportError):
    def run(args):
        raise RuntimeError(f"the {name} command cannot load: {error}; reinstall keras_bert "
                           "with the extras it needs (see README.md and docs/)")

    return run


# The commands that also run on another Keras backend (training: the data still comes
# through tf.data); every other command needs the TensorFlow backend.
BACKEND_COMMANDS = {"jax": ("pretrain", "finetune"), "torch": ("pretrain", "finetune")}


def main(argv: list[str] | None = None) -> int:
    """Runs `keras-bert ARGV` and returns its exit code. From its first line to its
    last, SIGTERM ends the command with 143 and Ctrl-C with 130, with one line and no
    traceback (`keras_bert.core.stopping`): at once while it starts (nothing is written
    yet), at the next safe point once its work has begun."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # TensorFlow's C++ start-up lines (cuInit, oneDNN; some at error level) are noise to a
    # command-line user: errors reach them as Python exceptions. `--debug` keeps them.
    # The library itself leaves this setting to its host program.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0" if "--debug" in argv else "3")
    from keras_bert.core import stopping

    command = _command(argv)
    prog = "keras-bert" + (f" {command[0]}" if command and command[0] in COMMANDS else "")
    try:
        with stopping.stop_on_signals():
            with stopping.exits_at_once(prog):
                args = _start(argv, command)
            if isinstance(args, int):
                return args
            return _run_command(args)
    except KeyboardInterrupt as e:  # a signal that reached no command's own report
        print(("\n" if stopping.signal_name(e) == "SIGINT" else "")
              + stopping.message(prog, stopping.signal_name(e)), file=sys.stderr)
        return stopping.exit_code(e)


def _start(argv: list[str], command: list[str] | None):
    """Parses `argv` and loads what the command runs on (Keras, TensorFlow); returns
    the parsed arguments, or an exit code when the command cannot run."""
    from keras_bert.pipelines import plumbing

    parser = build_parser(command)
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return plumbing.EXIT_USAGE
    backend_error = _backend_error()
    if backend_error:  # before Keras is imported, where it is a long traceback
        print(f"{args._prog}: error: {backend_error}", file=sys.stderr)
        return plumbing.EXIT_USAGE
    # Every command's work runs on TensorFlow and Keras, which its module imports when it
    # starts: about a million objects and no garbage, which the cyclic garbage collector
    # would scan again and again for nothing (measured: a fifth of the CPU time of the
    # imports, 0.8 s). Imported here with the collector paused; the help and usage
    # errors above come before, without them.
    # TensorFlow 2.21 writes its start-up lines through absl before it reads
    # TF_CPP_MIN_LOG_LEVEL: they are dropped at file descriptor 2 (not with --debug).
    from keras_bert.pipelines.plumbing import native_logs_hidden

    collecting = gc.isenabled()
    gc.disable()
    try:
        with native_logs_hidden("--debug" not in argv):
            import keras
            import tensorflow  # noqa: F401
    finally:
        if collecting:
            gc.enable()
    backend = keras.backend.backend()
    name = args._prog.split()[-1]
    if backend != "tensorflow" and name not in BACKEND_COMMANDS.get(backend, ()):
        # The other commands serve, read and export through TensorFlow models.
        others = BACKEND_COMMANDS.get(backend)
        print(f"{args._prog}: error: keras-bert {name} runs Keras on the TensorFlow "
              f"backend, and KERAS_BACKEND is {backend!r}; unset it or set "
              "KERAS_BACKEND=tensorflow (a model trained on another backend is read there "
              "as it is)"
              + (f"; under {backend}, keras-bert runs {' and '.join(sorted(others))}."
                 if others else
                 f"; under {backend}, use the library's model: keras_bert.load_encoder, "
                 "keras_bert.model."), file=sys.stderr)
        return plumbing.EXIT_USAGE
    return args


# The Keras backends keras-bert knows (keras.backend's names; "torch" is PyTorch).
KERAS_BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")


def _backend_error() -> str | None:
    """Why KERAS_BACKEND (or the backend in keras.json) cannot be used, before Keras is
    imported (where a bad one is a long traceback), or None."""
    backend = os.environ.get("KERAS_BACKEND")
    where = "KERAS_BACKEND"
    if backend is None:
        keras_home = os.environ.get("KERAS_HOME") or os.path.join(
            os.path.expanduser("~"), ".keras")
        try:
            import json

            with open(os.path.join(keras_home, "keras.json"), encoding="utf-8") as f:
                backend = json.load(f).get("backend")
            where = f"the \"backend\" of {os.path.join(keras_home, 'keras.json')}"
        except (OSError, ValueError, AttributeError):
            return None
        if backend is None:
            return None
    if backend in KERAS_BACKENDS:
        return None
    return (f"{where} is {backend!r}, which is no Keras backend; set it to one of "
            f"{', '.join(KERAS_BACKENDS[:3])} (tensorflow runs every command), or unset it.")


def _run_command(args) -> int:
    """Runs the parsed command under the exit-code rule (`plumbing.run_command`); a signal
    whose exception was lost on the way (the command ended otherwise) still ends it
    with the signal's code and line."""
    from keras_bert.core import stopping
    from keras_bert.pipelines import plumbing

    code = plumbing.run_command(args._prog, args._run, args)
    name = stopping.requested()
    if name is not None:
        if code != stopping.EXIT_CODES[name]:
            print(stopping.message(args._prog, name), file=sys.stderr)
        stopping.acknowledge()
        return stopping.EXIT_CODES[name]
    return code


def entry_point() -> int:
    """The `keras-bert` program: `main`, then the interpreter's teardown with SIGTERM and
    Ctrl-C blocked. The command's work is complete by then (its outputs published, its
    line printed); a signal in the second or so TensorFlow takes to tear down would
    otherwise kill the process by the default action (exit -2 or -15, no line) after
    Python has put the default back. The pending signal dies with the process, which
    exits with the command's own code."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    return code


if __name__ == "__main__":
    sys.exit(entry_point())
