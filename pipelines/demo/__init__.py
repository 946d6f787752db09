"""`keras-bert demo`: BERT's whole story on local text, in stages.

- `command`: the subcommand itself (`add_arguments`, `run`; its docstring is its help);
- `job`: what every stage shares: `DemoSettings` (recorded in the output directory),
  `DemoOptions` (the flags, declared once), the artifacts' paths, the stage headers and
  the report;
- `corpus`: the docstring corpus, its held-out documents and the derived task's examples;
- `stages`: the stages from the corpus to the pictures, one function each;
- `evaluation`: held-out masked-LM and next-sentence accuracy next to trivial baselines.
"""
