"""The book's milestones: in date order, well-formed, each pointing at a real chapter, and drawable."""
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from minilab import story

CHAPTER_NUMBERS = [n for n, _, _ in story.CHAPTERS]


def year_month(m: story.Milestone) -> tuple[int, int]:
    year, month = m.date.split("-")
    return int(year), int(month)


@pytest.mark.parametrize("m", story.MILESTONES, ids=lambda m: m.name)
def test_dates_are_year_dash_month_within_the_story(m):
    assert re.fullmatch(r"\d{4}-\d{2}", m.date), f"{m.name}: date {m.date!r} is not 'YYYY-MM'"
    year, month = year_month(m)
    assert 1 <= month <= 12, f"{m.name}: month {month} in {m.date!r}"
    assert 2013 <= year <= 2018, f"{m.name}: {year} is outside the 2013–2018 road the book retraces"


def test_milestones_are_sorted_by_date():
    dates = [year_month(m) for m in story.MILESTONES]
    assert dates == sorted(dates), [m.date for m in story.MILESTONES]


@pytest.mark.parametrize("m", story.MILESTONES, ids=lambda m: m.name)
def test_every_field_is_filled_and_the_lesson_is_a_real_chapter(m):
    for field in ("name", "idea", "paper", "authors", "venue"):
        assert getattr(m, field).strip(), f"{m.name}: empty {field}"
    assert m.lesson is None or m.lesson in CHAPTER_NUMBERS, f"{m.name}: no chapter {m.lesson} in CHAPTERS"
    # the venue's year is the release year or a later one (arXiv first, conference after)
    venue_year = re.search(r"(\d{4})", m.venue)
    assert venue_year and int(venue_year.group(1)) >= year_month(m)[0], f"{m.name}: venue {m.venue!r}"


def test_names_and_papers_are_unique():
    assert len({m.name for m in story.MILESTONES}) == len(story.MILESTONES)
    assert len({m.paper for m in story.MILESTONES}) == len(story.MILESTONES)


def test_every_history_chapter_has_a_milestone():
    covered = {m.lesson for m in story.MILESTONES}
    missing = [n for n in range(1, 8) if n not in covered]
    assert not missing, f"chapters without a milestone on the timeline: {missing}"


def test_chapters_are_numbered_in_order_and_named_by_their_notebook():
    assert CHAPTER_NUMBERS == list(range(len(story.CHAPTERS)))
    for n, slug, title in story.CHAPTERS:
        assert slug.startswith(f"{n:02d}-") and re.fullmatch(r"\d{2}-[a-z0-9-]+", slug), slug
        assert title.strip()


def test_dai_le_and_cove_sit_in_their_chapters():
    by_name = {m.name: m for m in story.MILESTONES}
    assert by_name["Dai & Le"].lesson == 4 and by_name["Dai & Le"].paper == "Semi-supervised Sequence Learning"
    cove = by_name["CoVe"]
    assert (cove.lesson, cove.date) == (3, "2017-08")
    assert cove.paper == "Learned in Translation: Contextualized Word Vectors"


@pytest.mark.parametrize("milestones, figsize", [(story.MILESTONES, story.TIMELINE_FIGSIZE),
                                                  (story.MILESTONES + story.AFTERWARDS, story.FLYWHEEL_TIMELINE_FIGSIZE)],
                         ids=["lesson-00", "lesson-08"])
def test_timeline_labels_do_not_overlap_at_the_lessons_size(milestones, figsize):
    fig, ax = plt.subplots(figsize=figsize)
    try:
        story.timeline(milestones, ax=ax)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        boxes = [(t.get_text().split("\n")[0], t.get_bbox_patch().get_window_extent(renderer)) for t in ax.texts]
        assert len(boxes) == len(milestones)
        clashes = [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:] if box_a.overlaps(box_b)]
        assert not clashes, f"timeline labels overlap at figsize {figsize}: {clashes}"
        outside = [name for name, box in boxes if not fig.bbox.contains(box.x0, box.y0)
                   or not fig.bbox.contains(box.x1, box.y1)]
        assert not outside, f"labels cut off by the figure: {outside}"
    finally:
        plt.close(fig)


