"""Stamps for everything minilib writes: results files and checkpoints.

A number in a lesson must be traceable to the code, data and machine that
produced it (docs/design.md §5–6), so every results JSON and checkpoint carries
`stamp(...)`: profile, device, commit, seed, versions and time.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


def git_commit(root: Path = REPO_ROOT) -> str:
    """The current commit (with '-dirty' if tracked files other than results/ have changes), or
    'unknown' outside git. results/ holds outputs: a run that rewrites a cached result (or writes its
    own) has not changed the code the next result comes from. A copy of a checkout without its .git
    (sent to a GPU machine, say) names its commit in $MINILIB_COMMIT, suffixed '-copy' since the copy's
    cleanliness cannot be checked there."""
    if not (root / ".git").exists() and os.environ.get("MINILIB_COMMIT"):
        return os.environ["MINILIB_COMMIT"].strip() + "-copy"
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)results"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def shown_path(path: str | os.PathLike) -> str:
    """A path as a result records it: relative to the repository when inside it (results stay valid on another
    machine or worktree), else as given."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def stamp(*, seed: int | None = None, **extra: Any) -> dict[str, Any]:
    """Where a result came from: profile, device, commit, seed, versions, time, command."""
    import torch  # here, not at the top: minilib.data's fetching imports this module and needs no torch

    from minilib import runtime

    dev = runtime.device()
    out = {
        "profile": runtime.profile(),
        "device": str(dev) if dev.type != "cuda" else f"cuda ({torch.cuda.get_device_name(dev)})",
        "commit": git_commit(),
        "seed": seed,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }
    out.update(extra)
    return out


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
