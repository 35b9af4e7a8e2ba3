"""Classroom mode and the teacher's guide.

Classroom mode is one switch, $MINILIB_CLASSROOM=1 (`make classroom`), read by
`minilib.runtime.classroom()`. Under it every widget answers from what is cached at once and live
training is opt-in: a "train this point" button starts disabled beside an "allow live training"
box, and a click without the box ticked trains nothing. These tests fail if a widget would train
live in classroom mode without that opt-in, or if a widget or a lesson makes a training button
some other way.

The teacher's guide (book/pages.py) is one page per lesson, generated from the notebook: the
50-minute path the lesson marks with ◷, each step's cells with their measured run times, its
widget and the prediction to ask for before the reveal. Fast and offline: synthetic notebooks in
a temporary folder for the rules, the repository's own lessons for coverage.
"""
from __future__ import annotations

import ast
import html
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import ipywidgets as w
import pytest

from minilib import runtime
from minilab import widgets
from minilab.experiments import grid
from panels import part, parts, plot_pixels, text

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "lessons"
WIDGETS_PY = REPO / "minilab" / "widgets.py"


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
    from minilab.experiments import sample_efficiency as se

    grid_rows = [{"task": "rt", "method": m, "n_labels": n, "seed": s, "error": 0.3 + 0.01 * s}
                 for m in se.METHODS for n in (20, 40, 100) for s in (0, 1, 2)]

    def fake_run_point(task, n_labels, method, seed, *a, **k):
        trained.append((method, n_labels, seed))
        return {"task": task, "method": method, "n_labels": int(n_labels), "seed": seed, "error": 0.9,
                "seconds": 1.0, "curve": [{"epoch": 1, "train_loss": 0.7}, {"epoch": 2, "train_loss": 0.5}]}

    monkeypatch.setattr(se, "cached_rows", lambda *a, **k: grid_rows)
    monkeypatch.setattr(se, "run_point", fake_run_point)
    monkeypatch.setattr(se, "lm_cache_path", lambda *a, **k: Path(__file__))   # stage (b) is cached
    monkeypatch.setattr(se, "resolve_labels", lambda task, n: 8000 if n == se.ALL else int(n))
    panel = widgets.sample_efficiency_explorer("rt", "unused.pt", grid_profile="laptop")
    return panel, "error 31.0% ± 0.8% (3 seeds, cached laptop grid)"


def _downstream(monkeypatch, trained):
    from minilab.experiments import elmo_downstream as ed

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


def _league(monkeypatch, trained):
    from minilab.experiments import grid as grid_runner
    from minilab.experiments import league

    cells = [{"task": t, "labels": n, "n_labels": n if n != grid.ALL else 8000, "era": era, "method": m,
              "error": 0.31 if m != "bert" else None, "error_std": 0.008 if m != "bert" else None,
              "seeds": 3 if m != "bert" else 0, "best": m == "gpt", "reason": None if m != "bert" else "not run"}
             for t in league.TASKS for n in league.LABELS for era, m in league.SENTENCE.items()]
    monkeypatch.setattr(league, "table", lambda *a, **k: cells)

    def fake_run_point(task, n_labels, method, seed, *a, **k):
        trained.append((method, n_labels, seed))
        return {"task": task.name, "method": method, "n_labels": 100, "seed": seed, "error": 0.9, "seconds": 1.0}

    monkeypatch.setattr(grid_runner, "run_point", fake_run_point)
    return widgets.league_explorer(grid_profile="laptop"), "error 31.0% ± 0.8% (3 seeds)"


TRAINING_WIDGETS = {"sample_efficiency_explorer": _sample_efficiency, "downstream_explorer": _downstream,
                    "league_explorer": _league}


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
    assert "live training is off" not in progress_line.value                # the line follows the box at once
    allowed = html.unescape(progress_line.value)
    assert "live training is allowed" in allowed and "press 'train this point'" in allowed
    train.click()
    assert trained, f"{name} did not train after the opt-in"
    assert not train.disabled                                     # still allowed after the run
    assert "trained here at smoke sizes" in text(panel)
    opt_in.value = False
    assert train.disabled and "live training is off" in progress_line.value
    count = len(trained)
    train.click()
    assert len(trained) == count


