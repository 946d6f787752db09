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

from keras_bert.core.lazy import lazy_exports
from keras_bert.tasks.registry import register_task

# public name -> the module that defines it (loaded on first use: this package's
# `__init__` stays light, as the task registry needs).
_EXPORTS = {
    **dict.fromkeys(("NbestEntry", "SpanPrediction", "SquadPrediction", "apply_threshold",
                     "best_span", "best_threshold", "decode_squad",
                     "write_squad_predictions"), "keras_bert.tasks.squad.decoding"),
    **dict.fromkeys(("answer_token_span", "max_context_windows", "squad_features",
                     "window_spans"), "keras_bert.tasks.squad.features"),
    **dict.fromkeys(("SquadExample", "SquadReadStats", "read_squad"),
                    "keras_bert.tasks.squad.reading"),
    **dict.fromkeys(("SQUAD_TASKS", "SquadTask"), "keras_bert.tasks.squad.task"),
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


@register_task("squad1", "squad2", order=20)
def squad_task(name: str):
    """SQuAD v1.1 (squad1) or v2.0 (squad2)."""
    from keras_bert.tasks.squad.task import SquadTask

    return SquadTask(name)
