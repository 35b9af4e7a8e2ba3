"""`python -m minilib experiment queue`: fill a grid of points with N worker processes; run it again to resume.

    python -m minilib experiment queue --task trec,rt --methods majority,bow-lr,ulmfit --labels 100,1000 --seeds 3 \\
        --workers 2 --fill

Plans every (task, label count, method, seed) point of the grid, skips each one whose cached result's key still
matches (grid.cached_point: reading never rewrites a file), prints the plan (cached, to train, estimated CPU
time by the grid's per-point estimate) and, past the command line's cost guard, stops unless given --fill. The
points to train go to N worker processes (one torch thread each unless --threads). A worker claims a point by
creating its claim file atomically (O_CREAT|O_EXCL) in the claims folder (.cache/queue-claims/, a CSV task's
in the user's data cache): pid, host, start time. A claim whose process is gone (same host) or that is older than
--stale-after is taken over; a live one is skipped, so two queues (or two machines sharing a results folder and
claims folder) never train the same point. The claim goes when the point's result is written (atomically, by
grid.run_point) or when it fails; after a crash or Ctrl-C, the same command resumes where it stopped.

Every point stamps `python -m minilib experiment queue ...` as its command (workers run with it as sys.argv).
One line per finished point, then `queue: points=<n> cached=<k> trained=<t> failed=<f> claimed=<c> seconds=<s>`;
a failing point is one line and the others go on; the exit status is 0 only if none failed.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import multiprocessing
import os
import queue as _queue
import shlex
import socket
import sys
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator, Sequence

from minilib import runtime, tasks
from minilab import provenance
from minilab.experiments import grid
from minilib.runtime import UsageError

CLAIMS = provenance.REPO_ROOT / ".cache" / "queue-claims"   # a repository task's claims
ALWAYS = ("task", "methods", "labels", "workers")   # options every stamped command names, even at their default
STALE_AFTER_H = 24.0        # a claim this old is taken over even if its process seems alive (another host, pid reuse)


@dataclass(frozen=True)
class Point:
    """One point of the queue's grid, as a worker needs it (picklable: the task by its name or CSV path)."""
    task: str                   # what --task named (a registered name or a CSV path)
    task_name: str
    labels: int | str           # as given ("all" or a number)
    n_labels: int
    method: str
    seed: int
    path: str                   # its result file
    claim: str                  # its claim file
    checkpoint: str | None      # a --checkpoint replacing the method's own (None: its own, if any)
    results_dir: str | None     # None: the method's family folder
    estimate_s: float | None = None
    stale: bool = False         # a result with another key is there (a changed task, settings or checkpoint)

    def name(self) -> str:
        return f"{self.task_name} n={self.n_labels:<6d} {self.method:20s} seed {self.seed}"


# ----------------------------------------------------------------------------- claims

def claims_folder(task: tasks.Task, claims_dir: str | Path | None = None) -> Path:
    """Where the claims of `task`'s points go: `claims_dir` if given; a user's (CSV) task: queue-claims/ in the
    user's data cache (nothing of it enters the repository); else the repository's .cache/queue-claims/."""
    if claims_dir is not None:
        return Path(claims_dir)
    return grid.user_results().parent / "queue-claims" if getattr(task, "user", False) else CLAIMS


def claim_path(result: str | Path, folder: str | Path) -> Path:
    """The claim file of the point whose result is `result`: its name, and a hash of its absolute path (two
    results folders holding a point of the same name claim apart)."""
    result = Path(result).resolve()
    return Path(folder) / f"{result.stem}-{hashlib.sha256(str(result).encode()).hexdigest()[:12]}.claim"


def _process_start(pid: int) -> str | None:
    """When process `pid` started (Linux: /proc/<pid>/stat's start time; None elsewhere), to tell a reused pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(pid: int, started: str | None) -> bool:
    """Whether process `pid` on this host still runs (a zombie, or another process now under that pid, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:         # someone else's process: alive
        pass
    except (OverflowError, ValueError):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):
            return False
    except (OSError, IndexError):
        pass
    now = _process_start(pid)
    return not (started and now and now != started)


