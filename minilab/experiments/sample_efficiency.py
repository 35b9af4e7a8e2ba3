"""Chapter 04's experiment: how many labels does a classifier need, with and without ULMFiT?

The paper's Figure 3 (Howard & Ruder 2018, §5): with 100 labelled examples ULMFiT matches
training from scratch on 10x (supervised) to 100x (semi-supervised) more. Three methods, the
same classifier (ULMFiTClassifier: AWD-LSTM encoder, concat pooling, 2-block head):

    scratch             random init; every layer trains from the start, one LR, STLR
    ulmfit-supervised   the pretrained LM's encoder, stage (c) only (gradual unfreezing,
                        discriminative LRs, STLR); no target-domain LM fine-tuning
    ulmfit              stage (b) first: the LM fine-tuned on the task's unlabeled text
                        (rt: movie_lm_text(), trec: the train questions), then stage (c)

    from minilab.experiments import sample_efficiency as se
    config = se.SIZES[runtime.profile()]
    row = se.run_point("rt", 100, "ulmfit", seed=0, pretrained_path="checkpoints/awd-lstm-laptop.pt")
    rows = se.run_grid(config, "checkpoints/awd-lstm-laptop.pt")      # cached point by point

Each point samples `n_labels` training examples, stratified by class and seeded, from the
task's train split only, and reports the error on the task's fixed test split. A point is
cached as results/sample-efficiency/<task>-<method>-n<labels>-s<seed>-<profile>.json with
its provenance, and reused when the pretrained checkpoint and the config match.
"""
from __future__ import annotations

import functools
import hashlib
import json
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from minilib import runtime, tasks
from minilab import provenance
from minilab.experiments import grid, store
from minilab.experiments.grid import ALL, label_count
from minilib.runtime import UsageError

TASKS = ("rt", "trec")  # the chapter's tasks; any sentence task (a user's CSV too) runs through the grid


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
    task: str = "rt"                                   # a registered task name or a CSV path
    label_counts: tuple[int | str, ...] = (50, 100, 200, 500, 1000, 2000, ALL)  # labelled examples per point
    methods: tuple[str, ...] = METHODS
    seeds: tuple[int, ...] = (0, 1, 2)                 # each seed: another sample and another init
    clf_epochs: int = 6                                # stage (c) epochs (5 groups: 4 unfreezing + 2 all)
    clf_lr: float = 1e-2                               # head LR; lower groups /2.6 each (§3.2)
    cycle_per_stage: bool = False                      # an STLR cycle per unfreezing stage, not one for all
    stage_lr_decay: float = 1.0                        # with cycle_per_stage: stage k peaks at clf_lr * this**k
    min_steps_per_epoch: int = 20                      # small samples are repeated within an epoch: 50 labels
                                                       # make 2 batches, and 2 steps per unfreezing stage move nothing
    batch_size: int = 32
    drop_mult: float = 0.5                             # AWD-LSTM dropouts x this for fine-tuning (fastai's drop_mult)
    lm_epochs: int = 1                                 # stage (b) epochs on the task's unlabeled text
    lm_lr: float = 3e-3
    lm_max_texts: int | None = None                    # cap the stage-(b) texts (smoke)
    max_test: int | None = None                        # cap the test items with a fixed stratified subset (smoke only)
    threads: int | None = 1                            # torch threads: 1 is fastest for LSTMs on a busy 2-core CPU
    tuned: bool = False                                # on: each method trains with its chosen recipe (TUNED);
                                                       # off: every method with the settings above as they are

    def __post_init__(self):
        bad = [m for m in self.methods if m not in RECIPES]
        if bad:
            raise UsageError(f"unknown methods {bad}: use {', '.join(RECIPES)}")


