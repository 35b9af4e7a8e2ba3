"""Move a model's default checkpoint to its shipped 5x branch (minilab/shipped.py), one grid point at a time.

    python tools/ship_branch.py gpt          # the points the move needs, and the commands that run the missing
    python tools/ship_branch.py gpt --run    # run those commands one after another (resumable: each skips cached points)
    python tools/ship_branch.py gpt --copy   # every point staged: copy them into results/

The methods that move with a model are those whose checkpoint becomes its branch once shipped.BRANCHES names it
(gpt: gpt, gpt-no-aux, gpt-tapt; the -scratch controls keep the recipe run). Each of their points in results/
made from the recipe run is run again on the branch first, into results/compute-axis/<run>/5x/ (the compute
axis's folder for the branch, where git keeps them from one session to the next): the fine-tuning search of
the methods FINE_TUNING is chosen for (`experiment gpt-recipe`/`bert-recipe --checkpoint`, staged in
<that folder>/gpt-recipe/), first, since it decides the recipe every other point trains with, then the grid's
points (`experiment queue --checkpoint`). A point's key holds its checkpoint's sha256, so a staged file is the
very point the lessons read once the default has moved; --copy puts it there, and refuses while a point is
missing or while the branch's search would choose another recipe than FINE_TUNING says. Then the model goes
into shipped.BRANCHES and what reads the default as a whole is run again (printed at the end). One line per
command that runs missing points (with their count and the seconds the recipe run's took), then
`ship-branch: model=<m> points=<n> staged=<k> missing=<n-k> cpu_s=<the recipe run's seconds for the missing>`.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:       # run as `python3 tools/ship_branch.py` from the repo root
    sys.path.insert(0, str(ROOT))

from minilib import tasks  # noqa: E402
from minilab import provenance
from minilab.experiments import bert_finetune, compute_axis, gpt_finetune, grid, store  # noqa: E402
from minilib.models.pretrained import file_sha256  # noqa: E402
from minilab import shipped  # noqa: E402
from minilib.runtime import UsageError  # noqa: E402

PROFILE = "laptop"      # the profile whose committed grids the lessons read
SEARCHES = (gpt_finetune, bert_finetune)     # each: search(), SEARCH_FOLDER, RECIPE_TASKS, FINE_TUNING, chosen_recipe()


def moving_methods(model: str, profile: str = PROFILE) -> list[str]:
    """The grid methods whose checkpoint becomes `model`'s branch once shipped.BRANCHES names it."""
    store.import_experiments()
    before = dict(shipped.BRANCHES)
    try:
        shipped.BRANCHES[profile] = tuple(shipped.BRANCHES.get(profile, ())) + (model,)
        branch = shipped.branch(model, profile).resolve()
        return [name for name, m in grid.METHODS.items()
                if m.checkpoint and Path(m.checkpoint(profile)).resolve() == branch]
    finally:
        shipped.BRANCHES.clear()
        shipped.BRANCHES.update(before)


def staging(model: str) -> Path:
    """results/compute-axis/<run>/5x/: where the branch's points wait for the move."""
    return compute_axis.RESULTS_DIR / model / compute_axis.budget_name(shipped.SHIP_BUDGET)


def plan(model: str, results: Path | None = None, profile: str = PROFILE) -> list[dict]:
    """Each recipe-run point of the moving methods, the search's first: {"path", "row", "staged" (the branch's
    row or None), "staged_path", "search" (the module whose recipe search it is, or None)}."""
    recipe, branch = shipped.recipe(model, profile), shipped.branch(model, profile)
    if not branch.is_file():
        raise UsageError(f"no {provenance.shown_path(branch)}: train the branch first (python tools/long_runs.py {model}:5)")
    moving = moving_methods(model, profile)
    return search_points(model, moving, recipe, branch, results, profile) + \
        grid_points(model, moving, file_sha256(recipe), branch, results, profile)


def search_points(model, moving, recipe: Path, branch: Path, results, profile) -> list[dict]:
    """The recipe search's points of the moving methods it tunes (validation labels), found by the search itself."""
    out = []
    for module in SEARCHES:
        searched = [m for m in moving if m in module.RECIPE_METHODS]
        folder = (results or store.RESULTS) / module.SEARCH_FOLDER.name
        where = staging(model) / module.SEARCH_FOLDER.name
        for task in module.RECIPE_TASKS if searched else ():
            staged = {_search_key(r): r for r in module.search(task, searched, cached_only=True, profile=profile,
                                                              checkpoint=branch, results_dir=where, log=None)}
            for row in module.search(task, searched, cached_only=True, profile=profile, checkpoint=recipe,
                                     results_dir=folder, log=None):
                m, valid, place = grid.method(row["method"]), tasks.get(task).validation(), grid.slug(row["candidate"])
                out.append({"path": grid.point_path(m, valid, row["labels"], row["seed"], profile, folder / place),
                            "row": row, "staged": staged.get(_search_key(row)), "search": module,
                            "staged_path": grid.point_path(m, valid, row["labels"], row["seed"], profile, where / place)})
    return out


def _search_key(row: dict) -> tuple:
    return row["task"], row["labels"], row["method"], row["seed"], row["candidate"]


