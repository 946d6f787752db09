"""Data pipelines: pretraining instances, TFRecords and tf.data readers."""
