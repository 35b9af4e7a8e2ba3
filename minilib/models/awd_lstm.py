"""AWD-LSTM: Merity, Keskar & Socher (2017), "Regularizing and Optimizing LSTM Language Models".

A plain 3-layer LSTM language model whose strength is its regularisation. Each
piece is named here after the section of the paper it comes from:

    EmbeddingDropout    §4.3  drop whole words: rows of the embedding matrix
    LockedDropout       §4.2  variational dropout: one mask per sequence, shared over time
    WeightDropLSTM      §2    DropConnect on the hidden-to-hidden weights, nn.LSTM (cuDNN) kept
    AWDLSTM.decoder     §4.4  tied weights: decoder weight = embedding weight
    ar_tar, ARTAR       §4.6  activation and temporal activation regularisation
    VariableBPTTStream  §4.1  variable-length BPTT, with SeqLenLR rescaling the LR

ULMFiT (Howard & Ruder 2018) fine-tunes this model: `AWDLSTMEncoder` returns
every layer's outputs for a classifier head; `AWDLSTM` adds the tied LM head.

    cfg = AWDLSTMConfig.for_profile(len(vocab))          # sizes from MINILIB_PROFILE
    model = AWDLSTM(cfg)
    learner = Learner(model, VariableBPTTStream(train_ids, 32, 70), LMStream(valid_ids, 32, 70),
                      callbacks=[ARTAR(), SeqLenLR(70)])  # loss_fn=None: model(x, y) -> (loss, extras)
    learner.fit(1, lr=slice(3e-3))                        # ULMFiT's /2.6 per layer group
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call

from minilib import runtime
from minilib.models.bigram import lm_loss

_DROPOUTS = ("dropoute", "dropouti", "dropouth", "dropout", "wdrop")


@dataclass
class AWDLSTMConfig:
    vocab_size: int          # rows of the embedding, and of the tied decoder
    emb_size: int = 400      # §5: word vectors of 400; also the last LSTM layer's size (tied weights §4.4, independent sizes §4.5)
    hidden_size: int = 1150  # §5: 1150 units in every LSTM layer but the last
    n_layers: int = 3        # §5: three LSTM layers
    dropoute: float = 0.1    # §4.3 embedding dropout: P(a word type is dropped from the whole batch)
    dropouti: float = 0.65   # §4.2 locked dropout on the word vectors (§5: 0.4 on PTB, 0.65 on WT2)
    dropouth: float = 0.3    # §4.2 locked dropout between LSTM layers
    dropout: float = 0.4     # §4.2 locked dropout on the last layer's output, before the decoder
    wdrop: float = 0.5       # §2 DropConnect on the hidden-to-hidden matrices
    alpha: float = 2.0       # §4.6 AR: alpha * mean(h_t^2) on the dropped last-layer output
    beta: float = 1.0        # §4.6 TAR: beta * mean((h_t - h_{t+1})^2) on the undropped output

    def __post_init__(self):
        bad = {n: getattr(self, n) for n in _DROPOUTS if not 0 <= getattr(self, n) < 1}
        if bad:
            raise ValueError(f"dropout probabilities must be in [0, 1); got {bad}")

    @classmethod
    def for_profile(cls, vocab_size: int, profile: str | None = None, **overrides) -> "AWDLSTMConfig":
        """Sizes for MINILIB_PROFILE (or `profile`): full = the paper's 3 x 400/1150/400."""
        sizes = runtime.pick({"smoke": dict(emb_size=32, hidden_size=64, n_layers=3),
                              "laptop": dict(emb_size=200, hidden_size=512, n_layers=3),
                              "full": dict(emb_size=400, hidden_size=1150, n_layers=3)}, profile)
        return cls(vocab_size, **{**sizes, **overrides})

    def scale_dropouts(self, mult: float) -> "AWDLSTMConfig":
        """All five dropouts times `mult` (ULMFiT/fastai's drop_mult, e.g. 0.3 for small data)."""
        return dataclasses.replace(self, **{n: getattr(self, n) * mult for n in _DROPOUTS})


def _keep_mask(shape, p: float, like: torch.Tensor) -> torch.Tensor:
    """Float mask of 1/(1-p) (kept) and 0 (dropped). `rand < keep` is ~2.5x cheaper than
    F.dropout/bernoulli_ on CPU, and lt_/div_ in place avoid extra copies."""
    keep = 1.0 - p
    return torch.rand(shape, dtype=like.dtype, device=like.device).lt_(keep).div_(keep)


class EmbeddingDropout(nn.Embedding):
    """§4.3 embedding dropout: drop whole rows of the embedding matrix (a dropped word is
    zero wherever it occurs in the batch) and scale the kept rows by 1/(1-p)."""

    def __init__(self, vocab_size: int, emb_size: int, p: float):
        super().__init__(vocab_size, emb_size)
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, T) ids
        emb = super().forward(x)  # (B, T, E)
        if not self.training or self.p == 0:
            return emb
        row_mask = _keep_mask(self.num_embeddings, self.p, emb)  # (V,): one draw per word type
        # Same values and gradients as masking the (V, E) matrix, at B*T*E cost instead of V*E.
        return emb * row_mask[x].unsqueeze(-1)


