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

Two engines drive it (`train_word2vec(engine=...)`): `fit_hogwild`, worker threads that
share the tables without locks as word2vec.c's threads do (Recht et al. 2011, "Hogwild!"),
and `fit_with_learner`, minilib's Learner with autograd and sparse-gradient SGD. Both
report progress and return a minilib History.

One option departs from the papers: `shared_negatives=True` gives all context words of a
centre the same noise words (Ji, Shen, Satish et al. 2016, "Parallelizing Word2Vec in Shared
and Distributed Memory", arXiv:1604.04661). Each pair still meets `negative` draws from
U^(3/4), so the expected gradient is unchanged; the step becomes small matrix products
over fewer rows, ~2.3x faster per CPU core (measured).

Measured with `python -m minilib bench word2vec` (2.29M tokens, 5 epochs, 2 cores shared with
other jobs, so wall-clock ratios swing with their load): per-pair negatives ran at 0.25-0.66x
gensim's words/s (median of 3 alternating runs 0.48x; per CPU-second ~0.43x), shared negatives
at 0.93-0.98x; WordSim-353 from 0.002 below to 0.05 above gensim's in the same runs. gensim
does each pair in cache-resident C; here a step streams (batch, 1+negative, dim) tensors
through memory a few times, and that traffic, not arithmetic, sets the speed.
"""
from __future__ import annotations

import contextlib
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from minilib.eval.similarity import WordVectors


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


# Measured on 2.1M words of news, skip-gram, 1 epoch, WordSim-353 Spearman: 0.20 with 4096 pairs
# per step (gensim: 0.18-0.20), 0.12 with 16384, 0.03 or NaN with 65536. Damping over-used rows
# did not rescue large batches: the updates of a step are stale, not only too many.
LARGEST_SAFE_BATCH = 8192


# -- vocabulary and corpus ----------------------------------------------------
@dataclass
class Corpus:
    """The training text as one flat id stream over the kept vocabulary (ids in descending frequency)."""
    tokens: torch.Tensor           # (N,) int64 ids into `words`; out-of-vocabulary tokens removed
    sentence: torch.Tensor         # (N,) int32 index of the sentence/document of each token: no pair crosses it
    words: list[str]               # (V,) kept words, most frequent first
    counts: np.ndarray             # (V,) their counts in the training text
    raw_words: int                 # tokens in the input, out-of-vocabulary ones included (for words/s)
    old_ids: np.ndarray = field(repr=False, default=None)  # (V,) the caller's id of each kept word

    def __len__(self) -> int:
        return len(self.tokens)


def prepare_corpus(token_ids: Sequence, counts=None, words: Sequence[str] | None = None,
                   min_count: int = 5) -> Corpus:
    """Flatten sentences of token ids and keep words seen at least `min_count` times.

    token_ids: a list of 1-D int arrays (lists, numpy or torch), one per sentence or document.
    counts:    counts[i] = occurrences of id i in this text; None: counted here.
    words:     words[i] = the string for id i (None: the ids as strings).
    Kept words are renumbered by descending count (ties by id), as word2vec.c sorts its vocabulary.
    """
    arrays = [np.asarray(t.cpu() if isinstance(t, torch.Tensor) else t, dtype=np.int64).reshape(-1)
              for t in token_ids]
    lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
    flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    size = int(flat.max()) + 1 if len(flat) else 0
    if counts is None:
        counts = np.bincount(flat, minlength=size)
    counts = np.asarray(counts, dtype=np.int64)
    if len(flat) and size > len(counts):
        raise ValueError(f"token id {size - 1} has no count: counts has {len(counts)} entries")
    if words is not None and len(words) != len(counts):
        raise ValueError(f"{len(words)} words but {len(counts)} counts: they must describe the same ids")
    kept = np.flatnonzero(counts >= min_count)
    kept = kept[np.argsort(-counts[kept], kind="stable")]        # most frequent first
    if len(kept) == 0:
        raise ValueError(f"no word occurs min_count={min_count} times; lower min_count or give more text")
    new_id = np.full(len(counts), -1, dtype=np.int64)
    new_id[kept] = np.arange(len(kept))
    sentence = np.repeat(np.arange(len(arrays), dtype=np.int32), lengths)
    mapped = new_id[flat]
    keep = mapped >= 0
    names = [str(i) for i in kept] if words is None else [words[i] for i in kept]
    return Corpus(tokens=torch.from_numpy(mapped[keep]), sentence=torch.from_numpy(sentence[keep]),
                  words=names, counts=counts[kept], raw_words=int(len(flat)), old_ids=kept)


def keep_probabilities(counts, sample: float) -> np.ndarray:
    """P(keep) of each word under frequent-word subsampling, as word2vec.c computes it.

    word2vec.c: ran = (sqrt(cn / (sample * train_words)) + 1) * (sample * train_words) / cn,
    where train_words is the total count of the vocabulary; capped at 1. (Mikolov et al. 2013b
    §2.3 give P(discard) = 1 - sqrt(t/f); the code's version keeps a little more.) sample=0: keep all.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if sample <= 0:
        return np.ones_like(counts)
    threshold = sample * counts.sum()
    return np.minimum(1.0, (np.sqrt(counts / threshold) + 1.0) * threshold / np.maximum(counts, 1))


def noise_distribution(counts, power: float = 0.75) -> np.ndarray:
    """The negative-sampling distribution U(w)^(3/4) / Z (Mikolov et al. 2013b §2.2)."""
    weights = np.asarray(counts, dtype=np.float64) ** power
    return weights / weights.sum()


class AliasSampler:
    """Draw from a fixed discrete distribution in O(1) per sample (Walker's alias method, Vose 1991).

    word2vec.c fills a table of 1e8 ints instead; the alias table is exact and needs 2 numbers per word.
    """

    def __init__(self, probs, device="cpu"):
        probs = np.asarray(probs, dtype=np.float64)
        n = len(probs)
        scaled = probs * n / probs.sum()
        accept, alias = np.ones(n), np.arange(n)
        small = [i for i in range(n) if scaled[i] < 1.0]   # one-off O(V) setup, not the training loop
        large = [i for i in range(n) if scaled[i] >= 1.0]
        while small and large:
            s, l = small.pop(), large.pop()
            accept[s], alias[s] = scaled[s], l
            scaled[l] -= 1.0 - scaled[s]
            (small if scaled[l] < 1.0 else large).append(l)
        self.accept = torch.tensor(accept, dtype=torch.float32, device=device)  # (V,) keep column i w.p. accept[i]
        self.alias = torch.tensor(alias, dtype=torch.int64, device=device)      # (V,) ... else take alias[i]

    def sample(self, shape, generator: torch.Generator | None = None) -> torch.Tensor:
        dev = self.alias.device
        column = torch.randint(len(self.alias), shape, device=dev, generator=generator)
        coin = torch.rand(shape, device=dev, generator=generator)
        return torch.where(coin < self.accept[column], column, self.alias[column])


# -- batches ------------------------------------------------------------------
# A batch is a dict (the Learner calls `model(**batch)`), in one of two layouts:
#  pair layout (skip-gram):                 centre layout (CBOW, skip-gram with shared negatives):
#   inputs     (B,) context ids              (B, 2*window) the centre's context ids (0 where padded)
#   targets    (B,) centre ids               (B,) centre ids
#   negatives  (B, negative) noise ids       (B, negative) noise ids, one set per centre
#   mask       -                             (B, 2*window) True where the context slot is real
# B counts positive pairs in the pair layout and centre words in the centre layout.


def window_offsets(window: int, device=None) -> torch.Tensor:
    """(2*window,) the context offsets -window..-1, 1..window."""
    d = torch.arange(1, window + 1, device=device)
    return torch.cat([-d.flip(0), d])


def context_slots(sentence: torch.Tensor, reduced: torch.Tensor, lo: int, hi: int, window: int):
    """Context positions of centres lo..hi-1 of a stream, and which are in use.

    sentence: (N,) sentence index per token; reduced: (N,) each centre's drawn window b.
    Returns positions (n, 2*window) into the stream and valid (n, 2*window): offset |d| <= b
    of that centre, inside the stream, and in the same sentence. One vectorised pass, no
    loop over tokens.
    """
    offsets = window_offsets(window, sentence.device)                             # (2W,)
    centre = torch.arange(lo, hi, device=sentence.device)                         # (n,)
    pos = centre[:, None] + offsets                                               # (n, 2W)
    valid = offsets.abs() <= reduced[lo:hi, None]                                 # dynamic window
    valid &= (pos >= 0) & (pos < len(sentence))
    pos.clamp_(0, len(sentence) - 1)
    valid &= sentence[pos] == sentence[lo:hi, None]                               # never across sentences
    return pos, valid


class Word2VecBatches:
    """Iterable of batch dicts (see above): one pass over the corpus per `iter()`, freshly subsampled.

    Each epoch draws the subsample and every centre's reduced window over the whole stream
    (vectorised), then cuts the stream into spans of raw text; each span becomes one batch of
    all its (context, centre) pairs plus their noise words. The number of batches per epoch is
    fixed (`len()`), so a learning-rate schedule knows the total.
    """

    def __init__(self, corpus: Corpus, config: Word2VecConfig, device=None, seed: int | None = None):
        self.corpus, self.config = corpus, config
        self.device = torch.device(device or "cpu")
        self.tokens = corpus.tokens.to(self.device)
        self.sentence = corpus.sentence.to(self.device)
        keep = keep_probabilities(corpus.counts, config.sample)
        self.keep_prob = torch.tensor(keep, dtype=torch.float32, device=self.device)
        self.noise = AliasSampler(noise_distribution(corpus.counts), self.device)
        # Raw tokens per batch so that a batch holds ~batch_size positives on average.
        kept_share = float((keep * corpus.counts).sum() / max(corpus.counts.sum(), 1))
        per_token = kept_share * (1 if config.cbow else config.window + 1)  # E[2b] = window + 1 pairs per centre
        self.batch_size = config.batch_size
        if self.batch_size > LARGEST_SAFE_BATCH:
            warnings.warn(f"batch_size={self.batch_size} pairs per step: word2vec learns worse with batches above "
                          f"~{LARGEST_SAFE_BATCH} (all updates of a step use the same old vectors; see "
                          f"minilib/models/word2vec.py) and can diverge", stacklevel=2)
        self.span = max(1, round(self.batch_size / max(per_token, 1e-9)))
        self.centre_layout = config.cbow or config.shared_negatives
        self.generator = torch.Generator(self.device)
        self.generator.manual_seed(config.seed if seed is None else seed)

    def __len__(self) -> int:
        return max(1, math.ceil(len(self.tokens) / self.span))

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        g, W, n_raw = self.generator, self.config.window, len(self.tokens)
        keep = torch.rand(n_raw, device=self.device, generator=g) < self.keep_prob[self.tokens]
        tokens, sentence = self.tokens[keep], self.sentence[keep]                # this epoch's subsample
        reduced = torch.randint(1, W + 1, (len(tokens),), device=self.device, generator=g)
        # bounds[k] = kept tokens before raw position k*span: batch k holds the centres in between.
        marks = torch.arange(0, len(self) + 1, device=self.device) * self.span
        kept_before = torch.cat([torch.zeros(1, dtype=torch.int64, device=self.device), keep.cumsum(0)])
        bounds = kept_before[marks.clamp(max=n_raw)].tolist()
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            pos, valid = context_slots(sentence, reduced, lo, hi, W)
            centre = tokens[lo:hi]
            if self.centre_layout:
                has_context = valid.any(1)                                     # word2vec.c skips a centre with none
                batch = {"inputs": torch.where(valid, tokens[pos], 0)[has_context],
                         "targets": centre[has_context], "mask": valid[has_context]}
            else:
                batch = {"inputs": tokens[pos][valid],                          # (B,) context words, centre by centre
                         "targets": centre[:, None].expand_as(pos)[valid]}      # (B,) their centre words
            batch["negatives"] = self.noise.sample((len(batch["targets"]), self.config.negative), generator=g)
            yield batch


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

    def forward(self, inputs, targets, negatives, mask=None) -> torch.Tensor:
        predicted = torch.cat([targets[:, None], negatives], 1)                      # (B, 1+K)
        u = self.out_embed(predicted)                                                # (B, 1+K, d)
        weight = _noise_weight(targets, negatives, u.dtype)                          # (B, 1+K)
        sign = torch.ones_like(weight)
        sign[:, 1:] = -1                                                             # the positive, then noise
        in_rows = self.in_embed(inputs)                                              # (B, d) or (B, 2W, d)
        if self.cbow:
            m = mask.unsqueeze(-1).to(u.dtype)                                       # (B, 2W, 1)
            total = (in_rows * m).sum(1)                                             # (B, d)
            # word2vec.c (and gensim's cbow_mean=1) average the context going forward but add
            # the whole error to every context vector going back: mean's value, total's gradient.
            h = total + (total / m.sum(1) - total).detach()
            scores = torch.einsum("bkd,bd->bk", u, h)                                # (B, 1+K)
        elif inputs.ndim == 1:                                                       # skip-gram, one pair per row
            scores = torch.einsum("bkd,bd->bk", u, in_rows)                          # (B, 1+K)
        else:                                                                        # skip-gram, shared noise words
            scores = torch.einsum("bkd,bcd->bck", u, in_rows)                        # (B, 2W, 1+K)
            sign, weight = sign[:, None, :], weight[:, None, :] * mask[:, :, None]
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
        if inputs.ndim == 1:
            h = torch.index_select(W_in, 0, inputs, out=buffer("h", (B, d)))         # (B, d)
        else:
            ctx = torch.index_select(W_in, 0, inputs.view(-1), out=buffer("h", (inputs.numel(), d)))
            ctx = ctx.view(*inputs.shape, d)                                         # (B, 2W, d)
            m = mask.unsqueeze(-1).to(W_in.dtype)
        if self.cbow:
            h = (ctx * m).sum(1) / m.sum(1)                                          # (B, d) mean of the context
        if inputs.ndim == 1 or self.cbow:  # one h per row: (B, 1, d) x (B, d, 1+K), ~2.5x faster on CPU
            # than (B, 1+K, d) x (B, d, 1) (measured)
            scores = torch.bmm(h.unsqueeze(1), u.transpose(1, 2), out=buffer("scores", (B, 1, 1 + K))).squeeze(1)
        else:                                                                        # every context x shared targets
            scores = torch.bmm(ctx, u.transpose(1, 2), out=buffer("scores", (B, ctx.shape[1], 1 + K)))
            weight = weight[:, None, :] * m                                          # (B, 2W, 1+K)
        pos, neg = scores[..., 0], scores[..., 1:]
        loss = -((F.logsigmoid(pos) * weight[..., 0]).sum() + (F.logsigmoid(-neg) * weight[..., 1:]).sum())
        # g = (label - σ(score)) * lr: word2vec.c's `g`, minus the loss gradient times lr.
        g = torch.sigmoid(scores).neg_()
        g[..., 0] += 1
        g.mul_(weight).mul_(lr)
        if inputs.ndim == 1 or self.cbow:
            grad_h = torch.bmm(g.unsqueeze(1), u, out=buffer("grad_h", (B, 1, d))).squeeze(1)          # (B, d)
            # Output rows one predicted slot at a time: g[:, k] h is (B, d), small enough to stay in
            # cache between the multiply and the index_add_ (measured ~1.3x faster than (B, 1+K, d)).
            grad_u = buffer("grad_u", (B, d))
            for k in range(1 + K):
                W_out.index_add_(0, predicted[:, k], torch.mul(h, g[:, k:k + 1], out=grad_u))
        else:
            grad_h = torch.bmm(g, u, out=buffer("grad_h", (*inputs.shape, d)))                        # (B, 2W, d)
            grad_u = torch.bmm(g.transpose(1, 2), ctx, out=buffer("grad_u", (B, 1 + K, d)))           # (B, 1+K, d)
            W_out.index_add_(0, predicted.view(-1), grad_u.view(-1, d))
        if self.cbow:  # the whole error to each real context word (see forward)
            W_in.index_add_(0, inputs[mask], grad_h[:, None, :].expand(-1, mask.shape[1], -1)[mask])
        else:          # (shared: a padded slot adds a zero row, its g is 0)
            W_in.index_add_(0, inputs.reshape(-1), grad_h.reshape(-1, d))
        return loss

    def positives(self, batch: dict) -> int:
        """How many positive examples a batch holds: pairs for skip-gram, centre words for CBOW."""
        if self.cbow or "mask" not in batch:
            return len(batch["targets"])
        return int(batch["mask"].sum())

    def word_vectors(self, words: Sequence[str], counts=None) -> WordVectors:
        """The input vectors as `WordVectors` (word2vec.c saves syn0 the same way)."""
        return WordVectors(words, self.in_embed.weight.detach().float().cpu().numpy(), counts)


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


# -- training -----------------------------------------------------------------
@dataclass
class Word2VecResult:
    vectors: WordVectors           # the trained word vectors (input vectors), most frequent word first
    model: Word2Vec                # both embedding tables, to continue training or inspect
    history: object                # minilib.train.History: loss and lr per step, one row per epoch
    train_seconds: float           # wall time of the training epochs (batches drawn + steps)
    raw_words: int                 # corpus words per epoch, out-of-vocabulary ones included
    epochs: int

    @property
    def words_per_second(self) -> float:
        """Corpus words processed per second of training (raw words, as gensim counts them)."""
        return self.raw_words * self.epochs / max(self.train_seconds, 1e-9)


ENGINES = ("auto", "hogwild", "learner")


def train_word2vec(token_ids: Sequence, counts=None, config: Word2VecConfig | None = None, *,
                   words: Sequence[str] | None = None, device=None, progress: bool | str = True,
                   engine: str = "auto", threads: int | None = None) -> Word2VecResult:
    """Train word2vec on sentences of token ids; return the vectors, the model and the history.

    token_ids: list of int arrays (one per sentence or document); counts/words describe the ids
    (see `prepare_corpus`). The learning rate starts at config.start_lr and decays linearly to
    1e-4 of it over all steps (word2vec.c), with plain SGD on the sparse rows a batch touches.

    engine: 'learner' trains through minilib.train.Learner (autograd, sparse gradients, torch SGD);
    'hogwild' runs `Word2Vec.sgd_step` in `threads` worker threads that share the tables without
    locks, as word2vec.c's threads do (Recht et al. 2011, "Hogwild!"), with the same progress
    display, schedule and History. 'auto' = hogwild: the faster on CPU (see minilib/bench/word2vec.py).
    """
    from minilib import runtime

    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}: use one of {', '.join(ENGINES)}")
    config = config or Word2VecConfig()
    dev = runtime.device(str(device) if device is not None else None)
    corpus = prepare_corpus(token_ids, counts, words, config.min_count)
    batches = Word2VecBatches(corpus, config, device=dev)
    model = Word2Vec(len(corpus.words), config.dim, cbow=config.cbow, pairs_per_step=batches.batch_size,
                     seed=config.seed).to(dev)
    if engine == "learner":
        history = fit_with_learner(model, batches, config, progress=progress)
    else:
        history = fit_hogwild(model, batches, config, progress=progress, threads=threads)
    seconds = sum(row["time"] for row in history.epochs)  # the epochs only, as both engines time them
    return Word2VecResult(vectors=model.word_vectors(corpus.words, corpus.counts), model=model, history=history,
                          train_seconds=seconds, raw_words=corpus.raw_words, epochs=config.epochs)


@contextlib.contextmanager
def one_thread_per_op(device: torch.device):
    """On CPU, run each torch op on one core for the duration (restored after).

    word2vec's ops are small (a few MB); on a busy 2-core machine a 2-thread OpenMP op
    waits for a descheduled thread at every barrier: generating batches measured 35x
    slower with 2 threads than with 1 while another job ran. Parallelism comes from
    worker threads instead (see fit_hogwild), as in word2vec.c and gensim.
    """
    if torch.device(device).type != "cpu":
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def fit_with_learner(model: Word2Vec, batches: Word2VecBatches, config: Word2VecConfig, progress=True):
    """Train through minilib's Learner: `model(**batch)` -> loss, autograd, torch SGD on sparse gradients.

    One process thread, so on CPU it is slower than fit_hogwild (autograd builds sparse
    gradient tensors, and one worker instead of one per core: measured ~2-4x), but it is
    the same loss, schedule and update (tests/test_word2vec.py checks sgd_step against it).
    """
    from minilib.train import Learner

    learner = Learner(model, batches, loss_fn=None, opt=lambda groups: PairSGD(groups, model.pairs_per_step),
                      weight_decay=0.0, clip=None, device=batches.device, progress=progress)
    with one_thread_per_op(batches.device):   # "linear": down to 1e-4 of lr, as word2vec.c
        return learner.fit(config.epochs, lr=config.start_lr, schedule="linear")


class PairSGD(torch.optim.Optimizer):
    """Plain SGD (sparse gradients welcome) whose lr is a step per positive pair, as in word2vec.c.

    Word2Vec's loss is the pairs' sum divided by pairs_per_step (a readable per-pair mean),
    so this steps lr * pairs_per_step along its gradient: lr along each pair's own gradient.
    """

    def __init__(self, params, pairs_per_step: int, lr: float = 0.025):
        super().__init__(params, {"lr": lr})
        self.pairs_per_step = pairs_per_step

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"] * self.pairs_per_step)


def fit_hogwild(model: Word2Vec, batches: Word2VecBatches, config: Word2VecConfig, progress=True,
                threads: int | None = None):
    """Train with `Word2Vec.sgd_step` in worker threads sharing the tables (Hogwild), like word2vec.c.

    Each worker takes the next batch, the learning rate for its step number, and updates the
    tables in place; torch ops release the GIL, so threads overlap. Each torch op runs on one
    core (see one_thread_per_op): independent workers, like gensim's, slow down in proportion
    when another job takes a core, where 2-thread ops stall. On CUDA one worker feeds the GPU.
    Returns a minilib History (loss and lr per step, one row per epoch) shown with the
    same progress display as the Learner.
    """
    import threading

    from minilib.train.history import History
    from minilib.train.progress import make_progress
    from minilib.train.schedules import linear_decay

    cuda = batches.device.type != "cpu"
    n_workers = 1 if cuda else (threads or torch.get_num_threads())
    history, bar = History(), make_progress(progress)
    n, epochs = len(batches), config.epochs
    total, lr0 = n * epochs, config.start_lr
    lock, stop = threading.Lock(), threading.Event()
    errors: list[BaseException] = []
    scratches = [{} for _ in range(n_workers)]   # each worker's buffers, kept across epochs
    bar.start(epochs, n, 0, 0)
    with one_thread_per_op(batches.device):
        for epoch in range(epochs):
            bar.begin_epoch(epoch, 0)
            t0, rows = time.perf_counter(), []
            stream = enumerate(iter(batches))

            def worker(scratch: dict):
                try:
                    while not stop.is_set():
                        with lock:  # one thread at a time draws the next batch
                            i, batch = next(stream, (None, None))
                        if batch is None:
                            return
                        lr = lr0 * linear_decay(epoch * n + i, total, floor=config.min_lr_ratio)
                        loss = float(model.sgd_step(batch, lr, scratch))
                        pairs = model.positives(batch)
                        rows.append({"step": epoch * n + i + 1, "epoch": epoch, "loss": loss / max(pairs, 1),
                                     "lr": [lr], "pairs": pairs})   # list.append is atomic
                except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                    errors.append(exc)
                    stop.set()

            workers = [threading.Thread(target=worker, args=(scratch,), daemon=True) for scratch in scratches]
            for w in workers:
                w.start()
            shown = [0]

            def show_new_rows():  # progress is drawn from this (the main) thread only
                while shown[0] < len(rows):
                    row = rows[shown[0]]
                    shown[0] += 1
                    bar.step(epoch, shown[0], row["loss"], row["lr"], row.pop("pairs"), "pairs")

            try:
                while any(w.is_alive() for w in workers):
                    for w in workers:
                        w.join(0.2 / n_workers)   # short waits: Ctrl-C and progress stay responsive
                    show_new_rows()
                show_new_rows()
            except KeyboardInterrupt:
                stop.set()
                for w in workers:
                    w.join()
                raise
            if errors:
                raise errors[0]
            for row in rows:
                row.pop("pairs", None)
            rows.sort(key=lambda r: r["step"])
            history.steps.extend(rows)
            pairs_loss = [r["loss"] for r in rows]
            row = {"epoch": epoch, "step": (epoch + 1) * n, "train_loss": sum(pairs_loss) / max(len(pairs_loss), 1),
                   "time": time.perf_counter() - t0}
            history.epochs.append(row)
            bar.end_epoch(epoch, row)
        bar.end(False)
    return history
