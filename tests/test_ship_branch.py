"""tools/ship_branch.py: the points a model's move to its branch needs are its moving methods' recipe-run points,
each staged on the branch under the same file name; --copy refuses until all are, then copies them unchanged."""
import json
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from minilab.experiments import compute_axis, store
from minilib.models.pretrained import file_sha256
from minilab import shipped

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import ship_branch  # noqa: E402

REAL = store.RESULTS / "gpt" / "trec-gpt-n100-s0-laptop.json"     # a real point: its task key and settings


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / "checkpoints").mkdir()
    for name, body in (("gpt-laptop.pt", b"recipe"), ("gpt-laptop-5x.pt", b"branch")):
        (tmp_path / "checkpoints" / name).write_bytes(body)
    monkeypatch.setattr(shipped, "CHECKPOINTS", tmp_path / "checkpoints")
    monkeypatch.setattr(store, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(compute_axis, "RESULTS_DIR", tmp_path / "results" / "compute-axis")
    return tmp_path


def point(folder, name, sha, source=REAL, **change):
    row = {**json.loads(source.read_text()), "checkpoint_sha256": sha, **change}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(row))
    return folder / name


@pytest.mark.data
def test_a_move_waits_for_every_staged_point_then_copies_them(repo, capsys):
    assert ship_branch.moving_methods("gpt") == ["gpt", "gpt-no-aux", "gpt-tapt"]     # not gpt-scratch
    recipe, branch = (file_sha256(repo / "checkpoints" / n) for n in ("gpt-laptop.pt", "gpt-laptop-5x.pt"))
    name = REAL.name
    grid_point = point(repo / "results" / "gpt", name, recipe)
    point(repo / "results" / "gpt", "trec-gpt-n100-s1-laptop.json", "another checkpoint's", seed=1)   # not the recipe's
    (points,) = ship_branch.plan("gpt")
    assert points["path"] == grid_point and points["staged"] is None
    ((command, n, _),) = ship_branch.commands("gpt", [points])
    assert n == 1 and command == ["-m", "minilib", "experiment", "queue", "--task", "trec", "--methods", "gpt",
                                  "--labels", "100", "--seeds", "1", "--checkpoint", "checkpoints/gpt-laptop-5x.pt",
                                  "--results-dir", "results/compute-axis/gpt/5x", "--fill"]
    assert ship_branch.main(["gpt", "--copy"]) == 2                                   # nothing staged yet: refused
    assert "not staged yet" in capsys.readouterr().err and json.loads(grid_point.read_text())["checkpoint_sha256"] == recipe

    staged = point(repo / "results" / "compute-axis" / "gpt" / "5x", name, branch, error=0.123)
    assert ship_branch.plan("gpt")[0]["staged"]["error"] == 0.123
    assert ship_branch.main(["gpt", "--copy"]) == 0
    assert grid_point.read_bytes() == staged.read_bytes()
    assert "ship-branch: model=gpt points=1 staged=1 missing=0 cpu_s=0" in capsys.readouterr().out
    assert ship_branch.plan("gpt") == []                           # moved: no recipe-run point is left to stage


def test_a_model_without_its_branch_is_one_line(repo, capsys):
    (repo / "checkpoints" / "gpt-laptop-5x.pt").unlink()
    assert ship_branch.main(["gpt"]) == 2 and ship_branch.main(["gpt2"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["no checkpoints/gpt-laptop-5x.pt: train the branch first (python tools/long_runs.py gpt:5)",
                   "'gpt2': name one of gpt, bert-mlm, bert-ltr, bert"]


@pytest.mark.data
def test_run_runs_each_command_in_order_and_stops_at_a_failure(repo, monkeypatch, capsys):
    recipe = file_sha256(repo / "checkpoints" / "gpt-laptop.pt")
    point(repo / "results" / "gpt", REAL.name, recipe)
    point(repo / "results" / "gpt", "trec-gpt-n1000-s0-laptop.json", recipe, labels=1000, n_labels=1000)
    calls = []

    def fake(argv, cwd, env, exit_code=0):
        calls.append((argv, env["MINILIB_PROFILE"]))
        return type("Done", (), {"returncode": exit_code})()

    monkeypatch.setattr(ship_branch.subprocess, "run", fake)
    assert ship_branch.main(["gpt", "--run"]) == 0
    assert [(argv[:5], argv[argv.index("--labels") + 1], profile) for argv, profile in calls] == [
        ([sys.executable, "-m", "minilib", "experiment", "queue"], "100", "laptop"),
        ([sys.executable, "-m", "minilib", "experiment", "queue"], "1000", "laptop")]
    calls.clear()
    monkeypatch.setattr(ship_branch.subprocess, "run", lambda argv, cwd, env: fake(argv, cwd, env, exit_code=3))
    assert ship_branch.main(["gpt", "--run"]) == 3 and len(calls) == 1             # stopped at the first
    assert "ship-branch: stopped: exit 3" in capsys.readouterr().err


SEARCHED = store.RESULTS / "gpt-recipe" / "lr-2.5e-4-10-epochs" / "trec-valid-gpt-n100-s0-laptop.json"   # a real search point


@pytest.mark.data
def test_the_search_is_staged_first_and_a_changed_choice_stops_the_move(repo, monkeypatch, capsys):
    recipe, branch = (file_sha256(repo / "checkpoints" / n) for n in ("gpt-laptop.pt", "gpt-laptop-5x.pt"))
    folder = repo / "results" / "gpt-recipe" / SEARCHED.parent.name
    searched = point(folder, SEARCHED.name, recipe, SEARCHED)
    point(repo / "results" / "gpt", REAL.name, recipe)
    search, grid_point = ship_branch.plan("gpt")
    assert search["path"] == searched and search["search"] is ship_branch.gpt_finetune and search["staged"] is None
    assert grid_point["search"] is None
    first, second = ship_branch.commands("gpt", [search, grid_point])
    assert first[0][:12] == ["-m", "minilib", "experiment", "gpt-recipe", "--task", "trec", "--methods", "gpt",
                             "--labels", "100", "--checkpoint", "checkpoints/gpt-laptop-5x.pt"]
    assert first[0][12:] == ["--results-dir", "results/compute-axis/gpt/5x/gpt-recipe", "--fill"] and first[1] == 1
    assert second[0][3] == "queue"

    staging = repo / "results" / "compute-axis" / "gpt" / "5x"
    staged = point(staging / "gpt-recipe" / SEARCHED.parent.name, SEARCHED.name, branch, SEARCHED, error=0.2)
    point(staging, REAL.name, branch)
    assert ship_branch.plan("gpt")[0]["staged"]["error"] == 0.2
    gf = ship_branch.gpt_finetune
    better = point(staging / "gpt-recipe" / "lr-1e-3", SEARCHED.name, branch, SEARCHED, error=0.1,   # the branch's
                   config={**asdict(gf.paper_config("gpt", "laptop")), **gf.CANDIDATES["LR 1e-3"]})  # search disagrees
    assert ship_branch.main(["gpt", "--copy"]) == 2
    assert "chooses 'LR 1e-3' for gpt, FINE_TUNING says 'LR 2.5e-4, 10 epochs'" in capsys.readouterr().err
    assert json.loads(searched.read_text())["checkpoint_sha256"] == recipe                  # nothing copied
    better.unlink()
    assert ship_branch.main(["gpt", "--copy"]) == 0 and searched.read_bytes() == staged.read_bytes()