def read_claim(path: str | Path) -> dict[str, Any] | None:
    """A claim's record ({} while its writer is still writing it, or if unreadable), None when there is none."""
    try:
        text = Path(path).read_text()
        mtime = Path(path).stat().st_mtime
    except FileNotFoundError:
        return None
    try:
        info = json.loads(text)
    except ValueError:
        info = {}
    info = info if isinstance(info, dict) else {}
    info.setdefault("started_unix", mtime)
    return info


def stale_reason(info: dict[str, Any], stale_after_s: float) -> str | None:
    """Why a claim may be taken over (its process on this host is gone, or it is older than `stale_after_s`),
    else None: it is live."""
    age = time.time() - float(info.get("started_unix") or 0)
    if age > stale_after_s:
        return f"older than {grid.duration(stale_after_s)}"
    if info.get("host") == socket.gethostname() and isinstance(info.get("pid"), int) \
            and not _alive(info["pid"], info.get("pid_start")):
        return f"pid {info['pid']} has exited"
    return None


def holder(info: dict[str, Any]) -> str:
    """'pid 123 on host h since 2025-01-02T03:04:05+00:00' (a claim's owner, as a line says it)."""
    return f"pid {info.get('pid', '?')} on {info.get('host', '?')} since {info.get('started', '?')}"


