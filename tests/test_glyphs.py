"""The book draws with the fonts a plain Debian machine has: every character the lessons and the book's
own text use is in DejaVu Sans (the font Debian's chromium falls back to, without an emoji font; matplotlib
ships a copy), and the teacher's guide never prints an unfilled phrase."""
import json
import re
import unicodedata
from pathlib import Path

import matplotlib
from fontTools.ttLib import TTFont

from book import pages as book

ROOT = Path(__file__).resolve().parents[1]
DEJAVU = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"


def _covered() -> set[int]:
    return set(TTFont(DEJAVU).getBestCmap())


def _missing(text: str, covered: set[int]) -> set[str]:
    return {ch for ch in text if ord(ch) > 127 and ord(ch) not in covered and not unicodedata.category(ch).startswith("Z")}


def test_every_character_of_the_lessons_and_the_book_text_has_a_glyph_in_dejavu_sans():
    covered = _covered()
    assert ord(book.PATH_MARK) in covered
    found = {}
    for nb in sorted((ROOT / "lessons").glob("[0-9]*.ipynb")):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            for ch in _missing("".join(cell["source"]), covered):
                found.setdefault(ch, set()).add(nb.stem)
    for src in [ROOT / "book" / "pages.py", ROOT / "minilab" / "widgets.py", ROOT / "minilib" / "viz.py",
                *sorted((ROOT / "book").glob("**/*.md"))]:
        if "_build" not in src.parts:
            for ch in _missing(src.read_text(encoding="utf-8"), covered):
                found.setdefault(ch, set()).add(src.name)
    assert not found, {f"{ch} U+{ord(ch):04X} {unicodedata.name(ch, '?')}": sorted(w) for ch, w in found.items()}


def test_a_stopwatch_emoji_is_caught():
    assert _missing("the ⏱ path", _covered()) == {"⏱"}                    # the check can fail


def test_the_guide_reads_each_lessons_recorded_profile_and_prints_no_placeholder():
    pages = book.teachers_guide_pages(ROOT / "lessons")
    for stem, page in pages.items():
        prose = re.sub(r"`[^`]*`", "", page)                # code spans may hold anything
        assert not re.search(r"\b(\w+) \1\b", prose), (stem, re.search(r"\b(\w+) \1\b", prose))
        assert "last run with" not in page and not re.search(r"\{[a-z_.]+\}", prose), stem
    for nb in sorted((ROOT / "lessons").glob("[0-9]*.ipynb")):
        record = book.provenance.saved_record(nb)
        if record:                                     # every executed lesson records its profile (show_reads)
            assert f"at the `{record['profile']}` profile" in pages[nb.stem], nb.stem
