"""A word-level LSTM language model: the neural LM that ELMo and ULMFiT grew from.

    embedding → dropout → LSTM (n layers) → dropout → [projection] → decoder (tied to the embedding)

It reads a (B, T) block of word ids and returns (B, T, V) next-word logits.
Between consecutive blocks of an `LMStream` it carries its hidden state
(detached, so gradients stop at the block edge: truncated backpropagation
through time), which lets it use context longer than one block; `reset()`
forgets it. The Learner calls `reset()` at each epoch start and around every
evaluation (see minilib/train/learner.py).

Weight tying (Press & Wolf 2017, "Using the Output Embedding to Improve
Language Models"; Inan et al. 2017, "Tying Word Vectors and Word
Classifiers"): the decoder's V×E weight *is* the input embedding matrix, so a
word has one vector both for reading and for predicting it. It removes V·E
parameters (most of a small LM) and lowers perplexity. When the LSTM's hidden
size differs from the embedding size, a linear projection maps H to E first.

    >>> cfg = LSTMLMConfig.for_profile(vocab_size=len(vocab))
    >>> model = LSTMLM(cfg)
    >>> learner = Learner(model, LMStream(train_ids, cfg.batch_size, cfg.bptt),
    ...                   LMStream(valid_ids, cfg.batch_size, cfg.bptt), loss_fn=lm_loss)
    >>> learner.fit(cfg.epochs, lr=cfg.lr, schedule="onecycle")
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from minilib import runtime

State = tuple[torch.Tensor, torch.Tensor]   # (h, c), each (n_layers, B, H)


@dataclass
class LSTMLMConfig:
    vocab_size: int                # V: rows of the embedding, columns of the decoder
    emb_dim: int = 256             # E: word vector size (also the decoder's input size when tied)
    hidden: int = 256              # H: LSTM state size per layer
    n_layers: int = 2              # stacked LSTM layers
    dropout: float = 0.1           # on the embeddings, between LSTM layers and on the top output (Zaremba et al. 2014)
    tie_weights: bool = True       # decoder weight = embedding (Press & Wolf 2017); adds an H→E projection if H ≠ E
    init_range: float = 0.1        # embedding init U(-r, r), as in Zaremba et al. (2014) and the PyTorch word LM example
    # training (kept next to the model so a lesson reads its sizes from one place)
    batch_size: int = 32           # parallel rows of the LMStream
    bptt: int = 35                 # tokens per row per step: how far gradients flow back (Zaremba et al. 2014: 35)
    lr: float = 3e-3               # peak AdamW learning rate for the one-cycle schedule
    epochs: int = 1                # passes over the training stream

    @classmethod
    def for_profile(cls, vocab_size: int, profile: str | None = None, **overrides) -> "LSTMLMConfig":
        """Sizes for the smoke / laptop / full profile (docs/design.md §3), then any field overridden by keyword.

        laptop: 2 layers × 256 over a 10k vocabulary takes ~1.0 s a step of 64 × 35 tokens fp32 on an idle
        2-core CPU with both threads (1.9 s on one): the tied decoder's three 2,240 × 10k × 256 matrix
        products are ~70 % of it, so unlike a small LSTM it wants every core; one pass over lesson 02's
        ~0.8M tokens takes ~6 min. No dropout there: in a single pass every batch is new text and
        there is nothing to overfit yet (measured on 1M words, vocabulary 10k: held-out perplexity 146.5
        with dropout 0.1, 142.0 without). On this CPU bf16 autocast (MINILIB_CPU_BF16=1) was slower than
        fp32 for both the LSTM and the decoder, so it stays off.
        """
        sizes = runtime.pick({
            "smoke": dict(emb_dim=32, hidden=32, n_layers=1, dropout=0.0, batch_size=16, bptt=32, lr=1e-2,
                          epochs=1),
            "laptop": dict(emb_dim=256, hidden=256, n_layers=2, dropout=0.0, batch_size=64, bptt=35, lr=5e-3,
                           epochs=1),
            "full": dict(emb_dim=512, hidden=1024, n_layers=2, dropout=0.3, batch_size=64, bptt=70, lr=2e-3,
                         epochs=6),
        }, profile)
        return replace(cls(vocab_size=vocab_size, **sizes), **overrides)


class LSTMLM(nn.Module):
    """Word-level LSTM LM with tied input/output embeddings and hidden state carried across batches."""

    def __init__(self, cfg: LSTMLMConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.emb_dim)
        self.drop = nn.Dropout(cfg.dropout)
        self.lstm = nn.LSTM(cfg.emb_dim, cfg.hidden, cfg.n_layers, batch_first=True,
                            dropout=cfg.dropout if cfg.n_layers > 1 else 0.0)
        out_dim = cfg.emb_dim if cfg.tie_weights else cfg.hidden
        # H → E so the tied decoder (E wide) can read the LSTM output; none needed when H == E
        self.proj = nn.Linear(cfg.hidden, out_dim, bias=False) if cfg.hidden != out_dim else None
        self.decoder = nn.Linear(out_dim, cfg.vocab_size)
        if cfg.tie_weights:
            self.decoder.weight = self.embed.weight      # one Parameter, two uses
        nn.init.uniform_(self.embed.weight, -cfg.init_range, cfg.init_range)
        nn.init.zeros_(self.decoder.bias)
        self.state: State | None = None                   # carried between forward calls; see reset()

    def reset(self) -> None:
        """Forget the carried hidden state (a new, unrelated text starts)."""
        self.state = None

    def init_output_bias(self, counts) -> None:
        """Start the decoder bias at log unigram frequencies, so step 0 already predicts like the
        unigram model instead of uniformly (Karpathy, "A recipe for training neural networks", 2019:
        "init well"). `counts`: training counts per word id, e.g. np.bincount(train_ids, minlength=V)."""
        counts = torch.as_tensor(np.asarray(counts), dtype=torch.float32) + 1.0   # add-one: no log(0)
        with torch.no_grad():
            self.decoder.bias.copy_((counts / counts.sum()).log().to(self.decoder.bias.device))

    def run(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """(logits, new_state) for ids `x` (B, T) starting from `state` (None: zeros); keeps no state itself."""
        e = self.drop(self.embed(x))                      # (B, T, E)
        out, state = self.lstm(e, state)                  # (B, T, H); h, c: (n_layers, B, H)
        out = self.drop(out)
        if self.proj is not None:
            out = self.proj(out)                          # (B, T, E)
        return self.decoder(out), state                   # (B, T, V)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Next-word logits (B, T, V) for ids (B, T), continuing from the carried state."""
        state = self.state
        if state is not None and (state[0].shape[1] != x.shape[0] or state[0].device != x.device):
            state = None                                  # a different batch layout: start afresh
        logits, state = self.run(x, state)
        # detach: the next batch continues from these values, but gradients stop here (truncated BPTT)
        self.state = (state[0].detach(), state[1].detach())
        return logits

    def num_params(self) -> int:
        """Trainable parameters, the tied matrix counted once."""
        return sum(p.numel() for p in self.parameters())
