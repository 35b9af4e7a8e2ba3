"""Classroom mode and the teacher's guide.

Classroom mode is one switch, $MINILIB_CLASSROOM=1 (`make classroom`), read by
`minilib.runtime.classroom()`. Under it every widget answers from what is cached at once and live
training is opt-in: a "train this point" button starts disabled beside an "allow live training"
box, and a click without the box ticked trains nothing. These tests fail if a widget would train
live in classroom mode without that opt-in, or if a widget or a lesson makes a training button
some other way.

The teacher's guide (minilib/book.py) is one page per lesson, generated from the notebook: the
50-minute path the lesson marks with ⏱, each step's cells with their measured run times, its
widget and the prediction to ask for before the reveal. Fast and offline: synthetic notebooks in
a temporary folder for the rules, the repository's own lessons for coverage.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import ipywidgets as w
import pytest

from minilib import runtime, widgets
from minilib.experiments import grid
from panels import part, parts, plot_pixels, text

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "lessons"
WIDGETS_PY = REPO / "minilib" / "widgets.py"


# -- the switch -------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, on", [(None, False), ("", False), ("0", False), ("off", False), ("1", True),
                                       ("true", True), (" YES ", True)])
def test_classroom_switch(monkeypatch, value, on):
    if value is None:
        monkeypatch.delenv("MINILIB_CLASSROOM", raising=False)
    else:
        monkeypatch.setenv("MINILIB_CLASSROOM", value)
    assert runtime.classroom() is on


def test_an_unknown_classroom_value_says_what_to_use(monkeypatch):
    monkeypatch.setenv("MINILIB_CLASSROOM", "maybe")
    with pytest.raises(runtime.UsageError, match="use 1 for classroom mode"):
        runtime.classroom()


# -- the two widgets that train live ----------------------------------------------------------------
def _sample_efficiency(monkeypatch, trained):
    from minilib.experiments import sample_efficiency as se

    grid_rows = [{"task": "rt", "method": m, "n_labels": n, "seed": s, "error": 0.3 + 0.01 * s}
                 for m in se.METHODS for n in (20, 40, 100) for s in (0, 1, 2)]

    def fake_run_point(task, n_labels, method, seed, *a, **k):
        trained.append((method, n_labels, seed))
        return {"task": task, "method": method, "n_labels": int(n_labels), "seed": seed, "error": 0.9,
                "seconds": 1.0, "curve": [{"epoch": 1, "train_loss": 0.7}, {"epoch": 2, "train_loss": 0.5}]}

    monkeypatch.setattr(se, "cached_rows", lambda *a, **k: grid_rows)
    monkeypatch.setattr(se, "run_point", fake_run_point)
    monkeypatch.setattr(se, "resolve_labels", lambda task, n: 8000 if n == se.ALL else int(n))
    panel = widgets.sample_efficiency_explorer("rt", "unused.pt", grid_profile="laptop")
    return panel, "error 31.0% ± 0.8% (3 seeds, cached laptop grid)"


def _downstream(monkeypatch, trained):
    from minilib.experiments import elmo_downstream as ed

    def row(arm, n, seed, acc):
        return {"task": "rt", "method": ed.METHOD_PREFIX + arm, "arm": arm, "n_labels": n, "seed": seed,
                "accuracy": acc, "error": 1 - acc, "seconds": 0.1,
                "curve": [{"epoch": e, "test_accuracy": acc - 0.1 / e} for e in (1, 2, 3)]}

    monkeypatch.setattr(ed, "cached_point",
                        lambda arm, n, seed, *a, **k: row(arm, 8000 if n == grid.ALL else n, seed, 0.6 + 0.01 * seed))
    monkeypatch.setattr(ed, "features", lambda *a, **k: trained.append("features"))
    monkeypatch.setattr(ed, "run_point", lambda arm, n, seed, *a, **k: trained.append(arm) or row(arm, n, seed, 0.9))
    panel = widgets.downstream_explorer("unused.pt", grid_profile="laptop")
    return panel, "accuracy 61.0% ± 1.0% (3 seeds, cached laptop grid)"


TRAINING_WIDGETS = {"sample_efficiency_explorer": _sample_efficiency, "downstream_explorer": _downstream}


@pytest.mark.parametrize("name", sorted(TRAINING_WIDGETS))
def test_in_classroom_mode_a_widget_answers_from_the_cache_and_trains_only_after_opting_in(monkeypatch, name):
    monkeypatch.setenv("MINILIB_CLASSROOM", "1")
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    monkeypatch.setattr(widgets, "DOUBLE_CLICK_S", 0.0)   # the clicks below are a person's, seconds apart
    trained: list = []
    panel, cached_line = TRAINING_WIDGETS[name](monkeypatch, trained)
    plot_pixels(panel)
    assert cached_line in text(panel)                             # the cached grid answers at once
    train = part(panel, w.Button, "train this point")
    opt_in = part(panel, w.Checkbox, widgets.LiveTraining.OPT_IN)
    progress_line = parts(panel, w.HTML)[1]
    assert train.disabled and not opt_in.value
    assert "live training is off" in progress_line.value and widgets.LiveTraining.OPT_IN in progress_line.value
    for value in [v for _, v in part(panel, w.SelectionSlider).options]:   # every count answers from the cache
        part(panel, w.SelectionSlider).value = value
        assert "no cached" not in text(panel), value
    part(panel, w.SelectionSlider).value = 100
    train.click()                                                 # a click reaches the handler even when disabled
    train.click()
    assert trained == [], f"{name} trained live in classroom mode without the opt-in"
    assert train.disabled and "live training is off" in progress_line.value
    opt_in.value = True
    assert not train.disabled
    train.click()
    assert trained, f"{name} did not train after the opt-in"
    assert not train.disabled                                     # still allowed after the run
    assert "trained here at smoke sizes" in text(panel)
    opt_in.value = False
    assert train.disabled
    count = len(trained)
    train.click()
    assert len(trained) == count


@pytest.mark.parametrize("name", sorted(TRAINING_WIDGETS))
def test_outside_classroom_mode_the_widget_is_unchanged(monkeypatch, name):
    monkeypatch.delenv("MINILIB_CLASSROOM", raising=False)
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    trained: list = []
    panel, _ = TRAINING_WIDGETS[name](monkeypatch, trained)
    assert not parts(panel, w.Checkbox, widgets.LiveTraining.OPT_IN)
    train = part(panel, w.Button, "train this point")
    assert not train.disabled and "classroom" not in parts(panel, w.HTML)[1].value
    train.click()
    assert trained


def test_in_classroom_mode_the_corpus_explorer_loads_every_corpus_before_it_is_shown(monkeypatch):
    calls = []

    def load(name):
        calls.append(name)
        return (f"{name} word " * 400).split() + [f"{name}{i}" for i in range(300)]

    monkeypatch.setenv("MINILIB_CLASSROOM", "1")
    panel = widgets.corpus_explorer(load, ["a", "b", "c"])
    assert sorted(calls) == ["a", "b", "c"]
    part(panel, w.Dropdown).value = "c"
    assert "loading" not in text(panel) and "c:" in text(panel)
    assert sorted(calls) == ["a", "b", "c"]                       # answered from what was loaded

    calls.clear()
    monkeypatch.delenv("MINILIB_CLASSROOM")
    widgets.corpus_explorer(load, ["a", "b", "c"])
    assert calls == ["a"]                                          # the usual: one corpus, the others on demand


# -- no other way to train from a widget ------------------------------------------------------------
TRAINS = re.compile(r"\brun_point\(|\btrain_live\(|\.fit\(|\bfine_tune\w*\(|\bpretrain\w*\(")


def _functions(path: Path) -> dict[str, str]:
    source = path.read_text(encoding="utf-8")
    return {node.name: ast.get_source_segment(source, node) for node in ast.parse(source).body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_every_widget_that_trains_makes_its_button_through_live_training():
    functions = _functions(WIDGETS_PY)
    training = {name for name, src in functions.items() if TRAINS.search(src) and name != "LiveTraining"}
    assert set(TRAINING_WIDGETS) <= training, training            # the scan finds the two known ones
    for name in training:
        assert "LiveTraining(" in functions[name], f"widgets.{name} trains but its button is not a LiveTraining"
    for name, src in functions.items():
        if name != "LiveTraining":
            assert not re.search(r"w\.Button\([^)]*train", src), f"widgets.{name} makes a training button by hand"


def test_no_lesson_makes_a_training_button_of_its_own():
    for nb in sorted(LESSONS.glob("[0-9][0-9]-*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            src = "".join(cell["source"])
            if cell["cell_type"] == "code" and re.search(r"Button\([^)]*train", src, re.I):
                pytest.fail(f"{nb.name} cell {i} makes a training button; use minilib.widgets.LiveTraining")


def test_the_scan_can_fail(tmp_path):
    bad = tmp_path / "widgets.py"
    bad.write_text("def explorer():\n    b = w.Button(description='train this point')\n    run_point(1)\n")
    functions = _functions(bad)
    assert TRAINS.search(functions["explorer"]) and "LiveTraining(" not in functions["explorer"]
