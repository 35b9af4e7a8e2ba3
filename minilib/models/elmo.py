"""ELMo: Peters et al. (2018), "Deep contextualized word representations".

A bidirectional LSTM language model (the "biLM") whose hidden states, mixed
per task, are the word vectors. It builds on the character-aware LM of
Józefowicz et al. (2016), "Exploring the Limits of Language Modeling"
(CNN-BIG-LSTM), scaled down. Each piece is named after where it comes from:

    char_ids (minilib/data/chars.py) §3.4 / Józefowicz §3.3  a word as UTF-8 bytes + begin/end-of-word marks
    CharCNNEncoder                   §3.4  char embeddings → 1-D convs (several widths) → max-pool
                                           → 2 Highway → linear
    Highway                          Srivastava et al. (2015): y = t·g(W_h x) + (1 − t)·x
    BiLM                             §3.1  forward and backward 2-layer LSTMP LMs, residual 1 → 2 (§3.4),
                                           shared token encoder and shared softmax, joint loss
    BiLM.embed                       §3.2  the L+1 = 3 layers of representations per token
    ScalarMix                        §3.2 eq. 1  ELMo_k = γ · Σ_j s_j h_{k,j}, s = softmax(w)
    untrained_like                   the control: the same architecture with fresh weights

Training is minilib/recipes/elmo.py (pretrain_elmo; its batches are data.batching.ELMoBatches);
checkpoints load with minilib.models.pretrained.load_pretrained.

    cfg = ELMoConfig.for_profile()                       # sizes from MINILIB_PROFILE
    model, vocab, meta = load_pretrained("checkpoints/elmo-laptop.pt", "elmo")
    layers = model.embed([["the", "bank", "of", "the", "river"]])   # (3, 1, 5, 2·proj)
    mix = ScalarMix(3)
    vectors = mix(layers)                                  # (1, 5, 2·proj): one task's ELMo vectors

Scale. The paper's biLM has 4096 LSTM cells projected to 512, char filters of
widths 1..7 with 32..1024 filters (2048 in all), and a sampled softmax over
the 793k-word vocabulary of the 1B Word Benchmark (Chelba et al. 2013),
trained 10 epochs on 800M tokens. Here the softmax is a full softmax over a
capped vocabulary (<unk> for the rest), which is exact and affordable at
10–30k words; the input side reads characters, so it has no unknown words.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from minilib import runtime
from minilib.data.chars import CHAR_PAD, N_CHARS, sentences_to_char_ids

# nn.LSTM(proj_size=...) runs torch's own LSTMP kernel on CPU, not oneDNN's; it says so once per
# process. That is expected here, not a problem for the reader to chase (silenced where the LSTMP runs).
_LSTMP_NOTICE = "LSTM with projections is not supported with oneDNN"

# ----------------------------------------------------------------------------- config

@dataclass
class ELMoConfig:
    # token encoder (§3.4; Józefowicz et al. 2016 CNN-BIG-LSTM)
    max_chars: int = 50                      # chars per word incl. begin/end marks (bilm-tf: 50)
    char_dim: int = 16                       # char embedding size (paper: 16)
    # (width, n_filters) of each char convolution; paper: widths 1..7 with 32,32,64,128,256,512,1024
    filters: tuple[tuple[int, int], ...] = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256))
    n_highway: int = 2                       # highway layers after the char CNN (paper: 2)
    # biLM (§3.1, §3.4)
    cells: int = 512                         # LSTM cells per layer and direction (paper: 4096)
    proj: int = 128                          # LSTMP projection = token vector size (paper: 512)
    n_layers: int = 2                        # LSTM layers per direction (paper: 2), so embed gives n_layers+1 = 3
    dropout: float = 0.1                     # on the token vectors and each LSTM layer's output (bilm-tf: 0.1)
    vocab_size: int = 10_000                 # softmax size: the most frequent words, <unk> for the rest
    n_samples: int = 0                       # sampled softmax in training (Jean et al. 2015; paper: 8192
                                             # of 793k words); 0: full softmax. Validation is always full
    # training (kept next to the model so a lesson reads its sizes from one place)
    window: int = 20                         # tokens per row per step (bilm-tf: unroll_steps = 20)
    batch_size: int = 64                     # rows per step (bilm-tf: 128 per GPU)
    lr: float = 3e-3                         # peak AdamW LR, one-cycle schedule (bilm-tf: Adagrad 0.2)
    epochs: int = 1                          # passes over the training windows (paper: 10 over 800M tokens)
    seed: int = 0                            # init and window order

    def __post_init__(self):
        self.filters = tuple(tuple(f) for f in self.filters)   # lists from JSON become tuples again
        if self.n_layers < 1 or not 0 <= self.dropout < 1:
            raise ValueError(f"need n_layers >= 1 and 0 <= dropout < 1; got {self.n_layers}, {self.dropout}")
        if max(w for w, _ in self.filters) > self.max_chars:
            raise ValueError(f"a filter is wider than max_chars={self.max_chars}: {self.filters}")

    @property
    def n_filters(self) -> int:
        return sum(n for _, n in self.filters)

    @classmethod
    def for_profile(cls, profile: str | None = None, **overrides) -> "ELMoConfig":
        """Sizes for MINILIB_PROFILE (or `profile`), then any field overridden by keyword.

        Measured here (2-core CPU shared with other jobs, torch 2.13, fwd+bwd+AdamW, windows of
        real text): smoke ≈ 5.8k tokens/s with 1 thread; laptop (4.6M parameters, sampled softmax
        of 1024 over 15k words) ≈ 1.5k tokens/s with 1 thread, so one epoch of 3M tokens takes
        ~35 min. With 2 threads on the busy machine it was 7-9x *slower* (831 and 164 tokens/s):
        call torch.set_num_threads(1) there. full: the size of the paper's released "small" ELMo
        (1024 cells → 128) with the paper's char filters (widths 1..7), for a GPU.
        """
        sizes = runtime.pick({
            "smoke": dict(filters=((1, 8), (2, 8), (3, 16)), n_highway=1, cells=64, proj=32, dropout=0.0,
                          vocab_size=2_000, window=20, batch_size=16, lr=1e-2),
            "laptop": dict(filters=((1, 16), (2, 16), (3, 32), (4, 64), (5, 128)), n_highway=2, cells=512,
                           proj=128, dropout=0.1, vocab_size=15_000, n_samples=1024, window=20, batch_size=64,
                           lr=3e-3),
            "full": dict(filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)),
                         n_highway=2, cells=1024, proj=128, dropout=0.1, vocab_size=30_000, n_samples=4096,
                         window=20, batch_size=128, lr=2e-3, epochs=3),
        }, profile)
        return dataclasses.replace(cls(**sizes), **overrides)


# ----------------------------------------------------------------------------- token encoder

class Highway(nn.Module):
    """Srivastava et al. (2015): y = t ⊙ relu(W_h x + b_h) + (1 − t) ⊙ x,  t = σ(W_t x + b_t).

    The transform gate t starts mostly closed (b_t = −2, their §2.2 "negative bias"), so at
    first each layer mostly carries its input through."""

    def __init__(self, dim: int, gate_bias: float = -2.0):
        super().__init__()
        self.transform = nn.Linear(dim, dim)    # W_h, b_h
        self.gate = nn.Linear(dim, dim)         # W_t, b_t
        nn.init.constant_(self.gate.bias, gate_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.sigmoid(self.gate(x))
        return t * F.relu(self.transform(x)) + (1 - t) * x


class CharCNNEncoder(nn.Module):
    """§3.4 context-independent token vectors from characters (Kim et al. 2016; Józefowicz et al. 2016).

    chars (..., max_chars) → embed (dim 16) → one Conv1d per filter width → max over positions
    → relu → n_highway Highway layers → linear to `proj`. It reads any string, so no input word
    is ever out of vocabulary."""

    def __init__(self, cfg: ELMoConfig):
        super().__init__()
        self.char_embed = nn.Embedding(N_CHARS, cfg.char_dim, padding_idx=CHAR_PAD)
        self.convs = nn.ModuleList(nn.Conv1d(cfg.char_dim, n, kernel_size=w) for w, n in cfg.filters)
        self.highways = nn.ModuleList(Highway(cfg.n_filters) for _ in range(cfg.n_highway))
        self.proj = nn.Linear(cfg.n_filters, cfg.proj)          # to the LSTM input size (paper: 2048 → 512)
        self.filters = cfg.filters

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """chars (..., max_chars) → token vectors (..., proj)."""
        shape, C = chars.shape[:-1], chars.shape[-1]
        flat = chars.reshape(-1, C)
        # Each distinct word once: a batch repeats "the", "," ... (exact, and ~2x fewer words to encode)
        words, inverse = torch.unique(flat, dim=0, return_inverse=True)          # (N, C), (B·T,)
        lengths = (words != CHAR_PAD).sum(-1)                                     # chars incl. BOW/EOW
        widest = max(w for w, _ in self.filters)
        # Trim the padding no window starting inside a word can reach (exact: see _pool)
        words = words[:, : min(C, int(lengths.max()) + widest - 1)]
        x = self.char_embed(words).transpose(1, 2)                                # (N, char_dim, C')
        x = torch.cat([self._pool(conv(x), lengths) for conv in self.convs], -1)  # (N, n_filters)
        x = F.relu(x)                              # bilm-tf: relu (Józefowicz et al. used tanh)
        for hw in self.highways:
            x = hw(x)
        return self.proj(x)[inverse].reshape(*shape, -1)                         # (..., proj)

    @staticmethod
    def _pool(h: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Max over time of conv outputs h (N, n, positions), over windows that start inside the word.

        bilm-tf pools over all 50 positions, all-padding windows included; skipping those makes a
        word's vector independent of max_chars and lets a batch be cut to its longest word."""
        starts = torch.arange(h.shape[-1], device=h.device)
        inside = starts[None, :] < lengths[:, None]                               # (N, positions)
        return h.masked_fill(~inside[:, None, :], float("-inf")).amax(-1)


