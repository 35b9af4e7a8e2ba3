"""`make gpu-check`: every lesson's `full` training code on one GPU, bounded, in one prepared call.

    python3 tools/gpu_check.py                    # on a CUDA machine: ≤ 9 min on one H100
    python3 tools/gpu_check.py --dry              # the same script on the CPU at tiny sizes (make gpu-check-dry)
    python3 tools/gpu_check.py pack               # here, before a GPU call: the data the check reads, packed

For each lesson 00-08 the check runs the model code the lesson trains with, at the `full` profile's sizes
(`MINILIB_PROFILE=full`: the recipes' and experiments' own `for_profile("full")` / `SIZES["full"]`), on CUDA
(bf16 autocast, fused AdamW and flash SDPA come from minilib itself: `runtime.autocast`, the Learner's
optimizer, `F.scaled_dot_product_attention`), pretraining first and then one fine-tuning point through
the grid runner where the lesson fine-tunes. Nothing in minilib is changed for the check: every fit of
minilib's Learner gets one extra callback (`Probe`) that records each step's loss and time and stops the fit
after `--steps` steps (or at the section's deadline). Then the DDP path with one process (a one-rank process
group; minilib wraps in DDP only when the world has more than one rank, so the check forces the wrap), then
`bench gpt --shape gpt2-small` eager and compiled (bench/gpt.py).

Every section has a hard time budget (SIGALRM); a section that fails or runs out of time is recorded with its
error and the check goes on. The JSON (stamped, `provenance.stamp`) is rewritten after every section, so a
call killed at its limit still brings back what ran:

    results/gpu-check-<device>.json   {"sections": {"00-the-map": {...}, ...}, "bench_gpt": {...}, ...}

Per fit: steps, the plan's total steps (the full run's schedule), loss first/last (means of the first and last
few steps), finite and falling, steps/s and tokens/s after the first two steps, and `full_minutes`: the plan's
steps over the measured steps/s, scaled to the full data where the check trained on a prefix of it —
an extrapolation from a few dozen steps, said so in the file. Per section: peak GPU memory, seconds.

The GPU machine has no network: `pack` writes .gpu-check/ (ignored by git): the processed corpora the
sections read (a tar.xz of $MINILIB_DATA/processed) and the commit, for `carry`. The check unpacks it into
a temporary $MINILIB_DATA when it finds it.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:       # run as `python3 tools/gpu_check.py` from a copy without an install
    sys.path.insert(0, str(ROOT))
from minilib.train.callbacks import Callback  # noqa: E402  (after the path above)

PACK_DIR = ROOT / ".gpu-check"
# The processed corpora the sections read: the pretraining text, the tasks they fine-tune on (trec, pos = Brown
# tagged, and sms on the compute axis) and rt (the leak guard reads its test items). Never the raw downloads:
# `cached()` takes a processed file whose stamp (the pinned sha256 of its sources) matches without opening them.
PACK_FILES = ("pretrain-brown-v2.pkl", "pretrain-news-v2.pkl", "pretrain-sotu-v2.pkl", "pretrain-moby-v2.pkl",
              "pretrain-wiki-v2.pkl", "pretrain-mixed-v2.pkl", "trec-v1.pkl", "rt-rows-v1.pkl", "rt-splits-v1.pkl",
              "sms-rows-v1.pkl", "sms-splits-v1.pkl", "brown-tagged-v2.pkl")

LESSONS = ("00-the-map", "01-static-word-vectors", "02-language-models", "03-elmo", "04-ulmfit",
           "05-transformer", "06-gpt", "07-bert", "08-the-flywheel")


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a run of the check does: the profile its models take, step caps, data prefixes and time budgets."""
    dry: bool
    profile: str                  # the size profile of every model: full on the GPU, smoke in the dry run
    tokenizer_profile: str        # the shipped tokenizers (full and laptop share one file; smoke would train one)
    steps: int                    # steps per pretraining fit
    ft_steps: int                 # steps per fine-tuning fit
    words: int                    # training words read where a recipe takes a corpus prefix
    valid_words: int              # held-out words where a recipe scores a held-out split
    labels: int                   # labelled examples of a fine-tuning point
    total_s: float                # the whole check's budget
    bench_s: float                # kept for the bench
    budgets: dict                 # section -> its own cap in seconds
    bench_modes: str


# seconds; the sections run in this order, each capped by what is left before the bench's reserve, so an
# overrun squeezes the later ones (ddp last), never the bench. BERT's is the largest: its recipe scores the
# saved model on the CPU (model.cpu()), one batch of 64 x 512 tokens at 110M parameters.
GPU_BUDGETS = {"00-the-map": 20, "01-static-word-vectors": 30, "02-language-models": 30, "03-elmo": 50,
               "04-ulmfit": 55, "05-transformer": 45, "06-gpt": 55, "07-bert": 70, "08-the-flywheel": 30,
               "ddp": 30}


