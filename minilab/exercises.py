"""Automatic checks for the lessons' exercises.

A worked exercise ends with `check(answer, ...)`: the learner replaces
`answer = None` with their own computation; a right answer prints a tick,
a wrong one raises with a hint. An open exercise changes an experiment
and predicts its outcome first (compare_prediction). Neither ships with
its answer filled in.
"""
from __future__ import annotations

import math
from typing import Any, Callable


def check(name: str, got, expected, *, rel_tol: float = 1e-6, abs_tol: float = 1e-9, hint: str = "") -> None:
    """Assert `got` equals `expected` (numbers within tolerance, anything else exactly). `got` None:
    the learner has not answered yet — say so and pass (a lesson ships without its answers)."""
    if got is None:
        print(f"✎ {name}: replace None with your answer (code that computes it), then run this cell again")
        return
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        ok = math.isclose(float(got), float(expected), rel_tol=rel_tol, abs_tol=abs_tol)
    else:
        ok = got == expected
    if not ok:
        raise AssertionError(f"{name}: got {got!r}, expected {expected!r}" + (f" — hint: {hint}" if hint else ""))
    print(f"✓ {name}")


def compare_prediction(name: str, predicted, run: Callable[[], Any], choices: tuple, *, hint: str = "") -> bool | None:
    """An open exercise: the learner writes `predicted` (one of `choices`) *before* running their changed
    experiment; `run()` performs it and returns what it shows (one of `choices`). Unanswered (None):
    nothing runs — a lesson never shows the answer before the prediction — and it passes, so an
    untouched lesson still runs. A prediction outside `choices` raises. Otherwise runs the experiment,
    prints both and returns whether they agree — a wrong prediction is the start of the exercise, not
    an error."""
    if predicted is None:
        print(f"✎ {name}: write your prediction ({' or '.join(map(repr, choices))}) first, then run this cell again")
        return None
    if predicted not in choices:
        raise AssertionError(f"{name}: prediction {predicted!r} — write one of {', '.join(map(repr, choices))}")
    observed = run()
    if observed not in choices:
        raise AssertionError(f"{name}: the run shows {observed!r}, not one of {choices} — did the experiment run?")
    agree = predicted == observed
    print(f"{'✓' if agree else '✗'} {name}: you predicted {predicted!r}; your run shows {observed!r}"
          + ("" if agree or not hint else f" — {hint}"))
    return agree
