"""Opening a lesson in JupyterLab does not mark it modified, and saving it unchanged writes the same bytes.

Each lesson (the `lab` fixture's copy) is opened in Chromium without running a cell; once its kernel has
connected (JupyterLab rewrites `metadata.kernelspec` to the running kernel's then, and that marks a lesson
whose file names another kernel modified at once) the notebook must not be dirty, and a save must leave the
file byte for byte as it was (a widget state's integral float, `2.0`, comes back as `2` through JavaScript).
tools/normalize_notebooks.py stores the lessons so; tests/test_notebooks_normalized.py checks that without
a browser.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LESSONS = Path(os.environ.get("WIDGET_LESSONS", REPO / "lessons"))
NAMES = sorted(nb.stem for nb in LESSONS.glob("[0-9]*.ipynb"))
_PANEL = "window.jupyterapp && window.jupyterapp.shell.currentWidget"
SETTLE_S = 5     # after the kernel connects: its kernel_info (language_info, the spec) arrives and is applied


@pytest.mark.parametrize("name", NAMES)
def test_a_lesson_opens_unmodified_and_saves_the_same_bytes(lab, browser_context, name):
    path = lab["root"] / f"{name}.ipynb"
    before = path.read_bytes()
    page = browser_context.new_page()
    page.set_default_timeout(180_000)
    try:
        page.goto(f"{lab['url']}/lab/tree/{name}.ipynb?reset")
        page.wait_for_function(f"""() => {{ const nb = {_PANEL};
            return nb && nb.context && nb.context.isReady && nb.content.widgets.length > 0; }}""")
        assert page.evaluate(f"() => {_PANEL}.context.model.dirty") is False, f"{name} opens modified"
        page.wait_for_function(f"""() => {{ const nb = {_PANEL};
            return nb.sessionContext.session && nb.sessionContext.session.kernel
                && nb.sessionContext.session.kernel.connectionStatus === 'connected'; }}""")
        time.sleep(SETTLE_S)
        assert page.evaluate(f"() => {_PANEL}.context.model.dirty") is False, \
            f"{name} is marked modified once its kernel starts: run python tools/normalize_notebooks.py"
        page.evaluate(f"async () => {{ const nb = {_PANEL}; await nb.context.save(); }}")
        assert path.read_bytes() == before, f"{name}: saved unchanged, JupyterLab writes other bytes"
    finally:
        try:
            page.evaluate(f"async () => {{ const nb = {_PANEL}; if (nb) await nb.sessionContext.shutdown(); }}")
        finally:
            page.close()
