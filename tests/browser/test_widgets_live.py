"""Every widget of every lesson, driven in JupyterLab in Chromium as a person would drive it.

Each lesson is run top to bottom under smoke (conftest.py); then each widget is
worked: sliders by keyboard, text typed and entered, dropdowns picked, check
boxes ticked, buttons clicked and double-clicked, each interaction at least
REPEAT times. After every interaction the test waits for the widget's plot to
change, reads the PNG the page shows (the bytes behind each <img>, data: or
blob: URL alike) and fails if it is blank: a tiny PNG, near-uniform pixels, or
drawn as a strip a few pixels high. One test per widget, named after it: a new
lesson's widget gets its own test here.

Live training: "train this point" trains once for real (smoke sizes: seconds
to a minute or two), then is clicked again REPEAT-1 times on the cached point
(each click still redraws), then double-clicked, which must run the handler once;
the newest result must then be in view in the panel's text area.

The window is a 1366×768 laptop's (conftest.VIEWPORT). After every interaction
each panel is measured: its full height (what it would need without scrolling
inside) must fit the notebook area JupyterLab leaves in that window, and every
plot must be shown at most at its own size (a plot stretched to the panel's
width is blurred and too tall). A bad input must hide the stale plot and wrap
its ⚠ line inside the panel; a seed typed out of range must be clamped with a
message; token labels must be words (no BPE "Ġ"). The session's last lines give
the tallest panel in px and the number of blank plots (conftest.py).
"""
from __future__ import annotations

import base64
import io
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

REPEAT = 10
# `make screenshots` also keeps a picture of chapter 04's widget after its live point (beside the book's pages)
SCREENSHOTS = Path(os.environ.get("BOOK_SCREENSHOTS", Path(__file__).resolve().parents[2] / "book" / "_build" / "screenshots"))
REDRAW_TIMEOUT_MS = 90_000
TRAIN_TIMEOUT_MS = 600_000   # the first live point of chapter 03 computes RT features once (minutes)
SETTLE_S = 0.8               # a redraw is finished when no plot has changed for this long
MEASURED: list = []          # conftest's list of measures (the `measured` fixture), printed at the session's end


@pytest.fixture(autouse=True)
def _measures_to_conftest(measured):
    global MEASURED
    MEASURED = measured


# -- reading what the page shows --------------------------------------------------------------------
def blank_reason(png: bytes, rendered_height: float) -> str | None:
    """Why this plot counts as blank, or None if it is a real plot."""
    from PIL import Image

    if len(png) < 8_000:
        return f"tiny PNG ({len(png):,} bytes)"
    img = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.float64)
    ink = (img < 200).mean()
    if img.std() < 10 or ink < 0.01:
        return f"near-uniform pixels (std {img.std():.1f}, ink {ink:.3f})"
    if rendered_height < 60:
        return f"drawn as a {rendered_height:.0f}-px strip"
    return None


_MARK = """(root) => { root.querySelectorAll('img').forEach(i => { i.dataset.before = i.src; });
                        root.dataset.textBefore = root.innerText; }"""
# each run of a button's handler disables the button once (counted from the attribute's changes)
_COUNT_RUNS = """(b) => { if (window.__observer) window.__observer.disconnect(); window.__runs = 0;
    window.__observer = new MutationObserver(ms => ms.forEach(m => {
        if (m.oldValue === null && b.hasAttribute('disabled')) window.__runs++; }));
    window.__observer.observe(b, {attributes: true, attributeFilter: ['disabled'], attributeOldValue: true}); }"""
_ANSWERED = """([root, b]) => {
    const plot = [...root.querySelectorAll('img')].some(i => i.dataset.before !== i.src && i.complete);
    if (b) return !b.disabled && (window.__runs > 0 || plot);
    return plot || root.dataset.textBefore !== root.innerText; }"""
_IMAGES = """async (root) => Promise.all([...root.querySelectorAll('img')].map(async i => {
    const bytes = new Uint8Array(await (await fetch(i.src)).arrayBuffer());
    let s = ''; for (let k = 0; k < bytes.length; k += 8192) s += String.fromCharCode(...bytes.subarray(k, k + 8192));
    const r = i.getBoundingClientRect();
    return {png: btoa(s), height: r.height, width: r.width, natural: [i.naturalWidth, i.naturalHeight],
            visible: i.getClientRects().length > 0, src: i.src.slice(0, 40)}; }))"""