def test_afterwards_follow_bert_in_date_order_and_belong_to_chapter_08():
    dates = [year_month(m) for m in story.AFTERWARDS]
    assert dates == sorted(dates), [m.date for m in story.AFTERWARDS]
    assert dates[0] > year_month(story.MILESTONES[-1]), "AFTERWARDS start after the book's last milestone"
    assert all(2019 <= y <= 2020 for y, _ in dates)
    names = {m.name for m in story.MILESTONES + story.AFTERWARDS}
    assert len(names) == len(story.MILESTONES) + len(story.AFTERWARDS), "a name on both lists"
    for m in story.AFTERWARDS:
        assert m.lesson == 8, m.name
        for field in ("name", "idea", "paper", "authors", "venue"):
            assert getattr(m, field).strip(), f"{m.name}: empty {field}"
    # the seed essay's launch date of BERT in Google Search (US English queries: 2019-10-25)
    assert {m.name: m.date for m in story.AFTERWARDS}["BERT in Search"] == "2019-10"


# ----------------------------------------------------------------------------- citations in the lessons

import json
from pathlib import Path

LESSONS = Path(__file__).resolve().parents[1] / "lessons"


def lesson_text(n: int, outputs: bool = False) -> str:
    """A lesson's markdown and code as typed (and, with `outputs`, its saved text outputs), cells joined."""
    (path,) = LESSONS.glob(f"{n:02d}-*.ipynb")
    parts = []
    for cell in json.loads(path.read_text())["cells"]:
        parts.append("".join(cell["source"]))
        if outputs:
            for out in cell.get("outputs", []):
                text = out.get("text") or out.get("data", {}).get("text/plain") or out.get("data", {}).get("text/markdown")
                parts.append("".join(text) if isinstance(text, list) else (text or ""))
    return "\n\n".join(parts)


@pytest.mark.parametrize("c", story.CITATIONS, ids=lambda c: f"{c.lesson:02d}-{c.where}-{c.anchor[:24]}")
def test_each_lesson_cites_the_right_place(c):
    text = re.sub(r"\s+", " ", lesson_text(c.lesson))
    at = [m.start() for m in re.finditer(re.escape(c.anchor), text)]
    assert at, f"lesson {c.lesson:02d} no longer says {c.anchor!r}: update story.CITATIONS with what it cites now"
    w = story.CITATION_WINDOW
    for i in at:
        near = text[max(0, i - w): i + len(c.anchor) + w]
        assert c.where in near, (f"lesson {c.lesson:02d} says {c.anchor!r} without {c.where!r} within {w} characters "
                                 f"({c.paper}: {c.says})")


@pytest.mark.parametrize("lesson, slip, why", story.SLIPS, ids=lambda x: str(x)[:30])
def test_no_lesson_repeats_a_slip(lesson, slip, why):
    assert slip.lower() not in lesson_text(lesson, outputs=True).lower(), f"lesson {lesson:02d} says {slip!r}: {why}"


def test_cited_uses_the_venue_year():
    assert story.cited("Devlin et al. 2018, §3 and §A.2") == "Devlin et al. 2019, §3 and §A.2"
    assert story.cited("Brown et al. 2020, Table 2.1") == "Brown et al. 2020, Table 2.1"
    assert story.cited("Merity et al. 2017") == "Merity et al. 2018"   # AWD-LSTM: arXiv 2017-08, ICLR 2018


def test_baseline_names_say_what_each_read():
    names = story.baseline_names(3_000_000)
    assert set(names) == {"majority", "bow-lr", "glove-lr", "sgns-lr"}
    assert "6B tokens" in names["glove-lr"] and "3M words" in names["sgns-lr"]
    assert all("no pretraining" in names[m] for m in ("majority", "bow-lr"))
