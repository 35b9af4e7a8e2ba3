"""`make lab` and `make classroom` start JupyterLab, root or not.

JupyterLab refuses to run as root without --allow-root ("Running as root is not recommended"),
and a container or a lab machine often runs everything as root. The Makefile adds the flag
when `id -u` is 0. These tests start the server exactly as `make lab` and `make classroom` end
(`make lab-server`, `make classroom-server`: the same recipes), on a free local port without a
browser, and wait for it to answer; then they stop the process group they started. The
classroom server must also carry MINILIB_CLASSROOM=1 into its environment (which every kernel
it starts inherits; minilib/runtime.py reads it).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 180   # JupyterLab starts in ~5-15 s; a busy 2-core machine is slower


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _make(*args: str) -> list[str]:
    # this Python's environment stands in for .venv/ (the same one `make setup` makes)
    return ["make", "--no-print-directory", "-s", *args, f"BIN={Path(sys.executable).parent}"]


@pytest.fixture
def lab_env(tmp_path):
    # a private Jupyter config, data and runtime folder: the test reads and writes nothing of the user's
    return {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "run"),
            "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces")}


SERVERS = ["lab-server", "classroom-server"]   # what `make lab` and `make classroom` end with


def _jupyter_environments(pgid: int) -> list[dict[str, str]]:
    """The environment of every live `jupyter` process in process group `pgid` (Linux /proc): the
    server, not the make that started it."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()   # after "pid (comm)": state, ppid, pgrp, ...
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
            # the server: `jupyter lab` (argv[0]), or a Python running a jupyter script (argv[1])
            if int(fields[2]) != pgid or not any(Path(a.decode()).name.startswith("jupyter") for a in argv[:2]):
                continue
            raw = (stat.parent / "environ").read_bytes()
        except (OSError, IndexError, ValueError):
            continue   # the process ended meanwhile, or is not ours to read
        found.append(dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item))
    return found


@pytest.mark.parametrize("target", SERVERS)
def test_make_lab_passes_allow_root_exactly_when_root(target):
    if shutil.which("make") is None:
        pytest.fail("make is not installed; it is what the README's two commands run")
    shown = subprocess.run(_make("-n", target), cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "jupyter lab" in shown, shown
    assert ("--allow-root" in shown) == (os.geteuid() == 0), shown
    assert ("MINILIB_CLASSROOM=1" in shown) == (target == "classroom-server"), shown


@pytest.mark.parametrize("target", SERVERS)
def test_make_lab_server_starts_and_answers(tmp_path, lab_env, target):
    lab_env = {k: v for k, v in lab_env.items() if k != "MINILIB_CLASSROOM"}   # only the Makefile sets it
    port = _free_port()
    lab_args = " ".join([
        "--no-browser", f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
        "--ServerApp.token=", "--ServerApp.password=", "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"])
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(_make(target, f"LAB_ARGS={lab_args}"), cwd=REPO, env=lab_env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=5) as r:
                    status = json.loads(r.read())
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"`make {target}` exited with {proc.returncode} before answering:\n"
                                f"{log.read_text()[-3000:]}")
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer in {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        assert "started" in status, status
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=10) as r:
            assert r.status == 200 and b"JupyterLab" in r.read()
        if Path("/proc/self/environ").exists():
            servers = _jupyter_environments(proc.pid)
            assert servers, "found no jupyter process in the server's process group"
            classroom = {env.get("MINILIB_CLASSROOM") for env in servers}
            assert classroom == ({"1"} if target == "classroom-server" else {None}), classroom
    finally:
        # the group holds make and the jupyter server it started: nothing else
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        except ProcessLookupError:
            pass
