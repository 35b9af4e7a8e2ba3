"""Chapter 08's scaling laws, measured here: held-out loss against model size, tokens and compute.

Kaplan et al. (2020, "Scaling Laws for Neural Language Models") trained Transformer LMs over seven
orders of magnitude and found the test loss a power law in each resource when the others do not
bind (§1.2, eqs. 1.1-1.3): L(N) ∝ N^-0.076 in non-embedding parameters, L(D) ∝ D^-0.095 in tokens,
and L(C_min) ∝ C^-0.050 along the compute-efficient frontier, with compute C ≈ 6·N·D (§2.1).

This runs two sweeps of laptop-shaped GPT decoders (pre-LN, context 128, the shipped BPE):

* size:   ≥ 5 shapes over ≥ 1.5 orders of magnitude of non-embedding parameters, each trained on
          the same fixed token budget;
* tokens: one shape trained on ≥ 5 budgets over ≥ 1.5 orders of magnitude.

Every run has the same recipe (AdamW, linear warm-up over 5 % of its steps then cosine decay to 0 at
one peak LR, batches of random windows, each token of the stream seen about once, no dropout) and is
scored in the same unit on the same text: nats per BPE token on the first `valid_tokens` tokens of
the valid split. Each run is cached as stamped JSON in results/scaling/ and reused while its config
matches, so an interrupted sweep resumes; the fits go to results/scaling-<profile>.json.

The fits (`fit_power_law`): the offset form  L = a·x^-α + c  (c, the loss no amount of x removes, is
found by a 1-D search; a and α by least squares on log(L - c)) and the simple form  L = a·x^-α
(Kaplan's, c = 0). R² is computed on L itself for both. Small-scale truth: our size sweep trains
every model on the same 1.6M tokens, so the larger ones are short of data and the curve bends
towards a floor; that floor is what c absorbs, and why the offset form's α is the one to compare
with Hoffmann et al. (2022)'s, which has the same form, and the simple form's with Kaplan's.

    python -m minilib experiment scaling --threads 1     # results/scaling-<profile>.json
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from minilib import runtime
from minilab import provenance
from minilab.experiments import store
from minilib.runtime import UsageError

RESULT = store.register("scaling", "profile", "config")   # the fits: results/scaling-<profile>.json

# Kaplan et al. 2020 §1.2, eqs. (1.1)-(1.3): L(N) = (N_c/N)^α_N, α_N ≈ 0.076, N_c ≈ 8.8e13 non-embedding
# parameters (models trained to convergence); L(D) = (D_c/D)^α_D, α_D ≈ 0.095, D_c ≈ 5.4e13 tokens
# (large models, early stopping); L(C_min) = (C_c/C_min)^α_C, α_C ≈ 0.050 (compute-efficient frontier).
KAPLAN = {"alpha_params": 0.076, "alpha_tokens": 0.095, "alpha_compute": 0.050}
# Hoffmann et al. 2022 ("Chinchilla") §3.3, the offset form L = E + A/N^α + B/D^β: α = 0.34, β = 0.28, E = 1.69
CHINCHILLA = {"alpha_params": 0.34, "alpha_tokens": 0.28}


@dataclass(frozen=True)
class ScalingConfig:
    shapes: tuple[tuple[int, int], ...]   # (n_layer, n_embd) of the size sweep
    fixed_tokens: int                     # the size sweep's token budget (one for every shape)
    token_shape: tuple[int, int]          # the token sweep's model
    token_budgets: tuple[int, ...]        # the token sweep's budgets
    batch_size: int = 8                   # windows per step
    block_size: int = 128                 # context; tokens per step = batch_size × block_size
    head_dim: int = 32                    # n_head = n_embd // head_dim
    lr: float = 2e-3                      # peak LR for every run (Kaplan §2.2 also used one warm-up + cosine-to-0 schedule)
    warmup: float = 0.05                  # fraction of each run's steps of linear warm-up
    weight_decay: float = 0.01            # GPT-1 §4.1
    clip: float = 1.0                     # global gradient-norm clip
    train_words: int | None = 3_000_000   # the first words of the train split: ≥ the largest budget in tokens
    valid_tokens: int = 50_000            # held-out BPE tokens every run is scored on
    seed: int = 0


# laptop: 1 CPU thread, measured under load (fwd + bwd + AdamW, batch 8 × 128): L1-d32 0.16 ms/token,
# L1-d64 0.21, L2-d64 0.22, L2-d96 0.34, L2-d128 0.51, L4-d128 0.66 (the 8,000-word head dominates the
# small ones). Size sweep: 6 shapes, 12.8k-793k parameters (1.8 orders), 1.64M tokens each ≈ 57 min;
# token sweep: L2-d64 on 102k-3.3M tokens (1.5 orders), its 1.64M run shared, ≈ 17 min more: ≈ 75 min in all.
_LAPTOP_STEP = 8 * 128
SIZES = {
    "smoke": ScalingConfig(shapes=((1, 16), (1, 32), (2, 32), (2, 48), (3, 64)), fixed_tokens=32 * 128,
                           token_shape=(2, 32), token_budgets=tuple(4 * 2 ** k * 128 for k in range(6)),
                           batch_size=4, block_size=32, head_dim=16, train_words=50_000, valid_tokens=2_000),
    "laptop": ScalingConfig(shapes=((1, 32), (1, 64), (2, 64), (2, 96), (2, 128), (4, 128)),
                            fixed_tokens=1600 * _LAPTOP_STEP, token_shape=(2, 64),
                            token_budgets=tuple(100 * 2 ** k * _LAPTOP_STEP for k in range(6))),
    # one GPU, not run here: 0.4M-25M parameters; the train split (~9.2M tokens) caps the budgets at one pass
    "full": ScalingConfig(shapes=((2, 128), (4, 192), (4, 256), (6, 384), (8, 512)), fixed_tokens=1024 * 32 * 256,
                          token_shape=(4, 256), token_budgets=tuple(32 * 2 ** k * 32 * 256 for k in range(6)),
                          batch_size=32, block_size=256, head_dim=64, lr=6e-4, train_words=None,
                          valid_tokens=200_000),
}


# ----------------------------------------------------------------------------- counting N and C

def non_embedding_params(model) -> int:
    """Kaplan's N (§2.1): every parameter but the token and position embeddings and the output layer over the
    vocabulary (tied to the token embedding here), so N ≈ 12·n_layer·d_model² plus the biases and LayerNorms.
    One definition for the book: experiments/compute.non_embedding_params."""
    from minilab.experiments.compute import non_embedding_params as kaplan_n

    return kaplan_n(model, model.cfg.vocab_size)


def training_flops(model, tokens: int) -> int:
    """C ≈ 6·N·D (Kaplan §2.1): 2N FLOPs per token forward and 4N backward, N non-embedding."""
    return 6 * non_embedding_params(model) * int(tokens)


# ----------------------------------------------------------------------------- fitting

def r_squared(y, fitted) -> float:
    """1 - SS_res / SS_tot, on the values themselves (not their logs)."""
    y, fitted = np.asarray(y, dtype=np.float64), np.asarray(fitted, dtype=np.float64)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    if ss_tot == 0:
        raise ValueError("every y is the same: R² is undefined")
    return 1.0 - float(((y - fitted) ** 2).sum()) / ss_tot


def fit_power_law(x, y, offset: bool = True) -> dict:
    """Fit L = a·x^-α + c (offset=True) or L = a·x^-α (offset=False) to the points (x, y).

    For a given c, log(y - c) = log a - α·log x is a straight line: least squares gives a and α.
    c is the value in [0, min y) whose line has the smallest squared error on y itself (a grid, then
    a bounded 1-D search around its best point). Returns a plain dict: form, a, alpha, c, r2, points."""
    from scipy.optimize import minimize_scalar

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    need = 3 if offset else 2
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D and the same length, got shapes {x.shape} and {y.shape}")
    if len(np.unique(x)) < need:
        raise ValueError(f"a power law{' with an offset' if offset else ''} needs at least {need} distinct x "
                         f"values, got {len(np.unique(x))}")
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("a power law needs positive x and y")
    log_x = np.log(x)

    def line(c):
        slope, intercept = np.polyfit(log_x, np.log(y - c), 1)
        return math.exp(float(intercept)), -float(slope)

    def sse(c):
        a, alpha = line(c)
        return float(((a * x ** -alpha + c - y) ** 2).sum())

    c = 0.0
    if offset:
        grid = np.linspace(0.0, y.min(), 400, endpoint=False)
        i = int(np.argmin([sse(g) for g in grid]))
        lo, hi = grid[max(i - 1, 0)], grid[i + 1] if i + 1 < len(grid) else y.min() * (1 - 1e-9)
        best = minimize_scalar(sse, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10 * y.min()}).x
        c = float(best) if sse(best) < sse(grid[i]) else float(grid[i])
    a, alpha = line(c)
    return {"form": "a*x^-alpha + c" if offset else "a*x^-alpha", "a": a, "alpha": alpha, "c": c,
            "r2": r_squared(y, a * x ** -alpha + c), "points": int(len(x))}


def predict(fit: dict, x):
    """The fitted loss at x (a number or an array)."""
    return fit["a"] * np.asarray(x, dtype=np.float64) ** -fit["alpha"] + fit["c"]


# ----------------------------------------------------------------------------- one run

def shape_name(shape) -> str:
    return f"L{shape[0]}-d{shape[1]}"


def check(config: ScalingConfig) -> None:
    """Raise UsageError unless `config` can be run and fitted."""
    step = config.batch_size * config.block_size
    for n_layer, n_embd in {*config.shapes, config.token_shape}:
        if n_layer < 1 or n_embd < config.head_dim or n_embd % config.head_dim:
            raise UsageError(f"shape {n_layer}x{n_embd}: use ≥ 1 layer and a width that is a multiple of the "
                             f"head size {config.head_dim} (e.g. {config.head_dim}, {2 * config.head_dim}, …)")
    for budget in (config.fixed_tokens, *config.token_budgets):
        if budget < step:
            raise UsageError(f"a budget of {budget:,} tokens is less than one batch "
                             f"({config.batch_size} × {config.block_size} = {step:,} tokens): use more")
    if len(set(config.shapes)) < 3 or len({b // step for b in config.token_budgets}) < 3:
        raise UsageError(f"a fit with an offset needs ≥ 3 points per sweep: got {len(set(config.shapes))} shapes "
                         f"and {len(set(config.token_budgets))} token budgets (the experiment uses ≥ 5 of each)")


class Corpus:
    """The tokenizer and the two token streams, loaded the first time a run needs them (never when
    every run is cached)."""

    def __init__(self, profile: str, config: ScalingConfig):
        self.profile, self.config, self._loaded = profile, config, None

    def load(self):
        if self._loaded is None:
            from minilib import data
            from minilib.data.tokenizer import pretrained_tokenizer
            from minilib.recipes.gpt import encode_documents

            tok = pretrained_tokenizer("bpe", self.profile)
            train = encode_documents(tok, data.pretraining_corpus("train", max_words=self.config.train_words))
            # every word is ≥ 1 BPE token, so the first valid_tokens words hold the first valid_tokens tokens
            valid_docs = data.pretraining_corpus("valid", max_words=self.config.valid_tokens)
            valid = encode_documents(tok, valid_docs, max_tokens=self.config.valid_tokens)
            self._loaded = tok.vocab_size, train, valid
        return self._loaded


def train_point(shape, tokens: int, config: ScalingConfig, corpus: Corpus) -> dict:
    """Train one GPT of `shape` on `tokens` tokens with the sweep's recipe; score the held-out stream."""
    from minilib.data.batching import RandomWindows
    from minilib.eval.perplexity import windowed_nats
    from minilib.models.gpt import GPT, gpt_config
    from minilib.recipes.gpt import NextTokenLoss
    from minilib.train import Learner
    from minilib.train.callbacks import TokenClock

    vocab_size, train_ids, valid_ids = corpus.load()
    n_layer, n_embd = shape
    runtime.seed_everything(config.seed)
    # pre-LN for every size (models/gpt.py: post-LN sat at the unigram loss at this scale); no dropout:
    # each token is seen about once, so there is nothing to overfit
    model = GPT(gpt_config(vocab_size, "laptop", n_layer=n_layer, n_embd=n_embd, n_head=n_embd // config.head_dim,
                           block_size=config.block_size, norm="pre", dropout=0.0))
    steps = tokens // (config.batch_size * config.block_size)
    batches = RandomWindows(train_ids, config.batch_size, config.block_size, steps, seed=config.seed)
    clock = TokenClock()
    learner = Learner(NextTokenLoss(model), batches, None, weight_decay=config.weight_decay, clip=config.clip,
                      progress=False, callbacks=[clock])
    start = time.time()
    learner.fit(1, lr=config.lr, schedule="cosine", warmup=config.warmup)
    seen = learner.step * config.batch_size * config.block_size
    nats, n = windowed_nats(model, valid_ids, config.block_size)
    return {"shape": shape_name(shape), "n_layer": n_layer, "n_embd": n_embd, "n_head": model.cfg.n_head,
            "params": non_embedding_params(model), "params_with_embeddings": model.num_params(non_embedding=False),
            "tokens": seen, "steps": learner.step, "flops": training_flops(model, seen),
            "flops_with_head": model.flops_per_token() * seen,      # what the CPU did: + the tied head, attention
            "valid_nats_per_token": nats / n, "valid_tokens": n,
            "train_loss_end": float(np.mean([r["loss"] for r in learner.history.steps[-20:]])),
            "train_stream_tokens": int(len(train_ids)), "passes": seen / len(train_ids),
            "tokens_per_s": round(clock.tokens_per_s, 1), "seconds": round(time.time() - start, 1)}


