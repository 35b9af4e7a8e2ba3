"""The book's generated pages (book/pages.py): references, timeline table, results tables.

Fast and offline: synthetic results in a temporary folder for the arithmetic, the repository's
own lessons and results/ for coverage. The built HTML is checked in a browser by
tests/browser/test_book_pages.py (`make book-page-test`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from book import pages as book
from minilab import story

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "lessons"
RESULTS = REPO / "results"


def _point(folder: Path, task: str, method: str, labels, seed: int, error: float, commit: str = "a" * 40,
           profile: str = "laptop") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    row = {"task": task, "method": method, "labels": labels, "n_labels": 999 if labels == "all" else labels,
           "seed": seed, "error": error, "accuracy": 1 - error,
           "provenance": {"profile": profile, "device": "cpu", "commit": commit, "time": "2026-11-30T10:00:00+00:00"}}
    (folder / f"{task}-{method}-n{labels}-s{seed}-{profile}.json").write_text(json.dumps(row))


# -- references and timeline -----------------------------------------------------------------------
def test_every_milestone_has_a_full_citation():
    missing = [m.name for m in story.MILESTONES + story.AFTERWARDS if m.name not in book.FULL_CITATIONS]
    assert not missing, f"add the full author list of {missing} to book/pages.py FULL_CITATIONS"
    for m in story.MILESTONES + story.AFTERWARDS:
        text = book.citation(m)
        first_author = m.authors.split()[0].rstrip(",")
        assert m.paper in text and m.date[:4] in text and m.venue in text
        assert text.startswith(first_author), (first_author, text)


def test_references_page_cites_every_milestone_and_copies_each_lessons_list():
    page = book.references_page(LESSONS)
    for m in story.MILESTONES:
        assert m.paper in page
    lessons = book.lesson_files(LESSONS)
    assert lessons, "no lessons found"
    for nb in lessons:
        refs = book.lesson_references(nb)
        assert refs, f"{nb.name} has no '## References' section for the book to copy"
        assert refs in page
        assert f"(lessons/{nb.name})" in page


def test_lesson_references_stop_at_the_next_heading(tmp_path):
    nb = tmp_path / "09-x.ipynb"
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# 09 · X\n"]},
             {"cell_type": "markdown", "metadata": {},
              "source": ["## Summary\n", "- s\n", "\n", "## References\n", "\n", "- A (2020). B.\n", "\n",
                         "## Exercises\n", "- not a reference\n"]}]
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert book.lesson_title(nb) == "09 · X"
    assert book.lesson_references(nb) == "- A (2020). B."


def test_timeline_table_links_written_chapters_and_marks_planned_ones(tmp_path):
    (tmp_path / "01-static-word-vectors.ipynb").write_text("{}")
    table = book.timeline_table(tmp_path)
    assert table.count("\n") == len(story.MILESTONES) + 1
    assert "[01](lessons/01-static-word-vectors.ipynb)" in table
    assert "07 (planned)" in table            # BERT's chapter is not in tmp_path


# -- results ---------------------------------------------------------------------------------------
def test_grid_table_mean_and_sample_std_over_seeds_with_all_last(tmp_path):
    fam = tmp_path / "fam"
    for seed, err in enumerate([0.10, 0.20, 0.30]):
        _point(fam, "rt", "ulmfit", 100, seed, err)
        _point(fam, "rt", "ulmfit", "all", seed, 0.05)
    _point(fam, "rt", "scratch", 100, 0, 0.40)
    _point(fam, "rt", "scratch", 100, 1, 0.50, commit="b" * 40 + "-dirty")
    table, usual = book.grid_table(book.load_points(fam))
    assert usual == 3
    header, _, *rows = table.splitlines()
    assert header == "| method | 100 | all |"                       # numbers first, then 'all'
    rows = [r.replace("\u00a0", " ") for r in rows]                  # cells hold no-break spaces
    assert rows[0] == "| `scratch` | 45.0 ± 7.1 (n=2) | – |"         # a seed count other than 3 is marked
    assert rows[1] == "| `ulmfit` | 20.0 ± 10.0 | 5.0 ± 0.0 |"          # sample std: 0.1 over (0.1, 0.2, 0.3)
    page = book.family_page("fam", book.load_points(fam))
    assert "8 points" in page
    assert "`aaaaaaa` (7)" in page and "`bbbbbbb (uncommitted changes)` (1)" in page


def test_a_single_seed_has_no_std(tmp_path):
    _point(tmp_path / "f", "trec", "bow-lr", 50, 0, 0.25)
    table, usual = book.grid_table(book.load_points(tmp_path / "f"))
    assert usual == 1 and "| `bow-lr` | 25.0 |" in table


def test_tables_split_by_task_and_profile(tmp_path):
    fam = tmp_path / "fam"
    _point(fam, "rt", "bow-lr", 100, 0, 0.3)
    _point(fam, "trec", "bow-lr", 100, 0, 0.2)
    _point(fam, "rt", "bow-lr", 100, 0, 0.35, profile="smoke")
    page = book.family_page("fam", book.load_points(fam))
    assert [h for h in page.splitlines() if h.startswith("## ")] == ["## rt (laptop)", "## rt (smoke)", "## trec (laptop)"]


def test_every_cached_grid_under_results_gets_a_page_with_every_point():
    pages = book.results_pages(RESULTS)
    families = [d for d in sorted(RESULTS.iterdir()) if d.is_dir() and book.load_points(d)]
    assert families, "no cached grids under results/"
    for d in families:
        n = len(book.load_points(d))
        assert d.name in pages
        counts = [int(x) for x in re.findall(r"^(\d+) points", pages[d.name], re.M)]
        assert sum(counts) == n, (d.name, counts, n)
        assert f"[{d.name}]({d.name}.md) | {n} |" in pages["index"]
    for f in RESULTS.glob("*.json"):
        assert f"`results/{f.name}`" in pages["single"]
    toctree = pages["index"].split("```{toctree}")[1]
    assert all(name in toctree for name in pages if name != "index")


def test_non_point_json_in_a_family_folder_is_ignored(tmp_path):
    fam = tmp_path / "fam"
    _point(fam, "rt", "bow-lr", 100, 0, 0.3)
    (fam / "notes.json").write_text(json.dumps({"task": "rt"}))
    assert len(book.load_points(fam)) == 1


@pytest.mark.parametrize("value, shown", [(0.123456, "0.1235"), (12000, "12,000"), (None, "None"),
                                          ({"mean": 0.5, "std": 0.01}, "0.5 ± 0.01"), ("a|b", "a\\|b")])
def test_values_in_single_result_tables(value, shown):
    assert book._fmt(value) == shown


def test_build_without_its_javascript_stops_with_one_line_saying_what_to_do(tmp_path):
    """A cold cache and no npm (or no network): exit 2 and one line naming the package and the fix."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "MINILIB_DATA": str(tmp_path / "cache"), "MINILIB_NPM": "/bin/false"}
    proc = subprocess.run([sys.executable, str(REPO / "book" / "build.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("book: ")]
    assert len(lines) == 1 and "mathjax@3.2.2" in lines[0] and "make book" in lines[0], proc.stderr
