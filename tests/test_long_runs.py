"""tools/long_runs.py: the queue that brings the compute axis's long runs to their marks, a few at a time, in
order, never two processes on one run, and what it refuses in one line."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import long_runs  # noqa: E402
from long_runs import Item  # noqa: E402

from minilab.experiments import compute_axis  # noqa: E402
from minilab import shipped  # noqa: E402
from minilib.runtime import UsageError  # noqa: E402


def test_items_name_a_run_and_a_mark():
    assert long_runs.parse_items(["gpt:4", "bert-ltr:0.125", "bert:8", "bert:5"]) == [
        Item("gpt", 4.0), Item("bert-ltr", 0.125), Item("bert", 8.0), Item("bert", 5.0)]
    assert Item("bert", 5).line == ("bert", 5) and Item("bert", 4).line == ("bert", 8)   # the shipped branch
    for bad in ("gpt", "gpt:3", "gpt:x", "elmo:4", ":4"):
        with pytest.raises(UsageError):
            long_runs.parse_items([bad])


def plan(pending, running, steps, jobs=2):
    targets = {item: long_runs.target_step(item, "laptop") for item in pending}
    return long_runs.next_launches(pending, set(running), {(run, 8): step for run, step in steps.items()},
                                   targets, jobs)


def test_queue_order_slots_and_one_process_per_run():
    g4, l4, b4, g8 = Item("gpt", 4), Item("bert-ltr", 4), Item("bert", 4), Item("gpt", 8)
    # two slots: the first two items start, in order
    assert plan([g4, l4, b4, g8], [], {}) == ([g4, l4], [])
    # gpt has passed its 4x step (16,000): that item is reached, and gpt:8 may start at once
    assert plan([g4, l4, b4, g8], [], {"gpt": 16_000}) == ([l4, b4], [g4])
    # a run going (in the queue or outside it) holds a slot and its later items wait for it
    assert plan([g4, l4, b4, g8], ["gpt"], {"gpt": 16_010}) == ([l4], [g4])
    assert plan([g8, l4, b4], ["gpt"], {}) == ([l4], [])
    # one slot, taken: nothing starts
    assert plan([l4, b4], ["gpt"], {}, jobs=1) == ([], [])
    # an earlier item of a run waits: the later one never jumps it, even with slots free
    assert plan([g4, g8], [], {}, jobs=2) == ([g4], [])


def test_a_pretrain_command_line_names_its_run():
    argv = "/x/python -m minilib pretrain bert --objective ltr --profile laptop --budget 8 --threads 1".split() + [""]
    assert long_runs.run_of(argv) == ("bert", "ltr", "8")
    assert long_runs.run_of("python -m minilib pretrain bert --budget 8".split()) == ("bert", "mlm+nsp", "8")
    assert long_runs.run_of("python -m minilib pretrain gpt --profile laptop".split()) == ("gpt", None, None)
    assert long_runs.run_of("python -m minilib experiment league".split()) is None
    # each long run's own command reads back as that run
    for run in compute_axis.RUNS.values():
        assert long_runs.run_of(run.command("laptop").split()) == (run.kind, run.objective,
                                                                  str(compute_axis.RUN_BUDGET))


def test_cost_is_said_first_and_counts_each_run_once():
    g4, g8 = Item("gpt", 4), Item("gpt", 8)
    targets = {g4: 16_000, g8: 32_000}
    line = long_runs.cost_line([g4, g8], {("gpt", 8): 12_000}, targets, "laptop", 2)
    tokens = 20_000 * compute_axis.step_tokens(compute_axis.RUNS["gpt"], "laptop")
    assert f"{tokens / 1e6:,.1f}M tokens" in line and "2 item(s)" in line
    # the shipped branch starts at the long run's step (its warm start) and ends at 5x: 20,000 steps for GPT
    ship = Item("gpt", 5)
    assert long_runs.target_step(ship, "laptop") == 20_000
    line = long_runs.cost_line([ship], {("gpt", 5): 17_000}, {ship: 20_000}, "laptop", 2)
    assert f"{3_000 * compute_axis.step_tokens(compute_axis.RUNS['gpt'], 'laptop') / 1e6:,.1f}M tokens" in line
    g5 = Item("gpt", 5)                                    # after gpt:4 from 12,000: 4,000 steps to 20,000
    line = long_runs.cost_line([g4, g5], {("gpt", 8): 12_000, ("gpt", 5): 12_000}, {g4: 16_000, g5: 20_000},
                               "laptop", 2)
    assert f"{8_000 * compute_axis.step_tokens(compute_axis.RUNS['gpt'], 'laptop') / 1e6:,.1f}M tokens" in line


def test_the_shipped_branch_warm_starts_from_the_kept_snapshot(monkeypatch, tmp_path):
    monkeypatch.setattr(compute_axis, "latest_step", lambda *a, **k: None)   # no run's state here: nothing to keep
    monkeypatch.setattr(compute_axis, "KEPT_DIR", tmp_path)                   # kept files of this test's own
    monkeypatch.setattr(shipped, "CHECKPOINTS", tmp_path)                      # and no branch shipped yet
    run = compute_axis.RUNS["bert-ltr"]
    compute_axis.kept_path(run, "laptop").write_bytes(b"")
    kept = {8: 15_776}
    monkeypatch.setattr(compute_axis, "kept_step", lambda run, profile, kept_dir=None, budget=8: kept.get(budget))
    argv = long_runs.command(Item("bert-ltr", 5), "laptop")
    assert long_runs.run_of(argv) == ("bert", "ltr", "5")
    assert argv[argv.index("--warm-start") + 1] == str(tmp_path / "bert-ltr-laptop-8x-latest.pt")
    assert long_runs.command(Item("bert-ltr", 8), "laptop")[:-2] == (
        [sys.executable] + run.command("laptop").split()[1:])
    # the branch's own kept snapshot, once it is further on than the long run's
    compute_axis.kept_path(run, "laptop", budget=5).write_bytes(b"")
    kept.update({8: 17_992, 5: 17_995})
    argv = long_runs.command(Item("bert-ltr", 5), "laptop")
    assert argv[argv.index("--warm-start") + 1] == str(tmp_path / "bert-ltr-laptop-5x-latest.pt")
    assert long_runs.steps_now("laptop")["bert-ltr", 5] == 17_995


def test_bad_input_is_one_line_and_exit_2():
    for args in (["gpt:3"], ["--jobs", "0", "gpt:4"], []):
        out = subprocess.run([sys.executable, str(ROOT / "tools" / "long_runs.py"), *args],
                             capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: "), out.stderr


def test_a_run_that_fails_is_dropped_not_restarted(tmp_path, monkeypatch, capsys):
    starts = []

    def failing(item, profile):
        starts.append(item)
        assert len(starts) < 3, "a failed run was started again"
        return [sys.executable, "-c", "import sys; sys.exit(3)"]

    monkeypatch.setattr(long_runs, "command", failing)
    monkeypatch.setattr(long_runs, "LOG_DIR", tmp_path)
    monkeypatch.setattr(long_runs, "POLL_S", 0.2)
    monkeypatch.setattr(long_runs, "runs_going", lambda root=None: {})
    monkeypatch.setattr(compute_axis, "latest_step", lambda run, profile, root=None, budget=8: 0)
    monkeypatch.setattr(compute_axis, "kept_step", lambda run, profile, kept_dir=None, budget=8: None)
    assert long_runs.run_queue([Item("gpt", 4), Item("gpt", 8)], "laptop", 1) == 1
    assert starts == [Item("gpt", 4)]                       # started once, its later item dropped with it
    assert "gpt: failed before its mark" in capsys.readouterr().out


def test_a_shipped_branch_counts_as_finished(monkeypatch, tmp_path):
    monkeypatch.setattr(compute_axis, "latest_step", lambda *a, **k: None)    # no run's state here
    monkeypatch.setattr(compute_axis, "kept_step", lambda *a, **k: None)
    monkeypatch.setattr(shipped, "CHECKPOINTS", tmp_path)
    assert long_runs.steps_now("laptop")["gpt", 5] == 0
    shipped.branch("gpt", "laptop").write_bytes(b"")
    run = compute_axis.RUNS["gpt"]
    assert long_runs.steps_now("laptop")["gpt", 5] == compute_axis.last_step(run, "laptop", 5) == \
        long_runs.target_step(Item("gpt", 5), "laptop")
