"""SWAG (paper §4.4), the multiple-choice family:

- `task`: reading SWAG's CSV, features (four sequences an example), decoding under the
  blank-ending rule, accuracy, `SwagTask`;
- `serving`: the SavedModel's `serve_text` (context, start and endings in);
- `litert_serving`: the same in LiteRT's ops.
"""

from keras_bert.tasks.multiple_choice.task import (  # noqa: F401
    BLANK_ENDINGS,
    NO_ANSWER,
    NUM_CHOICES,
    SwagExample,
    SwagTask,
    blank_endings,
    choose_endings,
)
