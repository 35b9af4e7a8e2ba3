"""Layer groups: discriminative learning rates and freezing (ULMFiT §3.2–3.3).

A model is split into *layer groups*, lowest (embeddings) first, highest (the
head) last, like fastai's splitter. Then

    lr=slice(1e-4, 1e-2)    spreads LRs geometrically from the lowest group to the highest
    lr=slice(1e-2)          ULMFiT's rule: the top group gets 1e-2, each group below /2.6
    freeze_to(-1)           trains only the top group (gradual unfreezing: -2, -3, …, 0)
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

import torch
from torch import nn

GroupsSpec = Sequence[Iterable] | Callable[[nn.Module], Sequence[Iterable]] | None


def discriminative_lrs(hi: float, n_groups: int, factor: float = 2.6) -> list[float]:
    """LRs lowest group first, the top one `hi`: ULMFiT §3.2, eta_{l-1} = eta_l / 2.6."""
    return [hi / factor ** (n_groups - 1 - i) for i in range(n_groups)]


def spread_lr(lr: float | slice | Sequence[float], n_groups: int) -> list[float]:
    """One LR per layer group from a float (same for all), a slice, or a list."""
    if isinstance(lr, slice):
        if lr.start is None:
            return discriminative_lrs(lr.stop, n_groups)
        if n_groups == 1:
            return [lr.stop]
        # geometric spacing (fastai's even_mults): equal ratios between neighbouring groups
        ratio = (lr.stop / lr.start) ** (1 / (n_groups - 1))
        return [lr.start * ratio ** i for i in range(n_groups)]
    if isinstance(lr, (list, tuple)):
        if len(lr) != n_groups:
            raise ValueError(f"got {len(lr)} learning rates for {n_groups} layer groups")
        return [float(x) for x in lr]
    return [float(lr)] * n_groups


def layer_groups(model: nn.Module, groups: GroupsSpec = None) -> list[list[nn.Parameter]]:
    """Normalise `groups` to lists of parameters, lowest group first.

    `groups` may be None (the model's own `layer_groups()` method if it has one,
    else one group), a callable `model -> groups` (a splitter), or a list whose
    items are modules, parameters or iterables of parameters.
    """
    if groups is None:
        groups = model.layer_groups() if hasattr(model, "layer_groups") else [model]
    elif callable(groups):
        groups = groups(model)
    out, seen = [], set()
    for i, group in enumerate(groups):
        if isinstance(group, nn.Module):
            params = list(group.parameters())
        elif isinstance(group, torch.Tensor):
            params = [group]
        else:
            params = [p for item in group for p in (item.parameters() if isinstance(item, nn.Module) else [item])]
        for p in params:
            if id(p) in seen:
                raise ValueError(f"a parameter of shape {tuple(p.shape)} is in two layer groups (group {i} and an earlier one)")
            seen.add(id(p))
        out.append(params)
    missing = [n for n, p in model.named_parameters() if p.requires_grad and id(p) not in seen]
    if missing:
        raise ValueError(f"{len(missing)} trainable parameters are in no layer group (e.g. {missing[:3]}); "
                         f"add them to a group, or set requires_grad=False to leave them out")
    return out


def set_trainable(groups: list[list[nn.Parameter]], n_frozen: int) -> None:
    """Freeze the lowest `n_frozen` groups (requires_grad=False), unfreeze the rest.

    A frozen parameter gets no gradient, and optimizers skip parameters whose
    .grad is None, so it is neither updated nor weight-decayed. (BatchNorm running
    statistics in frozen groups still update in train mode; none of our models use BN.)
    """
    for i, group in enumerate(groups):
        for p in group:
            p.requires_grad_(i >= n_frozen)


def optimizer_groups(groups: list[list[nn.Parameter]], lrs: list[float],
                     weight_decay: float) -> list[dict]:
    """torch.optim param groups: per layer group, matrices with decay and vectors without.

    Biases and LayerNorm gains (ndim < 2) are not decayed (as in BERT and nanoGPT).
    Each dict has a `layer` key so the fit loop can set its LR from the layer group.
    """
    out = []
    for i, (group, lr) in enumerate(zip(groups, lrs)):
        decay = [p for p in group if p.ndim >= 2]
        no_decay = [p for p in group if p.ndim < 2]
        for params, wd in ((decay, weight_decay), (no_decay, 0.0)):
            if params:
                out.append({"params": params, "lr": lr, "weight_decay": wd, "layer": i})
    return out