def point_key(shape, tokens: int, config: ScalingConfig, profile: str) -> dict:
    """What defines a run: a cached run is reused only when this matches."""
    recipe = {k: v for k, v in asdict(config).items() if k not in ("shapes", "fixed_tokens", "token_shape",
                                                                   "token_budgets")}
    return {"shape": list(shape), "tokens": int(tokens), "tokenizer": f"bpe ({profile})", **recipe}


def run_point(shape, tokens: int, config: ScalingConfig, profile: str, corpus: Corpus, results_dir: Path,
              log=print) -> dict:
    """One run, from results_dir/scaling/ when a run with the same key is there, else trained and saved."""
    where = dict(root=Path(results_dir) / "scaling")        # results/scaling/<shape>-t<tokens>-<profile>.json
    name, key = f"{shape_name(shape)}-t{tokens}", {"config": point_key(shape, tokens, config, profile)}
    cached = store.load(name, profile, key, **where)
    if cached is not None:
        return cached["run"]
    if log:
        log(f"training {shape_name(shape)} on {tokens:,} tokens …")
    row = train_point(shape, tokens, config, corpus)
    store.save(name, profile, {"experiment": "scaling", "profile": profile, **key, "run": row,
                               "provenance": provenance.stamp(seed=config.seed)}, key, **where)
    if log:
        log(f"{row['shape']}: N={row['params']:,}, D={row['tokens']:,}, C={row['flops']:.2e} FLOPs: held-out "
            f"{row['valid_nats_per_token']:.3f} nats/token ({row['seconds']:.0f} s)")
    return row


