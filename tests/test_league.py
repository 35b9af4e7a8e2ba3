"""The league table (experiments/league.py): cells from the shared cache, the best of each column computed,
missing points named with the reason they cannot run, and a dry run that trains nothing."""
import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from minilib import tasks
from minilab.cli.experiment import options_parser
from minilab.experiments import grid, league
from minilib.runtime import UsageError


@pytest.fixture
def reviews(tmp_path):
    """A sentence task from a CSV (80 train rows after the 20 % test split): no real corpus needed."""
    path = tmp_path / "reviews.csv"
    rows = [f"a fine film number {i},pos" if i % 2 else f"a dull film number {i},neg" for i in range(100)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return tasks.get(path)


def fake_rows(task, errors):
    """Grid rows as the cache holds them: {(method, labels): [error per seed]}."""
    return [{"task": task.name, "method": m, "labels": n, "seed": s, "error": e,
             "n_labels": grid.label_count(n, len(task.train))}
            for (m, n), errs in errors.items() for s, e in enumerate(errs)]


@pytest.fixture
def cache(monkeypatch):
    """Serve fake rows wherever the league reads the grid's cache; returns the dict to fill."""
    store = {}

    def cached_rows(task, methods, label_counts, seeds, profile=None, results_dir=None):
        task = tasks.get(task)
        return [r for r in store.get(task.name, []) if r["method"] in methods and r["labels"] in label_counts
                and r["seed"] in seeds]

    monkeypatch.setattr(grid, "cached_rows", cached_rows)
    return store


def test_the_table_marks_the_lowest_error_of_each_column(reviews, cache):
    cache[reviews.name] = fake_rows(reviews, {
        ("majority", 10): [0.5, 0.5, 0.5],
        ("bow-lr", 10): [0.30, 0.32, 0.34],        # best at 10 among full-seed cells (mean 0.32)
        ("gpt", 10): [0.10],                        # lower, but one seed of three: not eligible
        ("bow-lr", "all"): [0.20, 0.20, 0.20],
        ("ulmfit", "all"): [0.25, 0.15, 0.20],      # ties bow-lr at all (mean 0.20): both marked
        ("gpt", "all"): [0.40, 0.40, 0.40]})
    cells = league.table("laptop", [reviews], [10, "all"], ["majority", "bow-lr", "ulmfit", "gpt"], [0, 1, 2])
    best = {(c["labels"], c["method"]) for c in cells if c["best"]}
    assert best == {(10, "bow-lr"), ("all", "bow-lr"), ("all", "ulmfit")}
    at = {(c["labels"], c["method"]): c for c in cells}
    assert at[10, "bow-lr"]["error"] == pytest.approx(0.32) and at[10, "bow-lr"]["seeds"] == 3
    assert at[10, "ulmfit"]["error"] is None and at[10, "ulmfit"]["reason"] == "not run"
    md = league.markdown(cells)
    assert "**0.320 ± 0.016**" in md and "0.100 ± 0.000 (1 seed)" in md and md.count("**") == 2 * 3
    assert f"all ({len(reviews.train)})" in md.splitlines()[0]


def test_the_summary_line_names_the_best_and_what_is_missing(reviews, cache):
    cache[reviews.name] = fake_rows(reviews, {("majority", 10): [0.5, 0.5], ("sgns-lr", 10): [0.25, 0.35]})
    cells = league.table("laptop", [reviews], [10], ["majority", "sgns-lr", "gpt"], [0, 1])
    assert league.summary_line(cells, reviews.name, 10) == (
        "league: task=reviews labels=10 best=sgns-lr majority_err=0.500 sgns_lr_err=0.300 missing=gpt")


def reviews_pairs(tmp_path):
    path = tmp_path / "pairs.csv"
    rows = [f"x {i},y {i},{'same' if i % 2 else 'other'}" for i in range(60)]
    path.write_text("text,b,label\n" + "\n".join(rows) + "\n")
    return path


def test_missing_names_why_a_method_cannot_run(reviews, tmp_path, monkeypatch):
    gone = tmp_path / "bert-mlm-laptop.pt"
    monkeypatch.setitem(grid.METHODS, "bert", dataclasses.replace(grid.method("bert"), checkpoint=lambda prof: gone))
    pair = tasks.Task.from_csv(reviews_pairs(tmp_path), text_b="b")
    todo = league.missing("laptop", [reviews, pair], [10], ["majority", "bert", "ulmfit"], [0],
                          results_dir=tmp_path / "results")
    why = {(p["task"], p["method"]): p["reason"] for p in todo}
    assert why[reviews.name, "majority"] is None and why[reviews.name, "ulmfit"] is None   # not run yet: can run
    assert str(gone) in why[reviews.name, "bert"] and "does not exist" in why[reviews.name, "bert"]
    assert "python -m minilib pretrain bert --objective mlm --profile laptop" in why[reviews.name, "bert"]
    assert why[pair.name, "ulmfit"] == f"ulmfit handles sentence tasks, and {pair.name} is a pair task"
    assert len(todo) == 6 and all(p["stale"] is False for p in todo)


def test_an_era_without_a_method_for_the_kind_is_not_applicable():
    assert league.LEAGUE["pos"]["ULMFiT"] is None and league.LEAGUE["pos"]["ELMo"] == "bilstm-elmo"
    assert league.LEAGUE["rt"]["ELMo"] == league.LEAGUE["trec"]["ELMo"] == "pooled-elmo"
    pos = SimpleNamespace(name="pos", kind="token")
    assert league.unavailable("ULMFiT", None, pos, "laptop") == "no ULMFiT method for token tasks (pos)"


def run_cli(capsys, *argv):
    code = league.cli_run(options_parser("league").parse_args(list(argv)), "league")
    return code, capsys.readouterr().out.strip().splitlines()


def test_the_dry_run_lists_points_and_trains_nothing(reviews, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MINILIB_PROFILE", "laptop")
    monkeypatch.setattr(grid, "run_point", lambda *a, **k: pytest.fail("a dry run trained a point"))
    results = tmp_path / "results"
    timed = {"task": reviews.name, "method": "bow-lr", "n_labels": 10, "labels": 10, "seconds": 30.0}
    results.mkdir()
    (results / f"{reviews.name}-bow-lr-n10-s0-laptop.json").write_text(json.dumps(timed))   # stale: no key
    code, out = run_cli(capsys, "--tasks", str(tmp_path / "reviews.csv"), "--labels", "10", "--seeds", "2",
                        "--methods", "majority,bow-lr", "--dry-run", "--results-dir", str(results))
    assert code == 0
    assert "to run: reviews n=10 bow-lr seed 0: ~30 s (stale: rerun)" in out
    assert "to run: reviews n=10 majority seed 1: never timed" in out
    assert "to run: 4 points, about 60 s of CPU (some never timed); cannot run: 0 points" in out
    assert out[-1] == "league: task=reviews labels=10 best=none missing=majority,bow-lr"
    assert sorted(p.name for p in results.iterdir()) == [f"{reviews.name}-bow-lr-n10-s0-laptop.json"]


def test_bad_input_is_a_usage_error(reviews, tmp_path, capsys):
    with pytest.raises(UsageError, match="label count 500 for reviews"):
        run_cli(capsys, "--tasks", str(tmp_path / "reviews.csv"), "--labels", "500", "--dry-run")
    with pytest.raises(UsageError, match="unknown method 'elmo-large'"):
        run_cli(capsys, "--tasks", str(tmp_path / "reviews.csv"), "--methods", "elmo-large", "--dry-run")


def test_the_time_estimate_is_a_line_through_the_timed_points(reviews, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    words = league.words_per_item(reviews)
    for n, s in ((10, 12.0), (40, 18.0)):      # 10 s + 0.2 s per label
        (results / f"{reviews.name}-gpt-n{n}-s0-laptop.json").write_text(json.dumps(
            {"task": reviews.name, "method": "gpt", "n_labels": n, "seconds": s}))
    (results / f"{reviews.name}-gpt-no-aux-n20-s0-laptop.json").write_text(json.dumps(   # another method
        {"task": reviews.name, "method": "gpt-no-aux", "n_labels": 20, "seconds": 999.0}))
    assert words == pytest.approx(5.0)
    assert league.estimate_seconds(reviews, "gpt", 25, "laptop", results) == (pytest.approx(15.0), "")
    assert league.estimate_seconds(reviews, "gpt", 80, "laptop", results) == (pytest.approx(26.0), "")
    assert league.estimate_seconds(reviews, "gpt", 200, "laptop", results)[1] == "extrapolated"
    assert league.estimate_seconds(reviews, "bow-lr", 20, "laptop", results) == (None, "never timed")


def test_a_fine_tuning_run_reads_its_small_sample_repeated_to_the_minimum_steps():
    fine_tuning = {"epochs": 10, "batch_size": 32, "min_steps_per_epoch": 20}
    assert league.examples_read(100, fine_tuning) == 10 * 7 * 100       # 7 repeats reach 20 steps of 32
    assert league.examples_read(1000, fine_tuning) == 10 * 1000
    assert league.examples_read(100, {"steps": 400}) == league.examples_read(100, None) == 100


def test_the_plot_draws_every_method_of_the_lineup_with_a_band(reviews, cache):
    import matplotlib
    matplotlib.use("Agg")
    from minilab.experiments.sample_efficiency import METHOD_STYLE

    lineups = {m for lineup in league.LEAGUE.values() for m in lineup.values() if m}
    assert sorted(lineups - set(METHOD_STYLE) - set(league.BASELINES)) == []   # each has a style (a line)
    methods = ["majority", "bow-lr", "sgns-lr", "glove-lr", "pooled-elmo", "ulmfit", "gpt"]
    cache[reviews.name] = fake_rows(reviews, {(m, n): [0.4, 0.3, 0.35] for m in methods for n in (10, 40)})
    fig = league.plot("laptop", [reviews], [10, 40], methods, [0, 1, 2])
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    for method in ("pooled-elmo", "ulmfit", "gpt"):
        assert sum(label.startswith(METHOD_STYLE[method]["label"]) for label in labels) == 1, (method, labels)
    assert [label.split(" (")[0] for label in labels if label.endswith("(baseline)")] == list(league.BASELINES)
    assert len(fig.axes[0].collections) == 3                          # one ±std band per non-baseline line


@pytest.mark.data
@pytest.mark.results
def test_the_shipped_baseline_points_are_read_from_the_shared_cache():
    """The league reads the lessons' own cache keys: trec's shipped baselines at 100 labels are all there."""
    assert league.missing("laptop", ["trec"], [100], ["majority", "bow-lr", "glove-lr", "sgns-lr"], [0, 1, 2]) == []


def test_fewest_errors_trains_each_method_on_one_sample_and_names_the_best(reviews, tmp_path, capsys):
    # the reviews' words give the label away: a bag of words beats the majority class
    assert grid.fewest_errors(reviews, 40, ("majority", "bow-lr"), tmp_path / "points") == "bow-lr"
    out = capsys.readouterr().out
    assert f"{reviews.name}, 40 labels, seed 0: majority 0.5" in out and "bow-lr 0.000" in out
    assert len(list((tmp_path / "points").rglob("*.json"))) == 2      # cached apart from the shipped grids


def test_a_missing_checkpoint_names_the_command_that_makes_it():
    hint = lambda name: league._make_hint(Path(name))
    assert hint("gpt-laptop.pt") == "python -m minilib pretrain gpt --profile laptop"
    assert hint("bert-mlm-laptop.pt") == "python -m minilib pretrain bert --objective mlm --profile laptop"
    assert hint("bert-laptop-2x128.pt") == "python -m minilib pretrain bert --shape 2x128 --profile laptop"
    assert hint("bert-ltr-laptop-5x.pt") == "python -m minilib pretrain bert --objective ltr --profile laptop --budget 5"


def test_tokens_read_puts_every_method_on_the_compute_axis():
    from minilab.provenance import REPO_ROOT
    from minilab import shipped

    gpt_json = shipped.checkpoint("gpt", "laptop").with_suffix(".json")       # the GPT the grid fine-tunes
    gpt_tokens = json.loads(gpt_json.read_text())["metrics"]["train_tokens_seen"]
    elmo = json.loads((REPO_ROOT / "checkpoints" / "elmo-laptop.json").read_text())["metrics"]["train_tokens"]
    assert league.tokens_read("majority", "laptop")[0] == league.tokens_read("gpt-scratch", "laptop")[0] == 0
    assert league.tokens_read("bow-lr", "laptop")[0] == 0
    assert league.tokens_read("gpt", "laptop")[0] == gpt_tokens
    assert league.tokens_read("gpt-tapt", "laptop")[0] == gpt_tokens + 400 * 16 * 128
    assert league.tokens_read("sgns-lr", "laptop")[0] == 3 * elmo
    assert league.tokens_read("glove-lr", "laptop")[0] == 6e9 > 100 * gpt_tokens      # 146x the 5x branch
