"""The HTML book (`make book`) read in a real browser, as a reader would open it.

Every page of book/_build/html/ is served from a local HTTP server on a free port and opened
in Debian's chromium through Playwright (never Playwright's own browser download). Every
request the browser makes goes through a route: anything addressed to another host is
counted and refused, so a page that needs the web fails here (and with the network really
off, under `unshare -n`, it would fail the same way). One pass visits every page and records
what happened; the tests below then read that record:

- no console error, no uncaught exception, no local request that fails or answers >= 400;
- no request leaving the machine;
- every <img> (plots in the lessons, the timeline, pictures inside static widgets) decoded
  with a non-zero natural width;
- every link to a page of the book resolves, its #fragment included;
- math is typeset by the book's own MathJax (an mjx-container per formula, no TeX error);
- every static widget is drawn from the state saved in its notebook.

The pass also writes two screenshots to book/_build/screenshots/ (`make screenshots`) and its
counts to book/_build/page-test-summary.json.
If the book is not built yet, the fixture builds it (book/build.py).
"""
from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

# the browser settings the live widget tests use (tests/browser/conftest.py), read from that file
_spec = importlib.util.spec_from_file_location("browser_conftest", Path(__file__).with_name("conftest.py"))
_browser = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_browser)
CHROMIUM, CHROMIUM_ARGS, REPO = _browser.CHROMIUM, _browser.CHROMIUM_ARGS, _browser.REPO

HTML = REPO / "book" / "_build" / "html"
SCREENSHOTS = Path(os.environ.get("BOOK_SCREENSHOTS", REPO / "book" / "_build" / "screenshots"))
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
WIDGET_TIMEOUT_MS = 60_000   # the largest lesson carries ~0.5 MB of widget state to decode and draw


@dataclass
class PageRecord:
    path: str                                            # relative to the book's root, e.g. "lessons/01-....html"
    seconds: float = 0.0
    console_errors: list = field(default_factory=list)
    external: list = field(default_factory=list)        # requests to another host (refused)
    failed: list = field(default_factory=list)          # local requests that failed or answered >= 400
    images: list = field(default_factory=list)          # {"src", "naturalWidth"}
    links: list = field(default_factory=list)           # absolute hrefs of <a> elements
    math: dict = field(default_factory=dict)            # {"formulas", "typeset", "errors"}
    widgets: dict = field(default_factory=dict)         # {"views", "drawn"}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _build_if_missing() -> None:
    if (HTML / "index.html").is_file():
        return
    proc = subprocess.run([sys.executable, str(REPO / "book" / "build.py")], cwd=REPO, capture_output=True,
                          text=True, timeout=1800)
    assert proc.returncode == 0, f"book/build.py failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def _pages() -> list[str]:
    return sorted(str(p.relative_to(HTML)) for p in HTML.rglob("*.html") if "_static" not in p.parts)


# what the page shows once it has settled: images, links, math, widgets
_WAIT_SETTLED = """() => {
    const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
    const drawn = [...views].filter(s => { const d = s.previousElementSibling;
        return d && d.classList.contains('widget-subarea') && d.childElementCount > 0; });
    const formulas = document.querySelectorAll('.math');
    const typeset = [...formulas].filter(m => m.querySelector('mjx-container'));
    const imgs = [...document.images];
    imgs.forEach(i => { if (i.loading === 'lazy') i.loading = 'eager'; });
    return drawn.length === views.length && typeset.length === formulas.length && imgs.every(i => i.complete);
}"""
_READ_PAGE = """() => ({
    images: [...document.images].map(i => ({src: i.src.slice(0, 120), naturalWidth: i.naturalWidth})),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    math: {formulas: document.querySelectorAll('.math').length,
           typeset: document.querySelectorAll('.math mjx-container').length,
           errors: document.querySelectorAll('mjx-merror').length},
    widgets: {views: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
              drawn: [...document.querySelectorAll('.widget-subarea')].filter(d => d.childElementCount > 0).length},
})"""


@pytest.fixture(scope="session")
def built_book() -> Path:
    """book/_build/html/, built first if it is not there yet."""
    _build_if_missing()
    return HTML


