"""The compute axis: each era's claim measured along pretraining compute, not at one budget.

At the laptop budget (~1 CPU-hour a model) several of the book's claims fail. One variable explains most
of the gap to the papers: pretraining compute, C ≈ 6·N·D (Kaplan et al. 2020 §2.1). So each pretrained model
has one long run, `python -m minilib pretrain gpt --budget 8` (and `pretrain bert --objective mlm|ltr
--budget 8`), the laptop shape trained 8x the laptop steps with the LR held until a 20 % cool-down
(recipes/gpt.at_budget), which keeps an fp16 snapshot every 1/8 of the laptop steps. At each budget mark
x in BUDGETS (x the laptop compute) the snapshot becomes a loadable checkpoint (`build_checkpoint`:
.cache/compute-axis/, never in git, deterministic bytes) whose held-out loss is measured on the weights as
saved, and the run's method fine-tunes it at 100 labels with 3 seeds through the one grid runner
(results/compute-axis/<run>/<x>x/). A claim compares two methods at every mark:

    effect = error(the comparison) - error(the claim's winner)      (> 0: the paper's direction)

    gpt_vs_scratch        gpt-scratch  - gpt from the snapshot          trec, rt, pos   (GPT-1 §5.2, Table 5)
    mlm_vs_ltr            bert-ltr     - bert-mlm, both at the mark     pos             (BERT §5.1, Table 5, C.1)
    pretrained_vs_static  the better of glove-lr / sgns-lr - gpt        rt              (the static vectors read 6B
                                                                                          and ~7M tokens)

and is summarised by its first and last effect, a least-squares slope per decade of compute and, where the
slope points the paper's way, the compute at which the fitted line crosses 0 (an extrapolation past the last
mark). The paper's own pretraining compute is marked on the same axis (`PAPER_MARKS`). Each run's shipped
branch (checkpoints/<stem>-5x.pt, cooled down from the long run's 4x weights) is one more point on the axis
(`shipped_mark`, its points in results/compute-axis/<run>/5x/), shown beside the trend, never fitted into it:
the marks are the long run's uncooled weights, the branch a finished model.

    python -m minilib experiment compute-axis --dry-run      # which marks exist, what is cached, the CPU cost
    python -m minilib experiment compute-axis                # results/compute-axis-<profile>.json
    compute-axis: claim=gpt_vs_scratch task=trec budgets=6 max_budget_x=4 effect_first=-0.050 ...
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from minilib import runtime, tasks
from minilab import provenance
from minilab.experiments import grid, store
from minilab.experiments.compute import paper
from minilab.story import cited     # the book cites a paper by its venue's year
from minilab import shipped as shipped_models
from minilib.runtime import UsageError

RESULT = store.register("compute-axis", "profile", "labels", "seeds", "run_budget")   # the summary's key
RESULTS_DIR = store.folder("compute-axis")            # the marks' points: results/compute-axis/<run>/<x>x/
CHECKPOINTS = shipped_models.CHECKPOINTS              # the recipe runs' and the shipped branches' checkpoints
CACHE_DIR = provenance.REPO_ROOT / ".cache" / "compute-axis"
SNAPSHOTS_ROOT = provenance.REPO_ROOT / ".cache" / "pretrain"
RUN_BUDGET = 8                                        # the long runs' length, x the laptop steps
# The shipped branches: a second run of each model, `pretrain ... --budget 5 --warm-start` the long run's
# newest kept snapshot (at or past 4x, where a 5x run's 20 % cool-down begins), so it cools the long run's stable
# weights down to a finished model (Hägele et al. 2024 §3: a cool-down branch off a constant-LR run).
SHIP_BUDGET = shipped_models.SHIP_BUDGET
BUDGETS = (1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8)           # the marks, x the laptop compute


@dataclass(frozen=True)
class Run:
    """One long pretraining run: the model `kind`, the BERT objective (None for GPT) and the grid method that
    fine-tunes its snapshots."""
    name: str
    kind: str
    method: str
    objective: str | None = None

    def config(self, profile: str):
        """The laptop (profile) run's pretraining config: its steps are 1x."""
        if self.kind == "gpt":
            from minilib.recipes.gpt import GPTPretrainConfig

            return GPTPretrainConfig.for_profile(profile)
        from minilib.recipes.bert import BERTPretrainConfig

        return BERTPretrainConfig.for_profile(profile, self.objective)

    @property
    def base(self) -> str:
        """The model's checkpoint name before the profile: gpt, bert, bert-mlm, bert-ltr."""
        return "gpt" if self.kind == "gpt" else f"bert-{self.objective}" if self.objective != "mlm+nsp" else "bert"

    def stem(self, profile: str, budget: float = RUN_BUDGET) -> str:
        """The run's checkpoint name, as `pretrain ... --budget 8` writes it: gpt-laptop-8x (`budget` 5: the
        shipped branch's, gpt-laptop-5x)."""
        return f"{self.base}-{profile}-{budget:g}x"

    def command(self, profile: str, budget: float = RUN_BUDGET) -> str:
        objective = "" if self.kind == "gpt" else f" --objective {self.objective}"
        return f"python -m minilib pretrain {self.kind} --profile {profile}{objective} --budget {budget:g} --threads 1"


RUNS = {"gpt": Run("gpt", "gpt", "gpt"),
        "bert-mlm": Run("bert-mlm", "bert", "bert-mlm", "mlm"),
        "bert-ltr": Run("bert-ltr", "bert", "bert-ltr", "ltr"),
        # no claim reads it: BERT itself, for Table 5's ablation at equal compute once the runs ship
        "bert": Run("bert", "bert", "bert", "mlm+nsp")}


@dataclass(frozen=True)
class Claim:
    """effect = error(comparison) - error(winner); `runs` are the long runs whose snapshots it reads."""
    name: str
    winner: str                  # a run's name: its method, from the snapshot at each mark
    comparison: tuple[str, ...]  # a run's name (at the same mark), or fixed methods (the best of them)
    tasks: tuple[str, ...]
    source: str

    @property
    def runs(self) -> tuple[str, ...]:
        return (self.winner,) + tuple(c for c in self.comparison if c in RUNS)


