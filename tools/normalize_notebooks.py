"""Put the lessons' JSON in the form JupyterLab 4 holds them in, so opening one does not mark it modified.

    python tools/normalize_notebooks.py            # rewrite lessons/[0-9]*.ipynb in place (after `make lessons`)
    python tools/normalize_notebooks.py --check    # exit 1 and name each lesson that is not normalised

JupyterLab marks a notebook modified (● on its tab) as soon as its model differs from the file it read, and
writes back what its model holds. Measured by opening each lesson in JupyterLab 4.6 (headless chromium, the
kernel `make setup` installs), waiting for the kernel, and saving:

- `metadata.kernelspec` named another kernel than `make setup` installs (lessons 07 and 08 said
  `Python 3`): JupyterLab rewrites it to the running kernel's (`Python 3 (minilib)`, the Makefile's
  `ipykernel install --display-name`) as the kernel starts, and that marks the lesson modified at once;
- a number stored as an integral float (a slider's `"max": 2.0` in the saved widget state) comes back as
  `2`: the model goes through JavaScript, which has one number type. Not a mark on opening, but a
  lesson opened and saved unchanged would show a diff.

`language_info` is the kernel's own (Python's version included): a learner on another Python sees the
lesson marked once its kernel starts, whatever the file says. Stream outputs stay as they are (JupyterLab
keeps consecutive ones apart in the file).

Deterministic and idempotent; no cell source and no output changes (an integral float is the same JSON
number). The test `tests/test_notebooks_normalized.py` fails when a lesson is not normalised.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "lessons"
# the kernel `make setup` installs (Makefile: ipykernel install --name python3 --display-name "Python 3 (minilib)")
KERNELSPEC = {"display_name": "Python 3 (minilib)", "language": "python", "name": "python3"}


def _js_numbers(value):
    """`value` as it comes back from JavaScript's JSON: an integral float (2.0) is the integer 2."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _js_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_numbers(v) for v in value]
    return value


def normalize(nb: dict) -> dict:
    """A copy of notebook `nb` (its JSON as a dict) in the form JupyterLab keeps it in."""
    nb = _js_numbers(copy.deepcopy(nb))
    nb.setdefault("metadata", {})["kernelspec"] = dict(KERNELSPEC)
    return nb


def dumps(nb: dict) -> str:
    """nbformat's own writer's layout (nbformat.writes, as nbconvert and Jupyter Server save a notebook)."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False, separators=(",", ": ")) + "\n"


def lessons() -> list[Path]:
    return sorted(LESSONS.glob("[0-9]*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a lesson is not normalised")
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: lessons/[0-9]*.ipynb)")
    args = parser.parse_args(argv)
    stale = []
    for path in args.paths or lessons():
        raw = path.read_text(encoding="utf-8")
        want = dumps(normalize(json.loads(raw)))
        if raw == want:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(want, encoding="utf-8")
    verb = "not normalised" if args.check else "normalised"
    for path in stale:
        print(f"{verb}: {path}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
