"""The real sources: counts, shapes, split determinism and disjointness, and the leakage guard.

Uses the real cache ($MINILIB_DATA or ~/.cache/minilib), fetching what is missing
(`python -m minilib data fetch --all` does it up front). The first run also
builds the processed forms (about a minute); later runs read them back.
"""
from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from minilib import data
from minilab import inventory
from minilib.data import corpora, labelled, wordnet
from minilib.data.splits import split_of
from minilib.data.words import normalize

pytestmark = pytest.mark.data


# ----------------------------------------------------------------------------- fetch

def test_real_fetch_is_verified_and_idempotent(monkeypatch):
    from minilab import fetching as sources

    root = sources.fetch("brown")
    marker = (root / ".complete.json").read_text()
    assert data.SOURCES["brown"].artifact.sha256 in marker
    calls = []
    monkeypatch.setattr(sources, "_obtain", lambda *a, **k: calls.append(a))
    assert sources.fetch("brown") == root and calls == []      # the cached copy: no client was run


# ----------------------------------------------------------------------------- Brown

def test_brown_tagged():
    sents = data.brown_tagged()
    assert len({s.file_id for s in sents}) == 500
    assert len({s.category for s in sents}) == 15
    assert sum(len(s.words) for s in sents) == 1_161_192          # the corpus' documented token count
    assert all(len(s.words) == len(s.tags) == len(s.utags) > 0 for s in sents)
    assert set(u for s in sents for u in s.utags) <= set(data.UNIVERSAL_TAGS)
    by_split = {s: data.brown_tagged(s) for s in ("train", "valid", "test")}
    assert sum(map(len, by_split.values())) == len(sents)
    test_files = {s.file_id for s in by_split["test"]}
    assert test_files and test_files == {d.doc_id for d in data.pretraining_corpus("test", sources=("brown",))}
    first = sents[0]
    assert first.file_id == "ca01" and first.category == "news"
    assert first.words[:3] == ("The", "Fulton", "County") and first.utags[:3] == ("DET", "NOUN", "NOUN")


# ----------------------------------------------------------------------------- pretraining corpus

@pytest.fixture(scope="module")
def splits():
    return {s: data.pretraining_corpus(s) for s in ("train", "valid", "test")}


def test_pretraining_splits_are_disjoint_by_document(splits):
    keys = {s: [d.key for d in docs] for s, docs in splits.items()}
    for s, k in keys.items():
        assert len(k) == len(set(k)), f"duplicate documents in {s}"
        assert all(split_of(key) == s for key in k)
    assert not set(keys["train"]) & set(keys["valid"])
    assert not set(keys["train"]) & set(keys["test"])
    assert not set(keys["valid"]) & set(keys["test"])
    # every document is in exactly one split
    total = sum(len(corpora.source_documents(n)) for n in data.DEFAULT_SOURCES)
    assert sum(len(k) for k in keys.values()) == total


def test_pretraining_corpus_size_and_mix(splits):
    words = {s: sum(d.num_words for d in docs) for s, docs in splits.items()}
    assert 6_000_000 < sum(words.values()) < 8_000_000             # docs/design.md §1: ~7M words
    assert 0.85 < words["train"] / sum(words.values()) < 0.95
    assert {d.source for d in splits["valid"]} == set(data.DEFAULT_SOURCES)
    assert all(d.text.strip() and d.doc_id for docs in splits.values() for d in docs)


def test_pretraining_corpus_is_deterministic_and_max_words_is_a_prefix(splits):
    again = data.pretraining_corpus("valid")
    assert [d.key for d in again] == [d.key for d in splits["valid"]]
    small = data.pretraining_corpus("train", max_words=50_000)
    assert sum(d.num_words for d in small) == 50_000
    assert [d.key for d in small] == [d.key for d in splits["train"][:len(small)]]
    assert small[-1].text == splits["train"][len(small) - 1].text[:len(small[-1].text)]
    news = data.pretraining_corpus("test", sources=("news",))
    assert news and {d.source for d in news} == {"news"}