CLAIMS = (
    Claim("gpt_vs_scratch", "gpt", ("gpt-scratch",), ("trec", "rt", "pos", "sms"),
          "GPT-1 §5.2 and Table 5: without pretraining, -14.8 on average"),
    Claim("mlm_vs_ltr", "bert-mlm", ("bert-ltr",), ("pos",),
          "BERT §5.1, Table 5 and Appendix C.1 (Fig. 5): the masked LM beats left-to-right"),
    Claim("pretrained_vs_static", "gpt", ("glove-lr", "sgns-lr"), ("rt", "sms"),
          "GPT-1 Table 2-3 and BERT Table 1 against models built on static vectors"),
)


# Each claim's paper, from the one ledger (experiments/compute.py: PAPERS), marked on the axis.
PAPER_MARKS = {"gpt_vs_scratch": paper("GPT-1 (estimate)"), "mlm_vs_ltr": paper("BERT-base"),
               "pretrained_vs_static": paper("GPT-1 (estimate)")}


@dataclass(frozen=True)
class ComputeAxisConfig:
    labels: int = 100
    seeds: tuple[int, ...] = (0, 1, 2)
    budgets: tuple[float, ...] = BUDGETS
    claims: tuple[str, ...] = tuple(c.name for c in CLAIMS)
    tasks: tuple[str, ...] | None = None        # None: each claim's own tasks

    def tasks_of(self, claim: Claim) -> tuple[str, ...]:
        return tuple(t for t in claim.tasks if self.tasks is None or t in self.tasks)

    def claims_run(self) -> list[Claim]:
        """The claims asked for that keep a task."""
        return [c for c in CLAIMS if c.name in self.claims and self.tasks_of(c)]


SIZES = {"smoke": ComputeAxisConfig(labels=20, seeds=(0,), budgets=(1 / 8, 1), claims=("gpt_vs_scratch",)),
         "laptop": ComputeAxisConfig(),
         "full": ComputeAxisConfig()}


# ----------------------------------------------------------------------------- marks: snapshots as checkpoints

@dataclass(frozen=True)
class Mark:
    run: str
    budget: float                 # x the laptop compute
    step: int
    tokens: int
    snapshot: Path


def built_path(run: Run, budget: float, profile: str, cache_dir: str | Path | None = None) -> Path:
    """Where build_checkpoint writes a mark: .cache/compute-axis/<stem>-<x>x.pt."""
    return Path(cache_dir or CACHE_DIR) / f"{run.stem(profile)}-{budget_name(budget)}.pt"


def budget_name(x: float) -> str:
    """1/8 -> '0.125x', 4 -> '4x' (folder and file names)."""
    return f"{x:g}x"


def mark_step(run: Run, profile: str, x: float) -> int:
    """The long run's step at x times the laptop compute: the snapshot nearest x (one every 1/8 of the laptop
    steps), and at x = RUN_BUDGET the run's last step, its cooled end, where it writes its last snapshot (1/8
    of the laptop steps is rounded, so 64 of them miss the end by a few steps)."""
    laptop = run.config(profile)
    long = laptop.at_budget(RUN_BUDGET)
    if x >= RUN_BUDGET:
        return long.steps
    return min(round(x * laptop.steps / long.eval_every) * long.eval_every, long.steps)


def snapshot_folder(run: Run, profile: str, snapshots_root: str | Path | None = None,
                    budget: float = RUN_BUDGET) -> Path:
    """Where the long run (`budget` 5: the shipped branch) writes its fp16 snapshots, step-NNNNNN.pt (the
    pretrainers' HeldOutCurve)."""
    return Path(snapshots_root or SNAPSHOTS_ROOT) / run.stem(profile, budget) / "snapshots"


def snapshot_path(run: Run, profile: str, step: int, snapshots_root: str | Path | None = None,
                  budget: float = RUN_BUDGET) -> Path:
    return snapshot_folder(run, profile, snapshots_root, budget) / f"step-{step:06d}.pt"


def latest_step(run: Run, profile: str, snapshots_root: str | Path | None = None,
                budget: float = RUN_BUDGET) -> int | None:
    """The step of the long run's (or the shipped branch's) newest snapshot (its training state is saved at the
    same steps), None before the first."""
    folder = snapshot_folder(run, profile, snapshots_root, budget)
    return max((int(f.stem.split("-")[1]) for f in folder.glob("step-*.pt")), default=None)


def last_step(run: Run, profile: str, budget: float = RUN_BUDGET) -> int:
    """The step a run of `budget` x the laptop compute ends at (where it writes checkpoints/<stem>.pt)."""
    return run.config(profile).at_budget(budget).steps


def step_tokens(run: Run, profile: str) -> int:
    """Tokens one step of the long run reads: the laptop batch of block-size windows."""
    return run.config(profile).batch_size * _block_size(run, profile)


def marks(run: Run, profile: str, budgets: Sequence[float] = BUDGETS,
          snapshots_root: str | Path | None = None) -> list[Mark]:
    """The budget marks whose snapshot the long run has written so far (the others are still to come)."""
    out = []
    for x in budgets:
        step = mark_step(run, profile, x)
        path = snapshot_path(run, profile, step, snapshots_root)
        if path.is_file():
            out.append(Mark(run.name, x, step, step * step_tokens(run, profile), path))
    return out


def _block_size(run: Run, profile: str) -> int:
    from minilib.models.bert import BERT_SIZES
    from minilib.models.gpt import GPT_SIZES

    return (GPT_SIZES if run.kind == "gpt" else BERT_SIZES)[profile]["block_size"]


def _model_and_tokenizer(run: Run, profile: str):
    from minilib.data.tokenizer import pretrained_tokenizer

    if run.kind == "gpt":
        from minilib.models.gpt import GPT, gpt_config

        tok = pretrained_tokenizer("bpe", profile)
        return GPT(gpt_config(tok.vocab_size, profile)), tok
    from minilib.models.bert import BERT, bert_config

    tok = pretrained_tokenizer("wordpiece", profile)
    return BERT(bert_config(tok.vocab_size, profile, run.objective)), tok