def make_plan(dry: bool, total_s: float | None = None) -> Plan:
    if dry:
        return Plan(dry=True, profile="smoke", tokenizer_profile="laptop", steps=4, ft_steps=3, words=30_000,
                    valid_words=3_000, labels=20, total_s=total_s or 170, bench_s=40,
                    budgets={k: 40 for k in GPU_BUDGETS}, bench_modes="eager")
    return Plan(dry=False, profile="full", tokenizer_profile="full", steps=40, ft_steps=30, words=1_000_000,
                valid_words=50_000, labels=100, total_s=total_s or 530, bench_s=190, budgets=dict(GPU_BUDGETS),
                bench_modes="eager,compiled")


# ----------------------------------------------------------------------------- measuring every fit

class SectionTimeout(BaseException):
    """The section's hard budget ran out (a BaseException: no `except Exception` in minilib swallows it)."""


class Meter:
    """What the probes of one section record: one entry per fit of a Learner."""

    def __init__(self, plan: Plan, deadline: float):
        self.plan, self.deadline, self.fits = plan, deadline, []
        self.label, self.data_scale, self.cap = "fit", 1.0, plan.steps

    def next(self, label: str, data_scale: float = 1.0, cap: int | None = None) -> None:
        """Name the fits that follow (e.g. 'pretrain', 'fine-tune') and how to scale them to the full data."""
        self.label, self.data_scale, self.cap = label, data_scale, cap or self.plan.steps


class Probe(Callback):
    """A Learner callback: each step's loss and time; stops the fit after `cap` steps or at the deadline."""

    def __init__(self, meter: Meter):
        self.meter = meter

    def before_fit(self, learner) -> None:
        self.rec = {"label": self.meter.label, "plan_steps": int(learner.total_steps), "losses": [], "times": [],
                    "tokens_per_step": None, "data_scale": self.meter.data_scale,
                    "model": type(getattr(learner.model, "lm", learner.model)).__name__}
        self.meter.fits.append(self.rec)
        self.t0 = time.perf_counter()

    def after_step(self, learner) -> None:
        rec = self.rec
        rec["losses"].append(learner.history.steps[-1]["loss"])   # .item() already waited for the device
        rec["times"].append(time.perf_counter() - self.t0)
        if rec["tokens_per_step"] is None:
            rec["tokens_per_step"] = batch_tokens(learner.batch)
        if len(rec["losses"]) >= self.meter.cap or time.perf_counter() > self.meter.deadline:
            learner.should_stop = True


def batch_tokens(batch) -> int | None:
    """Token ids in a batch: the first integer tensor's elements (as the Learner's progress counts them)."""
    import torch

    items = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (tuple, list)) else [batch]
    for t in items:
        if isinstance(t, torch.Tensor) and not t.is_floating_point() and t.dim() >= 2:
            return int(t.numel())
    return None


@contextlib.contextmanager
def probing(meter: Meter):
    """Every Learner.fit inside gets a Probe (minilib's code is not changed: the class method is wrapped)."""
    from minilib.train import learner as learner_module

    original = learner_module.Learner.fit

    def fit(self, *args, **kwargs):
        self.callbacks = [c for c in self.callbacks if not isinstance(c, Probe)] + [Probe(meter)]
        return original(self, *args, **kwargs)

    learner_module.Learner.fit = fit
    try:
        yield
    finally:
        learner_module.Learner.fit = original