SIZES = {
    # smoke checks the plumbing with the settings as they are (the chosen ULMFiT recipe would be 20 epochs)
    "smoke": SampleEfficiencyConfig(label_counts=(20, 40), seeds=(0,), clf_epochs=2, lm_epochs=1,
                                    lm_max_texts=300, max_test=200, batch_size=16),
    "laptop": SampleEfficiencyConfig(seeds=(0, 1, 2), tuned=True),
    "full": SampleEfficiencyConfig(seeds=(0, 1, 2, 3, 4), clf_epochs=8, lm_epochs=3, tuned=True),
}
# The grid first run with the paper's schedule read literally (one STLR cycle over all 6 epochs, the LM fine-tuned
# one epoch: `--recipe literal`), kept for lesson 04's diagnosis of why it lost to scratch. A point's file is
# named by task, method, labels and seed only, so the two grids live in two folders.
LITERAL_DIR = store.folder("sample-efficiency-literal")
ABLATION_LABELS = {"smoke": 40, "laptop": 500, "full": 1000}  # the label count of the ablation table

# Each method's recipe, as `experiment ulmfit-recipe` chose it on rt's and trec's validation tasks at all labels
# (results/ulmfit-recipe/: seed 0, 10 % of the training labels held out, the test split never read; its
# CANDIDATES name them). One STLR cycle over 6 epochs left ULMFiT undertrained: a cycle per unfreezing stage,
# 20 epochs and the LM fine-tuned 10 epochs on the task's text won on both tasks. Scratch won with LR 3e-3
# and its 6 epochs (20 epochs did not help it). Every ULMFiT variant takes ULMFiT's recipe, so an ablation
# differs from full ULMFiT in its one piece only (the paper's Tables 6-7).
TUNED = {"scratch": {"clf_lr": 3e-3},                                                     # "one cycle, LR 3e-3"
         "ulmfit": {"cycle_per_stage": True, "clf_epochs": 20, "lm_epochs": 10}}  # "a cycle per stage, 20 epochs, LM 10 epochs"


# ----------------------------------------------------------------------------- data

GRID_FIELDS = ("task", "label_counts", "methods", "seeds")  # the grid's shape, not a point's settings


def method_config(config: SampleEfficiencyConfig, method: str) -> SampleEfficiencyConfig:
    """`config` with `method`'s chosen recipe (TUNED: scratch's, or ULMFiT's for every ULMFiT variant);
    `config` itself when it is not `tuned` (smoke checks plumbing; the recipe search tries its candidates)."""
    if not config.tuned:
        return config
    return replace(config, **TUNED["ulmfit" if RECIPES[method].pretrained else "scratch"])


def settings(config: SampleEfficiencyConfig, method: str | None = None) -> dict[str, Any]:
    """What defines one point's training (the cache key): the config without the grid's shape, with
    `method`'s recipe when one is named (method_config)."""
    config = method_config(config, method) if method else config
    return {k: v for k, v in asdict(config).items() if k not in (*GRID_FIELDS, "tuned")}


def task_data(task: str, split: str) -> tuple[list, list]:
    """(texts, integer labels) of a task's split."""
    s = getattr(tasks.get(task), split)
    return list(s.texts), list(s.labels)


def n_classes(task: str) -> int:
    return tasks.get(task).n_classes


def resolve_labels(task: str, n_labels: int | str) -> int:
    """A label count of `task` as a number: "all" is the size of the task's train split."""
    return label_count(n_labels, len(tasks.get(task).train), f" for {task}")


# ----------------------------------------------------------------------------- one point

def lm_texts(task, config: SampleEfficiencyConfig) -> list[str]:
    """Stage (b)'s text: the task's unlabeled text (a task without any: its training texts, labels unused)."""
    task = tasks.get(task)
    texts = task.lm_text() if task.lm_text else list(task.train.texts)
    return texts if config.lm_max_texts is None else texts[:config.lm_max_texts]


def lm_cache_path(texts: list[str], pretrained_path: str | Path, config: SampleEfficiencyConfig, seed: int = 0,
                  cache_dir: str | Path | None = None) -> Path:
    """Where stage (b)'s LM is cached: keyed by its text (`lm_texts`) itself, not the task's name, the
    checkpoint's bytes, the LM's epochs, LR and dropout scale, and the seed."""
    from minilib.models.pretrained import file_sha256

    text_sha = hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode()).hexdigest()
    key = hashlib.sha256(json.dumps([text_sha, file_sha256(pretrained_path), config.lm_epochs, config.lm_lr,
                                     config.drop_mult, seed]).encode()).hexdigest()[:16]
    return Path(cache_dir or provenance.REPO_ROOT / ".cache" / "ulmfit-lm") / f"lm-{key}.pt"