def held_out_loss(run: Run, model, tokenizer, profile: str) -> float:
    """The held-out nats per token the pretraining run itself reports, measured on `model` as it is: GPT's
    windows over the first valid_tokens of the valid split, BERT's fixed masked (or next-token) batches."""
    from minilib import data

    config = run.config(profile)
    if run.kind == "gpt":
        from minilib.eval.perplexity import windowed_nats
        from minilib.recipes.gpt import encode_documents

        ids = encode_documents(tokenizer, data.pretraining_corpus("valid"), max_tokens=config.valid_tokens)
        nats, n = windowed_nats(model, ids, model.cfg.block_size)
        return nats / n
    from minilib.data.mlm import document_level
    from minilib.recipes.bert import held_out_batches, held_out_scores

    batches = held_out_batches(tokenizer, document_level(data.pretraining_corpus("valid")), config,
                               model.cfg.block_size)       # as pretrain_bert draws them (document_level first)
    return held_out_scores(model, batches)["valid_nats_per_token"]


def build_checkpoint(mark: Mark, profile: str, cache_dir: str | Path | None = None) -> Path:
    """The mark's snapshot as a loadable checkpoint (the one pretrained format, the shipped tokenizer inside),
    written once to `cache_dir` (.cache/compute-axis/) and rebuilt only when the snapshot changed. Its meta
    holds only what it is made of and what was measured on it (no time, no commit), so a rebuild on the same
    machine writes the same bytes and the points cached for it keep their key."""
    from minilib.models.pretrained import file_sha256, load_half_state, save_pretrained, sidecar

    run = RUNS[mark.run]
    out = built_path(run, mark.budget, profile, cache_dir)
    made_of = {"snapshot": mark.snapshot.name, "snapshot_sha256": file_sha256(mark.snapshot)}
    if out.is_file() and sidecar(out).is_file():
        meta = json.loads(sidecar(out).read_text())
        if all(meta.get(k) == v for k, v in made_of.items()):
            return out
    model, tok = _model_and_tokenizer(run, profile)
    load_half_state(model, mark.snapshot)
    model.eval()
    save_pretrained(out, model, tok, {**made_of, "run": run.name, "command": run.command(profile),
                                      "budget_x": mark.budget, "step": mark.step, "tokens": mark.tokens,
                                      "valid_nats_per_token": held_out_loss(run, model, tok, profile)})
    return out


KEPT_DIR = provenance.REPO_ROOT / "checkpoints" / "compute-axis"


def kept_path(run: Run, profile: str, kept_dir: str | Path | None = None, budget: float = RUN_BUDGET) -> Path:
    """Where keep_latest writes the run's (`budget` 5: the shipped branch's) newest snapshot:
    checkpoints/compute-axis/<stem>-latest.pt."""
    return Path(kept_dir or KEPT_DIR) / f"{run.stem(profile, budget)}-latest.pt"


def kept_step(run: Run, profile: str, kept_dir: str | Path | None = None, budget: float = RUN_BUDGET) -> int | None:
    """The step of the run's (or branch's) kept snapshot (its JSON's), None without one."""
    from minilib.models.pretrained import sidecar

    meta = sidecar(kept_path(run, profile, kept_dir, budget))
    return json.loads(meta.read_text())["step"] if meta.is_file() else None


def keep_latest(run: Run, profile: str, snapshots_root: str | Path | None = None,
                kept_dir: str | Path | None = None, budget: float = RUN_BUDGET) -> Path | None:
    """The long run's (`budget` 5: the shipped branch's) newest snapshot as a checkpoint in
    checkpoints/compute-axis/<stem>-latest.pt, for git: the run's training state lives in .cache and may not
    outlast the machine, so a later session warm-starts from this file (`pretrain ... --budget X --warm-start` it)
    at the step its meta records. A warm-started run's own origin (its resumable state's "warm_start") goes into
    the meta too, so the chain stays traceable. None without snapshots."""
    from minilib.models.pretrained import file_sha256, load_half_state, save_pretrained
    from minilib.train import checkpoint

    step = latest_step(run, profile, snapshots_root, budget)
    if step is None:
        return None
    newest = snapshot_path(run, profile, step, snapshots_root, budget)
    state = newest.parents[1] / "fit-0.pt"
    curves = checkpoint.load(state)["callbacks"] if state.is_file() else {}
    origin = next((c["warm_start"] for c in curves.values() if c.get("warm_start")), None)
    laptop = run.config(profile)
    model, tok = _model_and_tokenizer(run, profile)
    load_half_state(model, newest)
    model.eval()
    out = kept_path(run, profile, kept_dir, budget)
    save_pretrained(out, model, tok, {
        "snapshot": newest.name, "snapshot_sha256": file_sha256(newest), "run": run.name,
        "command": run.command(profile, budget), "step": step, "budget_x": step / laptop.steps,
        "tokens": step * step_tokens(run, profile),
        "valid_nats_per_token": held_out_loss(run, model, tok, profile), **({"warm_start": origin} if origin else {})})
    return out


def shipped(profile: str, checkpoints: str | Path | None = None) -> list[dict[str, Any]]:
    """Each run's shipped branch (checkpoints/<base>-<profile>-5x.pt) beside the recipe's own run
    (<base>-<profile>.pt), read from their JSONs: {"run", "recipe", "shipped"}, each side {"checkpoint", "tokens",
    "valid_nats_per_token"} (the fp16 weights' held-out loss, as each run measured it) or None where the file is
    not there."""
    folder = Path(checkpoints or CHECKPOINTS)

    def side(stem: str) -> dict[str, Any] | None:
        path = folder / f"{stem}.json"
        if not path.is_file():
            return None
        m = json.loads(path.read_text())["metrics"]
        return {"checkpoint": f"{stem}.pt", "tokens": m["train_tokens_seen"],
                "valid_nats_per_token": m["valid_nats_per_token"]}

    return [{"run": name, "recipe": side(f"{run.base}-{profile}"), "shipped": side(run.stem(profile, SHIP_BUDGET))}
            for name, run in RUNS.items()]


