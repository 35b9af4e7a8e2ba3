"""`make check-results`: are the lessons' saved outputs made from the results and checkpoints in the repository now?

    python tools/check_results.py               # every lessons/[0-9]*.ipynb of this checkout
    python tools/check_results.py --root DIR    # another checkout (or a test's copy of one)

Each executed lesson carries, in the metadata of its last cell's output, the record minilab.provenance.show_reads
saved: the sha256 of every results/ and checkpoints/ file it read (at read time), the profile it ran at and the
quantities it noted (`provenance.note`). This check reads those records, hashes each file now, and reports

    stale     a lesson with no record, one executed at a profile other than laptop, or one that read a file
              that has changed or is gone since (the lesson and the file named): re-execute it;
    mismatch  one named quantity (a model's N, a compute figure, a league cell) with different values in
              different lessons (each lesson and its value named);
    overclaim a saved output of a late chapter (OVERCLAIM_LESSONS) that prints a crossover without its 95 %
              interval ("crosses 0 at about 120x" alone, "at this rate it crosses"), or a verdict by the old
              spread rule (summed population stds, "by more than the seed spreads") instead of the book's one
              rule (minilib/eval/stats.py).

The last line is always `check-results: lessons=<n> stale=<k> mismatches=<m> overclaims=<c>`; the exit status is 1
when k + m + c > 0.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from minilab.provenance import REPO_ROOT, same_content, saved_record as lesson_record, sha256_file

PROFILE = "laptop"          # the profile the committed outputs must come from (docs/design.md §3)
SHOWN_FILES = 5             # changed files named per lesson; the rest counted


def sha256_now(path: Path, cache: dict[Path, str | None]) -> str | None:
    """A file's sha256 now (None when it is gone), each file hashed once per run."""
    if path not in cache:
        cache[path] = sha256_file(path) if path.is_file() else None
    return cache[path]


def stale_reasons(record: dict | None, root: Path, cache: dict[Path, str | None]) -> list[str]:
    """Why a lesson's saved outputs may not come from the repository's files now; [] when they do."""
    if record is None:
        return ["no record of what it read (its last cell, provenance.show_reads(), has not run at laptop)"]
    reasons = []
    if record.get("profile") != PROFILE:
        reasons.append(f"executed at profile {record.get('profile')}, not {PROFILE}")
    for path in record.get("changed", []):
        reasons.append(f"{path} changed while it ran")
    moved = []
    for path, digest in sorted(record.get("reads", {}).items()):
        now = sha256_now(root / path, cache)
        if now != digest:
            moved.append(f"{path} {'is gone' if now is None else 'changed since it was read'}")
    reasons += moved[:SHOWN_FILES]
    if len(moved) > SHOWN_FILES:
        reasons.append(f"... and {len(moved) - SHOWN_FILES} more files changed or gone")
    return reasons


def mismatches(records: dict[str, dict | None]) -> list[str]:
    """One line per quantity whose value differs between lessons, naming each lesson and its value."""
    by_name: dict[str, list[tuple[str, object]]] = {}
    for lesson, record in records.items():
        for name, value in ((record or {}).get("quantities") or {}).items():
            by_name.setdefault(name, []).append((lesson, value))
    lines = []
    for name, values in sorted(by_name.items()):
        if any(not same_content(values[0][1], v) for _, v in values[1:]):
            lines.append(f"mismatch {name}: " + "; ".join(f"{lesson} {value!r}" for lesson, value in values))
    return lines


OVERCLAIM_LESSONS = ("06", "07", "08")     # the chapters that read the compute axis and the twins
OVERCLAIMS = {
    "a crossover without its interval": re.compile(r"crosses 0 at about [0-9.e+]+x(?! \(95 % interval)|at this rate it crosses"),
    "a verdict by the summed-std rule": re.compile(r"by more than the (two )?seed spreads|, spreads \d"),
}


def overclaims(notebook: Path) -> list[str]:
    """Each saved output line of `notebook` that states a crossover or a verdict by another rule than the book's."""
    if not notebook.name.startswith(OVERCLAIM_LESSONS):
        return []
    found = []
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/markdown", ""))
            for line in text.splitlines():
                for what, pattern in OVERCLAIMS.items():
                    if pattern.search(line):
                        found.append(f"overclaim {notebook.stem}: {what}: {line.strip()[:160]}")
    return found


def check(root: Path) -> tuple[list[str], int, int, int, int]:
    """(report lines, lessons, stale lessons, mismatched quantities, overclaims) for the lessons under `root`."""
    notebooks = sorted((root / "lessons").glob("[0-9]*.ipynb"))
    cache: dict[Path, str | None] = {}
    records, lines, stale = {}, [], 0
    for nb in notebooks:
        try:
            records[nb.stem] = lesson_record(nb)
        except (OSError, ValueError) as e:          # unreadable JSON: say so, count it stale
            records[nb.stem] = None
            lines.append(f"stale {nb.stem}: cannot read the notebook ({e})")
            stale += 1
            continue
        reasons = stale_reasons(records[nb.stem], root, cache)
        stale += bool(reasons)
        lines += [f"stale {nb.stem}: {r}" for r in reasons]
    bad = mismatches(records)
    claims = [line for nb in notebooks for line in overclaims(nb)]
    return lines + bad + claims, len(notebooks), stale, len(bad), len(claims)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="the checkout to check (default: this one)")
    args = parser.parse_args(argv)
    if not (args.root / "lessons").is_dir():
        print(f"check-results: {args.root} has no lessons/ folder; pass a checkout with --root", file=sys.stderr)
        return 2
    lines, n, k, m, c = check(args.root.resolve())
    for line in lines:
        print(line)
    print(f"check-results: lessons={n} stale={k} mismatches={m} overclaims={c}")
    return 1 if k + m + c else 0


if __name__ == "__main__":
    sys.exit(main())