def test_in_classroom_mode_ulmfit_without_a_cached_stage_b_is_not_trained_and_the_panel_says_how(monkeypatch, tmp_path):
    from minilab.experiments import sample_efficiency as se

    monkeypatch.setenv("MINILIB_CLASSROOM", "1")
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    monkeypatch.setattr(widgets, "DOUBLE_CLICK_S", 0.0)
    trained: list = []
    panel, _ = _sample_efficiency(monkeypatch, trained)
    monkeypatch.setattr(se, "lm_cache_path", lambda *a, **k: tmp_path / "lm-missing.pt")
    part(panel, w.Checkbox, widgets.LiveTraining.OPT_IN).value = True
    part(panel, w.SelectionSlider).value = 100
    part(panel, w.Button, "train this point").click()
    stage_b = [m for m in se.METHODS if se.RECIPES[m].lm_fine_tuning]
    assert stage_b and [m for m, _, _ in trained] == [m for m in se.METHODS if m not in stage_b]
    shown = " ".join(text(panel).split())
    assert f"{', '.join(stage_b)}: not trained in classroom mode" in shown
    seeds = part(panel, w.IntText, "seed").value + 1                               # 0..the seed asked for
    assert f"experiment sample-efficiency --task rt --methods {','.join(stage_b)} --labels 100 --seeds {seeds}" in shown
    for box in parts(panel, w.Checkbox)[1:]:                                       # only a stage-(b) method ticked
        box.value = box.description in {se.METHOD_STYLE[m]["label"].split(" (")[0] for m in stage_b}
    trained.clear()
    part(panel, w.Button, "train this point").click()
    assert trained == [] and "not trained in classroom mode" in " ".join(text(panel).split())


def outside_classroom(monkeypatch, name):
    """(panel, the points it trained) of a training widget built outside classroom mode, at smoke."""
    monkeypatch.delenv("MINILIB_CLASSROOM", raising=False)
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    trained: list = []
    panel, _ = TRAINING_WIDGETS[name](monkeypatch, trained)
    return panel, trained


@pytest.mark.parametrize("name", sorted(TRAINING_WIDGETS))
def test_outside_classroom_mode_the_widget_is_unchanged(monkeypatch, name):
    panel, trained = outside_classroom(monkeypatch, name)
    assert not parts(panel, w.Checkbox, widgets.LiveTraining.OPT_IN)
    train = part(panel, w.Button, "train this point")
    assert not train.disabled and "classroom" not in parts(panel, w.HTML)[1].value
    train.click()
    assert trained


@pytest.mark.parametrize("name", sorted(TRAINING_WIDGETS))
def test_a_seed_outside_the_range_is_clamped_and_the_panel_says_so(monkeypatch, name):
    panel, _ = outside_classroom(monkeypatch, name)
    seed, progress_line = part(panel, w.IntText, "seed"), parts(panel, w.HTML)[1]
    seed.value = 150                                              # the old box turned this into 99 silently
    assert seed.value == widgets.SEEDS[1] and "seed 150 is outside 0–99: set to 99" in progress_line.value
    seed.value = -3
    assert seed.value == 0 and "seed -3 is outside 0–99: set to 0" in progress_line.value
    seed.value = 7                                                # in range: kept, nothing said
    assert seed.value == 7 and "seed -3" in progress_line.value
    part(panel, w.Button, "train this point").click()
    assert "seed 7" in text(panel)


@pytest.mark.parametrize("name", sorted(TRAINING_WIDGETS))
def test_the_newest_live_point_is_the_first_line_of_the_text(monkeypatch, name):
    monkeypatch.delenv("MINILIB_CLASSROOM", raising=False)
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    monkeypatch.setattr(widgets, "DOUBLE_CLICK_S", 0.0)
    trained: list = []
    panel, cached_line = TRAINING_WIDGETS[name](monkeypatch, trained)
    part(panel, w.SelectionSlider).value = 100
    seed = part(panel, w.IntText, "seed")
    for value in (5, 6):                                         # two clicks: the second one's point on top
        seed.value = value
        part(panel, w.Button, "train this point").click()
        first = text(panel).strip().splitlines()[0]
        assert "trained here" in first and f"seed {value}" in first, text(panel)
    assert cached_line in text(panel)                             # the cached lines are still there, below


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
                pytest.fail(f"{nb.name} cell {i} makes a training button; use minilab.widgets.LiveTraining")


def test_the_scan_can_fail(tmp_path):
    bad = tmp_path / "widgets.py"
    bad.write_text("def explorer():\n    b = w.Button(description='train this point')\n    run_point(1)\n")
    functions = _functions(bad)
    assert TRAINS.search(functions["explorer"]) and "LiveTraining(" not in functions["explorer"]


# -- the teacher's guide ----------------------------------------------------------------------------
from book import pages as book  # noqa: E402


