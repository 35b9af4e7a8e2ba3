"""How likely a language model finds a continuation: the scoring rule behind zero-shot classification.

GPT-1 (§5, "Zero-shot behaviors") used its pretrained LM as a classifier before any fine-tuning:
append a cue to the input and compare the probabilities the LM gives to a few candidate words.
`continuation_log_probs` gives ln p(continuation | context) = Σ ln p(piece_i | context, pieces < i)
for every (context, continuation) pair, batched, for any LM mapping ids (B, T) to logits (B, T, V).
"""
from __future__ import annotations

from typing import Sequence

import torch


@torch.no_grad()
def continuation_log_probs(model, contexts: Sequence[Sequence[int]], continuation: Sequence[int],
                           block_size: int, batch_size: int = 64) -> torch.Tensor:
    """(N,) float64: ln p(continuation | context) for each context (a list of token ids).

    Each sequence is context + continuation, cut from the left to `block_size` tokens (the
    context loses its beginning, never the continuation), right-padded: a left-to-right model's
    predictions at real positions never see the padding after them."""
    cont = list(continuation)
    if not cont or len(cont) >= block_size:
        raise ValueError(f"the continuation needs 1 to {block_size - 1} tokens, got {len(cont)}")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    seqs = [(list(c) + cont)[-block_size:] for c in contexts]
    if any(len(s) == len(cont) for s in seqs):
        raise ValueError("an empty context: give each at least one token")
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))     # batches of like lengths: little padding
    out = torch.zeros(len(seqs), dtype=torch.float64)
    k = len(cont)
    try:
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            x = torch.zeros(len(rows), len(seqs[rows[-1]]), dtype=torch.long)
            for r, i in enumerate(rows):
                x[r, :len(seqs[i])] = torch.as_tensor(seqs[i])
            # the positions whose predictions are the continuation's pieces: the k before each row's end
            where = torch.as_tensor([len(seqs[i]) - k - 1 for i in rows])[:, None] + torch.arange(k)
            if hasattr(model, "hidden") and hasattr(model, "head"):     # a Transformer LM: the head at k positions only
                h = model.hidden(x.to(device))
                logits = model.head(h.gather(1, where.to(device)[..., None].expand(-1, -1, h.size(-1))))
            else:
                logits = model(x.to(device))
                logits = logits[0] if isinstance(logits, tuple) else logits
                logits = logits.gather(1, where.to(device)[..., None].expand(-1, -1, logits.size(-1)))
            logp = logits.double().log_softmax(-1).cpu()                 # (rows, k, V)
            out[rows] = logp.gather(2, torch.as_tensor(cont).expand(len(rows), k)[..., None]).sum((1, 2))
    finally:
        model.train(was_training)
    return out
