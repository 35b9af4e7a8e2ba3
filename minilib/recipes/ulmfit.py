"""ULMFiT's training recipes (Howard & Ruder 2018): stage (b) fine_tune_lm, stage (c)
fine_tune_classifier with gradual unfreezing, discriminative LRs and slanted triangular LRs (§3.2-3.3).
The classifier itself is minilib/models/ulmfit.py."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from minilib.data.batching import EOS, LMStream
from minilib.data.words import tokenize
from minilib.data.vocab import Vocab
from minilib.eval.classification import accuracy
from minilib.models.awd_lstm import AWDLSTM
from minilib.models.ulmfit import ULMFiTClassifier
from minilib.train import Learner
from minilib.train.callbacks import ARTAR, Callback
from minilib.train.schedules import slanted_triangular


def _stlr_from(offset: int, total: int, cut_frac: float = 0.1, ratio: float = 32):
    """Eq. 3's STLR over `total` steps, for a fit that starts at step `offset` of them: gradual
    unfreezing fits one epoch at a time, yet the paper's T counts every iteration."""
    def schedule(step: int, _fit_total: int) -> float:
        return slanted_triangular(offset + step, total, cut_frac=cut_frac, ratio=ratio)
    return schedule


def fine_tune_classifier(model: ULMFiTClassifier, train, valid=None, epochs: int = 4, lr: float = 1e-2, *,
                         gradual_unfreezing: bool = True, discriminative: bool = True, stlr: bool = True,
                         cycle_per_stage: bool = False, stage_lr_decay: float = 1.0,
                         cut_frac: float = 0.1, ratio: float = 32, callbacks: Sequence[Callback] = (),
                         weight_decay: float = 0.01, clip: float | None = 1.0, progress: bool | str = False,
                         device=None, checkpoint_dir: str | Path | None = None,
                         checkpoint_every: int | None = None) -> Learner:
    """Stage (c), §3.3, with each trick switchable (for the ablations of the paper's Table 7).

    gradual_unfreezing: epoch 1 trains only the head (freeze_to(-1)), each later epoch unfreezes
        one more layer group, lowest last (freeze_to(-2), -3, ...); then everything trains.
        Off: every group trains from the start.
    discriminative: the head gets `lr`, each group below lr / 2.6 (§3.2); off: `lr` for all.
    stlr: slanted triangular LRs (cut_frac 0.1, ratio 32; eq. 3); off: constant `lr`.
    cycle_per_stage: off, one STLR cycle spans all the steps of all epochs (eq. 3's T counts every
        iteration), so the groups unfrozen last only ever see its decayed tail. On, each unfreezing
        stage gets a cycle of its own and the epochs after the last unfreezing share one (as
        fastai's ULMFiT recipe runs fit_one_cycle per stage); stage k's peak is lr * stage_lr_decay**k.
    checkpoint_dir / checkpoint_every: the Learner's (one file per fit), so a killed run resumes where it stopped.
    Returns the Learner (learner.history holds every epoch; learner.model is `model`).
    """
    learner = Learner(model, train, valid, loss_fn=F.cross_entropy, metrics=[accuracy] if valid is not None else (),
                      callbacks=callbacks, weight_decay=weight_decay, clip=clip, progress=progress, device=device,
                      checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every)
    n_groups = len(learner.groups)
    n_stages = min(epochs, n_groups) if gradual_unfreezing else 1
    stage_epochs = [1] * (n_stages - 1) + [epochs - n_stages + 1]  # the last stage: every epoch that is left
    total, done = epochs * len(train), 0
    for stage, n_epochs in enumerate(stage_epochs):
        if gradual_unfreezing:
            learner.freeze_to(-(stage + 1) if stage + 1 < n_groups else 0)  # -1: the head only; 0: all
        else:
            learner.unfreeze()
        peak = lr * stage_lr_decay ** stage if cycle_per_stage else lr
        lrs = slice(peak) if discriminative else peak  # slice(hi): /2.6 per group below the top
        for _ in range(1 if cycle_per_stage else n_epochs):
            fit_epochs = n_epochs if cycle_per_stage else 1
            if not stlr:
                schedule = "constant"
            elif cycle_per_stage:
                schedule = _stlr_from(0, fit_epochs * len(train), cut_frac, ratio)  # a cycle of this stage's own
            else:
                schedule = _stlr_from(done, total, cut_frac, ratio)
            learner.fit(fit_epochs, lr=lrs, schedule=schedule)
            done += fit_epochs * len(train)
            if learner.should_stop or learner.interrupted:
                return learner
    return learner


