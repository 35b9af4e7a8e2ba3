"""The book's generated pages: the timeline table, the references, the results pages and the
teacher's guide.

Everything here is read from what the repository already holds, so nothing is typed twice:
the milestones from `story.MILESTONES`, each lesson's own "References" section from its
notebook, every cached result under results/ (a point of a grid: one JSON per task,
method, label count, seed and profile; or a single experiment's JSON), and each lesson's
classroom path, cells and measured run times for the teacher's guide. The functions return
Markdown (MyST) text; book/build.py writes it beside the lessons and runs Sphinx.

    from book import pages                  # the repository's root on sys.path
    pages.references_page(Path("lessons"))
    pages.results_pages(Path("results"))   # {"index": ..., "sample-efficiency": ..., ...}
    pages.teachers_guide_pages(Path("lessons"))   # {"index": ..., "00-the-map": ..., ...}
"""
from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from minilab import provenance
from minilab.story import MILESTONES, Milestone

# The full author lists and a stable identifier of each milestone's paper. story.py keeps the short
# form ("Mikolov et al.") for plots; the references page needs every name. Keyed by Milestone.name;
# tests/test_book.py fails if a milestone is added without an entry here.
FULL_CITATIONS: dict[str, tuple[str, str]] = {
    "word2vec": ("Mikolov, T., Chen, K., Corrado, G., Dean, J.", "arXiv:1301.3781"),
    "SGNS": ("Mikolov, T., Sutskever, I., Chen, K., Corrado, G., Dean, J.", "arXiv:1310.4546"),
    "GloVe": ("Pennington, J., Socher, R., Manning, C. D.", "doi:10.3115/v1/D14-1162"),
    "Dai & Le": ("Dai, A. M., Le, Q. V.", "arXiv:1511.01432"),
    "big LSTM LMs": ("Jozefowicz, R., Vinyals, O., Schuster, M., Shazeer, N., Wu, Y.", "arXiv:1602.02410"),
    "Transformer": ("Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N., Kaiser, Ł., "
                    "Polosukhin, I.", "arXiv:1706.03762"),
    "CoVe": ("McCann, B., Bradbury, J., Xiong, C., Socher, R.", "arXiv:1708.00107"),
    "AWD-LSTM": ("Merity, S., Keskar, N. S., Socher, R.", "arXiv:1708.02182"),
    "ULMFiT": ("Howard, J., Ruder, S.", "arXiv:1801.06146"),
    "ELMo": ("Peters, M. E., Neumann, M., Iyyer, M., Gardner, M., Clark, C., Lee, K., Zettlemoyer, L.",
             "arXiv:1802.05365"),
    "GPT": ("Radford, A., Narasimhan, K., Salimans, T., Sutskever, I.", ""),
    "BERT": ("Devlin, J., Chang, M.-W., Lee, K., Toutanova, K.", "arXiv:1810.04805"),
    # story.AFTERWARDS (chapter 08)
    "GPT-2": ("Radford, A., Wu, J., Child, R., Luan, D., Amodei, D., Sutskever, I.", ""),
    "RoBERTa": ("Liu, Y., Ott, M., Goyal, N., Du, J., Joshi, M., Chen, D., Levy, O., Lewis, M., Zettlemoyer, L., "
                "Stoyanov, V.", "arXiv:1907.11692"),
    "T5": ("Raffel, C., Shazeer, N., Roberts, A., Lee, K., Narang, S., Matena, M., Zhou, Y., Li, W., Liu, P. J.",
           "arXiv:1910.10683"),
    "BERT in Search": ("Nayak, P.", ""),
    "Scaling laws": ("Kaplan, J., McCandlish, S., Henighan, T., Brown, T. B., Chess, B., Child, R., Gray, S., "
                     "Radford, A., Wu, J., Amodei, D.", "arXiv:2001.08361"),
    "GPT-3": ("Brown, T. B., Mann, B., Ryder, N., Subbiah, M., Kaplan, J., Dhariwal, P., Neelakantan, A., Shyam, P., "
              "Sastry, G., Askell, A., Agarwal, S., Herbert-Voss, A., Krueger, G., Henighan, T., Child, R., Ramesh, A., "
              "Ziegler, D. M., Wu, J., Winter, C., Hesse, C., Chen, M., Sigler, E., Litwin, M., Gray, S., Chess, B., "
              "Clark, J., Berner, C., McCandlish, S., Radford, A., Sutskever, I., Amodei, D.", "arXiv:2005.14165"),
}

POINT_KEYS = ("task", "method", "seed", "error")   # what makes a results JSON a point of a grid


# -- lessons ---------------------------------------------------------------------------------------
def lesson_files(lessons_dir: Path) -> list[Path]:
    """lessons/NN-slug.ipynb, in chapter order: the book has one page per file that exists."""
    return sorted(Path(lessons_dir).glob("[0-9][0-9]-*.ipynb"))


def _markdown_cells(notebook: Path) -> list[str]:
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"] if c["cell_type"] == "markdown"]


def lesson_title(notebook: Path) -> str:
    """The lesson's first level-1 heading ("01 · Static word vectors: ..."), else its file name."""
    for text in _markdown_cells(notebook):
        m = re.search(r"^# (.+)$", text, re.M)
        if m:
            return m.group(1).strip()
    return Path(notebook).stem