def _md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(source: str, seconds: float, count: int, outputs=(), start="2026-12-01T10:00:00") -> dict:
    import datetime as dt

    t0 = dt.datetime.fromisoformat(start)
    t1 = t0 + dt.timedelta(seconds=seconds)
    meta = {"execution": {"iopub.execute_input": t0.isoformat() + "Z", "shell.execute_reply": t1.isoformat() + "Z"}}
    return {"cell_type": "code", "metadata": meta, "execution_count": count, "source": source, "outputs": list(outputs)}


PRINTED = {"output_type": "stream", "name": "stdout", "text": "42\n"}
PLOT = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}
WIDGET = {"output_type": "display_data", "data": {"application/vnd.jupyter.widget-view+json": {}, "text/plain": "VBox"}}


def _lesson(folder: Path, name: str = "09-toy.ipynb") -> Path:
    cells = [
        _md("# 09 · Toy\n\nIntro.\n\n> **◷ The 40-minute class path** runs §1 (counting, 15 min) and §3."),
        _code("PROFILE = 'laptop'\nprint(f'profile={PROFILE}')", 2.5, 1,
              [{"output_type": "stream", "name": "stdout", "text": "profile=laptop  device=cpu\n"}]),
        _md("## 1. ◷ Counting\n\nWe count words. Before running, predict: will the count be odd or even?"),
        _code("counts = {'a': 1}\nprint(counts)", 90.0, 2, [PRINTED]),
        _md("## 2. Background\n\nNot on the path."),
        _code("model = 'trained'  # made here, read on the path", 30.0, 3, [PRINTED]),
        _md("## 3. ◷ The model\n\nA long section about the model " + "word " * 200),
        _code("print(model, counts)", 0.25, 4, [PLOT]),
        _md("Off the classroom\npath: this cell trains for an hour."),
        _code("slow = 1", 3600.0, 5, [PRINTED]),
        _md("### The model, again\n\nA subsection."),
        _code("widgets.corpus_explorer(load, names)", 1.0, 6, [WIDGET]),
        _md("## 4. The model, again\n\nSame words as a subsection's heading."),
        _md("## Exercises\n\n**1. ◷ By hand.** Compute it. What is the count of the word a in the text?"),
        _code("answer = None", 0.0, 7, [PRINTED]),
        _md("**2. Later.** Not on the path."),
        _code("answer = None", 0.0, 8, [PRINTED]),
    ]
    path = folder / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_a_lessons_path_its_cells_timings_and_predictions_are_read_from_the_notebook(tmp_path):
    nb = _lesson(tmp_path)
    ours = {"09-toy": {"3. The model": "Will the model print anything?"}}
    g = book.teachers_guide(nb, ours, {"corpus_explorer": ("Pick a corpus", False)})
    assert g.profile == "laptop" and g.class_minutes == 40 and not g.proposed
    assert g.setup.count == 1 and g.setup.seconds == pytest.approx(2.5)
    assert [s.title for s in g.steps] == ["1. Counting", "3. The model", "Exercise 1: By hand"]
    counting, model, exercise = g.steps
    assert counting.prediction == "Before running, predict: will the count be odd or even?"
    assert counting.prediction_from == "lesson" and counting.minutes_stated == 15
    assert model.prediction_from == "guide" and model.prediction == "Will the model print anything?"
    assert exercise.prediction == "What is the count of the word a in the text?"
    assert [c.count for c in model.cells] == [4, 6]              # its subsection's widget cell, not the off-path one
    assert [c.count for c in model.skipped] == [5]
    assert model.widgets == [("corpus_explorer", "Pick a corpus", False)] and model.reveal.count == 4
    assert [(c.count, names) for c, _, names in g.needed] == [(3, ["model"])]   # §2 defines what §3 reads
    assert sum(s.minutes for s in g.steps) == 40
    assert model.minutes > exercise.minutes >= book.MIN_STEP_MINUTES  # by the length of their text
    assert counting.anchor == "1--counting" and model.anchor == "3--the-model"
    page = book.teachers_guide_page(g, "../lessons/09-toy.ipynb")
    assert "1.5 min" in page and "2.5 s" in page and "60.0 min" in page   # printed from the metadata
    assert "[open the lesson](../lessons/09-toy.ipynb)" in page
    assert "(../lessons/09-toy.ipynb#3--the-model)" in page and "(../lessons/09-toy.ipynb#exercises)" in page
    assert "The 40-minute class path" in page
    assert "| 0–15 |" in page                                     # the lesson's own 15 minutes first
    assert "*(the lesson's words)*" in page and "*(this guide)*" in page


