"""The league table: every era of the book on the same tasks, label counts and seeds.

One method stands for each era (LEAGUE), every point comes from the one grid runner's cache
(experiments/grid.py: results/<family>/, keyed by the task's fingerprint, the method's settings and
its checkpoint's sha256), so the table is the lessons' own numbers side by side, nothing retrained:

    from minilab.experiments import league
    league.missing("laptop")          # points not cached yet, and why a method cannot run at all
    cells = league.table("laptop")    # mean ± std error per task x label count x era, best per column marked
    print(league.markdown(cells))
    league.plot("laptop")             # one panel per task: error vs labels, one line per method, ±std bands

    python -m minilib experiment league --dry-run     # what is missing, with a rough CPU time each
    python -m minilib experiment league               # fill the missing points (cached, resumable), then
    league: task=pos labels=100 best=<method> majority_err=… bow_lr_err=… … missing=<methods not cached>

The command prints the table, then one line per task at the first label count (the best method, each
method's mean error, the methods with no cached point). Tasks are names, CSV paths (a user's task takes
its kind's line-up, BY_KIND) or Task objects.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from minilib import runtime, tasks
from minilab import provenance
from minilab.experiments import grid, store
from minilab.experiments.compute import examples_seen
from minilab.experiments.grid import ALL
from minilib.runtime import UsageError

TASKS = ("pos", "trec", "rt", "sms")
LABELS = (100, 1000, ALL)
SEEDS = (0, 1, 2)
# a profile's default grid: smoke checks the plumbing on one seed and a few labels
GRIDS = {"smoke": ((20,), (0,)), "laptop": (LABELS, SEEDS), "full": (LABELS, SEEDS)}

# The eras in the book's order, and the grid method that stands for each on a sentence task (rt, trec)
# and on a token task (pos). None: the era has no method for that kind of task.
#   majority       the floor: the commonest class (tag) of the labelled sample
#   bag of words   logistic regression on word counts (pos: on the word itself): no pretraining at all
#   SGNS, GloVe    mean static vectors + logistic regression (chapter 01; pos: the word's vector)
#   ELMo           frozen biLM features (chapter 03). On pos the paper's way (§3.3): a biLSTM tagger over
#                  ELMo's mixed layers (bilstm-elmo); on rt and trec the pooled features + a linear head
#                  (pooled-elmo)
#   ULMFiT         AWD-LSTM pretrained, its LM fine-tuned on the task's text, then the classifier with
#                  gradual unfreezing (chapter 04). Its classifier pools a whole sentence: no tagger, no pos
#   GPT            the Transformer decoder fine-tuned end to end (chapter 06)
#   BERT           the Transformer encoder (MLM + NSP) fine-tuned end to end (chapter 07)
SENTENCE = {"majority": "majority", "bag of words": "bow-lr", "SGNS": "sgns-lr", "GloVe": "glove-lr",
            "ELMo": "pooled-elmo", "ULMFiT": "ulmfit", "GPT": "gpt", "BERT": "bert"}
TOKEN = {**SENTENCE, "ELMo": "bilstm-elmo", "ULMFiT": None}
LEAGUE: dict[str, dict[str, str | None]] = {"pos": TOKEN, "trec": SENTENCE, "rt": SENTENCE, "sms": SENTENCE}
BY_KIND = {"sentence": SENTENCE, "token": TOKEN, "pair": SENTENCE}   # a task outside LEAGUE (a user's CSV)
BASELINES = ("majority", "bow-lr", "sgns-lr", "glove-lr")            # drawn dashed, as in every lesson


def lineup(task: tasks.Task, methods: Sequence[str] | None = None) -> dict[str, str | None]:
    """era -> method for `task` (LEAGUE's, or its kind's for a task outside it); with `methods`, those
    methods, each under its era's name where it has one (else its own name)."""
    default = LEAGUE.get(task.name, BY_KIND[task.kind])
    if methods is None:
        return dict(default)
    era_of = {m: e for lineup_ in (SENTENCE, TOKEN) for e, m in lineup_.items() if m}
    out: dict[str, str | None] = {}
    for m in methods:
        era = era_of.get(m, m)
        out[era if era not in out else m] = m          # a second method of one era goes by its own name
    return out


