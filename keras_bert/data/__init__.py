"""Data pipelines: BERT pretraining instances, their TFRecords and the tf.data reader.

Submodules, in the order data flows:

- `documents`: input text (files or a `tf.data.Dataset`) -> documents -> chunks.
- `instances`: a chunk's tokenized documents -> sentence pairs or packed segments.
- `masking`: BERT's masked-LM choice (`MaskedLmMasker`).
- `tfrecords`: the TFRecord schema, writing examples, and `pretraining_dataset`.
- `shards`: one chunk -> one shard file (`ShardWriter`), its name.
- `workers`: the forked processes that build shards in parallel.
- `run_state`: the JSON sidecar that lets a run resume; checks of what is on disk.
- `pretraining`: `create_pretraining_data` and its options, tying the above together.
- `beam`: the same shards from an Apache Beam pipeline (optional extra; not imported here).

The public names:

- `create_pretraining_data` (the `keras-bert create-pretraining-data` command): text to
  sharded masked-LM/NSP TFRecords, streaming, in parallel, resumable.
- `PretrainingDataOptions`: the original script's settings plus no-NSP packing and
  dynamic masking.
- `pretraining_dataset`: the training input pipeline over the shards.
- `MaskedLmMasker`: BERT's masked-LM choice, as TF ops (dynamic masking) and in numpy
  (static masks).
- The steps on their own: `create_instances` (and the per-document
  `create_instances_from_document`, `create_packed_instances`, `truncate_seq_pair`),
  `instances_to_arrays`, `feature_spec`, `serialize_examples`, `write_tfrecord`.
- The TFRecord schema, stated once: `PRETRAINING_SCHEMA` (feature -> list kind and
  width), `MASKED_LM_FEATURES` (left out by files for dynamic masking), `feature_spec`;
  `check_shard_sizes` compares shards with the sizes their sidecar recorded.
"""

from keras_bert.data.instances import (
    Instance,
    create_instances,
    create_instances_from_document,
    create_packed_instances,
    instances_to_arrays,
    truncate_seq_pair,
)
from keras_bert.data.masking import MaskedLmMasker
from keras_bert.data.pretraining import (
    PretrainingDataError,
    PretrainingDataOptions,
    create_pretraining_data,
)
from keras_bert.data.shards import ShardWriter
from keras_bert.data.tfrecords import (
    MASKED_LM_FEATURES,
    PRETRAINING_SCHEMA,
    check_shard_sizes,
    feature_spec,
    pretraining_dataset,
    serialize_examples,
    write_tfrecord,
)

__all__ = [
    "MASKED_LM_FEATURES", "PRETRAINING_SCHEMA", "Instance", "MaskedLmMasker",
    "PretrainingDataError", "PretrainingDataOptions", "ShardWriter", "check_shard_sizes",
    "create_instances", "create_instances_from_document", "create_packed_instances",
    "create_pretraining_data", "feature_spec", "instances_to_arrays", "pretraining_dataset",
    "serialize_examples", "truncate_seq_pair", "write_tfrecord",
]
