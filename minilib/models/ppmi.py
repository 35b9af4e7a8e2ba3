"""Count-based word vectors: co-occurrence counts -> PPMI -> truncated SVD.

The baseline word2vec is measured against. Levy, Goldberg & Dagan (2015, "Improving
Distributional Similarity with Lessons Learned from Word Embeddings", TACL) showed that
much of word2vec's edge came from its hyperparameters, and that a count model given the
same ones is competitive. We take theirs:

- positive PMI (Church & Hanks 1990; PPMI: Bullinaria & Levy 2007), computed only on the
  nonzero counts of a sparse matrix;
- context distribution smoothing, cds (§3.2): P_α(c) = #(c)^α / Σ #(c')^α with α = 0.75,
  the same power as word2vec's noise distribution; it lifts PMI's bias towards rare contexts;
- shifted PPMI, neg (§3.2): max(PMI - log k, 0), the matrix SGNS with k negatives
  implicitly factorises (Levy & Goldberg 2014); k = 1 is plain PPMI;
- dynamic context window, dyn (§3.1): a context at distance d counts (window - d + 1)/window,
  what word2vec's reduced window gives in expectation;
- eigenvalue weighting, eig (§3.3): W = U Σ^p with p = 0.5 (or 0: U alone; 1: classic SVD).

The SVD is randomised (Halko, Martinsson & Tropp 2011, "Finding structure with randomness",
Alg. 4.4 with power iterations): a few sparse-times-dense products, fine for 50k words.

    >>> vectors = train_ppmi(token_ids, counts, PPMIConfig(dim=100, window=5), words=words)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.sparse as sp
import torch

from minilib.data.vectors import WordVectors
from minilib.data.skipgram import Corpus, prepare_corpus
from minilib.runtime import one_thread_per_op


@dataclass
class PPMIConfig:
    dim: int = 100               # SVD rank: the vector size
    window: int = 5              # largest context distance, as in word2vec
    min_count: int = 5           # same vocabulary rule as word2vec (words seen fewer times are dropped)
    cds: float = 0.75            # context distribution smoothing α (Levy et al. 2015 §3.2); 1 = off
    neg: float = 1.0             # shift k: SPPMI = max(PMI - log k, 0) (Levy et al. 2015 §3.2); 1 = plain PPMI
    eig: float = 0.5             # eigenvalue weighting p: vectors = U Σ^p (Levy et al. 2015 §3.3)
    dynamic_window: bool = True  # weight distance d by (window - d + 1) / window, as word2vec does on average
    power_iterations: int = 4    # randomized SVD: more = closer to the exact top singular vectors
    oversample: int = 10         # randomized SVD: extra random directions beyond dim
    seed: int = 0


def cooccurrence(corpus: Corpus, window: int = 5, dynamic_window: bool = True) -> sp.csr_matrix:
    """(V, V) symmetric word-context counts within `window` words, never across sentences.

    One vectorised pass per distance d: pair every token with the token d later when both
    are in the same sentence, count both directions, and let scipy sum the duplicates.
    """
    tokens = corpus.tokens.numpy().astype(np.int32)
    sentence = corpus.sentence.numpy()
    V = len(corpus.words)
    total = sp.csr_matrix((V, V), dtype=np.float64)
    for d in range(1, window + 1):
        same = sentence[:-d] == sentence[d:]
        left, right = tokens[:-d][same], tokens[d:][same]
        weight = (window - d + 1) / window if dynamic_window else 1.0
        data = np.full(2 * len(left), weight, dtype=np.float64)
        rows, cols = np.concatenate([left, right]), np.concatenate([right, left])
        total = total + sp.coo_matrix((data, (rows, cols)), shape=(V, V)).tocsr()  # tocsr sums duplicates
    return total


def ppmi(counts: sp.spmatrix, cds: float = 0.75, neg: float = 1.0) -> sp.csr_matrix:
    """Positive (shifted) PMI of a word-context count matrix, with context distribution smoothing.

    PMI_α(w, c) = log [ P(w, c) / (P(w) · P_α(c)) ],  P(w, c) = #(w,c)/|D|,  P(w) = #(w)/|D|,
    P_α(c) = #(c)^α / Σ_c' #(c')^α;  result max(PMI_α - log neg, 0), kept sparse (zero counts stay 0).
    """
    counts = sp.csr_matrix(counts, dtype=np.float64)
    counts.eliminate_zeros()
    total = counts.sum()
    row_sums = np.asarray(counts.sum(axis=1)).ravel()                       # #(w)
    col_sums = np.asarray(counts.sum(axis=0)).ravel()                       # #(c)
    smoothed = col_sums ** cds
    p_context = smoothed / smoothed.sum()                                   # P_α(c)
    rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))    # the row of each stored entry
    pmi = (np.log(counts.data / total) - np.log(row_sums[rows] / total)
           - np.log(p_context[counts.indices]) - np.log(neg))
    out = sp.csr_matrix((np.maximum(pmi, 0.0), counts.indices.copy(), counts.indptr.copy()), shape=counts.shape)
    out.eliminate_zeros()
    return out


def randomized_svd(matrix: sp.spmatrix, rank: int, power_iterations: int = 4, oversample: int = 10,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-`rank` singular triplets (U, S, Vt) of a sparse matrix (Halko et al. 2011, Alg. 4.4).

    Project onto rank+oversample random directions, sharpen with power iterations
    (re-orthonormalised each time), then take the exact SVD of the small projected matrix.
    """
    rng = np.random.default_rng(seed)
    matrix = sp.csr_matrix(matrix, dtype=np.float32)
    transposed = matrix.T.tocsr()
    k = min(rank + oversample, min(matrix.shape))

    def orthonormal(x: np.ndarray) -> np.ndarray:   # torch's QR on one core: ~5x numpy's here, and
        return torch.linalg.qr(torch.from_numpy(x)).Q.numpy()   # no stalls when the machine is busy

    with one_thread_per_op("cpu"):
        Q = orthonormal(matrix @ rng.standard_normal((matrix.shape[1], k), dtype=np.float32))   # (m, k)
        for _ in range(power_iterations):
            Q = orthonormal(matrix @ orthonormal(transposed @ Q))
        small = torch.from_numpy(np.ascontiguousarray((transposed @ Q).T))  # (k, n) = Q^T A
        U_small, S, Vt = (t.numpy() for t in torch.linalg.svd(small, full_matrices=False))
    return (Q @ U_small)[:, :rank], S[:rank], Vt[:rank]


def ppmi_vectors(counts: sp.spmatrix, words: Sequence[str], config: PPMIConfig | None = None,
                 word_counts=None) -> WordVectors:
    """Co-occurrence counts -> PPMI -> truncated SVD -> `WordVectors` (rows U Σ^eig)."""
    config = config or PPMIConfig()
    U, S, _ = randomized_svd(ppmi(counts, config.cds, config.neg), config.dim,
                             config.power_iterations, config.oversample, config.seed)
    return WordVectors(words, U * S ** config.eig, word_counts)


def train_ppmi(token_ids: Sequence, counts=None, config: PPMIConfig | None = None, *,
               words: Sequence[str] | None = None) -> WordVectors:
    """PPMI-SVD word vectors from sentences of token ids (same inputs and vocabulary as `train_word2vec`)."""
    config = config or PPMIConfig()
    corpus = prepare_corpus(token_ids, counts, words, config.min_count)
    cooc = cooccurrence(corpus, config.window, config.dynamic_window)
    return ppmi_vectors(cooc, corpus.words, config, corpus.counts)
