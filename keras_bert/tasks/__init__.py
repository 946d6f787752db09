"""Fine-tuning tasks of the paper (§4, §5.3), one module (or package) per family:
reading the benchmark files, features, decoding and the official metrics.

- `base`: the `Task` interface, `Features` and the dynamically padded tf.data input.
- `common`: what the families share: file readers, text-segment encoding, outputs.
- `tfds_source`: any task's examples from a prepared tensorflow-datasets dataset.
- `glue`: the nine GLUE tasks (`library`: the demo's task in GLUE's layout).
- `squad/`: SQuAD v1.1 and v2.0: reading, windowed features, span decoding.
- `tagging`: CoNLL-2003 NER (`tagging_models`: its taggers and masked accuracy).
- `multiple_choice`: SWAG.
- `registry`: every task by its `--task` name.
- `finetuning/`: the fine-tuning run over any of them (`keras-bert finetune`).
"""
