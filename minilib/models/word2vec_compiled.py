"""word2vec.c's update loop, compiled: the skip-gram SGD step pair by pair, as the C code and gensim run it.

`Word2Vec.sgd_step` (models/word2vec.py) applies a batch as a few tensor operations; on a CPU those
are memory-bound small products (docs/measurements.md: ~2.7 GFLOP/s, 0.55-0.64x gensim's words/s).
This is the same negative-sampling update written as word2vec.c's loop (`TrainModelThread`, skip-gram
with `negative > 0`) and compiled by numba: for each (context, centre) pair, the context word's input
vector h meets the centre's output vector (label 1) and each noise word's (label 0), one at a time,

    g = (label - σ(u · h)) · lr;   grad_h += g · u;   u += g · h;          then   h += grad_h

so each update sees every update before it, within the batch too (the tensor step sees the batch's
old vectors), and the rows stay in cache between the dot product and the update. A noise word equal
to the centre is skipped (word2vec.c). The batches, their subsampling, windows and noise draws, and
the learning-rate schedule are the tensor path's (data/skipgram.py, recipes/word2vec.py); only the
step differs. `fit_hogwild`'s worker threads run it concurrently: numba releases the GIL (nogil),
so the threads share the tables without locks, as word2vec.c's do.

Skip-gram only (pair and grouped layouts), float32 tables on the CPU; CBOW and the GPU use the
tensor step. numba is a dependency; without it `available()` is False and 'auto' picks the tensor step.
"""
from __future__ import annotations

import math

import numpy as np
import torch

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is in pyproject's dependencies; the tensor step still works
    njit = None


def available() -> bool:
    """Whether the compiled step can run here (numba imports)."""
    return njit is not None


def sgd_step(model, batch: dict, lr: float, scratch: dict | None = None) -> torch.Tensor:
    """`Word2Vec.sgd_step`'s contract, word2vec.c's order: the batch's skip-gram pairs one at a time,
    each moved by `lr`; returns the summed loss, each pair's measured just before its own update."""
    if not available():
        raise RuntimeError("the compiled word2vec step needs numba: pip install numba (or use engine='hogwild')")
    W_in, W_out = model.in_embed.weight.detach(), model.out_embed.weight.detach()
    if model.cbow or W_in.device.type != "cpu" or W_in.dtype != torch.float32:
        raise ValueError("the compiled step trains skip-gram on float32 CPU tables: use engine='hogwild' for "
                         "CBOW, another dtype or a GPU")
    W_in, W_out = W_in.numpy(), W_out.numpy()
    targets, negatives = batch["targets"].numpy(), batch["negatives"].numpy()
    if "widths" in batch:
        loss = _grouped_pairs(W_in, W_out, batch["inputs"].numpy(), batch["mask"].numpy(), batch["widths"].numpy(),
                              targets, negatives, float(lr))
    else:
        loss = _pairs(W_in, W_out, batch["inputs"].numpy(), targets, negatives, float(lr))
    return torch.tensor(loss)


def warm_up() -> None:
    """Compile the kernels now (or load them from numba's cache), so training time is training."""
    W, one = np.zeros((2, 4), np.float32), np.zeros(1, np.int64)
    _pairs(W, W.copy(), one, one, one[:, None].copy(), 0.0)
    _grouped_pairs(W, W.copy(), one.repeat(2), np.zeros(2, np.bool_), one + 1, one, one[:, None].copy(), 0.0)


if njit is not None:
    @njit(nogil=True, fastmath=True, cache=True)
    def _score(W_in, W_out, c, p):
        """u_p · h, h = W_in[c]."""
        f = np.float32(0.0)
        for i in range(W_in.shape[1]):
            f += W_in[c, i] * W_out[p, i]
        return f

    @njit(nogil=True, fastmath=True, cache=True)
    def _apply(W_in, W_out, c, p, f, label, lr, grad_h):
        """Row p's update from its score f = u_p · h; returns the probability the model gave `label`."""
        e = math.exp(-min(max(f, -30.0), 30.0))        # clipped only for the loss: p >= 1e-13 per term
        sig = 1.0 / (1.0 + e)
        g = np.float32((label - sig) * lr)
        for i in range(W_in.shape[1]):
            grad_h[i] += g * W_out[p, i]
            W_out[p, i] += g * W_in[c, i]
        return sig if label > 0 else e * sig            # σ(f) for the centre, 1 - σ(f) for a noise word

    @njit(nogil=True, fastmath=True, cache=True)
    def _pair(W_in, W_out, c, t, negatives, lr, grad_h, rows, scores):
        """The pair (context c, centre t) with its noise words; returns its loss.

        h = W_in[c] stays fixed within the pair (its change gathers in grad_h), so when the pair's output
        rows are distinct every score can be taken before any row moves: the same arithmetic as one row
        at a time, with independent dot products the CPU overlaps (~1.5x faster, measured). A noise word
        drawn twice needs the order: the second sees the first's update."""
        rows[0] = t
        n = 1
        for p in negatives:
            if p != t:                                   # word2vec.c: `if (target == word) continue;`
                rows[n] = p
                n += 1
        distinct = True
        for a in range(1, n):
            for b in range(a):
                distinct &= rows[a] != rows[b]
        grad_h[:] = 0
        prob = 1.0
        if distinct:
            for k in range(n):
                scores[k] = _score(W_in, W_out, c, rows[k])
            for k in range(n):
                prob *= _apply(W_in, W_out, c, rows[k], scores[k], 1.0 if k == 0 else 0.0, lr, grad_h)
        else:
            for k in range(n):
                prob *= _apply(W_in, W_out, c, rows[k], _score(W_in, W_out, c, rows[k]), 1.0 if k == 0 else 0.0,
                               lr, grad_h)
        for i in range(W_in.shape[1]):
            W_in[c, i] += grad_h[i]
        return -math.log(prob)                           # one log per pair: the product of its probabilities

    @njit(nogil=True, fastmath=True, cache=True)
    def _pairs(W_in, W_out, inputs, targets, negatives, lr):
        """The pair layout: pair b is (inputs[b], targets[b]) with its own noise words negatives[b]."""
        grad_h, scores = np.empty(W_in.shape[1], np.float32), np.empty(negatives.shape[1] + 1, np.float32)
        rows = np.empty(negatives.shape[1] + 1, np.int64)
        loss = 0.0
        for b in range(len(targets)):
            loss += _pair(W_in, W_out, inputs[b], targets[b], negatives[b], lr, grad_h, rows, scores)
        return loss

    @njit(nogil=True, fastmath=True, cache=True)
    def _grouped_pairs(W_in, W_out, inputs, mask, widths, targets, negatives, lr):
        """The grouped layout: centre b's 2·widths[b] context slots in turn, all against its noise words."""
        grad_h, scores = np.empty(W_in.shape[1], np.float32), np.empty(negatives.shape[1] + 1, np.float32)
        rows = np.empty(negatives.shape[1] + 1, np.int64)
        loss, s = 0.0, 0
        for b in range(len(targets)):
            for j in range(s, s + 2 * widths[b]):
                if mask[j]:
                    loss += _pair(W_in, W_out, inputs[j], targets[b], negatives[b], lr, grad_h, rows, scores)
            s += 2 * widths[b]
        return loss
