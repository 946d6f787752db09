"""How a task is fine-tuned: `FinetuneOptions` (the paper's recipe as defaults), the
task families' default learning rates and sequence lengths, and the one place the
options are checked against the task and the model (`check_task`, `resolve`) before any
data is read. What the commands around it are asked for is declared here too:
`FinetuneJobOptions` (`keras-bert finetune`), `EvaluateOptions` and `PredictOptions` (on
a `FinetunedModelOptions`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from keras_bert.core.checks import REQUIRED, OptionChecks, option
from keras_bert.core.errors import ArgumentError
from keras_bert.core.precision import PRECISIONS
from keras_bert.model.config import BertConfig
from keras_bert.tasks import recipe
from keras_bert.tasks.registry import TASK_NAMES

if TYPE_CHECKING:  # tasks.base loads TensorFlow; the command line reads these options first
    from keras_bert.tasks.base import FeatureSettings, Task

# The one recipe's defaults (keras_bert.tasks.recipe), under the names they had here.
DEFAULT_LEARNING_RATES = recipe.LEARNING_RATES
FEATURE_BASED_LEARNING_RATE = recipe.FEATURE_BASED_LEARNING_RATE
DEFAULT_SEQ_LENGTHS = recipe.SEQUENCE_LENGTHS
DEFAULT_SEQ_LENGTH = recipe.SEQUENCE_LENGTH


@dataclasses.dataclass(frozen=True)
class FinetuneOptions:
    """How a task is fine-tuned (defaults: the paper's recipe). Each field's range and
    flag help are declared with it (`keras_bert.core.checks.option`).

    Args:
        max_seq_length: tokens per sequence, [CLS]/[SEP] included; None takes the task
            family's default (384 for SQuAD, else 128; `DEFAULT_SEQ_LENGTHS`).
        train_batch_size: sequences per update.
        eval_batch_size: sequences per prediction batch.
        learning_rate: peak learning rate; None takes the recipe's for the model's size
            and the task family (`keras_bert.tasks.recipe.learning_rate`).
        num_train_epochs: passes over the training data (fractions allowed).
        warmup_proportion: fraction of the updates with linear warmup.
        weight_decay: decoupled weight decay (not on LayerNorm and biases).
        seed: fixes initialization of the head, dropout and data order.
        max_train_examples: train on the first N training examples only.
        num_restarts: fine-tune this many times (seeds seed, seed+1, ...) and keep the
            run with the best dev score (the paper's choice for small tasks).
        doc_stride, max_query_length, max_answer_length, n_best_size: SQuAD windows
            and decoding, NER windows (doc_stride) (see `FeatureSettings`).
        precision: "float32" or "mixed_bfloat16".
        feature_based: tagging only: the paper's §5.3 feature-based model (frozen
            encoder, last four layers concatenated, a two-layer BiLSTM).
        group_by_length: batch training sequences of similar length together (less
            padding, same examples per epoch).
        lora_rank: train rank-N LoRA updates of the encoder's attention and the whole
            head instead of every weight (`BertTask.enable_lora`); None trains all.
    """

    max_seq_length: int | None = option(
        None, "tokens per sequence (default: 384 for SQuAD, else 128)", at_least=1)
    train_batch_size: int = option(recipe.BATCH_SIZE, "sequences per update", at_least=1)
    eval_batch_size: int = option(
        64, "sequences per prediction batch; batches run shortest first, each cut to its "
        "longest sequence, all on one trace of the predict step", at_least=1)
    learning_rate: float | None = option(
        None, "peak learning rate (default: the recipe's by model size and task: from "
        "BERT-Base's width up 2e-5 GLUE and SWAG, 3e-5 SQuAD, 5e-5 NER; below it 2e-4 "
        "GLUE, 1e-4 the rest; 1e-3 feature-based)", greater_than=0)
    num_train_epochs: float = option(
        float(recipe.EPOCHS), "passes over the training data", greater_than=0)
    warmup_proportion: float = option(
        recipe.WARMUP_PROPORTION, "fraction of updates with linear warmup", at_least=0,
        at_most=1)
    weight_decay: float = option(recipe.WEIGHT_DECAY, "decoupled weight decay", at_least=0)
    seed: int = option(1, "seeds the head's initialization, dropout and the data order")
    max_train_examples: int | None = option(
        None, "train on the first N training examples only", at_least=1)
    num_restarts: int = option(
        1, "fine-tune N times with seeds seed..seed+N-1 and keep the best on dev", at_least=1)
    doc_stride: int = option(
        128, "SQuAD and NER: word pieces between the starts of the windows over a passage "
        "or sentence longer than max_seq_length", at_least=1)
    max_query_length: int = option(64, "SQuAD: question tokens kept", at_least=1)
    max_answer_length: int = option(30, "SQuAD: longest answer in tokens", at_least=1)
    n_best_size: int = option(
        20, "SQuAD: candidates in nbest_predictions.json", at_least=1)
    precision: str = option(
        "float32", "float32, or mixed_bfloat16: bfloat16 compute with float32 weights, "
        "optimizer and logits (faster on CPUs with AVX512-BF16 or AMX, on TPUs and recent "
        "GPUs; same dev accuracy on the SST-2 recipe)", choices=PRECISIONS)
    feature_based: bool = option(
        False, "ner: the paper's feature-based model (frozen encoder, last four layers, "
        "two-layer BiLSTM)")
    group_by_length: bool = option(
        recipe.GROUP_BY_LENGTH, "batch training sequences of similar length together "
        "(less padding; every "
        "batch is cut to its longest sequence either way)")
    lora_rank: int | None = option(
        None, "train rank-N LoRA updates of the encoder's attention projections and the "
        "whole head instead of every weight (the model's enable_lora; a few percent of "
        "the weights train)", at_least=1)

    def __post_init__(self):
        checks = OptionChecks("fine-tuning options", self)
        checks.check(lambda: self.max_seq_length >= 3, "max_seq_length",
                     "must leave room for [CLS], a token and [SEP]: >= 3, got "
                     f"{self.max_seq_length}")
        checks.raise_if_any()

    def check_task(self, task: Task) -> None:
        """Refuses options the task cannot use (`feature_based` off the tagging task)."""
        if self.feature_based and task.family != "tagging":
            raise ArgumentError("feature_based applies to the tagging task (ner) only.",
                                field="feature_based")
        if self.feature_based and self.lora_rank:
            raise ArgumentError("lora_rank trains low-rank updates of the encoder, which the "
                                "feature-based tagger keeps frozen: leave out one of "
                                "--feature_based and --lora_rank.", field="lora_rank")

    def resolve(self, task: Task, config: BertConfig) -> FinetuneOptions:
        """These options for `task` on a model of `config` (after `check_task`): the
        feature-based model needs four layers, and a `max_seq_length` of None becomes
        the task family's default, cut to the model's positions; an explicit one longer
        than the positions is refused."""
        if self.feature_based and config.num_layers < 4:
            raise ArgumentError(
                "feature_based concatenates the last four layers, but the model has "
                f"{config.num_layers}; use a deeper checkpoint or preset.",
                field="feature_based")
        positions = config.max_position_embeddings
        if self.max_seq_length is None:
            return dataclasses.replace(
                self, max_seq_length=recipe.sequence_length(task.family, positions))
        if self.max_seq_length > positions:
            raise ArgumentError(
                f"max_seq_length {self.max_seq_length} is longer than the model's "
                f"{positions} positions.", field="max_seq_length")
        return self

    def peak_learning_rate(self, task: Task, config: BertConfig) -> float:
        """`learning_rate`, else the recipe's for a model of `config` on `task`
        (`keras_bert.tasks.recipe.learning_rate`)."""
        return self.learning_rate or recipe.learning_rate(config, task.family,
                                                          self.feature_based)

    def feature_settings(self) -> FeatureSettings:
        """The `FeatureSettings` of these options (once `max_seq_length` is resolved)."""
        if self.max_seq_length is None:
            raise ArgumentError("max_seq_length is not set; resolve it with "
                                "resolve(task, config).", field="max_seq_length")
        from keras_bert.tasks.base import FeatureSettings

        return FeatureSettings(max_seq_length=self.max_seq_length, doc_stride=self.doc_stride,
                               max_query_length=self.max_query_length,
                               max_answer_length=self.max_answer_length,
                               n_best_size=self.n_best_size)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FinetuneJobOptions:
    """What `keras-bert finetune` is asked for besides the `FinetuneOptions`: the task and
    its data, the pretrained weights and vocab, the run directory; declared once (its
    flags are made from them)."""

    task: str = option(REQUIRED, f"one of {', '.join(TASK_NAMES)}", choices=TASK_NAMES,
                       metavar="TASK")
    data_dir: str | None = option(None, "the task's data in the benchmark's own layout")
    tfds: str | None = option(
        None, "instead of --data_dir: a prepared tensorflow-datasets dataset, e.g. "
        "glue/sst2, glue/mnli, squad/v1.1, squad/v2.0, conll2003 (needs the datasets extra)",
        metavar="NAME")
    tfds_data_dir: str | None = option(None, "where --tfds datasets are prepared (default: "
                                             "tensorflow-datasets' own, ~/tensorflow_datasets)")
    checkpoint: str | None = option(
        None, "pretrained weights: a Hugging Face, Google TF1, tf-models-official TF2 or "
        "keras_bert checkpoint (its vocab.txt is used)")
    preset: str | None = option(
        None, "instead of --checkpoint: random weights of a preset (tiny, mini, small, "
        "medium, base, large); needs --vocab_file")
    vocab_file: str | None = option(None, "vocab.txt (default: the one beside --checkpoint)")
    output_dir: str = option(REQUIRED, "the run directory to create")
    do_lower_case: bool | None = option(
        None, "lower-case and strip accents (auto: from the checkpoint's "
        "tokenizer_config.json or name)")
    overwrite: bool = option(False, "replace an existing --output_dir (once the new run is "
                                    "complete)")
    progress: bool = option(True, "show progress bars")


@dataclasses.dataclass(frozen=True, kw_only=True)
class FinetunedModelOptions:
    """A `keras-bert finetune` run directory and the task it was fine-tuned on, as
    `keras-bert evaluate` and `predict` read it."""

    model: str = option(REQUIRED, "a `keras-bert finetune` output directory")
    task: str = option(REQUIRED, "the task the model was fine-tuned on", choices=TASK_NAMES,
                       metavar="TASK")


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvaluateOptions(FinetunedModelOptions):
    """What `keras-bert evaluate` is asked for (with `FinetuneOptions.eval_batch_size`):
    the dev data and where the metrics go."""

    data_dir: str | None = option(None, "the task's data in the benchmark's own layout")
    tfds: str | None = option(None, "instead of --data_dir: a prepared tensorflow-datasets "
                                    "dataset (e.g. glue/sst2)", metavar="NAME")
    tfds_data_dir: str | None = option(None, "where --tfds datasets are prepared")
    output_dir: str | None = option(
        None, "write metrics.json and the predictions here (default: --model, metrics.json "
        "only)")
    progress: bool = option(True, "show a progress bar")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PredictOptions(FinetunedModelOptions):
    """What `keras-bert predict` is asked for (with `FinetuneOptions.eval_batch_size`):
    the examples and the predictions file."""

    input: str = option(REQUIRED, "examples in the task's own file layout")
    output: str = option(REQUIRED, "the predictions file to write")
