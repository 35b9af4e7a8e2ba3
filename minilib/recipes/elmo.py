"""Pretraining ELMo's biLM (Peters et al. 2018): both directions on shuffled windows, one-cycle
AdamW, validation perplexity per direction; the checkpoint in the one pretrained format."""
from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import torch

from minilib import runtime
from minilib.data.batching import ELMoBatches
from minilib.data.corpora import documents_fingerprint
from minilib.data.words import tokenize
from minilib.data.vocab import Vocab
from minilib.models.elmo import BiLM, ELMoConfig
from minilib.models.pretrained import save_pretrained
from minilib.train import Learner
from minilib.train.callbacks import StopAfter


def pretrain_elmo(config: ELMoConfig, train_docs, valid_docs, out_path, progress: bool | str = True,
                  device: str | torch.device | None = None, checkpoint_dir: str | Path | None = None,
                  resume: bool = True, max_steps: int | None = None, extra_meta: dict | None = None) -> dict:
    """Train a biLM on `train_docs`, validate on `valid_docs`, write `out_path` (the one pretrained
    format, minilib/models/pretrained.py) and its `.json` (provenance). Returns the metrics.

    The vocabulary is the `config.vocab_size` most frequent training words (the config's
    vocab_size becomes the real size when the text has fewer). One-cycle AdamW for
    config.epochs over shuffled windows; the metrics hold the validation perplexity of each
    direction (full softmax) before and after. Speeds: see ELMoConfig.for_profile.
    With `checkpoint_dir` the training state is saved each epoch and on interrupt, and a
    second call with the same arguments resumes where the first stopped.

        >>> cfg = ELMoConfig.for_profile("laptop")
        >>> pretrain_elmo(cfg, pretraining_corpus("train", max_words=3_000_000),
        ...               pretraining_corpus("valid", max_words=150_000), "checkpoints/elmo.pt")
    """
    train_docs, valid_docs = list(train_docs), list(valid_docs)
    t0 = time.time()
    vocab = Vocab.build((tokenize(d.text) for d in train_docs), max_size=config.vocab_size)
    config = dataclasses.replace(config, vocab_size=len(vocab))
    runtime.seed_everything(config.seed)
    model = BiLM(config)
    model.init_output_bias(vocab.counts)
    train = ELMoBatches(train_docs, vocab, config.batch_size, config.window, config.max_chars, seed=config.seed)
    valid = ELMoBatches(valid_docs, vocab, config.batch_size, config.window, config.max_chars, shuffle=False)
    callbacks = [StopAfter(max_steps)] if max_steps else []
    learner = Learner(model, train, valid, device=device, progress=progress, callbacks=callbacks,
                      checkpoint_dir=checkpoint_dir, checkpoint_every=500 if checkpoint_dir else None)
    before = learner.evaluate()                      # the untrained biLM (≈ a unigram model, see init_output_bias)
    learner.fit(config.epochs, lr=config.lr, schedule="onecycle", resume=resume)
    result = learner.evaluate()
    metrics = {"valid_fwd_ppl": math.exp(result["fwd_nll"]), "valid_bwd_ppl": math.exp(result["bwd_nll"]),
               "valid_loss": result["loss"], "valid_loss_before": before["loss"],
               "train_tokens": train.n_tokens * config.epochs,
               "valid_tokens": valid.n_tokens, "steps": learner.step, "seconds": round(time.time() - t0, 1),
               "vocab_size": len(vocab), "params": model.num_params()}
    meta = runtime.stamp(seed=config.seed, model="elmo", metrics=metrics, **(extra_meta or {}),
                            data={"train": documents_fingerprint(train_docs), "valid": documents_fingerprint(valid_docs)},
                            config=dataclasses.asdict(config))
    save_pretrained(out_path, model, vocab, meta)
    return metrics


