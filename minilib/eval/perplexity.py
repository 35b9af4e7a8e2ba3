"""Cross-entropy and perplexity of language models, and the unigram baseline they must beat."""
from __future__ import annotations

import math

import numpy as np


def unigram_cross_entropy(train_ids, eval_ids, vocab_size: int, alpha: float = 1.0) -> float:
    """Cross-entropy (nats per token) on `eval_ids` of the add-`alpha` smoothed unigram model fit on `train_ids`.

    The unigram model predicts every position with the word's overall
    frequency and ignores context: any language model that has learned
    something about word order must do better.
    """
    counts = np.bincount(np.asarray(train_ids), minlength=vocab_size).astype(np.float64) + alpha
    log_p = np.log(counts / counts.sum())
    return float(-log_p[np.asarray(eval_ids)].mean())


def perplexity(cross_entropy_nats: float) -> float:
    """exp(cross-entropy): the effective number of equally likely next words."""
    return math.exp(cross_entropy_nats)
