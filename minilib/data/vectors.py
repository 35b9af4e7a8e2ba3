"""Word vectors as data: one row per word, with the neighbour and analogy queries every
chapter uses (GloVe, our SGNS and PPMI vectors, ELMo's layers averaged per type)."""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np


class WordVectors:
    """One vector per word, with the queries a lesson needs.

    `words` should be in descending frequency order (both minilib trainers and
    gensim produce them so): `analogy(top_k=...)` takes the first k words as
    the k most frequent.
    """

    def __init__(self, words: Sequence[str], vectors, counts: Sequence[int] | None = None):
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(words) != len(vectors):
            raise ValueError(f"need one row per word: {len(words)} words but vectors of shape {vectors.shape}")
        self.words = list(words)
        self.vectors = vectors                       # (V, dim)
        self.counts = None if counts is None else np.asarray(counts)
        self.index = {w: i for i, w in reversed(list(enumerate(self.words)))}  # first (most frequent) wins
        self._normed = None

    @classmethod
    def from_gensim(cls, kv) -> "WordVectors":
        """Wrap gensim `KeyedVectors` (e.g. `Word2Vec(...).wv`) so our evaluation can score it."""
        counts = [kv.get_vecattr(w, "count") for w in kv.index_to_key] if "count" in kv.expandos else None
        return cls(kv.index_to_key, kv.vectors, counts)

    # -- lookups ---------------------------------------------------------
    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def __getitem__(self, word: str) -> np.ndarray:
        return self.vector(word)

    def __repr__(self) -> str:
        return f"WordVectors({len(self)} words, dim={self.dim})"

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def vector(self, word: str) -> np.ndarray:
        """The (dim,) vector of `word`; KeyError names the word if it is not in the vocabulary."""
        try:
            return self.vectors[self.index[word]]
        except KeyError:
            raise KeyError(f"{word!r} is not in the vocabulary ({len(self)} words; rare words were "
                           f"dropped by min_count)") from None

    @property
    def normed(self) -> np.ndarray:
        """(V, dim) rows scaled to unit length (computed once): cosine similarity is a dot product."""
        if self._normed is None:
            norms = np.linalg.norm(self.vectors, axis=1, keepdims=True)
            self._normed = self.vectors / np.maximum(norms, 1e-12)
        return self._normed

    # -- queries -----------------------------------------------------------
    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two words."""
        n = self.normed
        return float(n[self._idx(a)] @ n[self._idx(b)])

    def most_similar(self, word, topn: int = 10, exclude: Iterable[str] = ()) -> list[tuple[str, float]]:
        """The `topn` nearest words by cosine to `word` (a word or a vector), the word itself left out."""
        if isinstance(word, str):
            query, skip = self.normed[self._idx(word)], {self._idx(word)}
        else:
            query, skip = np.asarray(word, dtype=np.float32), set()
            query = query / max(float(np.linalg.norm(query)), 1e-12)
        skip |= {self.index[w] for w in exclude if w in self.index}
        scores = self.normed @ query                                         # (V,)
        k = min(topn + len(skip), len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best])]
        return [(self.words[i], float(scores[i])) for i in best if i not in skip][:topn]

    def _idx(self, word: str) -> int:
        if word not in self.index:
            self.vector(word)  # raises the explanatory KeyError
        return self.index[word]

    # -- saving ------------------------------------------------------------
    def save(self, path) -> None:
        """Save as .npz (words, vectors, counts)."""
        extra = {} if self.counts is None else {"counts": self.counts}
        np.savez_compressed(path, words=np.array(self.words), vectors=self.vectors, **extra)

    @classmethod
    def load(cls, path) -> "WordVectors":
        with np.load(path, allow_pickle=False) as f:
            return cls(f["words"].tolist(), f["vectors"], f["counts"] if "counts" in f else None)