def lesson_references(notebook: Path) -> str:
    """The Markdown under the lesson's "## References" heading (up to the next heading of level ≤ 2)."""
    for text in _markdown_cells(notebook):
        m = re.search(r"^## References[^\n]*\n(.*?)(?=^#{1,2} |\Z)", text, re.M | re.S)
        if m:
            return m.group(1).strip()
    return ""


# -- the timeline and the references ---------------------------------------------------------------
def _chapter_link(m: Milestone, lessons: Sequence[Path]) -> str:
    if m.lesson is None:
        return "context"
    for nb in lessons:
        if nb.name.startswith(f"{m.lesson:02d}-"):
            return f"[{m.lesson:02d}](lessons/{nb.name})"
    return f"{m.lesson:02d} (planned)"


def timeline_table(lessons_dir: Path, milestones: Sequence[Milestone] = MILESTONES) -> str:
    """One row per milestone: date, name, the idea, the paper and the chapter that rebuilds it."""
    lessons = lesson_files(lessons_dir)
    rows = ["| date | milestone | the idea | paper | chapter |", "|---|---|---|---|---|"]
    for m in milestones:
        rows.append(f"| {m.date} | {m.name} | {m.idea} | {m.paper} ({m.authors}, {m.venue}) | "
                    f"{_chapter_link(m, lessons)} |")
    return "\n".join(rows)


def citation(m: Milestone) -> str:
    """`Authors (year). Title. *Venue*. identifier (first public release YYYY-MM).`"""
    authors, ident = FULL_CITATIONS.get(m.name, (m.authors, ""))
    year = m.date.split("-")[0]
    tail = f" {ident}." if ident else ""
    return f"{authors} ({year}). {m.paper}. *{m.venue}*.{tail} First public release {m.date}."


def references_page(lessons_dir: Path, milestones: Sequence[Milestone] = MILESTONES) -> str:
    """The back matter's references: the milestone papers in date order, then each lesson's own list."""
    out = ["# References", "",
           "The papers on the timeline, with every author, then the references each lesson gives at its "
           "end (they are copied from the lessons when the book is built, so they never drift apart).", "",
           "## The milestones", ""]
    out += [f"- {citation(m)}" for m in sorted(milestones, key=lambda m: m.date)]
    out += ["", "## By lesson", ""]
    for nb in lesson_files(lessons_dir):
        out += [f"### [{lesson_title(nb)}](lessons/{nb.name})", "",
                lesson_references(nb) or "*This lesson has no References section yet.*", ""]
    return "\n".join(out).rstrip() + "\n"


# -- results ---------------------------------------------------------------------------------------
def _label_key(labels: Any) -> tuple[int, float]:
    """Label counts in order: numbers ascending, then 'all'."""
    return (1, math.inf) if labels == "all" else (0, float(labels))


def _short_commit(commit: str) -> str:
    return commit[:7] + (" (uncommitted changes)" if commit.endswith("-dirty") else "")


def load_points(family_dir: Path) -> list[dict[str, Any]]:
    """Every grid point (a JSON with task, method, seed and error) in one results/<family>/ folder."""
    points = []
    for path in sorted(Path(family_dir).glob("*.json")):
        row = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(row, dict) and all(k in row for k in POINT_KEYS):
            row["_file"] = path.name
            points.append(row)
    return points


def _mean_std(errors: Sequence[float]) -> tuple[float, float | None]:
    # the sample standard deviation over seeds (ddof=1), as the lessons print it; none for one seed
    return statistics.fmean(errors), (statistics.stdev(errors) if len(errors) > 1 else None)


def grid_table(points: Sequence[dict[str, Any]]) -> tuple[str, int]:
    """Method × label count: mean ± std of the test error (%) over seeds. Returns (table, usual seed count)."""
    cells: dict[tuple[str, Any], list[float]] = defaultdict(list)
    for p in points:
        cells[(p["method"], p.get("labels", p.get("n_labels")))].append(float(p["error"]))
    methods = sorted({m for m, _ in cells})
    labels = sorted({n for _, n in cells}, key=_label_key)
    usual = Counter(len(v) for v in cells.values()).most_common(1)[0][0]
    rows = ["| method | " + " | ".join(str(n) for n in labels) + " |", "|---|" + "---:|" * len(labels)]
    for m in methods:
        row = []
        for n in labels:
            errors = cells.get((m, n))
            if not errors:
                row.append("–")
                continue
            mean, std = _mean_std(errors)
            # no-break spaces: a cell never wraps inside its number
            text = f"{100 * mean:.1f}" + (f"\u00a0±\u00a0{100 * std:.1f}" if std is not None else "")
            if len(errors) != usual:
                text += f"\u00a0(n={len(errors)})"
            row.append(text)
        rows.append(f"| `{m}` | " + " | ".join(row) + " |")
    return "\n".join(rows), usual


def provenance_line(rows: Iterable[dict[str, Any]]) -> str:
    """Who wrote these numbers: profiles, devices, commits (with point counts) and the time span."""
    provs = [r.get("provenance") or r for r in rows]
    commits = Counter(p.get("commit", "unknown") for p in provs)
    times = sorted(t for t in (p.get("time") for p in provs) if t)
    parts = [f"profile {', '.join(sorted({str(p.get('profile')) for p in provs}))}",
             f"device {', '.join(sorted({str(p.get('device')) for p in provs}))}",
             "commit " + ", ".join(f"`{_short_commit(c)}` ({n})" if len(commits) > 1 else f"`{_short_commit(c)}`"
                                   for c, n in commits.most_common())]
    if times:
        parts.append(f"written {times[0][:10]}" + (f" to {times[-1][:10]}" if times[-1][:10] != times[0][:10] else ""))
    return "; ".join(parts)


