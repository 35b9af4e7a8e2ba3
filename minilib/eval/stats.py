"""The book's one statistics rule for results over seeds.

A spread is the sample standard deviation (ddof 1: three seeds are a sample, not the population). A
difference between two methods is a difference of means with its Welch 95 % interval (unequal variances,
Welch-Satterthwaite degrees of freedom): "beyond the spreads" means the interval excludes 0.

    mean, std = mean_std([0.46, 0.45, 0.48])
    lo, hi = difference_interval(errors_a, errors_b)      # an interval for mean(a) - mean(b)
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import stats

LEVEL = 0.95


def mean_std(xs: Sequence[float]) -> tuple[float, float]:
    """(mean, sample std with ddof 1); the std of a single value is 0."""
    xs = np.asarray(xs, dtype=float)
    return float(xs.mean()), float(xs.std(ddof=1)) if len(xs) > 1 else 0.0


def difference_interval(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    """Welch's `level` interval for mean(a) - mean(b). Needs two values on each side (else the interval
    is infinite); two sets of identical values give the point difference."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = float(a.mean() - b.mean())
    if len(a) < 2 or len(b) < 2:
        return -math.inf, math.inf
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff
    dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = float(stats.t.ppf(0.5 + level / 2, dof)) * se
    return diff - half, diff + half


def beyond(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> bool:
    """Whether mean(a) and mean(b) differ beyond the seeds' spread: the interval excludes 0."""
    lo, hi = difference_interval(a, b, level)
    return lo > 0 or hi < 0


def compare(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> dict:
    """mean(a) - mean(b) with its interval, and where it lies: "lower" (a below b beyond the spread: the
    interval is below 0), "higher" (above 0), or "within"."""
    lo, hi = difference_interval(a, b, level)
    diff = float(np.mean(a) - np.mean(b))
    return {"diff": diff, "interval": (lo, hi), "side": "lower" if hi < 0 else "higher" if lo > 0 else "within"}


def interval_text(c: dict) -> str:
    """'+0.010 [−0.050, +0.070]': a compare() result as a lesson prints it."""
    lo, hi = c["interval"]
    return f"{c['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}]"
