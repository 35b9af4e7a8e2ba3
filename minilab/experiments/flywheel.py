"""The flywheel in one plot: what more unlabelled text buys for the same few labels.

GPT's pretraining kept a snapshot of its weights every `eval_every` steps (recipes/gpt.py: step 0 is the
untrained network). Each snapshot becomes a loadable checkpoint (the shipped checkpoint's tokenizer and
architecture, the snapshot's weights; cached under .cache/flywheel/, never in git), and the `gpt` method
fine-tunes it at 100 labels on trec and pos, 3 seeds, through the one grid runner: every point is stamped
and cached in results/flywheel/step-NNNNNN/. Plotted against the pretraining tokens each snapshot had
seen (the checkpoint JSON's curve), it shows the flywheel of the book's last chapter: the LM objective needs no
labels, and every further token of raw text makes the same labels go further. The final snapshot holds the
recipe run's own weights (checkpoints/gpt-laptop.pt), whose points stay in the flywheel's folder like every
snapshot's: the league's (results/gpt/) move to GPT's shipped branch (minilab/shipped.py). gpt-scratch at the
same label count, if cached, is the reference line.

    from minilab.experiments import flywheel
    result = flywheel.run()             # results/flywheel-<profile>.json, stamped
    flywheel.plot(flywheel.cached_result("laptop"))      # a lesson: the shipped run, nothing trains

    python -m minilib experiment flywheel --snapshots /path/to/gpt-laptop/snapshots
    flywheel: trec=<acc>→<acc> pos=<acc>→<acc> tokens=0→8192000 labels=100 seeds=3

The line: each task's mean test accuracy fine-tuned from the first snapshot (0 tokens) → from the last.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from minilib import runtime, tasks
from minilab import provenance
from minilab.experiments import grid, store
from minilib.runtime import UsageError

METHOD = "gpt"                 # the fine-tuning recipe (experiments/gpt_finetune.py), the same at every snapshot
REFERENCE = "gpt-scratch"      # the same network from random weights with its own recipe: the line to beat
RESULT = store.register("flywheel", "profile", "method", "labels", "seeds", "tasks", "checkpoint_sha256")
FOLDER = store.folder("flywheel")            # each snapshot's points: results/flywheel/step-NNNNNN/
CACHE_DIR = provenance.REPO_ROOT / ".cache" / "flywheel"


@dataclass(frozen=True)
class FlywheelConfig:
    tasks: tuple[str, ...] = ("trec", "pos")   # a sentence task and a token task, both few-label
    labels: int = 100                          # labelled examples per point, the same at every snapshot
    seeds: tuple[int, ...] = (0, 1, 2)         # each seed: another sample and another head init
    snapshots: int | None = None               # evenly spaced snapshots, first and last kept (None: every one)


SIZES = {"smoke": FlywheelConfig(labels=20, seeds=(0,), snapshots=2),   # CI: plumbing only
         "laptop": FlywheelConfig(),
         "full": FlywheelConfig()}


@dataclass(frozen=True)
class Snapshot:
    step: int                                  # optimizer steps of pretraining
    tokens: int                                # pretraining tokens seen (the checkpoint's curve)
    valid_nats_per_token: float | None         # the held-out LM loss at that step (the curve)
    source: Path                               # the snapshot file, or the shipped checkpoint for the final step


def default_checkpoint(profile: str | None = None) -> Path:
    """GPT's recipe run, whose snapshots the flywheel fine-tunes (gpt_finetune.recipe_checkpoint)."""
    from minilab.experiments.gpt_finetune import recipe_checkpoint

    return recipe_checkpoint(profile)


def default_snapshot_dir(checkpoint: str | Path) -> Path:
    """.cache/pretrain/<checkpoint name>/snapshots, where `python -m minilib pretrain gpt` writes them."""
    return provenance.REPO_ROOT / ".cache" / "pretrain" / Path(checkpoint).stem / "snapshots"


def _meta(checkpoint: Path) -> dict:
    from minilib.models.pretrained import sidecar

    path = sidecar(checkpoint)
    if not path.is_file():
        raise UsageError(f"no provenance JSON {path} beside {checkpoint}: the flywheel reads its pretraining curve")
    return json.loads(path.read_text())