class Claim:
    """This process's claim on one point: `Claim.take` makes it (or says who holds it); `release` removes it."""

    def __init__(self, path: Path, record: dict[str, Any]):
        self.path, self.record = path, record

    @classmethod
    def take(cls, path: str | Path, point: str, stale_after_s: float) -> "Claim | dict[str, Any]":
        """Claim `path` atomically: a Claim, or the live holder's record. A stale claim (stale_reason) is moved
        aside by one rename, so of two processes taking it over only one succeeds, and claimed afresh."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        record = {"pid": pid, "host": socket.gethostname(), "pid_start": _process_start(pid),
                  "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                  "started_unix": time.time(), "nonce": uuid.uuid4().hex, "point": point,
                  "command": " ".join(sys.argv)}
        for _ in range(3):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                info = read_claim(path)
                if info is None:                # released meanwhile: try again
                    continue
                if stale_reason(info, stale_after_s) is None:
                    return info
                aside = path.with_name(f"{path.name}.{record['nonce']}.stale")
                try:
                    os.rename(path, aside)
                except FileNotFoundError:       # another process moved it first
                    continue
                if read_claim(aside) != info:   # moved a claim made since we read: put it back
                    with contextlib.suppress(OSError):
                        os.link(aside, path)
                aside.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps(record) + "\n")
                f.flush()
                os.fsync(f.fileno())
            return cls(path, record)
        return read_claim(path) or {}

    def release(self) -> None:
        """Remove the claim if it is still this one (a claim taken over as stale belongs to its new holder)."""
        info = read_claim(self.path)
        if info is not None and info.get("nonce") == self.record["nonce"]:
            self.path.unlink(missing_ok=True)


# ----------------------------------------------------------------------------- the plan

def split(text: str | None) -> list[str]:
    """'a, b,,a' -> ['a', 'b'] (order kept, duplicates dropped)."""
    return list(dict.fromkeys(x.strip() for x in (text or "").split(",") if x.strip()))


def task_args(args, name: str) -> SimpleNamespace:
    """`args` with one task of --task: tasks.from_args reads its CSV options."""
    return SimpleNamespace(**{**vars(args), "task": name})


def plan(args, profile: str) -> tuple[list[Point], list[Point]]:
    """(every point of the grid the options name, those not cached with their estimates). Every mistake
    (a name, a count, a checkpoint) fails here with one line, before anything trains."""
    from minilab.experiments.league import estimate_seconds      # the grid's own per-point estimate (grid._charge)
    from minilab.experiments.sample_efficiency import checkpoint_folders

    names, methods = split(args.task), split(args.methods)
    if not names or not methods:
        raise UsageError("queue: name the grid, e.g. --task trec --methods majority,bow-lr --labels 100 --seeds 3")
    labels = list(dict.fromkeys(grid.parse_labels(args.labels or "100")))
    if args.seeds is not None and args.seeds < 1:
        raise UsageError(f"--seeds {args.seeds}: use 1 or more")
    seeds = list(range(args.seeds)) if args.seeds else list(default_seeds(profile))
    for m in methods:
        grid.method(m)                                      # an unknown name fails first
    found = {name: tasks.from_args(task_args(args, name)) for name in names}
    for task in found.values():
        for m in methods:
            if task.kind not in grid.method(m).kinds:
                raise UsageError(f"method {m!r} handles {'/'.join(grid.method(m).kinds)} tasks, and {task.name} "
                                 f"is a {task.kind} task")
        for n in labels:
            grid.label_count(n, len(task.train), f" for {task.name}")
    folders = checkpoint_folders(methods, args.checkpoint, profile)
    own = {m: str(args.checkpoint) if args.checkpoint and grid.checkpoint_kind(grid.method(m)) else None
           for m in methods}
    for m in methods:                                       # a missing checkpoint fails before any point trains
        grid._checkpoint(grid.method(m), profile, own[m])
    points, todo, estimates = [], [], {}
    for name, task in found.items():
        for n in labels:
            count = grid.label_count(n, len(task.train))
            for m in methods:
                folder = args.results_dir or folders.get(m)
                for seed in seeds:
                    path = grid.point_path(grid.method(m), task, n, seed, profile, folder)
                    p = Point(name, task.name, n, count, m, seed, str(path),
                              str(claim_path(path, claims_folder(task, args.claims_dir))), own[m],
                              str(folder) if folder else None)
                    points.append(p)
                    if grid.cached_point(task, n, m, seed, profile, checkpoint=p.checkpoint,
                                         results_dir=p.results_dir) is not None:
                        continue
                    if (name, m, count) not in estimates:
                        estimates[name, m, count] = estimate_seconds(task, m, count, profile)[0]
                    todo.append(replace(p, estimate_s=estimates[name, m, count], stale=path.exists()))
    return points, todo


def default_seeds(profile: str) -> Sequence[int]:
    """The profile's seeds (the book's grids: 1 at smoke, 3 at laptop, 5 at full)."""
    from minilab.experiments.sample_efficiency import SIZES

    return SIZES[profile].seeds


def command_line(args) -> list[str]:
    """The queue's command as argv ('python -m minilib' first), rebuilt from its options whoever parsed them,
    defaults left out (`args._defaults`, which the command line gives every experiment's options): what every
    point it trains stamps as its command (provenance.stamp joins sys.argv)."""
    defaults = getattr(args, "_defaults", {})
    parts = ["python -m minilib", "experiment", "queue"]
    for key, value in vars(args).items():
        if key.startswith("_") or key in ("experiment", "command", "dry_run", "restamp") or value is None or value is False:
            continue
        if key not in ALWAYS and value == defaults.get(key):
            continue
        parts.append(f"--{key.replace('_', '-')}")
        if value is not True:
            parts.append(shlex.quote(str(value)))
    return parts


@contextlib.contextmanager
def _argv(argv: list[str]) -> Iterator[None]:
    previous, sys.argv = sys.argv, list(argv)
    try:
        yield
    finally:
        sys.argv = previous


# ----------------------------------------------------------------------------- the workers

@dataclass(frozen=True)
class Job:
    """What every worker shares: the queue's argv (stamped), torch threads, the CSV options, the stale limit."""
    argv: tuple[str, ...]
    threads: int
    task_options: dict[str, Any]
    stale_after_s: float


def run_one(p: Point, job: Job, found: dict[str, tasks.Task]) -> dict[str, Any]:
    """Claim point `p`, train it unless it is cached meanwhile, release the claim: its outcome
    {"status": trained | cached | claimed | failed, "point", "error", "seconds", "message"}."""
    out = {"point": p, "status": "failed", "error": None, "seconds": 0.0, "message": ""}
    try:
        claim = Claim.take(p.claim, p.path, job.stale_after_s)
    except OSError as exc:           # a claims folder it cannot write: this point fails, the others go on
        return {**out, "message": f"cannot claim it in {Path(p.claim).parent}: {exc}"}
    if not isinstance(claim, Claim):
        return {**out, "status": "claimed", "message": f"claimed by {holder(claim)}"}
    try:
        if p.task not in found:
            found[p.task] = tasks.from_args(SimpleNamespace(**job.task_options, task=p.task), announce=False)
        task = found[p.task]
        row = grid.cached_point(task, p.labels, p.method, p.seed, checkpoint=p.checkpoint, results_dir=p.results_dir)
        status = "cached"
        if row is None:
            row = grid.run_point(task, p.labels, p.method, p.seed, threads=job.threads, checkpoint=p.checkpoint,
                                 results_dir=p.results_dir)
            status = "trained"
        return {**out, "status": status, "error": row["error"], "seconds": row.get("seconds", 0.0)}
    except (Exception, SystemExit) as exc:     # one point's failure is one line; the queue goes on
        return {**out, "message": " ".join(f"{type(exc).__name__}: {exc}".split())}
    finally:
        claim.release()


def _worker(job: Job, todo, done) -> None:
    """A worker process: points from `todo` until None, each outcome into `done`."""
    sys.argv = list(job.argv)                 # provenance.stamp records the queue's command, not multiprocessing's
    found: dict[str, tasks.Task] = {}
    try:
        while (p := todo.get()) is not None:
            done.put(run_one(p, job, found))
    except KeyboardInterrupt:                # Ctrl-C reaches every worker: the claim is released, no traceback
        pass


def _line(i: int, total: int, outcome: dict[str, Any]) -> str:
    p, status = outcome["point"], outcome["status"]
    head = f"[{i}/{total}] {p.name()}"
    if status == "trained":
        return f"{head}: error {outcome['error']:.3f} ({outcome['seconds']:.0f} s)"
    if status == "cached":
        return f"{head}: error {outcome['error']:.3f} (cached meanwhile by another run)"
    if status == "claimed":
        return f"{head}: skipped, {outcome['message']}"
    return f"{head}: failed: {outcome['message']}"


def run_points(todo: Sequence[Point], job: Job, workers: int, log=print) -> list[dict[str, Any]]:
    """Every point of `todo` through `workers` processes (one: this process), one line each as it finishes."""
    outcomes: list[dict[str, Any]] = []

    def report(outcome):
        outcomes.append(outcome)
        if log:
            log(_line(len(outcomes), len(todo), outcome), flush=True)

    if workers <= 1:
        import torch

        threads = torch.get_num_threads()
        found: dict[str, tasks.Task] = {}
        try:
            with _argv(list(job.argv)), grid.cost_guard(None):   # the plan has passed the guard as a whole
                for p in todo:
                    report(run_one(p, job, found))
        finally:
            torch.set_num_threads(threads)
        return outcomes

    ctx = multiprocessing.get_context("spawn")      # a fresh interpreter: no forked torch thread pools
    work, done = ctx.Queue(), ctx.Queue()
    for p in todo:
        work.put(p)
    for _ in range(workers):
        work.put(None)
    procs = []
    env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    try:
        os.environ.update({k: str(job.threads) for k in env})     # read by each worker's torch at import
        for _ in range(workers):
            proc = ctx.Process(target=_worker, args=(job, work, done))
            proc.start()
            procs.append(proc)
    finally:
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        while len(outcomes) < len(todo):
            try:
                report(done.get(timeout=1.0))
            except _queue.Empty:
                if not any(proc.is_alive() for proc in procs):
                    with contextlib.suppress(_queue.Empty):
                        while len(outcomes) < len(todo):
                            report(done.get(timeout=2.0))
                    break
    finally:                                 # after Ctrl-C too: every worker got it and releases its claim first
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
    seen = {o["point"] for o in outcomes}
    codes = ", ".join(str(proc.exitcode) for proc in procs)
    for p in todo:                           # a worker that died (killed, out of memory) left its points unreported
        if p not in seen:
            report({"point": p, "status": "failed", "error": None, "seconds": 0.0,
                    "message": f"a worker exited (exit codes {codes}); its claim is taken over by the next run"})
    return outcomes


# ----------------------------------------------------------------------------- the command line

def cli_run(args, name: str) -> int:
    t0 = time.perf_counter()
    prof = runtime.profile()
    if args.workers < 1:
        raise UsageError(f"--workers {args.workers}: use 1 or more")
    if args.threads < 1:
        raise UsageError(f"--threads {args.threads}: use 1 or more")
    if not args.stale_after > 0:
        raise UsageError(f"--stale-after {args.stale_after}: use a number of hours above 0")
    points, todo = plan(args, prof)
    todo.sort(key=lambda p: (p.estimate_s is None, p.estimate_s or 0.0))     # cheapest first (as the league)
    total = sum(p.estimate_s or 0.0 for p in todo)
    untimed = sum(p.estimate_s is None for p in todo)
    workers = max(1, min(args.workers, len(todo)))
    for task in dict.fromkeys(p.task_name for p in points):
        mine = [p for p in todo if p.task_name == task]
        count = sum(p.task_name == task for p in points)
        print(f"plan {task}: {count} points, {count - len(mine)} cached, {len(mine)} to train"
              + (f" ({sum(p.stale for p in mine)} stale)" if any(p.stale for p in mine) else ""), flush=True)
    print(f"plan: {len(todo)} to train, about {grid.duration(total)} of CPU"
          + (f" ({untimed} never timed)" if untimed else "") + (f" on {workers} workers" if todo else ""), flush=True)
    if grid.restamp_active():               # --restamp: the cached points' stamps, and nothing trained
        uncached = {q.path for q in todo}
        for p in points:
            if p.path not in uncached:
                grid.restamp_point(p.path, json.loads(Path(p.path).read_text()))
        for p in todo:
            print(f"not cached with this key: {p.name()}{' (stale)' if p.stale else ''}")
        outcomes = []
    elif args.dry_run:
        for p in todo:
            held = read_claim(p.claim)
            state = "" if held is None else (f", claimed by {holder(held)}" if stale_reason(
                held, args.stale_after * 3600) is None else ", stale claim")
            when = "never timed" if p.estimate_s is None else f"~{grid.duration(p.estimate_s)}"
            print(f"to train: {p.name()} ({when}{', stale: rerun' if p.stale else ''}{state})")
        outcomes = []
    else:
        grid.check_cost(total, len(todo))       # the whole plan, said before anything trains (as the league)
        job = Job(tuple(command_line(args)), args.threads,
                  {k: v for k, v in vars(args).items() if k != "task" and not k.startswith("_")},
                  args.stale_after * 3600)
        outcomes = run_points(todo, job, workers)
    count = {s: sum(o["status"] == s for o in outcomes) for s in ("trained", "cached", "failed", "claimed")}
    print(f"queue: points={len(points)} cached={len(points) - len(todo) + count['cached']} trained={count['trained']} "
          f"failed={count['failed']} claimed={count['claimed']} seconds={time.perf_counter() - t0:.0f}")
    return 1 if count["failed"] or (grid.restamp_active() and todo) else 0
