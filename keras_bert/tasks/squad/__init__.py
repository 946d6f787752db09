"""SQuAD v1.1 and v2.0 (paper §4.2, §4.3), following google-research/bert's
`run_squad.py` step by step:

- `reading`: SQuAD JSON files -> `SquadExample`s, one per question, with their targets.
- `tfds`: the same examples from tensorflow-datasets' `squad/v1.1` and `squad/v2.0`.
- `features`: windows over each passage (`doc_stride`) -> model inputs and token spans.
- `decoding`: span logits -> n-best answers, v2.0's null threshold, prediction files.
- `task`: `SquadTask`, which ties them to the fine-tuning `Task` interface.
- `serving`: the SavedModel's `serve_text` (answers over passages of any length);
- `litert_serving`: the same in LiteRT's ops.
"""

from keras_bert.tasks.squad.decoding import (
    NbestEntry,
    SpanPrediction,
    SquadPrediction,
    apply_threshold,
    best_span,
    best_threshold,
    decode_squad,
    write_squad_predictions,
)
from keras_bert.tasks.squad.features import (
    answer_token_span,
    max_context_windows,
    squad_features,
    window_spans,
)
from keras_bert.tasks.squad.reading import SquadExample, SquadReadStats, read_squad
from keras_bert.tasks.squad.task import SQUAD_TASKS, SquadTask

__all__ = [
    "SQUAD_TASKS", "NbestEntry", "SpanPrediction", "SquadExample", "SquadPrediction",
    "SquadReadStats", "SquadTask", "answer_token_span", "apply_threshold", "best_span",
    "best_threshold", "decode_squad", "max_context_windows", "read_squad",
    "squad_features", "window_spans", "write_squad_predictions",
]