def test_source_documents():
    counts = {n: len(corpora.source_documents(n)) for n in data.DEFAULT_SOURCES}
    assert counts["brown"] == 500 and counts["sotu"] == 233
    assert counts["moby"] == 138                                  # 135 chapters, etymology, extracts, epilogue
    assert 3_700 < counts["news"] <= 3_824                        # empty and duplicate articles dropped
    assert 300 < counts["wiki"] < 420                             # ~106 articles + 300 Lee stories
    news = corpora.source_documents("news")
    assert len({normalize(d.text) for d in news}) == len(news)
    wiki = " ".join(d.text for d in corpora.source_documents("wiki"))
    assert wiki.count("{{") + wiki.count("[[") + wiki.count("<ref") < 10      # markup gone, bar a little residue


# ----------------------------------------------------------------------------- labelled tasks

def test_rt_sentiment():
    train, test = data.rt_sentiment("train"), data.rt_sentiment("test")
    n = len(train) + len(test)
    assert 10_500 < n <= 10_605 - 37                               # 37 sentences are rated exactly 0
    assert 0.18 < len(test) / n < 0.22
    for r in train + test:
        assert r.label == int(r.score > 0) and r.score != 0 and -4 <= r.score <= 4
    assert 0.45 < np.mean([r.label for r in train]) < 0.55
    assert data.rt_sentiment("test") == test
    with pytest.raises(ValueError):
        data.rt_sentiment("valid")


def test_rt_fresh_and_movie_lm_text():
    raw = data.rt_fresh(exclude_rt_test=False)
    assert len(raw.reviews) == 12_808 and {r.label for r in raw.reviews} == {0, 1}
    assert 1_000 < len(raw.plots) <= 1_097
    safe = data.rt_fresh()
    assert 10_000 < len(safe.reviews) < len(raw.reviews)
    lm = data.movie_lm_text()
    assert 10_000 < len(lm) and len({normalize(t) for t in lm}) == len(lm)


def test_trec6():
    train, test = data.trec6("train"), data.trec6("test")
    assert len(test) == 500
    assert 4_800 < len(train) < 5_381
    assert {q.coarse for q in train + test} == set(labelled.TREC_COARSE)
    assert len({q.fine for q in train + test}) == 50
    assert all(q.fine.startswith(q.coarse + ":") for q in train + test)
    assert not {normalize(q.text) for q in train} & {normalize(q.text) for q in test}


def test_sms_spam_test_messages_are_neither_trained_on_nor_pretrained_on(splits):
    train, test, read = (data.sms_spam(s) for s in ("train", "test", "read_in_pretraining"))
    assert 3_000 < len(train) and 800 < len(test) and {r.label for r in train} == {0, 1} == {r.label for r in test}
    assert 0.08 < sum(r.label for r in test) / len(test) < 0.18          # spam is the rare class
    guard = data.LeakGuard(r.text for r in test)
    assert not [r.text for r, bad in zip(train, guard.mask([r.text for r in train])) if bad]
    # the check is real: nlp-corpus (mixed) holds NUS SMS messages, and those left the test split
    assert len(read) >= 10 and not {normalize(r.text) for r in read} & {normalize(r.text) for r in test}
    lines = [normalize(line) for d in splits["train"] + splits["valid"] + splits["test"] for line in d.text.split("\n")]
    joined, lines = "".join(lines), set(lines)
    assert all(normalize(r.text) in lines or normalize(r.text) in joined for r in read)
    assert not [r.text for r in test if normalize(r.text) in lines]


def test_no_test_item_leaks_into_training_text(splits):
    """The leakage guard: no RT test sentence or TREC test question is trained on, anywhere."""
    held_out = data.held_out_texts()
    protected = {normalize(t) for t in held_out}
    guard = data.LeakGuard(held_out)
    assert len(protected) > 2_500

    def leaks(texts) -> list[str]:
        texts = list(texts)
        exact = [t for t in texts if normalize(t) in protected]
        return exact or [t for t, bad in zip(texts, guard.mask(texts)) if bad]

    assert not leaks(r.text for r in data.rt_sentiment("train"))
    assert not leaks(q.text for q in data.trec6("train"))
    assert not leaks(data.movie_lm_text())
    fresh = data.rt_fresh()
    assert not leaks([r.text for r in fresh.reviews] + fresh.plots)
    # the pretraining corpus, sentence by sentence (mixed is one sentence per line)
    train_sentences = [s for d in splits["train"] for s in corpora.split_sentences(d.text)]
    assert not [s for s in train_sentences if normalize(s) in protected]
    assert not leaks(s for d in splits["train"] if d.source == "mixed" for s in d.text.split("\n"))


