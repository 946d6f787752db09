"""What the export tests (SavedModel, LiteRT) share: random id inputs, and the Keras
model's own outputs named as the exported signatures name them."""

import numpy as np
import tensorflow as tf


def random_ids(batch=3, seq=11, vocab=6000, seed=0):
    """Ids of rows of decreasing length (padding after), with a second segment."""
    rng = np.random.default_rng(seed)
    lengths = np.array([seq - 3 * i for i in range(batch)])
    mask = (np.arange(seq)[None] < lengths[:, None]).astype(np.int32)
    ids = rng.integers(5, vocab, (batch, seq)).astype(np.int32) * mask
    types = ((np.arange(seq)[None] >= lengths[:, None] // 2) * mask).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def keras_outputs(kind, model, inputs):
    """The Keras model's outputs through its inference path (`predict`, a traced graph).
    Called op by op instead, the outputs at padding positions (masked, meaningless)
    differ by up to ~1e-4 on a real checkpoint from oneDNN's eager kernels; real
    positions agree either way."""
    out = model.predict_on_batch(inputs)
    if kind == "encoder":
        return {"pooled_output": out["pooled_output"],
                "sequence_output": out["sequence_output"],
                "encoder_outputs": np.stack([np.asarray(x) for x in out["encoder_outputs"]],
                                            axis=1)}
    if kind == "classifier":
        return {"logits": out, "probabilities": tf.nn.softmax(out).numpy()}
    if kind == "regression":
        return {"score": np.asarray(out)[:, 0]}
    if kind == "span_labeler":
        return dict(out)
    return {"logits": out}
