"""Files the core writes: atomically (a crash leaves the old file or the new one, never half), as JSON, and
known by their sha256; the repository root that checkpoints/ and .cache/ hang from; and how a JSON names a file
(`shown_path`: never by a machine's absolute path).

The lab (minilab.provenance) stamps and records what it writes on top of these; the core needs only them.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` so a crash leaves either the old file or the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)            # mkstemp makes files private; a data cache may be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Atomically write pretty JSON."""
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode())


stamper = None      # set by files.stamp_with; runtime.stamp calls it


def stamp_with(fn) -> None:
    """Make `fn(seed=..., **extra)` the stamp runtime.stamp writes beside the core's checkpoints. `import minilab`
    installs the lab's minilab.provenance.stamp (commit and command line too); the core never imports the lab."""
    global stamper
    stamper = fn


def sha256_file(path: str | os.PathLike) -> str:
    """The sha256 of a file's bytes, in hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# How a result names a file (docs/design.md §6): never by a machine's absolute path, so a result reads the same in
# every checkout and on every machine, and names no one's home or temporary folder.
DATA_CACHE = "$MINILIB_DATA"                 # the data cache ($MINILIB_DATA, else ~/.cache/minilib), as results name it
OUTSIDE = "<outside>"                         # any other folder: only the file's own name is kept
CHECKOUT_FOLDERS = ("checkpoints", ".cache", "results")   # a checkout's folders that results point into


def _data_cache() -> Path:
    # data/sources.cache_dir, repeated here: files (layer 0) must not import minilib.data (layer 1)
    return Path(os.environ.get("MINILIB_DATA") or Path.home() / ".cache" / "minilib").expanduser()


def shown_path(path: str | os.PathLike) -> str:
    """A path as a result or checkpoint JSON records it, naming no machine (docs/design.md §6):

    - inside this checkout: relative to it, "checkpoints/gpt-laptop.pt", ".cache/flywheel/x.pt";
    - inside the data cache ($MINILIB_DATA, else ~/.cache/minilib): "$MINILIB_DATA/<path inside it>";
    - elsewhere, by its text (portable_path): through another checkout's checkpoints/, .cache/ or results/ folder
      (a worktree: /work/run-x/checkpoints/x.pt) from that folder on, "checkpoints/x.pt", as if it were this
      checkout; anything else (a user's own checkpoint in /tmp, say) "<outside>/<file name>", the sha256 a
      result keeps beside it saying which file it was.

    tools/portable_paths.py rewrites files written before this rule by the same text rule."""
    path = Path(os.path.expanduser(os.fspath(path)))
    if not path.is_absolute():
        path = Path.cwd() / path
    path = Path(os.path.normpath(path))
    for root, shown in ((REPO_ROOT, None), (_data_cache(), DATA_CACHE)):
        for candidate in (path, path.resolve()):
            try:
                rel = candidate.relative_to(root).as_posix()
            except ValueError:
                continue
            return (shown if rel == "." else f"{shown}/{rel}") if shown else rel
    return portable_path(path.as_posix())


def portable_path(text: str) -> str:
    """An absolute path's text without its machine part, judged by the text alone (the machine that wrote it may
    be gone): the data cache's ".../.cache/minilib/X" -> "$MINILIB_DATA/X"; a checkout's ".../checkpoints/X",
    ".../.cache/X", ".../results/X" -> "checkpoints/X", ...; anything else "/a/b/name" -> "<outside>/name"."""
    parts = [p for p in text.split("/") if p]
    for i in range(len(parts) - 1):
        if parts[i] == ".cache" and parts[i + 1] == "minilib":
            return "/".join([DATA_CACHE, *parts[i + 2:]])
    for i, part in enumerate(parts):
        if part in CHECKOUT_FOLDERS and i > 0:
            return "/".join(parts[i:])
    return f"{OUTSIDE}/{parts[-1]}" if parts else text


# an absolute path inside a longer string: at its start, or after a space or "=" ("--out=/tmp/x", "-f /tmp/k.json")
_EMBEDDED_PATH = re.compile(r"(?<![^\s=])/[^\s/]+(?:/\S*)?")


def portable_text(text: str, shown=portable_path) -> str:
    """`text` (a command line, say) with each absolute path in it replaced by `shown(path)`."""
    return _EMBEDDED_PATH.sub(lambda m: shown(m.group(0)), text)
