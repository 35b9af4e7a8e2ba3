"""Stamps for everything minilib writes: results files and checkpoints.

A number in a lesson must be traceable to the code, data and machine that
produced it (docs/design.md §5–6), so every results JSON and checkpoint carries
`stamp(...)`: profile, device, commit, seed, versions and time.

The other direction too: a lesson records every results/ and checkpoints/ file it read, with its sha256, the
profile it ran at and the quantities it noted (`record_reads`, `note`, `show_reads`), so tools/check_results.py
can tell when its saved outputs were made from other data.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

# the core writes its files through minilib.files; named here too, for the lab's writers
from minilib.files import (CHECKOUT_FOLDERS, DATA_CACHE, OUTSIDE, REPO_ROOT, atomic_write_bytes,  # noqa: F401
                           portable_path, portable_text, sha256_file, shown_path, write_json)


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


def stamp(*, seed: int | None = None, **extra: Any) -> dict[str, Any]:
    """Where a result came from: profile, device (and the CPU, whose kernels set the rounding), commit, seed,
    versions, time, command."""
    import torch  # torch is the core's: imported with it, named here for its version and the GPU's name

    from minilib import runtime

    dev = runtime.device()
    out = {
        "profile": runtime.profile(),
        "device": str(dev) if dev.type != "cuda" else f"cuda ({torch.cuda.get_device_name(dev)})",
        "cpu": runtime.cpu_name(),
        "commit": git_commit(),
        "seed": seed,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": portable_text(" ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), shown_path),
    }
    out.update(extra)
    return out


IN_REPO_LAUNCHERS = ("__main__.py", "ipykernel_launcher.py")   # `python -m minilib ...`; a lesson's kernel


def command_in_repo(command: str, root: Path = REPO_ROOT) -> bool:
    """Whether a stamped command runs code in this repository: `python -m minilib ...` (stamped as __main__.py, or
    spelled out by the queue), a lesson's kernel, or a script of its tools/ or book/ folder (stamped by file name).
    `python -c ...` or a script kept elsewhere is not: the result cannot be made again from the repository."""
    words = command.split()
    if words[:3] == ["python", "-m", "minilib"]:
        return True
    first = words[0] if words else ""
    return first in IN_REPO_LAUNCHERS or (first.endswith(".py") and any(
        (root / folder / first).is_file() for folder in ("tools", "book")))


def restamped(row: dict, command: str) -> dict | None:
    """`row` (a cached result) stamped with `command`, an in-repository command whose cache key it matches, when its
    own stamped command is not in the repository (command_in_repo); None when it is. The numbers, the commit that
    made them and the old command stay (`restamped_from`), so the stamp says both who made it and what remakes it."""
    stamp_ = row.get("provenance") or {}
    if command_in_repo(stamp_.get("command", "")):
        return None
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return {**row, "provenance": {**stamp_, "command": command,
                                  "restamped_from": {"command": stamp_.get("command", ""), "time": now,
                                                     "commit": git_commit()}}}


VOLATILE = ("seconds", "provenance")             # what a re-run of the same computation changes: time taken, stamp


def write_if_changed(path: str | os.PathLike, result: dict, content=None) -> dict:
    """Write `result` to `path` unless the file already holds the same content; return what the file holds after.

    Content is `content(result)`, by default the result without its VOLATILE keys, compared as it reads back from
    JSON by same_content (floats to SAME_REL_TOL; tools/check_results.py compares noted values with it too). So
    reading a cached result, or computing the same numbers again (a fit whose last bits follow the machine's BLAS),
    never rewrites a tracked results file (its stamp keeps the run that made the numbers); new numbers are written,
    stamped anew (docs/design.md §6)."""
    content = content or (lambda r: {k: v for k, v in r.items() if k not in VOLATILE})
    path = Path(path)
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        previous = None
    if isinstance(previous, dict) and same_content(content(previous), content(json.loads(json.dumps(result)))):
        return previous
    write_json(path, result)
    return result


SAME_REL_TOL = 1e-9      # floats closer than this are one number computed in another order


def same_content(a: Any, b: Any) -> bool:
    """JSON values equal, floats to SAME_REL_TOL: the same numbers, whatever order a machine summed them in."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_content(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_content(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
        return numbers and math.isclose(a, b, rel_tol=SAME_REL_TOL, abs_tol=1e-12)
    return a == b


# ----------------------------------------------------------------------------- what a lesson read

# A lesson's saved outputs are only as fresh as the results/ and checkpoints/ files they were made from. While a
# lesson runs, an audit hook records each such file it opens for reading with its sha256 as it was then; the
# lesson's last cell (`show_reads`) saves the record in its output's metadata, and tools/check_results.py compares
# it with the files in the repository now (`make check-results`).
RECORD_KEY = "minilib/reads"                    # the output metadata key the record is saved under
READ_FOLDERS = ("results", "checkpoints")        # what a lesson's numbers are read from (docs/design.md §5–6)
_WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class ReadLog:
    """The files under `root`'s results/ and checkpoints/ opened for reading: {repo-relative path: sha256 at the
    first read}, the paths whose bytes differed at a later read, and the named quantities a lesson noted."""

    def __init__(self, root: Path = REPO_ROOT):
        self.root = Path(root).resolve()
        self.folders = tuple(str(self.root / f) + os.sep for f in READ_FOLDERS)
        self.digests: dict[str, str] = {}
        self.changed: set[str] = set()           # read twice with different bytes: the earlier outputs are older
        self.quantities: dict[str, Any] = {}
        self._seen: dict[str, tuple] = {}       # path -> (size, mtime_ns, inode) at its last hash
        self._lock = threading.Lock()

    def opened(self, path: Any, flags: Any) -> None:
        """Record `path` if it is a file under one of the folders opened without writing (an "open" audit event)."""
        if isinstance(path, int) or not isinstance(flags, int) or flags & _WRITING:
            return
        path = os.path.abspath(os.fsdecode(path))
        if not any(f in path for f in READ_FOLDERS):       # the cheap test first: every import opens files
            return
        path = os.path.realpath(path)
        if not path.startswith(self.folders) or not os.path.isfile(path):
            return
        st = os.stat(path)
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        rel = Path(path).relative_to(self.root).as_posix()
        with self._lock:
            if self._seen.get(rel) == key:
                return
            self._seen[rel] = key
            digest = sha256_file(path)
            if self.digests.setdefault(rel, digest) != digest:
                self.changed.add(rel)

    def record(self) -> dict[str, Any]:
        """What a saved lesson carries: profile, commit, time, reads, changed paths and quantities."""
        from minilib import runtime

        try:
            profile = runtime.profile()
        except runtime.ProfileError:            # a bad $MINILIB_PROFILE is recorded as it is, never an error here
            profile = os.environ.get("MINILIB_PROFILE")
        return {"profile": profile, "commit": git_commit(self.root),
                "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "reads": dict(sorted(self.digests.items())), "changed": sorted(self.changed),
                "quantities": dict(self.quantities)}


_log: ReadLog | None = None
_hooked = False
_inside = threading.local()                     # the hook's own reads (hashing) must not re-enter it


def _audit(event: str, args: tuple) -> None:
    if event != "open" or _log is None or getattr(_inside, "busy", False):
        return
    _inside.busy = True
    try:
        _log.opened(args[0], args[2])
    except Exception:                            # a failing hook would fail the lesson's own open(): never
        pass
    finally:
        _inside.busy = False


def record_reads(root: str | os.PathLike = REPO_ROOT) -> ReadLog:
    """Start a fresh record of the results/ and checkpoints/ files under `root` this process reads; returns it.

    The audit hook is installed once per process (Python cannot remove one); a new call replaces the record.
    Importing this module in an IPython kernel calls it, so a lesson records from its first cell."""
    global _log, _hooked
    _log = ReadLog(root)
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    return _log


def stop_recording() -> None:
    """Stop recording (the hook stays, doing nothing)."""
    global _log
    _log = None


def note(name: str, value: Any) -> Any:
    """Record a number the lesson prints under `name` (e.g. "gpt.N"), so tools/check_results.py can compare it with
    the same name in other lessons; returns `value`. A numpy or torch scalar is stored as its Python number."""
    number = value.item() if hasattr(value, "item") else value
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise TypeError(f"provenance.note({name!r}, ...): {value!r} is not a number")
    if _log is not None:
        _log.quantities[name] = number
    return value


def note_errors(rows) -> None:
    """Note each grid cell's mean test error as "error <task>@<n_labels> <method>" (rows of grid.summarize or
    league cells; a cell with no error is skipped), so the chapters that print one cell can be compared."""
    for r in rows:
        if r.get("error") is not None:
            note(f"error {r['task']}@{r['n_labels']} {r['method']}", r["error"])


def show_reads() -> None:
    """Display one line on what this lesson read and at which profile, with the full record (every file's sha256,
    the profile, the noted quantities) in the output's metadata, where the saved notebook keeps it."""
    from IPython.display import display

    log = _log or ReadLog()                     # not recording: an honest empty record, never an error
    record = log.record()
    count = {f: sum(p.startswith(f + "/") for p in record["reads"]) for f in READ_FOLDERS}
    noted = len(record["quantities"])
    line = (f"this lesson read {_count(count['results'], 'results file')} and {_count(count['checkpoints'], 'checkpoint file')} "
            f"at profile {record['profile']}" + (f"; {_count(noted, 'quantity', 'quantities')} noted" if noted else "")
            + ("" if _log else " (nothing was recorded: minilab.provenance was not imported in a notebook)"))
    if record["changed"]:
        line += f"; changed while it ran: {', '.join(record['changed'])}"
    display({"text/plain": line}, raw=True, metadata={RECORD_KEY: record})


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _in_ipython() -> bool:
    shell = sys.modules.get("IPython")
    return bool(shell and getattr(shell, "get_ipython", lambda: None)())


if _in_ipython():
    record_reads()


def saved_record(notebook: str | os.PathLike) -> dict | None:
    """The last record show_reads() saved in a notebook's outputs (profile, files read, noted quantities), or None
    when the notebook has none (the book's teacher's guide and tools/check_results.py read it)."""
    found = None
    for cell in json.loads(Path(notebook).read_text(encoding="utf-8")).get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            record = (out.get("metadata") or {}).get(RECORD_KEY)
            if isinstance(record, dict):
                found = record
    return found

