"""A user's task (a CSV) caches its grid points in the user's data cache, never in the repository's results/;
the repository's own tasks keep results/ (experiments/grid.py: results_folder)."""
import pytest

from minilib import tasks
from minilab import provenance
from minilab.cli import main
from minilab.experiments import grid
from tests.conftest import WRITTEN_BY_LESSONS

RESULTS = provenance.REPO_ROOT / "results"


def tree(root):
    """Every file under root (ignored ones too) with its size and mtime."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
            if p.is_file() and p.name not in WRITTEN_BY_LESSONS}   # another worker's lesson writes those (conftest)


@pytest.fixture
def csv_task(tmp_path, monkeypatch):
    monkeypatch.setenv("MINILIB_DATA", str(tmp_path / "data-cache"))
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    path = tmp_path / "mine.csv"
    rows = [f"a fine film number {i} here,pos" if i % 2 else f"a dull film number {i} here,neg" for i in range(80)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return path


def test_a_csv_run_leaves_results_untouched_and_caches_in_the_data_cache(csv_task, tmp_path, capsys):
    before = tree(RESULTS)
    code = main(["experiment", "sample-efficiency", "--task", str(csv_task), "--labels", "20", "--seeds", "2",
                 "--methods", "majority,bow-lr"])
    out = capsys.readouterr().out
    assert code == 0 and "sample-efficiency: mine labels=20" in out
    assert tree(RESULTS) == before                                      # not one file written or rewritten
    cached = sorted(p.name for p in (tmp_path / "data-cache" / "results" / "baselines").iterdir())
    assert cached == [f"mine-{m}-n20-s{s}-smoke.json" for m in ("bow-lr", "majority") for s in (0, 1)]
    assert str(tmp_path / "data-cache" / "results") in out
    # the second run reads them back from there (a cache hit trains nothing)
    calls = []
    real = grid.METHODS["majority"]
    monkeypatch_train = grid.Method(real.name, real.family, lambda *a, **k: calls.append(1) or real.train(*a, **k),
                                    real.settings, real.checkpoint, real.kinds, real.label)
    grid.METHODS["majority"] = monkeypatch_train
    try:
        assert main(["experiment", "sample-efficiency", "--task", str(csv_task), "--labels", "20", "--seeds", "2",
                     "--methods", "majority"]) == 0
    finally:
        grid.METHODS["majority"] = real
    assert calls == []


def test_a_folder_under_results_moves_to_the_data_cache_for_a_user_task(csv_task, tmp_path):
    mine, rt = tasks.get(str(csv_task)), tasks.Task("rt", "sentence", ("a", "b"), tasks.Split([], []), tasks.Split([], []))
    m = grid.method("majority")
    cache = tmp_path / "data-cache" / "results"
    assert grid.point_path(m, mine, 20, 0, "smoke") == cache / "baselines" / "mine-majority-n20-s0-smoke.json"
    assert grid.point_path(m, rt, 20, 0, "smoke") == RESULTS / "baselines" / "rt-majority-n20-s0-smoke.json"
    assert grid.point_path(m, mine, 20, 0, "smoke", RESULTS / "gpt-recipe" / "lr-1e-3").parent == \
        cache / "gpt-recipe" / "lr-1e-3"                                  # a command's own folder in results/ too
    assert grid.point_path(m, mine.validation(), 20, 0, "smoke").parent == cache / "baselines"
    assert grid.point_path(m, mine, 20, 0, "smoke", tmp_path / "elsewhere").parent == tmp_path / "elsewhere"
