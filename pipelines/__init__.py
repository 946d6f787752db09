"""Runnable jobs, thin over the library; each is also a `keras-bert` subcommand.

One module a subcommand: `encode`, `vocab`, `create_pretraining_data`, `pretrain`,
`finetune` (its flags in `finetune_flags`), `evaluate`, `predict`, `export`, `demo`
(its stages in `demo_job`, `demo_corpus`, `demo_stages`, `demo_evaluation`), `attention`,
`plot`. What they share: `flags` (the names below, in one place), `arguments` (the parser,
boolean flags, checked numbers, flags made from options dataclasses), `paths` (input and output checks before any work),
`reporting` (exit codes, --quiet and --json output, logging), `commands` (running a
command under the exit-code rule), `field_flags` (a library field -> its flag),
`stopping` (SIGTERM like Ctrl-C; the C++ log hidden).
"""