@pytest.fixture(scope="session")
def book_server(built_book):
    """The built book on http://127.0.0.1:<free port>/ for the session."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_QuietHandler, directory=str(HTML)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def visited(book_server, tmp_path_factory):
    """Every page of the book opened once in chromium: {page path: PageRecord}, plus the screenshots."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    records: dict[str, PageRecord] = {}
    current: list[PageRecord] = []   # the record the handlers below write to

    def route(r):
        url = urlsplit(r.request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.hostname not in LOCAL_HOSTS:
            current[-1].external.append(r.request.url)
            r.abort()
        else:
            r.continue_()

    t0 = time.monotonic()
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("book-chromium")), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 900})
        context.route("**/*", route)
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and current[-1].console_errors.append(m.text))
        page.on("pageerror", lambda e: current[-1].console_errors.append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: urlsplit(r.url).hostname in LOCAL_HOSTS
                and current[-1].failed.append(f"{r.url}: {r.failure}"))
        page.on("response", lambda r: r.status >= 400 and current[-1].failed.append(f"{r.url}: HTTP {r.status}"))
        for path in _pages():
            rec = PageRecord(path)
            current.append(rec)
            start = time.monotonic()
            page.goto(book_server + path, wait_until="load")
            try:
                page.wait_for_function(_WAIT_SETTLED, timeout=WIDGET_TIMEOUT_MS, polling=200)
            except Exception as exc:   # recorded; the tests below say what did not settle
                rec.console_errors.append(f"page did not settle in {WIDGET_TIMEOUT_MS / 1000:.0f} s: "
                                          f"{str(exc).splitlines()[0]}")
            page.wait_for_timeout(300)   # late console messages from asynchronous widget code
            for key, value in page.evaluate(_READ_PAGE).items():
                setattr(rec, key, value)
            rec.seconds = time.monotonic() - start
            records[path] = rec
        _screenshots(page, book_server)
        context.close()
    summary = {"pages": len(records), "seconds": round(time.monotonic() - t0, 1),
               "images": sum(len(r.images) for r in records.values()),
               "links": sum(len(r.links) for r in records.values()),
               "internal links": sum(1 for r in records.values() for h in r.links if h.startswith(book_server)),
               "external requests": sum(len(r.external) for r in records.values()),
               "console errors": sum(len(r.console_errors) for r in records.values()),
               "failed requests": sum(len(r.failed) for r in records.values()),
               "formulas": sum(r.math.get("formulas", 0) for r in records.values()),
               "static widgets": sum(r.widgets.get("views", 0) for r in records.values())}
    (HTML.parent / "page-test-summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\nbook page test: " + ", ".join(f"{k} {v}" for k, v in summary.items()))
    return records


