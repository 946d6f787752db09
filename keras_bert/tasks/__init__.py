"""Fine-tuning tasks of the paper (§4, §5.3), one folder per family holding its reading,
features, decoding, metrics hookup, serving (SavedModel and LiteRT `serve_text`) and its
task model (`model.py`, with the raw-text face):

- `glue/`: sentence (pair) classification and regression: the nine GLUE tasks and
  `classification`, your own labelled texts (TSV or CSV); `BertClassifier`;
- `squad/`: SQuAD v1.1 and v2.0: reading, windowed features, span decoding, serving;
  `BertSpanLabeler`;
- `tagging/`: CoNLL-2003 NER and `tagging`, your own tagged words (any tag set): the
  tasks, serving a label per word; `BertTokenClassifier`, `BertNerTagger`,
  `BertFeatureBasedTagger`;
- `multiple_choice/`: SWAG: the task, the blank-ending rule, serving;
  `BertMultipleChoice`;
- `embedding/`: sentence embeddings as sentence-transformers computes them (its folders'
  modules: pooling, Dense, Normalize, prompts, similarity); `BertTextEmbedder` (`model`),
  its layers (`layers`), the fast `encode` (`encoding`) and `SentenceEmbeddingTask`.

Shared by the families:

- `base`: the `Task` interface, `Features` and the dynamically padded tf.data input.
- `common`: file readers, text-segment encoding, outputs.
- `labels`: the one judgment of labels, tags and scores that do not belong, which the
  raw-text face (by index) and the file readers (by file and line) both apply.
- `windows`: the window rule over long passages and sentences; `litert_windows` the
  same in LiteRT's int32 ops.
- `task_model`: the task models' shared base, `TaskModel` (`keras_bert.model.models.
  BertTask` with the raw-text face, which calls `keras_face`), `DenseHeadTask` and
  `BertFeatureExtractor`; `task_models` every task model class (importing it registers
  them all with Keras).
- `exporting`: a task model's `export()`; `export_sources` what chooses a family's
  serving (`KINDS`, `serving_class`, `serving_for`, `EncoderServing`) and
  `load_export_source` (a checkpoint or fine-tuning run as an `ExportSource`), above the
  family-agnostic `keras_bert.export`.
- `recipe`: the one fine-tuning recipe (optimizer, schedule, peak rate by model width
  and family, sequence length, batching by length), used by `compile()` and by
  `keras-bert finetune`.
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
