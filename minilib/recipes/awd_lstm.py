"""Pretraining ULMFiT's stage (a): an AWD-LSTM language model (Merity et al. 2017) on the
pretraining corpus, one-cycle AdamW, variable-length BPTT, AR/TAR; the published number is
the saved (half-precision) model's validation perplexity on every valid token."""
from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from minilib import files, runtime
from minilib.data.batching import EOS, LMStream, VariableBPTTStream
from minilib.eval.perplexity import evaluate_lm
from minilib.models.awd_lstm import AWDLSTM, AWDLSTMConfig
from minilib.models.pretrained import round_to_half, save_pretrained
from minilib.train import Learner
from minilib.train.callbacks import ARTAR, SeqLenLR, StopAfter, TokenClock


def corpus_ids(split: str, vocab, max_words: int | None = None, docs=None) -> np.ndarray:
    """The pretraining corpus's `split` (or the documents `docs`) as one id stream: tokens of each line, then <eos>."""
    from minilib import data

    eos = [vocab.stoi[EOS]] if EOS in vocab else []
    out: list[int] = []
    for doc in data.pretraining_corpus(split, max_words=max_words) if docs is None else docs:
        for line in doc.text.split("\n"):
            tokens = data.tokenize(line)
            if tokens:
                out += vocab.encode(tokens) + eos
    return np.asarray(out, dtype=np.int64)


def corpus_vocab(max_words: int | None, vocab_size: int, docs=None):
    """The vocabulary of the first `max_words` words of the train split (or of the documents `docs`): <unk>,
    <eos>, then by frequency."""
    from minilib import data

    docs = data.pretraining_corpus("train", max_words=max_words) if docs is None else docs
    lines = (data.tokenize(line) for doc in docs for line in doc.text.split("\n"))
    return data.Vocab.build(lines, max_size=vocab_size, specials=(data.vocab.UNK, EOS))


def fingerprint(ids: np.ndarray, vocab, builtin: bool = True) -> dict[str, Any]:
    """What the model was trained on: sha256 of the id stream and of the vocabulary, and (`builtin`: the
    built-in corpus) the registry sha256 of every corpus source."""
    from minilib.data.corpora import DEFAULT_SOURCES
    from minilib.data.sources import source

    return {"train_ids_sha256": hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes()).hexdigest(),
            "vocab_sha256": hashlib.sha256("\n".join(vocab.itos).encode()).hexdigest(),
            "train_tokens": int(len(ids)),
            **({"sources": {name: source(name).artifact.sha256 for name in DEFAULT_SOURCES}} if builtin else {})}


AWD_SIZES = {  # corpus and batch sizes per profile; the model's sizes come from AWDLSTMConfig.for_profile
    "smoke": dict(words=100_000, vocab_size=5_000, epochs=1, batch_size=16, bptt=35, lr=3e-3),
    # laptop: 15k words keep AWDLSTMConfig's laptop size (200/512) under the 15 MB of a shipped checkpoint (docs/design.md §5)
    # (20k: 16.7 MB). Measured on the busy 2-core CPU: ~600-860 tokens/s with 1 thread, ~200 with 2.
    "laptop": dict(words=None, vocab_size=15_000, epochs=1, batch_size=32, bptt=70, lr=3e-3),
    "full": dict(words=None, vocab_size=30_000, epochs=10, batch_size=64, bptt=70, lr=3e-3),
}


