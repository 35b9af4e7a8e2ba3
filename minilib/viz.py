"""Plots the lessons share. Each returns its matplotlib Axes so a lesson can add to it."""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np


def rank_frequency(tokens: Iterable[str]) -> np.ndarray:
    """Word counts sorted from most to least frequent."""
    return np.array(sorted(Counter(tokens).values(), reverse=True), dtype=np.float64)


def zipf_slope(counts: np.ndarray, lo: int = 10, hi: int = 10_000) -> float:
    """Least-squares slope of log(count) on log(rank) over ranks lo..hi (Zipf's law predicts ≈ −1).

    The head (the, of, and) and the tail of words seen once bend away from a
    straight line, so the fit uses the middle ranks only.
    """
    ranks = np.arange(1, len(counts) + 1)
    keep = (ranks >= lo) & (ranks <= min(hi, len(counts)))
    if keep.sum() < 2:
        raise ValueError(f"need at least {lo + 1} distinct words to fit a Zipf slope, got {len(counts)}")
    slope, _ = np.polyfit(np.log(ranks[keep]), np.log(counts[keep]), 1)
    return float(slope)


def zipf(counts: np.ndarray, label: str = "", ax=None):
    """Log-log rank-frequency plot with its fitted slope and the ideal 1/rank line."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4))
    ranks = np.arange(1, len(counts) + 1)
    slope = zipf_slope(counts)
    ax.loglog(ranks, counts, lw=1.5, label=f"{label} (slope {slope:.2f})".strip())
    ax.loglog(ranks, counts[0] / ranks, "k--", lw=0.8, alpha=0.6, label="count ∝ 1/rank")
    ax.set_xlabel("rank of word")
    ax.set_ylabel("count")
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax


def bars(labels: Sequence[str], values: Sequence[float], xlabel: str = "", title: str = "", ax=None, log=False,
         fmt: str = ",.0f"):
    """Horizontal bars with their values written on them (formatted with `fmt`)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.35 * len(labels) + 1))
    y = np.arange(len(labels))
    ax.barh(y, values, color="tab:blue", alpha=0.8, log=log)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    for yi, v in zip(y, values):
        ax.text(v, yi, f" {v:{fmt}}", va="center", fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    return ax


def projection(vectors, words: Sequence[str], highlight: str | None = None, ax=None):
    """The words' vectors projected to 2-D by PCA (fit on these words only), labelled."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4))
    X = np.stack([vectors.normed[vectors.index[word]] for word in words])
    X = X - X.mean(0)
    _, _, Vt = np.linalg.svd(X, full_matrices=False)
    xy = X @ Vt[:2].T
    for (x, y), word in zip(xy, words):
        bold = word == highlight
        ax.scatter([x], [y], color="tab:red" if bold else "tab:blue", s=40 if bold else 15)
        ax.annotate(word, (x, y), fontsize=10 if bold else 8, fontweight="bold" if bold else "normal",
                    xytext=(3, 3), textcoords="offset points")
    ax.set_xticks([]), ax.set_yticks([])
    ax.set_title("PCA of the word and its neighbours")
    return ax


def markdown_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A Markdown table (for IPython.display.Markdown): a header row, then one row per sequence of cells."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows])


def source(obj, *, start: str | None = None, stop: str | None = None) -> str:
    """The source of a minilib class or function as a Markdown code block (for IPython.display.Markdown),
    so a lesson shows the chapter's model as it runs, not a copy that can drift. `start` / `stop`:
    show only the lines from the first containing `start` up to (not including) the first after it
    containing `stop` — e.g. one method of a class."""
    import inspect
    import textwrap

    lines = inspect.getsource(obj).splitlines()
    first = 0
    if start is not None:
        first = next((i for i, line in enumerate(lines) if start in line), None)
        if first is None:
            raise ValueError(f"{start!r} is not in the source of {obj.__qualname__}")
    last = next((i for i in range(first + 1, len(lines)) if stop is not None and stop in lines[i]), len(lines))
    lines = lines[first:last]
    where = f"{inspect.getmodule(obj).__name__}.{obj.__qualname__}"
    return f"`{where}`\n```python\n{textwrap.dedent(chr(10).join(lines)).rstrip()}\n```"


# ----------------------------------------------------------------------------- legends off the data

def _labelled(axes) -> tuple[list, list[str]]:
    """Every labelled artist of `axes`, each label once (panels of one figure share methods and colours)."""
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    return handles, labels


def legend_below(fig, *, rename: dict[str, str] | None = None, ncol: int | None = None, fontsize: float = 8):
    """One legend for all of `fig`'s panels, under them, so it covers no data: the panels' own legends are
    removed and every label is shown once. `rename` maps a label as plotted to the text shown (e.g. a
    baseline named by what it read). The legend hangs below the figure's bottom edge; the inline backend
    (bbox_inches="tight") and `savefig(bbox_inches="tight")` keep it in the picture."""
    axes = [ax for ax in fig.axes if ax.get_legend_handles_labels()[0]]
    for ax in fig.axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    handles, labels = _labelled(axes)
    if not handles:
        return None
    rename = rename or {}
    shown = [rename.get(label, label) for label in labels]
    ncol = ncol or min(len(shown), 3 if len(fig.axes) > 1 else 2)
    return fig.legend(handles, shown, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol, fontsize=fontsize,
                      frameon=False)


def legend_outside(ax, *, rename: dict[str, str] | None = None, fontsize: float = 8):
    """The axes' legend to the right of its plotting area (covers no data); `rename` as in legend_below."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    rename = rename or {}
    return ax.legend(handles, [rename.get(label, label) for label in labels], loc="upper left",
                     bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=fontsize, frameon=False)


def legend_overlaps(fig) -> list[str]:
    """Where a legend box of `fig` covers plotted data: one line per legend and axes where any vertex of a
    line, a marker, a band or a scatter point lies inside the legend's box. Empty: every legend is clear."""
    from matplotlib.collections import Collection, PathCollection
    from matplotlib.lines import Line2D

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    found = []
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for i, ax in enumerate(fig.axes):
            points = []
            for artist in ax.get_children():
                if not artist.get_visible():
                    continue
                if isinstance(artist, Line2D) and len(artist.get_xydata()):
                    xy = artist.get_transform().transform(artist.get_xydata())
                    if artist.get_linestyle() not in ("None", "none", "") and len(xy) > 1:   # the segments too
                        t = np.linspace(0, 1, 12)[:, None, None]
                        xy = (xy[:-1] * (1 - t) + xy[1:] * t).reshape(-1, 2)
                    points.append(xy)
                elif isinstance(artist, PathCollection) and len(artist.get_offsets()):      # scatter points
                    points.append(artist.get_offset_transform().transform(artist.get_offsets()))
                elif isinstance(artist, Collection):                                        # bands, polygons
                    points += [artist.get_transform().transform(p.vertices) for p in artist.get_paths()
                               if len(p.vertices)]
            inside = ax.get_window_extent(renderer)
            pts = np.concatenate(points) if points else np.empty((0, 2))
            pts = pts[np.isfinite(pts).all(1)]
            # only what is drawn: points inside the axes' own area
            pts = pts[(pts[:, 0] >= inside.x0) & (pts[:, 0] <= inside.x1) & (pts[:, 1] >= inside.y0) & (pts[:, 1] <= inside.y1)]
            hit = (pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)
            if hit.any():
                title = ax.get_title() or f"axes {i}"
                found.append(f"legend over {int(hit.sum())} plotted points of '{title}'")
    return found