def family_page(family: str, points: Sequence[dict[str, Any]]) -> str:
    """One results page for results/<family>/: a table per (task, profile), its provenance below it."""
    out = [f"# Results: {family}", "",
           f"Every cached point under `results/{family}/` ({len(points)} files), as stored: one row per "
           "method, one column per number of labelled training examples. A cell is the test error in "
           "percent (lower is better; for a tagging task, per word): the mean over seeds ± their "
           "sample standard deviation. A dash: not run. The line under each table names the commits "
           "whose code wrote the points (with how many each), the profile and the device.", ""]
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for p in points:
        groups[(p["task"], (p.get("provenance") or {}).get("profile", "?"))].append(p)
    for (task, profile), rows in sorted(groups.items()):
        table, usual = grid_table(rows)
        out += [f"## {task} ({profile})", "", table, "",
                f"{len(rows)} points, {usual} seed{'s' if usual != 1 else ''} per cell unless marked n=…; "
                f"{provenance_line(rows)}.", ""]
    return "\n".join(out).rstrip() + "\n"


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, dict) and {"mean", "std"} <= set(v):
        return f"{_fmt(v['mean'])} ± {_fmt(v['std'])}"
    if isinstance(v, (dict, list)):
        text = json.dumps(v, ensure_ascii=False)
        return f"`{text[:80]}…`" if len(text) > 80 else f"`{text}`"
    return str(v).replace("|", "\\|")


def _records_table(records: Sequence[dict[str, Any]]) -> str:
    cols = [k for k in records[0] if all(not isinstance(r.get(k), (dict, list)) for r in records)]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in records]
    return "\n".join(lines)


def _key_value_table(d: dict[str, Any]) -> str:
    return "\n".join(["| key | value |", "|---|---|"] + [f"| {k} | {_fmt(v)} |" for k, v in d.items()])


def single_result_section(name: str, data: dict[str, Any]) -> str:
    """A results JSON that is not a grid: its summary, its tables of rows, its config, its provenance."""
    prov = data.get("provenance") or ({k: data[k] for k in ("profile", "device", "commit", "time") if k in data})
    out = [f"## {name}", "", f"`results/{name}.json`" + (f": experiment `{data['experiment']}`" if "experiment" in data
                                                          else "") + ".", ""]
    if isinstance(data.get("summary"), dict):
        out += ["Summary:", "", _key_value_table(data["summary"]), ""]
    for key, value in data.items():
        records = value.get("rows") if isinstance(value, dict) else value
        if isinstance(records, list) and records and all(isinstance(r, dict) for r in records):
            out += [f"`{key}`:", "", _records_table(records), ""]
    if isinstance(data.get("config"), dict):
        out += ["Settings:", "", _key_value_table(data["config"]), ""]
    if prov:
        out += [f"Written by {provenance_line([prov])}.", ""]
    return "\n".join(out)


def results_pages(results_dir: Path) -> dict[str, str]:
    """{"index": the results overview, "<family>": one page per results/<family>/ folder, "single": the rest}."""
    results_dir = Path(results_dir)
    pages: dict[str, str] = {}
    listed = []
    for folder in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        points = load_points(folder)
        if points:
            pages[folder.name] = family_page(folder.name, points)
            tasks = ", ".join(sorted({p["task"] for p in points}))
            listed.append(f"| [{folder.name}]({folder.name}.md) | {len(points)} | {tasks} | "
                          f"{len({p['method'] for p in points})} |")
    singles = sorted(p for p in results_dir.glob("*.json"))
    if singles:
        pages["single"] = "\n".join(
            ["# Results: single experiments", "",
             "The results files that are one experiment each rather than a grid of points, shown as "
             "stored: their summary, their tables, their settings and where they came from.", ""]
            + [single_result_section(p.stem, json.loads(p.read_text(encoding="utf-8"))) for p in singles])
    index = ["# Results", "",
             "What the lessons read when they show a number at once: the cached experiment results "
             "under `results/`, written by minilib's own code and stamped with the profile, device and "
             "commit that made them. These pages are rebuilt from the files each time the book is "
             "built; nothing on them is typed by hand.", "",
             "| grid | points | tasks | methods |", "|---|---:|---|---:|", *listed, ""]
    if singles:
        index += [f"[Single experiments](single.md): " + ", ".join(f"`{p.name}`" for p in singles) + ".", ""]
    index += ["```{toctree}", ":hidden:", "", *sorted(k for k in pages), "```", ""]
    pages["index"] = "\n".join(index)
    return pages


