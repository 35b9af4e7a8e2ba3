"""A word vocabulary: tokens <-> integer ids, with counts.

    >>> vocab = Vocab.build([tokenize(t) for t in texts], min_count=2, max_size=20_000)
    >>> ids = vocab.encode(["the", "whale"])      # [5, 1187]
    >>> vocab.decode(ids)                         # ['the', 'whale']
    >>> vocab.itos[:3], vocab.counts[:3]          # specials first (count 0), then by frequency

Ids are deterministic: specials first in the order given, then tokens by
descending count, ties broken alphabetically.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

UNK = "<unk>"


class Vocab:
    """Token <-> id maps, aligned counts, and an unknown-word id for out-of-vocabulary tokens."""

    def __init__(self, itos: Sequence[str], counts: Sequence[int] | None = None, unk: str | None = UNK):
        self.itos: list[str] = list(itos)
        self.stoi: dict[str, int] = {tok: i for i, tok in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("duplicate tokens in itos")
        self.counts: np.ndarray = (np.zeros(len(self.itos), dtype=np.int64) if counts is None
                                   else np.asarray(counts, dtype=np.int64))
        if self.counts.shape != (len(self.itos),):
            raise ValueError(f"counts has shape {self.counts.shape}, expected ({len(self.itos)},)")
        if unk is not None and unk not in self.stoi:
            raise ValueError(f"unknown-word token {unk!r} is not in the vocabulary")
        self.unk = unk

    @classmethod
    def build(cls, token_lists: Iterable[Iterable[str]], min_count: int = 1, max_size: int | None = None,
              specials: Sequence[str] = (UNK,)) -> "Vocab":
        """Count tokens and keep those seen >= `min_count` times.

        `max_size` caps the whole vocabulary, specials included, so an embedding
        table built from it has exactly `len(vocab)` rows. The unknown-word token
        is "<unk>" if it is among `specials` (else encoding an unseen token fails).
        """
        counter: Counter[str] = Counter()
        for tokens in token_lists:
            counter.update(tokens)
        for s in specials:
            counter.pop(s, None)
        kept = sorted((t for t, c in counter.items() if c >= min_count), key=lambda t: (-counter[t], t))
        if max_size is not None:
            kept = kept[:max(0, max_size - len(specials))]
        itos = [*specials, *kept]
        counts = [0] * len(specials) + [counter[t] for t in kept]
        return cls(itos, counts, unk=UNK if UNK in specials else None)

    @property
    def unk_id(self) -> int | None:
        """Id of the unknown-word token, or None if this vocabulary has none."""
        return None if self.unk is None else self.stoi[self.unk]

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.stoi

    def __getitem__(self, token: str) -> int:
        """Id of `token` (the unknown-word id if it is out of vocabulary)."""
        return self.encode([token])[0]

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {' '.join(self.itos[:8])}{' ...' if len(self) > 8 else ''})"

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Ids of `tokens`; out-of-vocabulary tokens map to `unk_id` (KeyError if there is none)."""
        if self.unk is None:
            return [self.stoi[t] for t in tokens]
        get, unk = self.stoi.get, self.stoi[self.unk]
        return [get(t, unk) for t in tokens]

    def encode_array(self, tokens: Iterable[str]) -> np.ndarray:
        """Like `encode`, as an int64 array (e.g. a whole corpus for an LM stream)."""
        return np.asarray(self.encode(tokens), dtype=np.int64)

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens for `ids` (a list, array or tensor of ints)."""
        itos = self.itos
        return [itos[int(i)] for i in ids]

    def save(self, path: str | os.PathLike) -> None:
        """Write the vocabulary as JSON (itos, counts, unk)."""
        Path(path).write_text(json.dumps({"itos": self.itos, "counts": self.counts.tolist(), "unk": self.unk},
                                         ensure_ascii=False))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Vocab":
        d = json.loads(Path(path).read_text())
        return cls(d["itos"], d["counts"], unk=d.get("unk"))
