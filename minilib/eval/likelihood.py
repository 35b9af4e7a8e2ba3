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
    out = []
    try:
        for start in range(0, len(contexts), batch_size):
            seqs = [(list(c) + cont)[-block_size:] for c in contexts[start:start + batch_size]]
            if any(len(s) == len(cont) for s in seqs):
                raise ValueError("an empty context: give each at least one token")
            x = torch.zeros(len(seqs), max(map(len, seqs)), dtype=torch.long)
            for i, s in enumerate(seqs):
                x[i, :len(s)] = torch.as_tensor(s)
            logits = model(x.to(device))
            logits = (logits[0] if isinstance(logits, tuple) else logits).double().log_softmax(-1).cpu()
            for i, s in enumerate(seqs):
                first = len(s) - len(cont)                       # the continuation's first position
                pred = logits[i, first - 1:len(s) - 1]           # the predictions of those positions
                out.append(pred.gather(1, torch.as_tensor(cont)[:, None]).sum())
    finally:
        model.train(was_training)
    return torch.stack(out)