def shipped_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One `shipped: run=… recipe_tokens=… recipe_nats=… shipped_tokens=… shipped_nats=…` line per run."""
    out = []
    for r in rows:
        fields = [f"run={r['run']}"]
        for side in ("recipe", "shipped"):
            s = r[side]
            fields += ([f"{side}_tokens={s['tokens']}", f"{side}_nats={s['valid_nats_per_token']:.3f}"] if s
                       else [f"{side}=none"])
        out.append("shipped: " + " ".join(fields))
    return out


def shipped_mark(run: Run, profile: str, checkpoints: str | Path | None = None) -> tuple[dict[str, Any], Path] | None:
    """The run's finished shipped branch (checkpoints/<stem>-5x.pt) as a mark row (as run() records the long
    run's, with "shipped": True) and its checkpoint; None where the branch has not shipped."""
    from minilib.models.pretrained import file_sha256

    path = Path(checkpoints or CHECKPOINTS) / f"{run.stem(profile, SHIP_BUDGET)}.pt"
    if not path.is_file():
        return None
    meta = json.loads(path.with_suffix(".json").read_text())
    m = meta["metrics"]
    return {"run": run.name, "budget_x": SHIP_BUDGET, "step": m["steps"], "tokens": m["train_tokens_seen"],
            "flops": 6 * _params(run, profile) * m["train_tokens_seen"],
            "valid_nats_per_token": m["valid_nats_per_token"], "checkpoint_sha256": file_sha256(path),
            "command": meta["command"], "shipped": True}, path


# ----------------------------------------------------------------------------- effects along the axis

def fit_trend(xs: Sequence[float], effects: Sequence[float]) -> dict[str, Any]:
    """Least squares of effect on log10(x): {"slope_per_decade", "slope_se" (its standard error, 3+ points),
    "intercept" (the effect at x = 1), "crossover_x": where the line reaches 0 moving the paper's way (slope > 0
    and the first effect below 0), else None, and "crossover_interval": [lo, hi] in x, the budgets where the fit's
    95 % confidence band holds 0 (hi None: the band still holds 0 at 10⁶× the last budget, so the data do not
    say where the line crosses)}."""
    lx, effects = np.log10(np.asarray(xs, dtype=float)), np.asarray(effects, dtype=float)
    if len(lx) < 2:
        return {"slope_per_decade": None, "slope_se": None, "intercept": None, "crossover_x": None,
                "crossover_interval": None}
    slope, intercept = np.polyfit(lx, effects, 1)
    crossover = 10 ** (-intercept / slope) if slope > 0 and effects[0] < 0 else None
    slope_se = interval = None
    if len(lx) >= 3:
        from scipy import stats as st

        n, mean, sxx = len(lx), lx.mean(), ((lx - lx.mean()) ** 2).sum()
        s2 = ((effects - (intercept + slope * lx)) ** 2).sum() / (n - 2)
        slope_se = float(np.sqrt(s2 / sxx))
        if crossover is not None and s2 == 0:                          # a perfect line: the point itself
            interval = [float(crossover), float(crossover)]
        elif crossover is not None:
            g = np.linspace(lx.min(), lx.max() + 6, 4001)             # from the first budget to 10⁶× the last
            half = st.t.ppf(0.975, n - 2) * np.sqrt(s2 * (1 / n + (g - mean) ** 2 / sxx))
            holds = np.abs(intercept + slope * g) <= half               # 0 inside the band
            if holds.any():
                inside = g[holds]
                interval = [float(10 ** inside.min()), None if holds[-1] else float(10 ** inside.max())]
    return {"slope_per_decade": float(slope), "slope_se": slope_se, "intercept": float(intercept),
            "crossover_x": None if crossover is None else float(crossover), "crossover_interval": interval}


EXTRAPOLATION_X = 10    # a crossover is printed as a finding only when its interval closes within 10× the last budget


def crossover_text(line: dict[str, Any]) -> str:
    """Where the fitted line crosses 0, with its 95 % interval, or that it does not within EXTRAPOLATION_X× the
    largest budget measured (the interval does not close there): never a bare extrapolated number."""
    last = line["series"][-1]["budget_x"]
    interval = line.get("crossover_interval")
    if line["crossover_x"] is None:
        return "the fitted line does not cross 0 in the paper's direction"
    if interval is None or interval[1] is None or interval[1] > EXTRAPOLATION_X * last:
        lo = "" if interval is None else f" (the fit's 95 % interval runs from {interval[0]:.3g}x to " + \
            ("beyond 10⁶× it)" if interval[1] is None else f"{interval[1]:.3g}x)")
        return f"no crossover within {EXTRAPOLATION_X}x of our largest budget ({last:g}x){lo}"
    return (f"the fitted line crosses 0 at about {line['crossover_x']:.3g}x "
            f"(95 % interval {interval[0]:.3g}x to {interval[1]:.3g}x)")


def _mean_std(rows: Sequence[dict]) -> tuple[float, float, int] | None:
    s = grid.summarize(rows, ddof=1)        # the book's rule: the sample std over seeds (eval/stats.py)
    return (s[0]["error"], s[0]["error_std"], s[0]["seeds"]) if s else None


def _points(run: Run, budget: float, ckpt_sha: str | None, task, config: ComputeAxisConfig, profile: str,
            results_dir, train: bool, checkpoint: Path | None = None, log=print) -> list[dict]:
    """The mark's points on `task` (trained where missing when `train`, each logged; else the cached ones whose
    key matches `ckpt_sha`)."""
    where = Path(results_dir or RESULTS_DIR) / run.name / budget_name(budget)
    if train:
        rows = []
        for s in config.seeds:
            rows.append(grid.run_point(task, config.labels, run.method, s, checkpoint=checkpoint, results_dir=where))
            if log:
                log(f"{run.name} at {budget_name(budget)} on {task.name}, seed {s}: error {rows[-1]['error']:.3f} "
                    f"({rows[-1]['seconds']:.0f} s)")
        return rows
    rows = [grid.cached_point(task, config.labels, run.method, s, profile, results_dir=where,
                              checkpoint_sha256=ckpt_sha) for s in config.seeds]
    return [r for r in rows if r is not None]


