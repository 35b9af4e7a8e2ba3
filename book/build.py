"""Build the HTML book offline: `python book/build.py` (what `make book` runs).

1. Stage the book's sources in book/_build/src/: conf.py and the pages written by hand (book/*.md,
   book/_static/), the lessons exactly as committed (lessons/NN-*.ipynb: their outputs, never
   re-executed), and the generated pages (timeline, references, results, the teacher's guide:
   book/pages.py).
2. Vendor the JavaScript the pages need from pinned npm packages (MathJax 3, RequireJS, the
   ipywidgets HTML manager): fetched once with `npm pack`, checked against a sha256 and cached
   like the corpora ($MINILIB_DATA/raw/, minilib/data/sources.py), then copied into _static/vendor/.
   A warm cache needs no network (nor does a warm npm cache: `npm pack --prefer-offline`); with
   neither and no network, the build stops with the npm command to run.
3. Run Sphinx (myst-nb, furo) into book/_build/html/. myst-nb writes jupyter_execute/ beside
   it, in book/_build/ (ignored by git).

Files are staged only when their content changed, so a second build is incremental.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
sys.path.insert(0, str(ROOT))   # run as a script from any folder: minilib from this checkout

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from book import pages as book  # noqa: E402
from minilib import viz  # noqa: E402
from minilab import fetching as sources, story  # noqa: E402

BUILD = BOOK / "_build"
SRC = BUILD / "src"
HTML = BUILD / "html"

class NpmPackage(sources.Artifact):
    """A pinned npm tarball fetched with `npm pack --prefer-offline`: npm's own cache answers first
    (without it npm retries the registry for minutes when the network is off), the registry next;
    the sha256 check decides either way."""

    def command(self) -> list[str]:
        return [*sources.client_command("npm"), "pack", "--prefer-offline", self.spec]


# (artifact, the files the book needs from it, where they go under _static/vendor/, the folder
#  inside the package that maps onto it). Pinned by version and by the sha256 of the npm tarball.
VENDOR = [
    (NpmPackage("npm", "mathjax", "3.2.2", "mathjax-3.2.2.tgz",
                      "1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"),
     ("package/LICENSE", "package/package.json", "package/es5/tex-mml-chtml.js", "package/es5/input/*",
      "package/es5/output/*", "package/es5/ui/*", "package/es5/a11y/*", "package/es5/adaptors/*",
      "package/es5/sre/*"),
     "mathjax", "package/es5"),
    (NpmPackage("npm", "requirejs", "2.3.8", "requirejs-2.3.8.tgz",
                      "777158e89275e16bd51aec3ef714fbcb5dc45789e7078659933bc814916d7dec"),
     ("package/require.js", "package/package.json"),
     "", "package"),
    (NpmPackage("npm", "@jupyter-widgets/html-manager", "1.0.15", "jupyter-widgets-html-manager-1.0.15.tgz",
                      "2b9d65cb7913e1c7d671757a10008b32c9c2448d4429513371e55c07d6107638"),
     ("package/package.json", "package/dist/embed-amd.js", "package/dist/embed.js.LICENSE.txt",
      "package/dist/*.woff2", "package/dist/*.woff", "package/dist/*.ttf", "package/dist/*.eot", "package/dist/*.svg"),
     "html-manager", "package/dist"),
]


class VendorError(RuntimeError):
    """A pinned npm package the pages need could not be fetched or did not verify."""


class Stage:
    """Writes files under SRC only when their bytes change, and removes what was not written."""

    def __init__(self, root: Path):
        self.root, self.kept = root, set()

    def write(self, rel: str, data: bytes | str) -> None:
        data = data.encode("utf-8") if isinstance(data, str) else data
        path = self.root / rel
        self.kept.add(path)
        if path.is_file() and path.read_bytes() == data:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)

    def copy(self, src: Path, rel: str) -> None:
        self.write(rel, src.read_bytes())

    def prune(self) -> None:
        for path in sorted(self.root.rglob("*"), reverse=True):
            if path.is_file() and path not in self.kept:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()


def timeline_png() -> bytes:
    import io

    import matplotlib.pyplot as plt

    ax = story.timeline()
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png", dpi=150, bbox_inches="tight")
    plt.close(ax.figure)
    return buf.getvalue()


def vendor(stage: Stage, log=print) -> list[dict]:
    """Fetch (or reuse) each pinned npm package and stage the files the pages load."""
    manifest = []
    for artifact, patterns, dest, inside in VENDOR:
        try:
            root = sources.fetch_artifact(artifact, patterns, log=log, label=f"book: {artifact.package}")
        except sources.DataSourceError as exc:
            why = next((line for line in str(exc).splitlines() if "error" in line.lower() and "log" not in line),
                       str(exc).splitlines()[0])
            raise VendorError(
                f"cannot get {artifact.spec}, whose JavaScript the book serves ({why.strip()}). With the npm "
                f"registry reachable, run `make book` again (the package is cached after that), or copy "
                f"{artifact.filename} (sha256 {artifact.sha256}) into {sources.downloads_dir()}/.") from None
        base = root / inside
        files = sorted(p for p in base.rglob("*") if p.is_file() and p.name != "package.json")
        for f in files:
            stage.copy(f, f"_static/vendor/{dest + '/' if dest else ''}{f.relative_to(base)}")
        meta = json.loads((root / "package" / "package.json").read_text(encoding="utf-8"))
        if not (base / "LICENSE").exists() and (root / "package" / "LICENSE").exists():
            stage.copy(root / "package" / "LICENSE", f"_static/vendor/{dest or 'requirejs'}/LICENSE")
        manifest.append({"package": artifact.package, "version": artifact.version, "licence": meta.get("license"),
                         "tarball": artifact.filename, "sha256": artifact.sha256, "files": len(files),
                         "served_from": f"_static/vendor/{dest or ''}", "fetched_with": " ".join(artifact.command())})
    stage.write("_static/vendor/MANIFEST.json", json.dumps(manifest, indent=1) + "\n")
    return manifest


def stage_sources(log=print) -> dict:
    """Everything Sphinx reads, in SRC. Returns counts for the summary line."""
    stage = Stage(SRC)
    manifest = vendor(stage, log=log)   # first: without its JavaScript there is no book to stage
    for f in sorted(BOOK.glob("*.md")) + [BOOK / "conf.py"]:
        stage.copy(f, f.name)
    for f in sorted((BOOK / "_static").rglob("*")):
        if f.is_file():
            stage.copy(f, str(f.relative_to(BOOK)))
    lessons = book.lesson_files(ROOT / "lessons")
    for nb in lessons:
        stage.copy(nb, f"lessons/{nb.name}")
    stage.write("_generated/timeline-table.md", book.timeline_table(ROOT / "lessons") + "\n")
    stage.write("timeline.png", timeline_png())
    stage.write("references.md", book.references_page(ROOT / "lessons"))
    results = book.results_pages(ROOT / "results")
    for name, text in results.items():
        stage.write(f"results/{name}.md", text)
    guide = book.teachers_guide_pages(ROOT / "lessons")   # one page per lesson, read from its notebook
    for name, text in guide.items():
        stage.write(f"teachers-guide/{name}.md", text)
    stage.prune()
    return {"lessons": len(lessons), "results pages": len(results), "guide pages": len(guide),
            "vendored packages": len(manifest)}


def build(clean: bool = False, log=print) -> int:
    from sphinx.cmd.build import build_main

    t0 = time.perf_counter()
    if clean:
        shutil.rmtree(BUILD, ignore_errors=True)
    counts = stage_sources(log=log)
    # -W: a warning (a broken link, a missing page) fails the build; --keep-going reports them all
    code = build_main(["-b", "html", "-d", str(BUILD / "doctrees"), "-q", "-W", "--keep-going",
                       str(SRC), str(HTML)])
    if code:
        log(f"book: Sphinx failed (exit {code}); see the messages above")
        return code
    pages = sum(1 for p in HTML.rglob("*.html") if p.name not in ("genindex.html", "search.html"))
    log(f"book: {pages} pages ({counts['lessons']} lessons, {counts['results pages']} results pages, "
        f"{counts['guide pages']} teacher's guide pages, {counts['vendored packages']} vendored npm packages) "
        f"in {time.perf_counter() - t0:.1f} s -> {(HTML / 'index.html').relative_to(ROOT)}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clean", action="store_true", help="remove book/_build first (a build from scratch)")
    args = p.parse_args(argv)
    try:
        return build(clean=args.clean)
    except VendorError as exc:   # npm missing, offline with a cold cache, a checksum mismatch
        print(f"book: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
