"""Drawing: attention heat maps and training curves as PNG files (matplotlib, optional).

`attention_figure` draws one layer (a grid of one heat-map panel per head, tokens on
both axes) and `write_attention_plots` writes one PNG per layer plus the summary and the
probabilities; `training_curves_figure` draws a run's curves (one panel per metric, one
line per split) and `write_training_plots` writes the PNG.

matplotlib is an optional extra (`pip install "keras_bert[plot]"`): it is imported only
when a figure is drawn, and figures are rendered with the Agg canvas (no display, no
change to pyplot's global backend). Every output is written atomically, and only once
all figures have been rendered.
"""

from __future__ import annotations

import io as _bytes_io
import math
import os
import shutil

import numpy as np

from keras_bert.core.errors import UserInputError
from keras_bert.core.fileio import atomic_write, check_writable, json_text
from keras_bert.plotting.attention import AttentionMaps, attention_summary
from keras_bert.plotting.curves import TrainingCurves

ATTENTION_SUMMARY_FILE = "attention_summary.json"
ATTENTION_PROBS_FILE = "attention_probs.npy"
TRAINING_CURVES_FILE = "training_curves.png"


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
    files[ATTENTION_SUMMARY_FILE] = json_text(record, indent=2, sort_keys=False) + "\n"
    buffer = _bytes_io.BytesIO()
    np.save(buffer, maps.probs)
    files[ATTENTION_PROBS_FILE] = buffer.getvalue()
    return write_files(output_dir, files)


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
