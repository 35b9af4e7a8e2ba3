"""Automatic checks for the lessons' exercises.

An exercise cell ends with `check(...)`: a right answer prints a tick, a
wrong one raises with a hint, so nbval fails a lesson whose worked answer
has drifted from the library.
"""
from __future__ import annotations

import math


def check(name: str, got, expected, *, rel_tol: float = 1e-6, abs_tol: float = 1e-9, hint: str = "") -> None:
    """Assert `got` equals `expected` (numbers within tolerance, anything else exactly)."""
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        ok = math.isclose(float(got), float(expected), rel_tol=rel_tol, abs_tol=abs_tol)
    else:
        ok = got == expected
    if not ok:
        raise AssertionError(f"{name}: got {got!r}, expected {expected!r}" + (f" — hint: {hint}" if hint else ""))
    print(f"✓ {name}")
