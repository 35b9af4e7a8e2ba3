"""JupyterLab in headless Chromium for the live widget tests (`make widget-test`).

The `lab` fixture starts JupyterLab from this Python's environment on a free
local port, on a temporary copy of lessons/ (so a run never rewrites the
committed notebooks; $WIDGET_LESSONS names another folder to copy), with
MINILIB_PROFILE=smoke, its own Jupyter data folder (the notebook-signing key
and trust database: nothing of the user's is read or written) and this
checkout first on the kernel's PYTHONPATH (results/ and checkpoints/ resolve
from the checkout: minilab.provenance.REPO_ROOT). `lesson(name)` opens a
lesson in Debian's chromium through Playwright (never Playwright's own browser
download), runs it top to bottom and hands back the page; the tests then drive
its widgets.

The window is a 1366×768 laptop's (VIEWPORT): the tests measure every panel
against the notebook area JupyterLab leaves in it (about 650 px high), and
the session ends with one line per measure (`pytest_terminal_summary`): the
tallest panel in px and the blank plots.

Skips cleanly when /usr/bin/chromium is missing (an external program); playwright is a dev
dependency (pyproject's [dev]): missing, the tests fail.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
# flags that work on a closed network: nothing phones home, no GPU, a fresh profile per run
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RUN_ALL_TIMEOUT_S = 900   # a lesson under smoke is <= 90 s on 2 free cores; a busy machine is slower
VIEWPORT = {"width": 1366, "height": 768}   # a laptop's screen (issue 39): the panels must fit its notebook area
LESSONS = Path(os.environ.get("WIDGET_LESSONS", REPO / "lessons"))   # the lessons the suite copies and runs
# what the tests measured, one dict per widget (test_widgets_live.Widget.report) or lesson (test_fresh_clone)
MEASURED: list[dict] = []


def pytest_terminal_summary(terminalreporter):
    widgets = [m for m in MEASURED if "widget" in m]
    fresh = [m for m in MEASURED if "fresh_clone" in m]
    if not widgets and not fresh:
        return
    write = terminalreporter.write_line
    write(f"live widget suite at {VIEWPORT['width']}×{VIEWPORT['height']}:")
    if widgets:
        tallest = max(widgets, key=lambda m: m["tallest_px"])
        write(f"  tallest panel {tallest['tallest_px']:.0f} px ({tallest['widget']}) against a notebook area of "
              f"{min(m['area_px'] for m in widgets):.0f} px; plots checked {sum(m['redraws'] for m in widgets)}, "
              f"blank {sum(len(m['blank']) for m in widgets)}, stretched {sum(m['stretched'] for m in widgets)}, "
              f"widgets with a problem {sum(bool(m['problems'] or m['missing']) for m in widgets)} of {len(widgets)}")
        for m in widgets:
            write(f"    {m['widget']:42s} tallest {m['tallest_px']:4.0f} px, {m['redraws']:3d} plots, "
                  f"{len(m['blank'])} blank")
    for m in fresh:
        write(f"  fresh clone before Run All: {m['lesson']:24s} {m['drawn']}/{m['views']} saved widgets drawn, "
              f"{m['as_text']} shown as text, tallest {m['tallest_px']:.0f} px")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


def start_lab(base: Path):
    """Start JupyterLab on a copy of the lessons in `base`; returns (process, url, log path)."""
    root = base / "lessons"
    root.mkdir()
    for nb in sorted(LESSONS.glob("[0-9]*.ipynb")):
        shutil.copy(nb, root / nb.name)
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    # no announcements (it would fetch news from the web); the app on `window` so the test can run commands
    (config / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    settings = base / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # every cell in the page (no windowing), so a widget far down the lesson can be found and driven
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    port = _free_port()
    env = {**os.environ, "MINILIB_PROFILE": "smoke", "OMP_WAIT_POLICY": "PASSIVE", "JUPYTER_CONFIG_DIR": str(config),
           "JUPYTER_DATA_DIR": str(base / "data"),  # its own signing key and trust database (test_fresh_clone)
           "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    lab_bin = Path(sys.executable).parent / "jupyter-lab"
    cmd = [str(lab_bin)] if lab_bin.exists() else [sys.executable, "-m", "jupyterlab"]
    cmd += ["--no-browser", "--allow-root", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            "--ServerApp.ip=127.0.0.1", "--ServerApp.token=", "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=", "--LabApp.check_for_updates_class="
            "jupyterlab.NeverCheckForUpdate"]
    with open(base / "lab.log", "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            _get(f"{url}/api/status")
            return proc, url, base / "lab.log", env
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"JupyterLab did not start; its log:\n{(base / 'lab.log').read_text()[-3000:]}")
            time.sleep(0.5)


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A running JupyterLab: {"url", "root", "log", "env"} (root: the temporary copy of the lessons; env: the
    server's environment, its Jupyter data folder included)."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    base = tmp_path_factory.mktemp("lab")
    proc, url, log, env = start_lab(base)
    yield {"url": url, "root": base / "lessons", "log": log, "env": env}
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def browser_context(lab, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS, viewport=VIEWPORT)
        yield context
        context.close()


@pytest.fixture(scope="session")
def measured():
    """The list the tests append their measures to (printed at the end by pytest_terminal_summary)."""
    return MEASURED


# the notebook panel, its cells and its kernel, as JupyterLab's own objects
_PANEL = "window.jupyterapp && window.jupyterapp.shell.currentWidget"


@pytest.fixture(scope="session")
def lesson(lab, browser_context):
    """lesson("01-static-word-vectors") -> a Playwright page with that lesson run top to bottom under smoke.
    One lesson is open at a time: opening the next shuts the previous one's kernel."""
    pages: dict[str, object] = {}

    def open_lesson(name: str):
        if name in pages:
            return pages[name]
        for other in list(pages):
            _close(pages.pop(other))
        page = browser_context.new_page()
        page.set_default_timeout(60_000)
        run_lesson(page, lab["url"], name)
        pages[name] = page
        return page

    yield open_lesson
    for page in pages.values():
        _close(page)


