"""The embedding family's tasks: texts -> features for `BertTextEmbedder`, single texts
(`[CLS] text [SEP]`, cut to `max_seq_length` as sentence-transformers cuts: what
`encode` embeds) and training pairs (each text of a pair, or of an (anchor, positive,
negative) triplet, packed on its own: features [n, k, seq], which the embedder runs as
one batch of n * k texts).

- `embedding` (`keras-bert finetune --task embedding`): your own pairs as a table
  (`data_dir/train.tsv` and `dev.tsv`, or `.csv`; the layout of
  `keras_bert.tasks.glue.table`): a header naming the two text columns, `sentence1`
  and `sentence2` (or `text_a` and `text_b`, or `anchor` and `positive`, with an
  optional `negative` column of hard negatives), and an optional `score` column. Scored
  pairs train with CoSENT and are scored on dev by the Spearman correlation of the
  cosine with the score; unscored pairs train with in-batch negatives (multiple
  negatives ranking) and are scored by retrieval: each first text must find its second
  among all the dev split's second texts (recall@1/5/10, MRR@10, nDCG@10).
- `sts` (`keras-bert evaluate --task sts`): STS-B-style files (GLUE's STS-B/ layout,
  `train.tsv` and `dev.tsv`: `sentence1`, `sentence2` and a 0-5 `score`, scaled to
  [0, 1]); Spearman and Pearson of the cosine.

Example:

>>> from keras_bert.text.tokenizer import BertTokenizer
>>> tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
>>> f = SentenceEmbeddingTask().features(["a b a", "b"], tok, FeatureSettings(max_seq_length=4))
>>> f.inputs["input_word_ids"].tolist(), f.lengths.tolist()
([[2, 5, 6, 3], [2, 6, 3, 0]], [4, 3])
>>> p = SentenceEmbeddingTask().text_examples((["a b a"], ["b"]), [0.8])
>>> f = SentenceEmbeddingTask().features(p, tok, FeatureSettings(max_seq_length=4))
>>> f.inputs["input_word_ids"].tolist(), f.labels.tolist()
([[[2, 5, 6, 3], [2, 6, 3, 0]]], [0.800000011920929])
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from keras_bert.core.errors import ArgumentError, DataError
from keras_bert.tasks.base import TRUNCATED_TOKENS, Features, FeatureSettings, Task
from keras_bert.tasks.common import encode_text_segments, read_lines, text_list

# The accepted header names of a pair table's text columns (first, second[, negative]).
PAIR_COLUMNS = (("sentence1", "sentence2"), ("text_a", "text_b"), ("anchor", "positive"))
NEGATIVE_COLUMN = "negative"
SCORE_COLUMNS = ("score", "label")
STS_SCALE = 5.0  # STS-B's scores run from 0 to 5
STS_METRICS = ("spearman", "pearson")
RETRIEVAL_METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")


@dataclasses.dataclass(frozen=True)
class TextPair:
    """A training or scoring example: its texts (first, second[, hard negatives]) and
    its score (None: a positive pair without one)."""

    texts: tuple[str, ...]
    score: float | None = None
    line: int | None = None


class SentenceEmbeddingTask(Task):
    """Texts in, one embedding each out (`BertTextEmbedder`); pairs to train and score.
    See the module docstring."""

    name = "embedding"
    family = "embedding"
    # Scored pairs are scored by STS_METRICS, unscored ones by RETRIEVAL_METRICS:
    # `evaluate` sets both attributes to what it computed.
    metric_names = STS_METRICS + RETRIEVAL_METRICS
    main_metric = "spearman"
    labels_optional = True  # unscored pairs train without y
    score_scale = 1.0
    scores_required = False

    def split_path(self, data_dir: str, split: str) -> str:
        from keras_bert.tasks.glue.table import table_path

        return table_path(data_dir, split)

    def read_examples(self, path: str, labelled: bool = True) -> list:
        """The pairs of a table (see the module docstring); `DataError` names the file
        and line of a row without both texts or with a score that is not a number. A
        file of plain lines (`.txt`, no header) gives single texts, one a non-blank line."""
        if path.endswith(".txt"):
            return [line for _, line in read_lines(path) if line.strip()]
        from keras_bert.tasks.glue.table import table_rows

        rows = table_rows(path)
        header = next(((n, f) for n, f in rows if f), None)
        if header is None:
            raise DataError("is empty: expected a header and one pair a row.", path=path)
        line, names = header
        names = [n.strip() for n in names]
        columns = next((c for c in PAIR_COLUMNS if set(c) <= set(names)), None)
        if columns is None:
            raise DataError(f"has no pair columns: expected a header naming "
                            f"{' or '.join(' and '.join(c) for c in PAIR_COLUMNS)} "
                            f"(and optionally {', '.join(SCORE_COLUMNS)}); got {names[:12]}.",
                            path=path, line=line)
        if NEGATIVE_COLUMN in names:
            columns = (*columns, NEGATIVE_COLUMN)
        score = next((c for c in SCORE_COLUMNS if c in names), None)
        if score is None and self.scores_required and labelled:
            raise DataError(f"has no score column ({' or '.join(SCORE_COLUMNS)}); "
                            f"{self.name} scores every pair.", path=path, line=line)
        index = [names.index(c) for c in columns]
        score_index = names.index(score) if score is not None and labelled else None
        examples = []
        for number, fields in rows:
            if not fields or not "".join(fields).strip():
                continue
            if len(fields) <= max(index + ([score_index] if score_index is not None else [])):
                raise DataError(f"has {len(fields)} field(s), fewer than the header's "
                                f"{len(names)}.", path=path, line=number)
            texts = tuple(fields[i] for i in index)
            if not all(t.strip() for t in texts):
                raise DataError(f"a text of the pair ({', '.join(columns)}) is empty.",
                                path=path, line=number)
            value = None
            if score_index is not None:
                value = _score(fields[score_index], path, number) / self.score_scale
            examples.append(TextPair(texts, value, number))
        if not examples:
            raise DataError("holds no pair below its header.", path=path)
        return examples

    def text_examples(self, x, y=None) -> list:
        """Single texts (a string or a list of them; no `y`), or pairs: `(texts,
        text_pairs)` or `(anchors, positives, negatives)` of equal lists, a list of such
        tuples, or a dict {"anchor", "positive"[, "negative"]} (also "text" and
        "text_pair"); `y` one score per pair, or None."""
        if isinstance(x, str) or (isinstance(x, (list, tuple, np.ndarray)) and len(x)
                                  and all(isinstance(t, str) for t in x)):
            if y is not None:
                raise ArgumentError("scores (y) go with pairs of texts: give x as "
                                    "(texts, text_pairs).", field="y")
            return text_list(list(x) if not isinstance(x, str) else x, "texts")
        columns = _pair_columns(x)
        scores = _scores(y, len(columns[0]))
        return [TextPair(tuple(c[i] for c in columns), None if scores is None else scores[i])
                for i in range(len(columns[0]))]

    def features(self, examples: Sequence, tokenizer, settings: FeatureSettings) -> Features:
        examples = list(examples)
        if not examples or not isinstance(examples[0], TextPair):
            dropped: list = []
            inputs = encode_text_segments(tokenizer, [examples], settings.max_seq_length,
                                          dropped)
            return Features(inputs=inputs, labels=None,
                            lengths=inputs["input_mask"].sum(axis=1).astype(np.int32),
                            example_index=np.arange(len(examples)),
                            extra={TRUNCATED_TOKENS: np.asarray(dropped, np.int64)})
        width = len(examples[0].texts)
        if any(len(e.texts) != width for e in examples):
            raise ArgumentError("every example needs the same number of texts (pairs, or "
                                "triplets with a negative).", field="x")
        parts, dropped = [], []
        for k in range(width):
            cut: list = []
            parts.append(encode_text_segments(tokenizer, [[e.texts[k] for e in examples]],
                                              settings.max_seq_length, cut))
            dropped.append(cut)
        inputs = {name: np.stack([p[name] for p in parts], axis=1) for name in parts[0]}
        scores = np.array([np.nan if e.score is None else e.score for e in examples],
                          np.float32)
        return Features(inputs=inputs, labels=scores,
                        lengths=inputs["input_mask"].sum(axis=2).max(axis=1).astype(np.int32),
                        example_index=np.arange(len(examples)),
                        extra={TRUNCATED_TOKENS: np.asarray(dropped, np.int64).max(axis=0)})

    def serving(self, settings: FeatureSettings):
        """What export serves of an embedder: `embedding` [batch, width]."""
        from keras_bert.tasks.embedding.serving import EmbeddingServing

        return EmbeddingServing()

    reads_checkpoint_modules = True  # `build_model` takes the checkpoint (`source`)

    def build_model(self, encoder, source=None, **kwargs):
        """A `BertTextEmbedder` on `encoder`: with `source` a sentence-transformers
        folder, its modules (pooling, Dense, Normalize, prompts); else mean pooling +
        normalize."""
        from keras_bert.tasks.registry import task_model_class

        cls = task_model_class("embedding", "BertTextEmbedder")
        if source is not None and not kwargs:
            import os

            from keras_bert.checkpoints.sentence_transformers import (
                is_sentence_transformers_folder,
                read_sentence_transformers,
            )

            if os.path.isdir(source) and is_sentence_transformers_folder(source):
                return cls.from_spec(encoder, read_sentence_transformers(source))
        return cls(encoder, **kwargs)

    def decode(self, examples, features, outputs, settings) -> list:
        """Single texts: their embeddings; pairs: per pair its texts' embeddings [k, width]."""
        return list(np.asarray(outputs, np.float32))

    def evaluate(self, examples, predictions) -> dict:
        """Scored pairs: Spearman and Pearson of the cosine with the score; unscored
        pairs: retrieval of each second text among all distinct second texts."""
        from keras_bert.metrics.retrieval import cosine_rows, sts_metrics

        pairs = [e for e in examples if isinstance(e, TextPair)]
        if len(pairs) != len(examples) or not pairs:
            raise ArgumentError("sentence embeddings are scored on pairs of texts.",
                                field="task")
        vectors = np.stack([np.asarray(p) for p in predictions])
        if all(e.score is not None for e in examples):
            self.metric_names, self.main_metric = STS_METRICS, "spearman"
            return sts_metrics([e.score for e in examples],
                               cosine_rows(vectors[:, 0], vectors[:, 1]))
        if self.scores_required:
            raise ArgumentError(f"{self.name} scores every pair; some have no score.",
                                field="task")
        self.metric_names, self.main_metric = RETRIEVAL_METRICS, "ndcg@10"
        return pair_retrieval(examples, vectors[:, 0], vectors[:, 1])

    def write_predictions(self, examples, predictions, path: str) -> None:
        """Pairs: a TSV of each pair's file line (or index) and cosine; texts: `.npy`."""
        from keras_bert.core.fileio import atomic_write
        from keras_bert.metrics.retrieval import cosine_rows

        if examples and isinstance(examples[0], TextPair):
            vectors = np.stack([np.asarray(p) for p in predictions])
            cosine = cosine_rows(vectors[:, 0], vectors[:, 1])
            with atomic_write(path) as f:
                f.write("line\tcosine\n")
                for i, (e, c) in enumerate(zip(examples, cosine)):
                    f.write(f"{e.line if e.line is not None else i}\t{c:.6f}\n")
            return
        with atomic_write(path, "wb") as f:
            np.save(f, np.stack(predictions).astype(np.float32))


