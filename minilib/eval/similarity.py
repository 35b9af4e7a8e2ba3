"""Static word vectors and how to judge them: similarity, analogies, neighbours.

    >>> vecs = WordVectors(words, matrix)          # words in descending frequency
    >>> vecs.most_similar("king", topn=5)          # [("queen", 0.71), ...]
    >>> similarity_spearman(vecs, wordsim353())    # SimilarityResult(rho=0.62, coverage=0.95, n_used=335)
    >>> analogy(vecs, google_analogies())          # 3CosAdd, top 30k words, semantic / syntactic split

The evaluation functions take plain lists, so they work with any loader:
similarity pairs are `(w1, w2, human_score)`, analogy questions are
`(section, a, b, c, d)` ("a is to b as c is to d"; an object with those
attributes works too). Words are compared lowercased.

References
- WordSim-353: Finkelstein et al. 2002, "Placing search in context: the concept revisited".
- SimLex-999: Hill, Reichart & Korhonen 2015, "SimLex-999: Evaluating semantic models with
  (genuine) similarity estimation".
- Analogies and 3CosAdd: Mikolov, Chen, Corrado & Dean 2013, "Efficient estimation of word
  representations in vector space", §4.1 (the Google analogy set: 8,869 semantic and 10,675
  syntactic questions). Restricting answers to the 30k most frequent words follows their §4.1
  and gensim's `evaluate_word_analogies(restrict_vocab=30000)`; the name 3CosAdd is from
  Levy & Goldberg 2014, "Linguistic regularities in sparse and explicit word representations".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from minilib.data.vectors import WordVectors


def neighbours(vectors: WordVectors, word: str, topn: int = 10) -> list[tuple[str, float]]:
    """The `topn` nearest neighbours of `word` by cosine similarity."""
    return vectors.most_similar(word, topn=topn)


# -- word similarity ----------------------------------------------------------
class SimilarityResult(NamedTuple):
    rho: float          # Spearman rank correlation between cosine and human scores
    coverage: float     # share of the pairs with both words in the vocabulary
    n_used: int         # pairs scored (the others were out of vocabulary)


def similarity_spearman(vectors: WordVectors, pairs: Iterable[Sequence]) -> SimilarityResult:
    """Spearman's rho between the model's cosines and human scores, over pairs with both words known.

    `pairs` are `(w1, w2, score)`, e.g. WordSim-353 or SimLex-999. Words are
    lowercased; a pair with an out-of-vocabulary word is skipped (as gensim's
    `evaluate_word_pairs` does) and `coverage` says how many were kept.
    """
    from scipy.stats import spearmanr

    pairs = list(pairs)
    if not pairs:
        raise ValueError("no pairs to score")
    lookup = _lowercase_index(vectors, len(vectors))
    a_idx, b_idx, human = [], [], []
    for w1, w2, score in (p[:3] for p in pairs):
        i, j = lookup.get(w1.lower()), lookup.get(w2.lower())
        if i is not None and j is not None:
            a_idx.append(i), b_idx.append(j), human.append(float(score))
    n = len(human)
    if n < 2:
        return SimilarityResult(float("nan"), n / len(pairs), n)
    normed = vectors.normed
    cosines = np.einsum("nd,nd->n", normed[a_idx], normed[b_idx])
    rho = spearmanr(cosines, human).statistic
    return SimilarityResult(float(rho), n / len(pairs), n)


def wordsim(vectors: WordVectors, pairs: Iterable[Sequence]) -> SimilarityResult:
    """Alias of `similarity_spearman`, named for WordSim-353 / SimLex-999 style pair lists."""
    return similarity_spearman(vectors, pairs)


# -- analogies ---------------------------------------------------------------
@dataclass
class AnalogyResult:
    accuracy: float             # correct / questions answered (all sections)
    semantic: float             # accuracy on the semantic sections (capitals, currency, family, ...)
    syntactic: float            # accuracy on the syntactic ("gram*") sections
    coverage: float             # share of questions whose four words are all in the top-k vocabulary
    n_used: int                 # questions answered
    n_total: int                # questions given
    sections: dict[str, float] = field(default_factory=dict)  # accuracy per section

    def __str__(self) -> str:
        return (f"analogy accuracy {self.accuracy:.3f} (semantic {self.semantic:.3f}, syntactic "
                f"{self.syntactic:.3f}) on {self.n_used}/{self.n_total} questions (coverage {self.coverage:.2f})")


def _lowercase_index(vectors: WordVectors, k: int) -> dict[str, int]:
    """lowercased word -> row, over the first k words; the most frequent spelling wins."""
    out: dict[str, int] = {}
    for i, w in enumerate(vectors.words[:k]):
        out.setdefault(w.lower(), i)
    return out


def _question(q) -> tuple[str, str, str, str, str, bool | None]:
    """(section, a, b, c, d, is_semantic or None) from a tuple or an object with those attributes."""
    if hasattr(q, "a") and hasattr(q, "d"):
        section, a, b, c, d = getattr(q, "section", ""), q.a, q.b, q.c, q.d
        flag = getattr(q, "semantic", None)
        if flag is None and getattr(q, "syntactic", None) is not None:
            flag = not q.syntactic
    else:
        section, a, b, c, d = q[:5]
        flag = None
    return section, a, b, c, d, flag


def analogy(vectors: WordVectors, questions: Iterable, top_k: int = 30000,
            batch_size: int = 512) -> AnalogyResult:
    """3CosAdd: answer "a : b :: c : ?" with argmax_x cos(x, b - a + c) over the `top_k` most frequent words.

    Like gensim's `evaluate_word_analogies(restrict_vocab=top_k)`: a question
    with any word outside those k words is skipped (coverage reports how many
    remain), and a, b, c themselves are never accepted as the answer. Sections
    whose name starts with "gram" are syntactic, the rest semantic, unless a
    question carries its own `semantic` flag. Scores a batch of questions with
    one matrix multiply.
    """
    questions = [_question(q) for q in questions]
    if not questions:
        raise ValueError("no analogy questions given")
    k = min(top_k, len(vectors))
    lookup = _lowercase_index(vectors, k)
    rows, sections, semantic = [], [], []
    for section, a, b, c, d, flag in questions:
        ids = [lookup.get(w.lower()) for w in (a, b, c, d)]
        if None in ids:
            continue
        rows.append(ids)
        sections.append(section)
        semantic.append(flag if flag is not None else not str(section).lstrip(": ").startswith("gram"))
    n_total = len(questions)
    if not rows:
        nan = float("nan")
        return AnalogyResult(nan, nan, nan, 0.0, 0, n_total)
    ids = np.array(rows)                                     # (Q, 4): a, b, c, d
    normed = vectors.normed[:k]                              # (k, dim)
    correct = np.zeros(len(ids), dtype=bool)
    for start in range(0, len(ids), batch_size):
        a, b, c, d = ids[start:start + batch_size].T
        target = normed[b] - normed[a] + normed[c]           # (q, dim); its norm does not change the argmax
        scores = target @ normed.T                           # (q, k)
        q = np.arange(len(a))
        scores[q, a] = scores[q, b] = scores[q, c] = -np.inf  # the question words are not answers
        correct[start:start + len(a)] = scores.argmax(1) == d
    semantic = np.array(semantic)
    sections_arr = np.array(sections, dtype=object)

    def acc(mask) -> float:
        return float(correct[mask].mean()) if mask.any() else float("nan")

    per_section = {s: acc(sections_arr == s) for s in dict.fromkeys(sections)}
    return AnalogyResult(accuracy=float(correct.mean()), semantic=acc(semantic), syntactic=acc(~semantic),
                         coverage=len(ids) / n_total, n_used=len(ids), n_total=n_total, sections=per_section)
