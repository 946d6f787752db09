"""Pictures of a model and of a training run: attention heat maps and training curves.

- `attention_maps` runs an encoder on one text (or pair) and keeps the attention
  probabilities of every layer and head over the real tokens only (no padding);
  `attention_summary` condenses each head into the statistics of Clark et al. (2019),
  "What Does BERT Look At?": attention to [CLS], to [SEP], to the previous and to the
  next token, and the entropy of its distributions; `attention_figure` draws one layer
  (a grid of one heat-map panel per head, tokens on both axes) and
  `write_attention_plots` writes one PNG per layer plus the summary and the
  probabilities.
- `read_training_curves` reads the loss and metric curves a run directory holds:
  pretraining's TensorBoard event files (`logs/<split>/`) and `train_log.jsonl`, or
  fine-tuning's per-epoch history in `finetune_config.json` (train loss, dev metrics);
  `training_curves_figure` draws them (one panel per metric, one line per split) and
  `write_training_plots` writes the PNG.

matplotlib is an optional extra (`pip install "keras_bert[plot]"`): it is imported only
when a figure is drawn, and figures are rendered with the Agg canvas (no display, no
change to pyplot's global backend). Every output is written atomically, and only once
all figures have been rendered.
"""

from __future__ import annotations

import dataclasses
import io as _bytes_io
import json
import math
import os
import shutil

import numpy as np

from keras_bert.errors import DataError, InputNotFoundError, UserInputError
from keras_bert.io import atomic_write, check_writable

ATTENTION_SUMMARY_FILE = "attention_summary.json"
ATTENTION_PROBS_FILE = "attention_probs.npy"
TRAINING_CURVES_FILE = "training_curves.png"
# What a pretraining or fine-tuning run writes (keras_bert.training / keras_bert.tasks).
TRAIN_LOG = "train_log.jsonl"
LOGS_DIR = "logs"
FINETUNE_CONFIG = "finetune_config.json"
# Throughput is not a learning curve; these logged scalars are left out of the plots.
_NOT_CURVES = ("steps_per_second", "examples_per_second")


class PlottingUnavailableError(UserInputError, ImportError):
    """matplotlib, which drawing needs, is not installed."""


def attention_png_name(layer: int) -> str:
    """The file name of a layer's heat maps.

    Example:

    >>> attention_png_name(3)
    'attention_layer_3.png'
    """
    return f"attention_layer_{layer}.png"