# the panel (the output's outermost VBox): the height it needs (scrollHeight: without scrolling inside), the
# height it has, and the notebook area of the window (what a 1366×768 laptop shows of the lesson)
_GEOMETRY = """(root) => { const box = root.querySelector('.widget-vbox');
    const area = window.jupyterapp.shell.currentWidget.content.node.getBoundingClientRect().height;
    if (!box) return {needed: 0, shown: 0, area};
    return {needed: Math.max(box.scrollHeight, box.getBoundingClientRect().height),
            shown: box.getBoundingClientRect().height, area}; }"""
# the panel's text area (its first HTML widget): is the first line holding `needle` inside its visible part?
_IN_VIEW = """(root, needle) => { const el = root.querySelector('.widget-vbox .widget-html');
    if (!el) return 'no text area';
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = node.data.indexOf(needle);
        if (at < 0) continue;
        const range = document.createRange(); range.setStart(node, at); range.setEnd(node, at + needle.length);
        const a = range.getBoundingClientRect(), b = el.getBoundingClientRect();
        return a.top >= b.top - 1 && a.bottom <= b.bottom + 1 ? 'in view'
            : `scrolled out of view (${Math.round(a.top - b.top)} px below the top of a ${Math.round(b.height)}-px box)`;
    }
    return 'not shown'; }"""
# after a bad input: the ⚠ line, whether a plot is still shown, and whether any text runs past the panel's edge
_AFTER_ERROR = """(root) => { const box = root.querySelector('.widget-vbox');
    const text = box.querySelector('.widget-html');
    return {warned: box.innerText.includes('⚠'),
            plots_shown: [...box.querySelectorAll('img')].filter(i => i.getClientRects().length > 0).length,
            overflow: Math.max(text.scrollWidth - text.clientWidth, box.scrollWidth - box.clientWidth)}; }"""
_KERNEL_STATUS = """() => { const nb = window.jupyterapp.shell.currentWidget;
    return nb.sessionContext.session.kernel.status; }"""
_SIGNATURE = "(root) => [...root.querySelectorAll('img')].map(i => i.src).join('|')"


