"""Your own text: the flywheel's bet on a text the learner brings (chapter 08, exercise 4).

The flywheel says a start that has read more raw text is a better start. Here both starts read the *same* few
hundred windows of the learner's text with GPT's own next-token objective (recipes/gpt.adapt_lm) — the shipped
GPT, which read the built-in corpus first, and the same network from random weights — and both are scored on
held-out documents of that text, beside a unigram model of it (the floor a language model must beat) and the
shipped GPT before it read a word of the learner's text. The learner's text is read as `pretrain gpt --corpus`
reads it (data/corpora.read_user_corpus, its held-out split carved by `hold_out`), in GPT's shipped tokenizer so
that the four numbers are in the same units. Nothing is cached: it runs in minutes, in the lesson.
"""
from __future__ import annotations

import time
from pathlib import Path

from minilib import runtime

# Steps of 16 x 128 tokens each start reads: at laptop 0.2M tokens a start, ~2-3 CPU-minutes each. The shipped
# GPT continues at tapt.py's LR (a quarter of pretraining's peak); the random start takes pretraining's own.
STEPS = {"smoke": 8, "laptop": 100, "full": 1_000}
BATCH = 16                                   # windows a step, each of the model's block_size tokens
CONTINUE_LR, SCRATCH_LR = 2.5e-4, 1e-3
VALID_TOKENS = {"smoke": 4_096, "laptop": 32_768, "full": 262_144}


def race(paths, profile: str | None = None, steps: int | None = None, documents: str = "block", seed: int = 0,
         progress: bool | str = False) -> dict:
    """Held-out nats per token on the learner's text (`paths`: files, folders, as `pretrain --corpus` takes
    them) of: its unigram model, the shipped GPT, the shipped GPT after `steps` steps on the text, and the same
    network from random weights after the same steps. Returns {"rows": [(start, nats)], "corpus": ..., ...}."""
    import torch

    from minilib.data.corpora import hold_out, read_user_corpus
    from minilib.eval.perplexity import unigram_nats, windowed_nats
    from minilab.experiments.gpt_finetune import default_checkpoint
    from minilib.models.gpt import GPT
    from minilib.models.pretrained import load_pretrained
    from minilib.recipes.gpt import adapt_lm, encode_documents

    profile = profile or runtime.profile()
    steps = STEPS[profile] if steps is None else steps
    corpus = read_user_corpus([str(p) for p in paths], documents)
    train, valid = hold_out(corpus.documents, seed=seed)
    shipped = load_pretrained(default_checkpoint(profile), "gpt")
    tok, model = shipped.vocab, shipped.model
    texts = [d.text for d in train]
    train_ids = encode_documents(tok, texts)
    valid_ids = encode_documents(tok, [d.text for d in valid], max_tokens=VALID_TOKENS[profile])

    def score(m) -> float:
        nats, n = windowed_nats(m, valid_ids, m.cfg.block_size)
        return nats / n

    rows = [("unigram model of your text", unigram_nats(train_ids, valid_ids, tok.vocab_size)),
            ("shipped GPT, before your text", score(model))]
    t0 = time.time()
    adapt_lm(model, texts, tok, steps, CONTINUE_LR, batch_size=BATCH, seed=seed, progress=progress)
    rows.append((f"shipped GPT + {steps} steps of your text", score(model)))
    torch.manual_seed(seed)
    scratch = GPT(model.cfg)
    adapt_lm(scratch, texts, tok, steps, SCRATCH_LR, batch_size=BATCH, seed=seed, progress=progress)
    rows.append((f"random start + {steps} steps of your text", score(scratch)))
    return {"rows": rows, "corpus": corpus.describe(), "steps": steps, "profile": profile,
            "tokens_per_start": steps * BATCH * model.cfg.block_size, "train_tokens": int(len(train_ids)),
            "valid_tokens": int(len(valid_ids)) - 1, "checkpoint": Path(default_checkpoint(profile)).name,
            "seconds": round(time.time() - t0, 1)}
