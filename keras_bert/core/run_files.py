"""The file names of keras_bert's run directories, owned here once: what `keras-bert
pretrain` and `keras-bert finetune` write, read back by `checkpoints` (the opener),
`training`, `tasks.finetuning` and `plotting` (which reads curves without TensorFlow,
so the names live in this light stage).

Example:

>>> from keras_bert.core.run_files import FINETUNE_CONFIG, TRAIN_LOG
>>> FINETUNE_CONFIG, TRAIN_LOG
('finetune_config.json', 'train_log.jsonl')
"""

# Both kinds of run: the final metrics and the TensorBoard logs.
METRICS = "metrics.json"
LOGS = "logs"

# A `keras-bert pretrain` run directory: its settings, its training checkpoints
# (checkpoints/ckpt-STEP) and its per-step log.
RUN_CONFIG = "run_config.json"
CHECKPOINTS = "checkpoints"
CHECKPOINT_PREFIX = "ckpt"
TRAIN_LOG = "train_log.jsonl"

# A `keras-bert finetune` run directory: its record and its model. Its TensorBoard logs
# are written beside it, under a hidden temporary name of "<output_dir>_logs", and
# copied in as LOGS when the run is complete.
FINETUNE_CONFIG = "finetune_config.json"
FINETUNED_MODEL = "model.keras"
FINETUNE_LOGS_SUFFIX = "_logs"