def _make_hint(path: Path) -> str:
    """The command that writes a missing checkpoint, from its name <model>-<profile>[-<shape>][-<budget>x]:
    bert-mlm-laptop.pt: pretrain bert --objective mlm; bert-laptop-2x128.pt: --shape 2x128; gpt-laptop-5x.pt:
    --budget 5."""
    name = re.fullmatch(r"(?P<model>.+?)-(?P<profile>smoke|laptop|full)(?:-(?P<shape>\d+x\d+))?"
                        r"(?:-(?P<budget>[\d.]+)x)?", path.stem)
    if name is None:
        return "python -m minilib pretrain --help"
    model, extra = name["model"], ""
    if model.startswith("bert-"):
        model, extra = "bert", f" --objective {model.removeprefix('bert-')}"
    extra += f" --shape {name['shape']}" if name["shape"] else ""
    return f"python -m minilib pretrain {model}{extra} --profile {name['profile']}" + (
        f" --budget {name['budget']}" if name["budget"] else "")


def unavailable(era: str, method: str | None, task: tasks.Task, profile: str) -> str | None:
    """Why `method` cannot run on `task` at `profile` (no method for the kind, a kind it does not handle,
    a checkpoint that does not exist yet), or None when it can."""
    if method is None:
        return f"no {era} method for {task.kind} tasks ({task.name})"
    m = grid.method(method)
    if task.kind not in m.kinds:
        return f"{method} handles {'/'.join(m.kinds)} tasks, and {task.name} is a {task.kind} task"
    ckpt = m.checkpoint(profile) if m.checkpoint else None
    if ckpt is not None and not Path(ckpt).is_file():
        shown = Path(ckpt)
        if shown.is_relative_to(provenance.REPO_ROOT):
            shown = shown.relative_to(provenance.REPO_ROOT)
        return f"{method} starts from {shown}, which does not exist: make it with `{_make_hint(Path(ckpt))}`"
    return None


def _grid_of(profile: str, task_names, labels, seeds):
    """Checked tasks and label counts (a bad one fails before anything is read or trained)."""
    default_labels, default_seeds = GRIDS[profile]
    task_objs = [tasks.get(t) for t in (task_names or TASKS)]
    labels = list(default_labels if labels is None else labels)
    seeds = list(default_seeds if seeds is None else seeds)
    for t in task_objs:
        for n in labels:
            grid.label_count(n, len(t.train), f" for {t.name}")
    return task_objs, labels, seeds


