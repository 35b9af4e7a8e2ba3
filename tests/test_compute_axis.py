"""The compute axis (experiments/compute_axis.py): budget marks are the long run's snapshots, each becomes a
loadable checkpoint with the snapshot's weights and the same bytes when rebuilt, each claim's effect is
comparison minus winner at every mark, and the summary reads back by recorded sha256 without being rewritten."""
import io
import json
import re
import shutil

import pytest
import torch

from minilib import data
from minilab import provenance
from minilab.experiments import compute_axis, grid, store
from minilib.models.gpt import GPT
from minilib.models.pretrained import file_sha256, half_state, load_pretrained
from minilib.recipes.gpt import pretrain_gpt


def test_trend_slope_per_decade_and_crossover():
    trend = compute_axis.fit_trend([1 / 8, 1, 8], [-0.09, -0.06, -0.03])
    assert trend["slope_per_decade"] == pytest.approx(0.03 / 0.90309, rel=1e-4)
    assert trend["intercept"] == pytest.approx(-0.06, abs=1e-9)                  # the effect at 1x
    assert trend["crossover_x"] == pytest.approx(10 ** (0.06 / trend["slope_per_decade"]), rel=1e-6)
    assert compute_axis.fit_trend([1, 2, 4], [-0.02, -0.03, -0.05])["crossover_x"] is None   # moving away
    assert compute_axis.fit_trend([1, 2], [0.01, 0.02])["crossover_x"] is None       # already the paper's way
    assert compute_axis.fit_trend([1], [0.1])["slope_per_decade"] is None


def _line(points):
    series = [{"budget_x": x, "effect": e, "effect_std": sd} for x, e, sd in points]
    trend = compute_axis.fit_trend([p["budget_x"] for p in series], [p["effect"] for p in series])
    return {"claim": "gpt_vs_scratch", "task": "trec", "series": series, **trend}


def test_verdict_says_what_the_series_shows():
    v = compute_axis.verdict
    assert "no budget measured yet" in v(_line([]))
    assert "too few for a trend" in v(_line([(1, -0.1, 0.01), (2, -0.05, 0.01)]))
    assert "already holds" in v(_line([(1, -0.1, 0.01), (2, 0.0, 0.01), (4, 0.05, 0.01)]))
    assert "no trend toward" in v(_line([(1, -0.1, 0.01), (2, -0.1, 0.01), (4, -0.12, 0.01)]))
    # a steady trend: the crossover is printed with its interval, which closes within 10x the last budget
    steady = _line([(1, -0.100, 0.01), (2, -0.0795, 0.01), (4, -0.0605, 0.01), (8, -0.0398, 0.01)])
    lo, hi = steady["crossover_interval"]
    assert lo < steady["crossover_x"] < hi < 80
    assert f"crosses 0 at about {steady['crossover_x']:.3g}x (95 % interval" in v(steady)
    # a noisy one with the same direction: the interval does not close, so no crossover is claimed
    noisy = _line([(1, -0.10, 0.01), (2, -0.02, 0.01), (4, -0.09, 0.01), (8, -0.05, 0.01)])
    assert noisy["crossover_x"] is not None and "no crossover within 10x of our largest budget (8x)" in v(noisy)
    assert "crosses 0 at about" not in v(noisy)


def test_synthesis_gives_each_claim_one_verdict_from_its_numbers():
    def claim(points):
        line = _line(points)
        for p in line["series"]:
            p["flops"] = 1e14 * p["budget_x"]
        return {**line, "source": "a paper", "paper_flops": 1e19}

    result = {"claims": [claim([(1, -0.10, 0.01), (2, 0.0, 0.01), (4, 0.05, 0.01)]),                    # holds
                         claim([(1, -0.10, 0.01), (2, -0.05, 0.05), (4, 0.01, 0.05)]),                   # within
                         claim([(1, -0.100, 0.01), (2, -0.0795, 0.01), (4, -0.0605, 0.01), (8, -0.0398, 0.01)]),
                         claim([(1, -0.10, 0.01), (2, -0.02, 0.01), (4, -0.09, 0.01), (8, -0.05, 0.01)]),
                         claim([(1, -0.01, 0.01), (2, -0.03, 0.01), (4, -0.05, 0.01), (8, -0.07, 0.01)])]}
    rows = compute_axis.synthesis(result)
    assert [r["verdict"] for r in rows] == ["holds", "holds within spreads", "trends toward", "no trend", "opposite"]
    assert "95 % interval" in rows[2]["settle"] and "the axis grows tokens, not N" in rows[3]["settle"]
    header, cells = compute_axis.synthesis_table(rows)
    assert len(cells[0]) == len(header) and cells[0][3] == "-10.0 ± 1.0"


