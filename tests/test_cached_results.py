"""The stamped grids of chapters 03 and 04 read back through the grid runner with the numbers the
lessons were written from (mean over 3 seeds at laptop, as in each chapter's table): moving the
code or the cache format must never silently retrain or change a shipped point."""
import pytest

from minilib.experiments import elmo_downstream as ed
from minilib.experiments import sample_efficiency as se

pytestmark = pytest.mark.data

# (task, method, labels) -> mean test error over seeds 0-2, as chapter 04's grid table printed it
ULMFIT = {("rt", "scratch", 100): 0.499, ("rt", "ulmfit", 100): 0.458, ("rt", "scratch", "all"): 0.250,
          ("rt", "ulmfit", "all"): 0.325, ("trec", "scratch", 100): 0.519, ("trec", "ulmfit", 100): 0.491,
          ("trec", "ulmfit-supervised", 1000): 0.292, ("trec", "scratch", "all"): 0.163}
# (arm, labels) -> mean RT test accuracy over seeds 0-2, as chapter 03's downstream table printed it
ELMO = {("static", 100): 0.590, ("elmo", 100): 0.550, ("static+elmo", 1000): 0.640, ("untrained", "all"): 0.625,
        ("static+untrained", "all"): 0.682}


@pytest.mark.parametrize("task,method,labels", list(ULMFIT))
def test_chapter_04_grid_reads_back(task, method, labels):
    rows = [se.cached_point(task, labels, method, seed, se.default_checkpoint("laptop"), profile="laptop")
            for seed in (0, 1, 2)]
    assert all(r is not None for r in rows), "a shipped point no longer matches its cache key"
    (summary,) = se.summarize(rows)
    assert summary["error"] == pytest.approx(ULMFIT[task, method, labels], abs=5e-4)


@pytest.mark.parametrize("arm,labels", list(ELMO))
def test_chapter_03_grid_reads_back(arm, labels):
    rows = [ed.cached_point(arm, labels, seed, ed.default_checkpoint("laptop"), profile="laptop") for seed in (0, 1, 2)]
    assert all(r is not None for r in rows), "a shipped point no longer matches its cache key"
    (summary,) = ed.summarize(rows)
    assert summary["accuracy"] == pytest.approx(ELMO[arm, labels], abs=5e-4)
