"""Chapter 05's experiment: self-attention is parallel over positions, an LSTM is not (Vaswani et al. 2017, §4).

    from minilab.experiments import parallelism as par
    res = par.run_parallelism("laptop")        # results/parallelism-laptop.json, stamped
    res["timing"]["rows"]                      # seconds per token by sequence length, LSTM / Transformer
    res["equal_compute"]["curves"]             # validation bits per byte against training seconds

Two models of the same width d and (within a few per cent) the same parameter count read the same
byte-level BPE tokens: `TransformerLM` with 2 blocks (12·d² weights each: attention 4d², MLP 8d²) and
`LSTMLM` with 3 layers (8·d² each: four gates, input and recurrent weights), both with tied embeddings.

(a) Time per token against sequence length T. The same real tokens (`tokens_per_step` of them) are cut
    into (tokens / T, T) blocks at every T, so each step does the same arithmetic per token, apart from
    attention's T·d per token. What changes with T is how much work can run at once: the LSTM takes T
    steps one after another, each a small (B, d) × (d, 4d) product, with B = tokens / T rows; the
    Transformer takes its n_layer blocks, each over all B·T positions at once (the paper's Table 1:
    O(n) sequential operations for a recurrent layer, O(1) for self-attention). Forward + backward,
    repetitions interleaved across lengths and models, medians reported, so a machine shared with
    other work slows every cell alike. On a GPU, nn.LSTM runs cuDNN's kernel and attention runs SDPA.

(b) Quality per unit of compute. Both models train on the same random (batch, context) windows of the
    train split for the same number of seconds; the clock runs only while a model trains, and the two
    take turns in `slices` slices so that load from other users falls on both alike. After each slice
    each model is scored on the valid split in bits per byte: every token of the valid text (documents
    joined by <|endoftext|>) predicted once, in blocks of `context` tokens, nats summed, divided by ln 2
    and by the UTF-8 bytes of the text. Bytes do not depend on the tokenizer, so this unit compares any
    two LMs (the LSTM here reads the same BPE tokens, so per-token losses would also compare).
"""
from __future__ import annotations

import hashlib
import math
import os
import statistics
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from minilib import runtime
from minilab import provenance
from minilab.experiments import store
from minilib.models.lstm_lm import LSTMLM, LSTMLMConfig
from minilib.models.transformer import IGNORE_INDEX, TransformerConfig, TransformerLM
from minilib.train.schedules import cosine

RESULT = store.register("parallelism", "config", "tokenizer", "device")   # results/parallelism-<profile>.json
MODELS = ("lstm", "transformer")


@dataclass(frozen=True)
class ParallelismConfig:
    n_embd: int                    # d: embedding size, LSTM state size and Transformer width, the same for both
    transformer_layers: int = 2    # blocks of 12·d² weights each (attention 4d², MLP 8d²)
    n_head: int = 4                # attention heads per block
    lstm_layers: int = 3           # layers of 8·d² weights each, so 3 LSTM layers ≈ 2 blocks in parameters
    # (a) timing
    lengths: tuple[int, ...] = (32, 64, 128, 256, 512)  # sequence lengths T
    tokens_per_step: int = 4096    # real tokens per forward + backward, cut into (tokens / T, T) at every T
    repeats: int = 5               # timed steps per (model, T), interleaved; the median is reported
    # (b) equal compute
    context: int = 128             # training window and evaluation block, tokens
    batch_size: int = 16           # windows per training step (2,048 tokens: more steps in a CPU budget)
    budget_s: float = 300.0        # training seconds per model (the clock stops while evaluating)
    slices: int = 6                # turns each model takes; each ends with a validation score
    train_words: int | None = 2_000_000  # words of the train split to draw windows from (None: all)
    valid_words: int | None = 20_000     # words of the valid split scored in bits per byte (None: all)
    lr_transformer: float = 2e-3   # peak AdamW LR, warm-up then cosine to 10 % (GPT-1 §4.1's shape)
    lr_lstm: float = 5e-3          # the LSTM LM's laptop LR (LSTMLMConfig.for_profile)
    warmup_frac: float = 0.05      # share of the time budget spent warming the LR up
    weight_decay: float = 0.01     # AdamW decay on 2-D weights, both models
    clip: float = 1.0              # gradient-norm clip, both models
    threads: int | None = None     # torch threads (None: torch's default, all cores: parallelism is the point)
    seed: int = 0