def fine_tuned_lm(task, pretrained_path: str | Path, config: SampleEfficiencyConfig, seed: int = 0,
                  cache_dir: str | Path | None = None, progress: bool | str = False):
    """Stage (b): the pretrained LM, vocabulary grown with the task's words (new rows = mean),
    fine-tuned on the task's unlabeled text (a task without any: its training texts, labels unused).
    Cached (the grid reuses it for every label count and method): returns (lm, vocab)."""
    from minilib.data import tokenize
    from minilib.models.awd_lstm import AWDLSTM
    from minilib.models.pretrained import load_pretrained
    from minilib.recipes.ulmfit import extend_vocab, fine_tune_lm, grow_vocab
    from minilib.train.checkpoint import save

    task = tasks.get(task)
    lm, vocab, _ = load_pretrained(pretrained_path, "awd-lstm")
    texts = lm_texts(task, config)
    cache = lm_cache_path(texts, pretrained_path, config, seed, cache_dir)
    new_vocab = grow_vocab(vocab, (tokenize(t) for t in texts), min_count=3)
    lm = extend_vocab(lm, vocab, new_vocab)
    if not cache.exists():
        tuned = AWDLSTM(lm.cfg.scale_dropouts(config.drop_mult))  # fastai's drop_mult for fine-tuning
        tuned.load_state_dict(lm.state_dict())
        runtime.seed_everything(seed)
        # 10 epochs on rt's text are most of an hour of one thread (docs/measurements.md): checkpoint often, so a
        # killed run resumes
        partial = cache.with_suffix(".partial")
        print(f"stage (b): fine-tuning the LM on {len(texts):,} texts of {task.name}, {config.lm_epochs} epochs, "
              f"once for every point (cached as {cache.name}; checkpoints in {partial.name}, a killed run resumes)",
              flush=True)
        fine_tune_lm(tuned, texts, new_vocab, epochs=config.lm_epochs, lr=config.lm_lr, batch_size=config.batch_size,
                     seed=seed, checkpoint_dir=partial, checkpoint_every=50, progress=progress)
        save(cache, tuned.state_dict())  # atomic: a run killed while saving leaves no half cache
        shutil.rmtree(partial, ignore_errors=True)
    lm.load_state_dict(torch.load(cache, map_location="cpu", weights_only=True))  # the pretrained dropouts kept
    lm.eval()
    return lm, new_vocab


# A laptop classifier's checkpoint (weights and Adam's moments) is ~86 MB and takes ~0.5 s to write: after every
# epoch of a short point (20 steps) that is ~5 % of its time, more than restarting it would lose.
RESUME_MIN_STEPS = 1000


def point_resume_dir(task, idx, seed: int, point: dict, checkpoint, method: str, valid_curve: bool = False,
                     resume_dir: str | Path | None = None) -> Path:
    """Where a point's classifier checkpoints while it trains (`train_classifier`)."""
    key = hashlib.sha256(json.dumps([task.name, [int(i) for i in idx], seed, point, grid.file_sha256(checkpoint),
                                     method, valid_curve], sort_keys=True).encode()).hexdigest()[:16]
    return Path(resume_dir or provenance.REPO_ROOT / ".cache" / "ulmfit-points") / f"{task.name}-{method}-{key}.partial"