# ----------------------------------------------------------------------------- the experiment

def summarize(runs: dict, config: ScalingConfig, profile: str) -> dict:
    """The fits of both sweeps (`runs`: {"params": [...], "tokens": [...]}), as plain dicts."""
    fits = {}
    for sweep, x_key in (("params", "params"), ("tokens", "tokens")):
        rows = sorted(runs[sweep], key=lambda r: r[x_key])
        x, y = [r[x_key] for r in rows], [r["valid_nats_per_token"] for r in rows]
        fits[sweep] = {"x": x_key, "offset": fit_power_law(x, y), "pure": fit_power_law(x, y, offset=False),
                       "orders_of_magnitude": math.log10(max(x) / min(x)),
                       "kaplan_alpha": KAPLAN[f"alpha_{sweep}"], "chinchilla_alpha": CHINCHILLA[f"alpha_{sweep}"]}
    fits["params"]["tokens"] = runs["params"][0]["tokens"]            # the fixed budget of the size sweep
    fits["tokens"]["params"] = runs["tokens"][0]["params"]            # the fixed model of the token sweep
    fits["tokens"]["shape"] = runs["tokens"][0]["shape"]
    return {"experiment": "scaling", "profile": profile, "config": asdict(config),
            "unit": "nats per BPE token on the first valid_tokens tokens of the valid split",
            "schedule": f"AdamW, peak LR {config.lr:g}, linear warm-up over {config.warmup:.0%} of the steps, "
                        f"cosine decay to 0",
            "runs": runs, "fits": fits, "kaplan": KAPLAN, "chinchilla": CHINCHILLA}


