"""Lesson 04's helpers in minilab.experiments.sample_efficiency: baselines drawn beside the curves,
and the best method at a label count (baselines included). Synthetic summary rows: no data, no training."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from minilab.experiments import sample_efficiency as se  # noqa: E402


def _row(method, n, error, std=0.01, task="rt", seeds=3):
    return {"task": task, "method": method, "n_labels": n, "error": error, "error_std": std, "seeds": seeds}


SUMMARY = [_row("scratch", 100, 0.50), _row("scratch", 1000, 0.30), _row("ulmfit", 100, 0.45),
           _row("ulmfit", 1000, 0.33), _row("ulmfit", 100, 0.10, task="trec")]
BASELINES = [_row("majority", 100, 0.505, 0.0), _row("majority", 1000, 0.505, 0.0),
             _row("bow-lr", 100, 0.44), _row("bow-lr", 1000, 0.28), _row("bow-lr", 100, 0.05, task="trec")]


def test_best_method_includes_baselines_and_filters():
    assert se.best_method(SUMMARY + BASELINES, "rt", 100)["method"] == "bow-lr"
    assert se.best_method(SUMMARY + BASELINES, "rt", 1000)["method"] == "bow-lr"
    assert se.best_method(SUMMARY + BASELINES, "rt", 1000, methods=se.METHODS)["method"] == "scratch"
    assert se.best_method(SUMMARY + BASELINES, "trec", 100, methods=("ulmfit",))["error"] == 0.10  # per task
    assert se.best_method(SUMMARY, "rt", 50) is None


def test_plot_curves_draws_baselines_dashed_and_labelled():
    fig, ax = plt.subplots()
    se.plot_curves(SUMMARY, "rt", ax=ax, baselines=BASELINES)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert {"majority (baseline)", "bow-lr (baseline)"} <= set(lines)
    assert all(lines[k].get_linestyle() == "--" for k in ("majority (baseline)", "bow-lr (baseline)"))
    methods = [line for label, line in lines.items() if "(baseline)" not in label]
    assert len(methods) == 2 and all(line.get_linestyle() == "-" for line in methods)  # scratch, ulmfit: solid
    assert list(lines["bow-lr (baseline)"].get_xdata()) == [100, 1000]  # rt only, sorted by count
    assert np.allclose(lines["bow-lr (baseline)"].get_ydata(), [44.0, 28.0])  # percent, like the methods
    plt.close(fig)


def test_plot_curves_without_baselines_unchanged():
    fig, ax = plt.subplots()
    se.plot_curves(SUMMARY, "rt", ax=ax)
    assert not any("(baseline)" in line.get_label() for line in ax.get_lines())
    plt.close(fig)
