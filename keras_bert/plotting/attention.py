"""Attention maps of an encoder on one input, and the per-head summary of them.

`attention_maps` runs an encoder on one text (or pair) and keeps the attention
probabilities of every layer and head over the real tokens only (no padding);
`attention_summary` condenses each head into the statistics of Clark et al. (2019),
"What Does BERT Look At?": attention to [CLS], to [SEP], to the previous and to the
next token, and the entropy of its distributions; `format_summary_table` prints it.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class AttentionMaps:
    """The attention probabilities of every layer and head over one input's real tokens.

    Attributes:
        tokens: the n word pieces, `[CLS]` and `[SEP]` included (no padding).
        probs: float32 [L, A, n, n]: `probs[l, h, i, j]` is how much query token i
            attends to key token j in head h of layer l; every row sums to 1.
        type_ids: int [n]: the segment (0 for the text, 1 for the pair).
        truncated: whether the input was cut to fit `max_seq_length`.
    """

    tokens: list[str]
    probs: np.ndarray
    type_ids: np.ndarray
    truncated: bool = False

    @property
    def num_layers(self) -> int:
        return self.probs.shape[0]

    @property
    def num_heads(self) -> int:
        return self.probs.shape[1]


def _with_attentions(encoder):
    """`encoder` if it returns `attention_probs`, else a float32 copy that does."""
    if getattr(encoder, "output_attentions", False):
        return encoder
    from keras_bert.model.encoder import BertEncoder

    copy = BertEncoder(encoder.config, output_attentions=True)
    copy.set_weights(encoder.get_weights())
    return copy


def attention_maps(encoder, tokenizer, text: str, pair: str | None = None,
                   max_seq_length: int = 128) -> AttentionMaps:
    """The attention probabilities of `encoder` on `text` (and `pair`, segment B).

    The input is packed as BERT's `[CLS] text [SEP] (pair [SEP])`, cut to
    `max_seq_length` tokens the way google-research/bert does, and run without padding,
    so every layer's probabilities cover exactly the real tokens.

    Args:
        encoder: a `BertEncoder` (one built without `output_attentions` is copied into
            one with it).
        tokenizer: the `BertTokenizer` of the encoder's vocabulary.
        text: the first segment.
        pair: an optional second segment.
        max_seq_length: most tokens, special tokens included.

    Example:

    >>> from keras_bert import BertConfig, BertEncoder, BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
    >>> encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=len(vocab)))
    >>> maps = attention_maps(encoder, BertTokenizer(vocab), "The cat", pair="sat")
    >>> maps.tokens, maps.probs.shape
    (['[CLS]', 'the', 'cat', '[SEP]', 'sat', '[SEP]'], (2, 2, 6, 6))
    >>> bool(np.allclose(maps.probs.sum(-1), 1, atol=1e-5))
    True
    """
    import tensorflow as tf

    from keras_bert.text.packing import BertPreprocessor

    segments = [tf.constant([text])] + ([tf.constant([pair])] if pair is not None else [])
    inputs = BertPreprocessor(tokenizer, seq_length=max_seq_length)(tuple(segments))
    n = int(inputs["input_mask"].numpy().sum())
    inputs = {name: value[:, :n] for name, value in inputs.items()}
    wordpieces = sum(int(tokenizer.tokenize(s).row_lengths()[0]) for s in segments)
    outputs = _with_attentions(encoder)(inputs, training=False)
    probs = np.stack([np.asarray(p, dtype=np.float32)[0] for p in outputs["attention_probs"]])
    ids = inputs["input_word_ids"].numpy()[0]
    return AttentionMaps(tokens=[tokenizer.id_to_token(int(i)) for i in ids], probs=probs,
                         type_ids=inputs["input_type_ids"].numpy()[0],
                         truncated=wordpieces + len(segments) + 1 > n)


def attention_summary(probs: np.ndarray, tokens: list[str], cls_token: str = "[CLS]",
                      sep_token: str = "[SEP]") -> list[dict]:
    """Per head, the statistics of Clark et al. (2019), averaged over the query tokens:

    - `cls`: the attention to `[CLS]` tokens (summed over them, if several);
    - `sep`: the attention to `[SEP]` tokens, summed over all of them;
    - `previous`: the attention from token i to token i-1 (queries i >= 1);
    - `next`: the attention from token i to token i+1 (queries i <= n-2);
    - `entropy`: the entropy of a query's distribution, -sum_j p_ij ln p_ij, in nats
      (0 for a head that attends to one token; ln n for a uniform one).

    Args:
        probs: [L, A, n, n] (or [A, n, n], one layer), rows over real tokens only.
        tokens: the n tokens.

    Returns:
        One dict per layer and head, layer-major: {"layer", "head", "cls", "sep",
        "previous", "next", "entropy"}.

    Example:

    >>> p = np.array([[[[1.0, 0.0, 0.0],
    ...                 [0.5, 0.0, 0.5],
    ...                 [0.0, 1.0, 0.0]]]])
    >>> s = attention_summary(p, ["[CLS]", "hi", "[SEP]"])[0]
    >>> s["cls"], s["sep"], s["previous"], s["next"]
    (0.5, 0.1666..., 0.75, 0.25)
    >>> f"{s['entropy']:.4f}", f"{np.log(2) / 3:.4f}"  # one query of three splits 50/50
    ('0.2310', '0.2310')
    """
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim == 3:
        probs = probs[None]
    if probs.ndim != 4 or probs.shape[-1] != probs.shape[-2] or probs.shape[-1] != len(tokens):
        raise ValueError(f"probs must be [layers, heads, n, n] with n = {len(tokens)} tokens, "
                         f"got shape {probs.shape}.")
    n = len(tokens)
    is_cls = np.array([t == cls_token for t in tokens])
    is_sep = np.array([t == sep_token for t in tokens])
    query = np.arange(n)
    rows = []
    for layer, heads in enumerate(probs):
        for head, p in enumerate(heads):
            with np.errstate(divide="ignore", invalid="ignore"):
                plogp = np.where(p > 0, p * np.log(p), 0.0)
            rows.append({
                "layer": layer, "head": head,
                "cls": float(p[:, is_cls].sum(-1).mean()),
                "sep": float(p[:, is_sep].sum(-1).mean()),
                "previous": float(p[query[1:], query[1:] - 1].mean()) if n > 1 else 0.0,
                "next": float(p[query[:-1], query[:-1] + 1].mean()) if n > 1 else 0.0,
                "entropy": float(-plogp.sum(-1).mean()),
            })
    return rows


def format_summary_table(summary: list[dict]) -> str:
    """The summary as a compact text table, one line per head.

    Example:

    >>> print(format_summary_table([{"layer": 0, "head": 1, "cls": 0.5, "sep": 0.25,
    ...                              "previous": 0.1, "next": 0.0, "entropy": 1.0}]))
    layer head   [CLS]  [SEP]   prev   next entropy
        0    1   0.500  0.250  0.100  0.000   1.000
    """
    lines = [f"{'layer':>5} {'head':>4} {'[CLS]':>7} {'[SEP]':>6} {'prev':>6} {'next':>6} "
             f"{'entropy':>7}"]
    lines += [f"{r['layer']:>5} {r['head']:>4} {r['cls']:>7.3f} {r['sep']:>6.3f} "
              f"{r['previous']:>6.3f} {r['next']:>6.3f} {r['entropy']:>7.3f}" for r in summary]
    return "\n".join(lines)
