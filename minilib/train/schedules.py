"""Learning-rate schedules as pure functions: (step, total_steps) -> multiplier.

The fit loop multiplies each layer group's base LR by the schedule's value
at the step about to be taken (step = 0 … total-1), so discriminative LRs
keep their ratios all along (ULMFiT §3.2 uses STLR on every layer this way).
Being pure, a schedule can be plotted and tested without a model:

    >>> [round(slanted_triangular(t, 100), 3) for t in (0, 10, 100)]
    [0.031, 1.0, 0.031]

Any callable `(step, total) -> float` works as `fit(schedule=...)`; use
`functools.partial` to change a named schedule's defaults.
"""
from __future__ import annotations

import functools
import math
from typing import Callable

Schedule = Callable[[int, int], float]


def constant(step: int, total: int, *, warmup: int = 0) -> float:
    """1, after an optional linear warm-up from 0 over `warmup` steps."""
    if step < warmup:
        return (step + 1) / warmup
    return 1.0


def linear_decay(step: int, total: int, *, warmup: int = 0, floor: float = 1e-4) -> float:
    """Linear decay to `floor`, after an optional linear warm-up.

    word2vec (Mikolov et al. 2013, the reference C code): alpha = alpha_0 · (1 − progress),
    never below alpha_0 · 1e-4. BERT (Devlin et al. 2018, §A.2) uses the same shape
    with a 10k-step warm-up and decay to 0.
    """
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return max(floor, 1.0 - progress)


def _cos_anneal(start: float, end: float, pct: float) -> float:
    """Half a cosine from `start` (pct=0) to `end` (pct=1)."""
    return end + (start - end) / 2 * (1 + math.cos(math.pi * pct))


def cosine(step: int, total: int, *, warmup: int = 0, final: float = 0.0) -> float:
    """Linear warm-up from 0 over `warmup` steps, then a cosine down to `final`.

    GPT (Radford et al. 2018, §4.1): "increased linearly from zero over the first
    2000 updates and annealed to 0 using a cosine schedule".
    """
    if step < warmup:
        return (step + 1) / warmup
    pct = (step - warmup) / max(1, total - warmup)
    return _cos_anneal(1.0, final, min(1.0, pct))


def warmup_stable_decay(step: int, total: int, *, warmup: int = 0, decay: float = 0.2) -> float:
    """Linear warm-up over `warmup` steps, the peak held, then a linear decay to 0 over the last `decay`
    share of the steps (Hu et al. 2024, MiniCPM §4.1; Hägele et al. 2024 find a 20 % cool-down matches a
    cosine run). Until the decay, every step sits at the same LR, so snapshots of one long run at
    1/8, 1/4, … of its steps are comparable with one another (the compute axis, chapter 08)."""
    if step < warmup:
        return (step + 1) / warmup
    start = total - round(decay * total)
    if step < start:
        return 1.0
    return max(0.0, 1.0 - (step - start) / max(1, total - start))


def slanted_triangular(step: int, total: int, *, cut_frac: float = 0.1, ratio: float = 32) -> float:
    """Slanted triangular LR (Howard & Ruder 2018, ULMFiT §3.2, eq. 3), as a fraction of eta_max.

    A short linear climb for `cut_frac` of the steps, then a long linear descent;
    `ratio` is how much smaller the lowest LR is than the peak.
    """
    cut = max(1, math.floor(total * cut_frac))  # the paper's floor(T·cut_frac); ≥1 so tiny runs don't divide by 0
    if step < cut:
        p = step / cut
    else:
        # eq. 3 divides by cut·(1/cut_frac − 1), which is T − cut only when T·cut_frac is whole; with the
        # floored cut it overshoots and the last steps' LR goes negative (T = 46: −0.10·η_max). T − cut
        # reaches η_max/ratio at the last step whatever T is.
        p = 1 - (step - cut) / max(1, total - cut)
    return (1 + max(0.0, p) * (ratio - 1)) / ratio


def one_cycle(step: int, total: int, *, pct_start: float = 0.25, div: float = 25.0,
              final_div: float = 1e4) -> float:
    """One-cycle policy (Smith 2018, "A disciplined approach…", §4.1), fastai's cosine form.

    Rises from 1/div of the peak to the peak over `pct_start` of the steps, then
    anneals to 1/final_div of the peak. Smith uses linear ramps; fastai's
    half-cosines do the same job more smoothly.
    """
    up = max(1, round(total * pct_start))
    if step < up:
        return _cos_anneal(1 / div, 1.0, step / up)
    return _cos_anneal(1.0, 1 / final_div, min(1.0, (step - up) / max(1, total - up)))


SCHEDULES = {"constant": constant, "linear": linear_decay, "cosine": cosine, "wsd": warmup_stable_decay,
             "stlr": slanted_triangular, "onecycle": one_cycle}


def get_schedule(schedule: str | Schedule, *, warmup: int = 0) -> Schedule:
    """A schedule by name (see SCHEDULES) or a callable passed through; `warmup` in steps."""
    if callable(schedule):
        if warmup:
            raise ValueError("warmup= applies to named schedules; build it into your callable instead")
        return schedule
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; use one of {', '.join(SCHEDULES)} or a callable (step, total) -> multiplier")
    if schedule in ("stlr", "onecycle"):
        if warmup:
            raise ValueError(f"schedule {schedule!r} has its own warm-up (cut_frac / pct_start); "
                             f"pass e.g. schedule=functools.partial(slanted_triangular, cut_frac=0.2)")
        return SCHEDULES[schedule]
    return functools.partial(SCHEDULES[schedule], warmup=warmup)
