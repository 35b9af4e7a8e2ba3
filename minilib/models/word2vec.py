"""word2vec: skip-gram and CBOW with negative sampling, vectorised for CPU and GPU.

    >>> cfg = Word2VecConfig(dim=100, window=5, epochs=5)
    >>> result = train_word2vec(token_ids, counts, cfg, words=vocab_words)
    >>> result.vectors.most_similar("king")

What follows Mikolov et al. and the reference C code, word2vec.c, and where:

- Skip-gram and CBOW (Mikolov, Chen, Corrado & Dean 2013a, "Efficient Estimation of Word
  Representations in Vector Space", §3). CBOW averages the context vectors.
- Dynamic window (2013a §3.2; word2vec.c `b = next_random % window`): each centre word draws
  a reduced window b ~ U{1..window}, so a context at distance d is used with probability
  (window - d + 1) / window: near words count more.
- Negative sampling with noise distribution U(w)^(3/4)/Z (Mikolov, Sutskever, Chen, Corrado &
  Dean 2013b, "Distributed Representations of Words and Phrases and their Compositionality",
  §2.2). A noise word equal to the positive word is skipped, as in word2vec.c.
- Subsampling of frequent words (2013b §2.3). The paper writes P(discard) = 1 - sqrt(t/f);
  word2vec.c (and gensim) keep a word of count c with probability
  (sqrt(c / (t·T)) + 1) · (t·T) / c, T the number of training words: `keep_probabilities`.
  Discarded words are removed before windows are formed, so a window reaches past them.
- Learning rate decays linearly from lr to lr·1e-4 over training (word2vec.c); lr = 0.025 for
  skip-gram and 0.05 for CBOW (word2vec.c defaults); input vectors start U(-0.5/dim, 0.5/dim)
  and output vectors at zero (word2vec.c).
- Roles as in word2vec.c: in skip-gram the *context* word's input vector predicts the *centre*
  word (and the noise words); over a corpus this is the same set of pairs either way round.

Batched rather than one pair at a time. Each epoch draws the subsample and every centre's
window for the whole stream at once; a batch is then all (context, centre) pairs of a span
of text, made with a few tensor operations (one mask over the 2*window offsets, no Python
loop over tokens), plus `negative` noise words per pair. `Word2Vec.sgd_step` applies a batch
as one sparse update (gather rows, batched dot products, index_add_ the changes): the same
arithmetic as autograd + SGD on the summed loss (a test checks it), which is word2vec.c's
pair-by-pair update except that all pairs of a batch see the vectors from before it. That
staleness is why batches stay small (4096 pairs): bigger ones learn worse (LARGEST_SAFE_BATCH).

Two loops drive it (`train_word2vec(engine=...)`): `fit_hogwild`, worker threads that
share the tables without locks as word2vec.c's threads do (Recht et al. 2011, "Hogwild!"),
and `fit_with_learner`, minilib's Learner with autograd and sparse-gradient SGD. Both
report progress and return a minilib History. On a CPU the Hogwild workers run the compiled
step by default (engine 'compiled', models/word2vec_compiled.py): the same update, pair by
pair as word2vec.c applies it, ~2x faster than `sgd_step` there; 'hogwild' runs `sgd_step`.

One option departs from the papers: `shared_negatives=True` gives all context words of a
centre the same noise words (Ji, Shen, Satish et al. 2016, "Parallelizing Word2Vec in Shared
and Distributed Memory", arXiv:1604.04661). Each pair still meets `negative` draws from
U^(3/4), so the expected gradient is unchanged; the step becomes small matrix products
over fewer rows, ~2.3x faster per CPU core (measured).

Its speed against gensim is measured by `python -m minilib bench word2vec` (docs/measurements.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from minilib.data.vectors import WordVectors


@dataclass
class Word2VecConfig:
    dim: int = 100                 # vector size (gensim's default; 2013a reports 300-1000 on billions of words)
    window: int = 5                # largest context distance; each centre draws b ~ U{1..window} (2013a §3.2)
    negative: int = 5              # noise words per positive pair (2013b §2.2: 5-20 for small data, 2-5 for large)
    sample: float = 1e-3           # subsampling threshold t (2013b §2.3; word2vec.c formula, default 1e-3); 0 = off
    min_count: int = 5             # words seen fewer times are dropped from the vocabulary (word2vec.c default)
    epochs: int = 5                # passes over the corpus (word2vec.c `-iter`, default 5)
    lr: float | None = None        # starting learning rate; None = 0.025 skip-gram, 0.05 CBOW (word2vec.c)
    min_lr_ratio: float = 1e-4     # lr decays linearly to lr * min_lr_ratio (word2vec.c floor)
    batch_size: int = 4096         # positive examples per step (pairs for skip-gram, centre words for CBOW);
                                   # all pairs of a step see the same old vectors: keep it small (module doc)
    cbow: bool = False             # True: continuous bag of words (mean of context vectors predicts the centre)
    shared_negatives: bool = False # skip-gram only: the context words of one centre share its noise words
                                   # (Ji et al. 2016); ~2x faster on CPU, same expected gradient (see module doc)
    seed: int = 0                  # seeds initialisation, subsampling, windows and noise draws

    @property
    def start_lr(self) -> float:
        return self.lr if self.lr is not None else (0.05 if self.cbow else 0.025)




# -- batches ------------------------------------------------------------------
# A batch is a dict (the Learner calls `model(**batch)`), in one of three layouts:
#  pair (skip-gram)         centre (CBOW)                    grouped (skip-gram, shared negatives)
#   inputs    (B,) context   (B, 2*window) context (0: pad)   (S,) each centre's 2w context slots, in turn
#   targets   (B,) centre    (B,) centre                      (B,) centre, sorted by w
#   negatives (B, negative)  (B, negative), one set a centre  (B, negative), one set a centre
#   mask      -              (B, 2*window) True: real slot    (S,) True: real slot
#   widths    -              -                                (B,) w, the centre's farthest context offset
# B counts pairs in the pair layout and centre words in the others (data.skipgram.grouped_batches).


# -- the model ----------------------------------------------------------------
class Word2Vec(nn.Module):
    """Input vectors (the word vectors we keep) and output vectors (for the predicted words).

    forward(**batch) returns the negative-sampling loss (2013b eq. 4)
        -log σ(u_o · h) - Σ_k log σ(-u_k · h)
    summed over the batch's positive pairs and divided by the constant `pairs_per_step`. h is
    the context word's input vector (skip-gram) or the mean of the context's (CBOW), u_o the
    centre word's output vector and u_k the noise words'. Dividing by a constant rather than
    by this batch's count keeps the step exact: SGD at lr·pairs_per_step moves each pair by lr,
    as word2vec.c does, and the loss still reads as a per-pair mean.
    `sgd_step` makes that SGD step without autograd: the fast path on CPU.
    """

    def __init__(self, vocab_size: int, dim: int, cbow: bool = False, pairs_per_step: int = 1, seed: int = 0):
        super().__init__()
        self.cbow, self.pairs_per_step = cbow, pairs_per_step
        # sparse=True: a step touches a few thousand of the V rows, so the gradient is sparse.
        self.in_embed = nn.Embedding(vocab_size, dim, sparse=True)     # word2vec.c syn0
        self.out_embed = nn.Embedding(vocab_size, dim, sparse=True)    # word2vec.c syn1neg
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            self.in_embed.weight.copy_((torch.rand(vocab_size, dim, generator=gen) - 0.5) / dim)
            self.out_embed.weight.zero_()

    def forward(self, inputs, targets, negatives, mask=None, widths=None) -> torch.Tensor:
        predicted = torch.cat([targets[:, None], negatives], 1)                      # (B, 1+K)
        u = self.out_embed(predicted)                                                # (B, 1+K, d)
        weight = _noise_weight(targets, negatives, u.dtype)                          # (B, 1+K)
        sign = torch.ones_like(weight[:1])
        sign[:, 1:] = -1                                                             # the positive, then noise
        in_rows = self.in_embed(inputs)                                              # (B, d), (B, 2W, d) or (S, d)
        if self.cbow:
            m = mask.unsqueeze(-1).to(u.dtype)                                       # (B, 2W, 1)
            total = (in_rows * m).sum(1)                                             # (B, d)
            # word2vec.c (and gensim's cbow_mean=1) average the context going forward but add
            # the whole error to every context vector going back: mean's value, total's gradient.
            h = total + (total / m.sum(1) - total).detach()
            scores = torch.einsum("bkd,bd->bk", u, h)                                # (B, 1+K)
        elif widths is None:                                                         # skip-gram, one pair per row
            scores = torch.einsum("bkd,bd->bk", u, in_rows)                          # (B, 1+K)
        else:                                                                        # skip-gram, shared noise words
            slot_centre = torch.repeat_interleave(torch.arange(len(targets), device=targets.device), 2 * widths)
            scores = torch.einsum("skd,sd->sk", u[slot_centre], in_rows)             # (S, 1+K)
            weight = weight[slot_centre] * mask[:, None]
        loss = -(F.logsigmoid(sign * scores) * weight).sum()
        return loss / self.pairs_per_step

    @torch.no_grad()
    def sgd_step(self, batch: dict, lr: float, scratch: dict | None = None) -> torch.Tensor:
        """One SGD step moving each pair by `lr`; returns the summed loss from before the step.

        Same arithmetic as forward + backward + SGD (a test checks it), written out: no
        autograd graph, no sparse-gradient tensors, and scratch buffers reused across steps
        (`scratch`, one dict per thread): on CPU a fresh 10 MB tensor per step costs page
        faults (measured ~3x slower).
        """
        scratch = {} if scratch is None else scratch
        inputs, targets, negatives, mask = batch["inputs"], batch["targets"], batch["negatives"], batch.get("mask")
        W_in, W_out = self.in_embed.weight, self.out_embed.weight
        B, K, d = len(targets), negatives.shape[1], W_in.shape[1]
        if B == 0:
            return W_in.new_zeros(())

        def buffer(name, shape, dtype=W_in.dtype):
            return _buffer(scratch, name, shape, dtype, W_in.device)

        predicted = buffer("predicted", (B, 1 + K), torch.int64)
        predicted[:, 0] = targets
        predicted[:, 1:] = negatives
        u = torch.index_select(W_out, 0, predicted.view(-1), out=buffer("u", (B * (1 + K), d))).view(B, 1 + K, d)
        weight = _noise_weight(targets, negatives, W_in.dtype)                       # (B, 1+K)
        if "widths" in batch:
            return _shared_negatives_step(W_in, W_out, inputs, mask, batch["widths"], predicted, u, weight, lr, buffer)
        if inputs.ndim == 1:
            h = torch.index_select(W_in, 0, inputs, out=buffer("h", (B, d)))         # (B, d)
        else:                                                                        # CBOW: the mean of the context
            ctx = torch.index_select(W_in, 0, inputs.view(-1), out=buffer("h", (inputs.numel(), d)))
            m = mask.unsqueeze(-1).to(W_in.dtype)
            h = (ctx.view(*inputs.shape, d) * m).sum(1) / m.sum(1)                    # (B, d)
        # one h per row: (B, 1, d) x (B, d, 1+K), ~2.5x faster on CPU than (B, 1+K, d) x (B, d, 1) (measured)
        scores = torch.bmm(h.unsqueeze(1), u.transpose(1, 2), out=buffer("scores", (B, 1, 1 + K))).squeeze(1)
        loss, g = _loss_and_g(scores, weight, lr)
        grad_h = torch.bmm(g.unsqueeze(1), u, out=buffer("grad_h", (B, 1, d))).squeeze(1)              # (B, d)
        # Output rows one predicted slot at a time: g[:, k] h is (B, d), small enough to stay in
        # cache between the multiply and the index_add_ (measured ~1.3x faster than (B, 1+K, d)).
        grad_u = buffer("grad_u", (B, d))
        for k in range(1 + K):
            W_out.index_add_(0, predicted[:, k], torch.mul(h, g[:, k:k + 1], out=grad_u))
        if self.cbow:  # the whole error to each real context word (see forward)
            W_in.index_add_(0, inputs[mask], grad_h[:, None, :].expand(-1, mask.shape[1], -1)[mask])
        else:
            W_in.index_add_(0, inputs, grad_h)
        return loss

    def positives(self, batch: dict) -> int:
        """How many positive examples a batch holds: pairs for skip-gram, centre words for CBOW."""
        if "widths" not in batch:
            return len(batch["targets"])
        return int(batch["mask"].sum())

    def word_vectors(self, words: Sequence[str], counts=None) -> WordVectors:
        """The input vectors as `WordVectors` (word2vec.c saves syn0 the same way)."""
        return WordVectors(words, self.in_embed.weight.detach().float().cpu().numpy(), counts)


def _loss_and_g(scores: torch.Tensor, weight: torch.Tensor, lr: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The summed loss of (..., 1+K) scores (the positive first, then noise) and word2vec.c's
    g = (label - σ(score)) · lr, weighted: minus the loss gradient times lr."""
    pos, neg = scores[..., 0], scores[..., 1:]
    loss = -((F.logsigmoid(pos) * weight[..., 0]).sum() + (F.logsigmoid(-neg) * weight[..., 1:]).sum())
    g = torch.sigmoid(scores).neg_()
    g[..., 0] += 1
    return loss, g.mul_(weight).mul_(lr)


