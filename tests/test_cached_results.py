"""The stamped grids of chapters 03 and 04 read back through the grid runner with the numbers the
lessons were written from (mean over 3 seeds at laptop, as in each chapter's table): moving the
code or the cache format must never silently retrain or change a shipped point."""
from dataclasses import replace
from pathlib import Path

import pytest

from minilab.experiments import elmo_downstream as ed
from minilab.experiments import sample_efficiency as se
from tests.conftest import WRITTEN_BY_LESSONS

pytestmark = [pytest.mark.data, pytest.mark.results]   # make check-results; not in make test-fast

# (task, method, labels) -> mean test error over seeds 0-2, as chapter 04's grid table printed it: each method
# with the recipe `experiment ulmfit-recipe` chose for it (se.TUNED), the laptop grid lesson 04 reads
CHOSEN = {("rt", "scratch", 100): 0.458, ("rt", "ulmfit", 100): 0.448, ("rt", "ulmfit", 500): 0.406,
          ("rt", "ulmfit", 1000): 0.392, ("rt", "scratch", 2000): 0.334, ("rt", "ulmfit", 2000): 0.353,
          ("rt", "scratch", "all"): 0.237, ("rt", "ulmfit", "all"): 0.236, ("rt", "ulmfit-supervised", "all"): 0.256,
          ("trec", "scratch", 100): 0.453, ("trec", "ulmfit", 100): 0.446, ("trec", "ulmfit-supervised", 50): 0.545,
          ("trec", "ulmfit", 2000): 0.217, ("trec", "scratch", "all"): 0.156, ("trec", "ulmfit", "all"): 0.147,
          ("trec", "ulmfit-no-discr", 500): 0.279, ("trec", "ulmfit-no-stlr", 500): 0.323,
          ("trec", "ulmfit-no-unfreezing", 500): 0.309, ("trec", "ulmfit-supervised", "all"): 0.141,
          ("rt", "ulmfit-no-discr", 500): 0.398, ("rt", "ulmfit-no-stlr", 500): 0.423,
          ("rt", "ulmfit-no-unfreezing", 500): 0.412}
# the first grid, with the paper's schedule read literally (se.LITERAL_DIR), which §4b of lesson 04 diagnoses
LITERAL = {("rt", "scratch", 100): 0.499, ("rt", "ulmfit", 100): 0.458, ("rt", "scratch", "all"): 0.250,
           ("rt", "ulmfit", "all"): 0.325, ("trec", "scratch", 100): 0.519, ("trec", "ulmfit", 100): 0.491,
           ("trec", "ulmfit-supervised", 1000): 0.292, ("trec", "scratch", "all"): 0.163}
LITERAL_CONFIG = replace(se.SIZES["laptop"], tuned=False)


def _mean_error(task, method, labels, config=None, results_dir=None):
    rows = [se.cached_point(task, labels, method, seed, se.default_checkpoint("laptop"), config, profile="laptop",
                            results_dir=results_dir) for seed in (0, 1, 2)]
    assert all(r is not None for r in rows), "a shipped point no longer matches its cache key"
    (summary,) = se.summarize(rows)
    return summary["error"]


@pytest.mark.parametrize("task,method,labels", list(CHOSEN))
def test_chapter_04_grid_reads_back(task, method, labels):
    assert _mean_error(task, method, labels) == pytest.approx(CHOSEN[task, method, labels], abs=5e-4)


@pytest.mark.parametrize("task,method,labels", list(LITERAL))
def test_chapter_04_literal_grid_reads_back(task, method, labels):
    error = _mean_error(task, method, labels, LITERAL_CONFIG, se.LITERAL_DIR)
    assert error == pytest.approx(LITERAL[task, method, labels], abs=5e-4)


@pytest.mark.parametrize("task", se.TASKS)
def test_chapter_04_grid_is_complete(task):
    """Lesson 04's tables, catch-up multiples and verdicts need every point of the laptop grid: the curves
    and the ablations."""
    config = se.SIZES["laptop"]
    points = {(n, m) for n in config.label_counts for m in se.METHODS}
    points |= {(se.ABLATION_LABELS["laptop"], m) for m in se.ABLATIONS}
    missing = [(n, m, s) for n, m in sorted(points, key=str) for s in config.seeds
               if se.cached_point(task, n, m, s, se.default_checkpoint("laptop"), profile="laptop") is None]
    assert not missing, f"{len(missing)} points of {task}'s chosen-recipe grid are not cached: {missing[:5]}"


# (arm, labels) -> mean RT test accuracy over seeds 0-2, as chapter 03's downstream table printed it
ELMO = {("static", 100): 0.590, ("elmo", 100): 0.550, ("static+elmo", 1000): 0.640, ("untrained", "all"): 0.625,
        ("static+untrained", "all"): 0.682}


