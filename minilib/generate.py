"""Text from a language model: the next-word distribution, and sampling with temperature and top-k.

    >>> generate(model, vocab, "the president said", n_words=20, temperature=0.8, top_k=50)
    'the president said that the government would ...'
    >>> generate(gpt, pretrained_tokenizer("bpe"), "The president said", n_words=40)   # 40 BPE tokens

The prompt is encoded, and the output decoded, by any tokenizer of
`minilib.data.tokenizer` (a plain `Vocab` is read as a `WordTokenizer`).

Every language model in the book answers one question here: given the words
so far, how likely is each next word? `next_word_log_probs` asks it of

  * a torch LM that maps ids (B, T) to logits (B, T, V), or to a tuple that
    starts with them — BigramLM, LSTMLM, TransformerLM, ... — fed the whole
    context, or its last `block_size` ids for a model with a fixed context
    (`model.cfg.block_size` or `model.config.block_size`; an LSTM has none).
    A model with `reset()` is reset first, so a state carried over from
    training or from an earlier call cannot leak in;
  * a count-based LM with `distribution(context) -> (V,)` probabilities — KneserNey.

Sampling: divide the log-probabilities by a temperature T (T < 1 sharpens the
distribution towards the likeliest words, T > 1 flattens it; T = 0 means
greedy, always the argmax), optionally keep only the k likeliest words (top-k,
Fan, Lewis & Dauphin 2018, "Hierarchical Neural Story Generation"), renormalise
and draw. A seeded generator makes the same call give the same text.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from minilib.data.words import tokenize
from minilib.data.tokenizer import Tokenizer, WordTokenizer
from minilib.data.vocab import Vocab


def block_size(model) -> int | None:
    """The longest context `model` reads (`cfg.block_size` or `config.block_size`); None if it has no limit."""
    for name in ("cfg", "config"):
        size = getattr(getattr(model, name, None), "block_size", None)
        if size:
            return int(size)
    return None


def next_word_log_probs(model, context: list[int]) -> torch.Tensor:
    """ln p(w | context) for every word w, as a float64 tensor (V,); `context` is a non-empty list of ids."""
    return batch_next_word_log_probs(model, [context])[0]


def batch_next_word_log_probs(model, contexts: list[list[int]], batch_size: int = 64) -> torch.Tensor:
    """ln p(w | context) for each of several contexts, (N, V) float64.

    A torch LM reads up to `batch_size` contexts at once, right-padded: a left-to-right
    model's output at a context's last word does not depend on the padding after it.
    """
    if any(len(c) == 0 for c in contexts):
        raise ValueError("a context is empty: a language model needs at least one word to continue from")
    limit = block_size(model)
    if limit is not None:
        contexts = [c[-limit:] for c in contexts]           # a Transformer sees at most block_size positions
    if hasattr(model, "distribution"):                   # count-based: KneserNey
        with np.errstate(divide="ignore"):
            return torch.from_numpy(np.log(np.stack([model.distribution(c) for c in contexts])))
    if not isinstance(model, nn.Module):
        raise TypeError(f"{type(model).__name__} is not a language model here: pass an nn.Module returning "
                        f"(B, T, V) logits, or an object with distribution(context) -> probabilities")
    was_training = model.training
    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    stateful = callable(getattr(model, "reset", None))
    model.eval()
    out = []
    try:
        with torch.no_grad():
            for start in range(0, len(contexts), batch_size):
                chunk = contexts[start:start + batch_size]
                lengths = torch.tensor([len(c) for c in chunk])
                x = torch.zeros(len(chunk), int(lengths.max()), dtype=torch.long)
                for i, c in enumerate(chunk):
                    x[i, :len(c)] = torch.as_tensor(c)
                if stateful:
                    model.reset()                        # no state from training or an earlier call
                logits = model(x.to(device))             # (n, T, V), or (logits, loss, ...)
                if isinstance(logits, tuple):
                    logits = logits[0]
                last = logits[torch.arange(len(chunk)), (lengths - 1).to(logits.device)]   # (n, V)
                out.append(torch.log_softmax(last.double().cpu(), dim=-1))
    finally:
        if stateful:
            model.reset()
        model.train(was_training)
    return torch.cat(out)


def sample_next(log_probs: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                generator: torch.Generator | None = None) -> int:
    """One word id drawn from `log_probs` (V,) at `temperature` (0: the argmax) among the `top_k` likeliest."""
    if temperature < 0:
        raise ValueError(f"temperature={temperature}: use 0 (greedy) or a positive number (1 = the model's own distribution)")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k={top_k}: use None (all words) or a positive number")
    if temperature == 0:
        return int(torch.argmax(log_probs))
    scores = log_probs / temperature
    if top_k is not None and top_k < scores.numel():
        kth = torch.topk(scores, top_k).values[-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def generate(model, tokenizer: Tokenizer | Vocab, prompt: str, n_words: int = 30, temperature: float = 1.0,
             top_k: int | None = None, seed: int = 0, allow_unk: bool = False) -> str:
    """Continue `prompt` by `n_words` tokens sampled from `model` (words for a word vocabulary, subword
    pieces for BPE or WordPiece); returns the prompt and the continuation as one text.

    The prompt is encoded by `tokenizer` (a `Vocab` is wrapped in a `WordTokenizer`:
    lowercased, punctuation split, words outside it become <unk>, and the text is
    the prompt's words and the new words joined by spaces). By default <unk> is
    never *generated* (allow_unk=True lets it be): it is a real word for the
    model, but it makes text unreadable; padding is never generated. Same
    arguments, same seed: same text.
    """
    tok = tokenizer if isinstance(tokenizer, Tokenizer) else WordTokenizer(tokenizer)
    if not prompt.strip():
        raise ValueError(f"the prompt {prompt!r} has no words: give at least one, e.g. generate(model, vocab, 'the')")
    if n_words < 0:
        raise ValueError(f"n_words={n_words}: use 0 or more")
    try:
        ids = tok.encode(prompt)
    except KeyError as exc:
        raise KeyError(f"prompt words not in the vocabulary, which has no <unk>: {exc}") from None
    if not ids:
        raise ValueError(f"the prompt {prompt!r} has no words: give at least one, e.g. generate(model, vocab, 'the')")
    n_prompt = len(ids)
    generator = torch.Generator().manual_seed(seed)
    banned = [i for i in (None if allow_unk else tok.unk_id, tok.pad_id) if i is not None]
    for _ in range(n_words):
        log_probs = next_word_log_probs(model, ids)
        log_probs[banned] = float("-inf")
        ids.append(sample_next(log_probs, temperature, top_k, generator))
    if isinstance(tok, WordTokenizer):     # the prompt's words as typed, even those the vocabulary reads as <unk>
        return " ".join(tokenize(prompt) + tok.vocab.decode(ids[n_prompt:]))
    return tok.decode(ids)
