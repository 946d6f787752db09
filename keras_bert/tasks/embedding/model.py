"""The embedding family's task model: `BertTextEmbedder` (keras-hub's name), texts ->
one vector each, computed as sentence-transformers computes them: the encoder, then
pooling, optional Dense layers and Normalize as Keras layers in the model's graph (so
`save`, `keras.saving.load_model` and export carry them), with its preprocessor inside.

Its registered name (`keras_bert>BertTextEmbedder`) is what saved `.keras` files refer to.
"""

from __future__ import annotations

import os

import keras
import numpy as np

from keras_bert.core.errors import ArgumentError
from keras_bert.model.encoder import BertEncoder
from keras_bert.model.models import encoder_inputs as fresh_inputs
from keras_bert.tasks.embedding.layers import L2Normalize, SentencePooling
from keras_bert.tasks.task_model import TaskModel

DEFAULT_BATCH_SIZE = 32  # sentence-transformers' encode
MAX_SEQUENCE_LENGTH = 512  # a plain BERT checkpoint's, at most its positions
DOCUMENT_PROMPTS = ("document", "passage", "corpus")  # encode_documents looks in order


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTextEmbedder(TaskModel):
    """Sentence embeddings: the encoder's token vectors pooled (`pooling`: one or more
    of sentence-transformers' modes, concatenated), passed through `dense` layers
    (dicts of `units`, `activation`, `use_bias`) and, when `normalize`, scaled to unit
    length. Output: float32 [batch, width].

    `prompts` (name -> prefix), `default_prompt_name`, `similarity_fn_name` ("cosine",
    "dot", "euclidean", "manhattan") and `truncate_dim` (Matryoshka: keep the first
    dimensions) are a sentence-transformers folder's settings, used by `encode`,
    `encode_query`, `encode_documents` and `similarity`.

    Example:

    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertTextEmbedder(BertEncoder(BertConfig.from_preset("tiny", vocab_size=50)))
    >>> x = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
    ...      "input_type_ids": np.zeros((2, 8), "int32")}
    >>> out = np.asarray(model(x))
    >>> out.shape, np.allclose(np.linalg.norm(out, axis=-1), 1.0)
    ((2, 128), True)
    """

    config_fields = ("pooling", "dense", "normalize", "prompts", "default_prompt_name",
                     "similarity_fn_name", "truncate_dim")

    def __init__(self, encoder: BertEncoder, pooling=("mean",), dense=(), normalize: bool = True,
                 prompts: dict | None = None, default_prompt_name: str | None = None,
                 similarity_fn_name: str = "cosine", truncate_dim: int | None = None,
                 name: str = "bert_text_embedder", **kwargs):
        from keras_bert.checkpoints.sentence_transformers import SIMILARITIES

        pooling = [pooling] if isinstance(pooling, str) else list(pooling)
        dense = [{"units": int(d["units"]), "activation": d.get("activation"),
                  "use_bias": bool(d.get("use_bias", True))} for d in dense]
        prompts = dict(prompts or {})
        if default_prompt_name is not None and default_prompt_name not in prompts:
            raise ValueError(f"default_prompt_name {default_prompt_name!r} is not one of the "
                             f"prompts {sorted(prompts)}.")
        if similarity_fn_name not in SIMILARITIES:
            raise ValueError(f"similarity_fn_name must be one of {SIMILARITIES}, got "
                             f"{similarity_fn_name!r}.")
        inputs = fresh_inputs(encoder)
        sequence = encoder(inputs)["sequence_output"]
        x = SentencePooling(pooling, name="pooling")(sequence, inputs["input_mask"])
        for i, d in enumerate(dense):
            x = keras.layers.Dense(d["units"], activation=d["activation"],
                                   use_bias=d["use_bias"], dtype="float32",
                                   name=f"dense_{i}")(x)
        if normalize:
            x = L2Normalize(name="normalize")(x)
        super().__init__(encoder, inputs=inputs, outputs=x, name=name, **kwargs)
        self.pooling, self.dense, self.normalize = pooling, dense, bool(normalize)
        self.prompts, self.default_prompt_name = prompts, default_prompt_name
        self.similarity_fn_name = similarity_fn_name
        self.truncate_dim = _checked_dim(truncate_dim)

    @classmethod
    def from_preset(cls, source, *, sequence_length: int | None = None,
                    truncate_dim: int | None = None, lower_case: bool | None = None,
                    vocab_file=None, dtype=None):
        """The embedder of `source` with its preprocessor.

        A sentence-transformers folder (`modules.json`; also by `hf://ORG/NAME`) is
        followed module by module: its BERT transformer, pooling, Dense layers and
        Normalize, its `max_seq_length` (texts are cut to it, as sentence-transformers
        cuts them), casing, prompts and similarity; a module keras_bert cannot compute
        is refused, naming it. Any other BERT checkpoint (every format
        `keras_bert.load_encoder` takes) gets mean pooling + normalize, texts cut at
        `min(512, positions)` tokens. A saved `.keras` embedder opens as it was saved.
        `sequence_length` overrides the length; `dtype` is the encoder's
        (e.g. "mixed_bfloat16").

        Example:

            embedder = keras_bert.BertTextEmbedder.from_preset(
                "hf://sentence-transformers/all-MiniLM-L6-v2")
            embedder.encode(["A man plays a guitar.", "Someone plays music."]).shape
            # (2, 384)
        """
        from keras_bert.checkpoints.opener import open_artifact
        from keras_bert.checkpoints.remote import is_checkpoint_name, resolve_checkpoint_name
        from keras_bert.checkpoints.sentence_transformers import (
            SentenceTransformersSpec,
            is_sentence_transformers_folder,
            read_sentence_transformers,
        )

        if not isinstance(source, (str, os.PathLike)):
            raise ArgumentError(f"source must be a path or a checkpoint name, got "
                                f"{type(source).__name__}.", field="source")
        source = os.fspath(source)
        truncate_dim = _checked_dim(truncate_dim)
        local = resolve_checkpoint_name(source) if is_checkpoint_name(source) else source
        if os.path.isdir(local) and is_sentence_transformers_folder(local):
            spec = read_sentence_transformers(local)  # refuses what it cannot compute
            artifact = open_artifact(
                spec.transformer_path, vocab_file=vocab_file,
                lower_case=True if spec.do_lower_case and lower_case is None else lower_case)
        else:
            artifact = open_artifact(source, vocab_file=vocab_file, lower_case=lower_case,
                                     keras_files=True)
            if artifact.kind == "keras_file":
                return _saved(cls, artifact.load(), source, truncate_dim, sequence_length)
            if artifact.kind == "finetuning_run":
                from keras_bert.tasks.finetuning.run_directory import load_run

                return _saved(cls, load_run(artifact).model, source, truncate_dim,
                              sequence_length)
            spec = SentenceTransformersSpec(transformer_path=artifact.local_path,
                                            normalize=True)
        artifact.check_vocab()
        positions = artifact.config.max_position_embeddings
        length = _checked_length(sequence_length or spec.max_seq_length
                                 or min(MAX_SEQUENCE_LENGTH, positions), positions)
        encoder = artifact.load_encoder(dtype=dtype)
        return cls.from_spec(encoder, spec, truncate_dim=truncate_dim,
                         preprocessor=_preprocessor(artifact.tokenizer(), length))

    @classmethod
    def from_spec(cls, encoder, spec, *, truncate_dim=None, preprocessor=None):
        """The embedder on `encoder` with a sentence-transformers folder's modules
        (`keras_bert.checkpoints.sentence_transformers.SentenceTransformersSpec`):
        pooling, Dense layers (and their weights), Normalize, prompts and similarity."""
        model = cls(encoder, pooling=spec.pooling,
                    dense=[{"units": d.units, "activation": d.activation,
                            "use_bias": d.bias is not None} for d in spec.dense],
                    normalize=spec.normalize, prompts=spec.prompts,
                    default_prompt_name=spec.default_prompt_name,
                    similarity_fn_name=spec.similarity_fn_name, truncate_dim=truncate_dim,
                    preprocessor=preprocessor)
        for i, d in enumerate(spec.dense):
            model.get_layer(f"dense_{i}").set_weights(
                [d.kernel] + ([] if d.bias is None else [d.bias]))
        return model

    def call(self, inputs, training=None, mask=None, **kwargs):
        # Training examples of k texts each ([batch, k, seq]: pairs, triplets) run as one
        # batch of batch * k texts and come out as [batch, k, width] for the loss.
        ids = inputs["input_word_ids"]
        if len(ids.shape) != 3:
            return super().call(inputs, training=training, mask=mask, **kwargs)
        shape = keras.ops.shape(ids)
        flat = {k: keras.ops.reshape(v, (-1, shape[-1])) for k, v in inputs.items()}
        out = super().call(flat, training=training, mask=mask, **kwargs)
        return keras.ops.reshape(out, (shape[0], shape[1], -1))

    def default_loss(self):
        """`SentencePairLoss`: CoSENT on scored pairs, multiple negatives ranking (in-batch
        negatives) on pairs without scores and on triplets."""
        from keras_bert.tasks.embedding.losses import SentencePairLoss

        return SentencePairLoss()

    def default_metrics(self):
        return []

    def fit(self, x=None, y=None, batch_size=None, epochs=1, shuffle=True, **kwargs):
        """Trains on pairs of raw texts as sentence-transformers does: `x=(anchors,
        positives)` (or `(anchors, positives, negatives)`, a list of such tuples, or a
        dict {"anchor", "positive"[, "negative"]}) without `y` trains with in-batch
        negatives (`MultipleNegativesRankingLoss`: each anchor against every positive
        of its batch); `y`, one score per pair (e.g. STS-B's score / 5), trains with
        `CoSENTLoss` (or the loss given to `compile`, e.g. `CosineSimilarityLoss`).
        The rest is every task model's `fit` (the recipe's schedule, batches of similar
        length, `seed`, `validation_data`, callbacks).

        Example:

            embedder = keras_bert.BertTextEmbedder.from_preset(path)
            embedder.compile()
            embedder.fit(x=(sentences1, sentences2), y=scores / 5, batch_size=32)
        """
        return super().fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=shuffle,
                           **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """On raw text, sentence-transformers' evaluators, as a dict:

        - `x=(texts, text_pairs)`, `y` one score per pair: {"spearman", "pearson"} of
          the cosine similarity with the scores (`EmbeddingSimilarityEvaluator`);
        - `x=(queries, documents)` without `y`: each query's relevant document is its
          own pair's; or `x={"queries": [...], "corpus": [...]}` and `y` per query the
          index (or list of indices) of its relevant corpus texts: {"recall@1",
          "recall@5", "recall@10", "mrr@10", "ndcg@10"} of cosine retrieval
          (`InformationRetrievalEvaluator`; the queries get `encode_query`, the corpus
          `encode_documents`).

        Token ids go to `keras.Model.evaluate` (the loss). Example:

            embedder.evaluate((stsb["sentence1"], stsb["sentence2"]), stsb["score"])
            # {'spearman': 0.8203, 'pearson': 0.8274}
        """
        from keras_bert.tasks.embedding.encoding import evaluate

        if isinstance(x, dict) and set(x) == {"queries", "corpus"} or self._takes_text(x):
            return evaluate(self, x, y, batch_size=batch_size, **kwargs)
        return super().evaluate(x, y, batch_size=batch_size, **kwargs)

    # --- the raw-text face ------------------------------------------------------------------
    def encode(self, texts, batch_size: int = DEFAULT_BATCH_SIZE, *, prompt_name=None,
               prompt: str | None = None, truncate_dim: int | None = None,
               normalize_embeddings: bool = False) -> np.ndarray:
        """Embeddings (float32 numpy [n, width]; one text, a string, gives [width]) as
        sentence-transformers' `encode` gives them: `prompt` (or the prompt named
        `prompt_name`, else the folder's default prompt) is put before each text; the
        texts are cut to the preprocessor's length, sorted by length, batched by
        `batch_size`, each batch padded to its longest, and returned in input order.
        `truncate_dim` (default: the model's) keeps the first dimensions;
        `normalize_embeddings` scales the result to unit length (after the cut, as
        sentence-transformers does: a cut normalized embedding is not renormalized
        otherwise)."""
        from keras_bert.tasks.embedding.encoding import encode

        return encode(self, texts, batch_size, prompt_name=prompt_name, prompt=prompt,
                      truncate_dim=truncate_dim, normalize_embeddings=normalize_embeddings)

    def encode_query(self, texts, batch_size: int = DEFAULT_BATCH_SIZE, **kwargs):
        """`encode` with the folder's "query" prompt (unless a prompt is given)."""
        if "prompt" not in kwargs and "prompt_name" not in kwargs and "query" in self.prompts:
            kwargs["prompt_name"] = "query"
        return self.encode(texts, batch_size, **kwargs)

    def encode_documents(self, texts, batch_size: int = DEFAULT_BATCH_SIZE, **kwargs):
        """`encode` with the folder's "document" prompt (else "passage", "corpus")."""
        if "prompt" not in kwargs and "prompt_name" not in kwargs:
            found = [name for name in DOCUMENT_PROMPTS if name in self.prompts]
            if found:
                kwargs["prompt_name"] = found[0]
        return self.encode(texts, batch_size, **kwargs)

    def similarity(self, a, b) -> np.ndarray:
        """[len(a), len(b)] scores of two sets of embeddings by the folder's
        `similarity_fn_name`: cosine, dot, or the negative euclidean or manhattan
        distance (higher is more similar).

        Example:

        >>> BertTextEmbedder.similarity_of(np.array([[1., 0.]]), np.array([[3., 4.]]))
        array([[0.6]], dtype=float32)
        """
        return self.similarity_of(a, b, self.similarity_fn_name)

    @staticmethod
    def similarity_of(a, b, function: str = "cosine") -> np.ndarray:
        a = np.atleast_2d(np.asarray(a, np.float64))
        b = np.atleast_2d(np.asarray(b, np.float64))
        if function == "cosine":
            a = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)
            b = b / np.maximum(np.linalg.norm(b, axis=-1, keepdims=True), 1e-12)
            out = a @ b.T
        elif function == "dot":
            out = a @ b.T
        elif function == "euclidean":
            out = -np.sqrt(np.maximum(((a[:, None] - b[None]) ** 2).sum(-1), 0.0))
        elif function == "manhattan":
            out = -np.abs(a[:, None] - b[None]).sum(-1)
        else:
            raise ArgumentError(f"unknown similarity {function!r}.", field="similarity_fn_name")
        return out.astype(np.float32)


