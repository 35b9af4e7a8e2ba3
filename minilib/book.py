"""The book's generated pages: the timeline table, the references and the results pages.

Everything here is read from what the repository already holds, so nothing is typed twice:
the milestones from `story.MILESTONES`, each lesson's own "References" section from its
notebook, and every cached result under results/ (a point of a grid: one JSON per task,
method, label count, seed and profile; or a single experiment's JSON). The functions return
Markdown (MyST) text; book/build.py writes it beside the lessons and runs Sphinx.

    from minilib import book
    book.references_page(Path("lessons"))
    book.results_pages(Path("results"))   # {"index": ..., "sample-efficiency": ..., ...}
"""
from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Sequence

from minilib.story import MILESTONES, Milestone

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
