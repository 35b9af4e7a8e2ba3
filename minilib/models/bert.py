"""BERT (Devlin et al. 2018, "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding").

    [CLS] a [SEP] b [SEP] → token + position + segment embeddings → LayerNorm → dropout
                          → n_layer × post-LN block (every position sees every other: no causal mask)
                          → MLM head at the masked positions (dense · GELU · LayerNorm · decoder tied to tok_emb)
                          → NSP head on the [CLS] state       (pooler: dense · tanh, then 2 classes)

§3: a multi-layer bidirectional Transformer encoder, the 2017 paper's blocks (post-LN) with GELU,
pretrained on two tasks at once (§3.1): the masked LM ("Task #1": predict 15 % of the tokens,
hidden in the input) and next sentence prediction ("Task #2": is b the text that follows a?).
The blocks are `transformer.py`'s with causal=False and a padding mask; this file adds the
segment embeddings (Figure 2), the two heads and their losses. The masking and the sentence
pairs are data, in `minilib/data/mlm.py`.

`objective` builds the paper's Table 5 ablations from the same encoder:

    "mlm+nsp"  BERT: masked LM + next sentence prediction (the loss is their sum, §A.2)
    "mlm"      "No NSP": the masked LM alone (no pooler, no NSP head)
    "ltr"      "LTR & No NSP": the same encoder with a causal mask, trained to predict the next
               token (a left-to-right LM, like GPT) through the same head

    >>> model = BERT(bert_config(vocab_size=8000, profile="laptop"))
    >>> out = model(ids, segments, attention_mask, labels=labels, nsp_labels=is_random)   # a batch from data.mlm
    >>> out.loss, out.mlm_loss, out.nsp_loss      # out.mlm_logits: (N, V), only at the N labelled positions
    >>> logits = model(ids, segments, attention_mask).mlm_logits                        # (B, T, V), for a cloze
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from minilib.models.transformer import IGNORE_INDEX, Block, TransformerConfig, attention_mask_4d, init_weights

OBJECTIVES = ("mlm+nsp", "mlm", "ltr")

# Sizes by profile. BERT-base (§3): 12 layers, d_model 768, 12 heads, 3,072-wide MLP, 512 positions.
# laptop: GPT laptop's shape (models/gpt.py GPT_SIZES), so chapter 07 compares like with like.
# laptop and smoke use pre-LN blocks (GPT-2 §2.3), as GPT's do (models/gpt.py GPT_SIZES), so chapter 07's
# BERT and GPT differ only in objective and attention mask. Measured at the laptop shape (batch 8 × 128,
# LR 1e-3, 10 % warm-up then linear decay, 200 steps, 1 thread, 411k train tokens): neither had left the
# unigram plateau (held-out MLM 7.00 nats/masked token post-LN, 6.97 pre-LN; unigram 6.95), so this short
# run does not decide; GPT's measurement (post-LN sat at the unigram loss where pre-LN trained) does.
# `norm="post"` builds the paper's blocks.
BERT_SIZES = {
    "smoke": dict(n_layer=2, n_embd=64, n_head=2, block_size=64, norm="pre"),
    "laptop": dict(n_layer=4, n_embd=256, n_head=4, block_size=128, norm="pre"),
    "full": dict(n_layer=12, n_embd=768, n_head=12, block_size=512, norm="post"),
}


@dataclass
class BERTConfig(TransformerConfig):
    """The Transformer's fields (block_size = the longest input, [CLS] and [SEP]s included) plus BERT's own.
    BERT always has learned positions and a decoder tied to the token embedding (§3, the released code)."""
    causal: bool = False            # an encoder: every position sees both sides; True only for objective="ltr"
    norm: str = "post"              # the paper's blocks: LN(x + f(x)); "pre" for the CPU profiles (BERT_SIZES)
    gelu: str = "tanh"              # the released BERT code's GELU is the tanh approximation
    type_vocab_size: int = 2        # segment embeddings: A (0) and B (1), Figure 2
    objective: str = "mlm+nsp"      # "mlm+nsp" (BERT) | "mlm" (No NSP) | "ltr" (left-to-right, Table 5)

    def __post_init__(self):
        super().__post_init__()
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective={self.objective!r}: use one of {', '.join(OBJECTIVES)}")
        if self.causal != (self.objective == "ltr"):
            raise ValueError(f"objective={self.objective!r} needs causal={self.objective == 'ltr'} "
                             f"(only the left-to-right twin is causal); bert_config sets it")
        if self.positions != "learned" or not self.tie_weights or self.scale_embeddings:
            raise ValueError("BERT has learned positions, a tied decoder and unscaled embeddings: "
                             "leave positions, tie_weights and scale_embeddings at bert_config's values")


def bert_config(vocab_size: int, profile: str = "laptop", objective: str = "mlm+nsp", **overrides) -> BERTConfig:
    """BERT's architecture (§3) at a profile's size, for one of the Table 5 objectives; dropout 0.1 (§A.2)."""
    if profile not in BERT_SIZES:
        raise ValueError(f"profile={profile!r}: use one of {', '.join(BERT_SIZES)}")
    return BERTConfig(vocab_size=vocab_size, **{"dropout": 0.1, "objective": objective,
                                                "causal": objective == "ltr", **BERT_SIZES[profile], **overrides})


class BERTOutput(NamedTuple):
    loss: torch.Tensor | None         # mlm_loss + nsp_loss (§A.2: "the sum of the mean masked LM likelihood
                                      # and the mean next sentence prediction likelihood"); None without labels
    mlm_logits: torch.Tensor          # with labels: (N, V) at the N labelled positions, row-major; else (B, T, V)
    nsp_logits: torch.Tensor | None   # (B, 2): IsNext (0) / NotNext (1) scores; None without the NSP head
    mlm_loss: torch.Tensor | None     # mean cross-entropy over the labelled positions (nats per masked token)
    nsp_loss: torch.Tensor | None     # mean cross-entropy of the NSP classifier over the batch


class MLMHead(nn.Module):
    """The masked LM's output layer (the released code's `get_masked_lm_output`): a dense layer, GELU and
    LayerNorm, then the decoder: the token embedding matrix (tied, set by BERT) with its own output bias."""

    def __init__(self, cfg: BERTConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.ln = nn.LayerNorm(cfg.n_embd)
        self.decoder = nn.Linear(cfg.n_embd, cfg.vocab_size)   # weight: the token embedding; bias: its own
        self.gelu = cfg.gelu

    def forward(self, h: torch.Tensor) -> torch.Tensor:           # (..., C) → (..., V)
        return self.decoder(self.ln(F.gelu(self.dense(h), approximate=self.gelu)))


class BERT(nn.Module):
    """A bidirectional Transformer encoder with BERT's two pretraining heads (§3, §3.1)."""

    def __init__(self, cfg: BERTConfig):
        super().__init__()
        self.cfg = cfg
        C = cfg.n_embd
        self.tok_emb = nn.Embedding(cfg.vocab_size, C)
        self.pos_emb = nn.Embedding(cfg.block_size, C)           # learned positions (§3, "position embeddings")
        self.seg_emb = nn.Embedding(cfg.type_vocab_size, C)      # "a learned embedding to every token indicating
                                                                 # whether it belongs to sentence A or B" (§3)
        self.emb_ln = nn.LayerNorm(C)                            # the released code normalises the embedding sum
        self.dropout = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(C) if cfg.norm == "pre" else nn.Identity()   # pre-LN leaves the top un-normalised
        self.mlm = MLMHead(cfg)
        self.mlm.decoder.weight = self.tok_emb.weight            # tied: one (V, C) matrix reads and predicts tokens
        if cfg.objective == "mlm+nsp":
            self.pooler = nn.Linear(C, C)                        # "pooled" [CLS]: dense · tanh (the released code)
            self.nsp_head = nn.Linear(C, 2)                      # §3.1 Task #2: IsNext / NotNext
        self.apply(init_weights)                                 # the released code's N(0, 0.02) (truncated there), biases 0

    def hidden(self, idx: torch.Tensor, segments: torch.Tensor | None = None,
               attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T) ids → (B, T, C) top-layer states. segments: (B, T) 0 for [CLS] a [SEP], 1 for b [SEP]
        (default all 0). attention_mask: (B, T) 1 at real tokens, 0 at padding (default: no padding)."""
        B, T = idx.shape
        if T > self.cfg.block_size:
            raise ValueError(f"sequence of {T} tokens, but block_size={self.cfg.block_size}: "
                             f"cut it or build the model with a larger block_size")
        x = self.tok_emb(idx) + self.pos_emb.weight[:T]                              # (B, T, C) + (T, C)
        x = x + (self.seg_emb(segments) if segments is not None else self.seg_emb.weight[0])
        x = self.dropout(self.emb_ln(x))
        mask = None if attention_mask is None else attention_mask_4d(T, self.cfg.causal, attention_mask)
        for block in self.blocks:
            x = block(x, mask)
        return self.ln_f(x)

    def nsp_logits(self, h: torch.Tensor) -> torch.Tensor:
        """(B, T, C) states → (B, 2) next-sentence scores from the [CLS] position (§3.1: "C is used for NSP")."""
        return self.nsp_head(torch.tanh(self.pooler(h[:, 0])))

    def forward(self, idx: torch.Tensor, segments: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                nsp_labels: torch.Tensor | None = None) -> BERTOutput:
        """labels: (B, T) the token to predict at each scored position, IGNORE_INDEX elsewhere (mlm: the
        original token at the masked positions; ltr: the next token). nsp_labels: (B,) 0 IsNext, 1 NotNext.

        With labels, the head runs only at the labelled rows: ~15 % of the positions for the masked LM,
        so the (B·T, V) logits are never made (measured ~1.8× faster per step)."""
        h = self.hidden(idx, segments, attention_mask)                               # (B, T, C)
        has_nsp = self.cfg.objective == "mlm+nsp"
        nsp_logits = self.nsp_logits(h) if has_nsp else None
        if labels is None:
            return BERTOutput(None, self.mlm(h), nsp_logits, None, None)
        rows = labels.reshape(-1) != IGNORE_INDEX                                     # (B·T,) the scored positions
        logits = self.mlm(h.reshape(-1, h.size(-1))[rows])                            # (N, C) → (N, V)
        mlm_loss = F.cross_entropy(logits.float(), labels.reshape(-1)[rows])
        nsp_loss = None
        if has_nsp and nsp_labels is not None:
            nsp_loss = F.cross_entropy(nsp_logits.float(), nsp_labels)
        loss = mlm_loss if nsp_loss is None else mlm_loss + nsp_loss
        return BERTOutput(loss, logits, nsp_logits, mlm_loss, nsp_loss)

    def num_params(self, non_embedding: bool = True) -> int:
        """Parameters, each counted once (the tied decoder once). non_embedding=True leaves out the position
        and segment embeddings but keeps the token embedding: it is also the decoder, a matrix multiply
        (as TransformerLM.num_params counts a tied GPT)."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.pos_emb.weight.numel() + self.seg_emb.weight.numel()
        return n


