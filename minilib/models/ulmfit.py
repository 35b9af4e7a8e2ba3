"""ULMFiT: Howard & Ruder (2018), "Universal Language Model Fine-tuning for Text Classification".

Three stages on one AWD-LSTM (minilib/models/awd_lstm.py):

    (a) pretrain the LM on general text         python -m minilib pretrain awd-lstm  (minilab/pretrain.py)
    (b) fine-tune the LM on target-domain text  fine_tune_lm: discriminative LRs + STLR (§3.2)
    (c) fine-tune a classifier on the labels    ULMFiTClassifier + fine_tune_classifier: concat pooling,
                                                gradual unfreezing, BPT3C (§3.3)

    from minilib.models.pretrained import load_pretrained
    lm, vocab, meta = load_pretrained("checkpoints/awd-lstm-laptop.pt")
    new_vocab = grow_vocab(vocab, [tokenize(t) for t in movie_lm_text()])
    lm = extend_vocab(lm, vocab, new_vocab)                      # §3.2 / fastai: new words get the mean row
    fine_tune_lm(lm, movie_lm_text(), new_vocab, epochs=1, lr=3e-3)
    clf = ULMFiTClassifier(lm.encoder, n_classes=2)
    train = ClassificationBatches(encode_texts(texts, new_vocab), labels, batch_size=32)
    learner = fine_tune_classifier(clf, train, None, epochs=4, lr=1e-2)

The three tricks of stage (c) (gradual unfreezing, discriminative LRs, STLR) are switches of
fine_tune_classifier, so the lesson can take each one out (the paper's Table 7 ablations).
"""
from __future__ import annotations


import torch
from torch import nn

from minilib.models.awd_lstm import AWDLSTMEncoder



# ----------------------------------------------------------------------------- text -> ids -> batches


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


# ----------------------------------------------------------------------------- schedules over several fits


# ----------------------------------------------------------------------------- stage (b): the LM on target text


