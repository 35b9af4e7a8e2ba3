"""Chapter 04's experiment: how many labels does a classifier need, with and without ULMFiT?

The paper's Figure 3 (Howard & Ruder 2018, §5): with 100 labelled examples ULMFiT matches
training from scratch on 10x (supervised) to 100x (semi-supervised) more. Three methods, the
same classifier (ULMFiTClassifier: AWD-LSTM encoder, concat pooling, 2-block head):

    scratch             random init; every layer trains from the start, one LR, STLR
    ulmfit-supervised   the pretrained LM's encoder, stage (c) only (gradual unfreezing,
                        discriminative LRs, STLR); no target-domain LM fine-tuning
    ulmfit              stage (b) first: the LM fine-tuned on the task's unlabeled text
                        (rt: movie_lm_text(), trec: the train questions), then stage (c)

    from minilib.experiments import sample_efficiency as se
    config = se.SIZES[runtime.profile()]
    row = se.run_point("rt", 100, "ulmfit", seed=0, pretrained_path="checkpoints/awd-lstm-laptop.pt")
    rows = se.run_grid(config, "checkpoints/awd-lstm-laptop.pt")      # cached point by point

Each point samples `n_labels` training examples, stratified by class and seeded, from the
task's train split only, and reports the error on the task's fixed test split. A point is
cached as results/sample-efficiency/<task>-<method>-n<labels>-s<seed>-<profile>.json with
its provenance, and reused when the pretrained checkpoint and the config match.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from minilib import provenance, runtime
from minilib.data.labelled import TREC_COARSE

RESULTS_DIR = provenance.REPO_ROOT / "results" / "sample-efficiency"
TASKS = ("rt", "trec")
ALL = "all"  # a label count meaning "every labelled training example of the task"


@dataclass(frozen=True)
class Recipe:
    """Which of ULMFiT's pieces a method uses (§3; the paper's Tables 6-7 switch them off one by one)."""
    pretrained: bool = True           # (a) start from the general-domain LM, not a random init
    lm_fine_tuning: bool = True       # (b) first fine-tune that LM on the task's unlabeled text
    gradual_unfreezing: bool = True   # (c) §3.3 head first, one more layer group each epoch
    discriminative: bool = True       # (c) §3.2 each lower group's LR / 2.6
    stlr: bool = True                 # (c) §3.2 slanted triangular LR (else constant)


RECIPES = {
    # scratch: the same classifier, random init, every layer from the start, one LR (nothing to protect)
    "scratch": Recipe(pretrained=False, lm_fine_tuning=False, gradual_unfreezing=False, discriminative=False),
    "ulmfit-supervised": Recipe(lm_fine_tuning=False),   # the paper's "supervised" ULMFiT: no stage (b)
    "ulmfit": Recipe(),                                  # the paper's "semi-supervised" ULMFiT: all three stages
    "ulmfit-no-discr": Recipe(discriminative=False),
    "ulmfit-no-stlr": Recipe(stlr=False),
    "ulmfit-no-unfreezing": Recipe(gradual_unfreezing=False),
}
METHODS = ("scratch", "ulmfit-supervised", "ulmfit")                    # the sample-efficiency curve
ABLATIONS = ("ulmfit", "ulmfit-no-discr", "ulmfit-no-stlr", "ulmfit-no-unfreezing", "ulmfit-supervised")


@dataclass(frozen=True)
class SampleEfficiencyConfig:
    task: str = "rt"                                   # rt (binary sentiment) | trec (6 question types)
    label_counts: tuple[int | str, ...] = (50, 100, 200, 500, 1000, 2000, ALL)  # labelled examples per point
    methods: tuple[str, ...] = METHODS
    seeds: tuple[int, ...] = (0, 1, 2)                 # each seed: another sample and another init
    clf_epochs: int = 6                                # stage (c) epochs (5 groups: 4 unfreezing + 2 all)
    clf_lr: float = 1e-2                               # head LR; lower groups /2.6 each (§3.2)
    min_steps_per_epoch: int = 20                      # small samples are repeated within an epoch: 50 labels
                                                       # make 2 batches, and 2 steps per unfreezing stage move nothing
    batch_size: int = 32
    drop_mult: float = 0.5                             # AWD-LSTM dropouts x this for fine-tuning (fastai's drop_mult)
    lm_epochs: int = 1                                 # stage (b) epochs on the task's unlabeled text
    lm_lr: float = 3e-3
    lm_max_texts: int | None = None                    # cap the stage-(b) texts (smoke)
    max_test: int | None = None                        # cap the test items with a fixed stratified subset (smoke only)
    threads: int | None = 1                            # torch threads: 1 is fastest for LSTMs on a busy 2-core CPU

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task {self.task!r}: use one of {TASKS}")
        bad = [m for m in self.methods if m not in RECIPES]
        if bad:
            raise ValueError(f"unknown methods {bad}: use {', '.join(RECIPES)}")


SIZES = {
    "smoke": SampleEfficiencyConfig(label_counts=(20, 40), seeds=(0,), clf_epochs=2, lm_epochs=1,
                                    lm_max_texts=300, max_test=200, batch_size=16),
    "laptop": SampleEfficiencyConfig(seeds=(0, 1, 2)),
    "full": SampleEfficiencyConfig(seeds=(0, 1, 2, 3, 4), clf_epochs=8, lm_epochs=3),
}
ABLATION_LABELS = {"smoke": 40, "laptop": 500, "full": 1000}  # the label count of the ablation table


# ----------------------------------------------------------------------------- data

def task_data(task: str, split: str) -> tuple[list[str], list[int]]:
    """(texts, integer labels) of a task's split: rt = positive(1)/negative(0); trec = coarse type index."""
    from minilib import data

    if task == "rt":
        items = data.rt_sentiment(split)
        return [r.text for r in items], [r.label for r in items]
    if task == "trec":
        items = data.trec6(split)
        return [q.text for q in items], [TREC_COARSE.index(q.coarse) for q in items]
    raise ValueError(f"task {task!r}: use one of {TASKS}")