def run(profile: str | None = None, config: ScalingConfig | None = None, results_dir: str | Path | None = None,
        write: bool = True, log=print) -> dict:
    """Both sweeps (each run cached) and their fits; written to results_dir/scaling-<profile>.json when they
    differ from the file's (timings and stamp aside). Returns what the file holds."""
    prof = profile or runtime.profile()
    default = runtime.pick(SIZES, prof)
    config = config or default
    check(config)
    results_dir = Path(results_dir) if results_dir is not None else store.RESULTS
    corpus = Corpus(prof, config)
    t0 = time.time()
    runs = {"params": [run_point(s, config.fixed_tokens, config, prof, corpus, results_dir, log)
                       for s in config.shapes],
            "tokens": [run_point(config.token_shape, b, config, prof, corpus, results_dir, log)
                       for b in config.token_budgets]}
    result = summarize(runs, config, prof)
    result["seconds"] = round(time.time() - t0, 1)
    result["provenance"] = provenance.stamp(seed=config.seed)
    if write:   # every run read from the cache gives the same summary: the file (and its stamp) stays as it is
        result = store.save(RESULT, prof, result, variant=None if config == default else "custom", root=results_dir)
    return result


def load(profile: str | None = None, results_dir: str | Path | None = None) -> dict:
    """The cached summary of `profile` (default: the current one)."""
    prof = profile or runtime.profile()
    result = store.load(RESULT, prof, root=results_dir)
    if result is None:
        raise UsageError(f"no {store.path(RESULT, prof, root=results_dir)}: run "
                         f"`python -m minilib experiment scaling --profile {prof}` first")
    return result


