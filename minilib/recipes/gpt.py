"""Pretraining GPT (Radford et al. 2018, §4.1): next-token prediction on the pretraining corpus in
byte-level BPE, AdamW with linear warm-up and cosine decay to 0, random windows of the token stream;
the held-out loss and an fp16 snapshot at every `eval_every` steps (tokens seen → held-out loss, for
chapter 06's zero-shot curve and chapter 08's flywheel); the checkpoint in the one pretrained format.

    cfg = GPTPretrainConfig.for_profile("laptop")
    metrics = pretrain_gpt(cfg, pretraining_corpus("train"), pretraining_corpus("valid"),
                           "checkpoints/gpt-laptop.pt", checkpoint_dir=".cache/pretrain/gpt-laptop")
"""
from __future__ import annotations

import dataclasses
import io
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from minilib import files, runtime
from minilib.data.batching import RandomWindows
from minilib.data.corpora import documents_fingerprint
from minilib.eval.perplexity import windowed_nats
from minilib.models.gpt import GPT, gpt_config
from minilib.models.pretrained import half_state, round_to_half, save_pretrained
from minilib.train import Learner
from minilib.train.callbacks import Callback, StopAfter, TokenClock


@dataclass(frozen=True)
class GPTPretrainConfig:
    profile: str = "laptop"        # the model's size: models.gpt.GPT_SIZES
    batch_size: int = 16           # windows per step (GPT-1 §4.1: 64 × 512 tokens; a small model gains from more steps)
    steps: int = 4_000             # optimizer steps; tokens seen = steps × batch_size × block_size
    lr: float = 1e-3               # peak LR (GPT-1: 2.5e-4 for 117M parameters; a small model takes more)
    warmup: float = 0.03           # fraction of steps of linear warm-up from 0 (GPT-1: 2,000 updates)
    weight_decay: float = 0.01     # GPT-1 §4.1: "modified L2 regularization, w = 0.01" on weights, not biases/gains
    clip: float = 1.0              # global gradient-norm clip
    eval_every: int = 500          # steps between held-out scores and snapshots (and resumable checkpoints)
    valid_tokens: int = 100_000    # held-out BPE tokens scored at each evaluation
    seed: int = 0
    schedule: str = "cosine"       # §4.1: "annealed to 0 using a cosine schedule"; "wsd" for a run at a budget
    # None: windows of the model's block_size at any offset (GPT-1 §4.1: contiguous 512-token sequences). A number:
    # windows of that many tokens that each begin at a sentence start, as a fine-tuned input does
    sentence_window: int | None = None

    def at_budget(self, budget: float) -> "GPTPretrainConfig":
        """This run stretched to `budget` × its compute (the compute axis): budget × the steps on the same
        model and batches, the same warm-up steps, LR held until a 20 % linear cool-down ("wsd"), and a
        held-out score and snapshot every 1/8 of the original steps, so the snapshots fall at
        1/8, 1/4, 1/2, 1, 2, 4 … × the original compute."""
        return at_budget(self, budget)

    @classmethod
    def for_profile(cls, profile: str, **overrides) -> "GPTPretrainConfig":
        sizes = {"smoke": dict(batch_size=8, steps=40, eval_every=20, valid_tokens=2_000),
                 # 4,000 × 16 × 128 = 8.2M tokens, ~0.9 of a pass over the train split; ~1.2 h at 1.9k tok/s
                 "laptop": dict(),
                 # GPT-1's shape on one GPU: batch 64 × 512, LR 2.5e-4, 2,000 warm-up updates (§4.1)
                 "full": dict(batch_size=64, steps=20_000, lr=2.5e-4, warmup=0.1, eval_every=1_000,
                              valid_tokens=500_000)}
        return cls(profile=profile, **{**runtime.pick(sizes, profile), **overrides})