def snapshots(checkpoint: str | Path, snapshot_dir: str | Path | None = None,
              keep: int | None = None) -> list[Snapshot]:
    """The snapshots along `checkpoint`'s pretraining, tokens seen from its JSON's curve, in step order; the
    final step is the checkpoint itself (its snapshot holds the same weights). `keep`: that many, evenly
    spaced, the first and the last always among them."""
    checkpoint = Path(checkpoint)
    folder = Path(snapshot_dir or default_snapshot_dir(checkpoint))
    metrics = _meta(checkpoint).get("metrics", {})
    curve = {p["step"]: p for p in metrics.get("curve", [])}
    final = metrics.get("steps", max(curve, default=0))
    files = sorted(folder.glob("step-*.pt"))
    if not files:
        raise UsageError(f"no pretraining snapshots (step-*.pt) in {folder}: `python -m minilib pretrain gpt` writes "
                         f"them there, or pass --snapshots DIR")
    out = []
    for path in files:
        step = int(path.stem.split("-")[1])
        if step not in curve:
            raise UsageError(f"{path.name} is at step {step}, which {checkpoint.name}'s curve does not have: "
                             f"these snapshots are from another run (pass the matching --snapshots)")
        if step < final:
            out.append(Snapshot(step, int(curve[step]["tokens"]), curve[step].get("valid_nats_per_token"), path))
    last = curve.get(final, {})
    out.append(Snapshot(final, int(last.get("tokens", metrics.get("train_tokens_seen", 0))),
                        last.get("valid_nats_per_token"), checkpoint))
    if keep is not None and keep < len(out):
        out = [out[i] for i in sorted(set(np.linspace(0, len(out) - 1, max(keep, 2)).round().astype(int)))]
    return out


def snapshot_model(path: str | Path, cfg):
    """A GPT with the snapshot's weights (fp16 on disk, the tied head stored once), float32, eval mode."""
    from minilib.models.gpt import GPT
    from minilib.models.pretrained import load_half_state

    return load_half_state(GPT(cfg), path).eval()


def build_checkpoint(snap: Snapshot, checkpoint: str | Path, cache_dir: str | Path | None = None, pre=None) -> Path:
    """A loadable GPT checkpoint of `snap` (the shipped checkpoint's tokenizer and architecture), written once to
    `cache_dir` (default .cache/flywheel/) and rebuilt only when the snapshot or the checkpoint changed. Its meta
    holds only what it is made of (no time, no commit), so a rebuild writes the same bytes, the same sha256,
    and the points cached for it in results/flywheel/ stay valid. The final step: the checkpoint itself.
    `pre`: the checkpoint already loaded (load_pretrained)."""
    from minilib.models.pretrained import file_sha256, load_pretrained, save_pretrained, sidecar

    checkpoint = Path(checkpoint)
    if snap.source == checkpoint:
        return checkpoint
    out = Path(cache_dir or CACHE_DIR) / f"{checkpoint.stem}-step-{snap.step:06d}.pt"
    made_of = {"snapshot": snap.source.name, "snapshot_sha256": file_sha256(snap.source),
               "from_checkpoint": checkpoint.name, "from_checkpoint_sha256": file_sha256(checkpoint)}
    if out.is_file() and sidecar(out).is_file():
        meta = json.loads(sidecar(out).read_text())
        if all(meta.get(k) == v for k, v in made_of.items()):
            return out
    pre = pre or load_pretrained(checkpoint, "gpt")
    model = snapshot_model(snap.source, pre.model.cfg)
    save_pretrained(out, model, pre.vocab, {**made_of, "step": snap.step, "tokens": snap.tokens,
                                            "valid_nats_per_token": snap.valid_nats_per_token})
    return out


def _built(snap: Snapshot, checkpoint: Path, cache_dir) -> Path | None:
    """The built checkpoint of `snap` if it is there (no building: a dry run)."""
    if snap.source == checkpoint:
        return checkpoint
    out = Path(cache_dir or CACHE_DIR) / f"{checkpoint.stem}-step-{snap.step:06d}.pt"
    return out if out.is_file() else None


def _points_dir(snap: Snapshot, results_dir) -> Path:
    """Where a snapshot's points are cached: a folder of its own (a point's file name says task, method, labels,
    seed and profile, not the checkpoint), results/flywheel/step-NNNNNN/, the final step's too: gpt's own folder
    holds the default checkpoint's points, and the default is the shipped branch once GPT has moved to it.
    `results_dir` replaces results/flywheel/."""
    return Path(results_dir or FOLDER) / f"step-{snap.step:06d}"


