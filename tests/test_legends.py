"""Legends off the data: viz.legend_below / legend_outside move a legend clear of every plotted point, and
viz.legend_overlaps finds one that covers data (so the lessons' self-checks can fail)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from minilib import viz


def crowded(n_axes=2):
    """Panels whose lines fill the plotting area, each with a legend drawn inside it."""
    fig, axes = plt.subplots(1, n_axes, figsize=(5 * n_axes, 4), squeeze=False)
    x = np.logspace(1, 3, 8)
    for ax in axes[0]:
        for k in range(6):
            ax.plot(x, 50 - 5 * np.log(x) + 4 * k, marker="o", label=f"method {k}")
            ax.fill_between(x, 47 - 5 * np.log(x) + 4 * k, 53 - 5 * np.log(x) + 4 * k, alpha=0.1)
        ax.axhline(40, ls="--", color="k", label="majority (baseline)")
        ax.set_xscale("log")
        ax.legend()
    return fig


def test_a_legend_inside_crowded_panels_is_found():
    fig = crowded()
    try:
        assert viz.legend_overlaps(fig), "a legend drawn inside the crowded axes should be reported"
    finally:
        plt.close(fig)


def test_legend_below_clears_the_data_and_renames():
    fig = crowded(3)
    try:
        legend = viz.legend_below(fig, rename={"majority (baseline)": "majority class (no pretraining)"})
        assert viz.legend_overlaps(fig) == []
        assert all(ax.get_legend() is None for ax in fig.axes)
        labels = [t.get_text() for t in legend.get_texts()]
        assert labels.count("method 0") == 1, "each label once for all panels"
        assert "majority class (no pretraining)" in labels
    finally:
        plt.close(fig)


def test_legend_outside_clears_the_data():
    fig = crowded(1)
    try:
        viz.legend_outside(fig.axes[0])
        assert viz.legend_overlaps(fig) == []
    finally:
        plt.close(fig)


@pytest.mark.parametrize("place", ["below", "outside"])
def test_nothing_to_label_gives_no_legend(place):
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2])
    try:
        assert (viz.legend_below(fig) if place == "below" else viz.legend_outside(ax)) is None
    finally:
        plt.close(fig)
