"""SWAG (paper §4.4), the multiple-choice family:

- `task`: reading SWAG's CSV, features (four sequences an example), decoding under the
  blank-ending rule, accuracy, `SwagTask`;
- `endings`: the blank-ending rule (`blank_endings`, `choose_endings`, `NO_ANSWER`);
- `serving`: `ChoiceServing` (what export serves) and the SavedModel's `serve_text`
  (context, start and endings in);
- `litert_serving`: the same in LiteRT's ops.
"""

from keras_bert.tasks.registry import register_task


@register_task("swag", order=40)
def swag_task(name: str):
    """SWAG."""
    from keras_bert.tasks.multiple_choice.task import SwagTask

    return SwagTask()