def at_budget(config, budget: float):
    """GPTPretrainConfig.at_budget for any pretraining config with steps, warmup, eval_every and schedule
    (BERT's too)."""
    if not budget > 0:
        raise runtime.UsageError(f"--budget {budget}: give a multiple of the profile's compute above 0, e.g. 4")
    steps = round(budget * config.steps)
    warmup = config.warmup * config.steps / steps if config.warmup < 1 else config.warmup
    return dataclasses.replace(config, steps=steps, warmup=warmup, schedule="wsd",
                               eval_every=max(1, round(config.steps / 8)))


WARM_START_KEYS = ("step", "tokens", "valid_nats_per_token", "command", "warm_start")   # what the origin keeps


def warm_start(learner: Learner, model: torch.nn.Module, path, checkpoint_dir, resume: bool) -> dict | None:
    """Start `learner` from the weights of the checkpoint at `path` at the step its meta records (a snapshot kept by
    compute_axis.keep_latest), unless the run's own training state is there to resume exactly. Returns the
    origin the run's meta records as "warm_start" (the file, its sha256, and its step, tokens, held-out loss,
    command and own warm start, so a chain of warm starts stays traceable), or None when nothing was loaded."""
    from minilib.models.pretrained import file_sha256, kind_of, load_pretrained

    if path is None or (resume and checkpoint_dir is not None and (Path(checkpoint_dir) / "fit-0.pt").exists()):
        return None
    pre = load_pretrained(path, kind_of(model))
    if pre.model.cfg != model.cfg or "step" not in pre.meta:
        raise runtime.UsageError(f"--warm-start {path}: not a snapshot of this run (another architecture, "
                                 f"or no step in its meta)")
    model.load_state_dict(pre.model.state_dict())
    learner.start_at(int(pre.meta["step"]))
    return {"checkpoint": files.shown_path(path), "sha256": file_sha256(path),
            **{k: pre.meta[k] for k in WARM_START_KEYS if k in pre.meta}}


def warm_start_meta(curve) -> dict:
    """{"warm_start": origin} for a warm-started run's metrics (its curve and seconds begin there), else {}."""
    return {"warm_start": curve.warm_start} if curve.warm_start else {}


def document_encodings(tokenizer, docs, batch: int = 256):
    """(text, Hugging Face Encoding) of each document (an object with .text, or a string) in order, encoded
    `batch` documents at a time."""
    texts = [getattr(d, "text", d) for d in docs]
    for start in range(0, len(texts), batch):
        yield from zip(texts[start:start + batch],
                       tokenizer.hf.encode_batch(texts[start:start + batch], add_special_tokens=False))


SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=\S)")


def sentence_starts(tokenizer, docs) -> tuple[np.ndarray, np.ndarray]:
    """(stream, starts): encode_documents' stream of `docs`, and the offset in it of the first token of every
    sentence (a document's first, and each after a '.', '!' or '?' and white space)."""
    out, starts, total = [], [], 0
    for text, enc in document_encodings(tokenizer, docs):
        chars = [0] + [m.end() for m in SENTENCE_END.finditer(text)]
        tokens = {enc.char_to_token(c) for c in chars} - {None}
        starts.extend(total + t for t in sorted(tokens))
        out.append(np.asarray(enc.ids + [tokenizer.eos_id], dtype=np.int32))
        total += len(out[-1])
    return np.concatenate(out), np.asarray(starts, dtype=np.int64)


def encode_documents(tokenizer, docs, max_tokens: int | None = None) -> np.ndarray:
    """One int32 stream: every document's BPE ids followed by <|endoftext|> (GPT-2's separator),
    stopping after the document that reaches `max_tokens`."""
    out, total = [], 0
    for _, enc in document_encodings(tokenizer, docs):
        out.append(np.asarray(enc.ids + [tokenizer.eos_id], dtype=np.int32))
        total += len(out[-1])
        if max_tokens is not None and total >= max_tokens:
            return np.concatenate(out)[:max_tokens]
    return np.concatenate(out)


class NextTokenLoss(torch.nn.Module):
    """The Learner's view of a language model: (x, y) → the mean next-token loss."""

    def __init__(self, lm: torch.nn.Module):
        super().__init__()
        self.lm = lm

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.lm(x, targets=y)[1]