@pytest.mark.parametrize("profile", ["smoke", "laptop"])
def test_every_mark_is_a_step_the_long_run_snapshots(profile):
    """Snapshots fall every eval_every steps and at the run's last step; a mark elsewhere would never be found
    (BERT's 1/8 of the laptop steps is rounded: 64 of them overshoot its 8x end)."""
    for run in compute_axis.RUNS.values():
        long = run.config(profile).at_budget(compute_axis.RUN_BUDGET)
        steps = [compute_axis.mark_step(run, profile, x) for x in compute_axis.BUDGETS]
        assert steps[-1] == long.steps, run.name
        assert all(s % long.eval_every == 0 for s in steps[:-1]), (run.name, steps)
        assert steps == sorted(set(steps)), (run.name, steps)


def save_snapshot(path, model):
    buffer = io.BytesIO()
    torch.save(half_state(model, ("head.weight",)), buffer)
    provenance.atomic_write_bytes(path, buffer.getvalue())


@pytest.mark.data
@pytest.mark.slow            # an end-to-end run of real training: make test, not test-fast
def test_marks_become_checkpoints_and_effects_read_back_unchanged(tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    monkeypatch.setattr(store, "RESULTS", tmp_path / "shared")          # gpt-scratch's points, as results/gpt/
    monkeypatch.setattr(compute_axis, "CLAIMS", (
        compute_axis.Claim("gpt_vs_scratch", "gpt", ("gpt-scratch",), ("trec",), "test"),))
    run = compute_axis.RUNS["gpt"]
    model, tok = compute_axis._model_and_tokenizer(run, "smoke")
    folder = tmp_path / "pretrain" / run.stem("smoke") / "snapshots"
    laptop_steps = run.config("smoke").steps
    snapshots = {}
    for step in (laptop_steps // 8, laptop_steps):                          # the 1/8x and 1x marks
        torch.manual_seed(step)
        snapshots[step] = GPT(model.cfg)
        save_snapshot(folder / f"step-{step:06d}.pt", snapshots[step])

    found = compute_axis.marks(run, "smoke", (1 / 8, 1, 2), tmp_path / "pretrain")
    assert [(m.budget, m.step) for m in found] == [(1 / 8, laptop_steps // 8), (1, laptop_steps)]   # 2x: not yet

    cache = tmp_path / "cache"
    ckpt = compute_axis.build_checkpoint(found[0], "smoke", cache)
    sha = file_sha256(ckpt)
    loaded = load_pretrained(ckpt, "gpt")
    expected = snapshots[laptop_steps // 8].state_dict()
    assert all(torch.equal(v, expected[k].half().float()) for k, v in loaded.model.state_dict().items())
    assert loaded.meta["budget_x"] == 1 / 8 and loaded.meta["valid_nats_per_token"] > 0
    ckpt.unlink()
    assert file_sha256(compute_axis.build_checkpoint(found[0], "smoke", cache)) == sha   # same bytes rebuilt

    kept = compute_axis.keep_latest(run, "smoke", tmp_path / "pretrain", tmp_path / "kept")
    kept_meta = load_pretrained(kept, "gpt").meta
    assert (kept_meta["step"], kept_meta["budget_x"]) == (laptop_steps, 1)             # the newest snapshot
    branch = tmp_path / "pretrain" / run.stem("smoke", 2)                             # a 2x branch off the run
    metrics = pretrain_gpt(run.config("smoke").at_budget(2), data.pretraining_corpus("train", max_words=20_000),
                           data.pretraining_corpus("valid"), tmp_path / "warm.pt", tok, progress=False,
                           checkpoint_dir=branch, warm_start_from=kept)   # the state is gone: warm start
    assert metrics["curve"][0]["step"] == laptop_steps and metrics["steps"] == 2 * laptop_steps
    assert metrics["curve"][0]["valid_nats_per_token"] == pytest.approx(kept_meta["valid_nats_per_token"], abs=1e-4)
    origin = {"sha256": file_sha256(kept), "step": laptop_steps, "tokens": kept_meta["tokens"]}
    assert {k: metrics["warm_start"][k] for k in origin} == origin                 # the meta says where it began
    again = pretrain_gpt(run.config("smoke").at_budget(2), data.pretraining_corpus("train", max_words=20_000),
                         data.pretraining_corpus("valid"), tmp_path / "warm.pt", tok, progress=False,
                         checkpoint_dir=branch, warm_start_from=kept)     # resumed: the state keeps it
    assert again["warm_start"] == metrics["warm_start"]
    # the branch's own newest snapshot kept: its command, and the origin its resumable state recorded
    kept_branch = compute_axis.keep_latest(run, "smoke", tmp_path / "pretrain", tmp_path / "kept", budget=2)
    branch_meta = load_pretrained(kept_branch, "gpt").meta
    assert kept_branch.name == f"{run.stem('smoke', 2)}-latest.pt" and branch_meta["step"] == 2 * laptop_steps
    assert "--budget 2 " in branch_meta["command"] and branch_meta["warm_start"] == metrics["warm_start"]
    assert compute_axis.kept_step(run, "smoke", tmp_path / "kept", budget=2) == 2 * laptop_steps

    config = compute_axis.ComputeAxisConfig(labels=20, seeds=(0,), budgets=(1 / 8, 1), claims=("gpt_vs_scratch",))
    out = tmp_path / "compute-axis-smoke.json"
    where = dict(results_dir=tmp_path / "results", cache_dir=cache, out=out)
    result = compute_axis.run("smoke", config, snapshots_root=tmp_path / "pretrain", log=None, **where)
    (line,) = result["claims"]
    assert [p["budget_x"] for p in line["series"]] == [1 / 8, 1]
    scratch = grid.cached_point("trec", 20, "gpt-scratch", 0, "smoke")["error"]
    for p in line["series"]:
        assert p["effect"] == pytest.approx(scratch - p["winner_error"])
    assert re.fullmatch(r"compute-axis: claim=gpt_vs_scratch task=trec budgets=2 max_budget_x=1 effect_first=\S+ "
                        r"effect_last=\S+ slope_per_decade=\S+ crossover_x=\S+", compute_axis.summary_lines(result)[0])

    assert line["shipped"] is None                        # no shipped branch yet

    # the shipped branch (a finished checkpoint in checkpoints/): a point beside the trend, not fitted into it
    shipped = tmp_path / "checkpoints"
    shipped.mkdir()
    shutil.copy(ckpt, shipped / f"{run.stem('smoke', 5)}.pt")
    (shipped / f"{run.stem('smoke', 5)}.json").write_text(json.dumps({
        "command": "python -m minilib pretrain gpt --budget 5 --warm-start x.pt",
        "metrics": {"steps": 5 * laptop_steps, "train_tokens_seen": 1000, "valid_nats_per_token": 5.0}}))
    monkeypatch.setattr(compute_axis, "CHECKPOINTS", shipped)
    assert [(p["budget_x"], p["cached"]) for p in compute_axis.plan("smoke", config, **where_plan(tmp_path))][-1] == (5, False)
    result = compute_axis.run("smoke", config, snapshots_root=tmp_path / "pretrain", log=None, **where)
    (line,) = result["claims"]
    assert [p["budget_x"] for p in line["series"]] == [1 / 8, 1]          # the trend reads the long run only
    ship = grid.cached_point("trec", 20, "gpt", 0, "smoke", results_dir=tmp_path / "results" / "gpt" / "5x",
                             checkpoint=shipped / f"{run.stem('smoke', 5)}.pt")
    assert line["shipped"]["budget_x"] == 5 and line["shipped"]["effect"] == pytest.approx(scratch - ship["error"])
    assert [m for m in result["marks"] if m.get("shipped")][0]["tokens"] == 1000
    assert [r[1] for r in compute_axis.marks_table(result, ("gpt",))[1]] == ["0.125×", "1×", "5× (shipped branch, cooled)"]
    assert re.fullmatch(r"compute-axis-shipped: claim=gpt_vs_scratch task=trec budget_x=5 effect=\S+ effect_std=\S+ "
                        r"winner_error=\S+ comparison_error=\S+", compute_axis.summary_lines(result)[-1])
    assert "the shipped model (the 5x branch, cooled)" in compute_axis.verdict(line)

    written, stamp = out.read_bytes(), out.stat().st_mtime_ns
    shutil.rmtree(cache)                                   # the checkpoints are gone, as on another machine
    again = compute_axis.run("smoke", config, snapshots_root=tmp_path / "elsewhere", train=False, log=None, **where)
    assert again["claims"] == result["claims"] and again["marks"] == result["marks"]
    assert out.read_bytes() == written and out.stat().st_mtime_ns == stamp   # reading never rewrites


def where_plan(tmp_path):
    return {"results_dir": tmp_path / "results", "snapshots_root": tmp_path / "pretrain", "cache_dir": tmp_path / "cache"}


def test_shipped_reads_each_side_from_its_json(tmp_path):
    """The shipped branch beside the recipe's run, each from its JSON; a file not there is None, not an error."""
    for stem, tokens, nats in (("gpt-laptop", 8_192_000, 4.683), ("gpt-laptop-5x", 40_960_000, 3.9)):
        (tmp_path / f"{stem}.json").write_text(json.dumps({"metrics": {"train_tokens_seen": tokens,
                                                                       "valid_nats_per_token": nats}}))
    rows = {r["run"]: r for r in compute_axis.shipped("laptop", tmp_path)}
    assert rows["gpt"]["recipe"] == {"checkpoint": "gpt-laptop.pt", "tokens": 8_192_000, "valid_nats_per_token": 4.683}
    assert rows["gpt"]["shipped"]["checkpoint"] == "gpt-laptop-5x.pt" and rows["bert"]["shipped"] is None
    lines = compute_axis.shipped_lines([rows["gpt"], rows["bert"]])
    assert lines == ["shipped: run=gpt recipe_tokens=8192000 recipe_nats=4.683 shipped_tokens=40960000 "
                     "shipped_nats=3.900", "shipped: run=bert recipe=none shipped=none"]