def train_classifier(task, idx, seed: int, point: dict, checkpoint, *, method: str, progress=False,
                     callbacks: Sequence = (), lm_cache_dir: str | Path | None = None,
                     valid_curve: bool = False, resume_dir: str | Path | None = None) -> dict[str, Any]:
    """One ULMFiT-family point (the grid's `train`): the classifier on `task.train[idx]`, scored once on test.

    The pretrained checkpoint gives the vocabulary (every method tokenizes alike) and, unless the
    recipe says otherwise, the encoder's weights. The learning curve (`curve`) is the training loss
    per epoch; the test split is scored once, at the end, and nothing is selected on it.
    `valid_curve`: for a validation task (Task.validation(), whose "test" items are held out of
    the training split) score them after every epoch too, into the curve.
    A point of RESUME_MIN_STEPS steps or more checkpoints every 50 steps and every epoch into `resume_dir`
    (default .cache/ulmfit-points/), in a folder keyed by everything that decides the run: a killed or
    stopped point resumes there (an all-label ULMFiT point on rt takes about an hour of one thread), and
    the folder goes once the point is scored."""
    from minilib.data.batching import ClassificationBatches, encode_texts
    from minilib.eval.classification import balanced_accuracy, predict
    from minilib.models.awd_lstm import AWDLSTM
    from minilib.models.pretrained import load_pretrained
    from minilib.models.ulmfit import ULMFiTClassifier
    from minilib.recipes.ulmfit import fine_tune_classifier

    config = SampleEfficiencyConfig(**{**point, "task": task.name if task.name in TASKS else TASKS[0]})
    recipe = RECIPES[method]
    t0 = time.perf_counter()
    if recipe.lm_fine_tuning:
        lm, vocab = fine_tuned_lm(task, checkpoint, config, seed=0, cache_dir=lm_cache_dir, progress=progress)
    else:
        lm, vocab, _ = load_pretrained(checkpoint, "awd-lstm")
    lm_seconds = time.perf_counter() - t0
    runtime.seed_everything(seed)
    encoder_model = AWDLSTM(lm.cfg.scale_dropouts(config.drop_mult))
    if recipe.pretrained:
        encoder_model.load_state_dict(lm.state_dict())
    model = ULMFiTClassifier(encoder_model.encoder, task.n_classes)

    texts, labels = task.train.texts, task.train.labels
    n = len(idx)
    # a stage ("epoch") of gradual unfreezing sees the sample often enough to take min_steps_per_epoch steps
    repeat = grid.repeats_per_epoch(n, config.batch_size, config.min_steps_per_epoch)
    train = ClassificationBatches(encode_texts([texts[i] for i in idx], vocab) * repeat,
                                  [labels[i] for i in idx] * repeat, batch_size=config.batch_size, seed=seed)
    test_texts, test_labels = list(task.test.texts), list(task.test.labels)
    if config.max_test is not None and config.max_test < len(test_labels):
        # a fixed stratified subset (the split is in file order, which is sorted by rating for rt)
        keep = tasks.stratified_sample(test_labels, config.max_test, seed=0)
        test_texts, test_labels = [test_texts[i] for i in keep], [test_labels[i] for i in keep]
    test = ClassificationBatches(encode_texts(test_texts, vocab), test_labels, batch_size=64, shuffle=False)

    if valid_curve and not task.name.endswith("-valid"):
        raise UsageError(f"valid_curve scores the test split every epoch: use it on {task.name}'s "
                         f"validation task (Task.validation()), never on the real test split")
    # a short point starts over: a checkpoint after every epoch would cost it more than a restart loses
    partial = (point_resume_dir(task, idx, seed, point, checkpoint, method, valid_curve, resume_dir)
               if config.clf_epochs * len(train) >= RESUME_MIN_STEPS else None)
    learner = fine_tune_classifier(model, train, test if valid_curve else None, epochs=config.clf_epochs,
                                   lr=config.clf_lr,
                                   gradual_unfreezing=recipe.gradual_unfreezing,
                                   discriminative=recipe.discriminative, stlr=recipe.stlr,
                                   cycle_per_stage=config.cycle_per_stage, stage_lr_decay=config.stage_lr_decay,
                                   callbacks=callbacks, progress=progress,
                                   checkpoint_dir=partial, checkpoint_every=50)
    curve = [{"epoch": i + 1, "train_loss": e["train_loss"],
              **({"valid_loss": e["valid_loss"], "valid_error": 1 - e["accuracy"]} if valid_curve else {})}
             for i, e in enumerate(learner.history.epochs)]
    preds, truth = predict(model, test)
    error = float((preds != truth).float().mean())     # as eval.classification.error_rate
    if partial is not None:
        shutil.rmtree(partial, ignore_errors=True)
    return {"accuracy": 1 - error, "balanced_accuracy": balanced_accuracy(preds, truth), "n_test": len(test_labels), "curve": curve, "recipe": asdict(recipe),
            "lm_seconds": round(lm_seconds, 2), "pretrained": provenance.shown_path(checkpoint),
            "pretrained_sha256": grid.file_sha256(checkpoint)}