class HeldOutCurve(Callback):
    """Scores the held-out stream every `every` steps (before the step, so step 0 is the untrained
    model) and after the last one, and saves an fp16 snapshot of the weights at each point.
    points: [{"step", "tokens", "valid_nats_per_token"}]; kept in the resumable checkpoint."""

    def __init__(self, model: torch.nn.Module, valid_ids: np.ndarray, every: int, tokens_per_step: int,
                 snapshot_dir: Path | None, log=print):
        self.model, self.valid_ids, self.every, self.tokens_per_step = model, valid_ids, every, tokens_per_step
        self.snapshot_dir, self.log, self.points = snapshot_dir, log, []
        self.warm_start: dict | None = None     # where a warm-started run's weights came from (warm_start)

    def score(self, learner) -> None:
        model, step = self.model, learner.step
        if any(p["step"] == step for p in self.points):
            return
        nats, n = windowed_nats(model, self.valid_ids, model.cfg.block_size)
        self.points.append({"step": step, "tokens": step * self.tokens_per_step, "valid_nats_per_token": nats / n})
        if self.snapshot_dir is not None:
            buffer = io.BytesIO()
            torch.save(half_state(model, ("head.weight",)), buffer)   # tied to tok_emb: stored once
            files.atomic_write_bytes(self.snapshot_dir / f"step-{step:06d}.pt", buffer.getvalue())
        self.log(f"step {step}: {step * self.tokens_per_step:,} tokens, held-out {nats / n:.3f} nats/token")

    def before_batch(self, learner) -> None:
        if learner.step % self.every == 0:
            self.score(learner)

    def after_fit(self, learner) -> None:
        if not learner.interrupted:
            self.score(learner)

    def state_dict(self) -> dict:
        return {"points": self.points, "warm_start": self.warm_start}

    def load_state_dict(self, state: dict) -> None:
        self.points, self.warm_start = list(state["points"]), state.get("warm_start")


def pretrain_gpt(config: GPTPretrainConfig, train_docs, valid_docs, out_path, tokenizer,
                 progress: bool | str = True, device: str | torch.device | None = None,
                 checkpoint_dir: str | Path | None = None, resume: bool = True, max_steps: int | None = None,
                 extra_meta: dict | None = None, warm_start_from: str | Path | None = None) -> dict:
    """Pretrain a GPT on `train_docs` (BPE `tokenizer`), score `valid_docs`, write `out_path` and its JSON.

    With `checkpoint_dir` the training state is saved every `eval_every` steps and on interrupt, and
    a second call with the same arguments resumes where the first stopped; snapshots go to
    `checkpoint_dir/snapshots/`. Where that state is gone (another machine), `warm_start_from` (a checkpoint
    of this run's weights with its step in the meta) starts it again from there (`warm_start`).
    Returns the metrics written into the provenance JSON.
    """
    train_docs, valid_docs = list(train_docs), list(valid_docs)
    t0 = time.time()
    runtime.seed_everything(config.seed)
    model = GPT(gpt_config(tokenizer.vocab_size, config.profile))
    T = config.sentence_window or model.cfg.block_size       # the training windows' length
    if config.sentence_window:
        train_ids, starts = sentence_starts(tokenizer, train_docs)
    else:
        train_ids, starts = encode_documents(tokenizer, train_docs), None
    valid_ids = encode_documents(tokenizer, valid_docs, max_tokens=config.valid_tokens)
    train = RandomWindows(train_ids, config.batch_size, T, config.steps, seed=config.seed, starts=starts)
    checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
    curve = HeldOutCurve(model, valid_ids, config.eval_every, config.batch_size * T,
                         checkpoint_dir / "snapshots" if checkpoint_dir else None)
    clock = TokenClock()
    callbacks = [curve, clock] + ([StopAfter(max_steps)] if max_steps else [])
    learner = Learner(NextTokenLoss(model), train, None, weight_decay=config.weight_decay, clip=config.clip, device=device,
                      progress=progress, callbacks=callbacks, checkpoint_dir=checkpoint_dir,
                      checkpoint_every=config.eval_every if checkpoint_dir else None)
    curve.warm_start = warm_start(learner, model, warm_start_from, checkpoint_dir, resume)   # resuming reloads it
    learner.fit(1, lr=config.lr, schedule=config.schedule, warmup=config.warmup, resume=resume)
    model.cpu()
    fp32 = curve.points[-1]["valid_nats_per_token"]
    round_to_half(model)                                     # the metric below is the saved model's
    nats, n = windowed_nats(model, valid_ids, model.cfg.block_size)
    valid_text_bytes = len(tokenizer.decode(valid_ids[1:]).encode("utf-8"))
    metrics = {"valid_nats_per_token": nats / n, "valid_nats_per_token_fp32": fp32,
               "valid_bits_per_byte": nats / math.log(2) / valid_text_bytes, "valid_tokens": n,
               "curve": curve.points, "steps": learner.step, "train_tokens_seen": learner.step * config.batch_size * T,
               "train_stream_tokens": int(len(train_ids)), "tokens_per_s": round(clock.tokens_per_s, 1),
               "seconds": round(time.time() - t0, 1), "params": model.num_params(non_embedding=False),
               "params_non_embedding": model.num_params(), **warm_start_meta(curve)}
    meta = runtime.stamp(seed=config.seed, model="gpt", metrics=metrics, **(extra_meta or {}),
                            tokenizer=tokenizer.kind,
                            data={"train": documents_fingerprint(train_docs), "valid": documents_fingerprint(valid_docs)},
                            config=dataclasses.asdict(config), architecture=dataclasses.asdict(model.cfg))
    save_pretrained(out_path, model, tokenizer, meta)
    return metrics


