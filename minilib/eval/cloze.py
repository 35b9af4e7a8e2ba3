"""Fill in the blank (chapter 07): for each [MASK] in a sentence, BERT's guesses, which read the words on both
sides, beside a left-to-right LM's guesses for the same slot, which read only the words before it.

    bert_cloze(bert, wordpiece, "the [MASK] sat on the mat .", k=5)     # [Guesses(["cat", "dog", ...], [0.31, ...])]
    left_to_right_cloze(gpt, bpe, "the [MASK] sat on the mat .", k=5)   # GPT after "the" only

A mask can be typed [MASK] or [mask]. The LM fills each earlier blank with its own first guess before
guessing the next one (it reads left to right); BERT guesses every blank at once, each from the whole sentence.
"""
from __future__ import annotations

import re
from typing import NamedTuple

import torch

from minilib.generate import next_word_log_probs

MASK = re.compile(r"\[mask\]", re.IGNORECASE)


class Guesses(NamedTuple):
    tokens: list[str]       # the k likeliest tokens for one blank, likeliest first, as the tokenizer writes them
    probs: list[float]      # their probabilities
    ids: list[int]          # their ids


def masked_text(text: str) -> str:
    """`text` with every mask spelled [MASK]; a clear ValueError for a text with no words or no mask."""
    if not text.strip():
        raise ValueError("the sentence is empty: type one with [MASK] where a word is missing")
    if not MASK.search(text):
        raise ValueError(f"no [MASK] in {text.strip()[:60]!r}: put [MASK] where a word is missing")
    return MASK.sub("[MASK]", text)


def _top(log_probs: torch.Tensor, tok, k: int, banned) -> Guesses:
    log_probs = log_probs.clone()
    log_probs[[i for i in banned if i is not None]] = float("-inf")
    top = torch.topk(torch.softmax(log_probs.double(), -1), k)
    ids = top.indices.tolist()
    shown = [tok.id_to_token(i) if tok.kind == "wordpiece" else tok.decode([i]).strip() for i in ids]  # keep "##"
    shown = [t if t.isprintable() else repr(t)[1:-1] for t in shown]        # a lone byte as \x08, not a blank
    return Guesses(shown, top.values.tolist(), ids)


@torch.no_grad()
def bert_cloze(model, tok, text: str, k: int = 5) -> list[Guesses]:
    """BERT's k likeliest WordPiece tokens for each [MASK] of `text`, all read at once: `[CLS] text [SEP]`
    through the encoder and the MLM head (§3.1). Special tokens are never guessed."""
    ids = [tok.cls_id, *tok.encode(masked_text(text)), tok.sep_id]
    if len(ids) > model.cfg.block_size:
        raise ValueError(f"the sentence is {len(ids)} tokens and this BERT reads {model.cfg.block_size}: shorten it")
    masks = [i for i, t in enumerate(ids) if t == tok.mask_id]
    was_training = model.training
    model.eval()
    logits = model(torch.tensor([ids])).mlm_logits[0, masks]                        # (M, V)
    model.train(was_training)
    return [_top(row, tok, k, tok.specials.values()) for row in logits]


def left_to_right_cloze(model, tok, text: str, k: int = 5) -> list[Guesses]:
    """A left-to-right LM's k likeliest next tokens at each [MASK] of `text`, from the words before it only
    (after the start-of-document token); each blank is then filled with the first guess."""
    parts = MASK.split(masked_text(text))
    guesses, context = [], ""
    for part in parts[:-1]:
        context = (context + part).rstrip()
        guess = _top(next_word_log_probs(model, [tok.bos_id, *tok.encode(context)]), tok, k, [tok.pad_id, tok.bos_id])
        guesses.append(guess)
        context += tok.decode(guess.ids[:1])
    return guesses


@torch.no_grad()
def blank_scores(bert, ltr, tok, sentences: list[str], seed: int = 0, batch_size: int = 64) -> dict:
    """The same blanks for two models that read one WordPiece vocabulary: one token per sentence, drawn
    uniformly (seeded) among its non-special positions. BERT sees `[CLS] sentence [SEP]` with [MASK] in the
    blank and reads both sides; the left-to-right twin predicts the blank's token from the tokens before it.
    Returns {"n", "bert_top1", "ltr_top1", "bert_nats", "ltr_nats"}: how often each model's likeliest token
    is the hidden one, and the mean nats it pays for the hidden token."""
    rng = torch.Generator().manual_seed(seed)
    T = min(bert.cfg.block_size, ltr.cfg.block_size)
    rows = []
    for text in sentences:
        ids = [tok.cls_id, *tok.encode(text)[:T - 2], tok.sep_id]
        if len(ids) > 3:
            rows.append((ids, 1 + int(torch.randint(len(ids) - 2, (1,), generator=rng))))
    right = {"bert": 0, "ltr": 0}
    nats = {"bert": 0.0, "ltr": 0.0}
    for model in (bert, ltr):
        model.eval()
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        width = max(len(ids) for ids, _ in chunk)
        ids = torch.full((len(chunk), width), tok.pad_id)
        for r, (row, _) in enumerate(chunk):
            ids[r, :len(row)] = torch.tensor(row)
        real = (ids != tok.pad_id).long()
        blank = torch.tensor([b for _, b in chunk])
        target = ids[torch.arange(len(chunk)), blank]
        masked = ids.clone()
        masked[torch.arange(len(chunk)), blank] = tok.mask_id
        for name, model, inputs, at in (("bert", bert, masked, blank), ("ltr", ltr, ids, blank - 1)):
            h = model.hidden(inputs, None, real)[torch.arange(len(chunk)), at]     # (B, C) at the reading position
            log_probs = torch.log_softmax(model.mlm(h).float(), -1)
            right[name] += int((log_probs.argmax(-1) == target).sum())
            nats[name] -= float(log_probs[torch.arange(len(chunk)), target].sum())
    n = max(len(rows), 1)
    return {"n": len(rows), **{f"{k}_top1": right[k] / n for k in right}, **{f"{k}_nats": nats[k] / n for k in nats}}
