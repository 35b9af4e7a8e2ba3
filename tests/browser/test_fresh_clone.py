"""The lessons as first opened: a fresh clone, before Run All, in JupyterLab in Chromium at 1366×768.

A notebook that was never opened here is untrusted, and JupyterLab shows an untrusted notebook's
widget outputs as their text (`VBox(children=(HBox(…`) instead of the saved widgets. `make lab` and
`make classroom` trust the lessons first (`make trust`). These tests copy the lessons afresh, trust
the copy with that same target, open each lesson without running a cell, and check that every saved
widget is drawn from the state stored in the notebook: no output shown as text, every saved plot
decoded and not blank, every panel within the notebook area of the window. One copy is left
untrusted, to show the check sees the difference.
"""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_widgets_live import _GEOMETRY, _IMAGES, blank_reason

REPO = Path(__file__).resolve().parents[2]
LESSONS = Path(os.environ.get("WIDGET_LESSONS", REPO / "lessons"))
NAMES = sorted(nb.stem for nb in LESSONS.glob("[0-9]*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
DRAW_TIMEOUT_MS = 180_000   # a kernel starts on a busy machine, then the saved state (up to ~0.5 MB) is drawn

_PANEL = "window.jupyterapp.shell.currentWidget"
# every output of the notebook as the page shows it: its mime type, whether it is a drawn widget, and its text
# if it is shown as text; and how many outputs the model holds that carry a saved widget view
_OUTPUTS = f"""() => {{ const nb = {_PANEL};
    const saved = nb.content.widgets.flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])
        .filter(o => o.data && o.data['{WIDGET_VIEW}']).length;
    const shown = [...nb.content.node.querySelectorAll('.jp-OutputArea-output')].map(o => ({{
        drawn: !!o.querySelector('.jupyter-widgets'),
        text: o.querySelector('.jupyter-widgets') ? '' : o.innerText.slice(0, 60),
        imgs: [...o.querySelectorAll('img')].map(i => i.complete && i.naturalWidth > 0) }}));
    return {{saved, shown}}; }}"""


def _copy(lab, kind: str) -> Path:
    folder = lab["root"] / "fresh-clone" / kind
    folder.mkdir(parents=True)
    for name in NAMES:
        shutil.copy(LESSONS / f"{name}.ipynb", folder / f"{name}.ipynb")
    return folder


@pytest.fixture(scope="module")
def untrusted(lab):
    """A fresh copy of the lessons, as cloned. Used before `trusted` is made: trust is recorded by the
    notebook's content, so once a copy is trusted, every identical copy is."""
    return _copy(lab, "untrusted")


@pytest.fixture(scope="module")
def trusted(lab):
    """A fresh copy of the lessons, trusted by `make trust` as `make lab` and `make classroom` do."""
    folder = _copy(lab, "trusted")
    make = ["make", "--no-print-directory", "-s", "trust", f"TRUST_DIR={folder}", f"BIN={Path(sys.executable).parent}"]
    proc = subprocess.run(make, cwd=REPO, env=lab["env"], capture_output=True, text=True)
    assert proc.returncode == 0, f"`make trust` failed:\n{proc.stdout}\n{proc.stderr}"
    return folder


def open_unrun(browser_context, url: str, path: str):
    """Open the notebook at `path` (relative to the server's root) without running it; wait until each saved
    widget view is drawn, or shown as text; return (page, what the outputs show)."""
    page = browser_context.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{url}/lab/tree/{path}?reset")
    page.wait_for_function(f"() => {{ const nb = {_PANEL}; return nb && nb.content && nb.content.widgets.length > 0 "
                           f"&& nb.context && nb.context.isReady; }}", timeout=DRAW_TIMEOUT_MS)
    done = (f"""() => {{ const r = ({_OUTPUTS})(); const views = r.shown.filter(o => o.drawn || o.text.includes('children='));
        return r.saved > 0 && views.length >= r.saved && views.every(o => !o.drawn || o.imgs.every(Boolean)); }}""")
    try:
        page.wait_for_function(done, timeout=DRAW_TIMEOUT_MS, polling=500)
    except Exception:   # what is missing is reported by the test, not as a timeout
        print(f"\n{path}: not every saved widget was drawn in {DRAW_TIMEOUT_MS / 1000:.0f} s")
    time.sleep(1)
    return page, page.evaluate(_OUTPUTS)


def _close(page) -> None:
    try:
        page.evaluate(f"async () => {{ const nb = {_PANEL}; if (nb) await nb.sessionContext.shutdown(); }}")
    finally:
        page.close()


def test_an_untrusted_fresh_clone_shows_its_widgets_as_text(lab, browser_context, untrusted):
    """The problem `make trust` solves, seen by the same check: as cloned, the saved widgets are text.
    (First in this file: it must run before `trusted` signs the same content.)"""
    page, out = open_unrun(browser_context, lab["url"], f"fresh-clone/untrusted/{NAMES[0]}.ipynb")
    try:
        as_text = [o for o in out["shown"] if "children=" in o["text"]]
        assert out["saved"] > 0 and as_text and not any(o["drawn"] for o in out["shown"]), out
    finally:
        _close(page)


@pytest.mark.parametrize("name", NAMES)
def test_a_trusted_fresh_clone_draws_every_saved_widget_before_run_all(lab, browser_context, trusted, measured, name):
    page, out = open_unrun(browser_context, lab["url"], f"fresh-clone/trusted/{name}.ipynb")
    try:
        drawn = [o for o in out["shown"] if o["drawn"]]
        as_text = [o["text"] for o in out["shown"] if "children=" in o["text"]]
        problems, tallest = [], 0.0
        for root in page.locator(".jp-OutputArea-output:has(.jupyter-widgets)").element_handles():
            g = root.evaluate(_GEOMETRY)
            tallest = max(tallest, g["needed"])
            if g["needed"] > g["area"]:
                problems.append(f"a saved panel needs {g['needed']:.0f} px of a {g['area']:.0f}-px notebook area")
            for img in root.evaluate(_IMAGES):
                reason = blank_reason(base64.b64decode(img["png"]), img["height"]) if img["visible"] else None
                if reason:
                    problems.append(f"a saved plot is blank: {reason}")
        measured.append({"fresh_clone": True, "lesson": name, "views": out["saved"], "drawn": len(drawn),
                         "as_text": len(as_text), "tallest_px": tallest})
        print(f"\n{name} before Run All: {len(drawn)}/{out['saved']} saved widgets drawn, {len(as_text)} as text, "
              f"tallest panel {tallest:.0f} px")
        assert not as_text, f"{name}: saved widgets shown as text: {as_text}"
        assert len(drawn) == out["saved"], f"{name}: {len(drawn)} of {out['saved']} saved widgets drawn"
        assert not problems, f"{name}: {problems}"
    finally:
        _close(page)