SIZES = {
    # smoke: every code path in seconds; numbers mean nothing
    "smoke": ParallelismConfig(n_embd=32, n_head=2, lengths=(16, 64), tokens_per_step=512, repeats=2,
                               context=32, batch_size=8, budget_s=2.0, slices=2, train_words=100_000,
                               valid_words=2_000, lr_transformer=3e-3, lr_lstm=1e-2),
    # laptop: d = 256 (the LSTM LM's laptop width), 5 min of training per model: ~17 min in all on a busy 2-core CPU
    # (9 timing repeats: with 5, single runs on the shared machine ranged 0.74-1.55x around medians near 1)
    "laptop": ParallelismConfig(n_embd=256, repeats=9),
    # full (one GPU): wider, longer, more tokens per step so the GPU is busy at every T
    "full": ParallelismConfig(n_embd=512, n_head=8, tokens_per_step=32_768, repeats=10, batch_size=64,
                              budget_s=600.0, slices=12, valid_words=None, train_words=None,
                              lr_transformer=1e-3, lr_lstm=2e-3),
}


# ----------------------------------------------------------------------------- the two models

def build_models(config: ParallelismConfig, vocab_size: int, block_size: int | None = None) -> dict:
    """{"lstm": LSTMLM, "transformer": TransformerLM} of width config.n_embd, no dropout, tied embeddings."""
    block_size = block_size or max(max(config.lengths), config.context)
    transformer = TransformerLM(TransformerConfig(
        vocab_size=vocab_size, block_size=block_size, n_layer=config.transformer_layers, n_head=config.n_head,
        n_embd=config.n_embd, dropout=0.0))
    lstm = LSTMLM(LSTMLMConfig(vocab_size=vocab_size, emb_dim=config.n_embd, hidden=config.n_embd,
                               n_layers=config.lstm_layers, dropout=0.0))
    return {"lstm": lstm, "transformer": transformer}


def param_counts(models: dict) -> dict:
    """Every parameter counted once (a tied matrix once), and the same without the token embedding."""
    out = {}
    for name, m in models.items():
        total = sum(p.numel() for p in m.parameters())
        emb = (m.embed if name == "lstm" else m.tok_emb).weight.numel()
        out[name] = {"total": total, "without_token_embedding": total - emb}
    out["ratio_total"] = out["lstm"]["total"] / out["transformer"]["total"]
    return out


def logits_of(model, x: torch.Tensor) -> torch.Tensor:
    """(B, T, V) next-token logits, each block read from a fresh start (no state carried in or out)."""
    if isinstance(model, TransformerLM):
        return model(x)[0]
    return model.run(x, None)[0]


# ----------------------------------------------------------------------------- text as BPE ids

def encode_stream(tokenizer, texts) -> tuple[np.ndarray, int]:
    """(ids, n_bytes): <eos> doc1 <eos> doc2 <eos> ... as one int64 array, and the UTF-8 bytes of the texts.

    Predicting every id after the first (each document's tokens and the <eos> that ends it) encodes
    exactly the texts and where each one ends."""
    eos = tokenizer.eos_id
    if eos is None:
        raise ValueError(f"{tokenizer!r} has no end-of-text token to separate documents; use the byte-level BPE")
    ids, n_bytes = [eos], 0
    for text in texts:
        ids.extend(tokenizer.encode(text))
        ids.append(eos)
        n_bytes += len(text.encode("utf-8"))
    return np.asarray(ids, dtype=np.int64), n_bytes


def eval_blocks(ids: np.ndarray, block: int, pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, y), each (N, block): every id after the first is a target exactly once. The last block is
    padded: x with `pad_id` (read after every real position, so a left-to-right model never sees it),
    y with IGNORE_INDEX."""
    n = len(ids) - 1
    rows = -(-n // block)
    x = torch.full((rows * block,), pad_id, dtype=torch.long)
    y = torch.full((rows * block,), IGNORE_INDEX, dtype=torch.long)
    x[:n] = torch.as_tensor(ids[:-1])
    y[:n] = torch.as_tensor(ids[1:])
    return x.view(rows, block), y.view(rows, block)


def bits_per_byte(nats: float, n_bytes: int) -> float:
    """Total nats of a text / ln 2 / its UTF-8 bytes: the bits a model needs per byte of raw text."""
    if n_bytes <= 0:
        raise ValueError("bits per byte needs a text of at least one byte")
    return nats / math.log(2) / n_bytes


@torch.no_grad()
def total_nats(model, x: torch.Tensor, y: torch.Tensor, batch_size: int = 32) -> tuple[float, int]:
    """(summed cross-entropy in nats, number of targets) of `model` over the blocks (x, y)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    nats, count = 0.0, 0
    for i in range(0, len(x), batch_size):
        xb, yb = x[i:i + batch_size].to(device), y[i:i + batch_size].to(device)
        logits = logits_of(model, xb)
        nats += F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), yb.reshape(-1),
                                ignore_index=IGNORE_INDEX, reduction="sum").item()
        count += int((yb != IGNORE_INDEX).sum())
    model.train(was_training)
    return nats, count