def at_compute(summary: dict, flops: float) -> dict:
    """What each fit predicts at a compute budget C = 6·N·D: the size sweep's (a model of N = C / 6D at
    its fixed D) and the token sweep's (its fixed model trained on D = C / 6N), and the measured run
    closest in compute. `inside`: whether N or D lies within the measured range (else extrapolated)."""
    out = {"flops": float(flops)}
    for sweep, fixed_key, x_key in (("params", "tokens", "params"), ("tokens", "params", "tokens")):
        fit = summary["fits"][sweep]
        x = flops / (6 * fit[fixed_key])
        measured = [r[x_key] for r in summary["runs"][sweep]]
        out[sweep] = {x_key: x, fixed_key: fit[fixed_key], "loss": float(predict(fit["offset"], x)),
                      "inside": min(measured) <= x <= max(measured)}
    runs = unique_runs(summary)
    out["nearest"] = min(runs, key=lambda r: abs(math.log(r["flops"] / flops)))
    return out


def unique_runs(summary: dict) -> list[dict]:
    """Every run once (the shared one appears in both sweeps), by compute."""
    seen = {(r["shape"], r["tokens"]): r for sweep in ("params", "tokens") for r in summary["runs"][sweep]}
    return sorted(seen.values(), key=lambda r: r["flops"])


