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
    each from its left context, so that every kind of model is scored on the same tokens:
    the mean of `token_nats`, in full precision."""
    return float(token_nats(model, ids, batch_size, bptt).mean())


def token_nats(model, ids, batch_size: int = 32, bptt: int = 64) -> np.ndarray:
    """(len(ids) - 1,) float64: −ln p(ids[t] | ids[:t]) for every t ≥ 1, as the model reads the stream:

    * a torch LM (ids (B, T) -> logits (B, T, V), e.g. LSTMLM, BigramLM): the stream is cut
      into `batch_size` rows read `bptt` tokens at a time, the hidden state carried along each
      row (as in training), and *every* target is scored: the last row is padded and the padding
      masked, where LMStream would drop the tail. Each row starts with a fresh state, so its
      first word is predicted from one word of context;
    * a count-based LM with log_probs(ids) (KneserNey): its log-probabilities of ids[1:].
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 1 or len(ids) < 2:
        raise ValueError(f"need a 1-D stream of at least 2 token ids, got shape {ids.shape}")
    if hasattr(model, "log_probs"):
        return -np.asarray(model.log_probs(ids), dtype=np.float64)[1:]
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
    nats = torch.zeros(batch_size, n_cols, dtype=torch.float64)
    try:
        with torch.no_grad():
            for start in range(0, n_cols, bptt):
                logits = model(x[:, start:start + bptt])                    # (B, T, V)
                target = y[:, start:start + bptt]
                nats[:, start:start + bptt] = torch.nn.functional.cross_entropy(
                    logits.transpose(1, 2).double(), target, ignore_index=-100, reduction="none").cpu()
    finally:
        if stateful:
            model.reset()
        model.train(was_training)
    return nats.flatten()[:n_targets].numpy()


def windowed_nats(model, ids, block_size: int, stride: int | None = None, batch_size: int = 16) -> tuple[float, int]:
    """(total nats, tokens scored) of a fixed-context LM on the stream `ids` (`windowed_token_nats`)."""
    nats = windowed_token_nats(model, ids, block_size, stride, batch_size)
    return float(nats.sum()), len(nats)


def windowed_token_nats(model, ids, block_size: int, stride: int | None = None, batch_size: int = 16) -> np.ndarray:
    """(len(ids) - 1,) float64: −ln p(ids[t] | context) of a fixed-context LM (ids (B, T) -> (logits, _))
    for every t ≥ 1: every token after the first is scored exactly once, from windows of `block_size` tokens that
    advance by `stride` (default block_size // 2), each scoring only its last `stride` tokens, so
    every scored token but the first window's sees at least block_size - stride tokens of context.
    A stride of block_size cuts the text into independent blocks (each block's first tokens then
    see almost nothing). In float64; the model runs in eval mode under no_grad.
    """
    import torch
    import torch.nn.functional as F

    ids = torch.as_tensor(np.asarray(ids, dtype=np.int64))
    stride = stride or block_size // 2
    if len(ids) < 2 or not 0 < stride <= block_size:
        raise ValueError(f"need ≥ 2 ids and 0 < stride ≤ block_size; got {len(ids)} ids, stride={stride}")
    windows, a = [], 1                             # a: the first target not yet scored
    while a < len(ids):
        b = min(len(ids), a + (block_size if a == 1 else stride))   # score targets a .. b-1
        s = max(0, b - 1 - block_size)                              # inputs ids[s : b-1], at most block_size
        windows.append((s, b, a - 1 - s))                           # (start, end, first scored position)
        a = b
    param = next(model.parameters())
    was_training = model.training
    model.eval()
    nats = torch.zeros(len(ids) - 1, dtype=torch.float64)
    try:
        with torch.no_grad():
            for i in range(0, len(windows), batch_size):
                chunk = windows[i:i + batch_size]
                n = max(b - 1 - s for s, b, _ in chunk)
                x = torch.zeros(len(chunk), n, dtype=torch.long)
                y = torch.full((len(chunk), n), -100, dtype=torch.long)
                for row, (s, b, first) in enumerate(chunk):
                    x[row, :b - 1 - s] = ids[s:b - 1]
                    y[row, first:b - 1 - s] = ids[s + 1 + first:b]
                out = model(x.to(param.device))
                logits = out[0] if isinstance(out, tuple) else out
                nll = F.cross_entropy(logits.double().transpose(1, 2), y.to(param.device),
                                      ignore_index=-100, reduction="none").cpu()
                for row, (s, b, first) in enumerate(chunk):
                    nats[s + first:b - 1] = nll[row, first:b - 1 - s]     # targets s+1+first .. b-1
    finally:
        model.train(was_training)
    return nats.numpy()


def unigram_nats(train_ids, valid_ids, vocab_size: int) -> float:
    """Held-out nats per token of the unigram model of the training stream (add-one smoothed): the number a
    language model must beat to have learned anything about order."""
    counts = np.bincount(np.asarray(train_ids, dtype=np.int64), minlength=vocab_size).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    return float(-logp[np.asarray(valid_ids, dtype=np.int64)].mean())