def default_checkpoint(prof: str | None = None) -> Path:
    return provenance.REPO_ROOT / "checkpoints" / f"awd-lstm-{prof or runtime.profile()}.pt"


for _name in RECIPES:
    grid.register(grid.Method(_name, "sample-efficiency", functools.partial(train_classifier, method=_name),
                              lambda prof, _name=_name: settings(SIZES[prof], _name), checkpoint=default_checkpoint,
                              kinds=("sentence",), label=_name))


def cached_point(task: str, n_labels: int | str, method: str, seed: int, pretrained_path: str | Path,
                 config: SampleEfficiencyConfig | None = None, *, profile: str | None = None,
                 results_dir: str | Path | None = None) -> dict[str, Any] | None:
    """The cached row of this point if one exists for this checkpoint and config, else None (no training).
    `profile`: whose cache to read (default: the current profile's)."""
    if not Path(pretrained_path).exists():
        return None
    prof = profile or runtime.profile()
    return grid.cached_point(task, n_labels, method, seed, prof, checkpoint=pretrained_path,
                             settings=settings(config or SIZES[prof], method), results_dir=results_dir)


def run_point(task: str, n_labels: int | str, method: str, seed: int, pretrained_path: str | Path,
              config: SampleEfficiencyConfig | None = None, *, force: bool = False, progress: bool | str = False,
              callbacks: Sequence = (), results_dir: str | Path | None = None,
              lm_cache_dir: str | Path | None = None, resume_dir: str | Path | None = None) -> dict[str, Any]:
    """Train one classifier (or read it from the cache) and return its row ({"error", "accuracy", "curve", ...})."""
    config = config or SIZES[runtime.profile()]
    return grid.run_point(task, n_labels, method, seed, force=force, progress=progress, callbacks=callbacks,
                          threads=config.threads, checkpoint=pretrained_path, settings=settings(config, method),
                          results_dir=results_dir, lm_cache_dir=lm_cache_dir, resume_dir=resume_dir)


def run_grid(config: SampleEfficiencyConfig, pretrained_path: str | Path, label_counts: Sequence | None = None,
             methods: Sequence[str] | None = None, seeds: Sequence[int] | None = None, **kwargs) -> list[dict[str, Any]]:
    """Every (label count, method, seed) point of `config` (or of the given subsets), reusing cached points."""
    return [run_point(config.task, n, m, s, pretrained_path, config, **kwargs)
            for n in label_counts or config.label_counts for m in methods or config.methods
            for s in (seeds if seeds is not None else config.seeds)]


def cached_rows(task: str, pretrained_path: str | Path, config: SampleEfficiencyConfig | None = None,
                methods: Sequence[str] | None = None, results_dir: str | Path | None = None,
                profile: str | None = None, label_counts: Sequence | None = None) -> list[dict[str, Any]]:
    """Every cached point of `task` for this checkpoint and config (what a widget shows at once).
    `profile`: read that profile's grid (e.g. the shipped laptop grid while running at smoke)."""
    config = config or SIZES[profile or runtime.profile()]
    rows = [cached_point(task, n, m, s, pretrained_path, config, profile=profile, results_dir=results_dir)
            for n in label_counts or config.label_counts for m in methods or config.methods for s in config.seeds]
    return [r for r in rows if r is not None]


summarize = grid.summarize


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