def test_repeated_headings_get_myst_s_numbered_anchors(tmp_path):
    nb = tmp_path / "09-x.ipynb"
    nb.write_text(json.dumps({"cells": [_md("# 09 · X"), _md("## ◷ Summary"), _md("### Summary"),
                                        _md("## Summary")], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    sections, _, _ = book.lesson_sections(nb)
    assert [s.anchor for s in sections] == ["09--x", "-summary", "summary", "summary-1"]


def test_a_lesson_without_a_path_gets_the_guides_proposal_or_says_it_has_none(tmp_path):
    nb = tmp_path / "09-plain.ipynb"
    nb.write_text(json.dumps({"cells": [_md("# 09 · Plain"), _code("x = 1", 1.0, 1), _md("## 1. One"),
                                        _code("print(x)", 2.0, 2, [PRINTED]), _md("## 2. Two"),
                                        _code("print(x + 1)", 3.0, 3, [PRINTED])],
                              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    g = book.teachers_guide(nb, {"09-plain": {"2. Two": "Odd or even?"}}, {})
    assert g.proposed and [s.title for s in g.steps] == ["2. Two"] and g.steps[0].minutes == book.CLASS_MINUTES
    assert "this guide's proposal" in book.teachers_guide_page(g, "x")
    bare = book.teachers_guide(nb, {}, {})
    assert not bare.steps and "marks no classroom path yet" in book.teachers_guide_page(bare, "x")


def test_every_lesson_has_a_guide_page_listed_in_the_guides_index():
    lessons = book.lesson_files(LESSONS)
    pages = book.teachers_guide_pages(LESSONS)
    assert set(pages) == {nb.stem for nb in lessons} | {"index"}
    toctree = pages["index"].split("```{toctree}")[1]
    for nb in lessons:
        assert nb.stem in toctree and f"]({nb.stem}.md)" in pages["index"]
        assert f"[open the lesson](../lessons/{nb.name})" in pages[nb.stem]


def test_every_step_of_a_lessons_path_has_a_prediction_and_minutes_that_add_up():
    predictions = book.guide_predictions()
    for nb in book.lesson_files(LESSONS):
        g = book.teachers_guide(nb, predictions)
        marked = any(s.marked for s in book.lesson_sections(nb)[0])
        if not (marked or nb.stem in predictions):
            continue   # a new lesson without a path: its page says so
        assert g.steps, f"{nb.name}: no step found on its path"
        missing = [s.title for s in g.steps if not s.prediction]
        assert not missing, f"{nb.name}: no prediction for {missing}; add them to book/guide/predictions.md"
        assert sum(s.minutes for s in g.steps) == g.class_minutes, nb.name
        assert all(s.reveal is not None or not s.cells for s in g.steps), nb.name


def test_every_prediction_in_the_guide_file_belongs_to_a_step():
    predictions = book.guide_predictions()
    assert predictions, f"{book.PREDICTIONS} is missing or empty"
    for stem, steps in predictions.items():
        nb = LESSONS / f"{stem}.ipynb"
        assert nb.is_file(), f"book/guide/predictions.md names {stem}, which is not a lesson"
        titles = {s.title for s in book.teachers_guide(nb, predictions).steps}
        stray = set(steps) - titles
        assert not stray, f"book/guide/predictions.md: {stem} has no path step titled {sorted(stray)}"
        assert all(steps.values()), f"book/guide/predictions.md: an empty prediction under {stem}"


def test_the_guides_run_times_are_the_notebooks_own():
    """The slowest cell of every lesson appears on its page with the time its metadata records."""
    pages = book.teachers_guide_pages(LESSONS)
    for nb in book.lesson_files(LESSONS):
        g = book.teachers_guide(nb)
        timed = [c for c in g.cells if c.seconds is not None]
        if not timed:
            continue
        slowest = max(timed, key=lambda c: c.seconds)
        cell = json.loads(nb.read_text(encoding="utf-8"))["cells"][slowest.index]["metadata"]["execution"]
        import datetime as dt
        seconds = (dt.datetime.fromisoformat(cell["shell.execute_reply"].replace("Z", "+00:00"))
                   - dt.datetime.fromisoformat(cell["iopub.execute_input"].replace("Z", "+00:00"))).total_seconds()
        assert f"| {slowest.label} | `{slowest.first_line.replace('|', chr(92) + '|')}` |" in pages[nb.stem]
        assert book._duration(seconds) in pages[nb.stem], (nb.name, seconds)
