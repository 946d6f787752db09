"""`BertTextEmbedder.encode`: texts -> embeddings the way sentence-transformers' `encode`
computes them, fast: the texts are tokenized at once (TensorFlow ops), sorted by length,
batched, each batch cut to its longest sequence (`feature_dataset` with
`length_order`), run through one `tf.function` traced once for every batch shape, two
batches at a time from two threads (`forward_batches`), and put back in input order.
"""

from __future__ import annotations

import collections
import concurrent.futures

import numpy as np
import tensorflow as tf

from keras_bert.core.errors import ArgumentError
from keras_bert.tasks.base import INPUT_NAMES, feature_dataset, length_order
from keras_bert.tasks.common import text_list
from keras_bert.tasks.keras_face import preprocessor_of
from keras_bert.tasks.text_inputs import positive_int

# Batches in flight at once. One batch's forward pass leaves cores idle between its ops
# (and TF's CPU MatMuls on these small shapes scale poorly over two threads); a second
# batch run beside it from another thread fills them: 3.9 s instead of 4.4 s for the
# 2,000 sentences of `benchmarks/embedding_encode.py` on 2 cores, outputs unchanged
# (each batch is computed exactly as alone). Three were no faster.
CONCURRENT_BATCHES = 2


def forward_function(model):
    """`model`'s forward pass as a `tf.function` over any [batch, seq] (one trace),
    kept on the model until its variables change (`quantize`, `enable_lora`: a trace
    holds the variables it was made with)."""
    variables = tuple(id(v) for v in model.weights)
    kept = getattr(model, "_encode_forward", None)
    if kept is not None and kept[0] == variables:
        return kept[1]
    spec = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}

    @tf.function(input_signature=[spec], autograph=False)
    def forward(inputs):
        return tf.cast(model(inputs, training=False), tf.float32)

    object.__setattr__(model, "_encode_forward", (variables, forward))  # not tracked by Keras
    return forward


def forward_batches(forward, batches, in_flight: int = CONCURRENT_BATCHES) -> list:
    """`[forward(batch).numpy() for batch in batches]`, with up to `in_flight` batches
    running at once on a thread pool (a `tf.function` call releases the GIL), read from
    `batches` only as fast as they are consumed.

    Example:

    >>> forward_batches(lambda b: b * 2, [tf.constant([1]), tf.constant([2, 3])])
    [array([2], dtype=int32), array([4, 6], dtype=int32)]
    """
    batches = iter(batches)
    first = next(batches, None)
    if first is None:
        return []
    # The first on this thread: a first call traces, and Keras' global state is per thread.
    rows, pending = [forward(first).numpy()], collections.deque()
    with concurrent.futures.ThreadPoolExecutor(
            in_flight, thread_name_prefix="keras_bert_encode") as pool:
        for batch in batches:
            if len(pending) >= in_flight:
                rows.append(pending.popleft().result())
            pending.append(pool.submit(lambda b: forward(b).numpy(), batch))
        rows.extend(future.result() for future in pending)
    return rows


def prompt_text(model, prompt_name, prompt) -> str:
    """The prefix `encode` puts before each text."""
    if prompt is not None:
        if prompt_name is not None:
            raise ArgumentError("give prompt or prompt_name, not both.", field="prompt")
        if not isinstance(prompt, str):
            raise ArgumentError(f"prompt must be a string, got {prompt!r}.", field="prompt")
        return prompt
    name = prompt_name if prompt_name is not None else model.default_prompt_name
    if name is None:
        return ""
    if name not in model.prompts:
        raise ArgumentError(f"prompt_name {name!r} is not one of the model's prompts "
                            f"{sorted(model.prompts) or '(none)'}.", field="prompt_name")
    return model.prompts[name]


def encode(model, texts, batch_size=32, *, prompt_name=None, prompt=None, truncate_dim=None,
           normalize_embeddings=False) -> np.ndarray:
    """See `BertTextEmbedder.encode`."""
    batch_size = positive_int(batch_size, "batch_size", optional=False)
    preprocessor = preprocessor_of(model)
    single = isinstance(texts, str)
    if isinstance(texts, np.ndarray):
        texts = [t.decode("utf-8") if isinstance(t, bytes) else t for t in texts.tolist()]
    texts = text_list(texts, "texts")
    if not texts:
        raise ArgumentError("texts is empty.", field="texts")
    prefix = prompt_text(model, prompt_name, prompt)
    if prefix:
        texts = [prefix + t for t in texts]
    features = preprocessor.features(texts)
    order = length_order(features)
    forward = forward_function(model)
    rows = forward_batches(forward, feature_dataset(features, batch_size, with_labels=False,
                                                    order=order))
    inverse = np.empty(len(order), np.int64)
    inverse[order] = np.arange(len(order))
    out = np.concatenate(rows)[inverse]
    dim = truncate_dim if truncate_dim is not None else model.truncate_dim
    if dim is not None:
        out = out[:, :positive_int(dim, "truncate_dim", optional=False)]
    if normalize_embeddings:
        out = out / np.maximum(np.linalg.norm(out, axis=-1, keepdims=True), 1e-12)
    out = np.ascontiguousarray(out, np.float32)
    return out[0] if single else out


def evaluate(model, x, y=None, *, batch_size=None, **kwargs) -> dict:
    """See `BertTextEmbedder.evaluate`."""
    from keras_bert.metrics.retrieval import cosine_rows, retrieval_metrics, sts_metrics
    from keras_bert.tasks.embedding.task import SentenceEmbeddingTask, pair_retrieval
    from keras_bert.tasks.text_inputs import checked_keywords

    checked_keywords("evaluate", kwargs, ("verbose",))
    batch_size = positive_int(batch_size, "batch_size") or 32
    if isinstance(x, dict) and set(x) == {"queries", "corpus"}:
        queries, corpus = text_list(x["queries"], "queries"), text_list(x["corpus"], "corpus")
        if not queries or not corpus:
            raise ArgumentError("evaluate: queries and corpus must not be empty.", field="x")
        if y is None:
            raise ArgumentError("evaluate: give y, per query the index (or list of "
                                "indices) of its relevant corpus texts.", field="y")
        if len(y) != len(queries):
            raise ArgumentError(f"evaluate: {len(queries)} queries but {len(y)} relevance "
                                "entries in y; give one per query.", field="y")
        q = model.encode_query(queries, batch_size)
        d = model.encode_documents(corpus, batch_size)
        return retrieval_metrics(model.similarity_of(q, d, "cosine"), list(y))
    examples = SentenceEmbeddingTask().text_examples(x, y)
    if not examples or isinstance(examples[0], str) or len(examples[0].texts) != 2:
        raise ArgumentError("evaluate takes pairs: (texts, text_pairs) with one score per "
                            "pair in y, (queries, documents) without y, or {'queries': "
                            "[...], 'corpus': [...]} with y.", field="x")
    first = model.encode([e.texts[0] for e in examples], batch_size)
    second = model.encode([e.texts[1] for e in examples], batch_size)
    if y is not None:
        return sts_metrics([e.score for e in examples], cosine_rows(first, second))
    return pair_retrieval(examples, first, second)