def run(profile: str | None = None, config: ComputeAxisConfig | None = None, results_dir: str | Path | None = None,
        snapshots_root: str | Path | None = None, cache_dir: str | Path | None = None,
        out: str | Path | None = None, train: bool = True, log=print) -> dict[str, Any]:
    """Every mark the long runs have reached: build its checkpoint, fine-tune its points (cached point by point:
    an interrupted run resumes), and each claim's effect per task along the marks. Writes the summary to
    results/compute-axis-<profile>.json (`out`) only when its content changed (reading never rewrites it).
    With train=False nothing is built or trained: the marks whose checkpoints are built, and those already in
    the summary (read back by their recorded checkpoint sha256)."""
    prof = profile or runtime.profile()
    if train and prof != runtime.profile():
        raise UsageError(f"compute-axis points train under the current profile ({runtime.profile()}): "
                         f"set MINILIB_PROFILE={prof}")
    config = config or SIZES[prof]
    claims = config.claims_run()
    t0 = time.time()
    previous = cached_result(prof, out) or {}
    known = {(m["run"], m["budget_x"]): m for m in previous.get("marks", [])}
    mark_rows: dict[tuple[str, float], dict] = {}
    checkpoints: dict[tuple[str, float], Path] = {}
    for name in dict.fromkeys(r for c in claims for r in c.runs):
        for mark in marks(RUNS[name], prof, config.budgets, snapshots_root):
            built = built_path(RUNS[name], mark.budget, prof, cache_dir)
            if train or built.is_file():      # without train: a mark whose checkpoint is built (nothing is built)
                from minilib.models.pretrained import file_sha256

                ckpt = build_checkpoint(mark, prof, cache_dir) if train else built
                meta = json.loads(ckpt.with_suffix(".json").read_text())
                if log:
                    log(f"{name} at {budget_name(mark.budget)}: step {mark.step}, {mark.tokens:,} tokens, held-out "
                        f"{meta['valid_nats_per_token']:.3f} nats/token")
                checkpoints[(name, mark.budget)] = ckpt
                mark_rows[(name, mark.budget)] = {
                    "run": name, "budget_x": mark.budget, "step": mark.step, "tokens": mark.tokens,
                    "flops": 6 * _params(RUNS[name], prof) * mark.tokens,
                    "valid_nats_per_token": meta["valid_nats_per_token"], "checkpoint_sha256": file_sha256(ckpt),
                    "command": meta["command"]}
            elif (name, mark.budget) in known:
                mark_rows[(name, mark.budget)] = known[(name, mark.budget)]
    # marks in the summary whose snapshots are not on this machine: read back, never retrained or dropped
    for key, row in known.items():
        if key[0] in {r for c in claims for r in c.runs} and key[1] in config.budgets:
            mark_rows.setdefault(key, row)
    for name in dict.fromkeys(r for c in claims for r in c.runs):      # the shipped branches: files in git
        found = shipped_mark(RUNS[name], prof)
        if found:
            mark_rows[(name, SHIP_BUDGET)], checkpoints[(name, SHIP_BUDGET)] = found
    lines = []
    for claim in claims:
        for task_name in config.tasks_of(claim):
            task = tasks.get(task_name)
            grid.label_count(config.labels, len(task.train), f" for {task.name}")
            fixed = {}
            for m in claim.comparison:
                if m not in RUNS:
                    rows = (grid.run_grid(task, [m], [config.labels], config.seeds, log=None) if train else
                            grid.cached_rows(task, [m], [config.labels], config.seeds, prof))
                    if _mean_std(rows):
                        fixed[m] = _mean_std(rows)
            best_fixed = min(fixed, key=lambda m: fixed[m][0]) if fixed else None
            comparison = next((c for c in claim.comparison if c in RUNS), None)

            def effect_at(x: float) -> dict[str, Any] | None:
                """The claim's effect at mark x (every side's points there, 3 seeds each), None where one is missing."""
                sides = {}
                for side in (claim.winner,) + ((comparison,) if comparison else ()):
                    key = (side, x)
                    if key not in mark_rows:
                        return None
                    rows = _points(RUNS[side], x, mark_rows[key]["checkpoint_sha256"], task, config, prof,
                                   results_dir, train and key in checkpoints, checkpoints.get(key), log)
                    if len(rows) == len(config.seeds):
                        sides[side] = _mean_std(rows)
                a = sides.get(comparison) if comparison else fixed.get(best_fixed)
                b = sides.get(claim.winner)
                if a is None or b is None:
                    return None
                return {"budget_x": x, "flops": mark_rows[(claim.winner, x)]["flops"],
                        "winner_error": b[0], "winner_std": b[1],
                        "comparison": comparison or best_fixed, "comparison_error": a[0],
                        "comparison_std": a[1], "effect": a[0] - b[0],
                        "effect_std": math.hypot(a[1], b[1]), "seeds": min(a[2], b[2])}

            series = [p for p in map(effect_at, config.budgets) if p is not None]
            trend = fit_trend([p["budget_x"] for p in series], [p["effect"] for p in series])
            lines.append({"claim": claim.name, "task": task.name, "winner": RUNS[claim.winner].method,
                          "source": claim.source, "paper": PAPER_MARKS[claim.name].name,
                          "paper_flops": PAPER_MARKS[claim.name].flops, "paper_source": PAPER_MARKS[claim.name].source,
                          "series": series, **trend, "shipped": effect_at(SHIP_BUDGET)})
    result = {"experiment": "compute-axis", "profile": prof, "labels": config.labels, "seeds": list(config.seeds),
              "run_budget": RUN_BUDGET, "laptop_flops": _laptop_flops(prof),
              "marks": sorted(mark_rows.values(), key=lambda m: (m["run"], m["budget_x"])), "claims": lines}
    result.update(seconds=round(time.time() - t0, 1), provenance=provenance.stamp(seed=None))
    return store.save(RESULT, prof, result, at=out)       # nothing new: the stamped file stays as it is


def _params(run: Run, profile: str) -> int:
    """Kaplan's N of the run's model (experiments/compute.non_embedding_params), counted on the meta device."""
    from minilib.data.tokenizer import TOKENIZER_SIZES
    from minilab.experiments.compute import non_embedding_params

    vocab = TOKENIZER_SIZES[profile]["bpe" if run.kind == "gpt" else "wordpiece"]
    with torch.device("meta"):
        if run.kind == "gpt":
            from minilib.models.gpt import GPT, gpt_config

            return non_embedding_params(GPT(gpt_config(vocab, profile)), vocab)
        from minilib.models.bert import BERT, bert_config

        return non_embedding_params(BERT(bert_config(vocab, profile, run.objective)), vocab)


