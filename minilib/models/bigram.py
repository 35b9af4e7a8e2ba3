"""The smallest neural language model: the next word from the current word alone.

A bigram table P(next | current) has V×V entries; factorising it through a
d-dimensional embedding (V×d, then d×V) is the first step from counting to
learned representations (Bengio et al. 2003 used the previous n−1 words).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class BigramLM(nn.Module):
    def __init__(self, vocab_size: int, dim: int = 64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)  # current word → vector
        self.out = nn.Linear(dim, vocab_size)       # vector → scores for every next word

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.embed(x))  # (B, T, V) logits


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (nats) over every position of a (B, T, V) batch."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))