@dataclass
class Widget:
    """One widget's output area in the page, and the tally of its redraws."""
    page: object
    name: str
    root: object          # the cell's output area (a Playwright locator)
    redraws: int = 0
    blank: list = field(default_factory=list)
    missing: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # anything else a person would see go wrong
    t0: float = field(default_factory=time.monotonic)
    tallest: float = 0.0  # the most height the panel needed (px), over every interaction
    area: float = 0.0     # the notebook area's height in the 1366×768 window (px)
    stretched: int = 0    # plots shown larger than their PNG

    def text(self) -> str:
        return self.root.inner_text()

    def act(self, what: str, do, timeout_ms: int = REDRAW_TIMEOUT_MS, button: str | None = None,
            double: bool = False) -> int:
        """Do one interaction, wait until the panel has answered, and check every plot it shows.

        Answered: a plot or the text changed; for a `button`, its handler ran to the end (it disables
        the button while it runs) or a plot changed; `double`: a double-click, so wait to see whether a
        second run follows. Returns how many times the button's handler ran."""
        if os.environ.get("BROWSER_VERBOSE"):
            print(f"  {self.name}: {what} ({time.monotonic() - self.t0:.0f} s)", flush=True)
        handle = self.root.element_handle()
        btn = self.root.locator("button", has_text=button).element_handle() if button else None
        handle.evaluate(_MARK)
        if btn:
            btn.evaluate(_COUNT_RUNS)
        warnings_before = self.text().count("⚠")
        do()
        try:
            self.page.wait_for_function(_ANSWERED, arg=[handle, btn], timeout=timeout_ms, polling=100)
        except Exception:
            self.missing.append(what)
            return 0
        self._settle(handle, timeout_ms / 1000)
        if btn and double:  # a second run (the other half of the double-click) would start now
            time.sleep(2)
            self._settle(handle, timeout_ms / 1000)
        if self.text().count("⚠") > warnings_before:
            self.problems.append(f"{what} gave an error line: {self.text()[-300:]}")
        shown = [img for img in handle.evaluate(_IMAGES) if img["visible"]]
        if not shown:
            self.missing.append(what)
        for img in shown:
            self.redraws += 1
            reason = blank_reason(base64.b64decode(img["png"]), img["height"])
            if reason:
                self.blank.append(f"{what}: {reason}")
            scale = img["width"] / max(img["natural"][0], 1)
            if scale > 1.02:
                self.stretched += 1
                self.problems.append(f"{what}: a {img['natural'][0]}×{img['natural'][1]} plot shown {scale:.2f}× "
                                     f"its size (stretched, blurred)")
        self.measure(what)
        return self.page.evaluate("() => window.__runs || 0") if btn else 0

    def measure(self, what: str = "as first shown") -> None:
        """The panel's height against the notebook area of the 1366×768 window."""
        g = self.root.element_handle().evaluate(_GEOMETRY)
        self.area = g["area"]
        if g["needed"] > self.tallest:
            self.tallest = g["needed"]
            if g["needed"] > g["area"]:
                screen = self.page.viewport_size
                self.problems.append(f"{what}: the panel needs {g['needed']:.0f} px, taller than the "
                                     f"{g['area']:.0f}-px notebook area of a {screen['width']}×{screen['height']} screen")
            elif g["needed"] > g["shown"] + 1:
                self.problems.append(f"{what}: the panel needs {g['needed']:.0f} px and scrolls inside its "
                                     f"{g['shown']:.0f}")

    def in_view(self, needle: str, what: str) -> None:
        where = self.root.element_handle().evaluate(_IN_VIEW, needle)
        self.check(where == "in view", f"{what}: the line with {needle!r} is {where}")

    def _settle(self, handle, timeout_s: float = REDRAW_TIMEOUT_MS / 1000) -> None:
        """Wait until the kernel is idle and no plot has changed for SETTLE_S (a queued second click
        or a pending redraw makes the kernel busy again)."""
        state = lambda: handle.evaluate(_SIGNATURE) + "|" + self.page.evaluate(_KERNEL_STATUS)
        last, since, give_up = state(), time.monotonic(), time.monotonic() + timeout_s
        while time.monotonic() < give_up:
            time.sleep(0.1)
            now = state()
            if now != last or not now.endswith("|idle"):
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= SETTLE_S:
                return

    def report(self) -> None:
        line = (f"{self.name}: {self.redraws} redraws checked, {len(self.blank)} blank, "
                f"{len(self.missing)} without a plot, {len(self.problems)} other problems, "
                f"tallest {self.tallest:.0f} px of a {self.area:.0f}-px notebook area, "
                f"{time.monotonic() - self.t0:.0f} s")
        print("\n" + line)
        MEASURED.append({"widget": self.name, "tallest_px": self.tallest, "area_px": self.area,
                         "redraws": self.redraws, "blank": self.blank, "missing": self.missing,
                         "problems": self.problems, "stretched": self.stretched})
        if os.environ.get("BROWSER_REPORT"):
            with open(os.environ["BROWSER_REPORT"], "a") as f:
                f.write(json.dumps({"widget": self.name, "redraws": self.redraws, "blank": self.blank,
                                    "missing": self.missing, "problems": self.problems, "tallest_px": self.tallest,
                                    "area_px": self.area, "stretched": self.stretched,
                                    "seconds": round(time.monotonic() - self.t0, 1)}) + "\n")
        assert not self.blank and not self.missing and not self.problems, (
            f"{line}\nblank: {self.blank}\nwithout a plot: {self.missing}\nproblems: {self.problems}")

    def check(self, ok: bool, problem: str) -> None:
        if not ok:
            self.problems.append(problem)


def widget(page, name: str, call: str) -> Widget:
    """The output area of the code cell that calls `call` (e.g. "widgets.corpus_explorer(") in the notebook
    now shown (another open notebook's cells never match)."""
    panel = page.locator("#" + page.evaluate("() => window.jupyterapp.shell.currentWidget.id"))
    cell = panel.locator(".jp-CodeCell").filter(has=page.locator(".jp-InputArea", has_text=call))
    root = cell.locator(".jp-Cell-outputWrapper")
    root.locator(".widget-vbox, .jupyter-widgets").first.wait_for()
    root.scroll_into_view_if_needed()
    w = Widget(page, name, root)
    w.measure()
    return w


