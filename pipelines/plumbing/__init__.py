"""What every `keras-bert` subcommand shares, under the one name the commands import it
by (`keras_bert.pipelines.plumbing`):

- `arguments`: the parser, one boolean-flag style, checked numbers, the flags of the
  library's options dataclasses made from their fields' declarations (`add_options`) and
  the options built back from them;
- `paths`: input and output checks before any work;
- `reporting`: exit codes, `--quiet` and `--json` output, logging;
- `commands`: running a command under the exit-code rule;
- `field_flags`: a library field -> its flag;
- `stopping`: the C++ log of TensorFlow's converters hidden;
- `finetune_flags`: what `finetune`, `evaluate` and `predict` share (imported from
  there: it reads the fine-tuning options, which the other commands need not load).

Exit codes: 0 success; 2 a user mistake (bad flag, missing or unusable file, data or
checkpoints that do not fit together), reported as one line on stderr that names the
thing and says what to do; 1 a real failure, reported as one short line (the traceback
only with `--debug`); 130 interrupted by Ctrl-C; 143 stopped by SIGTERM (a saved
checkpoint lets the same command resume).
"""

from __future__ import annotations

from keras_bert.pipelines.plumbing.arguments import (
    FLAG_ALIASES,
    ArgumentParser,
    add_boolean,
    add_debug,
    add_options,
    check_max_seq_length,
    nonnegative_float,
    nonnegative_int,
    options_from_args,
    parse_boolean,
    positive_float,
    positive_int,
    probability,
)
from keras_bert.pipelines.plumbing.commands import OUTPUT_FLAGS, run_command
from keras_bert.pipelines.plumbing.field_flags import (
    FIELD_FLAGS,
    blame,
    flag_of,
    in_flag_terms,
    option_flags,
)
from keras_bert.pipelines.plumbing.paths import (
    removed_on_error,
    require_directory,
    require_file,
    require_output_directory,
    require_output_file,
    resolve_model,
)
from keras_bert.pipelines.plumbing.reporting import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    OUTPUT,
    SIGNAL_EXIT_CODES,
    Output,
    add_output_flags,
    emit,
    json_progress_callback,
    library_logging,
    say,
)
from keras_bert.pipelines.plumbing.stopping import native_logs_hidden

__all__ = [
    "EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_TERMINATED", "EXIT_USAGE",
    "FIELD_FLAGS", "FLAG_ALIASES", "OUTPUT", "OUTPUT_FLAGS", "SIGNAL_EXIT_CODES",
    "ArgumentParser", "Output", "add_boolean", "add_debug", "add_options", "add_output_flags",
    "blame", "check_max_seq_length", "emit", "flag_of", "in_flag_terms",
    "json_progress_callback", "library_logging", "native_logs_hidden", "nonnegative_float",
    "nonnegative_int", "option_flags", "options_from_args", "parse_boolean", "positive_float",
    "positive_int", "probability", "removed_on_error", "require_directory", "require_file",
    "require_output_directory", "require_output_file", "resolve_model", "run_command", "say"]