def adapt_lm(model: GPT, texts, tokenizer, steps: int, lr: float, warmup: float = 0.06, batch_size: int = 16,
             seed: int = 0, progress: bool | str = False) -> GPT:
    """The in-domain stage (ULMFiT §3.2's stage (b); Gururangan et al. 2020 §5, "task-adaptive pretraining"):
    GPT's own next-token objective continued, in place, on a task's unlabelled text (each text then
    <|endoftext|>), `steps` batches of random windows, linear warm-up then cosine to 0."""
    ids = encode_documents(tokenizer, texts)
    train = RandomWindows(ids, batch_size, model.cfg.block_size, steps, seed=seed)
    learner = Learner(NextTokenLoss(model.train()), train, None, weight_decay=0.01, clip=1.0, progress=progress)
    learner.fit(1, lr=lr, schedule="cosine", warmup=warmup)
    return model.eval()


# ----------------------------------------------------------------------------- fine-tuning (§3.2, §4.1)

class EpochError(Callback):
    """1 − score(model, batches) after every epoch, into learner.history.epochs["valid_error"]."""

    def __init__(self, batches, score):
        self.batches, self.score = batches, score

    def after_epoch(self, learner) -> None:
        learner.history.epochs[-1]["valid_error"] = 1 - self.score(learner.model, self.batches)


def fine_tune_gpt(model, train, epochs: int = 3, lr: float = 6.25e-5, warmup: float = 0.002, *,
                  valid=None, score=None, weight_decay: float = 0.01, clip: float | None = 1.0,
                  callbacks=(), progress: bool | str = False, device=None) -> Learner:
    """GPT-1's fine-tuning (§4.1): every layer trains from the start at one LR (6.25e-5), linear
    warm-up over 0.2 % of the steps then linear decay, batch 32 (the batches' own), 3 epochs,
    the loss L2 + λ·L1 computed by the model (GPTClassifier, GPTTagger). `valid`: batches scored by
    `score(model, batches)` (an accuracy) after every epoch, into learner.history.epochs ("valid_error")."""
    cbs = list(callbacks) + ([EpochError(valid, score)] if valid is not None else [])
    learner = Learner(model, train, None, weight_decay=weight_decay, clip=clip, callbacks=cbs,
                      progress=progress, device=device)
    learner.fit(epochs, lr=lr, schedule="linear", warmup=warmup)
    return learner