def _laptop_flops(profile: str) -> float:
    """6·N·D of the profile's GPT run: the 1x of the axis."""
    gpt = RUNS["gpt"]
    config = gpt.config(profile)
    return 6 * _params(gpt, profile) * config.steps * config.batch_size * _block_size(gpt, profile)


def _summary_path(profile: str, out=None) -> Path:
    return Path(out or store.path(RESULT, profile))


def cached_result(profile: str | None = None, out: str | Path | None = None) -> dict[str, Any] | None:
    """The summary run() wrote (results/compute-axis-<profile>.json, or `out`), or None before it has run."""
    return store.load(RESULT, profile, at=out)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """One `compute-axis: claim=… task=… budgets=… max_budget_x=… effect_first=… effect_last=…
    slope_per_decade=… crossover_x=…` line per claim and task."""
    out = []
    for c in result["claims"]:
        s = c["series"]
        fmt = lambda v: "none" if v is None else f"{v:.3g}"
        out.append(f"compute-axis: claim={c['claim']} task={c['task']} budgets={len(s)} "
                   f"max_budget_x={fmt(max((p['budget_x'] for p in s), default=None))} "
                   f"effect_first={fmt(s[0]['effect'] if s else None)} effect_last={fmt(s[-1]['effect'] if s else None)} "
                   f"slope_per_decade={fmt(c['slope_per_decade'])} crossover_x={fmt(c['crossover_x'])}")
    for c in result["claims"]:
        if c.get("shipped"):
            p = c["shipped"]
            out.append(f"compute-axis-shipped: claim={c['claim']} task={c['task']} budget_x={p['budget_x']:g} "
                       f"effect={p['effect']:.3g} effect_std={p['effect_std']:.3g} "
                       f"winner_error={p['winner_error']:.3f} comparison_error={p['comparison_error']:.3f}")
    return out


MIN_TREND = 3    # budgets before a verdict speaks of a trend: a line through 2 points always fits


def verdict(line: dict[str, Any]) -> str:
    """One sentence on a claim's trend, computed from its series: the gap per decade and where the fitted line
    would cross 0, or that there is no trend toward the paper's direction."""
    s = line["series"]
    if not s:
        return f"{line['claim']} on {line['task']}: no budget measured yet"
    last, slope = s[-1], line["slope_per_decade"]
    now = (f"at {last['budget_x']:g}x the laptop compute the effect is {last['effect'] * 100:+.1f} points "
           f"(± {last['effect_std'] * 100:.1f})")
    if len(s) < MIN_TREND:
        effects = " → ".join(f"{p['effect'] * 100:+.1f}" for p in s)
        return (f"{line['claim']} on {line['task']}: {now}; {len(s)} budget(s) so far ({effects} points), "
                f"too few for a trend ({MIN_TREND} needed){_shipped_clause(line)}")
    se = line.get("slope_se")
    per_decade = f"{slope * 100:+.1f}" + ("" if se is None else f" ± {se * 100:.1f}") + " points per decade of compute"
    if last["effect"] > last["effect_std"]:
        trend = f"the paper's direction already holds ({per_decade})"
    elif slope <= 0:
        trend = f"no trend toward the paper's direction ({per_decade})"
    elif line["crossover_x"] is not None:
        trend = f"{per_decade}; {crossover_text(line)}"
    else:
        trend = f"the effect grows by {per_decade}"
    return f"{line['claim']} on {line['task']}: {now}; {trend}{_shipped_clause(line)}"


CLAIM_CHAPTER = {"gpt_vs_scratch": 6, "mlm_vs_ltr": 7, "pretrained_vs_static": 8}
VERDICTS = ("holds", "holds within spreads", "trends toward", "no trend", "opposite")