# ----------------------------------------------------------------------------- plots

SWEEP_STYLE = {"params": dict(color="tab:blue", marker="o"), "tokens": dict(color="tab:orange", marker="s")}


def _log_axes(ax, xlabel: str):
    from matplotlib.ticker import ScalarFormatter

    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel="held-out loss (nats/token)")
    for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
        axis(ScalarFormatter())
    ax.grid(alpha=0.3, which="both")


def plot_sweep(summary: dict, sweep: str, ax=None):
    """One sweep: measured loss vs N (sweep="params") or D ("tokens"), both fits, and Kaplan's slope
    drawn through the leftmost point for comparison."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 3.6))
    fit = summary["fits"][sweep]
    rows = sorted(summary["runs"][sweep], key=lambda r: r[fit["x"]])
    x = np.array([r[fit["x"]] for r in rows], dtype=np.float64)
    y = np.array([r["valid_nats_per_token"] for r in rows])
    xs = np.geomspace(x.min() / 1.5, x.max() * 1.5, 100)
    off, pure, k = fit["offset"], fit["pure"], fit["kaplan_alpha"]
    ax.scatter(x, y, zorder=3, label="measured", **SWEEP_STYLE[sweep])
    ax.plot(xs, predict(off, xs), color=SWEEP_STYLE[sweep]["color"],
            label=f"{off['a']:.3g}·x^-{off['alpha']:.3f} + {off['c']:.2f} (R² {off['r2']:.3f})")
    ax.plot(xs, predict(pure, xs), color="0.4", ls="--", lw=1,
            label=f"{pure['a']:.3g}·x^-{pure['alpha']:.3f} (R² {pure['r2']:.3f})")
    ax.plot(xs, y[0] * (xs / x[0]) ** -k, color="k", ls=":", lw=1,
            label=f"Kaplan et al. 2020: α = {k}")
    if sweep == "params":
        _log_axes(ax, "non-embedding parameters N (log)")
        ax.set_title(f"size sweep, {fit['tokens']:,} tokens each", fontsize=9)
    else:
        _log_axes(ax, "training tokens D (log)")
        ax.set_title(f"token sweep, {fit['shape']} (N = {fit['params']:,})", fontsize=9)
    ax.legend(fontsize=7)
    return ax


def plot_compute(summary: dict, ax=None, flops: float | None = None):
    """Every run's loss vs its compute 6·N·D, each sweep's fit carried over to compute, Kaplan's
    frontier slope for comparison; with `flops`, the two fits' predictions there and the nearest run."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 3.6))
    runs = unique_runs(summary)
    c_all = np.array([r["flops"] for r in runs], dtype=np.float64)
    lo, hi = c_all.min() / 2, c_all.max() * 2
    if flops is not None:
        lo, hi = min(lo, flops / 1.5), max(hi, flops * 1.5)
    cs = np.geomspace(lo, hi, 120)
    labels = {"params": f"size sweep ({summary['fits']['params']['tokens']:,} tokens)",
              "tokens": f"token sweep ({summary['fits']['tokens']['shape']})"}
    for sweep, fixed_key in (("params", "tokens"), ("tokens", "params")):
        fit, style = summary["fits"][sweep], SWEEP_STYLE[sweep]
        ax.scatter([r["flops"] for r in summary["runs"][sweep]],
                   [r["valid_nats_per_token"] for r in summary["runs"][sweep]], zorder=3, label=labels[sweep], **style)
        ax.plot(cs, predict(fit["offset"], cs / (6 * fit[fixed_key])), color=style["color"], lw=1)
    first = runs[0]
    ax.plot(cs, first["valid_nats_per_token"] * (cs / first["flops"]) ** -KAPLAN["alpha_compute"], color="k",
            ls=":", lw=1, label=f"Kaplan et al. 2020 frontier: α_C = {KAPLAN['alpha_compute']}")
    if flops is not None:
        here = at_compute(summary, flops)
        ax.axvline(flops, color="0.3", ls="--", lw=0.8)
        for sweep in ("params", "tokens"):
            ax.scatter([flops], [here[sweep]["loss"]], marker="*", s=160, zorder=4, edgecolors="k",
                       color=SWEEP_STYLE[sweep]["color"])
        near = here["nearest"]
        ax.scatter([near["flops"]], [near["valid_nats_per_token"]], s=220, facecolors="none", edgecolors="k",
                   linewidths=1.5, zorder=5, label="nearest measured run")
    _log_axes(ax, "training compute C = 6·N·D (FLOPs, log)")
    ax.set_title("loss vs compute", fontsize=9)
    ax.legend(fontsize=7)
    return ax