def _saved(cls, model, source, truncate_dim, sequence_length):
    """A saved `.keras` embedder (with its preprocessor), `truncate_dim` and
    `sequence_length` set if given."""
    import dataclasses

    if not isinstance(model, cls) or model.preprocessor is None:
        raise ArgumentError(f"{source!r} holds a {type(model).__name__}"
                            + (" without a preprocessor" if isinstance(model, cls) else "")
                            + f", not a {cls.__name__} that reads text.", field="source")
    if truncate_dim is not None:
        model.truncate_dim = truncate_dim
    if sequence_length is not None:
        _checked_length(sequence_length, model.encoder.config.max_position_embeddings)
        model.preprocessor.settings = dataclasses.replace(model.preprocessor.settings,
                                                          max_seq_length=sequence_length)
    return model


def _checked_length(length, positions: int) -> int:
    if isinstance(length, bool) or not isinstance(length, int) or not 3 <= length <= positions:
        raise ArgumentError(f"sequence_length must be an integer from 3 to the model's "
                            f"{positions} positions, got {length!r}.", field="sequence_length")
    return length


def _checked_dim(truncate_dim):
    if truncate_dim is None:
        return None
    if isinstance(truncate_dim, bool) or not isinstance(truncate_dim, (int, np.integer)) \
            or truncate_dim < 1:
        raise ArgumentError(f"truncate_dim must be a positive integer, got {truncate_dim!r}.",
                            field="truncate_dim")
    return int(truncate_dim)


def _preprocessor(tokenizer, length: int):
    from keras_bert.tasks.base import FeatureSettings
    from keras_bert.tasks.embedding.task import SentenceEmbeddingTask
    from keras_bert.tasks.text_preprocessor import TextPreprocessor

    return TextPreprocessor(SentenceEmbeddingTask(), tokenizer,
                            FeatureSettings(max_seq_length=length))