def n_classes(task: str) -> int:
    return 2 if task == "rt" else len(TREC_COARSE)


def task_lm_text(task: str) -> list[str]:
    """Unlabeled in-domain text for stage (b); neither ever holds a test item."""
    from minilib import data

    return data.movie_lm_text() if task == "rt" else task_data("trec", "train")[0]


def label_count(n_labels: int | str, n_train: int, what: str = "") -> int:
    """A label count as a number out of `n_train`: "all" is n_train, "20" is 20; anything else
    outside 1..n_train raises, naming `what` (e.g. " for rt")."""
    if n_labels == ALL:
        return n_train
    if isinstance(n_labels, str) and n_labels.isdigit():
        n_labels = int(n_labels)
    if not isinstance(n_labels, int) or not 0 < n_labels <= n_train:
        raise ValueError(f"label count {n_labels!r}{what}: use a number from 1 to {n_train}, or {ALL!r}")
    return n_labels


def resolve_labels(task: str, n_labels: int | str) -> int:
    """A label count of `task` as a number: "all" is the size of the task's train split."""
    return label_count(n_labels, len(task_data(task, "train")[1]), f" for {task}")


def stratified_sample(labels: Sequence[int], n: int, seed: int) -> np.ndarray:
    """Indices of `n` items drawn without replacement, each class in proportion to its share
    (largest remainders, at least one per class when n allows), seeded. A smaller n with the
    same seed takes a prefix of each class's draw, so the samples are nested as n grows."""
    labels = np.asarray(labels)
    if not 0 < n <= len(labels):
        raise ValueError(f"asked for {n} labelled examples out of {len(labels)}")
    classes, counts = np.unique(labels, return_counts=True)
    quota = counts / counts.sum() * n
    take = np.floor(quota).astype(int)
    if n >= len(classes):
        take = np.maximum(take, 1)
    for i in np.argsort(-(quota - np.floor(quota)), kind="stable"):  # largest remainders first
        if take.sum() >= n:
            break
        take[i] += 1
    while take.sum() > n:  # the minimum-one rule overshot: trim the biggest class
        take[np.argmax(take)] -= 1
    take = np.minimum(take, counts)
    rng = np.random.default_rng(seed)
    picked = [rng.permutation(np.flatnonzero(labels == c))[:k] for c, k in zip(classes, take)]
    return np.sort(np.concatenate(picked))


