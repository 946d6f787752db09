"""Fine-tuning tasks of the paper (§4, §5.3), one folder per family holding its reading,
features, decoding, metrics hookup and serving (SavedModel and LiteRT `serve_text`):

- `glue/`: sentence (pair) classification and regression: the nine GLUE tasks and
  `classification`, your own labelled texts (TSV or CSV);
- `squad/`: SQuAD v1.1 and v2.0: reading, windowed features, span decoding, serving;
- `tagging/`: CoNLL-2003 NER and `tagging`, your own tagged words (any tag set): the
  tasks, serving a label per word (their Keras models are `keras_bert.model.taggers`);
- `multiple_choice/`: SWAG: the task, the blank-ending rule, serving.

Shared by the families:

- `base`: the `Task` interface, `Features` and the dynamically padded tf.data input.
- `common`: file readers, text-segment encoding, outputs.
- `labels`: the one judgment of labels, tags and scores that do not belong, which the
  raw-text face (by index) and the file readers (by file and line) both apply.
- `windows`: the window rule over long passages and sentences; `litert_windows` the
  same in LiteRT's int32 ops.
- `serving`: the checks that turn `serve_text`'s inputs into batches of strings.
- `tfds_source`: any task's examples from a prepared tensorflow-datasets dataset.
- `registry`: every task by its `--task` name; each family folder registers its names
  in its light `__init__.py` (`register_task`), found by the registry itself, so a
  new family is a new folder.
- `keras_face`: the task models' raw-text face: `TextPreprocessor` (task, vocabulary,
  casing, settings), `from_preset`, `fit`/`evaluate`/`predict` on strings and the
  readable calls, over `Task.text_examples`, `Task.features` and `Task.decode`;
  `text_preprocessor` the `TextPreprocessor` itself (raw inputs -> weighted, padded
  batches), `text_inputs` what those calls check before any work (inputs at the door,
  Keras's own arguments), `text_presets` `from_preset`'s arguments and sources.
- `finetuning/`: the fine-tuning run over any of them (`keras-bert finetune`).
"""