def summarize_fit(rec: dict) -> dict:
    losses, times = rec["losses"], rec["times"]
    n = len(losses)
    k = max(1, min(5, n // 3))
    out = {k2: rec[k2] for k2 in ("label", "model", "plan_steps", "tokens_per_step", "data_scale")}
    out.update(steps=n, finite=all(math.isfinite(x) for x in losses))
    if n:
        first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
        out.update(loss_first=round(first, 4), loss_last=round(last, 4), falling=bool(last < first),
                   losses=[round(x, 4) for x in losses])
    skip = 2 if n > 4 else 0                       # the first steps carry allocation, autotuning, a first score
    if n - skip >= 2:
        span = times[-1] - times[skip]
        sps = (n - 1 - skip) / span if span > 0 else None
        out["steps_per_s"] = round(sps, 3) if sps else None
        if sps and rec["tokens_per_step"]:
            out["tokens_per_s"] = round(sps * rec["tokens_per_step"])
        if sps:
            out["full_minutes"] = round(rec["plan_steps"] * rec["data_scale"] / sps / 60, 2)
    return out


# ----------------------------------------------------------------------------- the lessons' sections

def words_of(docs) -> list[str]:
    from minilib import data

    return [tok for doc in docs for tok in data.tokenize(doc.text)]


def train_words_total() -> int:
    from minilib import data

    return sum(d.num_words for d in data.pretraining_corpus("train"))


def section_00(ctx) -> dict:
    """Lesson 00: the bigram LM, as the lesson trains it (its `full` sizes: 5M words, vocab 20k, 2 epochs)."""
    from minilib import data, runtime
    from minilib.data.batching import LMStream
    from minilib.models.bigram import BigramLM, lm_loss
    from minilib.train import Learner

    LM = {"smoke": dict(words=100_000, vocab=2_000, epochs=1), "laptop": dict(words=1_000_000, vocab=5_000, epochs=1),
          "full": dict(words=5_000_000, vocab=20_000, epochs=2)}[ctx.plan.profile]   # lesson 00's table
    words = min(LM["words"], ctx.plan.words)
    train = words_of(data.pretraining_corpus("train", max_words=words))
    valid = words_of(data.pretraining_corpus("valid", max_words=words // 10))
    vocab = data.Vocab.build([train], max_size=LM["vocab"])
    runtime.seed_everything(0)
    ctx.meter.next("pretrain", data_scale=LM["words"] / words)
    learner = Learner(BigramLM(len(vocab), dim=64), LMStream(vocab.encode(train), batch_size=32, bptt=64),
                      LMStream(vocab.encode(valid), batch_size=32, bptt=64), loss_fn=lm_loss, progress=False)
    learner.fit(LM["epochs"], lr=3e-2, schedule="onecycle")
    return {"valid_loss": learner.evaluate()["loss"], "note": "the lesson's own train_bigram (its code, its sizes)"}


def section_01(ctx) -> dict:
    """Lesson 01: SGNS through recipes.word2vec.train_word2vec with static_vectors' full config, one epoch
    of a prefix, on the hogwild engine (what `auto` picks on a GPU; it does not train through the Learner)."""
    from minilab.experiments import static_vectors as sv
    from minilib import data
    from minilib.models.word2vec import Word2VecConfig
    from minilib.recipes.word2vec import train_word2vec

    full = sv.SIZES[ctx.plan.profile]
    words = ctx.plan.words // 5 if not ctx.plan.dry else ctx.plan.words
    sentences = sv.corpus_sentences(words)
    vocab = data.Vocab.build(sentences, min_count=1, specials=())
    token_ids = [vocab.encode_array(s) for s in sentences]
    cfg = Word2VecConfig(dim=full.dim, window=full.window, negative=full.negative, sample=full.sample,
                         min_count=full.min_count, epochs=1, seed=full.seed)
    t0 = time.perf_counter()
    # hogwild: what engine="auto" picks on a GPU (on a CPU it would pick numba's compiled step)
    result = train_word2vec(token_ids, vocab.counts, cfg, words=vocab.itos, progress=False, engine="hogwild")
    losses = list(getattr(result.history, "losses", []))
    full_words = (full.words or train_words_total()) * full.epochs
    wps = result.words_per_second
    fit = {"label": "pretrain (SGNS, not the Learner)", "model": "Word2Vec", "steps": len(losses),
           "finite": all(math.isfinite(x) for x in losses), "words_per_s": round(wps),
           "plan_words": full_words, "full_minutes": round(full_words / wps / 60, 2) if wps else None,
           "seconds": round(time.perf_counter() - t0, 1)}
    if losses:
        k = max(1, min(5, len(losses) // 3))
        fit.update(loss_first=round(sum(losses[:k]) / k, 4), loss_last=round(sum(losses[-k:]) / k, 4),
                   falling=sum(losses[-k:]) < sum(losses[:k]))
    return {"extra_fits": [fit], "note": "PPMI-SVD (scipy, CPU) and gensim are not GPU code and are left out"}


def section_02(ctx) -> dict:
    """Lesson 02: the LSTM LM (LSTMLMConfig.for_profile) as the lesson trains it: LMStream, lm_loss, one-cycle."""
    import numpy as np

    from minilib import data, runtime
    from minilib.data.batching import LMStream
    from minilib.models.bigram import lm_loss
    from minilib.models.lstm_lm import LSTMLM, LSTMLMConfig
    from minilib.train import Learner

    vocab_size = {"smoke": 5_000, "laptop": 10_000, "full": 30_000}[ctx.plan.profile]   # lesson 02's SIZES
    train = words_of(data.pretraining_corpus("train", max_words=ctx.plan.words))
    valid = words_of(data.pretraining_corpus("valid", max_words=ctx.plan.valid_words))
    vocab = data.Vocab.build([train], max_size=vocab_size)
    train_ids, valid_ids = vocab.encode_array(train), vocab.encode_array(valid)
    runtime.seed_everything(0)
    cfg = LSTMLMConfig.for_profile(len(vocab), ctx.plan.profile)
    lstm = LSTMLM(cfg)
    lstm.init_output_bias(np.bincount(train_ids, minlength=len(vocab)))
    ctx.meter.next("pretrain", data_scale=(train_words_total() if ctx.plan.profile == "full" else ctx.plan.words)
                   / ctx.plan.words)
    learner = Learner(lstm, LMStream(train_ids, cfg.batch_size, cfg.bptt), LMStream(valid_ids, cfg.batch_size, cfg.bptt),
                      loss_fn=lm_loss, progress=False)
    learner.fit(cfg.epochs, lr=cfg.lr, schedule="onecycle")
    return {"config": dataclasses.asdict(cfg), "valid_loss": learner.evaluate()["loss"]}


def section_03(ctx) -> dict:
    """Lesson 03: ELMo's biLM (recipes.elmo.pretrain_elmo, ELMoConfig.for_profile) on a prefix, then one
    tagger-elmo point on pos through the grid runner, from the checkpoint just written."""
    from minilib import data
    from minilab.experiments import elmo_pos, grid
    from minilib.models.elmo import ELMoConfig
    from minilib.recipes.elmo import pretrain_elmo

    cfg = ELMoConfig.for_profile(ctx.plan.profile)
    out = ctx.tmp / "elmo.pt"
    words = ctx.plan.words // 3 if not ctx.plan.dry else ctx.plan.words    # ELMoBatches spells every word: Python
    full_words = train_words_total() if ctx.plan.profile == "full" else words
    ctx.meter.next("pretrain", data_scale=full_words / words)
    m = pretrain_elmo(cfg, data.pretraining_corpus("train", max_words=words),
                      data.pretraining_corpus("valid", max_words=ctx.plan.valid_words), out, progress=False)
    elmo_pos.FEATURE_CACHE = ctx.tmp / "elmo-pos"       # read at call time: keep the features out of .cache/
    ctx.meter.next("fine-tune", cap=ctx.plan.ft_steps)
    row = grid.run_point("pos", ctx.plan.labels, "tagger-elmo", 0, force=True, checkpoint=out,
                         results_dir=ctx.tmp / "points", log=lambda *a, **k: None)
    return {"pretrain": {k: m[k] for k in ("valid_fwd_ppl", "valid_bwd_ppl", "steps", "seconds", "params")},
            "fine_tune": point_summary(row)}


def section_04(ctx) -> dict:
    """Lesson 04: ULMFiT: AWD-LSTM pretraining (recipes.awd_lstm, AWD_SIZES) on a prefix, then one ulmfit point
    on trec (stage b, the LM fine-tuned on the task's text, and stage c, the classifier with gradual unfreezing)."""
    from minilab.experiments import grid
    from minilib.recipes.awd_lstm import AWD_SIZES, pretrain_awd_lstm

    out = ctx.tmp / "awd-lstm.pt"
    words = ctx.plan.words
    full_words = (AWD_SIZES[ctx.plan.profile]["words"] or train_words_total())
    ctx.meter.next("pretrain", data_scale=full_words / words)
    meta = pretrain_awd_lstm(ctx.plan.profile, out=out, checkpoint_dir=ctx.tmp / "awd-state", resume=False,
                             progress=False, words=words, valid_words=ctx.plan.valid_words)
    ctx.meter.next("fine-tune", cap=ctx.plan.ft_steps)
    row = grid.run_point("trec", ctx.plan.labels, "ulmfit", 0, force=True, checkpoint=out,
                         results_dir=ctx.tmp / "points", lm_cache_dir=ctx.tmp / "ulmfit-lm",
                         resume_dir=ctx.tmp / "ulmfit-points")
    return {"pretrain": {"valid_perplexity": meta["valid_perplexity"], "steps": meta["steps"],
                         "tokens_per_s": meta["tokens_per_s"]}, "fine_tune": point_summary(row)}


def section_05(ctx) -> dict:
    """Lesson 05: experiment parallelism (its full config) with fewer timing repeats and a short race."""
    from minilab.experiments import parallelism as par

    full = par.SIZES[ctx.plan.profile]
    cfg = dataclasses.replace(full, repeats=2, budget_s=4.0 if not ctx.plan.dry else 1.0, slices=2,
                              train_words=ctx.plan.words, valid_words=ctx.plan.valid_words // 5)
    from minilib.data.tokenizer import pretrained_tokenizer

    r = par.run_parallelism(ctx.plan.profile, cfg, tokenizer=pretrained_tokenizer("bpe", ctx.plan.tokenizer_profile),
                            out=ctx.tmp / "parallelism.json", log=lambda *a, **k: None)
    secs = r["seconds"]
    minutes = (secs["data"] * full_data_scale(ctx) + secs["timing"] * full.repeats / cfg.repeats
               + 2 * full.budget_s + secs["equal_compute"] - 2 * cfg.budget_s) / 60
    return {"summary": r["summary"], "parallelism_seconds": secs, "full_minutes": round(minutes, 2),
            "rows": [{k: row[k] for k in ("length", "ratio", "lstm_us_per_token", "transformer_us_per_token")}
                     for row in r["timing"]["rows"]],
            "note": "full_minutes: the timing part scaled to the full repeats, plus 2 x the full race budget"}


def full_data_scale(ctx) -> float:
    return (train_words_total() / ctx.plan.words) if ctx.plan.profile == "full" else 1.0


def section_06(ctx) -> dict:
    """Lesson 06: GPT pretraining (recipes.gpt.pretrain_gpt, GPTPretrainConfig.for_profile) on a prefix, then one
    gpt point on trec through the grid runner from the checkpoint just written."""
    from minilib import data
    from minilib.data.tokenizer import pretrained_tokenizer
    from minilab.experiments import grid
    from minilib.recipes.gpt import GPTPretrainConfig, pretrain_gpt

    cfg = GPTPretrainConfig.for_profile(ctx.plan.profile, valid_tokens=ctx.plan.valid_words // 10)
    out = ctx.tmp / "gpt.pt"
    ctx.meter.next("pretrain")               # RandomWindows: the plan's steps do not depend on the prefix
    m = pretrain_gpt(cfg, data.pretraining_corpus("train", max_words=ctx.plan.words),
                     data.pretraining_corpus("valid", max_words=ctx.plan.valid_words), out,
                     pretrained_tokenizer("bpe", ctx.plan.tokenizer_profile), progress=False)
    ctx.meter.next("fine-tune", cap=ctx.plan.ft_steps)
    row = grid.run_point("trec", ctx.plan.labels, "gpt", 0, force=True, checkpoint=out, results_dir=ctx.tmp / "points")
    return {"pretrain": {k: m[k] for k in ("valid_nats_per_token", "steps", "tokens_per_s", "seconds", "params",
                                           "curve")},
            "fine_tune": point_summary(row)}


def section_07(ctx) -> dict:
    """Lesson 07: BERT pretraining (recipes.bert.pretrain_bert, MLM + NSP, BERTPretrainConfig.for_profile) on a
    prefix, then one bert point on trec through the grid runner from the checkpoint just written."""
    from minilib import data
    from minilib.data.tokenizer import pretrained_tokenizer
    from minilab.experiments import grid
    from minilib.recipes.bert import BERTPretrainConfig, pretrain_bert

    cfg = BERTPretrainConfig.for_profile(ctx.plan.profile, "mlm+nsp", valid_batches=1)
    out = ctx.tmp / "bert.pt"
    ctx.meter.next("pretrain")
    # NSP draws a second document for its NotNext pairs: the held-out prefix must hold several documents
    m = pretrain_bert(cfg, data.pretraining_corpus("train", max_words=ctx.plan.words),
                      data.pretraining_corpus("valid", max_words=max(ctx.plan.valid_words, 20_000)), out,
                      pretrained_tokenizer("wordpiece", ctx.plan.tokenizer_profile), progress=False,
                      log=lambda *a, **k: None)
    ctx.meter.next("fine-tune", cap=ctx.plan.ft_steps)
    row = grid.run_point("trec", ctx.plan.labels, "bert", 0, force=True, checkpoint=out,
                         results_dir=ctx.tmp / "points")
    return {"pretrain": {k: m.get(k) for k in ("valid_nats_per_token", "valid_nsp_accuracy", "steps",
                                               "tokens_per_s", "seconds", "params")},
            "fine_tune": point_summary(row)}


def section_08(ctx) -> dict:
    """Lesson 08: one run of the scaling sweep (scaling.train_point) at the full sweep's largest shape. The
    flywheel and the league read the cached points and checkpoints of chapters 04-07 (checked above)."""
    from minilab.experiments import scaling

    config = dataclasses.replace(scaling.SIZES[ctx.plan.profile], train_words=ctx.plan.words,
                                 valid_tokens=ctx.plan.valid_words // 10)
    shape = config.shapes[-1]
    corpus = scaling.Corpus(ctx.plan.profile, config)
    ctx.meter.next("pretrain")
    r = scaling.train_point(shape, ctx.plan.steps * config.batch_size * config.block_size, config, corpus)
    return {"run": {k: r[k] for k in ("shape", "params", "steps", "tokens_per_s", "valid_nats_per_token")},
            "note": "full_minutes here is this shape's fixed-token run only; the sweep trains "
                    f"{len(config.shapes) + len(config.token_budgets)} runs, most of them smaller"}


def section_ddp(ctx) -> dict:
    """The DDP path with one process: a one-rank process group (NCCL on CUDA, gloo on the CPU) and minilib's
    Learner wrapping the model in DistributedDataParallel, for GPT pretraining at the profile's size."""
    import torch
    import torch.distributed as dist

    from minilib import data
    from minilib.data.tokenizer import pretrained_tokenizer
    from minilib.recipes.gpt import GPTPretrainConfig, pretrain_gpt
    from minilib.train import distributed

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    backend = "nccl" if torch.cuda.is_available() and not ctx.plan.dry else "gloo"
    dist.init_process_group(backend, rank=0, world_size=1)
    original = distributed.is_distributed
    distributed.is_distributed = lambda: dist.is_initialized()     # world 1: make the Learner wrap anyway
    wrapped = {}
    ddp_init = torch.nn.parallel.DistributedDataParallel.__init__

    def spy(self, *a, **k):
        wrapped["ddp"] = True
        return ddp_init(self, *a, **k)

    torch.nn.parallel.DistributedDataParallel.__init__ = spy
    try:
        cfg = GPTPretrainConfig.for_profile(ctx.plan.profile, valid_tokens=ctx.plan.valid_words // 20)
        ctx.meter.next("pretrain (DDP, 1 rank)", cap=max(3, ctx.plan.steps // 2))
        m = pretrain_gpt(cfg, data.pretraining_corpus("train", max_words=ctx.plan.words // 4),
                         data.pretraining_corpus("valid", max_words=ctx.plan.valid_words // 4), ctx.tmp / "gpt-ddp.pt",
                         pretrained_tokenizer("bpe", ctx.plan.tokenizer_profile), progress=False)
    finally:
        torch.nn.parallel.DistributedDataParallel.__init__ = ddp_init
        distributed.is_distributed = original
        dist.destroy_process_group()
    if not wrapped:
        raise RuntimeError("the Learner did not wrap the model in DistributedDataParallel")
    return {"backend": backend, "wrapped_in_ddp": True, "steps": m["steps"], "tokens_per_s": m["tokens_per_s"]}


def point_summary(row: dict) -> dict:
    return {k: row.get(k) for k in ("task", "method", "n_labels", "accuracy", "n_test", "seconds", "train_seconds")}


SECTIONS = {"00-the-map": section_00, "01-static-word-vectors": section_01, "02-language-models": section_02,
            "03-elmo": section_03, "04-ulmfit": section_04, "05-transformer": section_05, "06-gpt": section_06,
            "07-bert": section_07, "08-the-flywheel": section_08, "ddp": section_ddp}


# ----------------------------------------------------------------------------- running sections on a budget

class Context:
    def __init__(self, plan: Plan, tmp: Path, meter: Meter):
        self.plan, self.tmp, self.meter = plan, tmp, meter


@contextlib.contextmanager
def hard_budget(seconds: float):
    """Raise SectionTimeout in the main thread after `seconds` (SIGALRM)."""
    def expire(signum, frame):
        raise SectionTimeout(f"over its budget of {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def peak_memory_mb(device) -> float:
    import torch

    if device.type == "cuda":
        return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)   # the process's peak RSS (Linux: KiB)


def run_section(name: str, plan: Plan, budget: float, tmp_root: Path, device) -> dict:
    import torch

    tmp = tmp_root / name
    tmp.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # training stops at 60 % of the budget, so the recipe's own scoring and writing still fit
    meter = Meter(plan, deadline=t0 + 0.6 * budget)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    entry: dict = {"budget_s": round(budget, 1)}
    out = io_quiet = None
    try:
        with hard_budget(budget), probing(meter), quiet() as io_quiet:
            out = SECTIONS[name](Context(plan, tmp, meter))
        entry["ok"] = True
    except (Exception, SectionTimeout) as exc:
        entry["ok"] = False
        entry["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        entry["traceback"] = traceback.format_exc()[-4000:]
    entry["seconds"] = round(time.perf_counter() - t0, 1)
    fits = [summarize_fit(r) for r in meter.fits] + list((out or {}).pop("extra_fits", []))
    entry["fits"] = fits
    entry.update(out or {})
    entry["peak_memory_mb"] = peak_memory_mb(device)
    entry["peak_memory_is"] = "torch.cuda.max_memory_allocated" if device.type == "cuda" else "process peak RSS"
    if "full_minutes" not in entry:
        minutes = [f["full_minutes"] for f in fits if f.get("full_minutes") is not None]
        entry["full_minutes"] = round(sum(minutes), 2) if minutes else None
    trained = [f for f in fits if f.get("steps")]
    entry["loss_finite_and_falling"] = bool(trained) and all(f.get("finite") and f.get("falling") for f in trained
                                                             if f["label"].startswith("pretrain"))
    if entry["ok"] and not trained and name != "05-transformer":
        entry["ok"] = False
        entry["error"] = "no training step was recorded"
    if io_quiet is not None and not entry["ok"]:
        entry["output_tail"] = io_quiet.getvalue()[-3000:]
    shutil.rmtree(tmp, ignore_errors=True)
    return entry


@contextlib.contextmanager
def quiet():
    """The recipes' own printing, kept (for a failed section's record) instead of flooding the call's output."""
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        yield buf


# ----------------------------------------------------------------------------- data for a machine without network

def pack(out_dir: Path = PACK_DIR) -> int:
    """Write out_dir/data.tar.xz (the processed corpora the check reads) and out_dir/commit; ignore out_dir in git."""
    from minilib.data.sources import cache_dir

    src = cache_dir() / "processed"
    missing = [f for f in PACK_FILES if not (src / f).is_file()]
    if missing:
        print(f"missing in {src}: {', '.join(missing)}: run `make data` first", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    exclude = ROOT / ".git" / "info" / "exclude"
    if (ROOT / ".git").is_dir():
        exclude.parent.mkdir(parents=True, exist_ok=True)
        lines = exclude.read_text().splitlines() if exclude.exists() else []
        if "/.gpu-check/" not in lines:
            exclude.write_text("\n".join(lines + ["/.gpu-check/"]) + "\n")
    target = out_dir / "data.tar.xz"
    with tarfile.open(target, "w:xz", preset=6) as tar:
        for f in PACK_FILES:
            tar.add(src / f, arcname=f"processed/{f}")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    (out_dir / "commit").write_text(commit + "\n")
    print(f"wrote {target} ({target.stat().st_size / 2**20:.1f} MiB) and {out_dir / 'commit'} ({commit[:12]}); "
          f"carry '.gpu-check' in the device call")
    return 0


def use_pack(tmp_root: Path) -> str | None:
    """Unpack .gpu-check/data.tar.xz into a temporary $MINILIB_DATA (when there is one and no data is set up);
    name the commit of a copy without .git. Returns what it did, for the record."""
    did = []
    if not (ROOT / ".git").exists() and not os.environ.get("MINILIB_COMMIT") and (PACK_DIR / "commit").is_file():
        os.environ["MINILIB_COMMIT"] = (PACK_DIR / "commit").read_text().strip()
        did.append(f"MINILIB_COMMIT={os.environ['MINILIB_COMMIT'][:12]} from .gpu-check/commit")
    archive = PACK_DIR / "data.tar.xz"
    if archive.is_file() and not os.environ.get("MINILIB_DATA"):
        target = tmp_root / "data"
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
        os.environ["MINILIB_DATA"] = str(target)
        did.append(f"MINILIB_DATA={target} from {archive.name}")
    return "; ".join(did) or None


# ----------------------------------------------------------------------------- the check

def device_slug(device) -> str:
    import torch

    if device.type != "cuda":
        return device.type
    return "cuda-" + re.sub(r"[^a-z0-9]+", "-", torch.cuda.get_device_name(device).lower()).strip("-")


def bench(plan: Plan, budget: float, device, tmp: Path) -> dict:
    """`bench gpt` at GPT-2 small's shape (the dry run: a tiny one), one call per mode, eager first, so a compile
    that runs out of time still leaves the eager numbers."""
    from bench import add_arguments, run

    size = (["--shape", "gpt2-small"] if not plan.dry else
            ["--layers", "2", "--width", "32", "--heads", "2", "--context", "16", "--batch", "4", "--vocab-size",
             "500", "--steps", "4", "--warmup", "1"])
    parser = argparse.ArgumentParser(prog="bench")
    add_arguments(parser)
    t0, end = time.perf_counter(), time.perf_counter() + budget
    entry: dict = {"command": f"python -m minilib bench gpt {' '.join(size)} --device {device.type} "
                              f"--modes {plan.bench_modes}", "budget_s": round(budget, 1), "modes": {}}
    lines = []
    for mode in plan.bench_modes.split(","):
        path = tmp / f"bench-gpt-{mode}.json"
        argv = ["gpt", *size, "--device", device.type, "--modes", mode, "--json", str(path)]
        try:
            with hard_budget(max(1.0, end - time.perf_counter())), quiet() as buf:
                rc = run(parser.parse_args(argv))
            lines.append(next((l for l in buf.getvalue().splitlines()[::-1] if l.startswith("gpt: ")), ""))
            entry["modes"][mode] = json.loads(path.read_text())["modes"][mode] if rc == 0 else {"rc": rc}
        except (Exception, SectionTimeout) as exc:
            entry["modes"][mode] = {"error": f"{type(exc).__name__}: {exc}"[:2000],
                                    "traceback": traceback.format_exc()[-4000:]}
    entry["summary_lines"] = lines
    modes = entry["modes"]
    if all("speed_ratio" in r for r in modes.values()):
        entry["summary_line"] = "gpt: " + " ".join(
            f"speed_ratio_{m}={r['speed_ratio']:.3f} mfu_{m}={r['minilib']['mfu']:.3f} mfu_hf_{m}={r['hf']['mfu']:.3f}"
            for m, r in modes.items())
    entry["ok"] = bool(modes) and all("speed_ratio" in r for r in modes.values())
    entry["seconds"] = round(time.perf_counter() - t0, 1)
    return entry


def check(plan: Plan, out: Path | None, only: list[str] | None = None, copy_to: Path | None = None) -> dict:
    import torch

    from minilib import runtime
    from minilab import provenance

    start = time.perf_counter()
    end = start + plan.total_s
    tmp_root = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    try:
        packed = use_pack(tmp_root)
        os.environ["MINILIB_PROFILE"] = plan.profile
        if plan.dry:
            os.environ["MINILIB_DEVICE"] = "cpu"
        device = runtime.device()
        if not plan.dry and device.type != "cuda":
            raise SystemExit("gpu-check needs a CUDA GPU (torch sees none); `--dry` runs it on the CPU")
        if device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        slug = device_slug(device) + ("-smoke" if plan.dry else "")
        out = out or ROOT / "results" / f"gpu-check-{slug}.json"
        result = {"check": "gpu-check", "dry": plan.dry, "plan": dataclasses.asdict(plan), "packed_data": packed,
                  "extrapolation": "full_minutes = the plan's steps (the full run's schedule, scaled to the full "
                                   "data where a prefix was read) / the steps per second measured over this check's "
                                   "few dozen steps: an extrapolation from steps, not a timed full run; a lesson's "
                                   "full run also fine-tunes many grid points (one was measured here)",
                  "sections": {}, "bench_gpt": None}
        names = [n for n in only if n != "bench"] if only else list(SECTIONS)
        for i, name in enumerate(names):
            left = end - plan.bench_s - time.perf_counter()
            if name not in SECTIONS:
                raise SystemExit(f"unknown section {name!r}: use some of {', '.join(SECTIONS)}")
            if left < 3:
                result["sections"][name] = {"ok": False, "error": "skipped: the check's time budget was spent"}
                continue
            budget = min(plan.budgets[name], left)
            print(f"[{time.perf_counter() - start:6.1f} s] {name} (budget {budget:.0f} s) ...", flush=True)
            entry = run_section(name, plan, budget, tmp_root, device)
            result["sections"][name] = entry
            print(f"[{time.perf_counter() - start:6.1f} s] {name}: {section_line(entry)}", flush=True)
            write(out, result, copy_to)
        if only is None or "bench" in (only or []):
            budget = max(5.0, end - time.perf_counter())
            print(f"[{time.perf_counter() - start:6.1f} s] bench gpt (budget {budget:.0f} s) ...", flush=True)
            result["bench_gpt"] = bench(plan, budget, device, tmp_root)
            b = result["bench_gpt"]
            print(f"[{time.perf_counter() - start:6.1f} s] bench gpt: "
                  f"{b.get('summary_line') or json.dumps(b['modes'], default=str)[:500]}", flush=True)
        result["seconds"] = round(time.perf_counter() - start, 1)
        result["ok"] = all(e.get("ok") for e in result["sections"].values()) and (
            result["bench_gpt"] is None or bool(result["bench_gpt"].get("ok")))
        write(out, result, copy_to)
        print(f"wrote {out}: {'ok' if result['ok'] else 'NOT ok'} in {result['seconds']:.0f} s", flush=True)
        return result
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)


def section_line(e: dict) -> str:
    if not e.get("ok"):
        return f"FAILED ({e.get('seconds')} s): {e.get('error', '')[:300]}"
    parts = []
    for f in e.get("fits", []):
        rate = f"{f['tokens_per_s']:,} tok/s" if f.get("tokens_per_s") else (
            f"{f['words_per_s']:,} words/s" if f.get("words_per_s") else f"{f.get('steps_per_s')} steps/s")
        parts.append(f"{f['label']} {f.get('steps')} steps, loss {f.get('loss_first')} -> {f.get('loss_last')}, {rate}")
    if not parts and e.get("summary"):
        parts.append(", ".join(f"{k} {v:.3g}" for k, v in e["summary"].items()))
    return (f"ok ({e['seconds']} s, peak {e['peak_memory_mb']:,.0f} MB, full ≈ {e.get('full_minutes')} min): "
            + "; ".join(parts))


def write(out: Path, result: dict, copy_to: Path | None) -> None:
    from minilab import provenance

    doc = {**result, "provenance": provenance.stamp(seed=0)}
    provenance.write_json(out, doc)
    if copy_to is not None:
        copy_to.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, copy_to / out.name)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    p.add_argument("action", nargs="?", choices=("check", "pack"), default="check")
    p.add_argument("--dry", action="store_true", help="the CPU at tiny sizes (smoke profile): seconds to ~2 minutes")
    p.add_argument("--out", type=Path, default=None, help="the JSON (default results/gpu-check-<device>.json)")
    p.add_argument("--copy-to", type=Path, default=None,
                   help="also copy the JSON there after every section (a device call's $OUT)")
    p.add_argument("--only", default=None, help="comma-separated sections (and/or 'bench'); default all")
    p.add_argument("--total", type=float, default=None, help="the whole check's budget in seconds (default 530; dry 170)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (the dry run: 1)")
    args = p.parse_args(argv)
    if args.action == "pack":
        return pack()
    import torch

    if args.threads or args.dry:
        torch.set_num_threads(args.threads or 1)
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    result = check(make_plan(args.dry, args.total), args.out, only, args.copy_to)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