METHOD_STYLE = {# the league (experiments/league.py): ELMo's features beside the fine-tuned networks
                "pooled-elmo": dict(color="teal", marker="h", label="ELMo features, pooled + linear head"),
                "bilstm-elmo": dict(color="teal", marker="H", label="ELMo features, biLSTM tagger (§3.3)"),
                "scratch": dict(color="tab:gray", marker="o", label="from scratch"),
                "ulmfit-supervised": dict(color="tab:blue", marker="s", label="ULMFiT, supervised (no LM fine-tuning)"),
                "ulmfit": dict(color="tab:red", marker="^", label="ULMFiT, semi-supervised (all three stages)"),
                # the same chart in later chapters (experiments/gpt_finetune.py, bert_finetune.py)
                "gpt-scratch": dict(color="tab:cyan", marker="v", label="GPT network from scratch"),
                "gpt": dict(color="tab:green", marker="D", label="GPT, pretrained and fine-tuned"),
                "bert-scratch": dict(color="tab:pink", marker="<", label="BERT network from scratch"),
                "bert-ltr": dict(color="indigo", marker=">", label="BERT's left-to-right twin, fine-tuned"),
                "bert-mlm": dict(color="darkgoldenrod", marker="P", label="BERT without NSP, fine-tuned"),
                "bert": dict(color="tab:orange", marker="*", label="BERT (MLM + NSP), fine-tuned")}


def plot_curves(summary: Sequence[dict[str, Any]], task: str, ax=None, points: Sequence[dict] = (),
                baselines: Sequence[dict[str, Any]] = ()):
    """Test error vs number of labels (log x), mean over seeds with a ±1 std band: the paper's Figure 3.
    `points`: single runs drawn as dots on top (e.g. one trained live). `baselines`: summary rows of
    the simple baselines (grid.summarize of majority, bow-lr, glove-lr, sgns-lr), drawn dashed and
    labelled "(baseline)", so every method is seen beside them."""
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
    baseline_colors = {"majority": "k", "bow-lr": "tab:purple", "glove-lr": "tab:olive", "sgns-lr": "tab:brown"}
    for method in dict.fromkeys(r["method"] for r in baselines if r["task"] == task):  # in the order given
        rows = sorted((r for r in baselines if r["task"] == task and r["method"] == method), key=lambda r: r["n_labels"])
        ax.plot([r["n_labels"] for r in rows], [100 * r["error"] for r in rows], ls="--", lw=1, marker="x",
                color=baseline_colors.get(method, "tab:cyan"), label=f"{method} (baseline)")
    for p in points:
        ax.scatter([p["n_labels"]], [p["error"] * 100], s=90, facecolors="none", linewidths=2,
                   edgecolors=METHOD_STYLE.get(p["method"], {}).get("color", "k"), zorder=5)
    ax.set_xscale("log")
    ax.set_xlabel("labelled training examples (log scale)")
    ax.set_ylabel("test error (%)")
    ax.set_title(f"{task}: error vs labels")
    ax.grid(alpha=0.3, which="both")
    if ax.get_legend_handles_labels()[0]:  # an empty grid (a widget before any point) draws no legend
        ax.legend(fontsize=8)
    return ax


def best_method(summary: Sequence[dict[str, Any]], task: str, n_labels: int,
                methods: Sequence[str] | None = None) -> dict[str, Any] | None:
    """The summary row with the lowest mean error on `task` at `n_labels` (among `methods`, default
    every method in `summary`, baselines included); None when none of them ran at that count."""
    rows = [r for r in summary if r["task"] == task and r["n_labels"] == n_labels
            and (methods is None or r["method"] in methods)]
    return min(rows, key=lambda r: r["error"], default=None)