def synthesis(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per claim and task, for the closing table of chapter 08 (06 and 07 show their own rows): the
    paper's claim, the effect at 1x and at the longest budget measured, the shipped branch's, the trend per
    decade with its standard error, a verdict in VERDICTS and what measured thing would settle it.

    The verdict reads the longest budget and the trend: "holds" when that effect is above 0 by more than its
    spread (the two sides' sample stds in quadrature), "holds within spreads" when it is above 0 but within
    it; below 0, "trends toward" when the slope is above 0 by more than two standard errors, "opposite" when
    it is below 0 by as much, else "no trend"."""
    rows = []
    for c in result["claims"]:
        s = c["series"]
        if not s:
            continue
        first = next((p for p in s if p["budget_x"] == 1), None)
        last, slope, se = s[-1], c["slope_per_decade"], c.get("slope_se")
        significant = slope is not None and se is not None and abs(slope) > 2 * se
        if last["effect"] > last["effect_std"]:
            verdict = "holds"
        elif last["effect"] > 0:
            verdict = "holds within spreads"
        elif significant and slope > 0:
            verdict = "trends toward"
        elif significant:
            verdict = "opposite"
        else:
            verdict = "no trend"
        if verdict == "holds":
            settle = "settled at our scale"
        elif verdict == "holds within spreads":
            settle = "more seeds at the longest budget (the spread, not the mean, is in doubt)"
        elif verdict == "trends toward":
            settle = crossover_text(c)
        else:
            settle = (f"budgets beyond {last['budget_x']:g}x; the paper's compute is "
                      f"{c['paper_flops'] / last['flops']:,.0f}x our longest, and the axis grows tokens, not N")
        rows.append({"chapter": CLAIM_CHAPTER[c["claim"]], "claim": c["claim"], "task": c["task"],
                     "paper": c["source"], "effect_1x": first["effect"] if first else None,
                     "effect_1x_std": first["effect_std"] if first else None,
                     "longest_x": last["budget_x"], "effect_longest": last["effect"],
                     "effect_longest_std": last["effect_std"],
                     "shipped": (c.get("shipped") or {}).get("effect"),
                     "slope_per_decade": slope, "slope_se": se, "verdict": verdict, "settle": settle})
    return rows


def synthesis_table(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """(header, cells) of synthesis() rows as a lesson shows them, effects in error points."""
    pts = lambda v, sd=None: "—" if v is None else f"{v * 100:+.1f}" + ("" if sd is None else f" ± {sd * 100:.1f}")
    header = ["ch.", "claim (paper)", "task", "effect at 1x", "at the longest", "shipped 5x", "trend / decade",
              "verdict", "what would settle it"]
    cells = [[f"{r['chapter']:02d}", f"{r['claim']} ({r['paper']})", r["task"], pts(r["effect_1x"], r["effect_1x_std"]),
              f"{pts(r['effect_longest'], r['effect_longest_std'])} ({r['longest_x']:g}x)", pts(r["shipped"]),
              "—" if r["slope_per_decade"] is None else f"{pts(r['slope_per_decade'])} ± {r['slope_se'] * 100:.1f}",
              r["verdict"], r["settle"]] for r in rows]
    return header, cells


def _shipped_clause(line: dict[str, Any]) -> str:
    """'; the shipped model (the 5x branch, cooled): +x points (± y)', or '' where it has not shipped."""
    p = line.get("shipped")
    return ("" if not p else f"; the shipped model (the {p['budget_x']:g}x branch, cooled): {p['effect'] * 100:+.1f} "
                             f"points (± {p['effect_std'] * 100:.1f})")


def gap(line: dict[str, Any]) -> str:
    """How far the paper's point lies: '<paper> pretrained with ~X FLOPs, Y× our largest mark (source)'."""
    s, source = line["series"], cited(line["paper_source"])
    if not s:
        return f"{line['paper']}: ~{line['paper_flops']:.1e} FLOPs ({source}); no mark measured yet"
    return (f"{line['paper']} pretrained with ~{line['paper_flops']:.1e} FLOPs, {line['paper_flops'] / s[-1]['flops']:,.0f}x "
            f"our largest mark ({s[-1]['flops']:.1e}; {source})")


def marks_table(result: dict[str, Any] | None, runs: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """(header, rows): each mark of `runs` in the summary as a lesson shows it, the shipped branch named as such."""
    header = ["run", "compute (× laptop)", "step", "tokens read", "6·N·D", "held-out nats/token"]
    rows = [[m["run"], f"{m['budget_x']:g}×" + (" (shipped branch, cooled)" if m.get("shipped") else ""),
             f"{m['step']:,}", f"{m['tokens']:,}", f"{m['flops']:.2e}", f"{m['valid_nats_per_token']:.3f}"]
            for m in (result or {}).get("marks", []) if m["run"] in runs]
    return header, rows


def report(result: dict[str, Any] | None, claim: str) -> None:
    """What a lesson prints for one claim: its verdict per task and the scale gap, or that the runs have not
    reached a mark yet (and the command that makes them)."""
    lines = [c for c in (result or {}).get("claims", []) if c["claim"] == claim]
    if not lines:
        runs = next(c for c in CLAIMS if c.name == claim).runs
        print(f"{claim}: no budget mark measured yet; the long runs: "
              + "; ".join(RUNS[r].command("laptop") for r in runs) + ", then `python -m minilib experiment compute-axis`")
        return
    for line in lines:
        print(verdict(line))
    print(gap(max(lines, key=lambda c: c["series"][-1]["flops"] if c["series"] else 0)))   # the claim's farthest mark


def plot(result: dict[str, Any], claim: str | None = None, ax=None):
    """Each claim's effect (points of error, > 0 = the paper's direction) against pretraining compute (FLOPs,
    log scale), ± the effect's std (the two sides' sample stds in quadrature), the fitted trend solid over the
    measured budgets and dashed beyond them out to the paper's own compute (a grey line, named), the dashed part
    named an extrapolation in the legend; the y axis spans the measurements, so an extrapolated line may leave
    it. One line per task."""
    import matplotlib.pyplot as plt

    lines = [c for c in result["claims"] if claim is None or c["claim"] == claim]
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    papers, span, extrapolated = {}, [0.0], False
    for i, c in enumerate(lines):
        s = c["series"]
        if not s:
            continue
        flops = np.array([p["flops"] for p in s])
        effect = np.array([p["effect"] for p in s]) * 100
        std = np.array([p["effect_std"] for p in s]) * 100
        ax.errorbar(flops, effect, yerr=std, marker="o", capsize=3, color=f"C{i}",
                    label=f"{c['claim']} on {c['task']}")
        span += list(effect - std) + list(effect + std)
        if c["slope_per_decade"] is not None:
            per_x = flops[0] / s[0]["budget_x"]             # FLOPs at 1x
            line_at = lambda xs: (c["intercept"] + c["slope_per_decade"] * np.log10(xs / per_x)) * 100
            measured = np.logspace(np.log10(flops.min()), np.log10(flops.max()), 20)
            beyond = np.logspace(np.log10(flops.max()), np.log10(float(c["paper_flops"])), 50)
            ax.plot(measured, line_at(measured), lw=1.2, color=f"C{i}", alpha=0.8)   # the fit, where measured
            ax.plot(beyond, line_at(beyond), ls="--", lw=1, color=f"C{i}", alpha=0.5)
            extrapolated = True
        if c.get("shipped"):           # the cooled branch: a star in the task's colour, beside the trend
            p = c["shipped"]
            ax.errorbar([p["flops"]], [p["effect"] * 100], yerr=[p["effect_std"] * 100], marker="*", ms=12,
                        capsize=3, ls="none", color=f"C{i}")
            span += [(p["effect"] - p["effect_std"]) * 100, (p["effect"] + p["effect_std"]) * 100]
        papers[c["paper"]] = c["paper_flops"]
    if extrapolated:                   # one legend entry for every dashed line
        ax.plot([], [], ls="--", lw=1, color="0.4", label="fit beyond the measured budgets: extrapolation")
    ships = {c["shipped"]["budget_x"] for c in lines if c.get("shipped")}
    if ships:                          # one legend entry for every star
        ax.plot([], [], marker="*", ms=10, ls="none", color="0.3",
                label=f"the shipped branch ({', '.join(f'{x:g}x' for x in sorted(ships))}, cooled)")
    for name, flops in papers.items():
        ax.axvline(flops, color="0.5", lw=1)
        ax.annotate(name, (flops, 0.02), xycoords=("data", "axes fraction"), rotation=90, ha="right",
                    va="bottom", fontsize=8, color="0.3")
    ax.axhline(0, color="k", lw=0.8)
    pad = 0.25 * (max(span) - min(span) or 1.0)
    ax.set_ylim(min(span) - pad, max(span) + pad)     # the measured range: a trend line leaves it, the data never
    ax.set_xscale("log")
    ax.set_xlabel("pretraining compute, 6·N·D (FLOPs)")
    ax.set_ylabel(f"effect at {result['labels']} labels (error points)")
    ax.set_title("each claim along pretraining compute (> 0: the paper's direction)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))   # outside the axes: never over data
    return ax


# ----------------------------------------------------------------------------- the command line

def plan(profile: str | None = None, config: ComputeAxisConfig | None = None, results_dir=None,
         snapshots_root=None, cache_dir=None) -> list[dict[str, Any]]:
    """Every (run, mark, task, seed) point with whether it is cached and a rough CPU time; trains nothing."""
    from minilab.experiments.league import estimate_seconds

    prof = profile or runtime.profile()
    config = config or SIZES[prof]
    claims = config.claims_run()
    out = []
    for name in dict.fromkeys(r for c in claims for r in c.runs):
        run_ = RUNS[name]
        task_names = dict.fromkeys(t for c in claims if name in c.runs for t in config.tasks_of(c))
        for mark in marks(run_, prof, config.budgets, snapshots_root):
            built = built_path(run_, mark.budget, prof, cache_dir)
            for t in task_names:
                task = tasks.get(t)
                for seed in config.seeds:
                    hit = built.is_file() and grid.cached_point(
                        task, config.labels, run_.method, seed, prof, checkpoint=built,
                        results_dir=Path(results_dir or RESULTS_DIR) / name / budget_name(mark.budget))
                    out.append({"run": name, "budget_x": mark.budget, "task": t, "seed": seed, "cached": bool(hit),
                                "estimate_s": None if hit else estimate_seconds(task, run_.method, config.labels,
                                                                                prof)[0]})
        found = shipped_mark(run_, prof)
        for t in task_names if found else ():
            task = tasks.get(t)
            for seed in config.seeds:
                hit = grid.cached_point(task, config.labels, run_.method, seed, prof, checkpoint=found[1],
                                        results_dir=Path(results_dir or RESULTS_DIR) / name / budget_name(SHIP_BUDGET))
                out.append({"run": name, "budget_x": SHIP_BUDGET, "task": t, "seed": seed, "cached": bool(hit),
                            "estimate_s": None if hit else estimate_seconds(task, run_.method, config.labels, prof)[0]})
    return out


def cli_run(args, name: str) -> int:
    from dataclasses import replace

    from minilab.experiments.league import duration

    prof = runtime.profile()
    change = {}
    if args.claims:
        wanted = tuple(c.strip() for c in args.claims.split(","))
        unknown = [c for c in wanted if c not in {c.name for c in CLAIMS}]
        if unknown:
            raise UsageError(f"unknown claim {unknown[0]!r}: use one of {', '.join(c.name for c in CLAIMS)}")
        change["claims"] = wanted
    if args.tasks:
        wanted = tuple(t.strip() for t in args.tasks.split(","))
        known = {t for c in CLAIMS for t in c.tasks}
        unknown = [t for t in wanted if t not in known]
        if unknown:
            raise UsageError(f"unknown task {unknown[0]!r}: use one of {', '.join(sorted(known))}")
        change["tasks"] = wanted
    if args.seeds is not None:
        if args.seeds < 1:
            raise UsageError(f"--seeds {args.seeds}: use 1 or more")
        change["seeds"] = tuple(range(args.seeds))
    config = replace(SIZES[prof], **change)
    if args.shipped:
        for line in shipped_lines(shipped(prof)):
            print(line)
        return 0
    if args.keep_latest:
        for run_name, run_ in RUNS.items():
            for budget in (RUN_BUDGET, SHIP_BUDGET):           # a finished branch is its checkpoint, not kept
                if budget == SHIP_BUDGET and latest_step(run_, prof, args.snapshots_root, budget) == last_step(
                        run_, prof, budget):
                    continue
                kept = keep_latest(run_, prof, args.snapshots_root, budget=budget)
                if kept:
                    meta = json.loads(kept.with_suffix(".json").read_text())
                    print(f"{run_name}: kept step {meta['step']} ({meta['budget_x']:.3g}x, held-out "
                          f"{meta['valid_nats_per_token']:.3f} nats/token) in {kept}")
        return 0
    if args.dry_run:
        for run_name, run_ in RUNS.items():
            found = marks(run_, prof, config.budgets, args.snapshots_root)
            ship = shipped_mark(run_, prof)
            print(f"{run_name}: marks {', '.join(budget_name(m.budget) for m in found) or 'none yet'} "
                  f"(run: {run_.command(prof)}); shipped branch: "
                  + (ship[1].name if ship else f"not yet ({run_.command(prof, SHIP_BUDGET)} --warm-start ...)"))
        points = plan(prof, config, snapshots_root=args.snapshots_root)
        todo = [p for p in points if not p["cached"]]
        untimed = sum(p["estimate_s"] is None for p in todo)
        print(f"{name}: dry run: {len(todo)} of {len(points)} points to run, about "
              f"{duration(sum(p['estimate_s'] or 0.0 for p in todo))} of CPU"
              + (f" (and {untimed} never timed at this profile)" if untimed else ""))
        return 0
    if not args.cached_only:
        todo = [p for p in plan(prof, config, snapshots_root=args.snapshots_root) if not p["cached"]]
        grid.check_cost(sum(p["estimate_s"] or 0.0 for p in todo), len(todo))
    result = run(prof, config, snapshots_root=args.snapshots_root, train=not args.cached_only, out=args.out)
    for line in result["claims"]:
        print(verdict(line))
    for line in summary_lines(result):
        print(line)
    return 0