# -- ways a person drives a widget --------------------------------------------------------------------
def pick(w: Widget, nth_select: int = 0):
    """Choose the next option of a dropdown."""
    select = w.root.locator("select").nth(nth_select)
    options = select.locator("option").all_inner_texts()
    current = select.evaluate("s => s.selectedIndex")
    return lambda: select.select_option(index=(current + 1) % len(options))


def choose_each_option(w: Widget, nth_select: int = 0, times: int = REPEAT) -> None:
    for i in range(times):
        w.act(f"dropdown #{i + 1}", pick(w, nth_select))


def type_into(w: Widget, locator, value: str):
    def do():
        locator.fill(value)
        locator.press("Enter")
    return do


def slide(w: Widget, nth: int, key: str):
    """Press an arrow key on a slider's handle, as a keyboard user would."""
    def do():
        handle = w.root.locator(".noUi-handle").nth(nth)
        handle.focus()
        handle.press(key)
    return do


def slide_back_and_forth(w: Widget, nth: int, times: int = REPEAT) -> None:
    for i in range(times):
        key = "ArrowRight" if (i // 3) % 2 == 0 else "ArrowLeft"  # 3 right, 3 left, ...: stays in range
        w.act(f"slider {nth} {key} #{i + 1}", slide(w, nth, key))


def button(w: Widget, label: str):
    return w.root.locator("button", has_text=label)


def train_and_repeat(w: Widget, label: str = "train this point") -> None:
    """One real live point, REPEAT-1 more clicks (the cached point, redrawn), then a double-click
    that must run the handler once."""
    w.act("train this point (live)", lambda: button(w, label).click(), TRAIN_TIMEOUT_MS, label)
    w.check("trained here" in w.text(), "the live point is not labelled apart from the grid")
    for i in range(REPEAT - 1):
        time.sleep(0.6)  # a person's next click, not the second half of a double-click
        w.act(f"train this point #{i + 2}", lambda: button(w, label).click(), TRAIN_TIMEOUT_MS, label)
    time.sleep(0.6)
    runs = w.act("double-click on train", lambda: button(w, label).dblclick(), TRAIN_TIMEOUT_MS, label, double=True)
    w.check(runs == 1, f"a double-click ran 'train this point' {runs} times")
    w.in_view("trained here", "after the live points")


def seed_out_of_range(w: Widget, value: int = 150) -> None:
    """Type a seed past the box's range: the box must clamp it and the panel say so."""
    box = w.root.locator(".widget-text", has_text="seed").locator("input")

    def do():
        type_into(w, box, str(value))()
        box.evaluate("b => b.blur()")   # a number box sends its value on change: Enter or leaving it
    w.act(f"seed {value}", do)
    w.check(box.input_value() == "99", f"seed {value} became {box.input_value()}, not 99")
    w.check(f"seed {value} is outside 0–99" in w.text(), f"seed {value} was clamped without a word")


def bad_input(w: Widget, box, value: str) -> None:
    """Type a bad input: the ⚠ line replaces the answer, the stale plot is hidden, nothing runs past the edge."""
    handle = w.root.element_handle()
    type_into(w, box, value)()
    try:
        w.page.wait_for_function("(root) => root.innerText.includes('⚠')", arg=handle, timeout=REDRAW_TIMEOUT_MS)
    except Exception:
        w.problems.append(f"a bad input ({len(value):,} characters) gave no ⚠ line")
        return
    w._settle(handle)
    after = handle.evaluate(_AFTER_ERROR)
    w.check(after["plots_shown"] == 0, f"the stale plot stays under the ⚠ line ({after['plots_shown']} shown)")
    w.check(after["overflow"] <= 1, f"the ⚠ line runs {after['overflow']} px past the panel's edge")
    w.measure(f"bad input of {len(value):,} characters")


# -- one test per widget ----------------------------------------------------------------------------
def test_corpus_explorer(lesson):
    w = widget(lesson("00-the-map"), "corpus_explorer", "widgets.corpus_explorer(")
    choose_each_option(w)
    for i in range(REPEAT):
        time.sleep(0.6)
        w.act(f"another passage #{i + 1}", lambda: button(w, "another passage").click(), button="another passage")
    time.sleep(0.6)
    runs = w.act("double-click on another passage", lambda: button(w, "another passage").dblclick(),
                 button="another passage", double=True)
    w.check(runs == 1, f"a double-click ran 'another passage' {runs} times")
    w.report()


NEIGHBOUR_WORDS = ["city", "war", "money", "house", "music", "water", "king", "government", "school", "time"]
ANALOGY_C = ["boy", "girl", "father", "son", "brother", "queen", "city", "house", "war", "mother"]  # not "woman": the default


def test_neighbours_explorer(lesson):
    w = widget(lesson("01-static-word-vectors"), "neighbours_explorer", "widgets.neighbours_explorer(")
    box = w.root.locator("input[type=text]").first
    for i, word in enumerate(NEIGHBOUR_WORDS[:REPEAT]):
        w.act(f"type {word!r}", type_into(w, box, word))
    bad_input(w, box, "x" * 3000)                       # a pasted wall of text
    w.act("a word after the bad input", type_into(w, box, "city"))
    choose_each_option(w)
    w.report()


def test_analogy_explorer(lesson):
    w = widget(lesson("01-static-word-vectors"), "analogy_explorer", "widgets.analogy_explorer(")
    c_box = w.root.locator("input[type=text]").nth(2)
    for word in ANALOGY_C[:REPEAT]:
        w.act(f"c = {word!r}", type_into(w, c_box, word))
    choose_each_option(w)
    w.report()


@pytest.mark.parametrize("name", ["02-language-models", "06-gpt"])
def test_generation_explorer(lesson, name):
    w = widget(lesson(name), f"generation_explorer ({name[:2]})", "widgets.generation_explorer(")
    slide_back_and_forth(w, 0)   # temperature
    slide_back_and_forth(w, 1)   # top-k
    slide_back_and_forth(w, 2)   # length
    prompt = w.root.locator("input[type=text]").first
    for i, text in enumerate(["the senate voted", "in the morning", "the war", "people are", "it was a",
                              "the new law", "we will", "the city of", "money is", "the first time"][:REPEAT]):
        w.act(f"prompt {text!r}", type_into(w, prompt, text))
    if w.root.locator("select").first.locator("option").count() > 1:   # lesson 06 shows one model: nothing to pick
        choose_each_option(w)
    for i in range(REPEAT):
        time.sleep(0.6)
        w.act(f"sample again #{i + 1}", lambda: button(w, "sample again").click(), button="sample again")
    time.sleep(0.6)
    runs = w.act("double-click on sample again", lambda: button(w, "sample again").dblclick(), button="sample again",
                 double=True)
    w.check(runs == 1, f"a double-click ran 'sample again' {runs} times")
    cut = w.root.evaluate("""r => [...r.querySelectorAll('.widget-label')]
        .filter(l => l.scrollWidth > l.clientWidth + 1).map(l => l.textContent)""")  # drawn with an ellipsis
    w.check(not cut, f"labels cut: {cut}")
    w.report()


CONTEXT_SENTENCES = [
    "sport | The children went outside to play football after school.",
    "sport | We will play the final match on Sunday.",
    "theatre | The actors rehearsed the play for weeks.",
    "theatre | Shakespeare wrote the play in 1599.",
    "sport | They play tennis every weekend.",
    "theatre | The school play was a great success.",
]


ATTENTION_CELL = "panel = widgets.Panel([pick"      # lesson 05 builds its attention-map widget in the lesson


def test_attention_explorer(lesson):
    w = widget(lesson("05-transformer"), "attention_explorer", ATTENTION_CELL)
    choose_each_option(w)                        # the sentence
    for nth, what in ((0, "layer"), (1, "head")):  # smoke's model may have 2 of each: right, left, right, ...
        for i in range(REPEAT):
            key = "ArrowRight" if i % 2 == 0 else "ArrowLeft"
            w.act(f"{what} slider {key} #{i + 1}", slide(w, nth, key))
    w.check("Ġ" not in w.text(), f"token labels show BPE's 'Ġ': {w.text()[:200]}")
    w.report()


def test_contextual_explorer(lesson):
    w = widget(lesson("03-elmo"), "contextual_explorer", "widgets.contextual_explorer(")
    area = w.root.locator("textarea").first
    for i in range(REPEAT):
        sentences = CONTEXT_SENTENCES[:5 + i % 2]  # 5, 6, 5, ... sentences (the lesson shows 4): each edit a change

        def edit(sentences=sentences):
            area.fill("\n".join(sentences))
            area.evaluate("a => a.blur()")
        w.act(f"edit sentences #{i + 1} ({len(sentences)} lines)", edit)
    w.report()


def test_downstream_explorer(lesson):
    w = widget(lesson("03-elmo"), "downstream_explorer", "widgets.downstream_explorer(")
    slide_back_and_forth(w, 0)
    seed_out_of_range(w)
    train_and_repeat(w)
    slide_back_and_forth(w, 0)
    w.report()


@pytest.mark.parametrize("name", ["04-ulmfit", "06-gpt"])
def test_sample_efficiency_explorer(lesson, name):
    w = widget(lesson(name), f"sample_efficiency_explorer ({name[:2]})", "widgets.sample_efficiency_explorer(")
    slide_back_and_forth(w, 0)
    boxes = w.root.locator("input[type=checkbox]")
    for i in range(REPEAT):
        w.act(f"check box {i % 3} #{i + 1}", lambda i=i: boxes.nth(i % 3).click())
    for i in range(3):  # every method ticked again before training
        if not boxes.nth(i).is_checked():
            w.act(f"tick {i}", lambda i=i: boxes.nth(i).click())
    seed_out_of_range(w)
    train_and_repeat(w)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    w.root.screenshot(path=str(SCREENSHOTS / f"widget-{name}-after-live-point.png"))
    w.report()


# the first differs from the lesson's own sentence (typing that again changes nothing, so nothing redraws)
CLOZE_SENTENCES = ["she [MASK] the letter and [MASK] it away .", "the [MASK] of the river rose after the storm .",
                   "the [MASK] barked at the postman all night .", "[MASK] people voted in the election .",
                   "the city council [MASK] the new budget .", "he drank a cup of [MASK] .",
                   "the [MASK] was closed on [MASK] .", "they went to the [MASK] to buy bread .",
                   "the war ended in [MASK] .", "a [MASK] of birds flew over the [MASK] ."]


def test_cloze_explorer(lesson):
    w = widget(lesson("07-bert"), "cloze_explorer", "widgets.cloze_explorer(")
    box = w.root.locator("input[type=text]").first
    for text in CLOZE_SENTENCES[:REPEAT]:
        w.act(f"sentence {text!r}", type_into(w, box, text))   # two blanks, one, one, ...: the picker follows
    choose_each_option(w, times=REPEAT)                           # the last sentence has two blanks
    slide_back_and_forth(w, 0)                                    # top-k
    w.report()


def test_league_explorer(lesson):
    w = widget(lesson("08-the-flywheel"), "league_explorer", "widgets.league_explorer(")
    choose_each_option(w, nth_select=0)                           # the task: pos, trec, rt, ... (ends on trec)
    for i in range(REPEAT):                                       # the label count (100, 1000, all): right, left, ...
        key = "ArrowRight" if i % 2 == 0 else "ArrowLeft"
        w.act(f"labels slider {key} #{i + 1}", slide(w, 0, key))
    era = w.root.locator("select").nth(1)
    eras = era.locator("option").all_inner_texts()
    for i in range(min(REPEAT, len(eras)) if len(eras) > 1 else 0):   # each era picked changes the plot
        before = w.root.element_handle().evaluate(_SIGNATURE)
        w.act(f"era #{i + 1}", pick(w, nth_select=1))
        w.check(w.root.element_handle().evaluate(_SIGNATURE) != before, f"picking era #{i + 1} changed no plot")
        w.check("▶" in w.text(), f"era #{i + 1}: no line marks the era picked")
    # GPT: the point lesson 06's widget trains too (results/gpt/*-smoke.json); else the first era that can run
    target = eras.index("GPT") if "GPT" in eras else 0
    if era.evaluate("s => s.selectedIndex") != target:
        w.act(f"era {eras[target]!r} to train", lambda: era.select_option(index=target))
    seed_out_of_range(w)
    train_and_repeat(w)
    w.report()


def test_scaling_explorer(lesson):
    w = widget(lesson("08-the-flywheel"), "scaling_explorer", "widgets.scaling_explorer(")
    slide_back_and_forth(w, 0)
    w.report()
