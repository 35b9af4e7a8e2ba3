"""The LM head's loss: mean next-token cross-entropy over a vocabulary, computed chunk by chunk on a CPU.

`chunked_lm_loss` gives F.cross_entropy(h @ weightᵀ, targets)'s value and gradients without holding the
(B·T, V) logits; `head_loss` picks it on a CPU and the plain head + cross-entropy elsewhere. Kept apart from
models/transformer.py, which reads like the paper: this file is a speed measure, not part of the model.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100  # a target equal to this adds nothing to the loss (padding); F.cross_entropy's default


# -- the LM head and its loss, chunk by chunk ----------------------------------------------------------
def _lm_loss_and_grads(h: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, chunk_size: int,
                       grads: bool) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Mean cross-entropy of the logits h @ weightᵀ against targets and, if `grads`, its gradients
    with respect to h and weight, computed `chunk_size` rows at a time in one reused buffer.

    h: (N, C), weight: (V, C), targets: (N,). For softmax + cross-entropy, d loss / d z = softmax(z)
    - onehot(t) (per row, then / N), so the probabilities computed for the loss turn into the
    gradient in place and feed the two backward GEMMs while the chunk is still in cache.
    """
    valid = targets != IGNORE_INDEX
    t = targets.clamp(min=0)[:, None]                                      # ignored rows point at id 0, zeroed below
    n = valid.sum().clamp(min=1)
    total = h.new_zeros(())
    grad_h = torch.empty_like(h) if grads else None
    grad_w = torch.zeros_like(weight) if grads else None
    buf = h.new_empty(min(chunk_size, len(h)), weight.size(0))            # (chunk, V)
    for i in range(0, len(h), chunk_size):
        rows = slice(i, i + chunk_size)
        hc, tc, vc = h[rows], t[rows], valid[rows]
        p = torch.mm(hc, weight.t(), out=buf[: len(hc)])                   # (n, V) logits z
        z_t = p.gather(1, tc)                                               # (n, 1) the target's logit
        m = p.amax(1, keepdim=True)
        s = p.sub_(m).exp_().sum(1, keepdim=True)                          # p = exp(z - max z), s = its row sums
        total += ((m + s.log() - z_t).squeeze(1) * vc).sum()               # -log softmax(z)_t = logsumexp(z) - z_t
        if grads:
            p.div_(s).scatter_add_(1, tc, torch.full_like(z_t, -1.0))       # softmax(z) - onehot(t)
            if not vc.all():
                p.index_fill_(0, (~vc).nonzero().squeeze(1), 0.0)          # ignored targets add no gradient
            torch.mm(p, weight, out=grad_h[rows])                           # (n, C)
            grad_w.addmm_(p.t(), hc)                                        # (V, C)
    if grads:
        grad_h.div_(n), grad_w.div_(n)
    return total / n, grad_h, grad_w


class _ChunkedLMLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, weight, targets, chunk_size):
        loss, grad_h, grad_w = _lm_loss_and_grads(h, weight, targets, chunk_size, grads=True)
        ctx.save_for_backward(grad_h, grad_w)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):                                           # the gradients, already computed
        grad_h, grad_w = ctx.saved_tensors
        return grad_h * grad_loss, grad_w * grad_loss, None, None


def chunked_lm_loss(h: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                    chunk_size: int | None = None) -> torch.Tensor:
    """F.cross_entropy(h @ weightᵀ, targets, ignore_index=IGNORE_INDEX), same value and gradients,
    without the (B·T, V) logits: the LM head, softmax and its backward run chunk by chunk.

    Why: with a vocabulary of thousands, the logits are the largest tensor of a small LM; the usual
    path writes and re-reads them ~6 times (logits, log-softmax, its gradient, zeros for the NLL
    gradient, ...). Here each chunk of logits becomes the loss and then its own gradient in place,
    in cache. Always fp32 (logits and softmax under bf16 autocast lose the loss's precision).
    h: (B, T, C) or (N, C); weight: (V, C), the LM head (tied: the token embedding); targets: (B, T) or (N,).
    chunk_size: rows per chunk; default 256 on a CPU (the fastest of 64 to 2,048 on a 2-core CPU at
    V = 8k, d = 128) and 4,096 on a GPU (larger GEMMs keep it busy; not measured here).
    """
    h, targets = h.reshape(-1, h.size(-1)), targets.reshape(-1)
    chunk_size = chunk_size or (256 if h.device.type == "cpu" else 4096)
    with torch.autocast(h.device.type, enabled=False):
        h, weight = h.float(), weight.float()
        if torch.is_grad_enabled() and (h.requires_grad or weight.requires_grad):
            return _ChunkedLMLoss.apply(h, weight, targets, chunk_size)
        return _lm_loss_and_grads(h, weight, targets, chunk_size, grads=False)[0]


def head_loss(h: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The LM head's mean cross-entropy (IGNORE_INDEX targets left out). On a CPU `chunked_lm_loss`;
    elsewhere one head GEMM under the autocast in force (bf16 on CUDA) and an fp32 cross-entropy, as
    Hugging Face's GPT-2 does: the chunked path's fp32 GEMMs forgo a GPU's bf16 tensor cores, and a
    custom autograd Function stops torch.compile's graph: on a GPU at GPT-2 small's shape the chunked head
    made minilib's step slower than HF's, eager and compiled (docs/measurements.md)."""
    if h.device.type == "cpu":
        return chunked_lm_loss(h, weight, targets)
    logits = F.linear(h, weight)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1), ignore_index=IGNORE_INDEX)
