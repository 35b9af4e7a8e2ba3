"""Chapter 06's side experiment: where the LayerNorm sits decides whether our small GPT trains at all.

GPT-1 (like the 2017 Transformer) normalises after each residual addition (post-LN); GPT-2 moved the
norm in front of each sub-layer (pre-LN, §2.3). Xiong et al. (2020, "On Layer Normalization in the
Transformer Architecture") showed that post-LN's gradients near the output are large at
initialisation, so it needs a long learning-rate warm-up. This runs the laptop GPT both ways on the
same batches, seeds and schedule for a short budget and records the training loss and the held-out
loss against the unigram model's: the reason models/gpt.py's CPU sizes use pre-LN blocks.

    python -m minilib experiment gpt-norm      # results/gpt-norm-<profile>.json
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch

from minilib import data, runtime
from minilab import provenance
from minilab.experiments import store

RESULT = store.register("gpt-norm", "profile", "config")     # results/gpt-norm-<profile>.json


@dataclass(frozen=True)
class NormConfig:
    steps: int = 200               # optimizer steps per model
    batch_size: int = 16           # windows of the model's context per step
    lr: float = 1e-3               # peak LR, linear warm-up then cosine (the pretraining recipe's)
    warmup: float = 0.03           # fraction of the steps
    train_words: int = 1_000_000   # the first words of the train split
    valid_tokens: int = 20_000     # held-out BPE tokens scored at the end
    seed: int = 0


SIZES = {"smoke": NormConfig(steps=20, batch_size=4, train_words=50_000, valid_tokens=2_000),
         "laptop": NormConfig(), "full": NormConfig(steps=500)}


def run(profile: str | None = None, config: NormConfig | None = None, write: bool = True, log=print) -> dict:
    from minilib.data.batching import RandomWindows
    from minilib.data.tokenizer import pretrained_tokenizer
    from minilib.eval.perplexity import unigram_cross_entropy, windowed_nats
    from minilib.models.gpt import GPT, gpt_config
    from minilib.recipes.gpt import NextTokenLoss, encode_documents
    from minilib.train import Learner

    prof = profile or runtime.profile()
    config = config or SIZES[prof]
    tok = pretrained_tokenizer("bpe", prof)
    train_ids = encode_documents(tok, data.pretraining_corpus("train", max_words=config.train_words))
    valid_ids = encode_documents(tok, data.pretraining_corpus("valid"), max_tokens=config.valid_tokens)
    unigram = unigram_cross_entropy(train_ids, valid_ids, tok.vocab_size)
    runs = {}
    t0 = time.time()
    for norm in ("post", "pre"):
        runtime.seed_everything(config.seed)
        model = GPT(gpt_config(tok.vocab_size, "laptop" if prof == "smoke" else prof, norm=norm))
        batches = RandomWindows(train_ids, config.batch_size, model.cfg.block_size, config.steps, seed=config.seed)
        learner = Learner(NextTokenLoss(model), batches, None, progress=False, weight_decay=0.01, clip=1.0)
        start = time.time()
        learner.fit(1, lr=config.lr, schedule="cosine", warmup=config.warmup)
        nats, n = windowed_nats(model, valid_ids, model.cfg.block_size)
        runs[norm] = {"train_loss": [round(r["loss"], 4) for r in learner.history.steps],
                      "valid_nats_per_token": nats / n, "seconds": round(time.time() - start, 1)}
        if log:
            log(f"{norm}-LN: held-out {nats / n:.3f} nats/token after {config.steps} steps (unigram {unigram:.3f})")
    result = {"experiment": "gpt-norm", "profile": prof, "config": asdict(config), "unigram_nats_per_token": unigram,
              "runs": runs, "seconds": round(time.time() - t0, 1), "provenance": provenance.stamp(seed=config.seed)}
    if write:
        result = store.save(RESULT, prof, result)
    return result


def summary_line(result: dict) -> str:
    r, u = result["runs"], result["unigram_nats_per_token"]
    return (f"gpt-norm: post_valid={r['post']['valid_nats_per_token']:.3f} pre_valid={r['pre']['valid_nats_per_token']:.3f} "
            f"unigram={u:.3f} steps={result['config']['steps']}")


def cli_run(args, name: str) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    print(summary_line(run(args.profile)))
    return 0