def plot_scaling(summary: dict, axes=None):
    """The lesson's figure: loss vs parameters, vs tokens, vs compute (log x), fits drawn."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
    plot_sweep(summary, "params", axes[0])
    plot_sweep(summary, "tokens", axes[1])
    plot_compute(summary, axes[2])
    return axes


# ----------------------------------------------------------------------------- CLI

def summary_line(result: dict) -> str:
    p, t = result["fits"]["params"], result["fits"]["tokens"]
    return (f"scaling: alpha_params={p['offset']['alpha']:.3f} r2_params={p['offset']['r2']:.3f} "
            f"alpha_tokens={t['offset']['alpha']:.3f} r2_tokens={t['offset']['r2']:.3f} "
            f"pure_alpha_params={p['pure']['alpha']:.3f} pure_alpha_tokens={t['pure']['alpha']:.3f} "
            f"profile={result['profile']}")


def parse_shapes(text: str) -> tuple[tuple[int, int], ...]:
    """'1x32,2x64' → ((1, 32), (2, 64))."""
    shapes = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)x(\d+)\s*", part)
        if not m:
            raise UsageError(f"shape {part.strip()!r}: write LAYERSxWIDTH, e.g. --shapes 1x32,2x64,4x128")
        shapes.append((int(m[1]), int(m[2])))
    return tuple(shapes)


def parse_budgets(text: str) -> tuple[int, ...]:
    """'100k,1.6M,3276800' → (100000, 1600000, 3276800)."""
    budgets = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)([kKmM]?)\s*", part)
        if not m:
            raise UsageError(f"token budget {part.strip()!r}: write token counts, e.g. --budgets 200k,800k,3.2M")
        budgets.append(int(float(m[1]) * {"": 1, "k": 1e3, "m": 1e6}[m[2].lower()]))
    return tuple(budgets)


def cli_run(args, name: str) -> int:
    if args.threads is not None:
        if args.threads < 1:
            raise UsageError(f"--threads {args.threads}: use 1 or more")
        torch.set_num_threads(args.threads)
    prof = args.profile or runtime.profile()
    config = runtime.pick(SIZES, prof)
    if args.shapes:
        config = replace(config, shapes=parse_shapes(args.shapes))
    if args.budgets:
        config = replace(config, token_budgets=parse_budgets(args.budgets))
    print(summary_line(run(prof, config)))
    return 0
