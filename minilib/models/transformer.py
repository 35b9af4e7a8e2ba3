"""The Transformer (Vaswani et al. 2017, "Attention Is All You Need"), as a language model.

    token embedding + positions → dropout → n_layer × Block → [final LayerNorm] → LM head (tied)
    Block:  x + attention(x)  then  x + MLP(x),  with LayerNorm after (post-LN) or before (pre-LN)

One file, in the spirit of nanoGPT's model.py, that GPT and BERT build on:

    GPT-1 (Radford et al. 2018):  TransformerConfig(norm="post", positions="learned", causal=True)
    GPT-2 (Radford et al. 2019):  TransformerConfig(norm="pre", positions="learned", causal=True)
    BERT encoder (Devlin et al.): TransformerConfig(norm="post", causal=False) with an `attention_mask`
                                  for padding and segment embeddings passed to `hidden`

Self-attention is `attention()` below, written out as the paper's equation (§3.2.1):
softmax(QKᵀ/√d_k)V. `MultiHeadAttention` computes Q, K and V for every head with one fused
projection and, on its fast path, calls `F.scaled_dot_product_attention` (the same function,
computed by flash / memory-efficient kernels); `fast_attention=False` runs the written-out one.
With targets on a CPU, the LM head and its cross-entropy run chunk by chunk (`lm_loss.chunked_lm_loss`):
the same loss and gradients without ever holding the (B, T, V) logits (`lm_loss.head_loss` picks the path).

    >>> cfg = TransformerConfig(vocab_size=len(vocab), block_size=128, n_layer=4, n_head=4, n_embd=256)
    >>> model = TransformerLM(cfg)
    >>> _, loss = model(x, targets=y)               # x, y: (B, T) token ids, y = x shifted by one
    >>> logits, _ = model(x)                         # (B, T, V) next-token logits
    >>> opt = model.configure_optimizers(weight_decay=0.1, lr=3e-4, betas=(0.9, 0.95), device_type="cpu")
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from minilib.models.lm_loss import IGNORE_INDEX, chunked_lm_loss, head_loss  # noqa: F401  (the LM head's loss)


@dataclass
class TransformerConfig:
    vocab_size: int                # V: rows of the token embedding = columns of the LM head
    block_size: int = 128          # T_max: the longest sequence the positions cover (the context)
    n_layer: int = 4               # stacked blocks (paper §3.1: N = 6; GPT-1: 12)
    n_head: int = 4                # attention heads per block (paper §3.2.2: h = 8); n_embd % n_head == 0
    n_embd: int = 256              # d_model: the width of every residual stream vector (paper: 512)
    dropout: float = 0.1           # P_drop (paper §5.4 and GPT-1 §4.1: 0.1): embeddings, sub-layer outputs, attention
    positions: str = "learned"     # "learned" (GPT, BERT: one trained vector per position) | "sinusoidal" (paper §3.5)
    norm: str = "pre"              # "post": LN(x + f(x)) (paper §3.1, GPT-1, BERT) | "pre": x + f(LN(x)) (GPT-2 §2.3)
    causal: bool = True            # position t sees only positions ≤ t (a decoder / LM); False: an encoder (BERT)
    bias: bool = True              # biases in the Linear layers (the paper, GPT and BERT all have them)
    tie_weights: bool = True       # LM head weight = token embedding (Press & Wolf 2017; GPT-1, GPT-2, BERT)
    scale_embeddings: bool = False  # token embeddings × √d_model (paper §3.4; GPT does not)
    gelu: str = "tanh"             # GELU: "tanh" approximation (GPT-1/2's code, one fused kernel) | "none" (exact erf)
    fast_attention: bool = True    # F.scaled_dot_product_attention; False: the written-out `attention` below
    chunked_loss: bool = True      # with targets on a CPU: head + loss chunk by chunk (`chunked_lm_loss`); logits None

    def __post_init__(self):
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} must be a multiple of n_head={self.n_head} "
                             f"(each head gets n_embd // n_head dimensions)")
        if self.positions not in ("learned", "sinusoidal"):
            raise ValueError(f"positions={self.positions!r}: use 'learned' or 'sinusoidal'")
        if self.norm not in ("post", "pre"):
            raise ValueError(f"norm={self.norm!r}: use 'post' (2017 paper, GPT-1) or 'pre' (GPT-2)")
        if self.gelu not in ("tanh", "none"):
            raise ValueError(f"gelu={self.gelu!r}: use 'tanh' (GPT's approximation) or 'none' (exact)")


# -- attention -----------------------------------------------------------------------------------------
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
              dropout: nn.Module | None = None) -> torch.Tensor:
    """Scaled dot-product attention (paper §3.2.1, eq. 1): softmax(QKᵀ / √d_k) V.

    q, k, v: (B, nh, T, hs). mask: bool, broadcastable to (B, nh, T, T), True where query t may
    look at key s; a masked score becomes -inf, so its softmax weight is exactly 0.
    Dividing by √d_k keeps the scores' variance near 1 whatever the head size, so the
    softmax does not saturate (paper §3.2.1, footnote 4).
    """
    att = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))       # (B, nh, T, T): query t · key s
    if mask is not None:
        att = att.masked_fill(~mask, float("-inf"))
    att = att.softmax(dim=-1)                                     # each row: weights over the keys, sum 1
    if dropout is not None:
        att = dropout(att)                                        # GPT drops attention weights too
    return att @ v                                                # (B, nh, T, hs): weighted sum of values


def attention_mask_4d(T: int, causal: bool, attention_mask: torch.Tensor | None,
                      device: torch.device | None = None) -> torch.Tensor | None:
    """The (B | 1, 1, T, T) bool mask `attention` takes, from the causal flag and a (B, T) padding mask.

    attention_mask: (B, T), 1 / True at real tokens, 0 / False at padding (Hugging Face's convention).
    A query may look at a key if the key is a real token (and, when causal, not in its future).
    Every position may always look at itself: a padded query would otherwise have no key
    left, a row of -inf and a NaN that spreads through the backward pass. That never changes
    a real token's output (it sees itself anyway), and a padded position's output is ignored.
    """
    if not causal and attention_mask is None:
        return None
    device = attention_mask.device if attention_mask is not None else device
    mask = torch.ones(T, T, dtype=torch.bool, device=device)
    if causal:
        mask = mask.tril()                                      # (T, T): query t sees keys s ≤ t
    if attention_mask is not None:
        mask = mask & attention_mask.bool()[:, None, None, :]  # (B, 1, T, T): no query sees a padded key
    return (mask | torch.eye(T, dtype=torch.bool, device=device)).reshape(-1, 1, T, T)


class LayerCache:
    """One block's keys and values of the positions already read: a decoder that generates one token at
    a time computes each position's K and V once (a KV cache) instead of re-reading the whole prefix."""

    def __init__(self):
        self.k: torch.Tensor | None = None                      # (B, nh, T_past, hs)
        self.v: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.k is None else self.k.size(2)

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new positions' k, v (B, nh, T_new, hs); return all of them (B, nh, T_past + T_new, hs)."""
        self.k = k if self.k is None else torch.cat([self.k, k], dim=2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=2)
        return self.k, self.v


class MultiHeadAttention(nn.Module):
    """n_head attention heads side by side (paper §3.2.2), with one fused Q/K/V projection."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.n_head, self.causal, self.fast = cfg.n_head, cfg.causal, cfg.fast_attention
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)  # W^Q, W^K, W^V of all heads in one GEMM
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)     # W^O: heads concatenated → d_model
        self.attn_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                cache: LayerCache | None = None) -> torch.Tensor:
        """x: (B, T, C). mask: None (causal or full, from the config) or a bool mask from `attention_mask_4d`.
        cache: the keys and values of earlier positions (causal models only); x's are appended to it."""
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)                               # each (B, T, C)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
        if cache is not None and len(cache):
            past = len(cache)
            k, v = cache.extend(k, v)                                       # (B, nh, past + T, hs)
            # query t (at position past + t) sees every cached key and the new ones up to itself
            mask = torch.ones(T, past + T, dtype=torch.bool, device=x.device).tril(diagonal=past)
        elif cache is not None:
            cache.extend(k, v)
        if self.fast:  # the same function as `attention`, computed by a fused kernel (flash on a GPU)
            p = self.attn_dropout.p if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                               is_causal=self.causal and mask is None)
        else:
            if mask is None and self.causal:
                mask = attention_mask_4d(T, True, None, x.device)
            y = attention(q, k, v, mask, self.attn_dropout)
        y = y.transpose(1, 2).reshape(B, T, C)                              # heads side by side: (B, T, C)
        return self.proj(y)


