"""Runnable jobs, thin over the library; each is also a `keras-bert` subcommand.

The commands, one module each at the top: `vocab`, `create_pretraining_data`, `pretrain`,
`finetune`, `evaluate`, `predict`, `export`; `embedding/` holds the two over sentence
embeddings, `encode` and `search`; `draw/` holds the two that draw, `attention` and
`plot`. Their flags are made from the options dataclasses the library
declares (`plumbing.add_options`). Two rooms hold the rest:

- `plumbing/`: what every command shares, imported from `keras_bert.pipelines.plumbing`
  (parsing and checked numbers, path checks, exit codes and output, the flag of a
  library field; its docstring names its modules);
- `demo/`: `keras-bert demo` (the package itself) and its stages.
"""