def grow_vocab(old_vocab: Vocab, token_lists: Iterable[Iterable[str]], min_count: int = 3,
               max_new: int | None = None) -> Vocab:
    """The pretrained vocabulary plus target-domain words seen >= `min_count` times, appended
    (old ids unchanged), most frequent first; at most `max_new` of them."""
    extra = Vocab.build(token_lists, min_count=min_count, specials=())
    new = [(t, c) for t, c in zip(extra.itos, extra.counts) if t not in old_vocab]
    if max_new is not None:
        new = new[:max_new]
    return Vocab(old_vocab.itos + [t for t, _ in new], list(old_vocab.counts) + [int(c) for _, c in new],
                 unk=old_vocab.unk)


@torch.no_grad()
def extend_vocab(lm: AWDLSTM, old_vocab: Vocab, new_vocab: Vocab) -> AWDLSTM:
    """A copy of `lm` over `new_vocab` (§3.2 / fastai): a word both vocabularies share keeps its
    embedding row and decoder bias; a new word starts from the mean embedding row and the mean bias.
    The decoder stays tied to the embedding."""
    import copy
    import dataclasses

    if len(old_vocab) != lm.cfg.vocab_size:
        raise ValueError(f"the LM has {lm.cfg.vocab_size} rows but old_vocab has {len(old_vocab)} tokens: "
                         f"pass the vocabulary the LM was trained with")
    new_lm = AWDLSTM(dataclasses.replace(lm.cfg, vocab_size=len(new_vocab)))
    state = {k: v for k, v in copy.deepcopy(lm.state_dict()).items()
             if k not in ("encoder.embedding.weight", "decoder.weight", "decoder.bias")}
    new_lm.load_state_dict(state, strict=False)
    old_w, old_b = lm.encoder.embedding.weight, lm.decoder.bias
    new_w = old_w.mean(0).expand(len(new_vocab), -1).clone()  # (V', E)
    new_b = old_b.mean().expand(len(new_vocab)).clone()  # (V',)
    pairs = [(i, old_vocab.stoi[t]) for i, t in enumerate(new_vocab.itos) if t in old_vocab.stoi]
    if pairs:
        new_idx, old_idx = map(torch.tensor, zip(*pairs))
        new_w[new_idx], new_b[new_idx] = old_w[old_idx], old_b[old_idx]
    new_lm.encoder.embedding.weight.copy_(new_w)  # also the decoder's weight (tied)
    new_lm.decoder.bias.copy_(new_b)
    return new_lm


def lm_stream_ids(texts: Iterable[str], vocab: Vocab, eos: str | None = EOS) -> np.ndarray:
    """One id stream from many texts, each followed by `eos` when the vocabulary has it."""
    tail = [vocab.stoi[eos]] if eos is not None and eos in vocab else []
    out = []
    for t in texts:
        out += vocab.encode(tokenize(t)) + tail
    return np.asarray(out, dtype=np.int64)


def fine_tune_lm(lm: AWDLSTM, texts: Sequence[str], vocab: Vocab, epochs: int = 1, lr: float = 3e-3, *,
                 discriminative: bool = True, stlr: bool = True, batch_size: int = 32, bptt: int = 70,
                 valid_frac: float = 0.05, seed: int = 0, callbacks: Sequence[Callback] = (),
                 progress: bool | str = False, device=None, checkpoint_dir: str | Path | None = None,
                 checkpoint_every: int | None = None) -> Learner:
    """Stage (b), §3.2: fine-tune the LM on target-domain `texts` (e.g. movie_lm_text()).

    discriminative: lr=slice(lr), the top group (last LSTM + decoder bias) gets `lr`, each group
    below /2.6; stlr: slanted triangular LR over all steps (cut_frac 0.1, ratio 32). AR/TAR stay
    on (ARTAR). The last `valid_frac` of the texts (in a seeded shuffle) is held out: the
    Learner's valid_loss is their cross-entropy. `vocab` must be the LM's (see extend_vocab).
    checkpoint_dir / checkpoint_every: the Learner's, so a killed run resumes where it stopped.
    """
    if len(vocab) != lm.cfg.vocab_size:
        raise ValueError(f"the LM has {lm.cfg.vocab_size} rows but the vocabulary {len(vocab)}: "
                         f"use extend_vocab(lm, old_vocab, vocab) first")
    order = np.random.default_rng(seed).permutation(len(texts))
    n_valid = int(len(texts) * valid_frac)
    train_ids = lm_stream_ids([texts[i] for i in order[n_valid:]], vocab)
    valid = LMStream(lm_stream_ids([texts[i] for i in order[:n_valid]], vocab), batch_size, bptt) if n_valid else None
    train = LMStream(train_ids, batch_size, bptt)
    learner = Learner(lm, train, valid, loss_fn=None, callbacks=[ARTAR(), *callbacks], progress=progress,
                      device=device, checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every)
    learner.fit(epochs, lr=slice(lr) if discriminative else lr, schedule="stlr" if stlr else "constant")
    return learner