@pytest.mark.parametrize("arm,labels", list(ELMO))
def test_chapter_03_grid_reads_back(arm, labels):
    rows = [ed.cached_point(arm, labels, seed, ed.default_checkpoint("laptop"), profile="laptop") for seed in (0, 1, 2)]
    assert all(r is not None for r in rows), "a shipped point no longer matches its cache key"
    (summary,) = ed.summarize(rows)
    assert summary["accuracy"] == pytest.approx(ELMO[arm, labels], abs=5e-4)


@pytest.mark.parametrize("task", ["pos", "trec", "rt"])
@pytest.mark.parametrize("control", ["gpt-scratch", "bert-scratch"])
def test_every_from_scratch_control_learns_where_bag_of_words_does(task, control):
    """A control that sits at the majority class makes 'pretraining helps' mean nothing: wherever bag-of-words
    beats the majority class at 100 labels, each Transformer trained from random weights must too (3 seeds)."""
    from minilab.experiments import grid

    def mean(method):
        rows = grid.cached_rows(task, [method], [100], [0, 1, 2], "laptop")
        assert len(rows) == 3, f"{task} {method} at 100 labels: {len(rows)} of 3 seeds cached"
        return grid.summarize(rows)[0]["error"]

    majority = mean("majority")
    assert mean("bow-lr") < majority
    assert mean(control) < majority - 0.02, f"{control} on {task} does not beat the majority class"


# ----------------------------------------------------------------------------- reading never rewrites

def _snapshot(root):
    """{path: (sha256, inode, mtime_ns)} of every results/ JSON but the baselines' (another run may be filling
    them while this test runs) and those a lesson on the other test worker writes (tests/conftest.py): a file
    rewritten with the same bytes still counts as rewritten."""
    import hashlib

    out = {}
    for path in sorted((root / "results").rglob("*.json")):
        if "baselines" not in path.relative_to(root / "results").parts and path.name not in WRITTEN_BY_LESSONS:
            st = path.stat()
            out[path] = (hashlib.sha256(path.read_bytes()).hexdigest(), st.st_ino, st.st_mtime_ns)
    return out


def _cli(*argv):
    from minilab.cli import main

    assert main(list(argv)) == 0


def _read_paths():
    """(name, a call that only reads cached results): the commands whose every point is cached, and each single
    result stored at laptop (where the shipped results were made), read through the store as its experiment's
    reader reads it (found by store.entries: every registered experiment, no list kept here)."""
    from functools import partial

    from minilab.experiments import store

    calls = {
        "compute-axis --cached-only": lambda: _cli("experiment", "compute-axis", "--cached-only"),
        "scaling (every run cached)": lambda: _cli("experiment", "scaling"),
        "compute (reads checkpoints and cached points)": lambda: _cli("experiment", "compute"),
    }
    for name, profile, variant, _ in store.entries():
        if profile == "laptop":
            calls[name + (f" ({variant})" if variant else "")] = partial(store.load, name, profile, variant=variant)
    return calls


READ_PATHS = list(_read_paths())


@pytest.mark.parametrize("name", READ_PATHS)
def test_reading_a_cached_result_never_rewrites_it(name, monkeypatch):
    """Showing a cached result (a lesson's cell, `experiment NAME --cached-only`, a command whose every point
    is cached) must leave every results file as it is: writing the same numbers again re-stamps a tracked file
    (new time, commit, command) and makes the lessons that read it look stale. A write is intercepted (never
    made: a failing test leaves the repository as it was); one with the file's own content (timings and stamp
    aside) fails the test, one with new content is a computation, reported as a warning (the file may be stale)."""
    import json
    import warnings

    from minilab import provenance
    from minilib import files as core_files
    from minilab.experiments import scaling

    root = provenance.REPO_ROOT
    monkeypatch.setenv("MINILIB_PROFILE", "laptop")
    monkeypatch.setattr(scaling, "train_point", lambda *a, **k: pytest.fail("scaling would train a run"))
    writes = []
    real_atomic = provenance.atomic_write_bytes

    def intercepted(path, data):
        if Path(path).resolve().is_relative_to(root / "results"):
            writes.append((Path(path).resolve(), data))
        else:
            real_atomic(path, data)

    for module in (core_files, provenance):     # the core's writer, and the lab's name for it
        monkeypatch.setattr(module, "atomic_write_bytes", intercepted)
    before = _snapshot(root)
    _read_paths()[name]()
    same = []
    for path, data in writes:
        new = json.loads(data)
        old = json.loads(path.read_text()) if path.is_file() else None
        strip = lambda r: {k: v for k, v in r.items() if k not in provenance.VOLATILE}
        if isinstance(old, dict) and strip(old) == strip(new):
            same.append(path.relative_to(root).as_posix())
        else:
            warnings.warn(f"{name}: computes other content than {path.relative_to(root)} holds (stale?); not written")
    assert not same, f"{name} re-saved cached results unchanged: {same}"
    after = _snapshot(root)
    changed = [p.relative_to(root).as_posix() for p in before.keys() | after.keys() if before.get(p) != after.get(p)]
    assert not changed, f"{name} changed results files: {changed}"