def _screenshots(page, base: str) -> None:
    """The timeline page whole, and a lesson at its first static widget."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(base + "timeline.html", wait_until="load")
    page.screenshot(path=str(SCREENSHOTS / "timeline.png"), full_page=True)
    page.goto(base + "lessons/01-static-word-vectors.html", wait_until="load")
    page.wait_for_function(_WAIT_SETTLED, timeout=WIDGET_TIMEOUT_MS, polling=200)
    widget = page.locator(".widget-subarea").first
    widget.scroll_into_view_if_needed()
    page.evaluate("() => window.scrollBy(0, -120)")
    page.screenshot(path=str(SCREENSHOTS / "lesson-01-widget.png"))


# -- the checks ------------------------------------------------------------------------------------
_REMOTE_TAG = re.compile(r"<(script|link|img|iframe|source|video|audio|embed|object)\b[^>]*\b(src|href|data)="
                         r"[\"']?(https?:)?//[^\"'\s>]*", re.I)
_REMOTE_CSS = re.compile(r"(url\(\s*[\"']?|@import\s+[\"'])(https?:)?//[^\"')\s]*", re.I)


def test_no_tag_or_stylesheet_names_another_host(built_book):
    """Read from the files, before any browser: what the pages would load from elsewhere."""
    found = [f"{p.relative_to(built_book)}: {m.group(0)[:120]}" for p in built_book.rglob("*.html")
             for m in _REMOTE_TAG.finditer(_read(p))]
    found += [f"{p.relative_to(built_book)}: {m.group(0)[:120]}" for p in built_book.rglob("*.css")
              for m in _REMOTE_CSS.finditer(_read(p))]
    assert not found, "references to other hosts:\n" + "\n".join(found)


def test_the_book_has_every_lesson_and_the_back_matter(visited):
    lessons = sorted(p.stem for p in (REPO / "lessons").glob("[0-9][0-9]-*.ipynb"))
    assert lessons, "no lessons found"
    for name in lessons:
        assert f"lessons/{name}.html" in visited, f"lesson {name} has no page in the book"
    for page in ("index.html", "using.html", "timeline.html", "glossary.html", "references.html",
                 "datasheet.html", "results/index.html"):
        assert page in visited, f"{page} is missing from the book"


def test_no_page_requests_another_host(visited):
    leaks = {p: r.external for p, r in visited.items() if r.external}
    assert not leaks, f"pages asked other hosts for: {leaks}"


def test_no_console_error_and_no_failed_request(visited):
    bad = {p: r.console_errors + r.failed for p, r in visited.items() if r.console_errors or r.failed}
    assert not bad, f"console errors or failed requests: {bad}"


def test_every_image_is_decoded(visited):
    total = sum(len(r.images) for r in visited.values())
    assert total >= 10, f"only {total} images in the whole book: the lessons' plots are missing"
    broken = {p: [i["src"] for i in r.images if not i["naturalWidth"]] for p, r in visited.items()}
    broken = {p: b for p, b in broken.items() if b}
    assert not broken, f"images with no pixels (naturalWidth 0): {broken}"


def _target_ok(href: str, base: str) -> str | None:
    """None if an internal link resolves (file and #fragment), else what is wrong."""
    url = urlsplit(href)
    path = HTML / unquote(url.path[len(urlsplit(base).path):])
    if path.is_dir():
        path = path / "index.html"
    if not path.is_file():
        return f"{href}: no such file"
    if url.fragment and path.suffix == ".html":
        html = _read(path)
        if not re.search(rf'id="{re.escape(unquote(url.fragment))}"', html):
            return f"{href}: no element with id {url.fragment!r}"
    return None


@functools.lru_cache(maxsize=None)
def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def test_every_internal_link_resolves(visited, book_server):
    internal = {(p, h) for p, r in visited.items() for h in r.links if h.startswith(book_server)}
    assert len(internal) >= len(visited), "too few internal links: the navigation is missing"
    broken = sorted(f"{p} -> {why}" for p, h in internal if (why := _target_ok(h, book_server)))
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_math_is_typeset_locally(visited):
    with_math = {p: r.math for p, r in visited.items() if r.math.get("formulas")}
    assert with_math, "no page has math: the lessons' formulas were not parsed"
    for p, m in with_math.items():
        assert m["typeset"] == m["formulas"], f"{p}: {m['typeset']} of {m['formulas']} formulas typeset"
        assert m["errors"] == 0, f"{p}: {m['errors']} formulas with TeX errors"


def test_static_widgets_are_drawn(visited):
    with_widgets = {p: r.widgets for p, r in visited.items() if r.widgets.get("views")}
    assert with_widgets, "no page shows a widget: the notebooks' widget state did not reach the book"
    for p, w in with_widgets.items():
        assert w["drawn"] >= w["views"], f"{p}: {w['drawn']} of {w['views']} widgets drawn"


def test_screenshots_were_written(visited):
    from PIL import Image

    for name in ("timeline.png", "lesson-01-widget.png"):
        path = SCREENSHOTS / name
        assert path.is_file() and path.stat().st_size > 20_000, f"{path} is missing or nearly empty"
        with Image.open(path) as img:
            assert img.width >= 800 and img.height >= 600, f"{path}: {img.size}"


def test_pages_with_math_and_widgets_also_work_from_file_urls(visited, tmp_path_factory):
    """The README says: open book/_build/html/index.html, no server needed. Opened as file:// URLs,
    the pages with math or widgets still typeset, draw and log no error, and ask nothing of the web."""
    from playwright.sync_api import sync_playwright

    pages = ["index.html"] + [p for p, r in visited.items() if r.math.get("formulas") or r.widgets.get("views")]
    problems: dict[str, list] = {}
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("book-chromium-file")), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS)
        page = context.new_page()
        current: list[str] = []
        page.on("console", lambda m: m.type == "error" and problems.setdefault(current[-1], []).append(m.text))
        page.on("pageerror", lambda e: problems.setdefault(current[-1], []).append(f"uncaught: {e}"))
        page.on("request", lambda r: not r.url.startswith(("file:", "data:", "blob:"))
                and problems.setdefault(current[-1], []).append(f"request: {r.url}"))
        for path in pages:
            current.append(path)
            page.goto((HTML / path).as_uri(), wait_until="load")
            try:
                page.wait_for_function(_WAIT_SETTLED, timeout=WIDGET_TIMEOUT_MS, polling=200)
            except Exception as exc:
                problems.setdefault(path, []).append(f"did not settle: {str(exc).splitlines()[0]}")
            page.wait_for_timeout(300)
            broken = page.evaluate("() => [...document.images].filter(i => !i.naturalWidth).map(i => i.src)")
            if broken:
                problems.setdefault(path, []).append(f"images with no pixels: {broken}")
        context.close()
    assert len(pages) > 1
    assert not problems, f"opened from file:// URLs: {problems}"