# ----------------------------------------------------------------------------- the biLM

def reverse_padded(x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """Reverse each row of x (B, T, ...) within its length; padding stays at the end, in place.

    Applying it twice gives x back. With lengths=None every row is full: a plain flip."""
    if lengths is None:
        return x.flip(1)
    T = x.shape[1]
    t = torch.arange(T, device=x.device).unsqueeze(0)                     # (1, T)
    lengths = lengths.to(x.device).unsqueeze(1)                           # (B, 1)
    idx = torch.where(t < lengths, lengths - 1 - t, t)                    # (B, T)
    return x.gather(1, idx.view(*idx.shape, *([1] * (x.dim() - 2))).expand_as(x))


class DirectionalLM(nn.Module):
    """One direction's stack of LSTMP layers (Sak et al. 2014: `cells` memory cells projected to
    `proj`; nn.LSTM's proj_size) with a residual connection from each layer's input to its output
    above the first (§3.4 "a residual connection from the first to second layer")."""

    def __init__(self, cfg: ELMoConfig):
        super().__init__()
        self.layers = nn.ModuleList(nn.LSTM(cfg.proj, cfg.cells, proj_size=cfg.proj, batch_first=True)
                                    for _ in range(cfg.n_layers))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """x (B, T, P) in reading order → every layer's output, each (B, T, P). No state carried."""
        outs = []
        for i, lstm in enumerate(self.layers):
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=_LSTMP_NOTICE)
                h, _ = lstm(x)
            if i > 0:
                h = h + x                          # residual (§3.4); bilm-tf adds it from layer 2 up
            outs.append(h)
            x = self.drop(h)
        return outs


