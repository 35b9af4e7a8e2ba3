"""What happened during training: one row per step, per evaluation and per epoch.

    history.steps   [{"step", "epoch", "loss", "lr": [per layer group], "grad_norm"?, **extras}]
    history.evals   [{"step", "epoch", "valid_loss", **metrics}]   (each validation)
    history.epochs  [{"epoch", "step", "train_loss", "valid_loss"?, **metrics, "time"}]

Plain lists of dicts, so `to_dict()` is JSON and a lesson can make a table of it.
"""
from __future__ import annotations

import math
from typing import Any


def _lower_is_better(metric: str) -> bool:
    return any(word in metric for word in ("loss", "ppl", "perplexity", "error"))


class History:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.evals: list[dict[str, Any]] = []
        self.epochs: list[dict[str, Any]] = []

    @property
    def losses(self) -> list[float]:
        """Training loss at every step."""
        return [row["loss"] for row in self.steps]

    def best(self, metric: str = "valid_loss", mode: str | None = None) -> dict[str, Any]:
        """The epoch row with the best `metric` (min for losses/perplexity/error, else max)."""
        rows = [r for r in self.epochs if r.get(metric) is not None and not math.isnan(r[metric])]
        if not rows:
            raise KeyError(f"no epoch recorded {metric!r}; have {sorted({k for r in self.epochs for k in r})}")
        lower = _lower_is_better(metric) if mode is None else mode == "min"
        return (min if lower else max)(rows, key=lambda r: r[metric])

    def to_dict(self) -> dict[str, list]:
        return {"steps": [dict(r) for r in self.steps], "evals": [dict(r) for r in self.evals],
                "epochs": [dict(r) for r in self.epochs]}

    @classmethod
    def from_dict(cls, d: dict[str, list]) -> "History":
        h = cls()
        h.steps, h.evals, h.epochs = ([dict(r) for r in d.get(k, [])] for k in ("steps", "evals", "epochs"))
        return h

    def __len__(self) -> int:
        return len(self.steps)

    def __repr__(self) -> str:
        if not self.epochs:
            return f"History({len(self.steps)} steps, no finished epoch)"
        keys = [k for k in self.epochs[-1] if k not in ("step",)]
        lines = ["  ".join(f"{k:>11s}" for k in keys)]
        for r in self.epochs:
            lines.append("  ".join(f"{_fmt(r.get(k)):>11s}" for k in keys))
        return "\n".join(lines)

    def plot(self, ax=None, smooth: float = 0.9):
        """Train loss (raw and smoothed) and valid loss vs step; metrics on a second panel.

        Returns the matplotlib Figure.
        """
        import matplotlib.pyplot as plt

        metrics = sorted({k for r in self.evals for k in r} - {"step", "epoch", "valid_loss"})
        if ax is None:
            ncols = 2 if metrics else 1
            fig, axes = plt.subplots(1, ncols, figsize=(6 * ncols, 4), squeeze=False)
            ax, ax2 = axes[0][0], (axes[0][1] if metrics else None)
        else:
            fig, ax2 = ax.figure, None
        steps = [r["step"] for r in self.steps]
        ax.plot(steps, self.losses, alpha=0.3, color="C0", label="train (per step)")
        ax.plot(steps, _ema(self.losses, smooth), color="C0", label="train (smoothed)")
        evals = [r for r in self.evals if r.get("valid_loss") is not None]
        if evals:
            ax.plot([r["step"] for r in evals], [r["valid_loss"] for r in evals], "o-", color="C1", label="valid")
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        ax.legend()
        if ax2 is not None:
            for name in metrics:
                rows = [r for r in self.evals if r.get(name) is not None]
                ax2.plot([r["step"] for r in rows], [r[name] for r in rows], "o-", label=name)
            ax2.set_xlabel("step")
            ax2.legend()
        return fig


def _ema(values: list[float], beta: float) -> list[float]:
    """Debiased exponential moving average (as in Adam), so early values aren't pulled to 0."""
    out, avg = [], 0.0
    for i, v in enumerate(values, 1):
        avg = beta * avg + (1 - beta) * v
        out.append(avg / (1 - beta ** i))
    return out


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) < 1e4 else f"{v:.3g}"
    return "-" if v is None else str(v)
