"""Fine-tuning tasks of the paper (§4, §5.3), one module per family: reading the
benchmark files, features, decoding and the official metrics. See `base.Task`."""
