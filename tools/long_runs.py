"""The compute axis's long runs on a CPU: in the background, in a set order, a few at a time, resumed each session.

    setsid nohup python3 tools/long_runs.py gpt:4 bert-ltr:4 bert:4 gpt:8 bert-ltr:8 bert-mlm:8 bert:8 \\
        >> .cache/long-runs/queue.log 2>&1 &
    python3 tools/long_runs.py --status          # each run's step and marks; trains nothing

    setsid nohup python3 tools/long_runs.py bert:4 gpt:5 bert-ltr:5 bert-mlm:5 bert:5 ...   # the shipped branches

Each item RUN:X brings one of compute_axis.RUNS (gpt, bert-mlm, bert-ltr, bert) to X times the laptop compute:
it starts the run's own command (`pretrain ... --budget 8 --threads 1`, compute_axis.Run.command) and, once the
snapshot of that mark is written, interrupts it as Ctrl-C would: the run saves its state (a few steps past the
mark) and the next item of the same run resumes it from there (`--max-steps` would not do: a run it stops is
saved as finished). Items run in the order given, at most --jobs at once (default 2, one a core: two one-thread
runs made ~1,900 tokens/s each on the 2-core EPYC, docs/measurements.md); an item waits while an earlier item
of its run is still to come, and one already reached is skipped, so the same command started again in a later
session picks up where the last stopped; a machine without the runs' training state (.cache/pretrain/) warm-starts
each from its kept snapshot (`experiment compute-axis --keep-latest`). The 8x item runs to the run's end, which writes checkpoints/<stem>.pt.
X = 5 (compute_axis.SHIP_BUDGET) is the shipped branch: `pretrain ... --budget 5 --warm-start` the run's newest
snapshot (kept first, so put RUN:4 before it), which cools the long run's weights down to checkpoints/<stem>-5x.pt.
Each child sits in autogroup nice 19 (a `setsid` process's `renice` does not yield to other work,
`/proc/<pid>/autogroup` does), so grids and lessons run first. A run already going outside the queue (its
command, this tree) holds a slot and is never doubled. Ctrl-C or SIGTERM interrupts the children, which save
their state. The children's output: .cache/long-runs/<stem>.log.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:       # run as `python3 tools/long_runs.py` from the repo root
    sys.path.insert(0, str(ROOT))

from minilab.experiments import compute_axis  # noqa: E402
from minilab import shipped  # noqa: E402
from minilib.runtime import UsageError  # noqa: E402

TOKENS_PER_S = 1_900      # one one-thread run beside another on 2 cores (docs/measurements.md): a rough cost only
POLL_S = 30
LOG_DIR = ROOT / ".cache" / "long-runs"      # each run's output, <stem>.log


@dataclass(frozen=True)
class Item:
    run: str          # a name in compute_axis.RUNS
    budget: float     # x the laptop compute: one of compute_axis.BUDGETS, or SHIP_BUDGET

    @property
    def branch(self) -> float:
        """The run it trains: the long run (RUN_BUDGET), or the shipped cool-down branch (SHIP_BUDGET)."""
        return compute_axis.SHIP_BUDGET if self.budget == compute_axis.SHIP_BUDGET else compute_axis.RUN_BUDGET

    @property
    def line(self) -> tuple[str, float]:
        """(run, branch): whose step says how far this item has come."""
        return self.run, self.branch


def parse_items(texts: list[str]) -> list[Item]:
    """'gpt:4' -> Item('gpt', 4.0); a run or budget the compute axis does not have is a UsageError."""
    items = []
    for text in texts:
        name, sep, x = text.partition(":")
        if name not in compute_axis.RUNS or not sep:
            raise UsageError(f"{text!r}: write RUN:X with RUN one of {', '.join(compute_axis.RUNS)} (e.g. gpt:4)")
        try:
            budget = float(x)
        except ValueError:
            budget = None
        if budget not in compute_axis.BUDGETS + (compute_axis.SHIP_BUDGET,):
            raise UsageError(f"{text!r}: X is a mark of the compute axis, one of "
                             f"{', '.join(f'{b:g}' for b in compute_axis.BUDGETS)}, "
                             f"or {compute_axis.SHIP_BUDGET} (the shipped cool-down)")
        items.append(Item(name, budget))
    return items


def next_launches(pending: list[Item], running: set[str], steps: dict[tuple[str, float], int],
                  targets: dict[Item, int], jobs: int) -> tuple[list[Item], list[Item]]:
    """(items to start now, items already reached) from `pending` in order, `steps` keyed by Item.line: an item
    starts when fewer than `jobs` runs are going, its run is not going, and no earlier pending item of its run
    waits."""
    start, done, busy = [], [], set(running)
    for item in pending:
        if steps.get(item.line, 0) >= targets[item]:
            done.append(item)
            continue
        if item.run in busy:
            continue
        busy.add(item.run)           # later items of this run wait for this one
        if len(running) + len(start) < jobs:
            start.append(item)
    return start, done


def command(item: Item, profile: str) -> list[str]:
    """The run's own command (compute_axis.Run.command), with this interpreter, and `--warm-start` from its kept
    snapshot (checkpoints/compute-axis/<stem>-latest.pt) where there is one: the run ignores it while its own
    training state is there, and continues from it on a machine that has lost that state. The shipped branch
    first keeps the long run's newest snapshot here, when this machine has one newer than the kept file, and
    warm-starts from its own kept snapshot instead where that one is further on."""
    run = compute_axis.RUNS[item.run]
    kept = compute_axis.kept_path(run, profile)
    if item.branch == compute_axis.SHIP_BUDGET:
        if (compute_axis.latest_step(run, profile) or 0) > (compute_axis.kept_step(run, profile) or 0):
            compute_axis.keep_latest(run, profile)
        if (compute_axis.kept_step(run, profile, budget=item.branch) or 0) > (compute_axis.kept_step(run, profile) or 0):
            kept = compute_axis.kept_path(run, profile, budget=item.branch)
    return ([sys.executable] + run.command(profile, item.branch).split()[1:]
            + (["--warm-start", str(kept)] if kept.is_file() else []))


def target_step(item: Item, profile: str) -> int:
    """The step that reaches the item: the long run's mark, or the shipped branch's last step."""
    run = compute_axis.RUNS[item.run]
    if item.branch == compute_axis.SHIP_BUDGET:
        return compute_axis.last_step(run, profile, item.branch)
    return compute_axis.mark_step(run, profile, item.budget)


def steps_now(profile: str) -> dict[tuple[str, float], int]:
    """{Item.line: step} of every run and branch: its newest snapshot here, else the kept snapshot it would
    warm-start from (the shipped branch: its own kept one, or the long run's); a shipped branch's checkpoint
    (recipes/shipped.branch) is its last step, so a finished branch is never trained again."""
    out = {}
    for name, run in compute_axis.RUNS.items():
        kept = compute_axis.kept_step(run, profile) or 0
        for branch in (compute_axis.RUN_BUDGET, compute_axis.SHIP_BUDGET):
            own = compute_axis.kept_step(run, profile, budget=branch) or 0
            if branch == compute_axis.SHIP_BUDGET and shipped.branch(name, profile).is_file():
                own = compute_axis.last_step(run, profile, branch)
            out[name, branch] = compute_axis.latest_step(run, profile, budget=branch) or max(kept, own)
    return out


def run_of(argv: list[str]) -> tuple[str, str | None, str | None] | None:
    """(kind, objective, budget) of a `python -m minilib pretrain ...` command line, None for anything else."""
    if "pretrain" not in argv or "minilib" not in argv:
        return None
    rest = argv[argv.index("pretrain") + 1:]
    if not rest:
        return None
    option = lambda flag: rest[rest.index(flag) + 1] if flag in rest[:-1] else None
    objective = option("--objective") or ("mlm+nsp" if rest[0] == "bert" else None)
    return rest[0], objective, option("--budget")


def runs_going(root: Path = ROOT) -> dict[str, int]:
    """{run name: pid} of the long runs a process is running in `root` (its kind, objective and --budget), from
    one pass over Linux's /proc; elsewhere none."""
    wanted = {(run.kind, run.objective, f"{branch:g}"): name for name, run in compute_axis.RUNS.items()
              for branch in (compute_axis.RUN_BUDGET, compute_axis.SHIP_BUDGET)}
    going = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().decode().split("\0")
            cwd = Path(os.readlink(proc / "cwd"))
        except (OSError, UnicodeDecodeError):
            continue
        name = wanted.get(run_of(argv)) if cwd == root else None
        if name:
            going[name] = int(proc.name)
    return going


def log_path(item: Item, profile: str) -> Path:
    return LOG_DIR / f"{compute_axis.RUNS[item.run].stem(profile, item.branch)}.log"


def status(profile: str) -> None:
    going, steps = runs_going(), steps_now(profile)
    for name, run in compute_axis.RUNS.items():
        step = steps[name, compute_axis.RUN_BUDGET]
        laptop = run.config(profile).steps
        reached = [compute_axis.budget_name(x) for x in compute_axis.BUDGETS
                   if step >= compute_axis.mark_step(run, profile, x)]
        ship = Item(name, compute_axis.SHIP_BUDGET)
        shipped = f"{steps[ship.line]:,} of {target_step(ship, profile):,}"
        pid = going.get(name)
        print(f"{name}: step {step:,} ({step / laptop:.2f}x the laptop steps); marks reached: "
              f"{', '.join(reached) or 'none'}; shipped branch ({compute_axis.SHIP_BUDGET}x): step {shipped}"
              f"{f'; running (pid {pid})' if pid else ''}")


def cost_line(pending: list[Item], steps: dict[tuple[str, float], int], targets: dict[Item, int], profile: str,
              jobs: int) -> str:
    """What the queue still has to train, in tokens and rough hours at TOKENS_PER_S a run; `steps` as
    next_launches's."""
    at = dict(steps)
    tokens = 0
    for item in pending:
        run = compute_axis.RUNS[item.run]
        start = at.get(item.line, 0)
        if item.branch == compute_axis.SHIP_BUDGET:     # it warm-starts where the long run's earlier items end
            start = max(start, at.get((item.run, compute_axis.RUN_BUDGET), 0))
        todo = max(0, targets[item] - start)
        at[item.line] = max(start, targets[item])
        tokens += todo * compute_axis.step_tokens(run, profile)
    hours = tokens / TOKENS_PER_S / 3600
    return (f"long-runs: {tokens / 1e6:,.1f}M tokens to train in {len(pending)} item(s): about {hours:.0f} CPU-hours, "
            f"~{hours / jobs:.0f} h with {jobs} at once (at ~{TOKENS_PER_S:,} tokens/s a run)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("items", nargs="*", help="RUN:X in order, e.g. gpt:4 bert-ltr:4 bert:4 gpt:8")
    p.add_argument("--jobs", type=int, default=2, help="runs at once, one thread each (default 2)")
    p.add_argument("--profile", default="laptop", help="the profile whose runs these are (default laptop)")
    p.add_argument("--status", action="store_true", help="each run's step and marks reached; trains nothing")
    args = p.parse_args(argv)
    try:
        if args.status:
            status(args.profile)
            return 0
        if args.jobs < 1:
            raise UsageError(f"--jobs {args.jobs}: use 1 or more")
        if not args.items:
            raise UsageError("name the items, e.g. gpt:4 bert-ltr:4 (or --status)")
        pending = parse_items(args.items)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return run_queue(pending, args.profile, args.jobs)


def run_queue(pending: list[Item], profile: str, jobs: int) -> int:
    """Start, pause and reap the items' runs until every item is reached (0), or the queue is stopped or a run
    fails, which drops that run's items (1)."""
    targets = {item: target_step(item, profile) for item in pending}
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MINILIB_PROFILE": profile}
    children: dict[str, tuple[Item, subprocess.Popen]] = {}
    stopping, paused, failed = [], set(), []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    say = lambda text: print(f"{time.strftime('%Y-%m-%d %H:%M')} {text}", flush=True)

    say(cost_line(pending, steps_now(profile), targets, profile, jobs))
    try:
        while (pending or children) and not stopping:
            now = steps_now(profile)
            for name, (item, child) in list(children.items()):
                if child.poll() is not None:
                    say(f"{name}: exited ({child.returncode}) at step {now[item.line]:,}")
                    del children[name]
                    if child.returncode != 0 and name not in paused:     # it failed: never start it again
                        failed.append(name)
                        for left in [i for i in pending if i.run == name]:
                            pending.remove(left)
                        say(f"{name}: failed before its mark; its items are dropped (see {log_path(item, profile)})")
                    paused.discard(name)
                elif now[item.line] >= targets[item] and item.budget < item.branch and name not in paused:
                    child.send_signal(signal.SIGINT)       # the mark is written: pause here, state saved
                    paused.add(name)                       # once: a second Ctrl-C could cut the save short
            outside = set(runs_going()) - set(children)
            start, done = next_launches(pending, set(children) | outside, now, targets, jobs)
            for item in done:
                say(f"{item.run}: reached {compute_axis.budget_name(item.budget)} (step {targets[item]:,})")
                pending.remove(item)
            for item in start:
                with open(log_path(item, profile), "ab") as log:
                    child = subprocess.Popen(command(item, profile), cwd=ROOT, env=env, stdout=log,
                                             stderr=subprocess.STDOUT)
                try:
                    Path(f"/proc/{child.pid}/autogroup").write_text("19")
                except OSError:
                    pass                  # not Linux, or no autogroups: the run keeps the default share
                children[item.run] = (item, child)
                say(f"{item.run}: started towards {compute_axis.budget_name(item.budget)} "
                    f"(step {targets[item]:,}), pid {child.pid}")
            if pending or children:
                time.sleep(POLL_S)
    except KeyboardInterrupt:
        stopping.append(True)
    for _, child in children.values():
        child.send_signal(signal.SIGINT)         # each saves its state on interrupt
    for _, child in children.values():
        child.wait()
    return 0 if not pending and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