class BiLM(nn.Module):
    """§3.1 the biLM: a forward and a backward LM sharing the token encoder and the softmax.

    Training batch (see ELMoBatches): ids (B, T+2) word ids of a window and chars (B, T, C)
    of its inner T tokens x_1..x_T. The forward LM at position k has read x_1..x_k and predicts
    x_{k+1}; the backward LM has read x_T..x_k and predicts x_{k−1} (the window's extra first and
    last tokens are the targets at the edges). `model(ids, chars)` returns the joint loss
    (mean of the two directions' NLL, see `forward`) and extras with each direction's perplexity.
    """

    def __init__(self, cfg: ELMoConfig):
        super().__init__()
        self.cfg = cfg
        self.token_encoder = CharCNNEncoder(cfg)     # shared by both directions (§3.1 "tie Θ_x")
        self.fwd = DirectionalLM(cfg)
        self.bwd = DirectionalLM(cfg)
        self.drop = nn.Dropout(cfg.dropout)
        self.softmax = nn.Linear(cfg.proj, cfg.vocab_size)   # shared by both directions (§3.1 "tie Θ_s")

    @property
    def n_layers(self) -> int:
        """Layers of representation embed() returns: the token layer plus each LSTM layer."""
        return self.cfg.n_layers + 1

    def init_output_bias(self, counts) -> None:
        """Start the softmax bias at log unigram frequencies (add-one), so step 0 predicts like a
        unigram model instead of uniformly. `counts`: training counts per word id."""
        counts = torch.as_tensor(np.asarray(counts), dtype=torch.float32) + 1.0
        with torch.no_grad():
            self.softmax.bias.copy_((counts / counts.sum()).log().to(self.softmax.bias.device))

    def states(self, chars: torch.Tensor, lengths: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """(token vectors (B, T, P), forward layer outputs, backward layer outputs), each (B, T, P).

        Computed on these tokens alone. The backward LM reads each row reversed *within its
        length*, so padding after a sentence is never read before its last real token; outputs
        come back in reading order (backward state at k has seen x_k..x_len)."""
        x = self.token_encoder(chars)                                   # (B, T, P)
        fwd = self.fwd(self.drop(x))
        bwd = [reverse_padded(h, lengths) for h in self.bwd(self.drop(reverse_padded(x, lengths)))]
        return x, fwd, bwd

    def forward(self, ids: torch.Tensor, chars: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """Joint loss = (NLL_fwd + NLL_bwd) / 2, each a mean over the B·T predictions (§3.1 eq. 1
        maximises the sum of both log-likelihoods; halving it, as bilm-tf does, keeps the loss on
        the scale of a one-direction LM's and only rescales the gradient).

        With cfg.n_samples > 0 a training step uses the sampled softmax (see `sampled_nll`): its
        loss and "perplexities" are those of the sampled problem, lower than the true ones. In eval
        mode (Learner.evaluate, validation) the softmax is always full and the perplexity exact."""
        _, fwd, bwd = self.states(chars)
        # the softmax reads the top layer of each direction (after dropout, as in bilm-tf)
        h_f, h_b = self.drop(fwd[-1]), self.drop(bwd[-1])                # (B, T, P)
        nll = self.sampled_nll if self.training and self.cfg.n_samples > 0 else self.full_nll
        nll_f = nll(h_f, ids[:, 2:])       # forward LM at k predicts x_{k+1}
        nll_b = nll(h_b, ids[:, :-2])      # backward LM at k predicts x_{k−1}
        loss = (nll_f + nll_b) / 2
        extras = {"fwd_nll": nll_f.detach(), "bwd_nll": nll_b.detach(),
                  "fwd_ppl": nll_f.detach().exp(), "bwd_ppl": nll_b.detach().exp()}
        return loss, extras

    def full_nll(self, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean −log p(target) under the softmax over the whole vocabulary. h (B, T, P), targets (B, T)."""
        logits = self.softmax(h)                                          # (B, T, V)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))

    def sampled_nll(self, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Sampled softmax (Jean et al. 2015, as in bilm-tf and Józefowicz et al. §3.1): score the
        target against `n_samples` words drawn from a log-uniform (Zipf) proposal Q, shared by the
        batch, each logit corrected by −log(n_samples·Q(w)); a sample equal to the target is removed.
        Needs ids sorted by frequency (Vocab does that). Cost: n_samples columns instead of V."""
        V, K = self.cfg.vocab_size, self.cfg.n_samples
        h, targets = h.reshape(-1, h.shape[-1]), targets.reshape(-1)      # (N, P), (N,)
        log_q = lambda w: torch.log(torch.log1p(1.0 / (w.float() + 1)) / math.log(V + 1))   # Q(w), w = 0..V-1
        u = torch.rand(K, device=h.device)
        samples = (torch.exp(u * math.log(V + 1)).long() - 1).clamp_(0, V - 1)              # (K,) ~ Q
        W, b = self.softmax.weight, self.softmax.bias
        true = (h * W[targets]).sum(-1) + b[targets] - (math.log(K) + log_q(targets))       # (N,)
        sampled = h @ W[samples].t() + b[samples] - (math.log(K) + log_q(samples))           # (N, K)
        sampled = sampled.masked_fill(samples[None, :] == targets[:, None], float("-inf"))   # accidental hits
        logits = torch.cat([true[:, None], sampled], 1).float()
        return F.cross_entropy(logits, torch.zeros_like(targets))         # the target is column 0

    def embed_chars(self, chars: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """(L = n_layers+1, B, T, 2·P) representations from char ids; padding positions are 0."""
        x, fwd, bwd = self.states(chars, lengths)
        layers = [torch.cat([x, x], -1)] + [torch.cat([f, b], -1) for f, b in zip(fwd, bwd)]
        out = torch.stack(layers)                                       # (L, B, T, 2P)
        if lengths is not None:
            mask = torch.arange(out.shape[2], device=out.device) < lengths.to(out.device).unsqueeze(1)
            out = out * mask[None, :, :, None]
        return out

    @torch.no_grad()
    def embed(self, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
        """§3.2 the biLM's representations of each token: (L = 3, B, T, 2·proj), T = longest sentence.

        Layer 0 is the char-CNN token vector duplicated, [x; x], so it has the size of the LSTM
        layers; layers 1 and 2 are [forward; backward] states at each position. Each sentence is
        read on its own (no carried state); positions past its length are zeros. The biLM is frozen
        (§3.3: its weights are fixed when ELMo is added to a task): no gradients, dropout off."""
        chars, lengths = sentences_to_char_ids(sentences, self.cfg.max_chars)
        device = next(self.parameters()).device
        was_training = self.training
        self.eval()
        try:
            return self.embed_chars(chars.to(device), lengths.to(device)).float()
        finally:
            self.train(was_training)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


class ScalarMix(nn.Module):
    """§3.2 eq. 1: ELMo_k^task = γ · Σ_j s_j · h_{k,j}, with s = softmax(w) over the layers.

    w (one weight per layer, starting equal) and γ (starting at 1) are learned with the task.
    do_layer_norm: normalise each layer over its features first (§3.2: "in some cases it helped
    to apply layer normalization to each biLM layer before weighting"); `mask` (B, T) limits the
    statistics to real tokens."""

    def __init__(self, n_layers: int = 3, do_layer_norm: bool = False):
        super().__init__()
        self.n_layers, self.do_layer_norm = n_layers, do_layer_norm
        self.w = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    @property
    def weights(self) -> torch.Tensor:
        """s = softmax(w): the layer weights, summing to 1."""
        return torch.softmax(self.w, dim=0)

    def forward(self, layers: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """layers (L, B, T, D) → (B, T, D)."""
        if layers.shape[0] != self.n_layers:
            raise ValueError(f"ScalarMix({self.n_layers}) got {layers.shape[0]} layers; "
                             f"make it ScalarMix({layers.shape[0]})")
        if self.do_layer_norm:
            if mask is None:
                layers = F.layer_norm(layers, layers.shape[-1:])
            else:       # statistics over the real tokens of the whole batch, per layer (as AllenNLP does)
                m = mask[None, :, :, None].to(layers.dtype)
                n = m.sum() * layers.shape[-1]
                mean = (layers * m).sum(dim=(1, 2, 3), keepdim=True) / n
                var = (((layers - mean) * m) ** 2).sum(dim=(1, 2, 3), keepdim=True) / n
                layers = (layers - mean) / torch.sqrt(var + 1e-12)
        s = self.weights.to(layers.dtype)
        return self.gamma * (s[:, None, None, None] * layers).sum(0)


# ----------------------------------------------------------------------------- the control


def untrained_like(model: BiLM, seed: int = 0) -> BiLM:
    """The control for "what did pretraining teach?": a biLM with `model`'s architecture and freshly
    initialised weights (seed `seed`), frozen and in eval mode. Probing it shows what the architecture
    alone gives: random char-CNN and LSTM features already separate POS tags well (cf. Hewitt & Liang
    2019 on probe controls), so a layer has learned something only where it beats its untrained twin."""
    gen_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        twin = BiLM(model.cfg)
    finally:
        torch.random.set_rng_state(gen_state)
    device = next(model.parameters()).device
    return twin.to(device).eval().requires_grad_(False)
