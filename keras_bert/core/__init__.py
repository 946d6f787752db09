"""The bottom of the package, what every stage shares; it imports no model, data or
training code:

- `errors`: keras_bert's exceptions (a user's mistake vs a failure; `Terminated`);
- `fileio`: local and remote paths, atomic writes and directories, hidden temporaries,
  strict JSON;
- `input_files`: input globs expanded into files (`expand_patterns`), file checksums;
- `checks`: options dataclass fields declared once (`option`: help, range, flags) and
  their checks, named by field;
- `lazy`: package facades that load a name's module on first use;
- `precision`: the dtype policies (float32, mixed_bfloat16) and their checks;
- `run_files`: the file names of the pretraining and fine-tuning run directories, owned
  once (the opener, training, fine-tuning and the curve reader all read them here).
"""