class StsTask(SentenceEmbeddingTask):
    """STS-B-style scored pairs (0-5 scores, scaled to [0, 1]); see the module docstring."""

    name = "sts"
    metric_names = STS_METRICS
    main_metric = "spearman"
    score_scale = STS_SCALE
    scores_required = True


def pair_retrieval(examples, first, second) -> dict[str, float]:
    """Retrieval metrics of each pair's first embedding against the distinct second
    texts (the same text embedded once: its first occurrence's vector)."""
    from keras_bert.metrics.retrieval import retrieval_metrics

    documents: dict[str, int] = {}
    for i, e in enumerate(examples):
        documents.setdefault(e.texts[1], i)
    rows = list(documents.values())
    where = {text: j for j, text in enumerate(documents)}
    unit = lambda v: v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)  # noqa: E731
    scores = unit(first) @ unit(second[rows]).T
    return retrieval_metrics(scores, [where[e.texts[1]] for e in examples])


def _score(text: str, path: str, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise DataError(f"score {text!r} is not a finite number.", path=path, line=line)
    return value


def _pair_columns(x) -> list[list[str]]:
    """The text columns (2 or 3 equal lists) of raw pair inputs."""
    if isinstance(x, dict):
        keys = ("anchor", "positive", "negative") if "anchor" in x else ("text", "text_pair")
        unknown = set(x) - set(keys)
        if unknown or not {keys[0], keys[1]} <= set(x):
            raise ArgumentError("a dict of pairs needs the keys 'anchor' and 'positive' (and "
                                "optionally 'negative'), or 'text' and 'text_pair'; got "
                                f"{sorted(x)}.", field="x")
        columns = [text_list(x[k], f"x[{k!r}]") for k in keys if x.get(k) is not None]
    elif isinstance(x, tuple) and len(x) in (2, 3) and not any(isinstance(c, str) for c in x):
        columns = [text_list(list(c) if isinstance(c, np.ndarray) else c, f"x[{i}]")
                   for i, c in enumerate(x)]
    elif (isinstance(x, (list, tuple)) and x and all(isinstance(p, (tuple, list))
                                                     and len(p) in (2, 3) for p in x)):
        if len({len(p) for p in x}) != 1:
            raise ArgumentError("every example needs the same number of texts.", field="x")
        columns = [text_list([p[k] for p in x], "x") for k in range(len(x[0]))]
    else:
        raise ArgumentError("x must be texts, or pairs: (texts, text_pairs), (anchors, "
                            "positives[, negatives]), a list of such tuples, or a dict "
                            f"{{'anchor': ..., 'positive': ...}}; got {type(x).__name__}.",
                            field="x")
    if len({len(c) for c in columns}) != 1:
        raise ArgumentError(f"the texts of the pairs differ in number: "
                            f"{[len(c) for c in columns]}; give one of each per example.",
                            field="x")
    return columns


def _scores(y, count: int):
    if y is None:
        return None
    values = np.asarray(y.numpy() if hasattr(y, "numpy") else y)
    if values.dtype.kind not in "fiu" or values.shape != (count,):
        raise ArgumentError(f"y must be one score (a number) per pair: {count} of them, got "
                            f"{values.shape if values.dtype.kind in 'fiu' else values.dtype}.",
                            field="y")
    values = values.astype(np.float64)
    if not np.isfinite(values).all():
        raise ArgumentError(f"y holds a score that is not a finite number (pair "
                            f"{int(np.flatnonzero(~np.isfinite(values))[0])}).", field="y")
    return values.tolist()