class LockedDropout(nn.Module):
    """§4.2 locked (variational) dropout: one mask per sequence, reused at every time step."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, T, H)
        if not self.training or self.p == 0:
            return x
        return x * _keep_mask((x.shape[0], 1, x.shape[2]), self.p, x)  # mask (B, 1, H) broadcast over T

    def extra_repr(self) -> str:
        return f"p={self.p}"


class WeightDropLSTM(nn.Module):
    """One LSTM layer with §2 weight drop: DropConnect on the hidden-to-hidden matrix U.

    The raw U stays nn.LSTM's own parameter `lstm.weight_hh_l0` (state dicts look like a
    plain LSTM's). A training forward draws ONE mask for U and runs nn.LSTM with the
    dropped U swapped in through torch.func.functional_call, so every time step of the
    sequence uses the same dropped U, and the fused kernel (cuDNN on GPU, oneDNN on CPU)
    still runs the whole sequence: nn.LSTM sees the swapped weight (_weights_have_changed)
    and re-flattens its weights into one chunk; nothing touches `_flat_weights` by hand.
    Gradients reach the raw U through the mask multiply. In eval mode U is used as is.
    """

    def __init__(self, input_size: int, hidden_size: int, p: float):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, batch_first=True)
        self.p = p

    def forward(self, x: torch.Tensor, state=None):  # x: (B, T, I); state: (h, c), each (1, B, H)
        if not self.training or self.p == 0:
            return self.lstm(x, state)
        raw = self.lstm.weight_hh_l0  # (4H, H)
        dropped = raw * _keep_mask(raw.shape, self.p, raw)
        return functional_call(self.lstm, {"weight_hh_l0": dropped}, (x, state))  # (B, T, H), (h, c)


def ar_tar(dropped: torch.Tensor, raw: torch.Tensor, alpha: float, beta: float):
    """§4.6 on the last layer's (B, T, H) outputs: AR = alpha * mean(dropped^2) (large
    activations cost), TAR = beta * mean((raw_t - raw_{t+1})^2) (fast changes cost)."""
    ar = alpha * dropped.pow(2).mean()
    tar = beta * (raw[:, 1:] - raw[:, :-1]).pow(2).mean() if raw.shape[1] > 1 else raw.new_zeros(())
    return ar, tar


class AWDLSTMEncoder(nn.Module):
    """Embedding -> locked dropout -> n weight-dropped LSTM layers, with locked dropout after each.

    forward(x) returns (raw_outputs, dropped_outputs), one (B, T, H_l) tensor per layer:
    raw = the layer's output, dropped = what the next stage sees (dropouth between layers,
    dropout after the last one, before the LM decoder). A ULMFiT classifier pools raw_outputs[-1].
    The hidden state is carried (detached) from batch to batch, as in truncated BPTT;
    reset() starts from zeros (the Learner calls it at each epoch start and around evaluation).
    """

    def __init__(self, cfg: AWDLSTMConfig):
        super().__init__()
        self.embedding = EmbeddingDropout(cfg.vocab_size, cfg.emb_size, cfg.dropoute)
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)  # as in the authors' code
        sizes = [cfg.emb_size] + [cfg.hidden_size] * (cfg.n_layers - 1) + [cfg.emb_size]  # last = emb (§4.5)
        self.layers = nn.ModuleList(WeightDropLSTM(sizes[i], sizes[i + 1], cfg.wdrop) for i in range(cfg.n_layers))
        self.input_dropout = LockedDropout(cfg.dropouti)
        self.hidden_dropout = LockedDropout(cfg.dropouth)  # each call draws its own mask
        self.output_dropout = LockedDropout(cfg.dropout)
        self.state: list[tuple[torch.Tensor, torch.Tensor]] | None = None

    def reset(self) -> None:
        self.state = None

    def forward(self, x: torch.Tensor):  # x: (B, T) ids
        state = self.state
        if state is None or state[0][0].shape[1] != x.shape[0]:  # first batch, or a new batch size
            state = [None] * len(self.layers)
        out = self.input_dropout(self.embedding(x))  # (B, T, E)
        raw_outputs, dropped_outputs, new_state = [], [], []
        for i, layer in enumerate(self.layers):
            raw, (h, c) = layer(out, state[i])  # raw: (B, T, H_i); h, c: (1, B, H_i)
            new_state.append((h.detach(), c.detach()))  # carry the state, not the graph
            last = i == len(self.layers) - 1
            out = self.output_dropout(raw) if last else self.hidden_dropout(raw)
            raw_outputs.append(raw)
            dropped_outputs.append(out)
        self.state = new_state
        return raw_outputs, dropped_outputs


class AWDLSTM(nn.Module):
    """The AWD-LSTM language model: the encoder and a decoder tied to its embedding (§4.4).

    model(x) -> logits (B, T, V). model(x, y) -> the mean cross-entropy, and in training
    (loss, {"ar": ..., "tar": ...}) so the ARTAR callback can add §4.6's terms. Use it
    with Learner(..., loss_fn=None) (or loss_fn=lm_loss for plain logits, without AR/TAR).
    """

    def __init__(self, cfg: AWDLSTMConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = AWDLSTMEncoder(cfg)
        self.decoder = nn.Linear(cfg.emb_size, cfg.vocab_size)
        self.decoder.weight = self.encoder.embedding.weight  # §4.4 weight tying: one (V, E) matrix
        nn.init.zeros_(self.decoder.bias)

    def reset(self) -> None:
        self.encoder.reset()

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None):  # x, y: (B, T) ids
        raw_outputs, dropped_outputs = self.encoder(x)
        logits = self.decoder(dropped_outputs[-1])  # (B, T, V)
        if y is None:
            return logits
        loss = lm_loss(logits, y)
        if not self.training:
            return loss
        ar, tar = ar_tar(dropped_outputs[-1], raw_outputs[-1], self.cfg.alpha, self.cfg.beta)
        return loss, {"ar": ar, "tar": tar}

    def layer_groups(self) -> list:
        """ULMFiT's groups, lowest first: [embedding, lstm 1, ..., lstm n + decoder bias]
        (the decoder weight is the embedding's). lr=slice(hi) gives /2.6 per group; freeze_to(-1)."""
        enc = self.encoder
        return [enc.embedding, *enc.layers[:-1], [enc.layers[-1], self.decoder.bias]]


