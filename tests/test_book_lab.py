"""`make lab` starts JupyterLab, root or not.

JupyterLab refuses to run as root without --allow-root ("Running as root is not recommended"),
and a container or a lab machine often runs everything as root. The Makefile adds the flag
when `id -u` is 0. This test starts the server exactly as `make lab` ends (`make lab-server`,
the same recipe), on a free local port without a browser, and waits for it to answer; then it
stops the process group it started.
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


def test_make_lab_passes_allow_root_exactly_when_root():
    if shutil.which("make") is None:
        pytest.fail("make is not installed; it is what the README's two commands run")
    shown = subprocess.run(_make("-n", "lab-server"), cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "jupyter lab" in shown, shown
    assert ("--allow-root" in shown) == (os.geteuid() == 0), shown


def test_make_lab_server_starts_and_answers(tmp_path, lab_env):
    port = _free_port()
    lab_args = " ".join([
        "--no-browser", f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
        "--ServerApp.token=", "--ServerApp.password=", "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"])
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(_make("lab-server", f"LAB_ARGS={lab_args}"), cwd=REPO, env=lab_env, stdout=out,
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
                    pytest.fail(f"`make lab-server` exited with {proc.returncode} before answering:\n"
                                f"{log.read_text()[-3000:]}")
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer in {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        assert "started" in status, status
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=10) as r:
            assert r.status == 200 and b"JupyterLab" in r.read()
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
