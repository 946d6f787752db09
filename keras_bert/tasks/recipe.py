"""The one fine-tuning recipe, defined here once: `compile()` (then `fit` on raw text)
and `keras-bert finetune` both take it.

AdamW (weight decay 0.01 off LayerNorm and biases, epsilon 1e-6), 10% linear warmup
then linear decay to zero, gradients clipped to global norm 1.0 (the paper's §4 and
Appendix A.3); batches of 32, each cut to its longest sequence, with training batches
drawn from runs of similar length (`GROUP_BY_LENGTH`); sequences of 128 tokens (384
for SQuAD's question + passage windows); 3 epochs on the command line (`fit` takes
Keras's `epochs`).

The peak learning rate depends on the model's width and the task family. From
BERT-Base's width (768) up: google-research/bert's per-family defaults (GLUE and SWAG
2e-5, SQuAD 3e-5, NER 5e-5). Below it (the small BERTs, MiniLM): 2e-4 for sentence
classification, chosen by measurement (docs/tasks.md, "The recipe": MiniLM on held-out
SST-2 and MRPC, 3 seeds), and 1e-4 for the other families (for sentence embeddings
measured too: MiniLM on STS-B, docs/embedding.md). The feature-based tagger
trains a BiLSTM from scratch on a frozen encoder: 1e-3.

Example:

>>> from keras_bert.model.config import BertConfig
>>> learning_rate(BertConfig.from_preset("base"), "glue")
2e-05
>>> learning_rate(BertConfig.from_preset("tiny"), "glue")
0.0002
>>> sequence_length("squad", positions=512), sequence_length("glue", positions=64)
(384, 64)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line reads the recipe before TensorFlow loads
    from keras_bert.model.config import BertConfig

WARMUP_PROPORTION = 0.1
WEIGHT_DECAY = 0.01
GLOBAL_CLIPNORM = 1.0
BATCH_SIZE = 32
EPOCHS = 3
GROUP_BY_LENGTH = True

# google-research/bert's sequence lengths: 384 for SQuAD's windows, 128 for the rest.
SEQUENCE_LENGTHS = {"squad": 384}
SEQUENCE_LENGTH = 128

# Peak rates from BERT-Base's width up (google-research/bert's README per family) ...
BASE_WIDTH = 768
LEARNING_RATES = {"glue": 2e-5, "squad": 3e-5, "tagging": 5e-5, "multiple_choice": 2e-5}
# ... and below it: measured for sentence classification, the small BERTs' grid top
# for the rest.
SMALL_LEARNING_RATES = {"glue": 2e-4}
SMALL_LEARNING_RATE = 1e-4
FEATURE_BASED_LEARNING_RATE = 1e-3


def learning_rate(config: BertConfig, family: str | None = None,
                  feature_based: bool = False) -> float:
    """The recipe's peak learning rate for a model of `config`'s size fine-tuned on a
    task of `family` ("glue", "squad", "tagging", "multiple_choice"; None: "glue")."""
    if feature_based:
        return FEATURE_BASED_LEARNING_RATE
    family = family or "glue"
    if config.hidden_size >= BASE_WIDTH:
        return LEARNING_RATES.get(family, LEARNING_RATES["glue"])
    return SMALL_LEARNING_RATES.get(family, SMALL_LEARNING_RATE)


def sequence_length(family: str | None, positions: int) -> int:
    """The recipe's tokens per sequence for `family`, at most the model's `positions`."""
    return min(SEQUENCE_LENGTHS.get(family, SEQUENCE_LENGTH), positions)


def optimizer(peak_learning_rate: float, total_steps: int, *,
              warmup_proportion: float = WARMUP_PROPORTION,
              weight_decay: float = WEIGHT_DECAY):
    """The recipe's optimizer for `total_steps` updates: AdamW, linear warmup over
    `warmup_proportion` of them, then linear decay to zero, clipping 1.0."""
    from keras_bert.training.optimization import create_optimizer

    total = max(1, int(total_steps))
    return create_optimizer(peak_learning_rate, num_train_steps=total,
                            num_warmup_steps=int(total * warmup_proportion),
                            weight_decay=weight_decay, global_clipnorm=GLOBAL_CLIPNORM)