# -- positions ---------------------------------------------------------------------------------------
def sinusoidal_positions(n_positions: int, d: int) -> torch.Tensor:
    """(n_positions, d): PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)) (§3.5).

    Each pair of dimensions is a rotation at its own frequency, so PE(pos + k) is a linear
    function of PE(pos): attention can find relative offsets, and no position needs training.
    """
    pos = torch.arange(n_positions, dtype=torch.float32)[:, None]         # (P, 1)
    inv_freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)  # (d/2,): 1 / 10000^(2i/d)
    pe = torch.zeros(n_positions, d)
    pe[:, 0::2] = torch.sin(pos * inv_freq)
    pe[:, 1::2] = torch.cos(pos * inv_freq[: d // 2])
    return pe


# -- the block ---------------------------------------------------------------------------------------
class MLP(nn.Module):
    """Position-wise feed-forward network (§3.3): Linear(d → 4d), GELU, Linear(4d → d).

    The paper uses ReLU; GPT-1 (§4.1) and BERT use GELU (Hendrycks & Gimpel 2016).
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)    # §3.3: d_ff = 4 · d_model (2048 / 512)
        self.proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.gelu = cfg.gelu

    def forward(self, x: torch.Tensor) -> torch.Tensor:                    # (B, T, C) → (B, T, C)
        return self.proj(F.gelu(self.fc(x), approximate=self.gelu))


class Block(nn.Module):
    """Attention then MLP, each wrapped in a residual connection, dropout and a LayerNorm.

    post-LN (paper §3.1, GPT-1, BERT): x = LN(x + Dropout(f(x))) — the norm sits on the residual path.
    pre-LN (GPT-2 §2.3):               x = x + Dropout(f(LN(x))) — the residual path stays an identity,
                                       which trains deep stacks without the post-LN warm-up fragility.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.pre_norm = cfg.norm == "pre"
        self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = MultiHeadAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = MLP(cfg)
        self.dropout = nn.Dropout(cfg.dropout)  # §5.4 residual dropout: on each sub-layer's output, before the add

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                cache: LayerCache | None = None) -> torch.Tensor:  # (B, T, C) → (B, T, C)
        if self.pre_norm:
            x = x + self.dropout(self.attn(self.ln_1(x), mask, cache))
            return x + self.dropout(self.mlp(self.ln_2(x)))
        x = self.ln_1(x + self.dropout(self.attn(x, mask, cache)))
        return self.ln_2(x + self.dropout(self.mlp(x)))


# -- the language model ------------------------------------------------------------------------------
def init_weights(module: nn.Module) -> None:
    """GPT-1 §4.1, GPT-2 and BERT's released code: weights N(0, 0.02), biases 0 (LayerNorm keeps gain 1,
    shift 0). Use as model.apply(init_weights)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


class TransformerLM(nn.Module):
    """Token ids (B, T) → next-token logits (B, T, V), and the loss when targets are given."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        if cfg.positions == "learned":
            self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd)
        else:  # fixed, not trained, not saved: recomputed from the formula
            self.register_buffer("pos_table", sinusoidal_positions(cfg.block_size, cfg.n_embd), persistent=False)
        self.dropout = nn.Dropout(cfg.dropout)  # §5.4: on the sums of the embeddings and positional encodings
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        # pre-LN leaves the last block's output un-normalised: GPT-2 adds one final LayerNorm (§2.3)
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=cfg.bias) if cfg.norm == "pre" else nn.Identity()
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        if cfg.tie_weights:
            self.head.weight = self.tok_emb.weight  # one (V, C) matrix reads and predicts every token
        self.apply(init_weights)
        for block in self.blocks:  # GPT-2 §2.3: residual projections scaled by 1/√N, N = 2 adds per block
            for proj in (block.attn.proj, block.mlp.proj):
                nn.init.normal_(proj.weight, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    def new_cache(self) -> list[LayerCache]:
        """An empty KV cache, one `LayerCache` per block, for `hidden(..., cache=)` (causal models)."""
        return [LayerCache() for _ in self.blocks]

    def hidden(self, idx: torch.Tensor, attention_mask: torch.Tensor | None = None,
               extra_embeddings: torch.Tensor | None = None, cache: list[LayerCache] | None = None) -> torch.Tensor:
        """(B, T) ids → (B, T, C) top-layer states. attention_mask: (B, T), 1 at real tokens, 0 at padding.
        extra_embeddings: (B, T, C) added to the input, e.g. BERT's segment embeddings.
        cache: from `new_cache()`; idx then continues the positions already in it (generation)."""
        B, T = idx.shape
        start = len(cache[0]) if cache else 0                                 # positions already read
        if start + T > self.cfg.block_size:
            raise ValueError(f"sequence of {start + T} tokens, but block_size={self.cfg.block_size}: "
                             f"cut it or build the model with a larger block_size")
        if cache is not None and (not self.cfg.causal or attention_mask is not None):
            raise ValueError("a KV cache is for a causal model without padding (generation)")
        x = self.tok_emb(idx)                                                # (B, T, C)
        if self.cfg.scale_embeddings:
            x = x * math.sqrt(self.cfg.n_embd)
        positions = self.pos_emb.weight if self.cfg.positions == "learned" else self.pos_table
        x = x + positions[start:start + T]                                   # + (T, C)
        if extra_embeddings is not None:
            x = x + extra_embeddings
        x = self.dropout(x)
        mask = None if attention_mask is None else attention_mask_4d(T, self.cfg.causal, attention_mask)
        for i, block in enumerate(self.blocks):
            x = block(x, mask, cache[i] if cache is not None else None)
        return self.ln_f(x)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """idx: (B, T) ids; targets: (B, T) next ids (IGNORE_INDEX where there is none) → (logits, mean loss).

        With targets, `chunked_loss` and a CPU, the loss comes from `chunked_lm_loss` and logits is None:
        the (B, T, V) logits are never held at once (for V = 8k and 4k tokens, 128 MB per copy)."""
        h = self.hidden(idx, attention_mask)                                  # (B, T, C)
        if targets is None:
            return self.head(h), None                                         # (B, T, V)
        if self.cfg.chunked_loss and h.device.type == "cpu":
            return None, chunked_lm_loss(h, self.head.weight, targets)
        logits = self.head(h)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1),
                               ignore_index=IGNORE_INDEX)
        return logits, loss

    def num_params(self, non_embedding: bool = True) -> int:
        """Parameters, each counted once (a tied matrix once). non_embedding=True leaves out the
        position embeddings, and the token embedding unless it is tied: then it is also the LM
        head, a matrix multiply on every token (as nanoGPT counts)."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            if self.cfg.positions == "learned":
                n -= self.pos_emb.weight.numel()
            if not self.cfg.tie_weights:
                n -= self.tok_emb.weight.numel()
        return n

    def flops_per_token(self, T: int | None = None) -> int:
        """Training FLOPs per token (forward + backward) at context T, as PaLM (Chowdhery et al.
        2022, app. B) counts them: 6 per parameter in a matrix multiply (2 forward, 4 backward),
        plus the attention scores and weighted sum, 6 · 2 · n_layer · T · d (causal masking not
        subtracted)."""
        T = T or self.cfg.block_size
        return 6 * self.num_params(non_embedding=True) + 12 * self.cfg.n_layer * T * self.cfg.n_embd

    def configure_optimizers(self, weight_decay: float, lr: float, betas: tuple[float, float] = (0.9, 0.95),
                             device_type: str = "cpu") -> torch.optim.AdamW:
        """AdamW with weight decay on every 2-D weight (Linear weights and the token / position
        embeddings, as nanoGPT does) and none on biases and LayerNorm gains and shifts: shrinking
        those toward 0 only fights their job of shifting and scaling. Fused kernel on CUDA."""
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=device_type == "cuda")
