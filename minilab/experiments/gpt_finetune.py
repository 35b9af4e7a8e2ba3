"""Chapter 06's fine-tuning experiment: GPT-1 (Radford et al. 2018, §3.2-3.3) on the shared tasks,
against the same network from a random init, through the one grid runner.

    gpt           the pretrained decoder (checkpoints/gpt-<profile>.pt) + GPTClassifier, L2 + 0.5 · L1
    gpt-scratch   the same network from random weights (the paper's Table 5 "no pre-training"), its own
                  fine-tuning settings chosen the same way
    gpt-no-aux    pretrained, without the auxiliary LM loss (λ = 0; Table 5 "w/o aux LM")

    from minilab.experiments import grid
    rows = grid.run_grid("trec", ["gpt-scratch", "gpt"], [100, 1000, "all"], seeds=[0, 1, 2])

Defaults are the paper's (§4.1: LR 6.25e-5, batch 32, 3 epochs, warm-up over 0.2 %, λ = 0.5),
except what `FINE_TUNING` says was chosen on validation splits carved from the training labels
(`Task.validation()`, `experiment gpt-recipe`), never on the test split. Small samples are repeated within an epoch so
each epoch takes at least `min_steps_per_epoch` steps (as chapter 04's grid does).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from minilib import runtime, tasks
from minilab import provenance
from minilab.experiments import grid, store


@dataclass(frozen=True)
class GPTFineTuneConfig:
    lr: float = 6.25e-5               # §4.1
    epochs: int = 3                   # §4.1: "3 epochs of training was sufficient for most cases"
    batch_size: int = 32              # §4.1
    warmup: float = 0.002             # §4.1: linear warm-up over 0.2 % of training, then linear decay
    lm_coef: float = 0.5              # λ of eq. 5 (§4.1); 0 drops the auxiliary LM loss
    pretrained: bool = True           # False: the same network from random init (gpt-scratch)
    min_steps_per_epoch: int = 20     # small samples are repeated so an epoch takes at least this many steps
    max_test: int | None = None       # score a fixed stratified subset of the test split (smoke)


# Settings a candidate may add beyond GPTFineTuneConfig's (the factors chapter 06 swaps between GPT and its twin);
# absent, a point is keyed as before they existed. head: "linear" (GPT-1's W_y) | "pooler" (BERT's dense · tanh);
# new_tokens: "random" (GPT-1's new start/delim/extract embeddings) | "eos" (each starts as <|endoftext|>'s).
FACTORS = ("head", "new_tokens")
FACTOR_TABLE = store.register("gpt-factors", "labels", "seeds")   # GPT against its twin: tools/gpt_factors.py

SIZES = {"smoke": GPTFineTuneConfig(epochs=1, batch_size=16, min_steps_per_epoch=4, max_test=200),
         "laptop": GPTFineTuneConfig(),
         "full": GPTFineTuneConfig()}
METHODS = {"gpt": {}, "gpt-scratch": {"pretrained": False}, "gpt-no-aux": {"lm_coef": 0.0}, "gpt-tapt": {}}
LABELS = {"gpt": "GPT (pretrained, fine-tuned)", "gpt-scratch": "GPT from scratch", "gpt-no-aux": "GPT without aux. LM loss",
          "gpt-tapt": "GPT + in-domain LM stage"}
TAPT_METHODS = ("gpt-tapt",)    # gpt after the in-domain stage (experiments/tapt.py): its settings join the key

# The paper's settings were tuned for a 117M-parameter model and datasets of thousands of examples;
# ours is 50× smaller and sees 100 labels. Each candidate changes GPTFineTuneConfig; every method
# trains under each on the task's validation task (10 % of the training labels held out, stratified,
# seed 0), the held-out error after each epoch in its curve. The real test split is never read.
CANDIDATES: dict[str, dict[str, Any]] = {
    "the paper's (LR 6.25e-5, 3 epochs)": {},
    "LR 2.5e-4": {"lr": 2.5e-4},
    "LR 1e-3": {"lr": 1e-3},
    "LR 2.5e-4, 10 epochs": {"lr": 2.5e-4, "epochs": 10},
    # the paper's Table 5: the auxiliary LM loss helped its larger datasets, not the smaller ones
    "LR 2.5e-4, 10 epochs, no aux LM": {"lr": 2.5e-4, "epochs": 10, "lm_coef": 0.0},
    # BERT's chosen recipe (experiments/bert_finetune.py: LR 1e-3, 10 epochs, batch 32, warm-up over 10 %), which
    # its left-to-right twin fine-tunes by; with and without the auxiliary loss, and with the twin's other parts
    "BERT's (LR 1e-3, 10 epochs, warm-up 10 %)": {"lr": 1e-3, "epochs": 10, "warmup": 0.1},
    "BERT's, no aux LM": {"lr": 1e-3, "epochs": 10, "warmup": 0.1, "lm_coef": 0.0},
    "BERT's, pooler head": {"lr": 1e-3, "epochs": 10, "warmup": 0.1, "head": "pooler"},
    "BERT's, tokens from eos": {"lr": 1e-3, "epochs": 10, "warmup": 0.1, "new_tokens": "eos"},
    "BERT's, tokens from eos, no aux LM": {"lr": 1e-3, "epochs": 10, "warmup": 0.1, "new_tokens": "eos",
                                           "lm_coef": 0.0},
    "LR 2.5e-4, 10 epochs, tokens from eos": {"lr": 2.5e-4, "epochs": 10, "new_tokens": "eos"},
}
# What `experiment gpt-recipe` chose for each method on trec's and rt's validation tasks (lowest held-out
# error averaged over both tasks and the label counts searched, gpt among the candidates that keep the auxiliary
# loss, `choose`; results/gpt-recipe/, re-read by a test).
# gpt-no-aux is gpt's recipe without the auxiliary loss. Smoke keeps the paper's: it checks plumbing.
FINE_TUNING = {"gpt": "LR 2.5e-4, 10 epochs", "gpt-scratch": "LR 2.5e-4, 10 epochs, no aux LM"}
FINE_TUNING["gpt-no-aux"] = FINE_TUNING["gpt-tapt"] = FINE_TUNING["gpt"]
RECIPE_METHODS = ("gpt-scratch", "gpt")     # the methods FINE_TUNING is searched for; the others take gpt's
RECIPE_TASKS = ("trec", "rt")


def paper_config(method: str, profile: str) -> GPTFineTuneConfig:
    """The method under the paper's fine-tuning settings (the profile's sizes)."""
    return replace(SIZES[profile], **METHODS[method])


def method_config(method: str, profile: str) -> GPTFineTuneConfig:
    """The method as the grid runs it: the paper's settings with the candidate chosen for it."""
    config = paper_config(method, profile)
    return config if profile == "smoke" else replace(config, **CANDIDATES[FINE_TUNING[method]])