# -- the teacher's guide ---------------------------------------------------------------------------
# One page per lesson, read from the notebook when the book is built, so a lesson added later gets
# one too: the 50-minute path the lesson marks with ◷ (a heading, or an exercise's bold title), each
# step's cells with the run time measured when the notebook was last executed (each code cell's
# `execution` metadata: iopub.execute_input to shell.execute_reply), the widget a step shows, and the
# prediction to ask the class for before the reveal — the lesson's own "predict …" or question where
# it has one, else the one book/guide/predictions.md gives for that step.
PATH_MARK = "◷"              # how a lesson marks a step of its classroom path
CLASS_MINUTES = 50           # a class, unless the lesson's plan names another length ("50-minute")
SLOW_CELL_S = 60.0           # a cell that runs longer than this is run before class
PREDICTIONS = Path(__file__).resolve().parent / "guide" / "predictions.md"
WIDGETS_SOURCE = Path(__file__).resolve().parents[1] / "minilab" / "widgets.py"
MIN_STEP_MINUTES = 3         # the least time a step gets in the suggested plan
_OFF_PATH = re.compile(r"off\s+the\s+classroom\s+path", re.I)
_PREDICT = re.compile(r"\bpredict\b(?:\s+(?:first|before\s+\w+(?:\s+\w+)?))?\s*[:—]"
                      r"|\bpredict\s+(?:which|whether|what|how|if)\b", re.I)
_EXERCISE = re.compile(r"^\*\*(\d+)\.(.*?)\*\*(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


@dataclass
class CodeCell:
    """A code cell as the guide shows it."""
    index: int                  # position among the notebook's cells
    count: int | None           # its execution count: the [n] JupyterLab shows beside it after Run All
    source: str
    seconds: float | None       # measured run time (None: the notebook carries no timing)
    shows: list[str]            # what its outputs are: "a plot", "a widget", "printed results", …
    off_path: bool = False      # the lesson says this cell is off the classroom path

    @property
    def label(self) -> str:
        return f"[{self.count}]" if self.count is not None else f"cell {self.index}"

    @property
    def first_line(self) -> str:
        line = next((x for x in self.source.splitlines() if x.strip() and not x.lstrip().startswith("#")), "")
        line = line.split("  # ")[0].rstrip().replace("`", "'")   # no trailing comment; safe in `code`
        return line if len(line) <= 70 else line[:67] + "…"

    @property
    def is_result(self) -> bool:
        """A cell whose output is something to reveal (not a listing of minilib's code)."""
        return "minilib's code" not in self.shows and \
            any(s in ("a plot", "a widget", "printed results", "a table") for s in self.shows)


@dataclass
class Section:
    """A heading's section of a lesson, or one exercise, with its text and code cells."""
    title: str                  # as the guide names it: the heading without ◷; "Exercise 1: …"
    level: int                  # heading level; exercises are below every heading
    anchor: str                 # the heading's anchor on the lesson's page ("" for none)
    marked: bool                # carries the path mark ◷
    number: str | None          # "1", "4b", "exercise 5": how the lesson's plan refers to it
    texts: list[tuple[int, str]] = field(default_factory=list)   # (cell index, markdown)
    cells: list[CodeCell] = field(default_factory=list)


@dataclass
class Step:
    """One step of the classroom path."""
    title: str
    anchor: str
    number: str | None
    texts: list[tuple[int, str]]
    cells: list[CodeCell]                    # shown in class
    skipped: list[CodeCell]                  # in the section, but off the path by the lesson's word
    prediction: str | None = None
    prediction_from: str = ""                # "lesson" | "guide"
    reveal: CodeCell | None = None           # the cell whose output answers the prediction
    widgets: list[tuple[str, str, bool]] = field(default_factory=list)   # (name, what it is, trains live)
    minutes: int = 0
    minutes_stated: int | None = None        # the lesson's own minutes for this step

    @property
    def seconds(self) -> float:
        return sum(c.seconds or 0.0 for c in self.cells)

    @property
    def words(self) -> int:
        return sum(len(_plain(t).split()) for _, t in self.texts)


@dataclass
class Guide:
    """A lesson's classroom plan, everything read from its notebook (and book/guide/predictions.md)."""
    notebook: Path
    title: str
    plan: str                                # the lesson's own words about its path ("" if none)
    class_minutes: int
    proposed: bool                           # the steps are the guide's proposal: the lesson marks none
    setup: CodeCell | None
    steps: list[Step]
    needed: list[tuple[CodeCell, str, list[str]]]   # off-path cells the path reads from: (cell, section, names)
    cells: list[CodeCell]                    # every code cell of the lesson
    profile: str | None                      # the profile its setup cell printed
    executed: str                            # the date(s) it was executed

    @property
    def path_cells(self) -> list[CodeCell]:
        return ([self.setup] if self.setup else []) + [c for s in self.steps for c in s.cells] + \
            [c for c, _, _ in self.needed]


def _timing(cell: dict) -> tuple[float | None, str | None]:
    """(seconds the cell ran, the ISO time it started) from the execution metadata Jupyter stores."""
    import datetime as dt

    e = (cell.get("metadata") or {}).get("execution") or {}
    start, end = e.get("iopub.execute_input"), e.get("shell.execute_reply")
    if not (start and end):
        return None, None
    t0, t1 = (dt.datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (start, end))
    return max((t1 - t0).total_seconds(), 0.0), start


def _shows(cell: dict) -> list[str]:
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    listing = "viz.source(" in source or "getsource(" in source
    shows = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        kind = ("a widget" if "application/vnd.jupyter.widget-view+json" in data else
                "a plot" if "image/png" in data else
                ("minilib's code" if listing else "a table") if "text/markdown" in data else
                "a progress bar" if "text/html" in data else
                "printed results" if out.get("name") == "stdout" else
                "an error" if out.get("output_type") == "error" else None)
        if kind and kind not in shows:
            shows.append(kind)
    return shows


def _plain(markdown: str) -> str:
    """Markdown as prose: no code blocks, display math, tables, tags, link targets or emphasis marks."""
    text = re.sub(r"```.*?```|\$\$.*?\$\$", " ", markdown, flags=re.S)
    lines = [re.sub(r"^\s*>\s?", "", x) for x in text.splitlines()]
    lines = [x for x in lines if not x.lstrip().startswith(("|", "#")) and not x.startswith("    ")]
    text = " ".join(lines)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("**", "").replace("`", "")
    text = re.sub(r"(?<!\w)\*(?!\s)([^*]+?)\*(?!\w)", r"\1", text)
    return " ".join(text.split())


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.?!])\s+(?=[A-Z\"“(0-9§])", text) if s.strip()]


