"""One result store: where every experiment's results live, how a stored one is found, keyed and rewritten.

Everything an experiment computes is stamped JSON under results/ (`RESULTS`, the repository's results folder; no
other module names a root). A single result is results/<name>-<profile>[-<variant>].json (`path`); the grid
runner's points keep their own layout in folders of the same root (`folder`: results/<family>/, grid.point_path).

A result is keyed by what determines it: a few of its own top-level fields (a checkpoint's sha256, a config,
the seeds; for a grid point the task's fingerprint, the settings and the checkpoint's sha256), so a stored file
names its own key and needs no other. Each experiment registers its result's name and key fields where it is
defined (`register`), so nothing keeps a list of them.

    from minilab.experiments import store
    store.load("elmo-probes", "laptop")                      # the stored result, or None
    store.load("elmo-probes", "laptop", key={"seeds": [0, 1, 2], ...})   # None unless the stored key matches
    store.save("elmo-probes", "laptop", result)              # stamped, atomic; the same numbers again: untouched

Reading never writes: `load` only opens the file. `save` writes atomically and only when the content changes
(provenance.write_if_changed: a re-run with the same numbers, timings and stamp aside, leaves a tracked file and
the stamp of the run that made it as they were) (docs/design.md §6).
"""
from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any, Callable, Iterator

from minilib import runtime
from minilab import provenance

RESULTS = provenance.REPO_ROOT / "results"       # the repository's results: the one root

KEYS: dict[str, tuple[str, ...]] = {}             # a single result's name -> the fields that key it


def register(name: str, *fields: str) -> str:
    """Declare single result `name` (results/<name>-<profile>[-<variant>].json) and the top-level fields of it
    that determine it (its key); returns `name`. Each experiment registers its own where it is defined."""
    KEYS[name] = fields
    return name


def import_experiments() -> None:
    """Import every module of minilab.experiments: each registers its result (register) or grid methods
    (grid.register) when imported, so what exists is found, never listed."""
    package = importlib.import_module("minilab.experiments")
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"minilab.experiments.{module.name}")


def registered() -> dict[str, tuple[str, ...]]:
    """Every single result's name and key fields."""
    import_experiments()
    return dict(KEYS)


def folder(name: str) -> Path:
    """results/<name>/: a folder of points (a grid family's, a recipe search's, an experiment's own)."""
    return RESULTS / name


def path(name: str, profile: str, variant: str | None = None, root: str | Path | None = None) -> Path:
    """results/<name>-<profile>[-<variant>].json (`root` replaces results/)."""
    return Path(root or RESULTS) / f"{name}-{profile}{f'-{variant}' if variant else ''}.json"


def entries(root: str | Path | None = None) -> Iterator[tuple[str, str, str | None, Path]]:
    """(name, profile, variant, path) of every single result stored under `root` (default results/) whose name
    is registered; files of other names are left out."""
    names = sorted(registered(), key=len, reverse=True)          # compute-axis before compute
    for file in sorted(Path(root or RESULTS).glob("*.json")):
        for name in names:
            rest = file.stem[len(name) + 1:] if file.stem.startswith(f"{name}-") else ""
            profile, _, variant = rest.partition("-")
            if profile in runtime.PROFILES:
                yield name, profile, variant or None, file
                break


def plain(obj: Any) -> Any:
    """`obj` as it reads back from JSON (tuples as lists, keys as strings): how a key compares with a file."""
    return json.loads(json.dumps(obj))


def key_of(name: str, result: dict) -> dict[str, Any]:
    """The key a result of registered `name` holds: its key fields and their values (None where absent)."""
    return {field: result.get(field) for field in KEYS[name]}


def matches(result: Any, key: dict[str, Any]) -> bool:
    """Whether `result` holds `key`: each of its fields, with the same value (an absent field reads as None)."""
    return isinstance(result, dict) and all(result.get(k) == v for k, v in plain(key).items())


def load(name: str, profile: str | None = None, key: dict[str, Any] | None = None, variant: str | None = None, *,
         root: str | Path | None = None, at: str | Path | None = None) -> dict | None:
    """The stored result `name` of `profile` (default: the current one), or None when there is none or, `key`
    given, when the stored result's key differs. `at`: the file itself (a result written elsewhere with --out,
    a grid point). Reads only."""
    file = Path(at) if at is not None else path(name, profile or runtime.profile(), variant, root)
    try:
        result = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return result if key is None or matches(result, key) else None


def save(name: str, profile: str, result: dict, key: dict[str, Any] | None = None, variant: str | None = None, *,
         root: str | Path | None = None, at: str | Path | None = None,
         content: Callable[[dict], Any] | None = None) -> dict:
    """Store `result` under its key and return what the file holds afterwards: written atomically, stamped
    (provenance.stamp, unless it carries its stamp already), and only when its content differs from the stored
    file's (`content`, by default all but provenance.VOLATILE: provenance.write_if_changed). `key` (default: the
    registered key fields as `result` holds them) is written into the result's own fields."""
    if key is None:
        if name not in KEYS:
            raise KeyError(f"result {name!r} is not registered (store.register) and no key was given")
        key = key_of(name, result)
    result = {**result, **plain(key)}
    result.setdefault("provenance", provenance.stamp())
    file = Path(at) if at is not None else path(name, profile, variant, root)
    return provenance.write_if_changed(file, result, content)