def missing(profile: str | None = None, task_names: Sequence | None = None, labels: Sequence | None = None,
            methods: Sequence[str] | None = None, seeds: Sequence[int] | None = None,
            results_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """Every point of the league not in the cache: {"task", "era", "method", "labels", "n_labels", "seed",
    "reason", "stale", "estimate_s", "estimate_note"}. `reason` is None for a point that can run (then
    `stale` says whether an older point is cached under another key: a changed checkpoint, settings or
    task) and says why when it cannot; `estimate_s` is a rough CPU time (estimate_seconds)."""
    prof = profile or runtime.profile()
    task_objs, labels, seeds = _grid_of(prof, task_names, labels, seeds)
    out = []
    for task in task_objs:
        for era, name in lineup(task, methods).items():
            reason = unavailable(era, name, task, prof)
            for n in labels:
                for seed in seeds:
                    if reason is None and grid.cached_point(task, n, name, seed, prof, results_dir=results_dir):
                        continue
                    point = {"task": task.name, "era": era, "method": name, "labels": n,
                             "n_labels": grid.label_count(n, len(task.train)), "seed": seed, "reason": reason,
                             "stale": False, "estimate_s": None, "estimate_note": ""}
                    if reason is None:
                        point["stale"] = grid.point_path(grid.method(name), task, n, seed, prof, results_dir).exists()
                        point["estimate_s"], point["estimate_note"] = estimate_seconds(
                            task, name, point["n_labels"], prof, results_dir)
                    out.append(point)
    return out


# ----------------------------------------------------------------------------- how long a point takes

def _timed(method: str, profile: str, results_dir: str | Path | None) -> list[dict[str, Any]]:
    """Every stored point of `method` at `profile` (any key: a stale point still tells how long it took)."""
    folder = Path(results_dir or store.folder(grid.method(method).family))
    rows = []
    for path in folder.glob(f"*-{method}-n*-s*-{profile}.json"):
        try:
            row = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if row.get("method") == method and "seconds" in row:
            rows.append(row)
    return rows


def words_per_item(task: tasks.Task) -> float:
    """Mean words per training item (a pos sentence is a word list; a text is split on spaces, a pair's both)."""
    def words(x):
        return len(x) if isinstance(x, list) else sum(map(words, x)) if isinstance(x, tuple) else len(str(x).split())
    texts = task.train.texts
    return float(np.mean([words(texts[i]) for i in range(0, len(texts), max(1, len(texts) // 2000))]))


def examples_read(n: int, config: dict | None) -> int:
    """The labelled examples one run reads over its epochs: with a fine-tuning config (epochs, batch_size,
    min_steps_per_epoch) each epoch repeats a small sample (compute.examples_seen); otherwise n."""
    keys = ("epochs", "batch_size", "min_steps_per_epoch")
    return examples_seen(n, *(config[k] for k in keys)) if config and all(k in config for k in keys) else n


def estimate_seconds(task: tasks.Task, method: str, n_labels: int, profile: str,
                     results_dir: str | Path | None = None) -> tuple[float | None, str]:
    """A rough CPU time for one point, and a note. A straight line in the words a run reads (examples seen x
    mean words per item) through the method's timed points on this task (note ""), else on its other tasks
    ("other tasks": a pos sentence is ~2x a trec question); "extrapolated" when the point reads over 3x the
    most any timed point read (the line may then be far off, e.g. a point that also computes features of
    every labelled item). Examples seen: a fine-tuning method repeats a small sample to reach its minimum
    steps per epoch (grid.repeats_per_epoch), so 100 labels read as much as 640; other methods, the label
    count. (None, "never timed") without any timed point."""
    rows = _timed(method, profile, results_dir)
    same = [r for r in rows if r.get("task") == task.name]
    use, note = (same, "") if same else (rows, "other tasks")
    size = {task.name: words_per_item(task)}
    for name in {r["task"] for r in use} - set(size):
        try:
            size[name] = words_per_item(tasks.get(name))
        except UsageError:                       # a point of a CSV task that is not here any more
            pass
    use = [r for r in use if r["task"] in size]
    if not use:
        return None, "never timed"
    x = np.array([examples_read(r["n_labels"], r.get("config")) * size[r["task"]] for r in use], dtype=float)
    s = np.array([r["seconds"] for r in use], dtype=float)
    want = examples_read(n_labels, use[-1].get("config")) * size[task.name]
    if len(set(x)) >= 2:
        slope, intercept = np.polyfit(x, s, 1)
        guess = max(intercept + max(slope, 0.0) * want, s.min())
    else:
        guess = s.mean() * max(1.0, want / x[0])
    if want > 3 * x.max():
        note = "extrapolated" if not note else f"{note}, extrapolated"
    return float(guess), note


duration = grid.duration    # 12 s, 4 min, 2.5 h


# ----------------------------------------------------------------------------- filling the league

def _cannot_run(points: Sequence[dict[str, Any]]) -> list[tuple[tuple[str, str], str, int]]:
    """((task, method), reason, how many points) for each method that cannot run on a task."""
    groups: dict[tuple[str, str], list] = {}
    for p in points:
        if p["reason"]:
            groups.setdefault((p["task"], p["method"] or p["era"]), []).append(p["reason"])
    return [(key, reasons[0], len(reasons)) for key, reasons in groups.items()]


def fill(task_names: Sequence | None = None, labels: Sequence | None = None, methods: Sequence[str] | None = None,
         seeds: Sequence[int] | None = None, results_dir: str | Path | None = None, threads: int | None = None,
         log=print) -> list[dict[str, Any]]:
    """Run every missing point that can run (cheapest first, by estimate_seconds) through grid.run_point, at
    the current profile; each is cached as it finishes, so an interrupted fill resumes where it stopped.
    Points that cannot run are skipped with their reason. `threads`: torch threads (default: the method's
    own setting where it has one, e.g. 1 for the LSTMs). Returns the rows trained."""
    prof = runtime.profile()
    by_name = {t.name: t for t in _grid_of(prof, task_names, labels, seeds)[0]}   # a CSV task is no name to get
    todo = missing(prof, list(by_name.values()), labels, methods, seeds, results_dir)
    if log:
        for (task, method), reason, count in _cannot_run(todo):
            log(f"skip {task} {method}: {count} points cannot run: {reason}")
    runnable = sorted((p for p in todo if p["reason"] is None),
                      key=lambda p: (p["estimate_s"] is None, p["estimate_s"] or 0.0))
    rows = []
    grid.check_cost(sum(p["estimate_s"] or 0.0 for p in runnable), len(runnable))   # the whole plan, said first
    for i, p in enumerate(runnable, 1):
        own = grid.method(p["method"]).settings(prof).get("threads")
        row = grid.run_point(by_name[p["task"]], p["labels"], p["method"], p["seed"], threads=threads or own,
                             results_dir=results_dir)
        rows.append(row)
        if log:
            log(f"[{i}/{len(runnable)}] {p['task']} n={row['n_labels']:<6d} {p['method']:12s} seed {p['seed']}: "
                f"error {row['error']:.3f} ({row['seconds']:.0f} s)")
    return rows


# ----------------------------------------------------------------------------- the table and the figure

def cached(profile: str | None = None, task_names: Sequence | None = None, labels: Sequence | None = None,
           methods: Sequence[str] | None = None, seeds: Sequence[int] | None = None,
           results_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """Every cached row of the league (methods that cannot run are left out; nothing trains)."""
    prof = profile or runtime.profile()
    task_objs, labels, seeds = _grid_of(prof, task_names, labels, seeds)
    rows = []
    for task in task_objs:
        runnable = [m for e, m in lineup(task, methods).items() if unavailable(e, m, task, prof) is None]
        rows += grid.cached_rows(task, runnable, labels, seeds, prof, results_dir)
    return rows


def cells(rows: Sequence[dict[str, Any]], task_objs: Sequence[tasks.Task], labels: Sequence,
          methods: Sequence[str] | None = None, profile: str | None = None) -> list[dict[str, Any]]:
    """The league's cells from grid rows: one per task x label count x era, {"task", "labels", "n_labels",
    "era", "method", "error", "error_std", "seeds", "best", "reason"}. `error` is None for a cell with no
    row (`reason` then says why: "not run" or why it cannot run). `best` marks the lowest mean error of each
    column (task x label count) among the cells with the most seeds in it; ties are all marked."""
    prof = profile or runtime.profile()
    summary = {(r["task"], r["method"], r["n_labels"]): r for r in grid.summarize(rows)}
    out = []
    for task in task_objs:
        for n in labels:
            k = grid.label_count(n, len(task.train))
            column = []
            for era, name in lineup(task, methods).items():
                s = summary.get((task.name, name, k))
                column.append({"task": task.name, "labels": n, "n_labels": k, "era": era, "method": name,
                               "error": s["error"] if s else None, "error_std": s["error_std"] if s else None,
                               "seeds": s["seeds"] if s else 0, "best": False,
                               "reason": None if s else unavailable(era, name, task, prof) or "not run"})
            scored = [c for c in column if c["error"] is not None]
            if scored:
                most = max(c["seeds"] for c in scored)
                low = min(c["error"] for c in scored if c["seeds"] == most)
                for c in scored:
                    c["best"] = c["seeds"] == most and c["error"] <= low + 1e-12
            out += column
    return out


def table(profile: str | None = None, task_names: Sequence | None = None, labels: Sequence | None = None,
          methods: Sequence[str] | None = None, seeds: Sequence[int] | None = None,
          results_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """The league table from the cache (cells(): mean ± std error per task x label count x era, best marked)."""
    prof = profile or runtime.profile()
    task_objs, labels, seeds = _grid_of(prof, task_names, labels, seeds)
    rows = cached(prof, task_objs, labels, methods, seeds, results_dir)
    return cells(rows, task_objs, labels, methods, prof)


def markdown(league_cells: Sequence[dict[str, Any]]) -> str:
    """The table as Markdown: one row per era, one column per task x label count, "mean ± std" test error,
    the best of each column in bold; "—" not run yet, "n/a" cannot run (missing() says why)."""
    from minilib.viz import markdown_table

    columns = list(dict.fromkeys((c["task"], c["labels"], c["n_labels"]) for c in league_cells))
    eras = list(dict.fromkeys(c["era"] for c in league_cells))
    at = {(c["task"], c["labels"], c["era"]): c for c in league_cells}
    most = {col[:2]: max((c["seeds"] for c in league_cells if (c["task"], c["labels"]) == col[:2]), default=0)
            for col in columns}

    def show(c):
        if c is None or c["error"] is None:
            return "—" if c is None or c["reason"] == "not run" else "n/a"
        text = f"{c['error']:.3f} ± {c['error_std']:.3f}"
        text = f"**{text}**" if c["best"] else text
        fewer = c["seeds"] < most[(c["task"], c["labels"])]
        return text + (f" ({c['seeds']} seed{'s' * (c['seeds'] != 1)})" if fewer else "")

    def era_name(era):
        used = {}
        for c in league_cells:
            if c["era"] == era and c["method"]:
                used.setdefault(c["method"], []).append(c["task"])
        if len(used) == 1:
            return f"{era} (`{next(iter(used))}`)"
        return f"{era} (" + ", ".join(f"`{m}` on {', '.join(dict.fromkeys(t))}" for m, t in used.items()) + ")"

    header = ["era (method)"] + [f"{t} {n if n == ALL else f'{n:,}'}" + (f" ({k:,})" if n == ALL else "")
                                 for t, n, k in columns]
    return markdown_table(header, [[era_name(e)] + [show(at.get((t, n, e))) for t, n, _ in columns] for e in eras])


def plot(profile: str | None = None, task_names: Sequence | None = None, labels: Sequence | None = None,
         methods: Sequence[str] | None = None, seeds: Sequence[int] | None = None,
         results_dir: str | Path | None = None, axes=None):
    """One panel per task: test error vs labels (log x), one line per method with a ±1 std band over seeds
    (sample_efficiency.plot_curves), the simple baselines dashed. Returns the figure."""
    import matplotlib.pyplot as plt

    from minilab.experiments.sample_efficiency import plot_curves

    prof = profile or runtime.profile()
    task_objs, labels, seeds = _grid_of(prof, task_names, labels, seeds)
    summary = grid.summarize(cached(prof, task_objs, labels, methods, seeds, results_dir))
    if axes is None:
        _, axes = plt.subplots(1, len(task_objs), figsize=(5.5 * len(task_objs), 4.2), squeeze=False)
        axes = axes[0]
    for task, ax in zip(task_objs, axes):
        order = [m for m in lineup(task, methods).values() if m]
        nets = [r for r in summary if r["task"] == task.name and r["method"] not in BASELINES]
        base = sorted((r for r in summary if r["task"] == task.name and r["method"] in BASELINES),
                      key=lambda r: order.index(r["method"]) if r["method"] in order else len(order))
        plot_curves(nets, task.name, ax=ax, baselines=base)
    return axes[0].figure


# ----------------------------------------------------------------------------- the league on the compute axis

# A pretrained method's tokens that no checkpoint of ours records: the paper's own count.
PAPER_TOKENS = {"glove-lr": (6e9, "GloVe 6B: Wikipedia 2014 + Gigaword 5 (Pennington et al. 2014, §4.2)")}


def tokens_read(method: str, profile: str) -> tuple[float, str]:
    """(pretraining tokens the method read before its first label, where the count comes from): Kaplan's D,
    every pass counted (compute.pretraining_tokens: the checkpoint's provenance); SGNS's vectors read ELMo's
    text `epochs` times; 0 for a method without pretraining (majority, bag of words, any *-scratch)."""
    from minilab.experiments.compute import pretraining_tokens
    from minilib.models.pretrained import sidecar

    if method in PAPER_TOKENS:
        return PAPER_TOKENS[method]
    m = grid.method(method)
    settings = m.settings(profile)
    if m.checkpoint is None or settings.get("pretrained") is False:
        return 0, "no pretraining"
    path = sidecar(m.checkpoint(profile))
    if not path.is_file():
        raise UsageError(f"{method}: no provenance {path} to count its pretraining tokens")
    meta = json.loads(path.read_text())
    tokens = pretraining_tokens(meta) * (settings.get("epochs", 1) if method == "sgns-lr" else 1)
    where = f"{path.name}" + (f" x {settings['epochs']} epochs" if method == "sgns-lr" else "")
    if "tapt" in settings:        # the in-domain stage's windows of 16 x 128 tokens (experiments/tapt.py)
        tokens += settings["tapt"]["steps"] * 16 * 128
        where += f" + {settings['tapt']['steps']} in-domain steps"
    return tokens, where


def plot_tokens(profile: str | None = None, task_names: Sequence | None = None, labels=100,
                results_dir: str | Path | None = None, axes=None):
    """The league on the compute axis: one panel per task, each method a point at the pretraining tokens it read
    (x: 0, then log) and its mean test error at `labels` labels (± the seeds' std). Returns the figure."""
    import matplotlib.pyplot as plt

    prof = profile or runtime.profile()
    task_objs, _, seeds = _grid_of(prof, task_names, [labels], None)
    summary = grid.summarize(cached(prof, task_objs, [labels], None, seeds, results_dir))
    if axes is None:
        _, axes = plt.subplots(1, len(task_objs), figsize=(5.0 * len(task_objs), 4.2), squeeze=False)
        axes = axes[0]
    for task, ax in zip(task_objs, axes):
        order = [(e, m) for e, m in lineup(task).items() if m]
        rows = {r["method"]: r for r in summary if r["task"] == task.name}
        xs = []
        for i, (era, name) in enumerate(order):
            if name not in rows:
                continue
            x = tokens_read(name, prof)[0]
            xs.append(x)
            r = rows[name]
            ax.errorbar([x], [r["error"] * 100], yerr=[r["error_std"] * 100], marker="s" if name in BASELINES else "o",
                        color=f"C{i}", capsize=3, ls="none")
            ax.annotate(era, (x, r["error"] * 100), textcoords="offset points", xytext=(5, 4), fontsize=8)
        positive = [x for x in xs if x > 0]
        ax.set_xscale("symlog", linthresh=min(positive) if positive else 1.0)
        ax.set_xlabel("pretraining tokens read (0, then log)")
        ax.set_ylabel(f"test error at {labels} labels (%)")
        ax.set_title(task.name)
        ax.grid(alpha=0.3, which="both")
    return axes[0].figure


def summary_line(league_cells: Sequence[dict[str, Any]], task: str, labels) -> str:
    """`league: task=pos labels=100 best=<method> <method>_err=… … missing=<methods>` for one column."""
    column = [c for c in league_cells if c["task"] == task and c["labels"] == labels]
    best = [c["method"] for c in column if c["best"]]
    errs = " ".join(f"{c['method'].replace('-', '_')}_err={c['error']:.3f}" for c in column if c["error"] is not None)
    gone = [c["method"] for c in column if c["error"] is None and c["method"]]   # an era without a method: n/a
    return (f"league: task={task} labels={labels} best={','.join(best) or 'none'}" + (f" {errs}" if errs else "")
            + (f" missing={','.join(gone)}" if gone else ""))


# ----------------------------------------------------------------------------- the command line

def _split(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def cli_run(args, name: str) -> int:
    prof = runtime.profile()
    if args.seeds is not None and args.seeds < 1:
        raise UsageError(f"--seeds {args.seeds}: use 1 or more")
    task_names = _split(args.tasks)
    labels = grid.parse_labels(args.labels) if args.labels else None
    methods = _split(args.methods)
    for m in methods or ():
        grid.method(m)                                  # an unknown name fails before anything runs
    seeds = list(range(args.seeds)) if args.seeds else None
    where = dict(task_names=task_names, labels=labels, methods=methods, seeds=seeds, results_dir=args.results_dir)
    if args.dry_run:
        todo = missing(prof, **where)
        runnable = [p for p in todo if p["reason"] is None]
        for p in runnable:
            when = f"~{duration(p['estimate_s'])}" if p["estimate_s"] is not None else "never timed"
            print(f"to run: {p['task']} n={p['labels']} {p['method']} seed {p['seed']}: {when}"
                  + (f" ({p['estimate_note']})" if p["estimate_s"] is not None and p["estimate_note"] else "")
                  + (" (stale: rerun)" if p["stale"] else ""))
        for (task, method), reason, count in _cannot_run(todo):
            print(f"cannot run: {task} {method} ({count} points): {reason}")
        total = sum(p["estimate_s"] or 0.0 for p in runnable)
        print(f"to run: {len(runnable)} points, about {duration(total)} of CPU"
              f"{' (some never timed)' if any(p['estimate_s'] is None for p in runnable) else ''}; "
              f"cannot run: {len(todo) - len(runnable)} points")
    else:
        fill(**where, threads=args.threads)
    league_cells = table(prof, **where)
    print(markdown(league_cells))
    for task in dict.fromkeys(c["task"] for c in league_cells):
        print(summary_line(league_cells, task, league_cells[0]["labels"]))
    return 0
