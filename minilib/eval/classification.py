"""Classification metrics: accuracy and error rate of a model over a batch iterator."""
from __future__ import annotations

from typing import Iterable

import torch
from torch import nn


def accuracy(logits: torch.Tensor, target: torch.Tensor) -> float:
    return float((logits.argmax(-1) == target).float().mean())


@torch.no_grad()
def predict(model: nn.Module, batches: Iterable) -> tuple[torch.Tensor, torch.Tensor]:
    """(predicted classes, true labels) over (ids, lengths, labels) batches, in eval mode."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    preds, labels = [], []
    try:
        for ids, lengths, y in batches:
            preds.append(model(ids.to(device), lengths.to(device)).argmax(-1).cpu())
            labels.append(y)
    finally:
        model.train(was_training)
    return torch.cat(preds), torch.cat(labels)


def error_rate(model: nn.Module, batches: Iterable) -> float:
    """Fraction of documents classified wrongly."""
    preds, labels = predict(model, batches)
    return float((preds != labels).float().mean())


def balanced_accuracy(preds, labels) -> float:
    """Mean over the classes that occur in `labels` of the share of that class predicted right (macro-averaged
    recall): 1/k for a model that always answers the same class, whatever the classes' sizes."""
    preds, labels = torch.as_tensor(preds), torch.as_tensor(labels)
    return float(torch.stack([(preds[labels == c] == c).float().mean() for c in labels.unique()]).mean())

