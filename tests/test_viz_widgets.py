"""Plots and widgets: the shared lesson panels must draw, fit Zipf's law and never raise."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from minilib import story, viz, widgets


def test_timeline_draws_every_milestone():
    ax = viz.timeline()
    labels = [t.get_text() for t in ax.texts]
    assert len(labels) == len(story.MILESTONES)
    assert any(label.startswith("BERT") for label in labels)


def test_zipf_slope_recovers_the_exponent():
    ranks = np.arange(1, 20_001)
    counts = np.floor(1e6 / ranks ** 1.0) + 1
    assert viz.zipf_slope(counts) == pytest.approx(-1.0, abs=0.02)
    steeper = np.floor(1e8 / ranks ** 1.5) + 1
    assert viz.zipf_slope(steeper) == pytest.approx(-1.5, abs=0.05)


def test_zipf_slope_needs_enough_words():
    with pytest.raises(ValueError, match="distinct words"):
        viz.zipf_slope(np.array([5.0, 3.0]))


def test_rank_frequency_sorts_counts():
    assert list(viz.rank_frequency("a b a c a b".split())) == [3, 2, 1]


def test_corpus_explorer_shows_errors_as_a_line(capsys):
    zipfian = [f"w{r}" for r in range(1, 300) for _ in range(3000 // r)]

    def load(name):
        if name == "broken":
            raise FileNotFoundError("cache is empty")
        return zipfian

    panel = widgets.corpus_explorer(load, ["ok", "broken"])
    picker = panel.children[0].children[0]
    capsys.readouterr()
    picker.value = "broken"  # must not raise (outside a kernel, Output prints to stdout)
    assert "FileNotFoundError: cache is empty" in capsys.readouterr().out
    picker.value = "ok"
    shown = capsys.readouterr().out
    assert "distinct words" in shown and "⚠" not in shown
