"""Cross-entropy and perplexity of language models, and the unigram baseline they must beat."""
from __future__ import annotations

import math

import numpy as np


def unigram_cross_entropy(train_ids, eval_ids, vocab_size: int, alpha: float = 1.0) -> float:
    """Cross-entropy (nats per token) on `eval_ids` of the add-`alpha` smoothed unigram model fit on `train_ids`.

    The unigram model predicts every position with the word's overall
    frequency and ignores context: any language model that has learned
    something about word order must do better.
    """
    counts = np.bincount(np.asarray(train_ids), minlength=vocab_size).astype(np.float64) + alpha
    log_p = np.log(counts / counts.sum())
    return float(-log_p[np.asarray(eval_ids)].mean())


def perplexity(cross_entropy_nats: float) -> float:
    """exp(cross-entropy): the effective number of equally likely next words."""
    return math.exp(cross_entropy_nats)


def evaluate_lm(model, ids, batch_size: int = 32, bptt: int = 64) -> float:
    """Cross-entropy (nats per token) of a language model on a held-out stream, scoring ids[1:]
    each from its left context, so that every kind of model is scored on the same tokens.

    * a torch LM (ids (B, T) -> logits (B, T, V), e.g. LSTMLM, BigramLM): the stream is cut
      into `batch_size` rows read `bptt` tokens at a time, the hidden state carried along each
      row (as in training), and *every* target is scored: the last row is padded and the padding
      masked, where LMStream would drop the tail. Each row starts with a fresh state, so its
      first word is predicted from one word of context;
    * a count-based LM with log_probs(ids) (KneserNey): its log-probabilities of ids[1:].

    The mean is over tokens (not over batches), in full precision.
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 1 or len(ids) < 2:
        raise ValueError(f"need a 1-D stream of at least 2 token ids, got shape {ids.shape}")
    if hasattr(model, "log_probs"):
        return float(-model.log_probs(ids)[1:].mean())
    import torch

    n_targets = len(ids) - 1
    n_cols = -(-n_targets // batch_size)
    x = np.zeros(batch_size * n_cols, dtype=np.int64)
    y = np.full(batch_size * n_cols, -100, dtype=np.int64)        # -100: ignored by cross_entropy
    x[:n_targets], y[:n_targets] = ids[:-1], ids[1:]
    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    x = torch.from_numpy(x).view(batch_size, n_cols).to(device)
    y = torch.from_numpy(y).view(batch_size, n_cols).to(device)
    stateful = callable(getattr(model, "reset", None))
    was_training = model.training
    model.eval()
    if stateful:
        model.reset()
    total = 0.0
    try:
        with torch.no_grad():
            for start in range(0, n_cols, bptt):
                logits = model(x[:, start:start + bptt])                    # (B, T, V)
                target = y[:, start:start + bptt]
                total += float(torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]).float(), target.reshape(-1),
                    ignore_index=-100, reduction="sum"))
    finally:
        if stateful:
            model.reset()
        model.train(was_training)
    return total / n_targets