def lesson_prediction(markdown: str) -> str | None:
    """The prediction a lesson's text asks for: its "predict: …" sentence, else a question of six
    words or more (not one inside brackets), else None."""
    sentences = _sentences(_plain(markdown))
    for s in sentences:
        if _PREDICT.search(s):
            return s
    for s in sentences:
        if s.endswith("?") and len(s.split()) >= 6 and s.count("(") == s.count(")"):
            return s
    return None


def _slug(title: str) -> str:
    """The anchor MyST gives a heading (myst_heading_anchors; GitHub style, myst_parser/slugs.py)."""
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title).replace("**", "").replace("*", "").replace("`", "")
    return re.sub(r"[^\w\u4e00-\u9fff\- ]", "", title.lower().replace(" ", "-"))


def _step_title(heading: str) -> str:
    return " ".join(heading.replace(PATH_MARK, " ").split())


def lesson_sections(notebook: Path) -> tuple[list[Section], list[CodeCell], str]:
    """The lesson cut into sections at its headings (and its exercises at their bold numbers), every
    code cell, and the date(s) it was executed."""
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    sections: list[Section] = []
    cells: list[CodeCell] = []
    slugs: set[str] = set()
    starts: list[str] = []
    in_exercises = off_path = False
    for i, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "code":
            seconds, start = _timing(cell)
            if start:
                starts.append(start)
            code = CodeCell(i, cell.get("execution_count"), source, seconds, _shows(cell), off_path)
            cells.append(code)
            if sections:
                sections[-1].cells.append(code)
            continue
        if cell["cell_type"] != "markdown":
            continue
        off_path = bool(_OFF_PATH.search(source))   # holds for the code cells up to the next markdown
        part: list[str] = []
        fence = False

        def flush():
            if part and sections:
                sections[-1].texts.append((i, "\n".join(part)))
            part.clear()

        for line in source.splitlines():
            fence ^= line.lstrip().startswith("```")
            heading = None if fence else _HEADING.match(line)
            exercise = None if fence or not in_exercises else _EXERCISE.match(line)
            if heading:
                flush()
                level, text = len(heading.group(1)), heading.group(2)
                slug = ""
                if level <= 3:   # book/conf.py: myst_heading_anchors = 3; MyST numbers repeats -1, -2, …
                    slug, n = _slug(text), 1
                    while slug in slugs:
                        slug, n = f"{_slug(text)}-{n}", n + 1
                    slugs.add(slug)
                number = re.match(r"(\d+[a-z]?)\.\s", _step_title(text) + " ")   # "4b. Diagnosis" → 4b
                sections.append(Section(_step_title(text), level, slug, PATH_MARK in text,
                                        number.group(1) if number else None))
                in_exercises = level <= 2 and _step_title(text).lower() == "exercises" or \
                    (in_exercises and level > 2)
            elif exercise:
                flush()
                n, title, rest = exercise.groups()
                name = _step_title(title).strip(" .") or (_sentences(_plain(rest)) or [""])[0].rstrip(".")
                parent = next((s for s in reversed(sections) if s.level <= 6), None)
                sections.append(Section(f"Exercise {n}: {name}", 9, parent.anchor if parent else "",
                                        PATH_MARK in title, f"exercise {n}"))
            part.append(line)
        flush()
    starts.sort()
    executed = "" if not starts else starts[0][:10] + ("" if starts[-1][:10] == starts[0][:10]
                                                       else f" to {starts[-1][:10]}")
    return sections, cells, executed


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell binds at the top level, names it reads without binding them anywhere)."""
    import ast
    import builtins

    code = "\n".join("" if x.lstrip().startswith(("%", "!")) else x for x in source.splitlines())
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set(), set()
    top: set[str] = set()

    def bind(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            top.add(node.name)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            top.update((a.asname or a.name).split(".")[0] for a in node.names)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            top.add(node.id)
        for child in ast.iter_child_nodes(node):
            bind(child)

    bind(tree)
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    local |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)} | top
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return top, read - local - set(dir(builtins))


def _needed_off_path(cells: list[CodeCell], on_path: set[int], section_of: dict[int, str]):
    """The cells off the path that the path reads names from (and what those read, in turn)."""
    names = {c.index: _names(c.source) for c in cells}
    needed: dict[int, set[str]] = {}
    todo = sorted(on_path)
    while todo:
        i = todo.pop(0)
        for name in sorted(names[i][1]):
            provider = next((c.index for c in reversed(cells) if c.index < i and name in names[c.index][0]), None)
            if provider is None or provider in on_path:
                continue
            if provider not in needed:
                todo.append(provider)
            needed.setdefault(provider, set()).add(name)
    by_index = {c.index: c for c in cells}
    return [(by_index[i], section_of.get(i, ""), sorted(v)) for i, v in sorted(needed.items())]


def _widget_catalogue(source: Path = WIDGETS_SOURCE) -> dict[str, tuple[str, bool]]:
    """{name: (first sentence of its docstring, trains live)} for every panel minilab.widgets makes,
    read from the file (the book is a lower layer than the widgets: it never imports them)."""
    import ast

    text = source.read_text(encoding="utf-8")
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node) and \
                (node.name == "Panel" or node.name.endswith("_explorer")):
            doc = " ".join(ast.get_docstring(node).split())
            parts = [x for x in re.split(r"(?<=[.:])\s", doc) if not re.fullmatch(r"Chapter \d+[.:]", x)]
            first = (parts or [doc])[0].rstrip(":.")
            out[node.name] = (first, "LiveTraining(" in (ast.get_source_segment(text, node) or ""))
    return out


def guide_predictions(path: Path = PREDICTIONS) -> dict[str, dict[str, str]]:
    """{lesson file stem: {step title: the prediction to ask for}} from book/guide/predictions.md:
    `## <lesson stem>`, then `### <step title>` and the prediction as a paragraph under it."""
    out: dict[str, dict[str, str]] = {}
    if not Path(path).is_file():
        return out
    lesson = step = None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            lesson, step = line[3:].strip(), None
            out.setdefault(lesson, {})
        elif line.startswith("### ") and lesson:
            step = line[4:].strip()
            out[lesson][step] = ""
        elif step and lesson:
            out[lesson][step] = " ".join(f"{out[lesson][step]} {line}".split())
    return out


def _share_minutes(steps: list[Step], total: int) -> None:
    """Each step's minutes: the lesson's own where it states them; the rest of the class shared among
    the other steps, MIN_STEP_MINUTES each and the remainder in proportion to their text (what the
    teacher explains), rounded to whole minutes that add up."""
    stated = sum(s.minutes_stated or 0 for s in steps)
    free = [s for s in steps if s.minutes_stated is None]
    left = max(total - stated, 0)
    floor = MIN_STEP_MINUTES if left >= MIN_STEP_MINUTES * len(free) else 0
    words = sum(max(s.words, 1) for s in free)
    shares = [floor + (left - floor * len(free)) * max(s.words, 1) / words for s in free] if free else []
    whole = [math.floor(x) for x in shares]
    for k in sorted(range(len(free)), key=lambda k: whole[k] - shares[k])[:left - sum(whole)]:
        whole[k] += 1   # largest remainders first
    for s in steps:
        s.minutes = s.minutes_stated if s.minutes_stated is not None else whole[free.index(s)]


def teachers_guide(notebook: Path, predictions: dict[str, dict[str, str]] | None = None,
                   widget_info: dict[str, tuple[str, bool]] | None = None) -> Guide:
    """A lesson's classroom plan, read from its notebook."""
    notebook = Path(notebook)
    predictions = guide_predictions() if predictions is None else predictions
    widget_info = _widget_catalogue() if widget_info is None else widget_info
    ours = predictions.get(notebook.stem, {})
    sections, cells, executed = lesson_sections(notebook)
    intro = sections[0].texts[0][1] if sections and sections[0].texts else ""
    plan = next((p for p in re.split(r"\n\s*>?\s*\n", intro) if PATH_MARK in p), "")
    plan = "\n".join(re.sub(r"^\s*>\s?", "", x) for x in plan.splitlines()).strip()
    length = re.search(r"(\d+)[- ]minute", plan)
    stated = {m.group(1): int(m.group(3)) for m in re.finditer(r"§(\w+)\s*\(([^()]*?)(\d+)\s*min\)", plan)}
    stated |= {f"exercise {m.group(1)}": int(m.group(2))
               for m in re.finditer(r"exercise\s+(\d+)[^()§]*?\((\d+)\s*min\)", plan, re.I)}

    proposed = not any(s.marked for s in sections)
    chosen = [s for s in sections if (s.title in ours if proposed else s.marked)]
    setup = cells[0] if cells else None
    steps = []
    for s in chosen:
        k = sections.index(s)
        members = [s]
        for t in sections[k + 1:]:   # its subsections, up to the next heading at its level or above
            if t.level <= s.level or (t.marked and not proposed):
                break
            members.append(t)
        texts = [x for m in members for x in m.texts]
        shown = [c for m in members for c in m.cells if c is not setup]
        step = Step(s.title, s.anchor, s.number, texts, [c for c in shown if not c.off_path],
                    [c for c in shown if c.off_path], minutes_stated=stated.get(s.number or ""))
        own = next(((i, p) for i, t in texts if (p := lesson_prediction(t))), None)
        if s.title in ours and ours[s.title]:
            step.prediction, step.prediction_from = ours[s.title], "guide"
        elif own:
            step.prediction, step.prediction_from = own[1], "lesson"
        step.reveal = next((c for c in step.cells if c.is_result), None)   # ask before anything is shown
        for c in (c for c in step.cells if "a widget" in c.shows):
            name = next((n for n in re.findall(r"widgets\.(\w+)\(", c.source) if n in widget_info), None)
            if name and name != "Panel":
                step.widgets.append((name, *widget_info[name]))
            elif "widgets.Panel(" in c.source:
                step.widgets.append(("Panel", "a panel the lesson builds in this cell (minilab.widgets.Panel)", False))
            else:
                step.widgets.append(("widget", "a widget this cell builds", False))
        steps.append(step)
    _share_minutes(steps, int(length.group(1)) if length else CLASS_MINUTES)

    on_path = {c.index for c in ([setup] if setup else []) + [c for s in steps for c in s.cells]}
    section_of = {c.index: s.title for s in sections for c in s.cells}
    needed = _needed_off_path(cells, on_path, section_of)
    profile = (provenance.saved_record(notebook) or {}).get("profile")    # what the lesson's last cell recorded
    if profile is None and setup is not None:
        nb = json.loads(notebook.read_text(encoding="utf-8"))
        out = "".join("".join(o.get("text", "")) for o in nb["cells"][setup.index].get("outputs", [])
                      if o.get("name") == "stdout")
        m = re.search(r"profile\s*[=:]\s*(\w+)", out)
        profile = m.group(1) if m else None
    return Guide(notebook, lesson_title(notebook), plan, int(length.group(1)) if length else CLASS_MINUTES,
                 proposed and bool(steps), setup, steps, needed, cells, profile, executed)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "not timed"
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def _cell_list(cells: Sequence[CodeCell]) -> str:
    return ", ".join(c.label for c in cells) or "–"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines())