def _shared_negatives_step(W_in, W_out, inputs, mask, widths, predicted, u, weight, lr, buffer) -> torch.Tensor:
    """sgd_step for the grouped layout: every context slot of a centre against the centre's 1+K
    output rows u, as three small batched matrix products per width w (centres sorted by w, 2w
    slots each; a padded slot is id 0 with weight 0, so it adds a zero row)."""
    B, K1, d = u.shape
    S = len(inputs)
    ctx = torch.index_select(W_in, 0, inputs, out=buffer("h", (S, d)))                  # (S, d)
    # MKL's small batched GEMMs run 2-3x faster with a contiguous right operand (a transposed view
    # is fine on the left; measured): u is copied once as (B, d, 1+K), g below as (B, 1+K, 2w).
    u_t = buffer("u_t", (B, d, K1)).copy_(u.transpose(1, 2))
    groups, r, s = [], 0, 0                                                             # per width w: its centres'
    for w, n in enumerate(torch.bincount(widths).tolist()):                            # rows and their slots
        if n:
            groups.append((w, n, slice(r, r + n), slice(s, s + 2 * w * n)))
            r, s = r + n, s + 2 * w * n
    scores, slot_weight = buffer("scores", (S, K1)), buffer("slot_weight", (S, K1))
    for w, n, rows, slots in groups:
        torch.bmm(ctx[slots].view(n, 2 * w, d), u_t[rows], out=scores[slots].view(n, 2 * w, K1))
        slot_weight[slots].view(n, 2 * w, K1).copy_(weight[rows, None, :].expand(n, 2 * w, K1))
    loss, g = _loss_and_g(scores, slot_weight.mul_(mask[:, None]), lr)                  # (S, 1+K)
    grad_h, grad_u, g_t = buffer("grad_h", (S, d)), buffer("grad_u", (B, K1, d)), buffer("g_t", (S, K1))
    for w, n, rows, slots in groups:
        gw = g_t[slots].view(n, K1, 2 * w).copy_(g[slots].view(n, 2 * w, K1).transpose(1, 2))
        torch.bmm(gw.transpose(1, 2), u[rows], out=grad_h[slots].view(n, 2 * w, d))     # (n, 2w, d)
        torch.bmm(gw, ctx[slots].view(n, 2 * w, d), out=grad_u[rows])                   # (n, 1+K, d)
    W_out.index_add_(0, predicted.view(-1), grad_u.view(-1, d))
    W_in.index_add_(0, inputs, grad_h)
    return loss


def _noise_weight(targets: torch.Tensor, negatives: torch.Tensor, dtype) -> torch.Tensor:
    """(B, 1+K) 1 for the positive and each noise word, 0 for a noise word equal to the positive
    (word2vec.c: `if (target == word) continue;`)."""
    weight = torch.ones(len(targets), 1 + negatives.shape[1], dtype=dtype, device=targets.device)
    weight[:, 1:] = negatives != targets[:, None]
    return weight


def _buffer(scratch: dict, name: str, shape, dtype, device) -> torch.Tensor:
    """A reused scratch tensor of `shape` from `scratch` (grown when a batch is bigger than any before)."""
    n = math.prod(shape)
    buf = scratch.get(name)
    if buf is None or buf.numel() < n or buf.dtype != dtype or buf.device != device:
        buf = scratch[name] = torch.empty(int(n * 1.25) + 16, dtype=dtype, device=device)
    return buf[:n].view(shape)


ENGINES = ("auto", "compiled", "hogwild", "learner")