def _accuracy(rows: Sequence[dict]) -> dict[str, Any] | None:
    s = grid.summarize(rows)
    return {"accuracy": 1 - s[0]["error"], "accuracy_std": s[0]["error_std"], "seeds": s[0]["seeds"]} if s else None


def run(profile: str | None = None, checkpoint: str | Path | None = None, snapshot_dir: str | Path | None = None,
        config: FlywheelConfig | None = None, results_dir: str | Path | None = None,
        cache_dir: str | Path | None = None, out: str | Path | None = None, write: bool = True,
        log=print) -> dict[str, Any]:
    """Fine-tune `gpt` from every snapshot (cached point by point: an interrupted run resumes) and summarize
    tokens seen -> accuracy mean/std per task into results/flywheel-<profile>.json (`out`), stamped, when that
    differs from the file's (timings and stamp aside: reading every point from the cache rewrites nothing).
    Points train under the current profile (its fine-tuning settings, its point files)."""
    from minilib.models.pretrained import file_sha256, load_pretrained

    prof = profile or runtime.profile()
    if prof != runtime.profile():
        raise UsageError(f"the flywheel's points train under the current profile ({runtime.profile()}): "
                         f"set MINILIB_PROFILE={prof} to run the {prof} flywheel")
    config = config or SIZES[prof]
    checkpoint = Path(checkpoint or default_checkpoint(prof))
    snaps = snapshots(checkpoint, snapshot_dir, config.snapshots)
    task_objs = [tasks.get(t) for t in config.tasks]
    for t in task_objs:
        grid.label_count(config.labels, len(t.train), f" for {t.name}")
    pre = load_pretrained(checkpoint, "gpt")
    t0 = time.time()
    points = []
    for snap in snaps:
        ckpt = build_checkpoint(snap, checkpoint, cache_dir, pre)
        point = {"step": snap.step, "tokens": snap.tokens, "valid_nats_per_token": snap.valid_nats_per_token,
                 "checkpoint": ckpt.name, "checkpoint_sha256": file_sha256(ckpt)}
        for task in task_objs:
            rows = [grid.run_point(task, config.labels, METHOD, seed, checkpoint=ckpt,
                                   results_dir=_points_dir(snap, results_dir)) for seed in config.seeds]
            point[task.name] = _accuracy(rows)
            if log:
                log(f"step {snap.step:>6} ({snap.tokens:>11,} tokens) {task.name:5s} accuracy "
                    f"{point[task.name]['accuracy']:.3f} ± {point[task.name]['accuracy_std']:.3f}")
        points.append(point)
    reference = {}
    for task in task_objs:   # the reference line, if its points are cached (nothing trains for it)
        acc = _accuracy(grid.cached_rows(task, [REFERENCE], [config.labels], config.seeds, prof, results_dir))
        if acc:
            reference[task.name] = {"method": REFERENCE, **acc}
    result = {"experiment": "flywheel", "profile": prof, "method": METHOD, "labels": config.labels,
              "seeds": list(config.seeds), "tasks": [t.name for t in task_objs], "checkpoint": checkpoint.name,
              "checkpoint_sha256": file_sha256(checkpoint), "points": points, "reference": reference,
              "seconds": round(time.time() - t0, 1), "provenance": provenance.stamp(seed=None)}
    if write:   # every point read from the cache gives the same summary: the file (and its stamp) stays as it is
        result = store.save(RESULT, prof, result, at=out)
    return result


def cached_result(profile: str | None = None) -> dict[str, Any] | None:
    """The summary run() wrote for `profile` (results/flywheel-<profile>.json), or None before it has run."""
    return store.load(RESULT, profile)


