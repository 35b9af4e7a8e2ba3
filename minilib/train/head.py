"""fit_head: train a small model on frozen features — the loop behind every probe and feature-based classifier.

ELMo's chapter reads a pretrained network without changing it: the features are computed once and a small
head (a linear probe, a pooled classifier, a tagger) learns on top. That loop is always the same:

    AdamW over the head's parameters; for each epoch, for each minibatch: loss, backward, step; the LR
    either constant or decaying linearly to 0 over the whole run (as in ELMo's task models, §3.3).

    fit_head(head, [batches_epoch_1, batches_epoch_2, ...], loss, lr=3e-3, weight_decay=0.0, steps=n)

The caller keeps what differs: how a batch is drawn (the epochs are iterables, so one may be drawn lazily
from the caller's own generator), what the loss is (it may add an L2 term), and what to record. The whole
fine-tuning loop of a pretrained network, with its schedules and callbacks, is `Learner`.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import torch
from torch import nn


def fit_head(head: nn.Module, epochs: Iterable[Iterable[Any]], loss: Callable[[nn.Module, Any], torch.Tensor], *,
             lr: float, weight_decay: float, steps: int | None = None,
             on_step: Callable[[int, torch.Tensor], None] | None = None,
             on_epoch: Callable[[int], None] | None = None) -> nn.Module:
    """Train `head` in place with AdamW and return it in eval mode.

    `epochs` yields one iterable of batches per epoch; `loss(head, batch)` gives the scalar to minimise.
    With `steps` (the run's total), the LR decays linearly from `lr` to 0 over them; without, it stays at
    `lr`. `on_step(step, loss)` sees every step's loss (step counts from 1), `on_epoch(epoch)` runs after each
    epoch (counted from 1) with the head in eval mode; training resumes in train mode."""
    opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / steps)) if steps else None
    step = 0
    for epoch, batches in enumerate(epochs, start=1):
        head.train()
        for batch in batches:
            value = loss(head, batch)
            opt.zero_grad()
            value.backward()
            opt.step()
            if sched is not None:
                sched.step()
            step += 1
            if on_step is not None:
                on_step(step, value)
        head.eval()
        if on_epoch is not None:
            on_epoch(epoch)
    return head.eval()
