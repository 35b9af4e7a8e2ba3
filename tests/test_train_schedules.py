"""Schedules against the papers' formulas (minilib/train/schedules.py)."""
import functools
import math

import pytest

from minilib.train import schedules
from minilib.train.schedules import constant, cosine, get_schedule, linear_decay, one_cycle, slanted_triangular


def stlr_paper(t, T, cut_frac=0.1, ratio=32):
    """ULMFiT eq. 3, written out as in the paper (as a fraction of eta_max)."""
    cut = math.floor(T * cut_frac)
    p = t / cut if t < cut else 1 - (t - cut) / (cut * (1 / cut_frac - 1))
    return (1 + p * (ratio - 1)) / ratio


def test_stlr_start_peak_end():
    T = 1000
    assert slanted_triangular(0, T) == pytest.approx(1 / 32)
    assert slanted_triangular(100, T) == pytest.approx(1.0)  # cut = floor(1000 * 0.1)
    assert slanted_triangular(T, T) == pytest.approx(1 / 32)
    assert slanted_triangular(99, T) < 1.0 and slanted_triangular(101, T) < 1.0


@pytest.mark.parametrize("T,cut_frac,ratio", [(1000, 0.1, 32), (350, 0.2, 10), (770, 0.1, 32)])  # T·cut_frac whole: eq. 3 exactly
def test_stlr_matches_equation_3_everywhere(T, cut_frac, ratio):
    for t in range(T + 1):
        assert slanted_triangular(t, T, cut_frac=cut_frac, ratio=ratio) == pytest.approx(
            stlr_paper(t, T, cut_frac, ratio), abs=1e-12)


def test_stlr_tiny_run_does_not_divide_by_zero():
    assert slanted_triangular(0, 5) == pytest.approx(1 / 32)
    assert max(slanted_triangular(t, 5) for t in range(5)) == pytest.approx(1.0)


def test_one_cycle_endpoints_and_peak():
    T = 400
    assert one_cycle(0, T) == pytest.approx(1 / 25)
    assert one_cycle(100, T) == pytest.approx(1.0)  # pct_start 0.25
    assert one_cycle(T, T) == pytest.approx(1e-4)
    assert one_cycle(50, T) == pytest.approx((1 / 25 + 1) / 2)  # halfway up a half-cosine: the mean
    values = [one_cycle(t, T) for t in range(T + 1)]
    assert values.index(max(values)) == 100
    assert all(a <= b for a, b in zip(values[:100], values[1:101]))  # rises, then falls
    assert all(a >= b for a, b in zip(values[100:], values[101:]))


def test_cosine_with_warmup():
    T, w = 1000, 100
    assert cosine(0, T, warmup=w) == pytest.approx(1 / w)
    assert cosine(49, T, warmup=w) == pytest.approx(0.5)
    assert cosine(w, T, warmup=w) == pytest.approx(1.0)
    assert cosine(w + 450, T, warmup=w) == pytest.approx(0.5)  # halfway through the cosine
    assert cosine(T, T, warmup=w) == pytest.approx(0.0, abs=1e-12)
    assert cosine(T, T, warmup=w, final=0.1) == pytest.approx(0.1)


def test_linear_decay_word2vec_floor_and_warmup():
    assert linear_decay(0, 100) == 1.0
    assert linear_decay(50, 100) == pytest.approx(0.5)
    assert linear_decay(100, 100) == pytest.approx(1e-4)  # word2vec never goes below alpha_0 * 1e-4
    assert linear_decay(0, 110, warmup=10) == pytest.approx(0.1)
    assert linear_decay(60, 110, warmup=10) == pytest.approx(0.5)


def test_constant_and_get_schedule():
    assert constant(5, 10) == 1.0
    assert get_schedule("constant", warmup=4)(1, 10) == pytest.approx(0.5)
    assert get_schedule("stlr") is slanted_triangular
    custom = functools.partial(slanted_triangular, cut_frac=0.5)
    assert get_schedule(custom)(50, 100) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="own warm-up"):
        get_schedule("stlr", warmup=10)
    with pytest.raises(ValueError, match="unknown schedule"):
        get_schedule("triangle")
    assert set(schedules.SCHEDULES) == {"constant", "linear", "cosine", "wsd", "stlr", "onecycle"}


@pytest.mark.parametrize("T", [46, 47, 133, 999])
def test_stlr_never_goes_below_its_floor_when_t_cut_frac_is_fractional(T):
    values = [slanted_triangular(t, T) for t in range(T + 1)]
    cut = int(T * 0.1)
    assert min(values) >= 1 / 32 - 1e-12 and values[-1] == pytest.approx(1 / 32)
    assert all(a >= b for a, b in zip(values[cut:], values[cut + 1:]))  # the descent only descends


def test_wsd_warms_up_holds_then_cools_down_over_the_last_fifth():
    wsd = functools.partial(schedules.warmup_stable_decay, warmup=10)
    T = 1000
    assert wsd(0, T) == pytest.approx(0.1) and wsd(9, T) == pytest.approx(1.0)
    assert all(wsd(t, T) == 1.0 for t in range(10, 800))          # held: snapshots share one LR
    assert wsd(800, T) == pytest.approx(1.0) and wsd(900, T) == pytest.approx(0.5)
    assert wsd(999, T) == pytest.approx(1 / 200) and wsd(T, T) == 0.0
    assert get_schedule("wsd", warmup=10)(500, T) == 1.0


def test_at_budget_stretches_steps_keeps_warmup_steps_and_snapshots_every_eighth():
    from minilib.recipes.bert import BERTPretrainConfig
    from minilib.recipes.gpt import GPTPretrainConfig
    from minilib.runtime import UsageError

    gpt = GPTPretrainConfig.for_profile("laptop")
    long = gpt.at_budget(4)
    assert (long.steps, long.schedule, long.eval_every) == (16_000, "wsd", 500)
    assert round(long.warmup * long.steps) == round(gpt.warmup * gpt.steps) == 120
    assert all(round(x * gpt.steps) % long.eval_every == 0 for x in (1 / 8, 1 / 4, 1 / 2, 1, 2, 4))
    bert = BERTPretrainConfig(steps=3_943, warmup=0.05).at_budget(2)
    assert (bert.steps, bert.schedule, bert.eval_every) == (7_886, "wsd", 493)
    with pytest.raises(UsageError):
        gpt.at_budget(0)
