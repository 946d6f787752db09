"""Google's original TF1 release (`bert_config.json` + `bert_model.ckpt.*`): read by
variable name through TF's checkpoint reader, and written by `save_google_checkpoint`.
"""

from __future__ import annotations

import os

from keras_bert.checkpoints.matching import NamedCheckpoint, tensorflow_for, unreadable
from keras_bert.checkpoints.names import encoder_slots, pretrainer_head_slots
from keras_bert.core.errors import InputNotFoundError
from keras_bert.core.fileio import atomic_directory, json_text
from keras_bert.model.config import BertConfig
from keras_bert.model.encoder import BertEncoder

GOOGLE_CONFIG = "bert_config.json"
GOOGLE_CKPT = "bert_model.ckpt"


def google_config(prefix: str) -> BertConfig:
    """The `bert_config.json` beside a Google checkpoint prefix; raises if it is absent."""
    path = os.path.join(os.path.dirname(prefix) or ".", GOOGLE_CONFIG)
    if not os.path.isfile(path):
        raise InputNotFoundError(f"Google checkpoint {prefix!r} has no {GOOGLE_CONFIG} beside "
                                 "it; put the config that came with the checkpoint there.")
    return BertConfig.from_json_file(path)


def open_google(prefix: str) -> NamedCheckpoint:
    """A Google TF1 checkpoint, its variables read under their own names."""
    tf = tensorflow_for(f"Reading the Google TF1 checkpoint {prefix}")

    with unreadable(prefix):
        reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    return NamedCheckpoint(google_config(prefix),
                           lambda n: reader.get_tensor(n) if n in shapes else None,
                           set(shapes), f"Google checkpoint {prefix}", False, None)


def save_google_checkpoint(model, directory: str | os.PathLike) -> str:
    """Writes a `BertEncoder` or `BertPretrainer` in google-research/bert's TF1 format.

    Produces `bert_config.json` and `bert_model.ckpt.{index,data-*}` (plus the
    `checkpoint` state file) with the original variable names, so TF1's
    `tf.train.Saver`, tf-models-official's converters and `load_encoder` read it.
    Returns the checkpoint prefix.
    """
    tf = tensorflow_for("Writing a Google TF1 checkpoint")

    from keras_bert.model.models import BertPretrainer

    if isinstance(model, BertPretrainer):
        encoder, slots = model.encoder, encoder_slots(model.encoder) + pretrainer_head_slots(model)
    elif isinstance(model, BertEncoder):
        encoder, slots = model, encoder_slots(model)
    else:
        raise TypeError(f"save_google_checkpoint takes a BertEncoder or BertPretrainer, got "
                        f"{type(model).__name__}.")
    config = encoder.config.to_google_dict()

    def write(tmp):
        with open(os.path.join(tmp, GOOGLE_CONFIG), "w", encoding="utf-8") as f:
            f.write(json_text(config, indent=2) + "\n")
        tensors = [tf.constant(s.to_google(), dtype=tf.float32) for s in slots]
        tf.raw_ops.SaveV2(prefix=os.path.join(tmp, GOOGLE_CKPT),
                          tensor_names=[s.google_name for s in slots],
                          shape_and_slices=[""] * len(slots), tensors=tensors)
        with open(os.path.join(tmp, "checkpoint"), "w", encoding="utf-8") as f:
            f.write(f'model_checkpoint_path: "{GOOGLE_CKPT}"\n'
                    f'all_model_checkpoint_paths: "{GOOGLE_CKPT}"\n')

    atomic_directory(directory, write)
    return os.path.join(os.fspath(directory), GOOGLE_CKPT)