# ----------------------------------------------------------------------------- one point

def _file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def fine_tuned_lm(task: str, pretrained_path: str | Path, config: SampleEfficiencyConfig, seed: int = 0,
                  cache_dir: str | Path | None = None):
    """Stage (b): the pretrained LM, vocabulary grown with the task's words (new rows = mean),
    fine-tuned on the task's unlabeled text. Cached (the grid reuses it for every label count
    and method): returns (lm, vocab)."""
    from minilib.data import tokenize
    from minilib.models.ulmfit import extend_vocab, fine_tune_lm, grow_vocab
    from minilib.pretrain import load_pretrained

    from minilib.models.awd_lstm import AWDLSTM

    lm, vocab, _ = load_pretrained(pretrained_path)
    key = hashlib.sha256(json.dumps([task, _file_sha256(Path(pretrained_path)), config.lm_epochs, config.lm_lr,
                                     config.lm_max_texts, config.drop_mult, seed]).encode()).hexdigest()[:16]
    cache = Path(cache_dir or provenance.REPO_ROOT / ".cache" / "ulmfit-lm") / f"{task}-{key}.pt"
    texts = task_lm_text(task)
    if config.lm_max_texts is not None:
        texts = texts[:config.lm_max_texts]
    new_vocab = grow_vocab(vocab, (tokenize(t) for t in texts), min_count=3)
    lm = extend_vocab(lm, vocab, new_vocab)
    if not cache.exists():
        tuned = AWDLSTM(lm.cfg.scale_dropouts(config.drop_mult))  # fastai's drop_mult for fine-tuning
        tuned.load_state_dict(lm.state_dict())
        runtime.seed_everything(seed)
        fine_tune_lm(tuned, texts, new_vocab, epochs=config.lm_epochs, lr=config.lm_lr,
                     batch_size=config.batch_size, seed=seed)
        cache.parent.mkdir(parents=True, exist_ok=True)
        torch.save(tuned.state_dict(), cache)
    lm.load_state_dict(torch.load(cache, map_location="cpu", weights_only=True))  # the pretrained dropouts kept
    lm.eval()
    return lm, new_vocab


def _point_path(results_dir: Path, task: str, n_labels: int | str, method: str, seed: int, prof: str) -> Path:
    return Path(results_dir) / f"{task}-{method}-n{n_labels}-s{seed}-{prof}.json"


def cached_point(task: str, n_labels: int | str, method: str, seed: int, pretrained_path: str | Path,
                 config: SampleEfficiencyConfig | None = None, *, results_dir: str | Path | None = None,
                 profile: str | None = None) -> dict[str, Any] | None:
    """The cached row of this point if one exists for this checkpoint and config, else None (no training).
    `profile`: whose cache to read (default: the current profile's)."""
    prof = profile or runtime.profile()
    config = dataclasses.replace(config or SIZES[prof], task=task)
    path = _point_path(Path(results_dir or RESULTS_DIR), task, n_labels, method, seed, prof)
    if not path.exists() or not Path(pretrained_path).exists():
        return None
    cached = json.loads(path.read_text())
    settings = json.loads(json.dumps(asdict(config)))
    same = cached.get("pretrained_sha256") == _file_sha256(Path(pretrained_path)) and cached.get("config") == settings
    return cached if same else None