def default_checkpoint(profile: str | None = None) -> Path:
    """The GPT the methods fine-tune (minilab/shipped.py): checkpoints/gpt-<profile>.pt, or its shipped branch
    gpt-<profile>-5x.pt once GPT has moved; smoke has no GPT of its own and fine-tunes the laptop one."""
    from minilab import shipped

    profile = profile or runtime.profile()
    return shipped.checkpoint("gpt", "laptop" if profile == "smoke" else profile)


def recipe_checkpoint(profile: str | None = None) -> Path:
    """checkpoints/gpt-<profile>.pt, the recipe run, whichever GPT ships: gpt-scratch reads its tokenizer and shape,
    the flywheel and the zero-shot study its own snapshots and weights."""
    from minilab import shipped

    profile = profile or runtime.profile()
    return shipped.recipe("gpt", "laptop" if profile == "smoke" else profile)


def _word_pieces(tok, words: list[str]) -> list[list[int]]:
    """Each word's BPE ids as GPT reads running text: the first word bare, every later one after a space."""
    return [tok.encode(w if i == 0 else " " + w) for i, w in enumerate(words)]


@torch.no_grad()
def tagging_accuracy(model, batches) -> float:
    """Share of the scored words (those that fit the context) whose tag the tagger gets right."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device     # batches come on the CPU, as in eval.classification.predict
    right = total = 0
    for ids, lengths, ends, tags in batches:
        pred = model(ids.to(device), lengths.to(device), ends.to(device)).argmax(-1).cpu()
        scored = ends >= 0
        right += int((pred == tags)[scored].sum())
        total += int(scored.sum())
    model.train(was_training)
    return right / max(total, 1)


def train_gpt_classifier(task: tasks.Task, idx, seed: int, settings: dict, checkpoint, *, progress=False,
                         callbacks=(), valid_curve: bool = False, **_) -> dict[str, Any]:
    """One point: GPTClassifier (GPTTagger for a token task) on task.train[idx], scored once on task.test.
    The checkpoint gives the tokenizer and the architecture (and, when pretrained, the weights)."""
    from minilib.models.gpt import GPT, GPTClassifier, GPTTagger
    from minilib.models.pretrained import load_pretrained
    from minilib.recipes.gpt import fine_tune_gpt

    from minilab.experiments.tapt import apply_stage

    checkpoint, settings = apply_stage(task, checkpoint, settings)   # gpt-tapt: the in-domain stage first
    factors = {k: settings[k] for k in FACTORS if k in settings}
    config = GPTFineTuneConfig(**{k: v for k, v in settings.items() if k not in FACTORS})
    pre = load_pretrained(checkpoint, "gpt")
    runtime.seed_everything(seed)
    gpt = pre.model if config.pretrained else GPT(pre.model.cfg)
    new_tokens_from = pre.vocab.eos_id if factors.get("new_tokens") == "eos" else None
    model = (GPTTagger if task.kind == "token" else GPTClassifier)(
        gpt.train(), task.n_classes, lm_coef=config.lm_coef, head=factors.get("head", "linear"),
        new_tokens_from=new_tokens_from)
    fit = lambda train, valid, score: fine_tune_gpt(model, train, config.epochs, config.lr, config.warmup, valid=valid,
                                                    score=score, callbacks=callbacks, progress=progress)
    result = fine_tune_point(task, idx, seed, config, model, pre.vocab, lambda words: _word_pieces(pre.vocab, words),
                             fit, valid_curve)
    return {**result, "pretrained": provenance.shown_path(checkpoint) if config.pretrained else None}


def fine_tune_point(task: tasks.Task, idx, seed: int, config, model, tok, word_pieces, fit, valid_curve: bool = False):
    """What every fine-tuned Transformer point does (GPT here, BERT in chapter 07): `model`'s input
    transformation (`transform`, or `transform_words` for a token task) over task.train[idx] (small samples
    repeated to `config.min_steps_per_epoch` steps an epoch), `fit(train, valid, score)` and one score of
    task.test (a fixed subset when `config.max_test`). `word_pieces(words)`: each word's subword ids."""
    from minilib.data.batching import ClassificationBatches, TaggingBatches
    from minilib.eval.classification import balanced_accuracy, error_rate, predict

    tagging = task.kind == "token"

    def batches(split, which, **kw):
        if tagging:
            items = []
            for i in which:
                ids, at = model.transform_words(word_pieces(split.texts[i]))
                items.append((ids, at, split.labels[i][:len(at)]))
            return TaggingBatches(items, pad_id=tok.pad_id, **kw)
        texts = [split.texts[i] for i in which]
        seqs = ([model.transform(tok.encode(a), tok.encode(b)) for a, b in texts] if task.kind == "pair"
                else [model.transform(tok.encode(t)) for t in texts])
        return ClassificationBatches(seqs, [split.labels[i] for i in which], pad_id=tok.pad_id, **kw)

    idx = list(idx)
    repeat = grid.repeats_per_epoch(len(idx), config.batch_size, config.min_steps_per_epoch)
    train = batches(task.train, idx * repeat, batch_size=config.batch_size, seed=seed)
    test_idx = list(range(len(task.test)))
    if config.max_test is not None and config.max_test < len(test_idx):
        test_idx = (np.random.default_rng(0).permutation(len(test_idx))[:config.max_test].tolist() if tagging
                    else tasks.stratified_sample(task.test.labels, config.max_test, seed=0).tolist())
    test = batches(task.test, test_idx, batch_size=64, shuffle=False)
    if valid_curve and not task.name.endswith("-valid"):
        raise runtime.UsageError(f"valid_curve scores the test split every epoch: use it on {task.name}'s "
                                 f"validation task (Task.validation()), never on the real test split")
    t0 = time.perf_counter()
    score = tagging_accuracy if tagging else (lambda m, b: 1 - error_rate(m, b))
    learner = fit(train, test if valid_curve else None, score)
    curve = [{"epoch": i + 1, **{k: e[k] for k in ("train_loss", "valid_error") if k in e}}
             for i, e in enumerate(learner.history.epochs)]
    if tagging:
        scored = {"accuracy": tagging_accuracy(model, test)}
    else:
        preds, truth = predict(model, test)
        scored = {"accuracy": 1 - float((preds != truth).float().mean()), "balanced_accuracy": balanced_accuracy(preds, truth)}
    return {**scored, "n_test": len(test_idx), "curve": curve,
            "train_seconds": round(time.perf_counter() - t0, 2)}