# ----------------------------------------------------------------------------- fine-tuning (§4, Figure 4)

class BERTClassifier(nn.Module):
    """BERT fine-tuned on a sentence or pair task (§4.1, Figure 4 a-b): the input is `[CLS] a [SEP]` or
    `[CLS] a [SEP] b [SEP]` (segments 0 then 1), and a new layer W reads the final hidden state of [CLS]
    through the pooler (dense · tanh, the released code's; pretrained by NSP when the checkpoint has it,
    new otherwise), after dropout 0.1: log softmax(C Wᵀ). Every layer trains.

    The left-to-right twin (objective "ltr") keeps its causal mask when fine-tuned, as §5.1 does for
    "LTR & No NSP" ("removing it introduced a pre-train/fine-tune mismatch"), so its [CLS] sees nothing:
    it reads the last [SEP] instead, the first position that has seen the whole input (GPT's extract token).

    forward(ids, lengths) → class logits (B, n_classes); forward(ids, lengths, labels) → (loss, parts).
    ids are right-padded; `lengths` makes the padding mask, and the segments are read from the [SEP]s."""

    def __init__(self, bert: BERT, n_classes: int, cls_id: int, sep_id: int):
        super().__init__()
        C = bert.cfg.n_embd
        self.bert, self.cls_id, self.sep_id = bert, cls_id, sep_id
        self.reads_last = bert.cfg.causal
        self.pooler = bert.pooler if hasattr(bert, "pooler") else nn.Linear(C, C)
        self.dropout = nn.Dropout(0.1)                          # §A.3: "dropout probability always kept at 0.1"
        self.classifier = nn.Linear(C, n_classes)
        for layer in {self.pooler, self.classifier} - {getattr(bert, "pooler", None)}:
            init_weights(layer)

    @property
    def block_size(self) -> int:
        return self.bert.cfg.block_size

    def transform(self, ids_a: list[int], ids_b: list[int] | None = None) -> list[int]:
        """Figure 2's input, cut to fit the model (the longer part loses its tail first)."""
        room = self.block_size - (2 if ids_b is None else 3)
        if ids_b is None:
            return [self.cls_id, *ids_a[:room], self.sep_id]
        while len(ids_a) + len(ids_b) > room:
            ids_a, ids_b = (ids_a[:-1], ids_b) if len(ids_a) >= len(ids_b) else (ids_a, ids_b[:-1])
        return [self.cls_id, *ids_a, self.sep_id, *ids_b, self.sep_id]

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T) right-padded inputs → (B, T, C) top-layer states: segment 1 after the first [SEP]."""
        lengths = lengths.to(ids.device)
        real = torch.arange(ids.size(1), device=ids.device)[None] < lengths[:, None]
        is_sep = (ids == self.sep_id).long()
        segments = ((is_sep.cumsum(1) - is_sep) > 0).long()                    # seps strictly before
        return self.bert.hidden(ids, segments, real.long())

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor, labels: torch.Tensor | None = None):
        h = self.encode(ids, lengths)                                          # (B, T, C)
        at = lengths.to(ids.device) - 1 if self.reads_last else torch.zeros_like(lengths, device=ids.device)
        pooled = torch.tanh(self.pooler(h[torch.arange(len(ids), device=ids.device), at]))
        logits = self.classifier(self.dropout(pooled))                         # (B, n_classes)
        if labels is None:
            return logits
        loss = F.cross_entropy(logits, labels)
        return loss, {"task_loss": loss.detach()}


class BERTTagger(BERTClassifier):
    """BERT fine-tuned to label every word (§4.3, Figure 4 d): the input is `[CLS] pieces [SEP]`, and W reads
    each word's *first* piece's final state (§5.3: "the representation of the first sub-token"), which has
    seen the words on both sides. The left-to-right twin reads each word's last piece instead, the first
    position at which it has seen the whole word (as GPTTagger), and never the words after it.

    forward(ids, lengths, at) → (B, W, n_tags) logits (`at`: (B, W) the position read for each word, -1 for
    padding); forward(ids, lengths, at, tags) → (mean cross-entropy over words, parts)."""

    def transform_words(self, pieces: list[list[int]]) -> tuple[list[int], list[int]]:
        """(`[CLS]` · every word's pieces · `[SEP]`, the position read for each word), cut to the model:
        words that do not fit are left out (and so not scored)."""
        ids, at = [self.cls_id], []
        for word in pieces:
            if len(ids) + len(word) + 1 > self.block_size:
                break
            at.append(len(ids) + len(word) - 1 if self.reads_last else len(ids))
            ids += word
        return ids + [self.sep_id], at

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor, at: torch.Tensor, tags: torch.Tensor | None = None):
        h = self.encode(ids, lengths)                                          # (B, T, C)
        words = h.gather(1, at.clamp(min=0)[..., None].expand(-1, -1, h.size(-1)))   # (B, W, C)
        logits = self.classifier(self.dropout(words))                          # (B, W, n_tags)
        if tags is None:
            return logits
        tags = tags.masked_fill(at < 0, IGNORE_INDEX)
        loss = F.cross_entropy(logits.flatten(0, 1), tags.flatten(), ignore_index=IGNORE_INDEX)
        return loss, {"task_loss": loss.detach()}
