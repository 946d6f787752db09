"""Data pipelines: BERT pretraining instances, their TFRecords and the tf.data reader.

Submodules, in the order data flows:

- `documents`: input text (files or a `tf.data.Dataset`) -> documents -> chunks.
- `instances`: a chunk's tokenized documents -> sentence pairs or packed segments.
- `masking`: BERT's masked-LM choice (`MaskedLmMasker`).
- `tfrecords`: the TFRecord schema, writing examples, and `pretraining_dataset`.
- `shards`: one chunk -> one shard file (`ShardWriter`), its name.
- `workers`: the forked processes that build shards in parallel.
- `run_state`: the JSON sidecar that lets a run resume; checks of what is on disk.
- `inspection`: what finished TFRecords hold (schema, lengths, token ids, sidecar) and
  whether a file is cut short, read before training (`inspect_pretraining_data`).
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
- `inspect_pretraining_data`: what finished shards hold, as a `PretrainingDataInfo`
  (schema, lengths, largest token id, sidecar), each file checked for a cut-short record.
"""

from keras_bert.core.lazy import lazy_exports

# public name -> the module that defines it (loaded on first use).
_EXPORTS = {
    "MASKED_LM_FEATURES": "keras_bert.data.tfrecords",
    "PRETRAINING_SCHEMA": "keras_bert.data.tfrecords",
    "Instance": "keras_bert.data.instances",
    "MaskedLmMasker": "keras_bert.data.masking",
    "PretrainingDataError": "keras_bert.data.pretraining",
    "PretrainingDataInfo": "keras_bert.data.inspection",
    "PretrainingDataOptions": "keras_bert.data.options",
    "ShardWriter": "keras_bert.data.shards",
    "check_shard_sizes": "keras_bert.data.tfrecords",
    "create_instances": "keras_bert.data.instances",
    "create_instances_from_document": "keras_bert.data.instances",
    "create_packed_instances": "keras_bert.data.instances",
    "create_pretraining_data": "keras_bert.data.pretraining",
    "feature_spec": "keras_bert.data.tfrecords",
    "inspect_pretraining_data": "keras_bert.data.inspection",
    "instances_to_arrays": "keras_bert.data.instances",
    "pretraining_dataset": "keras_bert.data.tfrecords",
    "serialize_examples": "keras_bert.data.tfrecords",
    "truncate_seq_pair": "keras_bert.data.instances",
    "write_tfrecord": "keras_bert.data.tfrecords",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
