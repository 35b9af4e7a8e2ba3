"""Interpolated modified Kneser-Ney: against a plain-dict reference, normalisation, discounts, real text."""
from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import pytest

from minilib.eval.perplexity import evaluate_lm, unigram_cross_entropy
from minilib.models.ngram import KneserNey, modified_kn_discounts


def zipf_stream(n: int, V: int, seed: int) -> np.ndarray:
    """A stream with some structure: Zipfian words, and word 1 always followed by word 2."""
    rng = np.random.default_rng(seed)
    ids = rng.zipf(1.6, size=n) % V
    ids[np.flatnonzero(ids[:-1] == 1) + 1] = 2
    return ids


class ReferenceKN:
    """Chen & Goodman (1998) interpolated modified KN written directly from the formulas, with dicts."""

    def __init__(self, ids, V: int, order: int):
        ids = [int(i) for i in ids]
        self.V, self.n = V, order
        raw = Counter(tuple(ids[i - k + 1:i + 1]) for k in range(1, order + 1) for i in range(k - 1, len(ids)))
        self.c = {}
        for k in range(1, order + 1):
            if k == order:
                self.c[k] = {g: c for g, c in raw.items() if len(g) == k}
            else:                                           # continuation counts N1+(. g)
                left = defaultdict(set)
                for g in raw:
                    if len(g) == k + 1:
                        left[g[1:]].add(g[0])
                self.c[k] = {g: len(s) for g, s in left.items()}
        self.D = {}
        for k in range(1, order + 1):
            coc = Counter(self.c[k].values())
            self.D[k] = (0.0, *modified_kn_discounts([coc[r] for r in (1, 2, 3, 4)]))

    def prob(self, context, w) -> float:
        context = tuple(int(x) for x in context)[-(self.n - 1):]
        c1 = self.c[1]
        total = sum(c1.values())
        gamma = sum(self.D[1][min(c, 3)] for c in c1.values()) / total
        p = (c1.get((w,), 0) - self.D[1][min(c1.get((w,), 0), 3)]) / total + gamma / self.V
        for k in range(2, self.n + 1):
            if k - 1 > len(context):
                break
            h = context[len(context) - (k - 1):]
            followers = {g[-1]: c for g, c in self.c[k].items() if g[:-1] == h and c > 0}
            denom = sum(followers.values())
            if denom == 0:
                continue
            c = followers.get(w, 0)
            gamma = sum(self.D[k][min(x, 3)] for x in followers.values()) / denom
            p = (c - self.D[k][min(c, 3)]) / denom + gamma * p
        return p


@pytest.mark.parametrize("order", [2, 3, 4])
def test_matches_reference_implementation(order):
    V = 12
    ids = zipf_stream(600, V, seed=order)
    kn, ref = KneserNey(order).fit(ids, V), ReferenceKN(ids, V, order)
    rng = np.random.default_rng(0)
    for _ in range(40):
        context = list(rng.integers(0, V, size=rng.integers(0, order + 1)))
        w = int(rng.integers(0, V))
        assert kn.prob(context, w) == pytest.approx(ref.prob(context, w), rel=1e-10)
    assert kn.discounts == {k: pytest.approx(ref.D[k][1:]) for k in range(1, order + 1)}


@pytest.mark.parametrize("order", [2, 3, 4])
def test_probabilities_sum_to_one_for_any_context(order):
    V = 40
    ids = zipf_stream(3000, V, seed=1)
    kn = KneserNey(order).fit(ids, V)
    contexts = [[], [1], [1, 2], list(ids[10:10 + order]), [39, 39, 39], [0, 5, 7, 11]]   # seen, unseen, short
    for context in contexts:
        p = kn.distribution(context)
        assert p.shape == (V,) and (p > 0).all()
        assert p.sum() == pytest.approx(1.0, abs=1e-12)


def test_stream_scoring_equals_prob_per_position():
    V = 25
    ids, held_out = zipf_stream(2000, V, seed=2), zipf_stream(60, V, seed=3)
    kn = KneserNey(3).fit(ids, V)
    lp = kn.log_probs(held_out)
    for i in range(len(held_out)):   # the first n-1 tokens use the shorter contexts available
        assert lp[i] == pytest.approx(math.log(kn.prob(held_out[max(0, i - 2):i], held_out[i])), abs=1e-12)
    assert kn.cross_entropy(held_out) == pytest.approx(-lp.mean())
    assert evaluate_lm(kn, held_out) == pytest.approx(-lp[1:].mean())


def test_discount_formula():
    # Chen & Goodman (1998): Y = n1/(n1+2n2), D1 = 1-2Y n2/n1, D2 = 2-3Y n3/n2, D3+ = 3-4Y n4/n3
    y = 100 / 180
    assert modified_kn_discounts([100, 40, 20, 10]) == pytest.approx(
        (1 - 2 * y * 0.4, 2 - 3 * y * 0.5, 3 - 4 * y * 0.5))
    # degenerate counts stay usable: in [floor, r], so c - D(c) >= 0 and some mass is left for unseen words
    for coc in ([0, 0, 0, 0], [5, 0, 0, 0], [1, 50, 0, 3]):
        d = modified_kn_discounts(coc)
        assert all(0 < d[r] <= r + 1 for r in range(3))


def test_continuation_counts_demote_words_seen_in_one_context():
    # "francisco" (3) is frequent but always follows "san" (2); "the" (4) follows many words.
    V = 20
    ids = []
    for i in range(300):
        ids += [2, 3, 2, 3, 5 + i % (V - 5), 4]              # "francisco" twice as frequent as "the"
    kn = KneserNey(2).fit(ids, V)
    counts = np.bincount(ids, minlength=V)
    assert counts[3] == 2 * counts[4]
    unseen_context = [0]                                   # word 0 never occurs: fall back to the unigram level
    assert kn.prob(unseen_context, 4) > 5 * kn.prob(unseen_context, 3)
    assert kn.prob([2], 3) > 0.9                           # but after "san", "francisco" it is


def test_errors_say_what_to_do():
    with pytest.raises(ValueError, match="n = 2, 3 or 4"):
        KneserNey(5)
    with pytest.raises(RuntimeError, match="fit"):
        KneserNey(3).cross_entropy([1, 2, 3])
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        KneserNey(2).fit([1, 2, 9], vocab_size=5)


def test_fits_a_million_tokens_in_seconds():
    import time
    ids = zipf_stream(1_000_000, 10_000, seed=4)
    t0 = time.perf_counter()
    kn = KneserNey(3).fit(ids, 10_000)
    kn.cross_entropy(ids[:100_000])
    assert time.perf_counter() - t0 < 20      # ~2-4 s on a 2-core CPU; generous for a busy machine


@pytest.mark.data
def test_beats_unigram_on_held_out_real_text():
    from minilib import data

    words = lambda docs: [t for d in docs for t in data.tokenize(d.text)]
    train = words(data.pretraining_corpus("train", max_words=60_000))
    valid = words(data.pretraining_corpus("valid", max_words=10_000))
    vocab = data.Vocab.build([train], max_size=3000)
    tr, va = vocab.encode_array(train), vocab.encode_array(valid)
    uni = unigram_cross_entropy(tr, va[1:], len(vocab))
    kn2, kn3 = (evaluate_lm(KneserNey(n).fit(tr, len(vocab)), va) for n in (2, 3))
    assert kn3 < kn2 < uni - 0.5             # context helps a lot; a second word of context still helps
