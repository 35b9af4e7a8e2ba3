"""Skip-gram training data (Mikolov et al. 2013): subsampled sentences, dynamic windows and
noise words drawn from the unigram^0.75 distribution, as (centre, context, negatives) batches.
The model is minilib/models/word2vec.py; the training loops are minilib/recipes/word2vec.py."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np
import torch

# Measured on 2.1M words of news, skip-gram, 1 epoch, WordSim-353 Spearman: 0.20 with 4096 pairs
# per step (gensim: 0.18-0.20), 0.12 with 16384, 0.03 or NaN with 65536. Damping over-used rows
# did not rescue large batches: the updates of a step are stale, not only too many.
LARGEST_SAFE_BATCH = 8192
GROUPED_CHUNK = 64  # batches whose slots grouped_batches builds together (~45k centres: a few MB at a time)


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


def grouped_batches(tokens: torch.Tensor, sentence: torch.Tensor, reduced: torch.Tensor, bounds: Sequence[int],
                    window: int) -> Iterator[dict[str, torch.Tensor]]:
    """Batches in the grouped layout (minilib/models/word2vec.py), without noise words: batch k holds
    the centres bounds[k]..bounds[k+1]-1.

    A centre's width w is its farthest real context offset (its drawn window, or less at a sentence
    edge); it keeps only its 2w slots -w..-1, 1..w, and a batch's centres are sorted by w, so the step
    runs one small matrix product per width instead of padding every centre to 2*window slots (45 %
    of the slots were padding). The slots of all these batches are built at once: a few dozen tensor
    ops per call rather than per batch (each costs ~50 us on a busy CPU, whatever its size).
    """
    lo, hi = bounds[0], bounds[-1]
    sizes = torch.tensor(bounds, device=tokens.device).diff()
    batch = torch.repeat_interleave(torch.arange(len(sizes), device=tokens.device), sizes)   # (n,) each centre's
    pos, valid = context_slots(sentence, reduced, lo, hi, window)                          # (n, 2W)
    offsets = window_offsets(window, tokens.device).abs()
    width = (valid * offsets).amax(1)                                                      # (n,) 0: no context
    skipped = torch.bincount(batch[width == 0], minlength=len(sizes)).tolist()             # per batch
    order = torch.argsort(batch * (window + 1) + width, stable=True)    # batch by batch, each by width
    width = width[order]
    # each sorted centre's middle 2w columns, as flat indices into the (n, 2W) slots, centre by centre
    slot = (order[:, None] * 2 * window + torch.arange(2 * window, device=tokens.device))[offsets <= width[:, None]]
    mask = valid.view(-1)[slot]
    inputs = tokens[pos.view(-1)[slot]] * mask                                             # 0 at a padded slot
    targets = tokens[lo + order]
    slot_start = torch.cat([width.new_zeros(1), (2 * width).cumsum(0)]).tolist()
    for k in range(len(sizes)):
        first, last = bounds[k] - lo + skipped[k], bounds[k + 1] - lo   # a batch's centres without context come
        s, e = slot_start[first], slot_start[last]                      # first: skipped, as word2vec.c does
        yield {"inputs": inputs[s:e], "targets": targets[first:last], "mask": mask[s:e], "widths": width[first:last]}


class Word2VecBatches:
    """Iterable of batch dicts (see above): one pass over the corpus per `iter()`, freshly subsampled.

    Each epoch draws the subsample and every centre's reduced window over the whole stream
    (vectorised), then cuts the stream into spans of raw text; each span becomes one batch of
    all its (context, centre) pairs plus their noise words. The number of batches per epoch is
    fixed (`len()`), so a learning-rate schedule knows the total.
    """

    def __init__(self, corpus: Corpus, config, device=None, seed: int | None = None):
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
        if self.config.shared_negatives and not self.config.cbow:
            for start in range(0, len(bounds) - 1, GROUPED_CHUNK):
                for batch in grouped_batches(tokens, sentence, reduced, bounds[start:start + GROUPED_CHUNK + 1], W):
                    batch["negatives"] = self.noise.sample((len(batch["targets"]), self.config.negative), generator=g)
                    yield batch
            return
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            pos, valid = context_slots(sentence, reduced, lo, hi, W)
            centre = tokens[lo:hi]
            if self.config.cbow:
                has_context = valid.any(1)                                     # word2vec.c skips a centre with none
                batch = {"inputs": torch.where(valid, tokens[pos], 0)[has_context],
                         "targets": centre[has_context], "mask": valid[has_context]}
            else:
                batch = {"inputs": tokens[pos][valid],                          # (B,) context words, centre by centre
                         "targets": centre[:, None].expand_as(pos)[valid]}      # (B,) their centre words
            batch["negatives"] = self.noise.sample((len(batch["targets"]), self.config.negative), generator=g)
            yield batch
