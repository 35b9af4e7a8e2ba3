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

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from minilib.models.transformer import IGNORE_INDEX, TransformerConfig, TransformerLM, head_loss

# Sizes by profile. GPT-1 §4.1: 12 layers, d_model 768, 12 heads, 3,072-wide MLP, 512 positions.
# laptop: the largest shape that trains ~2k tokens/s on a 2-core CPU (4 × 256 at context 128,
# measured: 2.1k tok/s with 2 threads; 6 × 256 1.4k; 4 × 384 1.1k), 5.2M non-embedding parameters.
# laptop and smoke use pre-LN blocks (GPT-2 §2.3), GPT-1's one departure here, measured: with
# post-LN this model sat at the unigram loss (train 7.2, held-out 7.04-7.12 nats/token; unigram
# 7.03) after 200 steps at LR 1e-3 and at 3e-4 and after 250 steps of 32 × 128 tokens with a
# 90-step warm-up, where pre-LN reached 6.32 in 200 steps (Xiong et al. 2020 show why post-LN
# needs a long warm-up; GPT-1 warmed up for 2,000 updates). `norm="post"` builds GPT-1's blocks.
GPT_SIZES = {
    "smoke": dict(n_layer=2, n_embd=64, n_head=2, block_size=64, norm="pre"),
    "laptop": dict(n_layer=4, n_embd=256, n_head=4, block_size=128, norm="pre"),
    "full": dict(n_layer=12, n_embd=768, n_head=12, block_size=512, norm="post"),
}


def gpt_config(vocab_size: int, profile: str = "laptop", **overrides) -> TransformerConfig:
    """GPT-1's architecture (§4.1) at a profile's size: learned positions, tied head, GELU, dropout 0.1,
    post-LN blocks (pre-LN at the CPU sizes: see GPT_SIZES)."""
    if profile not in GPT_SIZES:
        raise ValueError(f"profile={profile!r}: use one of {', '.join(GPT_SIZES)}")
    return TransformerConfig(vocab_size=vocab_size, **{"dropout": 0.1, "positions": "learned", "causal": True,
                                                       "tie_weights": True, "gelu": "tanh", **GPT_SIZES[profile],
                                                       **overrides})


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


