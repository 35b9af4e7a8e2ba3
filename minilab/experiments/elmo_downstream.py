"""Chapter 03's downstream test: does adding ELMo to a task help when labels are few? (Peters et al. 2018 §3.3, §4)

The paper adds ELMo to six tasks' existing models and every one improves (Table 1; SST-5 sentiment
+3.3 accuracy). Here the task is Rotten Tomatoes sentiment (positive/negative sentences) and the model
is deliberately small, so the only difference between the arms is the word vectors:

    static        the mean of the sentence's SGNS vectors (trained on the biLM's own pretraining text)
    elmo          §3.2 eq. 1: a learned ScalarMix (softmax weights s_j and a scale γ) over the biLM's 3
                  layers, mean-pooled over the tokens; the biLM stays frozen (§3.3)
    static+elmo   §3.3 as the paper adds ELMo to a task: [x_k; ELMo_k], the static vectors concatenated
                  with the mixed ELMo vectors ("concatenate the ELMo vector with x_k")
    untrained,    the control: the same as elmo and static+elmo, but from the biLM's untrained twin (same
    static+untrained   architecture, random weights; models.elmo.untrained_like). Whatever ELMo gains over these
                  arms is what pretraining taught; whatever it gains over static alone but not over them is
                  only the extra dimensions
    head          the same for all: dropout, then one linear layer to the 2 classes (logistic regression),
                  Adam with the LR decaying linearly to 0, loss = cross-entropy + λ/2·‖W‖²

The protocol, identical for every arm and every point (the test split is only ever scored, never tuned on):
  - each feature dimension (per layer) is standardised with the mean/std of *all* train sentences' features,
    which needs no labels, so the statistics do not depend on the label count (stats from the labelled
    sample alone score the same; no standardisation costs every arm 1-4 points);
  - the L2 strength λ is chosen per point from `l2_grid` by stratified 3-fold cross-validation *inside the
    labelled sample* (ties go to the stronger λ), then the head is retrained on the whole sample. Higher-
    dimensional features (ELMo 256, static+ELMo 356 vs static 100) may want stronger L2 with few labels,
    so one fixed weight decay for all arms could have handicapped ELMo; choosing it per arm removes that
    objection. It did not change the picture: every mean is within 0.007 of a fixed AdamW weight decay of
    1e-2. ELMo's CV often picks the grid's strongest λ at <=1000 labels, but a converged (L-BFGS) logistic
    regression with λ up to 10 chosen the same way scored the same (ELMo alone 0.555 at 100 labels).
  - mean pooling only. [mean; max] pooling was tried for every arm and cost each of them 1-2 points at
    100-1000 labels; a fixed uniform mix of the 3 layers, or of layers 1-2, instead of the learned ScalarMix
    scored within noise of it (ELMo alone still 3-4 points below static), so the paper's learned mix stays.
What the laptop grid shows, and the variants tried on the way, are in docs/measurements.md.

Mean pooling commutes with the scalar mix (both are linear), so each sentence's 3 layers are pooled
once, cached in .cache/ keyed by the checkpoint's sha256, and a point trains in seconds. Each
(label count, seed) draws a stratified sample of the train split (nested as n grows) and is a point of
the grid runner (method pooled-<arm>), cached as results/elmo-downstream/<task>-pooled-<arm>-n<labels>-
s<seed>-<profile>.json with its provenance and the test accuracy after every epoch (the widget's curve).

    from minilab.experiments import elmo_downstream as ed
    row = ed.run_point("elmo", 100, seed=0, elmo_path="checkpoints/elmo-laptop.pt")
    rows = ed.run_grid(ed.SIZES["laptop"], "checkpoints/elmo-laptop.pt")
    ed.summarize(rows)      # mean ± std accuracy per (arm, labels)
"""
from __future__ import annotations

import functools
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from minilib import runtime, tasks
from minilab import provenance
from minilib.eval.classification import balanced_accuracy
from minilab.experiments import grid
from minilab.experiments.elmo_probes import SIZES as PROBE_SIZES, default_checkpoint, static_baseline
from minilab.experiments.grid import ALL
from minilib.models.pretrained import file_sha256
from minilib.runtime import UsageError
from minilib.train import checkpoint
from minilib.train.head import fit_head
from minilib.models.elmo import ScalarMix