def ablation_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the ablation table: per (task, method), the mean and std error over seeds, and the
    change from full ULMFiT (positive = worse without the trick)."""
    summary = summarize(rows)
    full = {(r["task"], r["n_labels"]): r["error"] for r in summary if r["method"] == "ulmfit"}
    return [{**r, "delta": r["error"] - full[(r["task"], r["n_labels"])] if (r["task"], r["n_labels"]) in full else None}
            for r in sorted(summary, key=lambda r: (r["task"], ABLATIONS.index(r["method"])
                                                    if r["method"] in ABLATIONS else 99))]


# ----------------------------------------------------------------------------- the command line

def checkpoint_folders(methods: Sequence[str], checkpoint: Path | None, profile: str,
                       literal: bool = False) -> dict[str, Path]:
    """method -> where its points go when `checkpoint` (a user's --checkpoint) replaces its own
    (grid.own_checkpoint_folder; the literal ULMFiT grid's in a folder of its own). Every method that starts
    from a checkpoint must take this one's kind (else one line, exit 2), and at least one method must use it."""
    if checkpoint is None:
        return {}
    users = [m for m in methods if grid.checkpoint_kind(grid.method(m))]
    if not users:
        raise UsageError(f"--checkpoint {checkpoint}: none of --methods {','.join(methods)} fine-tunes a checkpoint")
    folders = {}
    for m in users:
        grid.check_checkpoint(grid.method(m), checkpoint)
        folder = grid.own_checkpoint_folder(grid.method(m), checkpoint, profile)
        if folder is not None and literal and m in RECIPES:
            folder = folder.parent.with_name(LITERAL_DIR.name) / folder.name
        if folder is not None:
            folders[m] = folder
    return folders


def cli_run(args, name: str) -> int:
    prof = runtime.profile()
    task = tasks.from_args(args)
    config = SIZES[prof]
    if args.recipe:
        config = replace(config, tuned=args.recipe == "chosen")
    # the literal grid never sits beside the chosen grid's files of the same names (baselines keep their folder)
    recipe_dir = args.results_dir or (LITERAL_DIR if args.recipe == "literal" else None)
    checkpoint_path = args.checkpoint or default_checkpoint(prof)
    labels = grid.parse_labels(args.labels) if args.labels else (
        list(config.label_counts) if name == "sample-efficiency" else [ABLATION_LABELS[prof]])
    methods = args.methods.split(",") if name == "sample-efficiency" else list(ABLATIONS)
    seeds = list(range(args.seeds)) if args.seeds else list(config.seeds)
    if args.seeds is not None and args.seeds < 1:
        raise UsageError(f"--seeds {args.seeds}: use 1 or more")
    for m in methods:   # unknown names, and methods for another kind of task, fail before anything trains
        if task.kind not in grid.method(m).kinds:
            raise UsageError(f"method {m!r} handles {'/'.join(grid.method(m).kinds)} tasks, and {task.name} is a "
                             f"{task.kind} task")
    folders = checkpoint_folders(methods, args.checkpoint, prof, args.recipe == "literal")
    for m in methods:   # a missing checkpoint fails before anything trains, not after the methods before it
        own = checkpoint_path if m in RECIPES else (args.checkpoint if grid.checkpoint_kind(grid.method(m)) else None)
        grid._checkpoint(grid.method(m), prof, own)
    rows = []
    for n in labels:
        label_count(n, len(task.train), f" for {task.name}")
    for n in labels:
        for m in methods:
            for seed in seeds:
                if m in RECIPES:
                    row = grid.run_point(task, n, m, seed, force=args.force, threads=config.threads,
                                         checkpoint=checkpoint_path, settings=settings(config, m),
                                         results_dir=args.results_dir or folders.get(m) or recipe_dir)
                else:
                    own = args.checkpoint if grid.checkpoint_kind(grid.method(m)) else None
                    row = grid.run_point(task, n, m, seed, force=args.force, checkpoint=own,
                                         results_dir=args.results_dir or folders.get(m))
                rows.append(row)
                print(f"{task.name} n={row['n_labels']:<6d} {m:20s} seed {seed}: error {row['error']:.3f} "
                      f"({row['seconds']:.0f} s)", flush=True)
    summary = summarize(rows)
    if name == "ulmfit-ablations":
        for r in ablation_table(rows):
            print(f"{r['task']} n={r['n_labels']} {r['method']:22s} error {r['error']:.3f} ± {r['error_std']:.3f} "
                  f"(Δ {r['delta']:+.3f})")
        keys = " ".join(f"{r['method'].replace('ulmfit-', '').replace('ulmfit', 'full').replace('-', '_')}_err={r['error']:.3f}"
                        for r in ablation_table(rows))
        print(f"ulmfit-ablations: {task.name} labels={labels[0]} {keys}")
        return 0
    first = label_count(labels[0], len(task.train))
    if (task.user or folders) and args.results_dir is None:
        print(f"points cached under {grid.user_results()} (a user's task or checkpoint stays out of the repository)")
    print(f"sample-efficiency: {task.name} labels={labels[0]} {grid.summary_keys(summary, first)} seeds={len(seeds)}")
    return 0
