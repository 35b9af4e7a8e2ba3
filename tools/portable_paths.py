"""Rewrite the machine paths that results and checkpoint JSON files recorded before the portable-path rule.

A result names a file the way `minilab.provenance.shown_path` does (docs/design.md §6): relative to the checkout
("checkpoints/gpt-laptop.pt"), in the data cache as "$MINILIB_DATA/…", anything else as "<outside>/<name>".
Files written before that rule hold absolute paths of the machines and worktrees that made them
("/work/run-abl2/checkpoints/bert-laptop-2x128.pt", "/work/run-gpt/.cache/flywheel/…", a command line's
"--snapshots /work/runs/.cache/pretrain"). This tool rewrites each absolute path inside a JSON string by the
path's text alone (the machine that wrote it may be gone), with `provenance.portable_path`:

    /<anything>/checkpoints/X  -> checkpoints/X        (likewise .cache/X and results/X)
    /<anything>/.cache/minilib/X -> $MINILIB_DATA/X    (the default data cache)
    any other /a/b/name        -> <outside>/name

Only those string values change; the rest of each file keeps its bytes: a file is rewritten with minilib's own
`provenance.write_json` only after checking that writing its unchanged content reproduces its bytes exactly
(files in another format, such as the tokenizers' JSON, are refused, never reformatted). No cache key is made
from these strings (the grid keys a point by the task's fingerprint, its settings and the checkpoint's sha256).

    python tools/portable_paths.py                      # list what would change (nothing is written)
    python tools/portable_paths.py --write --exclude results/baselines
    python tools/portable_paths.py --check              # exit status 1 if any file would change
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minilab import provenance  # noqa: E402

FOLDERS = ("results", "checkpoints")


def rewrite(obj):
    """`obj` with every absolute path inside its strings made portable (dict keys are kept as they are)."""
    if isinstance(obj, dict):
        return {k: rewrite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rewrite(v) for v in obj]
    if isinstance(obj, str):
        return provenance.portable_text(obj)
    return obj


def changes(old, new, where: str = "") -> list[tuple[str, str, str]]:
    """(where, old string, new string) for each string that differs."""
    if isinstance(old, dict):
        return [c for k in old for c in changes(old[k], new[k], f"{where}.{k}" if where else k)]
    if isinstance(old, list):
        return [c for i, (a, b) in enumerate(zip(old, new)) for c in changes(a, b, f"{where}[{i}]")]
    return [(where, old, new)] if old != new else []


def encoded(obj) -> bytes:
    """The bytes provenance.write_json writes for `obj`."""
    return (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode()


def json_files(paths: list[Path], exclude: list[Path]) -> list[Path]:
    out = []
    for path in paths:
        found = [path] if path.is_file() else sorted(path.rglob("*.json"))
        out += [p for p in found if not any(p.resolve().is_relative_to(e.resolve()) for e in exclude)]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", type=Path, help="files or folders (default: results/ and checkpoints/)")
    p.add_argument("--exclude", action="append", type=Path, default=[], help="a folder or file to leave alone")
    p.add_argument("--write", action="store_true", help="rewrite the files (default: only list the changes)")
    p.add_argument("--check", action="store_true", help="exit status 1 if any file would change")
    args = p.parse_args(argv)
    paths = args.paths or [ROOT / f for f in FOLDERS]
    files = json_files(paths, args.exclude)
    rewritten, refused, kinds = [], [], Counter()
    for path in files:
        raw = path.read_bytes()
        try:
            old = json.loads(raw)
        except ValueError as exc:
            refused.append(f"{path}: not JSON ({exc})")
            continue
        new = rewrite(old)
        if new == old:
            continue
        if encoded(old) != raw:          # another format: rewriting would change more than the paths
            refused.append(f"{path}: not in write_json's format; its paths: "
                           + "; ".join(f"{w}: {a}" for w, a, _ in changes(old, new)))
            continue
        found = changes(old, new)
        for where, a, b in found:
            kinds[(where.rsplit(".", 1)[-1].split("[")[0], a, b)] += 1
        rewritten.append(path)
        if args.write:
            provenance.write_json(path, new)
            if json.loads(path.read_bytes()) != new:
                raise SystemExit(f"{path}: did not read back as written")
    verb = "rewrote" if args.write else "would rewrite"
    print(f"{verb} {len(rewritten)} of {len(files)} JSON files")
    for (field, a, b), n in sorted(kinds.items()):
        print(f"  {n:4d} x {field}: {a!r} -> {b!r}")
    for line in refused:
        print(f"refused: {line}", file=sys.stderr)
    return 1 if refused or (args.check and rewritten) else 0


if __name__ == "__main__":
    sys.exit(main())