FEATURE_CACHE = provenance.REPO_ROOT / ".cache" / "elmo-features"
ARMS = ("static", "elmo", "static+elmo", "untrained", "static+untrained")   # an arm: its feature kinds joined by "+"
KINDS = ("static", "elmo", "untrained")
ARM_COLORS = {"static": "tab:gray", "elmo": "tab:blue", "static+elmo": "tab:orange", "untrained": "tab:green",
              "static+untrained": "tab:olive"}


def arm_linestyle(arm: str) -> str:
    """Plots draw the ELMo arms solid, static vectors and the untrained controls dashed."""
    return "-" if "elmo" in arm else "--"


@dataclass(frozen=True)
class DownstreamConfig:
    label_counts: tuple = (100, 300, 1000, 3000, ALL)   # labelled training sentences per point
    seeds: tuple[int, ...] = (0, 1, 2)     # each seed: another sample and another init
    epochs: int = 20                       # passes over the labelled sample
    min_steps_per_epoch: int = 10          # 100 labels make ~3 batches: repeat them so an epoch moves the head
    batch_size: int = 32
    lr: float = 3e-3                       # Adam peak, decaying linearly to 0 (converges: at all labels the
                                           # static arm matches an L-BFGS logistic regression, 0.66)
    weight_decay: float = 0.0              # AdamW's decoupled decay (off: the L2 below regularises the head)
    l2_grid: tuple = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)   # L2 on the head weights (λ/2·‖W‖²), chosen per point
    cv_folds: int = 3                      # by stratified k-fold CV inside the labelled sample (one value: no CV)
    dropout: float = 0.2                   # on the pooled features (the paper: dropout on ELMo, §3.3)
    max_test: int | None = None            # cap the test sentences with a fixed stratified subset (smoke only)
    threads: int | None = 1                # torch threads: the biLM runs fastest on one on a busy 2-core CPU


SIZES = {
    "smoke": DownstreamConfig(label_counts=(50, 200), seeds=(0,), epochs=4, max_test=300, l2_grid=(1e-2, 1.0)),
    "laptop": DownstreamConfig(),
    "full": DownstreamConfig(threads=None),
}


# ----------------------------------------------------------------------------- features

def task_data(task, split: str) -> tuple[list[list[str]], list[int]]:
    """(token lists, labels) of a sentence task's `split`, tokenized as the biLM read its training text."""
    from minilib import data

    s = tasks.get(task).__getattribute__(split)
    return [data.tokenize(t) or ["."] for t in s.texts], list(s.labels)