def _matplotlib():
    """(Figure, FigureCanvasAgg), or a clear error naming the extra to install."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise PlottingUnavailableError(
            f"drawing needs matplotlib, which is not installed ({e}); install it with "
            "`pip install \"keras_bert[plot]\"` (or `pip install matplotlib`).") from None
    return Figure, FigureCanvasAgg


def _new_figure(figsize):
    figure_class, canvas_class = _matplotlib()
    figure = figure_class(figsize=figsize, layout="constrained")
    canvas_class(figure)  # the Agg canvas: PNG output without any display
    return figure


def figure_png(figure, dpi: int = 100) -> bytes:
    """A figure rendered as PNG bytes."""
    buffer = _bytes_io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def write_files(output_dir: str, files: dict[str, bytes | str]) -> list[str]:
    """Writes `{name: content}` into `output_dir` (created if missing), each file
    atomically; if any write fails, the files written so far are removed again (and the
    directory, when this call created it). Returns the paths written.

    Example:

    >>> import tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "plots")
    >>> [os.path.basename(p) for p in write_files(out, {"a.txt": "x", "b.bin": b"y"})]
    ['a.txt', 'b.bin']
    """
    check_writable(output_dir, kind="directory", what="output_dir")
    created = not os.path.isdir(output_dir)
    written = []
    try:
        for name, content in files.items():
            path = os.path.join(output_dir, name)
            with atomic_write(path, "wb" if isinstance(content, bytes) else "w") as f:
                f.write(content)
            written.append(path)
    except BaseException:
        for path in written:
            os.remove(path)
        if created:
            shutil.rmtree(output_dir, ignore_errors=True)
        raise
    return written


# --- attention ---------------------------------------------------------------------------

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
    from keras_bert.encoder import BertEncoder

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

    from keras_bert.preprocessing import BertPreprocessor

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


def attention_figure(maps: AttentionMaps, layer: int, max_columns: int = 4):
    """One layer's attention as a grid of heat maps, one panel per head.

    Panel h shows `maps.probs[layer, h]` (rows: query tokens, columns: key tokens, on a
    fixed 0-1 color scale shared by one colorbar) with the tokens as tick labels. The
    figure has exactly `num_heads` panels (plus the colorbar's axes).

    Example:

    >>> maps = AttentionMaps(["[CLS]", "hi", "[SEP]"], np.full((1, 2, 3, 3), 1 / 3),
    ...                      np.zeros(3, int))
    >>> figure = attention_figure(maps, layer=0)
    >>> [ax.get_title() for ax in figure.axes if ax.images]
    ['head 0', 'head 1']
    """
    if not 0 <= layer < maps.num_layers:
        raise ValueError(f"layer {layer} is out of range: the model has {maps.num_layers} "
                         "layers.")
    heads, n = maps.num_heads, len(maps.tokens)
    columns = min(heads, max_columns)
    rows = math.ceil(heads / columns)
    panel = min(max(2.6, 0.16 * n), 9.0)  # inches; long inputs get bigger panels
    fontsize = max(2.5, min(8.0, 130.0 / n))
    figure = _new_figure((columns * panel + 1.0, rows * panel + 0.6))
    grid = figure.add_gridspec(rows, columns)
    axes = []
    for head in range(heads):
        ax = figure.add_subplot(grid[head // columns, head % columns])
        image = ax.imshow(maps.probs[layer, head], vmin=0.0, vmax=1.0, cmap="viridis",
                          interpolation="nearest", aspect="equal")
        ax.set_title(f"head {head}", fontsize=9)
        ax.set_xticks(range(n), maps.tokens, rotation=90, fontsize=fontsize)
        ax.set_yticks(range(n), maps.tokens, fontsize=fontsize)
        ax.tick_params(length=0)
        axes.append(ax)
    figure.colorbar(image, ax=axes, shrink=0.6, label="attention probability")
    figure.suptitle(f"layer {layer}: attention probabilities (rows: queries, columns: keys)")
    return figure


def write_attention_plots(maps: AttentionMaps, output_dir: str, metadata: dict | None = None
                          ) -> list[str]:
    """Writes `attention_layer_<l>.png` for every layer (see `attention_figure`),
    `attention_summary.json` (`metadata`, the tokens and `attention_summary`) and
    `attention_probs.npy` ([L, A, n, n]) into `output_dir`; returns their paths. All
    figures are rendered before the first file is written."""
    files: dict[str, bytes | str] = {}
    for layer in range(maps.num_layers):
        files[attention_png_name(layer)] = figure_png(attention_figure(maps, layer))
    record = {**(metadata or {}), "tokens": maps.tokens, "truncated": maps.truncated,
              "num_layers": maps.num_layers, "num_heads": maps.num_heads,
              "heads": attention_summary(maps.probs, maps.tokens)}
    files[ATTENTION_SUMMARY_FILE] = json.dumps(record, indent=2) + "\n"
    buffer = _bytes_io.BytesIO()
    np.save(buffer, maps.probs)
    files[ATTENTION_PROBS_FILE] = buffer.getvalue()
    return write_files(output_dir, files)


# --- training curves -----------------------------------------------------------------------

@dataclasses.dataclass
class TrainingCurves:
    """The curves of one run: `curves[metric][line] = (x, y)` (lists of equal length),
    `line` naming the split ("train", a dev split, a TensorBoard log directory), with
    " (restart k)" (k = 1, 2, ...) when fine-tuning ran several restarts.

    Attributes:
        run_dir: the run directory read.
        kind: "pretraining" or "fine-tuning".
        x_label: "step" or "epoch".
        curves: metric -> line -> (x values, y values).
        sources: the files the curves came from.
    """

    run_dir: str
    kind: str
    x_label: str
    curves: dict
    sources: list[str]

    def add(self, metric: str, line: str, x, y) -> None:
        xs, ys = self.curves.setdefault(metric, {}).setdefault(line, ([], []))
        xs.append(x)
        ys.append(float(y))

    @property
    def metrics(self) -> list[str]:
        """The metrics in panel order: the total loss, other losses, other metrics, the
        learning rate."""
        def rank(name):
            return (0 if name in ("loss", "epoch_loss") else 1 if "loss" in name
                    else 3 if "learning_rate" in name else 2, name)

        return sorted(self.curves, key=rank)


def _no_logs(run_dir: str, why: str) -> InputNotFoundError:
    return InputNotFoundError(
        f"run directory {run_dir!r} {why}: expected {LOGS_DIR}/ with TensorBoard event "
        f"files or {TRAIN_LOG} (keras-bert pretrain) or {FINETUNE_CONFIG} with a history "
        "(keras-bert finetune).")


def read_training_curves(run_dir: str) -> TrainingCurves:
    """The loss and metric curves a pretraining or fine-tuning run directory holds.

    Fine-tuning (`finetune_config.json`): per epoch, the training loss ("train") and
    every dev split's metrics (one line per split), from its `history`.
    Pretraining: per logged step, every scalar of the TensorBoard event files under
    `logs/` (one line per subdirectory: `train`, and any evaluation split), or, when
    there are none, of `train_log.jsonl` ("train"). A step logged twice (a run resumed
    from an earlier checkpoint) keeps its latest value. Throughput is left out.

    Example:

    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> with open(os.path.join(run, "train_log.jsonl"), "w") as f:
    ...     _ = f.write('{"step": 2, "loss": 9.5, "steps_per_second": 3.0}\\n'
    ...                 '{"step": 4, "loss": 8.0, "steps_per_second": 3.1}\\n')
    >>> read_training_curves(run).curves
    {'loss': {'train': ([2, 4], [9.5, 8.0])}}
    """
    run_dir = os.fspath(run_dir)
    if not os.path.isdir(run_dir):
        if os.path.exists(run_dir):
            raise InputNotFoundError(f"run directory {run_dir!r} is a file; give the "
                                     "output directory of keras-bert pretrain or finetune.")
        raise InputNotFoundError(f"run directory {run_dir!r} does not exist.")
    if os.path.isfile(os.path.join(run_dir, FINETUNE_CONFIG)):
        return _finetuning_curves(run_dir)
    curves = TrainingCurves(run_dir, "pretraining", "step", {}, [])
    _read_event_logs(os.path.join(run_dir, LOGS_DIR), curves)
    if "train" not in {line for lines in curves.curves.values() for line in lines}:
        _read_jsonl(os.path.join(run_dir, TRAIN_LOG), curves)
    if not curves.curves:
        raise _no_logs(run_dir, "holds no training logs" if os.listdir(run_dir)
                       else "is empty")
    return curves


def _finetuning_curves(run_dir: str) -> TrainingCurves:
    path = os.path.join(run_dir, FINETUNE_CONFIG)
    try:
        with open(path, encoding="utf-8") as f:
            history = json.load(f).get("history") or []
    except (json.JSONDecodeError, AttributeError) as e:
        raise DataError(f"is not a fine-tuning record ({e}).", path=path) from None
    curves = TrainingCurves(run_dir, "fine-tuning", "epoch", {}, [path])
    restarts = {entry.get("restart", 0) for entry in history}
    for entry in history:
        restart = entry.get("restart", 0)
        suffix = f" (restart {restart + 1})" if len(restarts) > 1 else ""
        epoch = entry["epoch"]
        if _is_number(entry.get("loss")) and math.isfinite(entry["loss"]):
            curves.add("loss", "train" + suffix, epoch, entry["loss"])
        for split, metrics in (entry.get("dev") or {}).items():
            for name, value in metrics.items():
                if isinstance(value, float):
                    curves.add(name, split + suffix, epoch, value)
    if not curves.curves:
        raise _no_logs(run_dir, f"has no per-epoch history in {FINETUNE_CONFIG}")
    return curves


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _read_event_logs(logs_dir: str, curves: TrainingCurves) -> None:
    if not os.path.isdir(logs_dir):
        return
    import tensorflow as tf

    for directory, _, names in sorted(os.walk(logs_dir)):
        events = sorted(n for n in names if "tfevents" in n)
        if not events:
            continue
        line = os.path.relpath(directory, logs_dir).replace(os.sep, "/")
        line = "train" if line == "." else line
        latest: dict = {}  # (tag, step) -> (wall time, order, value)
        for order, name in enumerate(events):
            path = os.path.join(directory, name)
            curves.sources.append(path)
            try:
                for record in tf.data.TFRecordDataset(path):
                    event = tf.compat.v1.Event.FromString(record.numpy())
                    for value in event.summary.value:
                        if value.HasField("tensor"):
                            number = tf.make_ndarray(value.tensor)
                            if number.size != 1 or number.dtype.kind not in "fiu":
                                continue  # not a scalar (text, histogram)
                            number = float(number.reshape(()))
                        elif value.HasField("simple_value"):
                            number = float(value.simple_value)
                        else:
                            continue
                        key = (value.tag, int(event.step))
                        stamp = (event.wall_time, order)
                        if key not in latest or stamp >= latest[key][:2]:
                            latest[key] = (*stamp, number)
            except tf.errors.DataLossError:
                pass  # a file cut short by a killed run: keep what was complete
        for (tag, step), (*_, number) in sorted(latest.items(), key=lambda kv: kv[0][1]):
            if tag not in _NOT_CURVES:
                curves.add(tag, line, step, number)


def _read_jsonl(path: str, curves: TrainingCurves) -> None:
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    by_step: dict = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
            step = int(record["step"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            if number == len(lines):
                break  # the last line cut short by a killed run
            raise DataError("is not a JSON record with a step.", path=path,
                            line=number) from None
        by_step[step] = record  # a step logged again after a resume: the latest wins
    if by_step:
        curves.sources.append(path)
    for step in sorted(by_step):
        for name, value in by_step[step].items():
            if name != "step" and name not in _NOT_CURVES and _is_number(value):
                curves.add(name, "train", step, value)


def training_curves_figure(curves: TrainingCurves, max_columns: int = 3):
    """The curves as a grid of panels, one per metric (`curves.metrics` order), one line
    per split, against steps (pretraining) or epochs (fine-tuning).

    Example:

    >>> curves = TrainingCurves("run", "fine-tuning", "epoch",
    ...                         {"loss": {"train": ([1, 2], [0.7, 0.5])},
    ...                          "accuracy": {"dev": ([1, 2], [0.6, 0.8])}}, [])
    >>> [ax.get_title() for ax in training_curves_figure(curves).axes]
    ['loss', 'accuracy']
    """
    metrics = curves.metrics
    columns = min(len(metrics), max_columns)
    rows = math.ceil(len(metrics) / columns)
    figure = _new_figure((4.2 * columns, 3.2 * rows + 0.5))
    for index, metric in enumerate(metrics):
        ax = figure.add_subplot(rows, columns, index + 1)
        for line, (xs, ys) in curves.curves[metric].items():
            ax.plot(xs, ys, label=line, marker="o" if len(xs) <= 20 else None, markersize=3)
        ax.set_title(metric)
        ax.set_xlabel(curves.x_label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    figure.suptitle(f"{curves.kind} run {os.path.basename(os.path.normpath(curves.run_dir))}")
    return figure


def write_training_plots(curves: TrainingCurves, output_dir: str) -> list[str]:
    """Writes `training_curves.png` (see `training_curves_figure`) into `output_dir`;
    returns its path."""
    return write_files(output_dir,
                       {TRAINING_CURVES_FILE: figure_png(training_curves_figure(curves))})
