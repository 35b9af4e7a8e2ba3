"""ULMFiT: Howard & Ruder (2018), "Universal Language Model Fine-tuning for Text Classification".

Three stages on one AWD-LSTM (minilib/models/awd_lstm.py):

    (a) pretrain the LM on general text         python -m minilib pretrain awd-lstm  (minilib/pretrain.py)
    (b) fine-tune the LM on target-domain text  fine_tune_lm: discriminative LRs + STLR (§3.2)
    (c) fine-tune a classifier on the labels    ULMFiTClassifier + fine_tune_classifier: concat pooling,
                                                gradual unfreezing, BPT3C (§3.3)

    from minilib.pretrain import load_pretrained
    lm, vocab, meta = load_pretrained("checkpoints/awd-lstm-laptop.pt")
    new_vocab = grow_vocab(vocab, [tokenize(t) for t in movie_lm_text()])
    lm = extend_vocab(lm, vocab, new_vocab)                      # §3.2 / fastai: new words get the mean row
    fine_tune_lm(lm, movie_lm_text(), new_vocab, epochs=1, lr=3e-3)
    clf = ULMFiTClassifier(lm.encoder, n_classes=2)
    train = ClassificationBatches(encode_texts(texts, new_vocab), labels, batch_size=32)
    learner = fine_tune_classifier(clf, train, None, epochs=4, lr=1e-2)

The three tricks of stage (c) (gradual unfreezing, discriminative LRs, STLR) are switches of
fine_tune_classifier, so the lesson can take each one out (the paper's Table 6 ablations).
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from minilib.data.batching import LMStream
from minilib.data.tokenize import tokenize
from minilib.data.vocab import Vocab
from minilib.models.awd_lstm import ARTAR, AWDLSTM, AWDLSTMEncoder
from minilib.train import Learner
from minilib.train.callbacks import Callback
from minilib.train.schedules import slanted_triangular

BOS = "<eos>"  # the pretraining stream puts "<eos>" after every line: the LM reads it as "a text starts here"


# ----------------------------------------------------------------------------- text -> ids -> batches

def encode_texts(texts: Iterable[str], vocab: Vocab, bos: str | None = BOS) -> list[np.ndarray]:
    """Each text as int64 token ids, starting with `bos` when the vocabulary has it (fastai's xxbos)."""
    start = [vocab.stoi[bos]] if bos is not None and bos in vocab else []
    return [np.asarray(start + vocab.encode(tokenize(t)), dtype=np.int64) for t in texts]


def pad_collate(seqs: Sequence[np.ndarray], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad variable-length id sequences: (ids (B, T_max), lengths (B,)).

    Right padding keeps every real position exact: the LSTM reads left to right, so outputs
    before a document's end never see its padding; the pooling masks the padded positions.
    """
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    if (lengths == 0).any():
        raise ValueError("an empty document: every text needs at least one token (encode_texts adds a start token)")
    ids = torch.full((len(seqs), int(lengths.max())), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.as_tensor(np.asarray(s), dtype=torch.long)
    return ids, lengths


class ClassificationBatches:
    """(ids, lengths, labels) batches of variable-length documents, sorted-ish by length.

    Training (shuffle=True), fastai's SortishSampler: shuffle, cut into chunks of 50 batches,
    sort each chunk by length, cut it into batches and shuffle the batches, so a batch holds
    documents of similar length (little padding) and the order still changes every epoch
    (seeded by (seed, epoch): runs and resumes repeat). Evaluation (shuffle=False): sorted by
    length, longest first.
    """

    def __init__(self, docs: Sequence[np.ndarray], labels: Sequence[int], batch_size: int = 32,
                 shuffle: bool = True, pad_id: int = 0, seed: int = 0):
        if len(docs) != len(labels):
            raise ValueError(f"{len(docs)} documents but {len(labels)} labels")
        if len(docs) == 0:
            raise ValueError("no documents to batch")
        self.docs, self.labels = list(docs), torch.as_tensor(np.asarray(labels), dtype=torch.long)
        self.lengths = np.array([len(d) for d in self.docs])
        self.batch_size, self.shuffle, self.pad_id, self.seed, self.epoch = batch_size, shuffle, pad_id, seed, 0
        self._len: int | None = None

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        if self._len is None:
            self._len = len(self.batch_indices())
        return self._len

    def batch_indices(self) -> list[np.ndarray]:
        if not self.shuffle:
            order = np.argsort(-self.lengths, kind="stable")
            return [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        rng = np.random.default_rng((self.seed, self.epoch))
        order = rng.permutation(len(self.docs))
        chunk = self.batch_size * 50
        batches = []
        for c in range(0, len(order), chunk):
            part = order[c:c + chunk]
            part = part[np.argsort(-self.lengths[part], kind="stable")]
            batches += [part[i:i + self.batch_size] for i in range(0, len(part), self.batch_size)]
        # BatchNorm cannot normalise a batch of one in training: fold a lone document into its neighbour.
        for i in range(len(batches) - 1, 0, -1):
            if len(batches[i]) == 1:
                batches[i - 1] = np.concatenate([batches[i - 1], batches.pop(i)])
        return [batches[i] for i in rng.permutation(len(batches))]

    def __iter__(self):
        for idx in self.batch_indices():
            ids, lengths = pad_collate([self.docs[i] for i in idx], self.pad_id)
            yield ids, lengths, self.labels[idx]


# ----------------------------------------------------------------------------- the classifier (§3.3)

def concat_pool(outputs: torch.Tensor, lengths: torch.Tensor, starts: torch.Tensor | None = None) -> torch.Tensor:
    """§3.3 concat pooling of (B, T, H) outputs over each document's real positions:
    h_c = [h_T, maxpool(H), meanpool(H)] -> (B, 3H), pooled over starts <= t < lengths
    (starts default 0); padding (t >= length) is ignored."""
    B, T, _ = outputs.shape
    t = torch.arange(T, device=outputs.device)[None, :]
    mask = t < lengths[:, None]  # (B, T) True = a real token inside the window
    if starts is not None:
        mask &= t >= starts[:, None]
    last = outputs[torch.arange(B, device=outputs.device), lengths - 1]  # (B, H) the last real position
    maxed = outputs.masked_fill(~mask[..., None], float("-inf")).amax(dim=1)  # (B, H)
    mean = (outputs * mask[..., None]).sum(dim=1) / mask.sum(1, keepdim=True).to(outputs.dtype)  # (B, H)
    return torch.cat([last, maxed, mean], dim=1)


class ULMFiTClassifier(nn.Module):
    """The pretrained encoder, BPT3C over long documents, concat pooling and a 2-block head (§3.3).

    head: BatchNorm1d -> Dropout -> Linear(3E, hidden) -> ReLU -> BatchNorm1d -> Dropout ->
    Linear(hidden, n_classes), with E the encoder's last layer size.

    BPT3C (§3.3): the document is read in chunks of `bptt` tokens, the encoder's state carried
    from chunk to chunk (detached, as in fastai: gradients do not cross chunk boundaries
    through the state). Only the outputs of the chunks that hold the last `max_len` positions
    feed the pooling and get gradients; each document pools over its last `max_len` tokens
    (1400 in fastai's ULMFiT), and chunks before every document's window only build the
    state, without a graph. forward(ids, lengths) -> logits (B, C).
    """

    def __init__(self, encoder: AWDLSTMEncoder, n_classes: int, hidden: int = 50,
                 dropout: tuple[float, float] = (0.2, 0.1), bptt: int = 70, max_len: int = 1400):
        super().__init__()
        self.encoder, self.bptt, self.max_len = encoder, bptt, max_len
        out_size = encoder.layers[-1].lstm.hidden_size
        self.head = nn.Sequential(
            nn.BatchNorm1d(3 * out_size), nn.Dropout(dropout[0]), nn.Linear(3 * out_size, hidden), nn.ReLU(),
            nn.BatchNorm1d(hidden), nn.Dropout(dropout[1]), nn.Linear(hidden, n_classes))

    def reset(self) -> None:
        self.encoder.reset()

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor | None = None):
        """BPT3C: the last layer's raw outputs from the first chunk any document pools on.
        Returns (outputs (B, T_w, E), lengths, starts), lengths and starts relative to the
        outputs: document b pools over its last max_len positions, starts[b] <= t < lengths[b]."""
        B, T = ids.shape
        if lengths is None:
            lengths = torch.full((B,), T, dtype=torch.long, device=ids.device)
        starts = (lengths - self.max_len).clamp(min=0)  # (B,) the pooled window: the last max_len tokens
        first_pooled = int(starts.min()) // self.bptt * self.bptt  # chunks before it only build the state
        self.encoder.reset()  # every document starts from a zero state
        outs = []
        for start in range(0, T, self.bptt):
            chunk = ids[:, start:start + self.bptt]
            if start < first_pooled:
                with torch.no_grad():
                    self.encoder(chunk)
            else:
                raw_outputs, _ = self.encoder(chunk)
                outs.append(raw_outputs[-1])  # (B, t, E)
        self.encoder.reset()
        return torch.cat(outs, dim=1), lengths - first_pooled, starts - first_pooled

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        return self.head(self.pooled(ids, lengths))  # (B, C)

    def pooled(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """The (B, 3E) concat-pooled vector the head sees."""
        return concat_pool(*self.encode(ids, lengths))

    def layer_groups(self) -> list:
        """Lowest first: [embedding, lstm 1, ..., lstm n, head], for freeze_to(-n) and lr=slice(hi)."""
        return [self.encoder.embedding, *self.encoder.layers, self.head]


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


# ----------------------------------------------------------------------------- schedules over several fits

def _stlr_from(offset: int, total: int, cut_frac: float = 0.1, ratio: float = 32):
    """Eq. 3's STLR over `total` steps, for a fit that starts at step `offset` of them: gradual
    unfreezing fits one epoch at a time, yet the paper's T counts every iteration."""
    def schedule(step: int, _fit_total: int) -> float:
        return slanted_triangular(offset + step, total, cut_frac=cut_frac, ratio=ratio)
    return schedule


def fine_tune_classifier(model: ULMFiTClassifier, train, valid=None, epochs: int = 4, lr: float = 1e-2, *,
                         gradual_unfreezing: bool = True, discriminative: bool = True, stlr: bool = True,
                         cut_frac: float = 0.1, ratio: float = 32, callbacks: Sequence[Callback] = (),
                         weight_decay: float = 0.01, clip: float | None = 1.0, progress: bool | str = False,
                         device=None) -> Learner:
    """Stage (c), §3.3, with each trick switchable (for the ablations of the paper's Table 6).

    gradual_unfreezing: epoch 1 trains only the head (freeze_to(-1)), each later epoch unfreezes
        one more layer group, lowest last (freeze_to(-2), -3, ...); then everything trains.
        Off: every group trains from the start.
    discriminative: the head gets `lr`, each group below lr / 2.6 (§3.2); off: `lr` for all.
    stlr: one slanted triangular schedule (cut_frac 0.1, ratio 32; eq. 3) over all the steps of
        all epochs; off: constant `lr`.
    Returns the Learner (learner.history holds every epoch; learner.model is `model`).
    """
    learner = Learner(model, train, valid, loss_fn=F.cross_entropy, metrics=[accuracy] if valid is not None else (),
                      callbacks=callbacks, weight_decay=weight_decay, clip=clip, progress=progress, device=device)
    n_groups = len(learner.groups)
    lrs = slice(lr) if discriminative else lr  # slice(hi): /2.6 per group below the top
    total = epochs * len(train)
    for epoch in range(epochs):
        if gradual_unfreezing:
            learner.freeze_to(-(epoch + 1) if epoch + 1 < n_groups else 0)  # -1: the head only; 0: all
        elif epoch == 0:
            learner.unfreeze()
        schedule = _stlr_from(epoch * len(train), total, cut_frac, ratio) if stlr else "constant"
        learner.fit(1, lr=lrs, schedule=schedule)
        if learner.should_stop or learner.interrupted:
            break
    return learner


# ----------------------------------------------------------------------------- stage (b): the LM on target text

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


def lm_stream_ids(texts: Iterable[str], vocab: Vocab, eos: str | None = BOS) -> np.ndarray:
    """One id stream from many texts, each followed by `eos` when the vocabulary has it."""
    tail = [vocab.stoi[eos]] if eos is not None and eos in vocab else []
    out = []
    for t in texts:
        out += vocab.encode(tokenize(t)) + tail
    return np.asarray(out, dtype=np.int64)


def fine_tune_lm(lm: AWDLSTM, texts: Sequence[str], vocab: Vocab, epochs: int = 1, lr: float = 3e-3, *,
                 discriminative: bool = True, stlr: bool = True, batch_size: int = 32, bptt: int = 70,
                 valid_frac: float = 0.05, seed: int = 0, callbacks: Sequence[Callback] = (),
                 progress: bool | str = False, device=None) -> Learner:
    """Stage (b), §3.2: fine-tune the LM on target-domain `texts` (e.g. movie_lm_text()).

    discriminative: lr=slice(lr), the top group (last LSTM + decoder bias) gets `lr`, each group
    below /2.6; stlr: slanted triangular LR over all steps (cut_frac 0.1, ratio 32). AR/TAR stay
    on (ARTAR). The last `valid_frac` of the texts (in a seeded shuffle) is held out: the
    Learner's valid_loss is their cross-entropy. `vocab` must be the LM's (see extend_vocab).
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
                      device=device)
    learner.fit(epochs, lr=slice(lr) if discriminative else lr, schedule="stlr" if stlr else "constant")
    return learner