def teachers_guide_page(guide: Guide, lesson_link: str) -> str:
    """One lesson's page of the teacher's guide (MyST Markdown). `lesson_link`: the lesson's page
    relative to this one."""
    g = guide
    at_profile = f"at the `{g.profile}` profile" if g.profile else "when it was last executed"
    total = sum(c.seconds or 0.0 for c in g.cells)
    timed = all(c.seconds is not None for c in g.cells)
    out = [f"# {g.title}", "",
           f"*Teacher's guide* · [open the lesson]({lesson_link}) · generated from the notebook when the "
           f"book is built: the path, cells, widgets and times on this page are read from it, never typed. "
           f"A cell is named by the number JupyterLab shows beside it after *Run All* ([n]).", ""]
    if g.plan:
        out += ["**The lesson's plan**, in its own words:", "", _quote(g.plan), ""]
    elif g.proposed:
        out += ["The lesson marks no ◷ path of its own; the steps below are this guide's proposal "
                "(`book/guide/predictions.md`).", ""]
    if not g.steps:
        out += ["The lesson marks no classroom path yet (a ◷ in a heading or an exercise's title), so this "
                "guide has no plan for it; the measured run time of every cell is below.", ""]

    out += ["## Before class", "",
            "- Start JupyterLab in classroom mode: `make classroom` (or `MINILIB_CLASSROOM=1 jupyter lab "
            "lessons/`). Every widget then answers from the shipped caches at once; a *train this point* "
            "button stays off until you tick *allow live training* in its panel.",
            f"- Open the lesson and press *Run All* before the class arrives: {at_profile} "
            f"the whole lesson ran in {_duration(total)} here ({len(g.cells)} code cells"
            + (f", executed {g.executed}" if g.executed else "") + (")" if timed else "; some cells untimed)")
            + ". Timings are from the committed notebook, on the machine that executed it."]
    if g.setup is not None:
        out.append(f"- The setup cell {g.setup.label} (`{g.setup.first_line}`) ran in {_duration(g.setup.seconds)} "
                   "and prints the profile and device.")
    needed = {c.index for c, _, _ in g.needed}
    slow = [c for c in g.path_cells if (c.seconds or 0) > SLOW_CELL_S and c.index not in needed]
    if slow:
        out.append("- Cells on the path that take longer than a minute — they must have run before you "
                   "start: " + "; ".join(f"{c.label} `{c.first_line}` ({_duration(c.seconds)})" for c in slow) + ".")
    if g.needed:
        out.append("- Off the path, but the path reads names they define (found by reading the code), so "
                   "they must run too: " + "; ".join(
                       f"{c.label} in *{section}* ({', '.join(f'`{n}`' for n in names)}; {_duration(c.seconds)})"
                       for c, section, names in g.needed) + ".")
    skipped = [c for s in g.steps for c in s.skipped]
    if skipped:
        out.append("- Inside path sections but off the path by the lesson's own word (skip them in class): "
                   + "; ".join(f"{c.label} `{c.first_line}` ({_duration(c.seconds)})" for c in skipped) + ".")
    out.append("")

    if g.steps:
        path_seconds = sum(c.seconds or 0.0 for c in g.path_cells)
        out += [f"## The {g.class_minutes}-minute plan", "",
                f"Minutes are a suggestion: the lesson's own where its plan gives them, otherwise the "
                f"{g.class_minutes} minutes shared among the steps (at least {MIN_STEP_MINUTES} each, the rest "
                f"by the length of each step's text). *Run time* is what the step's cells took when the "
                f"notebook was executed{f' at `{g.profile}`' if g.profile else ''}; the path's cells, with the setup and the cells they "
                f"need, ran in {_duration(path_seconds)}.", "",
                "| minutes | step | cells | widget | run time |", "|---|---|---|---|---:|"]
        start = 0
        for s in g.steps:
            link = f"[{s.title}]({lesson_link}#{s.anchor})" if s.anchor else s.title
            widget = ", ".join(f"`{name}`" for name, _, _ in s.widgets) or "–"
            out.append(f"| {start}–{start + s.minutes} | {link} | {_cell_list(s.cells)} | {widget} | "
                       f"{_duration(s.seconds)} |")
            start += s.minutes
        out += ["", "## Step by step", ""]
        for k, s in enumerate(g.steps, 1):
            out += [f"### Step {k} · {s.title} ({s.minutes} min)", ""]
            if s.cells:
                out.append("- **Show:** " + "; ".join(
                    f"{c.label} `{c.first_line}` — {', '.join(c.shows) or 'no output'}, {_duration(c.seconds)}"
                    for c in s.cells) + ".")
            else:
                out.append("- **Show:** the text of this step; it has no code cell.")
            if s.prediction:
                where = f" before you show {s.reveal.label}" if s.reveal else ""
                source = "the lesson's words" if s.prediction_from == "lesson" else "this guide"
                out.append(f"- **Ask the class to predict{where}:** {s.prediction} *({source})*")
            else:
                out.append("- **Ask the class to predict:** the lesson asks no question here and this guide "
                           "has none yet — ask what the next cell will show before you run it.")
            for name, what, live in s.widgets:
                line = f"- **Widget:** `{name}` — {what}."
                if live:
                    line += (" In classroom mode it shows the cached grid at once; *train this point* is off "
                             "until you tick *allow live training* (it then trains at the profile's sizes, "
                             "minutes on a CPU).")
                out.append(line)
            if s.minutes_stated is not None:
                out.append(f"- **Time:** {s.minutes_stated} min, as the lesson's plan says; the cells ran in "
                           f"{_duration(s.seconds)}.")
            else:
                out.append(f"- **Time:** about {s.minutes} min; the cells ran in {_duration(s.seconds)}.")
            out.append("")

    out += ["## Every cell's run time", "",
            "Measured when the notebook was last executed ("
            + ", ".join(x for x in (f"`{g.profile}` profile" if g.profile else "", g.executed) if x)
            + f"); {PATH_MARK} marks a cell on the path.", "",
            "| cell | first line | shows | run time | |", "|---|---|---|---:|---|"]
    on_path = {c.index for c in g.path_cells}
    for c in g.cells:
        first = c.first_line.replace("|", "\\|")
        out.append(f"| {c.label} | `{first}` | {', '.join(c.shows) or '–'} | {_duration(c.seconds)} | "
                   f"{PATH_MARK if c.index in on_path else ''} |")
    return "\n".join(out).rstrip() + "\n"