def elmo_pooled(model, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> torch.Tensor:
    """(N, L, D): each sentence's biLM layers, mean-pooled over its tokens (frozen biLM, no grad)."""
    from minilib.eval.probe import layer_features

    out = []
    for start in range(0, len(sentences), 1024):      # keep at most ~1k sentences' token vectors in memory
        out += [f.mean(1) for f in layer_features(model, sentences[start:start + 1024], batch_size)]
    return torch.stack(out)


def static_pooled(vectors, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
    """(N, 1, dim): the mean of the known words' static vectors (zeros if none is known)."""
    out = np.zeros((len(sentences), 1, vectors.dim), dtype=np.float32)
    for i, s in enumerate(sentences):
        known = [vectors.index[w] for w in s if w in vectors]
        if known:
            out[i, 0] = vectors.vectors[known].mean(0)
    return torch.from_numpy(out)


def arm_features(arm: str, elmo_path, task, split: str, log=print) -> dict[str, torch.Tensor]:
    """{kind: (N, L, D) pooled features} for each feature kind of `arm` ("static+elmo": both)."""
    kinds = arm.split("+")
    if arm not in ARMS or any(k not in KINDS for k in kinds):
        raise UsageError(f"arm {arm!r}: use one of {ARMS}")
    return {k: features(k, elmo_path, task, split, log=log) for k in kinds}


def features(arm: str, elmo_path, task, split: str, cache_dir: Path = FEATURE_CACHE, log=print) -> torch.Tensor:
    """The pooled features of a task's `split` for one feature kind (`arm`: one of KINDS), cached by the task's
    fingerprint and the checkpoint's sha256 (the static vectors are trained from the checkpoint's provenance,
    so they are keyed by it too)."""
    from minilib.models.pretrained import load_pretrained
    from minilib.models.elmo import untrained_like

    task = tasks.get(task)
    sha = file_sha256(elmo_path)
    prof = PROBE_SIZES.get(_checkpoint_profile(elmo_path), PROBE_SIZES["laptop"])
    path = (Path(cache_dir) / f"{task.name}-{task.fingerprint[:12]}-{split}-{arm}-{sha[:16]}"
                               f"-d{prof.static_dim}e{prof.static_epochs}.pt")
    if path.exists():
        return torch.load(path, weights_only=True)
    t = time.perf_counter()
    model, _, meta = load_pretrained(elmo_path, "elmo", device="cpu")
    sentences, _ = task_data(task, split)
    if arm == "elmo":
        feats = elmo_pooled(model, sentences)
    elif arm == "untrained":
        feats = elmo_pooled(untrained_like(model, seed=0), sentences)
    elif arm == "static":
        feats = static_pooled(static_baseline(meta, prof.static_dim, prof.static_epochs), sentences)
    else:
        raise UsageError(f"arm {arm!r}: use one of {ARMS}")
    checkpoint.save(path, feats)
    log(f"{arm} features of {task.name} {split}: {tuple(feats.shape)} in {time.perf_counter() - t:.0f} s -> {path}")
    return feats


def _checkpoint_profile(elmo_path) -> str:
    meta_path = Path(elmo_path).with_suffix(".json")
    if meta_path.exists():
        return json.loads(meta_path.read_text()).get("profile", "laptop")
    return "laptop"


# ----------------------------------------------------------------------------- the classifier

class PooledClassifier(nn.Module):
    """{kind: (B, L, D) pooled layers} → logits. Each kind is standardised per layer with fixed statistics
    (`stats`: kind -> (mean, std)), mixed by a ScalarMix when it has L > 1 layers (§3.2 eq. 1), and the
    kinds are concatenated ([x_k; ELMo_k], §3.3); then dropout and one linear layer."""

    def __init__(self, shapes: dict[str, tuple[int, int]], n_classes: int, stats: dict, dropout: float = 0.2):
        super().__init__()
        self.kinds = list(shapes)
        self.mixes = nn.ModuleDict({k: ScalarMix(L) for k, (L, _) in shapes.items() if L > 1})
        for k in self.kinds:
            self.register_buffer(f"mean_{k}", stats[k][0])
            self.register_buffer(f"std_{k}", stats[k][1])
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(sum(D for _, D in shapes.values()), n_classes)

    def forward(self, feats: dict[str, torch.Tensor]) -> torch.Tensor:
        parts = []
        for k in self.kinds:
            x = (feats[k] - getattr(self, f"mean_{k}")) / getattr(self, f"std_{k}")      # (B, L, D)
            parts.append(self.mixes[k](x.transpose(0, 1).unsqueeze(2)).squeeze(1) if k in self.mixes else x[:, 0])
        return self.head(self.drop(torch.cat(parts, -1)))


def train_head(train_x: dict, train_y: torch.Tensor, test_x: dict, test_y: torch.Tensor,
               config: DownstreamConfig, seed: int, stats: dict | None = None, l2: float = 0.0, *,
               n_classes: int) -> dict:
    """Train a PooledClassifier (n_classes outputs) on {kind: (N, L, D)} features with the loss cross-entropy + l2/2·‖W‖² (W: the
    linear head's weights); return the final test accuracy, the per-epoch curve and the learned ELMo layer
    weights. `stats` (kind -> (mean, std)) default to the training sample's."""
    if isinstance(train_x, torch.Tensor):
        train_x, test_x = {"elmo": train_x}, {"elmo": test_x}
    stats = stats or {k: (v.mean(0), v.std(0).clamp_min(1e-6)) for k, v in train_x.items()}
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = PooledClassifier({k: tuple(v.shape[1:]) for k, v in train_x.items()}, n_classes, stats, dropout=config.dropout)
    n = len(train_y)
    reps = grid.repeats_per_epoch(n, config.batch_size, config.min_steps_per_epoch)   # 1 unless n is tiny
    epochs = (torch.cat([torch.randperm(n, generator=gen) for _ in range(reps)]).split(config.batch_size)
              for _ in range(config.epochs))

    def loss(model, idx):
        value = nn.functional.cross_entropy(model({k: v[idx] for k, v in train_x.items()}), train_y[idx])
        return value + 0.5 * l2 * model.head.weight.pow(2).sum() if l2 else value

    curve, losses, preds = [], [], []

    def score(epoch):  # the test split after every epoch: the learning curve
        with torch.no_grad():
            preds.append(model(test_x).argmax(-1))
        curve.append({"epoch": epoch, "train_loss": float(np.mean(losses)),
                      "test_accuracy": (preds[-1] == test_y).float().mean().item()})
        losses.clear()

    fit_head(model, epochs, loss, lr=config.lr, weight_decay=config.weight_decay,
             steps=-(-reps * n // config.batch_size) * config.epochs,
             on_step=lambda step, value: losses.append(value.item()), on_epoch=score)
    pred = preds[-1]
    mix = model.mixes["elmo"] if "elmo" in model.mixes else None
    return {"accuracy": curve[-1]["test_accuracy"], "balanced_accuracy": balanced_accuracy(pred, test_y), "curve": curve,
            "layer_weights": mix.weights.tolist() if mix is not None else None,
            "gamma": mix.gamma.item() if mix is not None else None}


def choose_l2(train_x: dict, train_y: torch.Tensor, config: DownstreamConfig, seed: int,
              stats: dict | None = None, *, n_classes: int) -> tuple[float, dict[float, float]]:
    """The L2 strength from `config.l2_grid` with the best mean validation accuracy over a stratified
    `config.cv_folds`-fold split of the labelled sample itself (the test split is never seen); ties go to the
    stronger L2. Returns (λ, {λ: mean validation accuracy})."""
    grid = tuple(config.l2_grid)
    if len(grid) == 1:
        return grid[0], {}
    y = train_y.numpy()
    rng = np.random.default_rng(seed)
    fold = np.zeros(len(y), dtype=int)
    for c in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == c))
        fold[members] = np.arange(len(members)) % config.cv_folds       # each class split evenly
    scores = {}
    for lam in grid:
        accs = []
        for f in range(config.cv_folds):
            tr, va = torch.from_numpy(np.flatnonzero(fold != f)), torch.from_numpy(np.flatnonzero(fold == f))
            res = train_head({k: v[tr] for k, v in train_x.items()}, train_y[tr],
                             {k: v[va] for k, v in train_x.items()}, train_y[va], config, seed, stats, l2=lam,
                             n_classes=n_classes)
            accs.append(res["accuracy"])
        scores[lam] = float(np.mean(accs))
    best = max(grid, key=lambda lam: (scores[lam], lam))
    return best, scores


# ----------------------------------------------------------------------------- points and the grid

METHOD_PREFIX = "pooled-"   # the grid's method names: pooled-static, pooled-elmo, pooled-static+elmo, ...


def _training_settings(config: DownstreamConfig) -> dict:
    """The config fields that change a point's result (not which points a grid holds)."""
    return {k: v for k, v in asdict(config).items() if k not in ("label_counts", "seeds", "threads")}


def train_arm(task, idx, seed: int, point: dict, checkpoint, *, arm: str, log=print, **_) -> dict[str, Any]:
    """One point (the grid's `train`): the head on the pooled features of `task.train[idx]`, its L2 chosen by
    CV inside that sample (choose_l2), scored on test after every epoch (the curve the widget draws)."""
    config = DownstreamConfig(**point)
    _, labels = task_data(task, "train")
    _, test_labels = task_data(task, "test")
    train_all = arm_features(arm, checkpoint, task, "train", log=log)
    test_x = arm_features(arm, checkpoint, task, "test", log=log)
    test_y = torch.tensor(test_labels)
    if config.max_test is not None and config.max_test < len(test_y):
        keep = torch.from_numpy(tasks.stratified_sample(test_labels, config.max_test, seed=0))
        test_x, test_y = {k: v[keep] for k, v in test_x.items()}, test_y[keep]
    # standardisation from every train sentence's features (no labels needed), so it does not depend on n
    stats = {k: (v.mean(0), v.std(0).clamp_min(1e-6)) for k, v in train_all.items()}
    idx = torch.as_tensor(np.asarray(idx))
    train_x, train_y = {k: v[idx] for k, v in train_all.items()}, torch.tensor(labels)[idx]
    l2, cv = choose_l2(train_x, train_y, config, seed, stats, n_classes=task.n_classes)   # on the labelled sample only
    result = train_head(train_x, train_y, test_x, test_y, config, seed, stats, l2=l2, n_classes=task.n_classes)
    return {"arm": arm, **result, "l2": l2, "cv_accuracy": {str(k): v for k, v in cv.items()}, "n_test": len(test_y)}


for _arm in ARMS:
    grid.register(grid.Method(METHOD_PREFIX + _arm, "elmo-downstream", functools.partial(train_arm, arm=_arm),
                              lambda prof: _training_settings(SIZES[prof]), checkpoint=default_checkpoint,
                              kinds=("sentence",), label=_arm))


def _method(arm: str) -> str:
    if arm not in ARMS:
        raise UsageError(f"arm {arm!r}: use one of {ARMS}")
    return METHOD_PREFIX + arm


def cached_point(arm: str, n_labels, seed: int, elmo_path, config: DownstreamConfig | None = None,
                 results_dir=None, profile: str | None = None, task="rt") -> dict | None:
    """A point from the cache if it was trained from this checkpoint with these settings, else None."""
    prof = profile or runtime.profile()
    return grid.cached_point(task, n_labels, _method(arm), seed, prof, checkpoint=elmo_path,
                             settings=_training_settings(config or SIZES[prof]), results_dir=results_dir)


def run_point(arm: str, n_labels, seed: int, elmo_path, config: DownstreamConfig | None = None, *,
              results_dir=None, force: bool = False, log=print, task="rt") -> dict[str, Any]:
    """Train one classifier on `n_labels` stratified train sentences of `task` (or read it from the cache)."""
    config = config or SIZES[runtime.profile()]
    return grid.run_point(task, n_labels, _method(arm), seed, force=force, threads=config.threads,
                          checkpoint=elmo_path, settings=_training_settings(config), results_dir=results_dir, log=log)


def run_grid(config: DownstreamConfig, elmo_path, label_counts=None, seeds=None, log=print, task="rt",
             **kwargs) -> list[dict]:
    """Every (label count, arm, seed) point, reusing cached points."""
    rows = []
    for n in label_counts or config.label_counts:
        for arm in ARMS:
            for seed in seeds if seeds is not None else config.seeds:
                rows.append(run_point(arm, n, seed, elmo_path, config, log=log, task=task, **kwargs))
                log(f"n={n!s:<5} {arm:6s} seed {seed}: accuracy {rows[-1]['accuracy']:.3f} "
                    f"({rows[-1]['seconds']:.1f} s)")
    return rows


def summarize(rows: Sequence[dict]) -> list[dict]:
    """Mean and std (ddof=1) of the test accuracy per (arm, labels), over seeds."""
    return [{"n_labels": r["n_labels"], "arm": r["method"].removeprefix(METHOD_PREFIX), "accuracy": 1 - r["error"],
             "accuracy_std": r["error_std"], "seeds": r["seeds"]}
            for r in sorted(grid.summarize(rows, ddof=1), key=lambda r: (r["n_labels"], r["method"]))]


def plot_curves(rows: Sequence[dict], ax=None):
    """Test accuracy per epoch for each point in `rows`: ELMo arms solid, static and the untrained controls dashed."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.4))
    for r in rows:
        ax.plot([c["epoch"] for c in r["curve"]], [100 * c["test_accuracy"] for c in r["curve"]],
                color=ARM_COLORS[r["arm"]], ls=arm_linestyle(r["arm"]), alpha=0.8,
                label=f"{r['arm']} (seed {r['seed']})")
    ax.set(xlabel="epoch", ylabel="test accuracy (%)")
    ax.legend(fontsize=7, ncol=2)
    return ax


# ----------------------------------------------------------------------------- CLI

def cli_run(args, name: str) -> int:
    prof = runtime.profile()
    config = SIZES[prof]
    ckpt = args.checkpoint or default_checkpoint(prof)
    if not Path(ckpt).exists():
        raise UsageError(f"no biLM at {ckpt}: pass --checkpoint PATH, or make one with "
                         f"`python -m minilib pretrain elmo --profile {prof}`")
    labels = grid.parse_labels(args.labels) if args.labels else list(config.label_counts)
    seeds = list(range(args.seeds)) if args.seeds else list(config.seeds)
    t = time.perf_counter()
    rows = run_grid(config, ckpt, labels, seeds, force=args.force)
    summary = summarize(rows)
    by = {(s["n_labels"], s["arm"]): s for s in summary}
    counts = list(dict.fromkeys(s["n_labels"] for s in summary))
    for n in counts:
        print(f"n={n:<5} " + "   ".join(f"{a} {by[n, a]['accuracy']:.3f} ± {by[n, a]['accuracy_std']:.3f}" for a in ARMS))
    print(f"{len(rows)} points in {time.perf_counter() - t:.0f} s")
    line = " ".join(f"labels={n} " + " ".join(f"{a.replace('+', '_')}_acc={by[n, a]['accuracy']:.3f}" for a in ARMS)
                    for n in counts)
    print(f"{name}: {line}")          # e.g. labels=100 static_acc=… elmo_acc=… static_elmo_acc=…
    return 0
