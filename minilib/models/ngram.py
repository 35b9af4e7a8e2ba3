"""The strongest counting language model: interpolated modified Kneser-Ney n-grams.

Before neural LMs, the state of the art was to count n-grams and smooth the
counts. The best smoothing, in Chen & Goodman's (1998) careful comparison, is
*interpolated modified Kneser-Ney*, which they introduce in the section
"Modified Kneser-Ney smoothing". This file implements exactly that, for n = 2..4:

    p(w | h) = (c(h w) - D(c(h w))) / c(h •)  +  gamma(h) · p(w | h')

where h' is h without its first word, c(h •) = sum over w of c(h w), and

  * D(c) is one of three discounts, D1 for c = 1, D2 for c = 2 and D3+ for
    c >= 3, estimated from the count-of-counts n1..n4 of each order
    (Chen & Goodman 1998, from Ney, Essen & Kneser's estimate of one discount):
        Y = n1 / (n1 + 2 n2),  D1 = 1 - 2Y n2/n1,  D2 = 2 - 3Y n3/n2,  D3+ = 3 - 4Y n4/n3;
  * gamma(h) = (D1 N1(h •) + D2 N2(h •) + D3+ N3+(h •)) / c(h •) is exactly the
    mass the discounts took away (N_r(h •): words seen r times after h), so
    every distribution sums to one;
  * the highest order counts occurrences; every lower order counts
    *continuation* counts N1+(• h w), the number of distinct words seen before
    "h w" (Kneser & Ney 1995). "francisco" is frequent, but follows almost only
    "san": as a back-off guess after an unseen context it deserves little mass;
  * the unigram level interpolates with the uniform distribution 1/V, so a word
    never seen in training still gets a (small) probability;
  * an unseen context (c(h •) = 0) hands over to the next lower order entirely.

Discounts come from the count-of-counts of the counts each order actually
uses (continuation counts below the top), as KenLM does (Heafield et al. 2013).

Counting is vectorised with NumPy: an n-gram gets an integer id built up one
word at a time (id of "a b c" = the index of (id of "a b") · V + c among the
distinct keys), so counting ~1M tokens takes about a second and scoring a
held-out stream is a few `searchsorted` calls, with no Python loop over tokens.

    >>> kn = KneserNey(order=3).fit(train_ids, vocab_size=len(vocab))
    >>> kn.cross_entropy(valid_ids)          # nats per token
    >>> kn.prob(vocab.encode(["of", "the"]), vocab["united"])

References: Kneser & Ney (1995), "Improved backing-off for M-gram language
modeling", ICASSP. Chen & Goodman (1998), "An empirical study of smoothing
techniques for language modeling", Harvard TR-10-98. Heafield et al. (2013),
"Scalable modified Kneser-Ney language model estimation", ACL.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_DISCOUNT = 0.01   # a floor for degenerate tiny corpora: D = 0 would leave no mass for unseen words


def modified_kn_discounts(count_of_counts) -> tuple[float, float, float]:
    """(D1, D2, D3+) from the numbers n1..n4 of n-grams seen exactly 1..4 times (Chen & Goodman 1998).

    On real text 0 < D1 < 1 < D2 < 2 < D3+ < 3. On a tiny corpus where some
    n_r is 0 the formula is undefined; we then reuse the discount below it,
    and clip each D_r to [MIN_DISCOUNT, r] so that c - D(c) >= 0 always holds.
    """
    n1, n2, n3, n4 = (float(x) for x in count_of_counts)
    y = n1 / (n1 + 2 * n2) if n1 + 2 * n2 > 0 else 0.5
    d1 = 1 - 2 * y * n2 / n1 if n1 > 0 else 0.5
    d2 = 2 - 3 * y * n3 / n2 if n2 > 0 else d1
    d3 = 3 - 4 * y * n4 / n3 if n3 > 0 else d2
    return tuple(float(min(max(d, MIN_DISCOUNT), r)) for r, d in ((1, d1), (2, d2), (3, d3)))


@dataclass
class _Order:
    """The statistics of one order k of the model (k-grams: a (k-1)-word context and a word)."""

    keys: np.ndarray      # (G,) sorted keys context_id * V + word of the distinct k-grams seen (k >= 2)
    counts: np.ndarray    # (G,) raw counts (top order) or continuation counts (lower orders)
    discounts: np.ndarray  # (4,) discount for count 0, 1, 2, 3+ (D(0) = 0)
    denom: np.ndarray     # (C,) c(h •) per context id (for k = 1 a single context)
    gamma: np.ndarray     # (C,) back-off weight per context id


class KneserNey:
    """Interpolated modified Kneser-Ney n-gram LM over integer word ids (see the module doc)."""

    def __init__(self, order: int = 3):
        if not 2 <= order <= 4:
            raise ValueError(f"order={order}: this model supports n = 2, 3 or 4 (a trigram, 3, is the classic choice)")
        self.order = order
        self.vocab_size: int | None = None
        self._orders: list[_Order] = []   # index k-1 holds order k

    def __repr__(self) -> str:
        fitted = f", vocab_size={self.vocab_size}" if self.vocab_size else " (not fitted)"
        return f"KneserNey(order={self.order}{fitted})"

    # ---- fitting ----------------------------------------------------------------------------------
    def fit(self, ids, vocab_size: int) -> "KneserNey":
        """Count every 1..n-gram of the token stream `ids` (ints in [0, vocab_size)) and set the discounts."""
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or len(ids) < self.order:
            raise ValueError(f"fit needs a 1-D stream of at least {self.order} token ids, got shape {ids.shape}")
        if ids.min() < 0 or ids.max() >= vocab_size:
            raise ValueError(f"token ids must lie in [0, {vocab_size}); got {ids.min()}..{ids.max()}")
        V, n, N = vocab_size, self.order, len(ids)
        self.vocab_size = V
        # gram_ids[k-1][i]: id of the k-gram ending at position i (-1 for i < k-1); keys[k-1]: its sorted keys.
        # A k-gram's key is (id of its first k-1 words) · V + its last word, so ids stay below N and keys
        # below N · V: no overflow whatever the vocabulary size.
        gram_ids, keys = [ids], [None]
        for k in range(2, n + 1):
            key = gram_ids[-1][k - 2:N - 1] * V + ids[k - 1:]
            uniq, inv = np.unique(key, return_inverse=True)
            gid = np.full(N, -1, dtype=np.int64)
            gid[k - 1:] = inv.ravel()
            keys.append(uniq)
            gram_ids.append(gid)
        self._orders = []
        for k in range(1, n + 1):
            n_grams = V if k == 1 else len(keys[k - 1])
            if k == n:
                counts = np.bincount(gram_ids[k - 1][k - 1:], minlength=n_grams)
            else:
                # continuation count of a k-gram: how many distinct (k+1)-grams end with it. Take each
                # distinct (k+1)-gram at its first position i; the k-gram ending at i is its suffix.
                _, first = np.unique(gram_ids[k][k:], return_index=True)
                counts = np.bincount(gram_ids[k - 1][first + k], minlength=n_grams)
            n_contexts = 1 if k == 1 else (V if k == 2 else len(keys[k - 2]))
            self._orders.append(self._order_stats(k, keys[k - 1], counts, n_contexts))
        return self

    def _order_stats(self, k: int, keys, counts: np.ndarray, n_contexts: int) -> _Order:
        V = self.vocab_size
        count_of_counts = np.bincount(np.minimum(counts, 5), minlength=6)[1:5]
        d1, d2, d3 = modified_kn_discounts(count_of_counts)
        discounts = np.array([0.0, d1, d2, d3])
        contexts = np.zeros(V, dtype=np.int64) if k == 1 else keys // V   # id of each k-gram's (k-1)-word context
        counts_f = counts.astype(np.float64)
        denom = np.bincount(contexts, weights=counts_f, minlength=n_contexts)
        taken = np.bincount(contexts, weights=discounts[np.minimum(counts, 3)], minlength=n_contexts)
        with np.errstate(invalid="ignore", divide="ignore"):
            gamma = np.where(denom > 0, taken / denom, 1.0)
        return _Order(keys if k > 1 else np.empty(0, np.int64), counts_f, discounts, denom, gamma)

    # ---- scoring ----------------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if self.vocab_size is None:
            raise RuntimeError("this KneserNey model is not fitted yet: call .fit(train_ids, vocab_size) first")

    def _gram_id(self, k: int, context_id: np.ndarray, words: np.ndarray) -> np.ndarray:
        """Id of the k-gram (context, word), or -1 where it was never seen (or the context is -1)."""
        if k == 1:
            return words.copy()
        keys = self._orders[k - 1].keys
        key = context_id * self.vocab_size + words
        pos = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
        return np.where((context_id >= 0) & (keys[pos] == key), pos, -1)

    def _interpolate(self, contexts: list[np.ndarray], words: np.ndarray) -> np.ndarray:
        """p(word | context) for aligned arrays; contexts[k-1] is the id of the (k-1)-word context of
        order k (contexts[0] is unused: the unigram level has one empty context), -1 if unseen."""
        V = self.vocab_size
        uni = self._orders[0]
        c = uni.counts[words]
        p = (c - uni.discounts[np.minimum(c, 3).astype(np.int64)]) / uni.denom[0] + uni.gamma[0] / V
        for k in range(2, self.order + 1):
            o, ctx = self._orders[k - 1], contexts[k - 1]
            seen = ctx >= 0
            safe_ctx = np.where(seen, ctx, 0)
            denom = np.where(seen, o.denom[safe_ctx], 0.0)
            g = self._gram_id(k, ctx, words)
            c = np.where(g >= 0, o.counts[np.maximum(g, 0)], 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                higher = (c - o.discounts[np.minimum(c, 3).astype(np.int64)]) / denom + o.gamma[safe_ctx] * p
            p = np.where(denom > 0, higher, p)
        return p

    def _context_ids(self, context) -> list[int]:
        """For orders 1..n, the id of the context each conditions on: the last k-1 ids of `context`
        (-1 if that (k-1)-gram was never seen in training, or `context` is shorter than k-1)."""
        context = [int(w) for w in context]
        out = [0]                                          # the unigram level's one empty context
        for k in range(2, self.order + 1):
            m = k - 1
            if m > len(context):
                out.append(-1)
                continue
            words = context[len(context) - m:]
            gid = np.array([words[0]])
            for j, w in enumerate(words[1:], start=2):    # build the m-gram's id left to right
                gid = self._gram_id(j, gid, np.array([w]))
            out.append(int(gid[0]))
        return out

    def distribution(self, context) -> np.ndarray:
        """p(w | context) for every word w of the vocabulary, shape (V,); uses the last n-1 ids of `context`."""
        self._check_fitted()
        context = list(context)
        if any(not 0 <= int(w) < self.vocab_size for w in context):
            raise ValueError(f"context ids must lie in [0, {self.vocab_size})")
        words = np.arange(self.vocab_size)
        ctx = [np.full(self.vocab_size, c, dtype=np.int64) for c in self._context_ids(context)]
        return self._interpolate(ctx, words)

    def prob(self, context, word: int) -> float:
        """p(word | context), conditioning on the last n-1 ids of `context` (fewer if it is shorter)."""
        self._check_fitted()
        ctx = [np.array([c], dtype=np.int64) for c in self._context_ids(context)]
        return float(self._interpolate(ctx, np.array([int(word)]))[0])

    def log_probs(self, ids) -> np.ndarray:
        """ln p(ids[i] | ids[i-n+1 : i]) for every position i of a stream; the first n-1 tokens are
        predicted from the shorter contexts available (ids[0] from none, i.e. the unigram level)."""
        self._check_fitted()
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or len(ids) == 0:
            raise ValueError(f"expected a non-empty 1-D stream of token ids, got shape {ids.shape}")
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}); got {ids.min()}..{ids.max()}")
        N = len(ids)
        # grams[m-1][i]: id of the m-gram ending at position i in the training tables, -1 if unseen/too short
        grams = [ids]
        for m in range(2, self.order):
            prev = np.full(N, -1, dtype=np.int64)
            prev[1:] = grams[-1][:-1]
            gid = self._gram_id(m, prev, ids)
            gid[:m - 1] = -1
            grams.append(gid)
        contexts = [np.zeros(N, dtype=np.int64)]
        for k in range(2, self.order + 1):
            ctx = np.full(N, -1, dtype=np.int64)
            ctx[1:] = grams[k - 2][:-1]                      # the (k-1)-gram ending just before i
            ctx[:k - 1] = -1
            contexts.append(ctx)
        return np.log(self._interpolate(contexts, ids))

    def cross_entropy(self, ids) -> float:
        """Mean negative log-probability (nats per token) of the stream `ids`; see log_probs."""
        return float(-self.log_probs(ids).mean())

    @property
    def discounts(self) -> dict[int, tuple[float, float, float]]:
        """{order k: (D1, D2, D3+)} as estimated by fit."""
        self._check_fitted()
        return {k: tuple(float(d) for d in o.discounts[1:]) for k, o in enumerate(self._orders, start=1)}

    def num_ngrams(self) -> dict[int, int]:
        """{order k: number of distinct k-grams with a nonzero count of the kind that order uses}."""
        self._check_fitted()
        return {k: int((o.counts > 0).sum()) for k, o in enumerate(self._orders, start=1)}