def teachers_guide_pages(lessons_dir: Path, predictions_path: Path = PREDICTIONS) -> dict[str, str]:
    """{"index": the guide's front page, "<lesson stem>": one page per lesson} (the pages live in
    teachers-guide/, beside lessons/)."""
    predictions = guide_predictions(predictions_path)
    widget_info = _widget_catalogue()
    pages, rows = {}, []
    for nb in lesson_files(lessons_dir):
        g = teachers_guide(nb, predictions, widget_info)
        pages[nb.stem] = teachers_guide_page(g, f"../lessons/{nb.name}")
        path_seconds = sum(c.seconds or 0.0 for c in g.path_cells)
        rows.append(f"| [{g.title}]({nb.stem}.md) | {len(g.steps) or '–'}"
                    f"{' (proposed)' if g.proposed else ''} | "
                    f"{', '.join(sorted({f'`{n}`' for s in g.steps for n, _, _ in s.widgets})) or '–'} | "
                    f"{_duration(path_seconds) if g.steps else '–'} | "
                    f"{_duration(sum(c.seconds or 0.0 for c in g.cells))} |")
    pages["index"] = "\n".join([
        "# Teacher's guide", "",
        "A plan for teaching each lesson in one class: which sections to show, which cell and which "
        "widget, what the class should predict before each reveal, and how long each part takes. Each "
        "page is generated from the lesson's notebook when the book is built — the path the lesson marks "
        "with ◷, its cells and their run times as measured when the notebook was executed — so a new "
        "lesson gets its page, and a changed lesson a changed page. The predictions are the lesson's own "
        "questions where it asks one, otherwise those in `book/guide/predictions.md`.", "",
        "## Classroom mode", "",
        "```bash",
        "make classroom              # or: MINILIB_CLASSROOM=1 jupyter lab lessons/",
        "```", "",
        "opens the lessons as `make lab` does (also as root, in a container or on a lab machine), with "
        "every widget answering from the shipped caches at once: label sliders offer the cached counts, "
        "the corpus explorer loads its corpora while its cell runs. Live training is opt-in: a *train "
        "this point* button stays off until you tick *allow live training* in its panel. Press *Run "
        "All* before class; the pages say which cells take minutes.", "",
        "| lesson | steps | widgets on the path | path run time | whole lesson |",
        "|---|---:|---|---:|---:|", *rows, "",
        "```{toctree}", ":hidden:", "", *[nb.stem for nb in lesson_files(lessons_dir)], "```", ""])
    return pages