def corpus_ids(tokenizer, config: ParallelismConfig) -> dict:
    """BPE ids of the train split (first config.train_words words) and of the valid split (first valid_words)."""
    from minilib import data

    train_ids, _ = encode_stream(tokenizer, [d.text for d in data.pretraining_corpus("train", max_words=config.train_words)])
    valid_ids, valid_bytes = encode_stream(tokenizer, [d.text for d in data.pretraining_corpus("valid", max_words=config.valid_words)])
    return {"train": train_ids, "valid": valid_ids, "valid_bytes": valid_bytes}


# ----------------------------------------------------------------------------- (a) time per token

def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_step(model, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process over all its threads) for one forward + backward of
    `model` on (x, y), gradients zeroed before. CPU / wall is how many cores the step kept busy."""
    device = x.device
    model.zero_grad(set_to_none=True)
    _sync(device)
    t, c = time.perf_counter(), time.process_time()
    logits = logits_of(model, x)
    F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1)).backward()
    _sync(device)
    return time.perf_counter() - t, time.process_time() - c


def time_per_token(models: dict, ids: np.ndarray, config: ParallelismConfig, device: torch.device,
                   log=print) -> dict:
    """Seconds per token of forward + backward for each model at each length (medians), and their ratio."""
    n = config.tokens_per_step
    if len(ids) < n + 1:
        raise ValueError(f"need {n + 1} token ids for the timing batch, have {len(ids)}; use more train text")
    for T in config.lengths:
        if n % T:
            raise ValueError(f"tokens_per_step={n} must be a multiple of every length (not of {T})")
    stream = torch.as_tensor(ids[:n + 1])
    batches = {T: (stream[:n].view(n // T, T).to(device), stream[1:].view(n // T, T).to(device))
               for T in config.lengths}
    for m in models.values():
        m.to(device).train()
    for T, (x, y) in batches.items():               # warm-up: allocator, kernel choice, first-touch pages
        for m in models.values():
            time_step(m, x, y)
    times = {(name, T): [] for name in models for T in config.lengths}
    cpu = {(name, T): [] for name in models for T in config.lengths}
    load = [os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")]
    for r in range(config.repeats):
        order = list(models) if r % 2 == 0 else list(models)[::-1]    # neither model always goes first
        for T, (x, y) in batches.items():
            for name in order:
                wall, cpu_s = time_step(models[name], x, y)
                times[name, T].append(wall)
                cpu[name, T].append(cpu_s)
        load.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"))
        log(f"timing repeat {r + 1}/{config.repeats}: " + " ".join(
            f"T={T} {times['lstm', T][-1] / times['transformer', T][-1]:.2f}x" for T in config.lengths))
    rows = []
    for T in config.lengths:
        med = {name: statistics.median(times[name, T]) for name in models}
        rows.append({"length": T, "batch": n // T,
                     "lstm_us_per_token": 1e6 * med["lstm"] / n,
                     "transformer_us_per_token": 1e6 * med["transformer"] / n,
                     "ratio": med["lstm"] / med["transformer"],
                     # cores kept busy: CPU seconds / wall seconds (median over repetitions)
                     "lstm_cores_busy": statistics.median(c / w for c, w in zip(cpu["lstm", T], times["lstm", T])),
                     "transformer_cores_busy": statistics.median(
                         c / w for c, w in zip(cpu["transformer", T], times["transformer", T])),
                     "lstm_sequential_steps": T * config.lstm_layers,
                     "transformer_sequential_steps": config.transformer_layers,
                     "runs_s": {name: times[name, T] for name in models},
                     "cpu_runs_s": {name: cpu[name, T] for name in models}})
    return {"rows": rows, "tokens_per_step": n, "repeats": config.repeats,
            "load_average_1min": {"min": min(load), "max": max(load), "samples": load}}


# ----------------------------------------------------------------------------- (b) equal compute

def train_equal_time(models: dict, ids: dict, config: ParallelismConfig, device: torch.device, log=print) -> dict:
    """Train each model for config.budget_s seconds on the same windows, in turns; score bits per byte."""
    train = torch.as_tensor(ids["train"])
    n_windows = len(train) - config.context - 1
    if n_windows < config.batch_size:
        raise ValueError(f"the train text ({len(train)} tokens) is too short for windows of {config.context}")
    vx, vy = eval_blocks(ids["valid"], config.context)
    lrs = {"lstm": config.lr_lstm, "transformer": config.lr_transformer}
    state = {}
    for name, m in models.items():
        m.to(device).train()
        params = [p for p in m.parameters() if p.requires_grad]
        groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": config.weight_decay},
                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
        state[name] = {"opt": torch.optim.AdamW(groups, lr=lrs[name], betas=(0.9, 0.95)),
                       "rng": torch.Generator().manual_seed(config.seed),   # the same windows, in the same order
                       "clock": 0.0, "cpu": 0.0, "steps": 0, "tokens": 0, "curve": []}

    def score(name):
        nats, count = total_nats(models[name], vx, vy)
        s = state[name]
        s["curve"].append({"seconds": round(s["clock"], 2), "cpu_seconds": round(s["cpu"], 2),
                           "steps": s["steps"], "tokens": s["tokens"],
                           "valid_bpb": bits_per_byte(nats, ids["valid_bytes"]), "valid_nats_per_token": nats / count})

    def step(name):
        s, m = state[name], models[name]
        start = torch.randint(0, n_windows, (config.batch_size,), generator=s["rng"])
        rows = start[:, None] + torch.arange(config.context + 1)
        batch = train[rows].to(device)                                # (B, context + 1)
        frac = min(s["clock"] / config.budget_s, 1.0)
        mult = cosine(int(1000 * frac), 1000, warmup=max(1, int(1000 * config.warmup_frac)), final=0.1)
        for g in s["opt"].param_groups:
            g["lr"] = lrs[name] * mult
        _sync(device)
        t, c = time.perf_counter(), time.process_time()
        logits = logits_of(m, batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
        s["opt"].zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), config.clip)
        s["opt"].step()
        _sync(device)
        s["clock"] += time.perf_counter() - t
        s["cpu"] += time.process_time() - c
        s["steps"] += 1
        s["tokens"] += batch[:, :-1].numel()

    for name in models:
        score(name)
    for k in range(config.slices):
        order = list(models) if k % 2 == 0 else list(models)[::-1]
        for name in order:
            until = config.budget_s * (k + 1) / config.slices
            while state[name]["clock"] < until:
                step(name)
            score(name)
        log(f"slice {k + 1}/{config.slices}: " + " ".join(
            f"{name} {state[name]['curve'][-1]['valid_bpb']:.3f} bpb ({state[name]['steps']} steps)"
            for name in models))
    return {"curves": {name: state[name]["curve"] for name in models},
            "final_bpb": {name: state[name]["curve"][-1]["valid_bpb"] for name in models},
            "tokens_per_second": {name: state[name]["tokens"] / state[name]["clock"] for name in models},
            "valid": {"tokens": int(len(ids["valid"]) - 1), "bytes": ids["valid_bytes"],
                      "blocks": int(len(vx)), "block": config.context},
            "train_tokens_available": int(len(train)),
            "lr": lrs, "schedule": f"warm-up over {config.warmup_frac:.0%} of the budget, then cosine to 10 %"}


# ----------------------------------------------------------------------------- the experiment

def run_parallelism(profile: str | None = None, config: ParallelismConfig | None = None, tokenizer=None,
                    out: Path | None = None, log=print) -> dict:
    """(a) time per token by length and (b) bits per byte after equal training time; saved stamped to
    results/parallelism-<profile>.json (or `out`). Returns the saved dict, with its "path"."""
    from minilib.data.tokenizer import pretrained_tokenizer

    profile = profile or runtime.profile()
    config = config or SIZES[profile]
    if config.threads:
        torch.set_num_threads(config.threads)
    device = runtime.device()
    t0 = time.perf_counter()
    tokenizer = tokenizer or pretrained_tokenizer("bpe", profile)
    ids = corpus_ids(tokenizer, config)
    log(f"BPE ({tokenizer.vocab_size:,} tokens): train {len(ids['train']):,} ids, "
        f"valid {len(ids['valid']):,} ids = {ids['valid_bytes']:,} bytes; device {device}, "
        f"{torch.get_num_threads()} threads")

    runtime.seed_everything(config.seed)
    models = build_models(config, tokenizer.vocab_size)
    counts = param_counts(models)
    log(f"parameters: LSTM {counts['lstm']['total']:,}, Transformer {counts['transformer']['total']:,} "
        f"(ratio {counts['ratio_total']:.3f})")
    t1 = time.perf_counter()
    timing = time_per_token(models, ids["train"], config, device, log)
    t2 = time.perf_counter()

    runtime.seed_everything(config.seed)
    models = build_models(config, tokenizer.vocab_size)          # fresh weights for the race
    equal = train_equal_time(models, ids, config, device, log)
    t3 = time.perf_counter()

    result = {
        "experiment": "parallelism", "config": asdict(config), "params": counts,
        "models": {"lstm": f"LSTMLM: {config.lstm_layers} layers, emb = hidden = {config.n_embd}, tied",
                   "transformer": f"TransformerLM: {config.transformer_layers} pre-LN blocks, d = {config.n_embd}, "
                                  f"{config.n_head} heads, learned positions, tied"},
        "tokenizer": {"kind": tokenizer.kind, "vocab_size": tokenizer.vocab_size,
                      "read_by": "both models (the same byte-level BPE ids)",
                      "sha256": hashlib.sha256(tokenizer.hf.to_str().encode()).hexdigest()
                      if hasattr(tokenizer, "hf") else None},
        "device": str(device), "threads": torch.get_num_threads(),
        "timing": timing, "equal_compute": equal,
        "summary": summary(timing, equal),
        "seconds": {"data": round(t1 - t0, 1), "timing": round(t2 - t1, 1), "equal_compute": round(t3 - t2, 1),
                    "total": round(t3 - t0, 1)},
        "provenance": provenance.stamp(seed=config.seed, threads=torch.get_num_threads()),
    }
    result = dict(store.save(RESULT, profile, result, at=out))
    result["path"] = str(out or store.path(RESULT, profile))
    return result


def summary(timing: dict, equal: dict) -> dict:
    out = {f"ratio_{row['length']}": row["ratio"] for row in timing["rows"]}
    out |= {f"bpb_{name}": bpb for name, bpb in equal["final_bpb"].items()}
    return out


def summary_line(result: dict, name: str = "parallelism") -> str:
    return f"{name}: " + " ".join(f"{k}={v:.3f}" for k, v in result["summary"].items())


def timing_table(result: dict) -> str:
    """The time-per-token table as markdown."""
    lines = ["| T | batch | LSTM µs/token | Transformer µs/token | LSTM / Transformer | cores busy (LSTM, Transformer) |",
             "|---|---|---|---|---|---|"]
    for r in result["timing"]["rows"]:
        busy = (f"{r['lstm_cores_busy']:.2f}, {r['transformer_cores_busy']:.2f}" if "lstm_cores_busy" in r else "–")
        lines.append(f"| {r['length']} | {r['batch']} | {r['lstm_us_per_token']:.1f} | "
                     f"{r['transformer_us_per_token']:.1f} | {r['ratio']:.2f} | {busy} |")
    return "\n".join(lines)


def load_result(profile: str, variant: str | None = None) -> dict:
    """The cached results/parallelism-<profile>[-<variant>].json (a GPU's run: variant "cuda"); a clear error
    naming the command if it is missing."""
    result = store.load(RESULT, profile, variant=variant)
    if result is None:
        raise FileNotFoundError(f"no cached result at {store.path(RESULT, profile, variant)}: run "
                                f"`python -m minilib experiment parallelism --profile {profile}`")
    return result


# ----------------------------------------------------------------------------- CLI

def cli_run(args, name: str) -> int:
    import sys

    profile = args.profile or runtime.profile()
    config = SIZES[profile]
    try:
        if args.budget is not None:
            if args.budget <= 0:
                raise ValueError(f"--budget must be a positive number of seconds, not {args.budget}")
            config = replace(config, budget_s=args.budget)
        if args.lengths:
            lengths = tuple(int(s) for s in args.lengths.split(","))
            if any(T < 2 or config.tokens_per_step % T for T in lengths):
                raise ValueError(f"--lengths must divide tokens_per_step={config.tokens_per_step}, "
                                 f"e.g. 32,64,128,256,512")
            config = replace(config, lengths=lengths)
        if args.threads is not None:
            config = replace(config, threads=args.threads)
        result = run_parallelism(profile, config, out=args.out)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(timing_table(result))
    print(f"wrote {result['path']} in {result['seconds']['total']:.0f} s")
    print(summary_line(result, name))
    return 0