# -- fine-tuning (§3.2-3.3) -------------------------------------------------------------------------
class GPTClassifier(nn.Module):
    """GPT-1 fine-tuned on a classification task (§3.2, Figure 1).

    Input transformations (§3.3): a text becomes `start · text · extract`, a pair
    `start · a · delim · b · extract`, where start, delim and extract are three new tokens whose
    embeddings are learned during fine-tuning. The decoder reads the whole input; a linear layer
    W_y on the extract token's top-layer state gives the class scores (eq. 3), after dropout 0.1
    (§4.1). Loss (eq. 5): L3 = L2 (the task's cross-entropy) + λ · L1 (the LM's own next-token
    loss on the same inputs, λ = 0.5), which the paper finds improves generalisation and speeds
    convergence (§3.2; ablated in Table 5).

    forward(ids, lengths) → class logits (B, n_classes); forward(ids, lengths, labels) → (L3, parts).
    ids are right-padded: a causal model's states at real positions never see the padding after them.
    """

    N_SPECIAL = 3                                               # start, delim, extract
    HEADS = ("linear", "pooler")

    def __init__(self, gpt: GPT, n_classes: int, lm_coef: float = 0.5, head: str = "linear",
                 new_tokens_from: int | None = None):
        """head: "linear" (W_y on the extract state, §3.2) or "pooler" (BERT's dense · tanh first, a new
        layer). new_tokens_from: a token id whose pretrained embedding the three added tokens start from
        (e.g. <|endoftext|>, which GPT read between documents); None draws them new, as GPT-1 does."""
        super().__init__()
        if head not in self.HEADS:
            raise ValueError(f"head={head!r}: use one of {', '.join(self.HEADS)}")
        V, C = gpt.cfg.vocab_size, gpt.cfg.n_embd
        grown = nn.Embedding(V + self.N_SPECIAL, C)
        with torch.no_grad():
            nn.init.normal_(grown.weight, mean=0.0, std=0.02)    # the new tokens: GPT's initialisation
            grown.weight[:V] = gpt.tok_emb.weight
            if new_tokens_from is not None:
                grown.weight[V:] = gpt.tok_emb.weight[new_tokens_from]
        gpt.tok_emb = grown
        gpt.head = nn.Linear(C, V + self.N_SPECIAL, bias=False)
        gpt.head.weight = grown.weight                          # still tied (eq. 2: W_e)
        gpt.cfg = dataclasses.replace(gpt.cfg, vocab_size=V + self.N_SPECIAL)
        self.gpt, self.text_vocab, self.lm_coef = gpt, V, lm_coef
        self.start_id, self.delim_id, self.extract_id = V, V + 1, V + 2
        self.dropout = nn.Dropout(0.1)                          # §4.1: "dropout to the classifier with a rate of 0.1"
        self.pooler = nn.Linear(C, C) if head == "pooler" else None
        self.classifier = nn.Linear(C, n_classes)               # W_y (eq. 3)
        for layer in filter(None, (self.pooler, self.classifier)):
            nn.init.normal_(layer.weight, std=0.02)
            nn.init.zeros_(layer.bias)

    def transform(self, ids_a: list[int], ids_b: list[int] | None = None) -> list[int]:
        """§3.3's traversal-style input: start · a · extract, or start · a · delim · b · extract, cut to
        fit the context (the longer part loses its tail first)."""
        room = self.gpt.cfg.block_size - (2 if ids_b is None else 3)
        if ids_b is None:
            return [self.start_id, *ids_a[:room], self.extract_id]
        while len(ids_a) + len(ids_b) > room:
            ids_a, ids_b = (ids_a[:-1], ids_b) if len(ids_a) >= len(ids_b) else (ids_a, ids_b[:-1])
        return [self.start_id, *ids_a, self.delim_id, *ids_b, self.extract_id]

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor, labels: torch.Tensor | None = None):
        h = self.gpt.hidden(ids)                                              # (B, T, C)
        last = h[torch.arange(len(ids), device=ids.device), lengths.to(ids.device) - 1]   # the extract token
        if self.pooler is not None:
            last = torch.tanh(self.pooler(last))
        logits = self.classifier(self.dropout(last))                          # (B, n_classes)
        if labels is None:
            return logits
        return self.with_lm_loss(F.cross_entropy(logits, labels), h, ids, lengths)    # L2 (+ λ · L1)

    def with_lm_loss(self, task_loss: torch.Tensor, h: torch.Tensor, ids: torch.Tensor, lengths: torch.Tensor):
        """(L2 + λ · L1, its parts), L1 on the text: each text token predicted from the ones before it
        (not the added tokens, not padding), from the same top-layer states h."""
        if not self.lm_coef:
            return task_loss, {"task_loss": task_loss.detach()}
        targets = ids[:, 1:].clone()
        position = torch.arange(1, ids.size(1), device=ids.device)[None]
        targets[(position >= lengths.to(ids.device)[:, None]) | (targets >= self.text_vocab)] = IGNORE_INDEX
        l1 = head_loss(h[:, :-1], self.gpt.head.weight, targets)
        return task_loss + self.lm_coef * l1, {"task_loss": task_loss.detach(), "lm_loss": l1.detach()}


class GPTTagger(GPTClassifier):
    """GPT fine-tuned to label every word (part of speech): the input is `start · the words' pieces`,
    and W_y reads the state of each word's *last* piece, the first position at which a left-to-right
    model has seen the whole word (it never sees the words after it: GPT's limit, chapter 07's point).
    The loss is the mean over words of the tag cross-entropy, plus λ · L1 on the text (eq. 5).

    forward(ids, lengths, ends) → (B, W, n_tags) logits, one row per word (`ends`: (B, W) positions of
    each word's last piece, -1 for padding); forward(ids, lengths, ends, tags) → (loss, parts)."""

    def transform_words(self, pieces: list[list[int]]) -> tuple[list[int], list[int]]:
        """(start · pieces of every word, the position of each word's last piece), cut to the context:
        words that do not fit are left out (and so not scored)."""
        ids, ends = [self.start_id], []
        for word in pieces:
            if len(ids) + len(word) > self.gpt.cfg.block_size:
                break
            ids += word
            ends.append(len(ids) - 1)
        return ids, ends

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor, ends: torch.Tensor, tags: torch.Tensor | None = None):
        h = self.gpt.hidden(ids)                                              # (B, T, C)
        at = h.gather(1, ends.clamp(min=0)[..., None].expand(-1, -1, h.size(-1)))   # (B, W, C): each word's last piece
        logits = self.classifier(self.dropout(at))                           # (B, W, n_tags)
        if tags is None:
            return logits
        tags = tags.masked_fill(ends < 0, IGNORE_INDEX)
        task_loss = F.cross_entropy(logits.flatten(0, 1), tags.flatten(), ignore_index=IGNORE_INDEX)
        return self.with_lm_loss(task_loss, h, ids, lengths)