def plan(profile: str | None = None, checkpoint: str | Path | None = None, snapshot_dir: str | Path | None = None,
         config: FlywheelConfig | None = None, results_dir: str | Path | None = None,
         cache_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """Every point of run() with whether it is cached and a rough CPU time (league.estimate_seconds);
    builds nothing and trains nothing."""
    from minilab.experiments.league import estimate_seconds

    prof = profile or runtime.profile()
    config = config or SIZES[prof]
    checkpoint = Path(checkpoint or default_checkpoint(prof))
    out = []
    for snap in snapshots(checkpoint, snapshot_dir, config.snapshots):
        ckpt = _built(snap, checkpoint, cache_dir)
        for name in config.tasks:
            task = tasks.get(name)
            n = grid.label_count(config.labels, len(task.train), f" for {task.name}")
            for seed in config.seeds:
                hit = ckpt is not None and grid.cached_point(task, config.labels, METHOD, seed, prof, checkpoint=ckpt,
                                                             results_dir=_points_dir(snap, results_dir))
                out.append({"step": snap.step, "tokens": snap.tokens, "task": task.name, "seed": seed,
                            "cached": bool(hit), "estimate_s": None if hit else
                            estimate_seconds(task, METHOD, n, prof, results_dir)[0]})
    return out


def plot(result: dict[str, Any], ax=None):
    """Test accuracy vs pretraining tokens seen, one line per task with a ±1 std band over seeds; the x axis
    is linear up to the first snapshot after 0 and logarithmic beyond (symlog), so 0 tokens is shown. The
    reference (gpt-scratch at the same labels), where cached, is a dashed line of the task's colour."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4))
    tokens = np.array([p["tokens"] for p in result["points"]], dtype=float)
    for i, task in enumerate(result["tasks"]):
        color = f"C{i}"
        acc = np.array([p[task]["accuracy"] for p in result["points"]]) * 100
        std = np.array([p[task]["accuracy_std"] for p in result["points"]]) * 100
        ax.plot(tokens, acc, marker="o", color=color, label=f"{task}: GPT fine-tuned from the snapshot")
        ax.fill_between(tokens, acc - std, acc + std, color=color, alpha=0.15)
        ref = result.get("reference", {}).get(task)
        if ref:
            ax.axhline(ref["accuracy"] * 100, ls="--", lw=1, color=color,
                       label=f"{task}: {ref['method']} ({ref['seeds']} seeds)")
    positive = tokens[tokens > 0]
    ax.set_xscale("symlog", linthresh=float(positive.min()) if len(positive) else 1.0)
    ax.set_xlabel("pretraining tokens seen (0, then log scale)")
    ax.set_ylabel(f"test accuracy at {result['labels']} labels (%)")
    ax.set_title(f"the flywheel: {result['labels']} labels, {len(result['seeds'])} seeds")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax


def summary_line(result: dict[str, Any]) -> str:
    """`flywheel: trec=<acc at 0 tokens>→<acc at the last> pos=… tokens=0→N labels=100 seeds=3`."""
    first, last = result["points"][0], result["points"][-1]
    accs = " ".join(f"{t}={first[t]['accuracy']:.3f}→{last[t]['accuracy']:.3f}" for t in result["tasks"])
    return (f"flywheel: {accs} tokens={first['tokens']}→{last['tokens']} labels={result['labels']} "
            f"seeds={len(result['seeds'])}")


# ----------------------------------------------------------------------------- the command line

def cli_run(args, name: str) -> int:
    from dataclasses import replace

    prof = runtime.profile()
    if args.seeds is not None and args.seeds < 1:
        raise UsageError(f"--seeds {args.seeds}: use 1 or more")
    if args.max_snapshots is not None and args.max_snapshots < 2:
        raise UsageError(f"--max-snapshots {args.max_snapshots}: use 2 or more (the first and the last)")
    change = {k: v for k, v in (("tasks", tuple(t.strip() for t in args.tasks.split(",")) if args.tasks else None),
                                ("labels", args.labels), ("seeds", tuple(range(args.seeds)) if args.seeds else None),
                                ("snapshots", args.max_snapshots)) if v is not None}
    config = replace(SIZES[prof], **change)
    if args.dry_run:
        points = plan(prof, args.checkpoint, args.snapshots, config)
        from minilab.experiments.league import duration

        for p in points:
            print(f"step {p['step']:>6} ({p['tokens']:,} tokens) {p['task']} seed {p['seed']}: "
                  + ("cached" if p["cached"] else f"to run, ~{duration(p['estimate_s'])}"))
        todo = [p for p in points if not p["cached"]]
        print(f"flywheel: dry run: {len(todo)} of {len(points)} points to run, about "
              f"{duration(sum(p['estimate_s'] or 0.0 for p in todo))} of CPU")
        return 0
    print(summary_line(run(prof, args.checkpoint, args.snapshots, config)))
    return 0
