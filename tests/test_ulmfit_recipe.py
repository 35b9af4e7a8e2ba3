"""experiments/ulmfit_recipe.py: candidates are distinct settings, the choice reads held-out error only."""
import dataclasses
import json

import pytest

from minilib import tasks
from minilab.experiments import grid, sample_efficiency as se, ulmfit_recipe as ur


def test_every_candidate_changes_settings_and_scratch_never_gets_stage_cycles():
    configs = {c: ur.config_of(c, "laptop") for c in ur.CANDIDATES}
    assert len({tuple(sorted(dataclasses.asdict(c).items())) for c in configs.values()}) == len(configs)
    assert all(not configs[c].cycle_per_stage for c in ur.candidates_for("scratch"))
    assert set(ur.candidates_for("ulmfit")) == set(ur.ULMFIT_CANDIDATES)
    assert len({ur.slug(c) for c in ur.CANDIDATES}) == len(ur.CANDIDATES)  # one results folder each


def test_choose_takes_the_lowest_held_out_error_at_the_largest_count_per_method():
    rows = [
        {"method": "ulmfit", "n_labels": 500, "error": 0.10, "candidate": "a"},   # best at 500, ignored
        {"method": "ulmfit", "n_labels": 4000, "error": 0.30, "candidate": "a"},
        {"method": "ulmfit", "n_labels": 4000, "error": 0.20, "candidate": "b"},
        {"method": "scratch", "n_labels": 4000, "error": 0.25, "candidate": "c"},
    ]
    assert ur.choose(rows) == {"ulmfit": "b", "scratch": "c"}


def test_best_epoch_reads_the_held_out_curve():
    row = {"curve": [{"epoch": 1, "valid_error": 0.4}, {"epoch": 2, "valid_error": 0.3}, {"epoch": 3, "valid_error": 0.35}]}
    assert ur.best_epoch(row) == 2


@pytest.mark.data
def test_cached_rows_reads_a_point_only_under_its_own_candidate_settings(tmp_path, monkeypatch):
    monkeypatch.setattr(ur, "FOLDER", tmp_path)
    assert ur.cached_rows("trec", "laptop") == []
    valid, ckpt = tasks.get("trec").validation(), se.default_checkpoint("laptop")
    candidate = "a cycle per stage"
    settings = se.settings(ur.config_of(candidate, "laptop"))
    key = grid._key(grid.method("ulmfit"), valid, "laptop", ckpt, settings)
    path = grid.point_path(grid.method("ulmfit"), valid, 500, 0, "laptop", tmp_path / ur.slug(candidate))
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"method": "ulmfit", "n_labels": 500, "error": 0.2, **key}))
    rows = ur.cached_rows("trec", "laptop")
    assert [(r["candidate"], r["error"]) for r in rows] == [(candidate, 0.2)]
    # the same file under another candidate's folder has the wrong settings: not read
    other = grid.point_path(grid.method("ulmfit"), valid, 500, 0, "laptop", tmp_path / ur.slug("one cycle, LR 3e-3"))
    other.parent.mkdir(parents=True)
    other.write_text(path.read_text())
    assert len(ur.cached_rows("trec", "laptop")) == 1


@pytest.mark.data
@pytest.mark.results
def test_the_tuned_recipes_are_what_the_search_chose_on_both_tasks():
    """se.TUNED is typed in the code; it must be the candidate the shipped search results choose."""
    for task in se.TASKS:
        rows = ur.cached_rows(task, "laptop")
        assert rows, f"no cached ulmfit-recipe points for {task}"
        chosen = ur.choose(rows)
        assert ur.CANDIDATES[chosen["scratch"]] == se.TUNED["scratch"], (task, chosen)
        assert ur.CANDIDATES[chosen["ulmfit"]] == se.TUNED["ulmfit"], (task, chosen)


def test_method_config_gives_each_method_its_recipe_only_when_tuned():
    assert se.SIZES["laptop"].tuned and se.SIZES["full"].tuned and not se.SIZES["smoke"].tuned
    base = dataclasses.replace(se.SIZES["laptop"], tuned=False)                  # the literal grid's keys
    assert se.settings(base, "ulmfit") == se.settings(base)
    assert "tuned" not in se.settings(base)
    tuned = dataclasses.replace(base, tuned=True)
    assert se.method_config(tuned, "scratch").clf_lr == 3e-3
    for method in ("ulmfit", "ulmfit-supervised", *se.ABLATIONS):                 # an ablation differs in one piece
        config = se.method_config(tuned, method)
        assert (config.cycle_per_stage, config.clf_epochs, config.lm_epochs, config.clf_lr) == (True, 20, 10, base.clf_lr)
    assert se.settings(tuned, "scratch") != se.settings(tuned, "ulmfit")


def test_candidates_name_folders_and_narrow_the_search():
    import pytest

    from minilab.experiments import ulmfit_recipe
    from minilib.runtime import UsageError

    picked = ulmfit_recipe.some_candidates("one-cycle-lr-3e-3, a-cycle-per-stage")
    assert picked == ["one cycle, LR 3e-3", "a cycle per stage"]
    points = ulmfit_recipe._points(["scratch", "ulmfit"], ["all"], picked)
    assert points == [("all", "scratch", "one cycle, LR 3e-3"), ("all", "ulmfit", "a cycle per stage"),
                      ("all", "ulmfit", "one cycle, LR 3e-3")]
    with pytest.raises(UsageError, match="--candidates no-such"):
        ulmfit_recipe.some_candidates("no-such")
