"""What every `keras-bert` subcommand shares, under the one name the commands import it
by: parsing (`keras_bert.pipelines.arguments`: one boolean-flag style, checked numbers,
the flags of the library's options dataclasses made from their fields' declarations and
the options built back from them), path checks before any work
(`paths`), reporting and exit codes (`reporting`: `--quiet`, `--json`), library field
names as flags (`field_flags`) and the run of a command under the exit-code rule
(`commands`).

Exit codes: 0 success; 2 a user mistake (bad flag, missing or unusable file, data or
checkpoints that do not fit together), reported as one line on stderr that names the
thing and says what to do; 1 a real failure, reported as one short line (the traceback
only with `--debug`); 130 interrupted by Ctrl-C; 143 stopped by SIGTERM (a saved
checkpoint lets the same command resume).
"""

from __future__ import annotations

from keras_bert.pipelines.arguments import (
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
from keras_bert.pipelines.commands import OUTPUT_FLAGS, run_command
from keras_bert.pipelines.field_flags import (
    FIELD_FLAGS,
    blame,
    flag_of,
    in_flag_terms,
    option_flags,
)
from keras_bert.pipelines.paths import (
    removed_on_error,
    require_directory,
    require_file,
    require_output_directory,
    require_output_file,
    resolve_model,
)
from keras_bert.pipelines.reporting import (
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

__all__ = [
    "EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_TERMINATED", "EXIT_USAGE",
    "FIELD_FLAGS", "FLAG_ALIASES", "OUTPUT", "OUTPUT_FLAGS", "SIGNAL_EXIT_CODES",
    "ArgumentParser", "Output", "add_boolean", "add_debug", "add_options", "add_output_flags",
    "blame",
    "check_max_seq_length", "emit", "flag_of", "in_flag_terms", "json_progress_callback",
    "library_logging", "nonnegative_float", "nonnegative_int", "option_flags", "options_from_args",
    "parse_boolean", "positive_float", "positive_int", "probability", "removed_on_error",
    "require_directory", "require_file", "require_output_directory", "require_output_file",
    "resolve_model", "run_command", "say"]