def pretrain_awd_lstm(profile: str | None = None, *, out: str | Path | None = None, seed: int = 0,
                      checkpoint_dir: str | Path | None = None, resume: bool = True, progress: bool | str = "console",
                      max_steps: int | None = None, valid_words: int | None = None, command: str = "",
                      emb_size: int | None = None, hidden_size: int | None = None, train_docs=None, valid_docs=None,
                      extra_meta: dict | None = None, **sizes) -> dict[str, Any]:
    """Stage (a) of ULMFiT: AWD-LSTM on pretraining_corpus('train'), perplexity on 'valid' (or on the
    documents `train_docs` and `valid_docs`, a user's text, taken as given: `words` does not cut them).

    `sizes` override the profile's AWD_SIZES (words: 0 or None = all, vocab_size, epochs,
    batch_size, bptt, lr); emb_size / hidden_size override the model's. Writes `out`
    (default checkpoints/awd-lstm-<profile>.pt) and its JSON, `extra_meta` added to it; resumes from
    `checkpoint_dir` (default .cache/pretrain/<out name>) when a run was interrupted. Returns the meta."""
    prof = profile or runtime.profile()
    unknown = set(sizes) - set(AWD_SIZES[prof])
    if unknown:
        raise TypeError(f"unknown sizes {sorted(unknown)}: use {', '.join(AWD_SIZES[prof])}")
    sizes = {**runtime.pick(AWD_SIZES, prof), **{k: v for k, v in sizes.items() if v is not None}}
    sizes["words"] = sizes["words"] or None
    out = Path(out or files.REPO_ROOT / "checkpoints" / f"awd-lstm-{prof}.pt")
    ckpt_dir = checkpoint_dir or files.REPO_ROOT / ".cache" / "pretrain" / out.stem
    runtime.seed_everything(seed)

    t0 = time.perf_counter()
    if (train_docs is None) != (valid_docs is None):
        raise TypeError("give both train_docs and valid_docs, or neither")
    if train_docs is not None:
        from minilib.data.corpora import take_words

        train_docs, valid_docs = list(train_docs), take_words(valid_docs, valid_words)
    vocab = corpus_vocab(sizes["words"], sizes["vocab_size"], train_docs)
    train_ids = corpus_ids("train", vocab, sizes["words"], train_docs)
    valid_ids = corpus_ids("valid", vocab, valid_words, valid_docs)
    print(f"awd-lstm ({prof}): {len(train_ids):,} train tokens, {len(valid_ids):,} valid tokens, "
          f"vocab {len(vocab):,} ({time.perf_counter() - t0:.0f} s to tokenize)")
    overrides = {k: v for k, v in (("emb_size", emb_size), ("hidden_size", hidden_size)) if v}
    cfg = AWDLSTMConfig.for_profile(len(vocab), prof, **overrides)
    model = AWDLSTM(cfg)
    bs, bptt = sizes["batch_size"], sizes["bptt"]
    clock = TokenClock()
    callbacks = [ARTAR(), SeqLenLR(bptt), clock] + ([StopAfter(max_steps)] if max_steps else [])
    learner = Learner(model, VariableBPTTStream(train_ids, bs, bptt, seed=seed), LMStream(valid_ids, bs, bptt),
                      loss_fn=None, callbacks=callbacks, checkpoint_dir=ckpt_dir, progress=progress)
    t1 = time.perf_counter()
    learner.fit(sizes["epochs"], lr=sizes["lr"], schedule="onecycle", resume=resume)
    train_seconds = time.perf_counter() - t1

    # The number we publish is the saved (half-precision) model's, on every valid token.
    valid_ce_fp32 = evaluate_lm(model, valid_ids, bs, bptt)
    round_to_half(model)
    valid_ce = evaluate_lm(model, valid_ids, bs, bptt)
    meta = runtime.stamp(seed=seed, command=command, profile=prof, model="awd-lstm", config=dataclasses.asdict(cfg),
                            sizes=sizes, data=fingerprint(train_ids, vocab, builtin=train_docs is None),
                            valid_tokens=int(len(valid_ids)),
                            valid_ids_sha256=hashlib.sha256(valid_ids.tobytes()).hexdigest(),
                            eval=dict(batch_size=bs, bptt=bptt, split="valid", max_words=valid_words),
                            valid_loss=valid_ce, valid_perplexity=float(np.exp(valid_ce)),
                            valid_perplexity_fp32=float(np.exp(valid_ce_fp32)), steps=learner.step,
                            train_seconds=round(train_seconds, 1), threads=torch.get_num_threads(),
                            tokens_per_s=round(clock.tokens_per_s, 1), train_tokens_seen=clock.tokens,
                            **(extra_meta or {}))
    save_pretrained(out, model, vocab, meta)
    return meta
