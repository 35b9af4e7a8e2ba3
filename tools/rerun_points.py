"""Train cached grid points again from their own keys, into a scratch folder, and say whether the numbers moved.

    MINILIB_PROFILE=laptop python tools/rerun_points.py results/gpt/pos-gpt-scratch-n100-s0-laptop.json ...

Each point is retrained with the task, label count, method, seed, settings (`config`) and checkpoint its file
records (a `<task>-valid` task is that task's validation split, as the recipe searches use), one torch thread,
into a temporary folder; the file itself is never written. One line per point, `same` when the error is
bit-identical and `moved` with both errors otherwise, then `rerun-points: points=<n> same=<k> moved=<m>`.
This is how a restamped result (`experiment ... --restamp`) is checked: same code, same key, same number.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

from minilib import tasks
from minilab import provenance
from minilab.experiments import grid


def task_of(name: str):
    """A point's task by the name it records ('trec-valid' is trec's validation task)."""
    return tasks.get(name[: -len("-valid")]).validation() if name.endswith("-valid") else tasks.get(name)


def rerun(path: Path, folder: Path) -> tuple[float, float]:
    """(recorded error, error trained again) of the point in `path`."""
    row = json.loads(path.read_text())
    checkpoint = provenance.REPO_ROOT / row["checkpoint"] if row.get("checkpoint") else None
    again = grid.run_point(task_of(row["task"]), row["labels"], row["method"], row["seed"], force=True,
                           settings=row["config"], checkpoint=checkpoint, results_dir=folder, threads=1,
                           **({"valid_curve": True} if row["task"].endswith("-valid") else {}))
    return row["error"], again["error"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("points", nargs="+", type=Path, help="cached point files (results/<family>/...json)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    same = 0
    with tempfile.TemporaryDirectory(prefix="rerun-") as tmp:
        for i, path in enumerate(args.points):
            was, now = rerun(path, Path(tmp) / str(i))
            same += was == now
            print(f"{'same ' if was == now else 'moved'} {path}: error {was!r}" + ("" if was == now else f" -> {now!r}"),
                  flush=True)
    print(f"rerun-points: points={len(args.points)} same={same} moved={len(args.points) - same}")
    return 0 if same == len(args.points) else 1


if __name__ == "__main__":
    sys.exit(main())