def method_settings(method: str, profile: str) -> dict[str, Any]:
    """What defines the method in the grid's key: its fine-tuning config, and for gpt-tapt the in-domain stage's."""
    from minilab.experiments.tapt import with_stage

    settings = asdict(method_config(method, profile))
    return with_stage(settings, profile) if method in TAPT_METHODS else settings


for _name in METHODS:
    grid.register(grid.Method(_name, "gpt", train_gpt_classifier,
                              lambda prof, _name=_name: method_settings(_name, prof),
                              checkpoint=recipe_checkpoint if _name == "gpt-scratch" else default_checkpoint,
                              kinds=("sentence", "pair", "token"), label=LABELS[_name]))


# ----------------------------------------------------------------------------- choosing the recipe
SEARCH_LABELS = {"smoke": (20,), "laptop": (100, 1000), "full": (100, grid.ALL)}
SEARCH_FOLDER = store.folder("gpt-recipe")


def search(task: str, methods=RECIPE_METHODS, seed: int = 0, label_counts=None, cached_only: bool = False,
           profile: str | None = None, log=print, candidates: dict[str, dict[str, Any]] | None = None, *,
           checkpoint: str | Path | None = None, results_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """Every (label count, method, candidate) point on `task`'s validation task (grid.search_recipes);
    `candidates`: some of CANDIDATES (default: all); `checkpoint`, `results_dir`: another GPT, searched in another
    folder than SEARCH_FOLDER."""
    prof = profile or runtime.profile()
    return grid.search_recipes(task, methods, candidates or CANDIDATES, lambda m, p: asdict(paper_config(m, p)),
                               results_dir or SEARCH_FOLDER, label_counts or SEARCH_LABELS[prof], seed, cached_only,
                               prof, log, checkpoint=checkpoint)


slug = grid.slug
KEEPS_AUX_LM = ("gpt",)     # methods whose recipe keeps the auxiliary LM loss, whatever the search prefers


def choose(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """grid.best_recipe, with gpt chosen among the candidates that keep the auxiliary LM loss: GPT-1 fine-tunes on
    L2 + λ·L1 (§3.2), and whether λ = 0 does better is gpt-no-aux's question (Table 5), asked on the test split,
    not a choice the validation search may make for gpt (it would make the two methods one)."""
    return grid.best_recipe([r for r in rows if not (r["method"] in KEEPS_AUX_LM
                                                     and CANDIDATES[r["candidate"]].get("lm_coef") == 0.0)])


def chosen_recipe(profile: str | None = None, **where) -> dict[str, str]:
    """choose() over the cached search of every task in RECIPE_TASKS (what FINE_TUNING should say); `where`:
    search()'s checkpoint and results_dir."""
    return choose([r for t in RECIPE_TASKS for r in search(t, cached_only=True, profile=profile, **where)])


def cli_run(args, name: str) -> int:
    task, where = tasks.from_args(args), grid.search_place(args)
    methods = [m.strip() for m in args.methods.split(",")]
    rows = search(task, methods, label_counts=grid.parse_labels(args.labels) if args.labels else None,
                  candidates=grid.some_candidates(CANDIDATES, args.candidates) if args.candidates else None, **where)
    print(f"{name}: {task.name} " + " ".join(f"{m}={slug(c)}" for m, c in choose(rows).items()))
    if task.name in RECIPE_TASKS:
        both = chosen_recipe(**where)
        print(f"{name}: over {'+'.join(RECIPE_TASKS)} (cached) " + " ".join(f"{m}={slug(c)}" for m, c in both.items())
              + ("" if all(FINE_TUNING[m] == c for m, c in both.items()) else "  (FINE_TUNING says otherwise: update it)"))
    return 0