def test_guard_would_catch_real_overlap():
    """A can-fail check of the guard itself: without it, rt-fresh holds most RT test sentences."""
    test = data.rt_sentiment("test")
    raw = data.rt_fresh(exclude_rt_test=False)
    overlap = {normalize(r.text) for r in test} & {normalize(r.text) for r in raw.reviews}
    assert len(overlap) > 0.9 * len(test)


# ----------------------------------------------------------------------------- lexical

def test_word_similarity_and_analogies():
    ws, sl = data.wordsim353(), data.simlex999()
    assert len(ws) == 353 and len(sl) == 999
    assert ws[0] == ("love", "sex", 6.77)
    assert all(0 <= p.score <= 10 for p in ws + sl)
    qs = data.google_analogies()
    assert len(qs) == 19_544
    sections = Counter(q.section for q in qs)
    assert len(sections) == 14
    assert {q.section for q in qs if q.semantic} == set(
        ["capital-common-countries", "capital-world", "currency", "city-in-state", "family"])
    assert all(q.section.startswith("gram") for q in qs if not q.semantic)
    assert sum(q.semantic for q in qs) == 8_869
    assert qs[0] == ("capital-common-countries", "athens", "greece", "baghdad", "iraq", True)


def test_glove50():
    words, vectors = data.glove50()
    assert len(words) == 400_000 and vectors.shape == (400_000, 50) and vectors.dtype == np.float32
    assert words[:4] == ["the", ",", ".", "of"] and len(set(words)) == len(words)
    w, v = data.glove50(max_words=1000)
    assert len(w) == 1000 and v.shape == (1000, 50) and np.array_equal(v, vectors[:1000])
    idx = {x: i for i, x in enumerate(words)}
    cos = lambda a, b: float(vectors[a] @ vectors[b] / np.linalg.norm(vectors[a]) / np.linalg.norm(vectors[b]))
    assert cos(idx["king"], idx["queen"]) > cos(idx["king"], idx["banana"])


def test_wordnet():
    bank = data.wordnet_senses("bank", pos="n")
    assert bank[0].name == "bank.n.01" and "sloping land" in bank[0].gloss
    assert any("cashed a check" in e for s in bank for e in s.examples)
    assert all(s.pos == "n" for s in bank) and len(data.wordnet_senses("bank")) > len(bank)
    assert data.wordnet_senses("Give up", pos="v")[0].lemmas                 # multiword lemmas
    assert {s.pos for s in data.wordnet_senses("good", pos="a")} == {"a", "s"}
    n, found = 0, 0
    for ex in data.wordnet_examples(require_match=False):
        n += 1
        if ex.index >= 0:
            found += 1
            tokens = data.tokenize(ex.sentence)
            first = data.tokenize(ex.lemma.replace("_", " "))[0]
            assert tokens[ex.index] in wordnet._forms(first), ex
    assert n > 45_000 and found / n > 0.9


# ----------------------------------------------------------------------------- inventory and CLI

def test_info_table():
    rows = inventory.info_table()
    assert [r["name"] for r in rows] == list(data.SOURCES)
    for r in rows:
        assert r["items"] > 0 and r["bytes"] > 0 and r["licence"] and r["citation"], r["name"]
        if r["kind"] == "text":
            assert r["words"] > 100_000


@pytest.mark.slow            # an end-to-end run of a command: make test, not test-fast
def test_cli(tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "minilib", "data", *args], capture_output=True, text=True,
                              timeout=300)
    info = cli("info")
    assert info.returncode == 0, info.stderr
    for name in data.SOURCES:
        assert re.search(rf"^{re.escape(name)}\s", info.stdout, re.M), name
    assert cli("fetch").returncode == 2
    assert cli("fetch", "nosuch").returncode == 2
    out = tmp_path / "datasheet.md"
    sheet = cli("datasheet", "--out", str(out))
    assert sheet.returncode == 0, sheet.stderr
    text = out.read_text()
    assert all(f"## `{name}`" in text for name in data.SOURCES)
    assert data.SOURCES["glove"].artifact.sha256 in text
