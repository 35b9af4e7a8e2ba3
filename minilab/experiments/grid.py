"""One grid runner for every method family: task x method x label count x seed, each point cached.

A method is a name, the task kinds it handles, the settings that define it (per profile), the
pretrained checkpoint it starts from (if any) and a `train` function:

    train(task, indices, seed, settings, checkpoint, progress, callbacks) -> {"accuracy": ..., ...}

which trains on `task.train` at `indices` and scores `task.test` once (nothing is selected on
test). A point is cached as stamped JSON in results/<family>/<task>-<method>-n<labels>-s<seed>-<profile>.json
(the result store's root, experiments/store.py) and reused only when its key matches: the task's fingerprint,
the settings and the checkpoint's sha256.

    from minilab.experiments import grid
    rows = grid.run_grid("trec", ["majority", "bow-lr"], [100, 1000, "all"], seeds=[0, 1, 2])
    grid.summarize(rows)         # mean and std error per (task, method, label count)
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from minilib import runtime, tasks
from minilab import provenance
from minilab.experiments import store
from minilib.models.pretrained import file_sha256
from minilib.runtime import UsageError
from minilib.train.learner import propagate_interrupts

ALL = "all"  # a label count meaning "every labelled training example of the task"
LONG_S = 1800  # uncached training a command starts without --fill, in estimated CPU seconds (30 min)


@dataclass
class CostGuard:
    """The uncached training a command may start: `limit_s` estimated seconds (None: any, as with --fill)."""
    limit_s: float | None
    spent_s: float = 0.0
    points: int = 0
    dry_run: bool = False    # whether the command offers --dry-run, so the refusal may point to it


_GUARD: CostGuard | None = None      # set by the command line (cli/experiment.py); lessons and widgets train freely


@contextlib.contextmanager
def cost_guard(limit_s: float | None = LONG_S, dry_run: bool = False):
    """Within: run_point counts each uncached point's estimated time and stops with a UsageError (the estimate and
    --fill, and --dry-run where the command has it) before the total passes `limit_s`; points already trained
    stay cached."""
    global _GUARD
    previous, _GUARD = _GUARD, CostGuard(limit_s, dry_run=dry_run)
    try:
        yield _GUARD
    finally:
        _GUARD = previous


@dataclass
class Restamp:
    """What --restamp gives cached points (`command`) and the files it rewrote."""
    command: str
    rewritten: list[str] = field(default_factory=list)
    checked: int = 0


_RESTAMP: Restamp | None = None      # set by the command line's --restamp (cli/experiment.py)


@contextlib.contextmanager
def restamping(command: str):
    """Within (the command line's --restamp): run_point trains nothing, an uncached point being a UsageError, and
    every cached point it reads whose stamped command is not in the repository is stamped with `command`, the
    in-repository command whose key it matched (provenance.restamped; numbers untouched)."""
    global _RESTAMP
    previous, _RESTAMP = _RESTAMP, Restamp(command)
    try:
        yield _RESTAMP
    finally:
        _RESTAMP = previous


def restamp_active() -> bool:
    """Whether this command runs under --restamp (restamping())."""
    return _RESTAMP is not None


def restamp_point(path: str | Path, row: dict) -> None:
    """Under restamping(): give the cached point `row` (read from `path`, its key checked) the command's stamp if
    its own command is not in the repository. A no-op otherwise."""
    if _RESTAMP is None:
        return
    _RESTAMP.checked += 1
    new = provenance.restamped(row, _RESTAMP.command)
    if new is not None:
        provenance.write_json(path, new)
        _RESTAMP.rewritten.append(provenance.shown_path(path))


def check_cost(seconds: float, points: int) -> None:
    """Before a command trains `points` uncached points of about `seconds` in all: refuse, saying so, when that
    passes the guard's limit (the experiments that plan their points ask this first)."""
    if _GUARD is not None and _GUARD.limit_s is not None and seconds > _GUARD.limit_s:
        raise UsageError(f"this would train {points} uncached point{'s' * (points != 1)}, about {duration(seconds)} "
                         f"of CPU: add --fill to run them (each is cached as it finishes)"
                         + (", or --dry-run to list them" if _GUARD.dry_run else ""))


def _charge(task, m: "Method", n_labels: int, profile: str) -> None:
    """Count one uncached point against the guard (a no-op without one), timed by the repo's own points of the
    method (a user's results folder may hold none yet)."""
    if _GUARD is None or _GUARD.limit_s is None:
        return
    from minilab.experiments.league import estimate_seconds   # the timing model lives with the league's planner

    seconds = estimate_seconds(task, m.name, n_labels, profile)[0] or 0.0
    if _GUARD.spent_s + seconds > _GUARD.limit_s:
        done = f" after {_GUARD.points} uncached point{'s' * (_GUARD.points != 1)}" if _GUARD.points else ""
        raise UsageError(f"stopped{done}: the next ({task.name} n={n_labels} {m.name}) would take this command past "
                         f"{duration(_GUARD.limit_s)} of training (about {duration(_GUARD.spent_s + seconds)}): "
                         f"add --fill to go on (what ran is cached)" + (", or --dry-run to see the plan" if _GUARD.dry_run else ""))
    _GUARD.spent_s += seconds
    _GUARD.points += 1


def duration(seconds: float | None) -> str:
    """12 s, 4 min, 2.5 h (— when unknown)."""
    if seconds is None:
        return "—"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class Method:
    name: str
    family: str                                        # results/<family>/ holds its points
    train: Callable[..., dict[str, Any]]
    settings: Callable[[str], dict[str, Any]]          # profile -> what defines the method (part of the key)
    checkpoint: Callable[[str], Path] | None = None    # profile -> the pretrained checkpoint it starts from
    kinds: tuple[str, ...] = tasks.KINDS               # task kinds it can train on
    label: str = ""                                    # a legend label


METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    METHODS[method.name] = method
    return method


def method(name: str) -> Method:
    _load_families()
    if name not in METHODS:
        raise UsageError(f"unknown method {name!r}: use one of {', '.join(METHODS)}")
    return METHODS[name]


def families() -> dict[str, list[str]]:
    """Every registered method's name, grouped by its family (results/<family>/), in registration order."""
    _load_families()
    out: dict[str, list[str]] = {}
    for m in METHODS.values():
        out.setdefault(m.family, []).append(m.name)
    return out


def _load_families() -> None:
    """Each family registers its methods when its module is imported: every experiment module is."""
    store.import_experiments()


def repeats_per_epoch(n: int, batch_size: int, min_steps_per_epoch: int) -> int:
    """How often an epoch repeats a sample of n examples so it takes at least min_steps_per_epoch steps:
    100 labels make ~3 batches of 32, too few steps for any schedule to move the weights."""
    return max(1, -(-min_steps_per_epoch * batch_size // n))


def label_count(n_labels: int | str, n_train: int, what: str = "") -> int:
    """A label count as a number out of `n_train`: "all" is n_train, "20" is 20; anything else
    outside 1..n_train raises, naming `what` (e.g. " for rt")."""
    if n_labels == ALL:
        return n_train
    if isinstance(n_labels, str) and n_labels.strip().isdigit():
        n_labels = int(n_labels)
    if not isinstance(n_labels, int) or not 0 < n_labels <= n_train:
        raise UsageError(f"label count {n_labels!r}{what}: use a number from 1 to {n_train:,}, or {ALL!r}")
    return n_labels


def parse_labels(text: str) -> list[int | str]:
    """'100,1000,all' -> [100, 1000, 'all'] (checked against a task by label_count)."""
    out = []
    for x in text.split(","):
        x = x.strip()
        if x != ALL and not x.isdigit():
            raise UsageError(f"label count {x!r}: use whole numbers or 'all', comma-separated (e.g. --labels 100,1000,all)")
        out.append(x if x == ALL else int(x))
    return out


def user_results() -> Path:
    """Where a user's task (Task.user: a CSV) caches its points: results/ in the user's data cache
    ($MINILIB_DATA, else ~/.cache/minilib; minilib/data/sources.py), outside the repository."""
    from minilib.data.sources import cache_dir

    return cache_dir() / "results"


def results_folder(task: tasks.Task, folder: str | Path) -> Path:
    """`folder` for `task`'s points: as given, except that a user's task never writes into the repository's
    results/: a folder there (a family's default, or one a command chose) moves to the same place under
    user_results(). The repository's own tasks (rt, trec, pos) keep results/."""
    folder = Path(folder)
    if getattr(task, "user", False):
        try:
            return user_results() / folder.resolve().relative_to(store.RESULTS.resolve())
        except ValueError:              # not under results/: the user's own choice
            pass
    return folder


def point_path(m: Method, task: tasks.Task, n_labels: int | str, seed: int, profile: str,
               results_dir: str | Path | None = None) -> Path:
    """results/<family>/<task>-<method>-n<labels>-s<seed>-<profile>.json (`results_dir` replaces results/<family>;
    a user's task: under user_results() instead, see results_folder)."""
    folder = results_folder(task, results_dir or store.folder(m.family))
    return folder / f"{task.name}-{m.name}-n{n_labels}-s{seed}-{profile}.json"


def _checkpoint(m: Method, profile: str, checkpoint: str | Path | None) -> Path | None:
    ckpt = checkpoint or (m.checkpoint(profile) if m.checkpoint else None)
    if ckpt is not None and not Path(ckpt).is_file():
        raise UsageError(f"{m.name} starts from {ckpt}, which does not exist: make it with `python -m minilib pretrain`")
    return Path(ckpt) if ckpt else None


# The checkpoint kind (models/pretrained.KINDS) each fine-tuning family starts from: what `--checkpoint` may replace.
# The baselines' sgns-lr reads the ELMo checkpoint's corpus, not its weights, and keeps its own.
FAMILY_KINDS = {"sample-efficiency": "awd-lstm", "elmo-downstream": "elmo", "elmo-pos": "elmo", "gpt": "gpt",
                "bert": "bert"}


def checkpoint_kind(m: Method) -> str | None:
    """The kind of checkpoint method `m` fine-tunes (None: it starts from none a user may replace)."""
    return FAMILY_KINDS.get(m.family) if m.checkpoint else None


@functools.lru_cache(maxsize=64)
def _stored_kind(path: str, sha256: str) -> str:
    from minilib.models.pretrained import FORMAT, CheckpointError

    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # a truncated file, another program's pickle, ...
        raise CheckpointError(f"{path} is not a minilib checkpoint ({type(exc).__name__}): "
                              f"write it with `python -m minilib pretrain ...`") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a minilib checkpoint: write it with `python -m minilib pretrain ...`")
    return ckpt.get("model")


def check_checkpoint(m: Method, checkpoint: str | Path) -> None:
    """Raise CheckpointError (one line) unless `checkpoint` is a minilib checkpoint of the kind `m` fine-tunes."""
    from minilib.models.pretrained import CheckpointError

    want = checkpoint_kind(m)
    if want is None:
        raise UsageError(f"method {m.name!r} starts from no checkpoint a --checkpoint could replace")
    path = Path(checkpoint)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}: make one with `python -m minilib pretrain {want}`")
    have = _stored_kind(str(path.resolve()), file_sha256(path))
    if have != want:
        raise CheckpointError(f"{path} holds a {have} model, not {want}: method {m.name} fine-tunes a {want} checkpoint "
                              f"(make one with `python -m minilib pretrain {want}`)")


def own_checkpoint_folder(m: Method, checkpoint: str | Path | None, profile: str) -> Path | None:
    """Where points fine-tuned from a checkpoint other than the method's own go: <data cache>/results/<family>/
    <checkpoint name>-<sha256[:10]>, apart from the shipped grid's (a point's file name does not carry its
    checkpoint) and outside the repository. None for no checkpoint or the method's own."""
    if checkpoint is None or (m.checkpoint and Path(m.checkpoint(profile)).resolve() == Path(checkpoint).resolve()):
        return None
    return user_results() / m.family / f"{Path(checkpoint).stem}-{file_sha256(checkpoint)[:10]}"


def _key(m: Method, task: tasks.Task, profile: str, checkpoint=None, settings=None,
         checkpoint_sha256: str | None = None) -> dict[str, Any]:
    ckpt = None if checkpoint_sha256 else _checkpoint(m, profile, checkpoint)
    return {"task_sha256": task.fingerprint, "config": json.loads(json.dumps(settings or m.settings(profile))),
            "checkpoint_sha256": checkpoint_sha256 or (file_sha256(ckpt) if ckpt else None)}


def cached_point(task, n_labels, method_name: str, seed: int, profile: str | None = None, *,
                 checkpoint: str | Path | None = None, settings: dict | None = None,
                 results_dir: str | Path | None = None, checkpoint_sha256: str | None = None) -> dict | None:
    """The cached row of this point if its key still matches, else None (never trains).
    `profile`: whose grid to read (default: the current profile's); `checkpoint`, `settings`:
    other than the method's defaults for that profile; `checkpoint_sha256`: the checkpoint's identity as a
    stamped summary recorded it, for reading points whose checkpoint is not on this machine."""
    task, m, prof = tasks.get(task), method(method_name), profile or runtime.profile()
    path = point_path(m, task, n_labels, seed, prof, results_dir)
    if not path.exists():
        return None
    return store.load(m.family, prof, _key(m, task, prof, checkpoint, settings, checkpoint_sha256), at=path)


def run_point(task, n_labels, method_name: str, seed: int, *, force: bool = False, progress: bool | str = False,
              callbacks: Sequence = (), threads: int | None = None, checkpoint: str | Path | None = None,
              settings: dict | None = None, results_dir: str | Path | None = None, log=None,
              **train_options) -> dict[str, Any]:
    """Train and score one point (or read it from the cache); returns its row. `train_options` go
    to the method's train function (e.g. a cache folder)."""
    task, m, prof = tasks.get(task), method(method_name), runtime.profile()
    if task.kind not in m.kinds:
        raise UsageError(f"method {m.name!r} handles {'/'.join(m.kinds)} tasks, and {task.name} is a {task.kind} task")
    n = label_count(n_labels, len(task.train), f" for {task.name}")
    if not force:
        cached = cached_point(task, n_labels, m.name, seed, checkpoint=checkpoint, settings=settings,
                              results_dir=results_dir)
        if cached is not None:
            restamp_point(point_path(m, task, n_labels, seed, prof, results_dir), cached)
            return cached
    if _RESTAMP is not None:
        raise UsageError(f"--restamp trains nothing, and {task.name} n={n} {m.name} seed {seed} is not cached "
                         f"with this command's key{' (--force retrains)' if force else ''}: run it without --restamp")
    _charge(task, m, n, prof)
    key = _key(m, task, prof, checkpoint, settings)
    if threads:
        torch.set_num_threads(threads)
    idx = task.sample(n, seed)
    t0 = time.perf_counter()
    ckpt = _checkpoint(m, prof, checkpoint)
    with propagate_interrupts():  # a Stop in a notebook must not leave an unfinished point cached
        result = m.train(task, idx, seed, settings or m.settings(prof), ckpt, progress=progress, callbacks=callbacks,
                         **({"log": log} if log else {}), **train_options)
    if task.metric not in result:
        raise UsageError(f"method {m.name!r} reports no {task.metric.replace('_', ' ')}, which {task.name} is scored by: "
                         f"run it on a task scored by accuracy (--metric accuracy)")
    row = {"task": task.name, "n_labels": n, "labels": n_labels, "method": m.name, "seed": seed,
           **result, "metric": task.metric, "error": 1 - result[task.metric], "seconds": round(time.perf_counter() - t0, 2),
           "train_indices_sha256": hashlib.sha256(np.asarray(idx, dtype=np.int64).tobytes()).hexdigest(),
           **key, "checkpoint": provenance.shown_path(ckpt) if ckpt else None,
           "provenance": provenance.stamp(seed=seed, threads=torch.get_num_threads())}
    row = json.loads(json.dumps(row))  # as it will read back from the cache (tuples -> lists)
    provenance.write_json(point_path(m, task, n_labels, seed, prof, results_dir), row)
    return row


def run_grid(task, methods: Sequence[str], label_counts: Sequence, seeds: Sequence[int], log=print,
             **kwargs) -> list[dict[str, Any]]:
    """Every (label count, method, seed) point, cached ones read back. Bad names and counts fail
    before anything trains."""
    task = tasks.get(task)
    for name in methods:
        m = method(name)
        if task.kind not in m.kinds:
            raise UsageError(f"method {m.name!r} handles {'/'.join(m.kinds)} tasks, and {task.name} is a {task.kind} task")
    for n in label_counts:
        label_count(n, len(task.train), f" for {task.name}")
    rows = []
    for n in label_counts:
        for name in methods:
            for seed in seeds:
                rows.append(run_point(task, n, name, seed, **kwargs))
                if log:
                    log(f"{task.name} n={rows[-1]['n_labels']:<6d} {name:20s} seed {seed}: "
                        f"error {rows[-1]['error']:.3f} ({rows[-1]['seconds']:.0f} s)")
    return rows


def cached_rows(task, methods: Sequence[str], label_counts: Sequence, seeds: Sequence[int],
                profile: str | None = None, results_dir: str | Path | None = None,
                checkpoint: str | Path | None = None) -> list[dict[str, Any]]:
    """Every cached point of this grid (what a widget or lesson shows at once; nothing trains)."""
    rows = [cached_point(task, n, m, s, profile, results_dir=results_dir, checkpoint=checkpoint)
            for n in label_counts for m in methods for s in seeds]
    return [r for r in rows if r is not None]


def summarize(rows: Sequence[dict[str, Any]], ddof: int = 0) -> list[dict[str, Any]]:
    """Mean and std (`ddof`) of the error per (task, method, n_labels), over seeds."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["method"], r["n_labels"]), []).append(r["error"])
    return [{"task": t, "method": m, "n_labels": n, "error": float(np.mean(e)), "error_std": float(np.std(e, ddof=ddof)) if len(e) > ddof else 0.0,
             "seeds": len(e)} for (t, m, n), e in sorted(groups.items())]


def seed_errors(rows: Sequence[dict[str, Any]]) -> dict[tuple, list[float]]:
    """{(task, method, n_labels): each seed's error, in seed order}: what eval.stats compares."""
    groups: dict[tuple, list[tuple[int, float]]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["method"], r["n_labels"]), []).append((r["seed"], r["error"]))
    return {key: [e for _, e in sorted(v)] for key, v in groups.items()}


def summary_keys(summary: Sequence[dict[str, Any]], n_labels: int) -> str:
    """`<method>_err=… <method>_std=…` for every method at `n_labels` (the CLI's summary line)."""
    return " ".join(f"{r['method'].replace('-', '_')}_err={r['error']:.3f} {r['method'].replace('-', '_')}_std={r['error_std']:.3f}"
                    for r in summary if r["n_labels"] == n_labels)


# ----------------------------------------------------------------------------- choosing a recipe on held-out labels

def slug(candidate: str) -> str:
    """A candidate's name as a folder name: "LR 2.5e-4, 10 epochs" -> "lr-2.5e-4-10-epochs"."""
    return "-".join("".join(c if c.isalnum() or c == "." else " " for c in candidate.lower()).split())


def search_recipes(task, methods: Sequence[str], candidates: dict[str, dict[str, Any]],
                   paper_settings: Callable[[str, str], dict[str, Any]], results_root: Path, label_counts: Sequence,
                   seed: int = 0, cached_only: bool = False, profile: str | None = None, log=print, *,
                   checkpoint: str | Path | None = None) -> list[dict[str, Any]]:
    """Every (label count, method, candidate) point on `task`'s validation task (Task.validation(): held-out
    training labels; the test split is never read), each candidate a change to `paper_settings(method,
    profile)`, cached in results_root/<slug(candidate)>/; `checkpoint` replaces each pretrained method's own (e.g. a
    shipped branch's, tools/ship_branch.py). With cached_only, only what is cached; nothing trains."""
    prof = profile or runtime.profile()
    valid = tasks.get(task).validation()
    rows = []
    for n in label_counts:
        for name in methods:
            for candidate, change in candidates.items():
                m = method(name)
                where = dict(checkpoint=(checkpoint or m.checkpoint(prof)) if m.checkpoint else None,
                             settings={**paper_settings(name, prof), **change},
                             results_dir=Path(results_root) / slug(candidate))
                row = (cached_point(valid, n, name, seed, prof, **where) if cached_only
                       else run_point(valid, n, name, seed, valid_curve=True, **where))
                if row is None:
                    continue
                rows.append({**row, "candidate": candidate})
                if log and not cached_only:
                    log(f"{valid.name} n={row['n_labels']:<5} {name:12s} {candidate:36s} held-out error "
                        f"{row['error']:.3f} ({row['seconds']:.0f} s)")
    return rows


def some_candidates(candidates: dict[str, Any], slugs: str) -> dict[str, Any]:
    """'lr-1e-3-10-epochs,...' -> those of `candidates`, named by slug(); an unknown slug is a UsageError."""
    by_slug = {slug(c): c for c in candidates}
    wanted = [x.strip() for x in slugs.split(",") if x.strip()]
    if unknown := [x for x in wanted if x not in by_slug]:
        raise UsageError(f"--candidates {unknown[0]}: use some of {', '.join(by_slug)}")
    return {by_slug[x]: candidates[by_slug[x]] for x in wanted}


def search_place(args) -> dict[str, Any]:
    """A recipe search's --checkpoint and --results-dir as search()'s keywords: another checkpoint is searched
    only in a folder of its own, so the lessons' search is never mixed with it."""
    if args.checkpoint and args.results_dir is None:
        raise UsageError("--checkpoint: give --results-dir too, so its points are cached apart from the search's")
    return {"checkpoint": args.checkpoint, "results_dir": args.results_dir}


def best_recipe(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """method -> the candidate with the lowest held-out error averaged over its rows (every label count and
    task searched counts alike), among the candidates with as many rows as the most complete one."""
    chosen = {}
    for name in dict.fromkeys(r["method"] for r in rows):
        errors: dict[str, list[float]] = {}
        for r in rows:
            if r["method"] == name:
                errors.setdefault(r["candidate"], []).append(r["error"])
        complete = {c: e for c, e in errors.items() if len(e) == max(map(len, errors.values()))}
        chosen[name] = min(complete, key=lambda c: sum(complete[c]) / len(complete[c]))
    return chosen


def fewest_errors(task, labels, methods: tuple, folder, seed: int = 0) -> str:
    """The experiment of a lesson's open exercise (exercises.compare_prediction): each of `methods` trained on
    the same labelled sample of `task` (seed `seed`) by run_point, cached in .cache/<folder>/ (or `folder`
    itself if absolute) apart from the shipped grids; prints their test errors, returns the one with fewest."""
    results_dir = provenance.REPO_ROOT / ".cache" / folder
    rows = {m: run_point(task, labels, m, seed, results_dir=results_dir) for m in methods}
    n = next(iter(rows.values()))["n_labels"]
    errors = ", ".join(f"{m} {r['error']:.3f}" for m, r in rows.items())
    print(f"{getattr(task, 'name', task)}, {n:,} labels, seed {seed}: {errors} test error")
    return min(rows, key=lambda m: rows[m]["error"])