def grid_points(model, moving, recipe_sha: str, branch: Path, results, profile) -> list[dict]:
    """The grid's points of the moving methods (test labels), found by their files and checkpoint sha256."""
    out = []
    for name in moving:
        m = grid.method(name)
        folder = (results or store.RESULTS) / m.family
        for path in sorted(folder.glob(f"*-{name}-n*-s*-{profile}.json")):
            row = json.loads(path.read_text())
            if row.get("method") != name or row.get("checkpoint_sha256") != recipe_sha:
                continue
            task = tasks.get(row["task"])
            staged = grid.cached_point(task, row["labels"], name, row["seed"], profile, checkpoint=branch,
                                       results_dir=staging(model))
            out.append({"path": path, "row": row, "staged": staged, "search": None,
                        "staged_path": grid.point_path(m, task, row["labels"], row["seed"], profile, staging(model))})
    return out


def commands(model: str, points: list[dict], profile: str = PROFILE) -> list[tuple[list[str], int, float]]:
    """(the arguments after `python`, points, the recipe run's seconds for them) of each command that fills the
    missing points, the search's first: a search per task (its methods and label counts), then an `experiment
    queue` per method and label count, every seed the recipe run has."""
    branch, where = (provenance.shown_path(p) for p in (shipped.branch(model, profile), staging(model)))
    out, groups, searches = [], {}, {}
    for p in points:
        if p["staged"] is None and p["search"] is not None:
            searches.setdefault((p["search"].SEARCH_FOLDER.name, p["row"]["task"].removesuffix("-valid")), []).append(p["row"])
    for (experiment, task), rows in searches.items():
        labels = ",".join(dict.fromkeys(str(r["labels"]) for r in rows))
        out.append((["-m", "minilib", "experiment", experiment, "--task", task,
                     "--methods", ",".join(dict.fromkeys(r["method"] for r in rows)), "--labels", labels,
                     "--checkpoint", branch, "--results-dir", f"{where}/{experiment}", "--fill"],
                    len(rows), sum(r["seconds"] for r in rows)))
    for p in points:
        if p["staged"] is None and p["search"] is None:
            groups.setdefault((p["row"]["method"], str(p["row"]["labels"])), []).append(p["row"])
    seeds = 1 + max((p["row"]["seed"] for p in points if p["search"] is None), default=0)
    return out + [(["-m", "minilib", "experiment", "queue", "--task", ",".join(dict.fromkeys(r["task"] for r in rows)),
                    "--methods", m, "--labels", n, "--seeds", str(seeds), "--checkpoint", branch, "--results-dir", where,
                    "--fill"], len(rows), sum(r["seconds"] for r in rows))
                   for (m, n), rows in groups.items()]


def recipe_changes(model: str, points: list[dict], profile: str = PROFILE) -> list[str]:
    """Where the branch's (staged) search would choose another recipe than FINE_TUNING says, one line each: the
    grid's points were staged with FINE_TUNING's, so the move would not be the search's own choice."""
    out, moving = [], {p["row"]["method"] for p in points}
    for module in dict.fromkeys(p["search"] for p in points if p["search"] is not None):
        chosen = module.chosen_recipe(profile, checkpoint=shipped.branch(model, profile),
                                      results_dir=staging(model) / module.SEARCH_FOLDER.name)
        out += [f"{module.SEARCH_FOLDER.name} on the branch chooses {c!r} for {m}, FINE_TUNING says "
                f"{module.FINE_TUNING[m]!r}" for m, c in chosen.items()
                if m in moving and c != module.FINE_TUNING[m]]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help=f"one of {', '.join(compute_axis.RUNS)}")
    parser.add_argument("--run", action="store_true", help="run the commands for the missing points, in order")
    parser.add_argument("--copy", action="store_true", help="copy every staged point into results/<family>/")
    args = parser.parse_args(argv)
    try:
        if args.model not in compute_axis.RUNS:
            raise UsageError(f"{args.model!r}: name one of {', '.join(compute_axis.RUNS)}")
        points = plan(args.model)
        missing = [p for p in points if p["staged"] is None]
        if args.copy and missing:
            raise UsageError(f"{len(missing)} of {len(points)} points are not staged yet: run the commands "
                             f"`python tools/ship_branch.py {args.model}` prints")
        if args.copy and (changes := recipe_changes(args.model, points)):
            raise UsageError(f"{changes[0]}: update FINE_TUNING (a new recipe), then stage the grid's points again")
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
    for command, n, seconds in commands(args.model, points):
        print(f"MINILIB_PROFILE={PROFILE} python {shlex.join(command)}    # {n} points, "
              f"{grid.duration(seconds)} on the recipe run", flush=True)
        if args.run:            # the repo's own command, from the repo root, this interpreter
            done = subprocess.run([sys.executable, *command], cwd=ROOT, env={**os.environ, "MINILIB_PROFILE": PROFILE})
            if done.returncode != 0:
                print(f"ship-branch: stopped: exit {done.returncode} from the command above", file=sys.stderr)
                return done.returncode
    if args.run:
        points = plan(args.model)
        missing = [p for p in points if p["staged"] is None]
    if args.copy:
        for p in points:           # the staged file as it is: its key and stamp are the point's
            provenance.atomic_write_bytes(p["path"], p["staged_path"].read_bytes())
        print(f"copied {len(points)} points; now add {args.model!r} to minilab/shipped.BRANCHES[{PROFILE!r}], then run "
              f"again what reads the default whole: `experiment lm-quality`, `experiment compute`, `make lessons`, "
              f"`python tools/check_results.py`")
    print(f"ship-branch: model={args.model} points={len(points)} staged={len(points) - len(missing)} "
          f"missing={len(missing)} cpu_s={sum(p['row']['seconds'] for p in missing):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
