"""The one statistics rule: sample std over seeds and Welch's interval for a difference."""
import math

import pytest

from minilib.eval.stats import beyond, difference_interval, mean_std


def test_mean_std_is_the_sample_std():
    mean, std = mean_std([1.0, 2.0, 3.0])
    assert mean == 2.0 and std == pytest.approx(1.0)          # population std would be 0.816
    assert mean_std([0.5]) == (0.5, 0.0)


def test_welch_interval_matches_a_hand_computation():
    a, b = [0.46, 0.45, 0.48], [0.36, 0.38, 0.35]
    lo, hi = difference_interval(a, b)
    # se² = s_a²/3 + s_b²/3; dof by Welch-Satterthwaite; t(0.975, dof) from scipy
    va, vb = 0.000233333 / 3, 0.000233333 / 3
    se = math.sqrt(va + vb)
    assert (lo + hi) / 2 == pytest.approx(0.1 - 1e-12, abs=1e-9)
    assert (hi - lo) / 2 == pytest.approx(2.776 * se, rel=1e-3)    # dof 4: t = 2.776
    assert beyond(a, b) and not beyond(a, [0.47, 0.40, 0.52])
    assert difference_interval([0.5], [0.4, 0.3]) == (-math.inf, math.inf)


def test_compare_says_which_side_of_zero_the_interval_lies():
    from minilib.eval.stats import compare, interval_text

    lower = compare([0.36, 0.37, 0.35], [0.46, 0.47, 0.45])
    assert lower["side"] == "lower" and lower["interval"][1] < 0
    assert compare([0.46, 0.47, 0.45], [0.36, 0.37, 0.35])["side"] == "higher"
    assert compare([0.46, 0.36, 0.56], [0.45, 0.47, 0.46])["side"] == "within"
    assert interval_text(lower).startswith("-0.100 [")
