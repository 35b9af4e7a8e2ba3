"""Batches: token streams for language models (LMStream, AWD-LSTM's variable-length BPTT,
ELMo's char windows) and padded texts for classifiers."""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import torch

from minilib.data.chars import _char_ids_cached
from minilib.data.words import tokenize
from minilib.data.vocab import Vocab

EOS = "<eos>"  # after every line of the pretraining stream: the LM reads it as "a text starts here"


class LMStream:
    """A token stream as next-word batches, the way AWD-LSTM and nanoGPT feed a language model.

    The stream is split into `batch_size` contiguous rows (row b holds the
    b-th slice of the text), and each batch is the next `bptt` columns:
    x = tokens[t : t+bptt], y = tokens[t+1 : t+bptt+1], both (batch_size, bptt).
    Consecutive batches continue each row, so a recurrent model can carry its
    hidden state from one batch to the next.
    """

    def __init__(self, ids, batch_size: int, bptt: int):
        ids = torch.as_tensor(np.asarray(ids), dtype=torch.long)
        n_cols = (len(ids) - 1) // batch_size
        if n_cols < 2:
            raise ValueError(f"a stream of {len(ids)} tokens is too short for batch_size={batch_size}; "
                             f"use more text or a smaller batch")
        self.batch_size, self.bptt = batch_size, bptt
        self.x = ids[: n_cols * batch_size].view(batch_size, n_cols)
        self.y = ids[1: n_cols * batch_size + 1].view(batch_size, n_cols)

    @property
    def n_tokens(self) -> int:
        """Tokens predicted in one pass over the stream."""
        return self.x.numel()

    def __len__(self) -> int:
        return -(-self.x.shape[1] // self.bptt)

    def __iter__(self):
        for start in range(0, self.x.shape[1], self.bptt):
            yield self.x[:, start:start + self.bptt], self.y[:, start:start + self.bptt]


class VariableBPTTStream(LMStream):
    """§4.1 variable-length BPTT over an LMStream's rows (batch_size, n_cols).

    Each batch's length is drawn as in the paper: bptt with probability p_full, else bptt/2,
    plus N(0, std) noise; at least 5 and at most bptt + max_extra tokens (the authors' code).
    So every token is, across epochs, at a different distance from a batch start.
    len() is LMStream's (ceil(n_cols / bptt)) and an epoch yields at most that many batches
    (the mean length is ~0.98 bptt, so the last ~2% of each row may be left out that epoch).
    The lengths come from a generator seeded by (seed, epoch): runs and resumes repeat.
    """

    def __init__(self, ids, batch_size: int, bptt: int = 70, p_full: float = 0.95, std: float = 5.0,
                 max_extra: int = 40, seed: int = 0):
        super().__init__(ids, batch_size, bptt)
        self.p_full, self.std, self.max_extra, self.seed, self.epoch = p_full, std, max_extra, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def seq_lens(self):
        """The batch lengths of this epoch, in order."""
        rng = np.random.default_rng((self.seed, self.epoch))
        n_cols, start = self.x.shape[1], 0
        for _ in range(len(self)):
            if start >= n_cols:
                return
            mean = self.bptt if rng.random() < self.p_full else self.bptt / 2
            seq_len = min(max(5, int(rng.normal(mean, self.std))), self.bptt + self.max_extra)
            yield min(seq_len, n_cols - start)
            start += seq_len

    def __iter__(self):
        start = 0
        for seq_len in self.seq_lens():
            yield self.x[:, start:start + seq_len], self.y[:, start:start + seq_len]
            start += seq_len


class RandomWindows:
    """nanoGPT's batches for a Transformer LM: each batch is `batch_size` windows of `block_size` + 1
    consecutive tokens at random offsets of one long stream; x = window[:-1], y = window[1:].

    A Transformer carries no state between batches, so windows need not continue each other, and
    random offsets put every token at every distance from a window's start over training. An
    "epoch" is `steps` batches; offsets come from a generator seeded by (seed, epoch), so a
    resumed run draws the same batches.
    """

    def __init__(self, ids, batch_size: int, block_size: int, steps: int, seed: int = 0, starts=None):
        self.ids = np.asarray(ids)
        if len(self.ids) <= block_size + 1:
            raise ValueError(f"a stream of {len(self.ids)} tokens is too short for block_size={block_size}: "
                             f"use more text or a shorter block")
        self.batch_size, self.block_size, self.steps, self.seed, self.epoch = batch_size, block_size, steps, seed, 0
        # `starts`: the only offsets a window may begin at (e.g. sentence starts); None = any offset
        if starts is not None:
            starts = np.asarray(starts)
            starts = starts[starts < len(self.ids) - block_size - 1]
        self.starts = starts
        if self.starts is not None and len(self.starts) == 0:
            raise ValueError(f"no allowed start leaves room for a window of {block_size} tokens")

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        rng = np.random.default_rng((self.seed, self.epoch))
        span = np.arange(self.block_size + 1)
        for _ in range(self.steps):
            if self.starts is None:
                starts = rng.integers(0, len(self.ids) - self.block_size - 1, self.batch_size)
            else:
                starts = self.starts[rng.integers(0, len(self.starts), self.batch_size)]
            w = torch.from_numpy(self.ids[starts[:, None] + span].astype(np.int64))   # (B, block_size + 1)
            yield w[:, :-1], w[:, 1:]


def encode_texts(texts: Iterable[str], vocab: Vocab, bos: str | None = EOS) -> list[np.ndarray]:
    """Each text as int64 token ids, starting with `bos` when the vocabulary has it (fastai's xxbos)."""
    start = [vocab.stoi[bos]] if bos is not None and bos in vocab else []
    return [np.asarray(start + vocab.encode(tokenize(t)), dtype=np.int64) for t in texts]


def pad_collate(seqs: Sequence[np.ndarray], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad variable-length id sequences: (ids (B, T_max), lengths (B,)).

    Right padding keeps every real position exact: the LSTM reads left to right, so outputs
    before a document's end never see its padding; the pooling masks the padded positions.
    """
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    if (lengths == 0).any():
        raise ValueError("an empty document: every text needs at least one token (encode_texts adds a start token)")
    ids = torch.full((len(seqs), int(lengths.max())), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.as_tensor(np.asarray(s), dtype=torch.long)
    return ids, lengths


class ClassificationBatches:
    """(ids, lengths, labels) batches of variable-length documents, sorted-ish by length.

    Training (shuffle=True), fastai's SortishSampler: shuffle, cut into chunks of 50 batches,
    sort each chunk by length, cut it into batches and shuffle the batches, so a batch holds
    documents of similar length (little padding) and the order still changes every epoch
    (seeded by (seed, epoch): runs and resumes repeat). Evaluation (shuffle=False): sorted by
    length, longest first.
    """

    def __init__(self, docs: Sequence[np.ndarray], labels: Sequence[int], batch_size: int = 32,
                 shuffle: bool = True, pad_id: int = 0, seed: int = 0):
        if len(docs) != len(labels):
            raise ValueError(f"{len(docs)} documents but {len(labels)} labels")
        if len(docs) == 0:
            raise ValueError("no documents to batch")
        self.docs, self.labels = list(docs), torch.as_tensor(np.asarray(labels), dtype=torch.long)
        self.lengths = np.array([len(d) for d in self.docs])
        self.batch_size, self.shuffle, self.pad_id, self.seed, self.epoch = batch_size, shuffle, pad_id, seed, 0
        self._len: int | None = None

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        if self._len is None:
            self._len = len(self.batch_indices())
        return self._len

    def batch_indices(self) -> list[np.ndarray]:
        if not self.shuffle:
            order = np.argsort(-self.lengths, kind="stable")
            return [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        rng = np.random.default_rng((self.seed, self.epoch))
        order = rng.permutation(len(self.docs))
        chunk = self.batch_size * 50
        batches = []
        for c in range(0, len(order), chunk):
            part = order[c:c + chunk]
            part = part[np.argsort(-self.lengths[part], kind="stable")]
            batches += [part[i:i + self.batch_size] for i in range(0, len(part), self.batch_size)]
        # BatchNorm cannot normalise a batch of one in training: fold a lone document into its neighbour.
        for i in range(len(batches) - 1, 0, -1):
            if len(batches[i]) == 1:
                batches[i - 1] = np.concatenate([batches[i - 1], batches.pop(i)])
        return [batches[i] for i in rng.permutation(len(batches))]

    def __iter__(self):
        for idx in self.batch_indices():
            ids, lengths = pad_collate([self.docs[i] for i in idx], self.pad_id)
            yield ids, lengths, self.labels[idx]


class TaggingBatches:
    """(ids, lengths, ends, tags) batches for a tagger that reads subword pieces (GPTTagger): an item is
    (ids, ends, tags) — the pieces of a sentence, the position of each word's last piece, one tag per word.
    Padded per batch (ids with pad_id, ends with -1, tags with -100), shuffled per (seed, epoch) when
    training (runs and resumes repeat), in order otherwise."""

    def __init__(self, items: Sequence[tuple[list[int], list[int], list[int]]], batch_size: int = 32,
                 shuffle: bool = True, pad_id: int = 0, seed: int = 0):
        if not items:
            raise ValueError("no sentences to batch")
        self.items, self.batch_size, self.shuffle, self.pad_id, self.seed, self.epoch = \
            list(items), batch_size, shuffle, pad_id, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return -(-len(self.items) // self.batch_size)

    def __iter__(self):
        order = (np.random.default_rng((self.seed, self.epoch)).permutation(len(self.items)) if self.shuffle
                 else np.arange(len(self.items)))
        for start in range(0, len(order), self.batch_size):
            chunk = [self.items[i] for i in order[start:start + self.batch_size]]
            ids, lengths = pad_collate([np.asarray(c[0]) for c in chunk], self.pad_id)
            width = max(len(c[1]) for c in chunk)
            ends = torch.full((len(chunk), width), -1, dtype=torch.long)
            tags = torch.full((len(chunk), width), -100, dtype=torch.long)
            for row, (_, e, t) in enumerate(chunk):
                ends[row, :len(e)], tags[row, :len(t)] = torch.as_tensor(e), torch.as_tensor(t)
            yield ids, lengths, ends, tags


class ELMoBatches:
    """Fixed-length windows of real text for the biLM, as (ids (B, T+2), chars (B, T, C)) batches.

    The documents' tokens are joined into one stream (bilm-tf likewise streams sentences) and
    cut into windows of T+2 tokens with a stride of T, so each token is an input exactly once
    per epoch and every input position has a forward target (next) and a backward target
    (previous). Word ids come from the capped `vocab` (<unk> for the rest), chars from the
    words themselves. Windows are shuffled each epoch (set_epoch), with a fixed seed; the
    last incomplete batch is dropped, so every batch has the same size."""

    def __init__(self, docs: Iterable, vocab, batch_size: int, window: int = 20, max_chars: int = 50,
                 shuffle: bool = True, seed: int = 0):
        from minilib.data.words import tokenize

        types: dict[str, int] = {}
        stream = [types.setdefault(tok, len(types))
                  for d in docs for tok in tokenize(getattr(d, "text", d))]
        n_windows = (len(stream) - 2) // window
        if n_windows < batch_size:
            raise ValueError(f"{len(stream)} tokens make {n_windows} windows of {window}, fewer than "
                             f"batch_size={batch_size}; use more text or a smaller batch/window")
        words = list(types)
        self.type_chars = torch.tensor([_char_ids_cached(w, max_chars) for w in words], dtype=torch.int16)
        self.type_ids = torch.tensor(vocab.encode(words), dtype=torch.long)   # type -> word id
        self.stream = torch.tensor(stream, dtype=torch.long)                  # token -> type
        self.batch_size, self.window, self.shuffle, self.seed = batch_size, window, shuffle, seed
        self.n_windows, self.epoch = n_windows, 0

    @property
    def n_tokens(self) -> int:
        """Input tokens per epoch (each predicted once by each direction)."""
        return len(self) * self.batch_size * self.window

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n_windows // self.batch_size

    def __iter__(self):
        order = (torch.randperm(self.n_windows, generator=torch.Generator().manual_seed(self.seed + self.epoch))
                 if self.shuffle else torch.arange(self.n_windows))
        offsets = torch.arange(self.window + 2)
        for i in range(len(self)):
            starts = order[i * self.batch_size:(i + 1) * self.batch_size] * self.window
            types = self.stream[starts[:, None] + offsets]                  # (B, T+2)
            yield self.type_ids[types], self.type_chars[types[:, 1:-1]].long()