def run_point(task: str, n_labels: int | str, method: str, seed: int, pretrained_path: str | Path,
              config: SampleEfficiencyConfig | None = None, *, results_dir: str | Path | None = None,
              lm_cache_dir: str | Path | None = None, force: bool = False, progress: bool | str = False,
              callbacks: Sequence = ()) -> dict[str, Any]:
    """Train one classifier and return {"error", "accuracy", "curve", ...}; cached as JSON in `results_dir`.

    `method` names a Recipe (RECIPES). The pretrained checkpoint gives the vocabulary (every
    method tokenizes alike) and, unless the recipe says otherwise, the encoder's weights. The
    learning curve (`curve`) is the training loss per epoch; the test split is scored once, at
    the end (scoring RT's 2,131 test sentences after every epoch took 5x longer than training
    a small point), and nothing is selected on it.
    """
    from minilib.models.awd_lstm import AWDLSTM
    from minilib.models.ulmfit import ClassificationBatches, ULMFiTClassifier, encode_texts, error_rate, \
        fine_tune_classifier
    from minilib.pretrain import load_pretrained

    prof = runtime.profile()
    config = dataclasses.replace(config or SIZES[prof], task=task)
    if method not in RECIPES:
        raise ValueError(f"method {method!r}: use one of {', '.join(RECIPES)}")
    recipe = RECIPES[method]
    n = resolve_labels(task, n_labels)
    if not force:
        cached = cached_point(task, n_labels, method, seed, pretrained_path, config, results_dir=results_dir)
        if cached is not None:
            return cached
    if config.threads:
        torch.set_num_threads(config.threads)
    t0 = time.perf_counter()

    if recipe.lm_fine_tuning:
        lm, vocab = fine_tuned_lm(task, pretrained_path, config, seed=0, cache_dir=lm_cache_dir)
    else:
        lm, vocab, _ = load_pretrained(pretrained_path)
    lm_seconds = time.perf_counter() - t0
    runtime.seed_everything(seed)
    encoder_model = AWDLSTM(lm.cfg.scale_dropouts(config.drop_mult))
    if recipe.pretrained:
        encoder_model.load_state_dict(lm.state_dict())
    model = ULMFiTClassifier(encoder_model.encoder, n_classes(task))

    texts, labels = task_data(task, "train")
    idx = stratified_sample(labels, n, seed)
    # a stage ("epoch") of gradual unfreezing sees the sample often enough to take min_steps_per_epoch steps
    repeat = max(1, -(-config.min_steps_per_epoch * config.batch_size // n))
    train = ClassificationBatches(encode_texts([texts[i] for i in idx], vocab) * repeat,
                                  [labels[i] for i in idx] * repeat, batch_size=config.batch_size, seed=seed)
    test_texts, test_labels = task_data(task, "test")
    if config.max_test is not None and config.max_test < len(test_labels):
        # a fixed stratified subset (the split is in file order, which is sorted by rating for rt)
        keep = stratified_sample(test_labels, config.max_test, seed=0)
        test_texts, test_labels = [test_texts[i] for i in keep], [test_labels[i] for i in keep]
    test = ClassificationBatches(encode_texts(test_texts, vocab), test_labels, batch_size=64, shuffle=False)

    learner = fine_tune_classifier(model, train, None, epochs=config.clf_epochs, lr=config.clf_lr,
                                   gradual_unfreezing=recipe.gradual_unfreezing,
                                   discriminative=recipe.discriminative, stlr=recipe.stlr,
                                   callbacks=callbacks, progress=progress)
    curve = [{"epoch": i + 1, "train_loss": e["train_loss"]} for i, e in enumerate(learner.history.epochs)]
    error = error_rate(model, test)
    row = {"task": task, "n_labels": n, "labels": n_labels, "method": method, "seed": seed, "error": error,
           "accuracy": 1 - error, "n_test": len(test_labels), "curve": curve, "recipe": asdict(recipe),
           "seconds": round(time.perf_counter() - t0, 2), "lm_seconds": round(lm_seconds, 2),
           "train_indices_sha256": hashlib.sha256(np.asarray(idx, dtype=np.int64).tobytes()).hexdigest(),
           "pretrained": str(pretrained_path), "pretrained_sha256": _file_sha256(Path(pretrained_path)),
           "config": asdict(config), "provenance": provenance.stamp(seed=seed, threads=torch.get_num_threads())}
    row = json.loads(json.dumps(row))  # as it will read back from the cache (tuples -> lists)
    provenance.write_json(_point_path(Path(results_dir or RESULTS_DIR), task, n_labels, method, seed, prof), row)
    return row


def run_grid(config: SampleEfficiencyConfig, pretrained_path: str | Path, label_counts: Sequence | None = None,
             methods: Sequence[str] | None = None, seeds: Sequence[int] | None = None, **kwargs) -> list[dict[str, Any]]:
    """Every (label count, method, seed) point of `config` (or of the given subsets), reusing cached points."""
    rows = []
    for n in label_counts or config.label_counts:
        for method in methods or config.methods:
            for seed in seeds if seeds is not None else config.seeds:
                rows.append(run_point(config.task, n, method, seed, pretrained_path, config, **kwargs))
                print(f"{config.task} n={rows[-1]['n_labels']:<5d} {method:20s} seed {seed}: "
                      f"error {rows[-1]['error']:.3f} ({rows[-1]['seconds']:.0f} s)", flush=True)
    return rows


def cached_rows(task: str, pretrained_path: str | Path, config: SampleEfficiencyConfig | None = None,
                methods: Sequence[str] | None = None, results_dir: str | Path | None = None,
                profile: str | None = None, label_counts: Sequence | None = None) -> list[dict[str, Any]]:
    """Every cached point of `task` for this checkpoint and config (what a widget shows at once).
    `profile`: read that profile's grid (e.g. the shipped laptop grid while running at smoke)."""
    config = dataclasses.replace(config or SIZES[profile or runtime.profile()], task=task)
    rows = []
    for n in label_counts or config.label_counts:
        for method in methods or config.methods:
            for seed in config.seeds:
                row = cached_point(task, n, method, seed, pretrained_path, config, results_dir=results_dir,
                                   profile=profile)
                if row is not None:
                    rows.append(row)
    return rows


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and std of the error per (task, method, n_labels), over seeds."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["method"], r["n_labels"]), []).append(r["error"])
    return [{"task": t, "method": m, "n_labels": n, "error": float(np.mean(e)), "error_std": float(np.std(e)),
             "seeds": len(e)} for (t, m, n), e in sorted(groups.items())]


def catch_up(summary: Sequence[dict[str, Any]], task: str, method: str = "ulmfit", at: int = 100,
             baseline: str = "scratch") -> float | None:
    """How many times `at` labels `baseline` needs to match `method`'s mean error at `at` labels
    (the paper's "matches training from scratch on 10x / 100x more data", §5); None: never in this grid."""
    mean = {(r["method"], r["n_labels"]): r["error"] for r in summary if r["task"] == task}
    if (method, at) not in mean:
        raise ValueError(f"no {method} point at {at} labels for {task}: run it first")
    target = mean[(method, at)]
    for n in sorted(n for m, n in mean if m == baseline):
        if mean[(baseline, n)] <= target:
            return n / at
    return None


METHOD_STYLE = {"scratch": dict(color="tab:gray", marker="o", label="from scratch"),
                "ulmfit-supervised": dict(color="tab:blue", marker="s", label="ULMFiT, supervised (no LM fine-tuning)"),
                "ulmfit": dict(color="tab:red", marker="^", label="ULMFiT, semi-supervised (all three stages)")}


def plot_curves(summary: Sequence[dict[str, Any]], task: str, ax=None, points: Sequence[dict] = ()):
    """Test error vs number of labels (log x), mean over seeds with a ±1 std band: the paper's Figure 3.
    `points`: single runs drawn as dots on top (e.g. one trained live)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4))
    for method in METHOD_STYLE:
        rows = sorted((r for r in summary if r["task"] == task and r["method"] == method), key=lambda r: r["n_labels"])
        if not rows:
            continue
        n = np.array([r["n_labels"] for r in rows])
        err = np.array([r["error"] for r in rows]) * 100
        std = np.array([r["error_std"] for r in rows]) * 100
        style = METHOD_STYLE[method]
        ax.plot(n, err, marker=style["marker"], color=style["color"], label=f"{style['label']} (n={rows[0]['seeds']} seeds)")
        ax.fill_between(n, err - std, err + std, color=style["color"], alpha=0.15)
    for p in points:
        ax.scatter([p["n_labels"]], [p["error"] * 100], s=90, facecolors="none", linewidths=2,
                   edgecolors=METHOD_STYLE.get(p["method"], {}).get("color", "k"), zorder=5)
    ax.set_xscale("log")
    ax.set_xlabel("labelled training examples (log scale)")
    ax.set_ylabel("test error (%)")
    ax.set_title(f"{task}: error vs labels")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax


def ablation_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the ablation table: per (task, method), the mean and std error over seeds, and the
    change from full ULMFiT (positive = worse without the trick)."""
    summary = summarize(rows)
    full = {(r["task"], r["n_labels"]): r["error"] for r in summary if r["method"] == "ulmfit"}
    return [{**r, "delta": r["error"] - full[(r["task"], r["n_labels"])] if (r["task"], r["n_labels"]) in full else None}
            for r in sorted(summary, key=lambda r: (r["task"], ABLATIONS.index(r["method"])
                                                    if r["method"] in ABLATIONS else 99))]


# ----------------------------------------------------------------------------- the command line

def default_checkpoint(prof: str | None = None) -> Path:
    return provenance.REPO_ROOT / "checkpoints" / f"awd-lstm-{prof or runtime.profile()}.pt"


def cli_arguments(p, name: str) -> None:
    p.add_argument("--task", choices=TASKS, default="rt")
    p.add_argument("--labels", default=None,
                   help="comma-separated label counts, 'all' for the whole train split (default: the profile's grid"
                        + (f"; ablations: {ABLATION_LABELS['laptop']} at laptop)" if name == "ulmfit-ablations" else ")"))
    if name == "sample-efficiency":
        p.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {', '.join(RECIPES)}")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: the profile's)")
    p.add_argument("--checkpoint", type=Path, default=None,
                   help="pretrained AWD-LSTM (default: checkpoints/awd-lstm-<profile>.pt)")
    p.add_argument("--force", action="store_true", help="retrain points even if cached")
    p.add_argument("--results-dir", type=Path, default=None, help="where points are cached (default: results/sample-efficiency)")


def cli_run(args, name: str) -> int:
    prof = runtime.profile()
    config = dataclasses.replace(SIZES[prof], task=args.task)
    checkpoint_path = args.checkpoint or default_checkpoint(prof)
    if not Path(checkpoint_path).exists():
        raise SystemExit(f"no pretrained AWD-LSTM at {checkpoint_path}: make one with "
                         f"`python -m minilib pretrain awd-lstm --profile {prof}` or pass --checkpoint")
    if args.labels:
        labels = [x if x == ALL else int(x) for x in args.labels.split(",")]
    else:
        labels = config.label_counts if name == "sample-efficiency" else [ABLATION_LABELS[prof]]
    for n in labels:
        resolve_labels(args.task, n)  # a bad count fails before any training
    methods = args.methods.split(",") if name == "sample-efficiency" else list(ABLATIONS)
    bad = [m for m in methods if m not in RECIPES]
    if bad:
        raise SystemExit(f"unknown methods {bad}: use {', '.join(RECIPES)}")
    seeds = list(range(args.seeds)) if args.seeds else list(config.seeds)
    rows = run_grid(config, checkpoint_path, label_counts=labels, methods=methods, seeds=seeds, force=args.force,
                    results_dir=args.results_dir)
    summary = summarize(rows)
    if name == "ulmfit-ablations":
        for r in ablation_table(rows):
            print(f"{r['task']} n={r['n_labels']} {r['method']:22s} error {r['error']:.3f} ± {r['error_std']:.3f} "
                  f"(Δ {r['delta']:+.3f})")
        keys = " ".join(f"{r['method'].replace('ulmfit-', '').replace('ulmfit', 'full').replace('-', '_')}_err={r['error']:.3f}"
                        for r in ablation_table(rows))
        print(f"ulmfit-ablations: {args.task} labels={labels[0]} {keys}")
        return 0
    first = resolve_labels(args.task, labels[0])
    keys = " ".join(f"{r['method'].replace('-', '_')}_err={r['error']:.3f} {r['method'].replace('-', '_')}_std={r['error_std']:.3f}"
                    for r in summary if r["n_labels"] == first)
    print(f"sample-efficiency: {args.task} labels={labels[0]} {keys} seeds={len(seeds)}")
    return 0