def run_lesson(page, url: str, name: str) -> None:
    """Open lesson `name` in `page`, wait for its kernel to connect, Run All, wait until every cell ran."""
    # ?reset: a fresh workspace, so the lessons opened before this one are not restored as hidden tabs (their
    # cells would match this lesson's locators, with outputs whose widgets live in no kernel: "model not found")
    page.goto(f"{url}/lab/tree/{name}.ipynb?reset")
    # wait for the kernel to connect (not for the toolbar's idle mark, which can lag or stick)
    page.wait_for_function(f"""() => {{ const nb = {_PANEL};
        return nb && nb.content && nb.content.widgets.length > 0 && nb.sessionContext.session
               && nb.sessionContext.session.kernel
               && nb.sessionContext.session.kernel.connectionStatus === 'connected'; }}""", timeout=180_000)
    page.evaluate(f"""async () => {{ const app = window.jupyterapp;
        await app.commands.execute('notebook:clear-all-cell-outputs');
        app.commands.execute('notebook:run-all-cells'); }}""")
    t0 = time.monotonic()
    page.wait_for_function(f"""() => {{ const nb = {_PANEL};
        const cells = nb.content.widgets.filter(c => c.model.type === 'code');
        const failed = cells.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));
        const busy = nb.content.node.querySelectorAll('.jp-InputPrompt').length === 0
            || [...nb.content.node.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'));
        return failed || (!busy && cells.every(c => c.model.executionCount !== null)); }}""",
                           timeout=RUN_ALL_TIMEOUT_S * 1000, polling=1000)
    errors = page.evaluate(f"""() => {{ const nb = {_PANEL};
        return nb.content.widgets.flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])
                 .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue); }}""")
    assert not errors, f"{name} failed under smoke: {errors}"
    print(f"\n{name}: ran top to bottom in {time.monotonic() - t0:.0f} s")


def _close(page) -> None:
    try:
        page.evaluate(f"async () => {{ const nb = {_PANEL}; if (nb) await nb.sessionContext.shutdown(); }}")
    finally:
        page.close()
