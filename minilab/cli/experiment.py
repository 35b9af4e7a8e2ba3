"""`python -m minilib experiment NAME ...`: run a lesson's experiment, cache its results, print one line.

    python -m minilib experiment sample-efficiency --task rt --labels 100 --methods scratch,ulmfit --seeds 3
    python -m minilib experiment elmo-probes
    python -m minilib experiment queue --task trec,rt --methods majority,bow-lr --labels 100,1000 --seeds 3 --workers 2

EXPERIMENTS names each experiment: its module in minilab/experiments/, its help line and a small function here
adding its options (`@experiment(NAME, MODULE, HELP)` on it). The module's `cli_run(args, name) -> int` reads
the parsed options and runs it; it parses nothing. A module is imported only when its experiment is named, so
one experiment's dependencies never slow another. Like `bench`, every experiment ends with exactly one summary
line, `NAME: key=value ...`. A command trains at most ~30 min of uncached points (grid.cost_guard) unless given
--fill; the experiments that plan their points (league, compute-axis) say the whole estimate before training any.
Each experiment's parsed options carry `_defaults` (every option's default: what a command line rebuilt from
them may leave out, as queue's stamp does).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from minilab import provenance
from minilab.cli import subcommands
from minilab.cli.options import profile_option, task_options


@dataclass(frozen=True)
class Experiment:
    module: str          # minilab.experiments.<name>: its cli_run(args, name) runs it
    help: str
    options: Callable[[argparse.ArgumentParser], None]
    profile: str | None  # what its --profile picks; None: it sizes by $MINILIB_PROFILE alone


EXPERIMENTS: dict[str, Experiment] = {}   # name -> Experiment, in the order `experiment --help` lists them


def experiment(name: str, module: str, help: str, profile: str | None = None):
    """Register the decorated function as experiment `name`'s options (minilab.experiments.`module` runs it);
    `profile`, what a --profile option would pick, gives it one, first."""
    def register(options):
        EXPERIMENTS[name] = Experiment(f"minilab.experiments.{module}", help, options, profile)
        return options
    return register


# ----------------------------------------------------------------------------- chapter 03-04: ELMo, ULMFiT

def _ulmfit_grid(p: argparse.ArgumentParser, ablations: bool) -> None:
    from minilab.experiments import grid
    from minilab.experiments.sample_efficiency import ABLATION_LABELS, METHODS

    p.add_argument("--task", default="rt", help="rt, trec, pos, or a CSV/TSV file with a header row (default: rt)")
    task_options(p)
    p.add_argument("--labels", default=None,
                   help="comma-separated label counts, 'all' for the whole train split (default: the profile's grid"
                        + (f"; ablations: {ABLATION_LABELS['laptop']} at laptop)" if ablations else ")"))
    if not ablations:
        listing = "; ".join(f"{family}: {', '.join(names)}" for family, names in grid.families().items())
        p.add_argument("--methods", default=",".join(METHODS),
                       help=f"comma-separated (default: {','.join(METHODS)}), any of the grid's methods ({listing}) "
                            f"that handles the task's kind")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: the profile's)")
    p.add_argument("--recipe", choices=("chosen", "literal"), default=None,
                   help="chosen: each method's recipe from `experiment ulmfit-recipe` (TUNED; laptop's and full's "
                        "default); literal: the paper's schedule read literally, cached in "
                        "results/sample-efficiency-literal/ (smoke's default: its own small settings)")
    p.add_argument("--checkpoint", type=Path, default=None,
                   help="fine-tune this checkpoint (e.g. one `python -m minilib pretrain` made) instead of each method's "
                        "own: an AWD-LSTM for the ULMFiT methods, ELMo's biLM for the ELMo arms, a GPT or BERT for "
                        "theirs; its points are cached apart, in the data cache (default: checkpoints/<kind>-<profile>.pt)")
    p.add_argument("--force", action="store_true", help="retrain points even if cached")
    p.add_argument("--results-dir", type=Path, default=None,
                   help="where points are cached (default: results/<family>, e.g. results/sample-efficiency; "
                        "a CSV task's: results/<family> in the data cache, $MINILIB_DATA or ~/.cache/minilib)")


@experiment("sample-efficiency", "sample_efficiency",
            "ULMFiT vs training from scratch at a few labels (chapter 04, Howard & Ruder 2018 Fig. 3)")
def _sample_efficiency(p: argparse.ArgumentParser) -> None:
    _ulmfit_grid(p, ablations=False)


@experiment("ulmfit-ablations", "sample_efficiency", "ULMFiT without each trick in turn (chapter 04, the paper's Tables 6-7)")
def _ulmfit_ablations(p: argparse.ArgumentParser) -> None:
    _ulmfit_grid(p, ablations=True)


@experiment("ulmfit-recipe", "ulmfit_recipe",
            "stage (c) schedules, epochs and LRs for scratch and ULMFiT, chosen on held-out training labels (chapter 04)")
def _ulmfit_recipe(p: argparse.ArgumentParser) -> None:
    _recipe_search(p, "ulmfit-recipe", "rt", "scratch,ulmfit", labels="the profile's, laptop 500,all")


def _recipe_search(p: argparse.ArgumentParser, name: str, task: str, methods: str, labels: str,
                   checkpoint: str | None = None) -> None:
    """A fine-tuning recipe search's options: its task, the methods it tunes, --candidates and --labels (the
    default label counts said in the help); where `checkpoint` names what is pretrained, also --checkpoint and
    --results-dir (a shipped branch's search is staged apart, tools/ship_branch.py)."""
    p.add_argument("--task", default=task, help=f"rt, trec, or a CSV/TSV file with a header row (default: {task})")
    task_options(p)
    p.add_argument("--methods", default=methods, help=f"methods to tune (default: {methods})")
    p.add_argument("--candidates", default=None,
                   help=f"comma-separated candidate names as folders of results/{name} (default: all)")
    p.add_argument("--labels", default=None, help=f"comma-separated label counts (default: {labels})")
    if checkpoint:
        p.add_argument("--checkpoint", type=Path, default=None,
                       help=f"search with this {checkpoint} instead of each method's own (give --results-dir too)")
        p.add_argument("--results-dir", type=Path, default=None,
                       help=f"where its points are cached (default: results/{name})")


@experiment("elmo-probes", "elmo_probes",
            "POS and word-sense probes of each ELMo layer vs static vectors (chapter 03, Peters et al. 2018 §5.3)",
            profile="sizes")
def _elmo_probes(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", type=Path, default=None, help="biLM checkpoint (default: checkpoints/elmo-<profile>.pt)")
    p.add_argument("--seeds", type=int, default=3, help="seeds: probe-training sentences, init, WSD split")
    p.add_argument("--out", type=Path, default=None, help="results JSON (default: results/elmo-probes-<profile>.json)")


@experiment("elmo-pos", "elmo_pos",
            "POS tagging from static vs ELMo vs untrained-biLM vectors at 10-1,000 labelled sentences (chapter 03)")
def _elmo_pos(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tagger", choices=("tagger", "bilstm", "bilstm-max"), default="tagger",
                   help="linear tagger or §3.3's biLSTM on pos; bilstm-max: the biLSTM max-pooled as a sentence "
                        "classifier, with --task rt (default: tagger)")
    p.add_argument("--task", default="pos", help="pos, or with --tagger bilstm-max a sentence task such as rt")
    p.add_argument("--force", action="store_true", help="retrain points even if cached")


@experiment("elmo-downstream", "elmo_downstream",
            "RT sentiment from static vectors vs ELMo features at a few labels (chapter 03)")
def _elmo_downstream(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", type=Path, default=None,
                   help="biLM checkpoint (default: checkpoints/elmo-<profile>.pt)")
    p.add_argument("--labels", default=None, help="comma-separated label counts or 'all' (default: the profile's)")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: the profile's)")
    p.add_argument("--force", action="store_true", help="retrain points even if cached")


# ----------------------------------------------------------------------------- chapter 05-06: Transformer, GPT

@experiment("parallelism", "parallelism",
            "LSTM vs Transformer: time per token by length, bits per byte at equal time (chapter 05)", profile="sizes")
def _parallelism(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", type=float, default=None, help="training seconds per model (default: the profile's)")
    p.add_argument("--lengths", default=None, metavar="T1,T2,...", help="sequence lengths to time")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: all)")
    p.add_argument("--out", type=Path, default=None, help="results JSON (default: results/parallelism-<profile>.json)")


@experiment("lm-quality", "lm_quality",
            "the shipped AWD-LSTM and GPT on the same held-out text: perplexity per word, bits per byte (chapter 06)",
            profile="whose checkpoints")
def _lm_quality(p: argparse.ArgumentParser) -> None:
    p.add_argument("--awd-lstm", type=Path, default=None, help="AWD-LSTM checkpoint (default: the shipped one)")
    p.add_argument("--gpt", type=Path, default=None, help="GPT checkpoint (default: the shipped one)")
    p.add_argument("--valid-words", type=int, default=None, help="words of the valid split scored (default: per profile)")


@experiment("gpt-recipe", "gpt_finetune",
            "GPT fine-tuning LRs and epochs for gpt and gpt-scratch, chosen on held-out training labels (chapter 06)")
def _gpt_recipe(p: argparse.ArgumentParser) -> None:
    _recipe_search(p, "gpt-recipe", "trec", "gpt-scratch,gpt", labels="the profile's, laptop 100,1000",
                   checkpoint="GPT")


@experiment("gpt-norm", "gpt_norm",
            "post-LN (GPT-1) vs pre-LN (GPT-2) blocks at the laptop GPT's size: which leaves the unigram plateau (chapter 06)",
            profile="sizes")
def _gpt_norm(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")


# ----------------------------------------------------------------------------- chapter 07-08: BERT, the league

@experiment("bert-recipe", "bert_finetune",
            "BERT fine-tuning LR, epochs and batch (the paper's §A.3 grid and more), chosen on held-out training labels (chapter 07)")
def _bert_recipe(p: argparse.ArgumentParser) -> None:
    from minilab.experiments.bert_finetune import RECIPE_METHODS

    _recipe_search(p, "bert-recipe", "trec", ",".join(RECIPE_METHODS), labels="the profile's", checkpoint="encoder")


@experiment("bert-ablations", "bert_finetune",
            "MLM + NSP vs MLM only vs left-to-right at equal compute, on pos, trec and rt (chapter 07, BERT Table 5)")
def _bert_ablations(p: argparse.ArgumentParser) -> None:
    from minilab.experiments.bert_finetune import ABLATION_TASKS, ABLATIONS

    p.add_argument("--tasks", default=",".join(ABLATION_TASKS), help=f"comma-separated (default: {','.join(ABLATION_TASKS)})")
    p.add_argument("--labels", default=None, help="comma-separated label counts (default: the profile's, laptop 100,1000)")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default: 3)")
    p.add_argument("--shape", default=None, metavar="LAYERSxWIDTH",
                   help="fine-tune the encoders pretrained with `pretrain bert --shape` (cached in results/bert-LxW)")
    p.add_argument("--methods", default=",".join(ABLATIONS), help=f"comma-separated (default: {','.join(ABLATIONS)})")
    p.add_argument("--checkpoint", type=Path, default=None,
                   help="fine-tune this encoder instead (one method; e.g. one pretrained with --mask-prob)")
    p.add_argument("--results-dir", type=Path, default=None,
                   help="where points are cached (default: results/bert, or results/bert-LxW for a --shape)")


@experiment("league", "league",
            "every era on the same tasks, labels and seeds: majority to BERT on pos, trec and rt at 100, 1,000 and all labels (chapter 08)")
def _league(p: argparse.ArgumentParser) -> None:
    from minilab.experiments.league import TASKS

    p.add_argument("--tasks", default=None, help=f"comma-separated tasks (default: {','.join(TASKS)}; a CSV path "
                                                 "takes its kind's line-up)")
    p.add_argument("--labels", default=None, help="comma-separated label counts, 'all' for the whole train split "
                                                  "(default: laptop/full 100,1000,all; smoke 20)")
    p.add_argument("--methods", default=None, help="comma-separated grid methods (default: each era's, see LEAGUE)")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: laptop/full 3; smoke 1)")
    p.add_argument("--dry-run", action="store_true",
                   help="list the missing points with a rough CPU time each; train nothing")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: each method's own setting)")
    p.add_argument("--results-dir", type=Path, default=None,
                   help="where every point is cached (default: each method's results/<family>/)")


@experiment("flywheel", "flywheel",
            "GPT fine-tuned at 100 labels from each pretraining snapshot: accuracy vs pretraining tokens seen (chapter 08)")
def _flywheel(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", type=Path, default=None,
                   help="the pretrained GPT whose snapshots to use (default: checkpoints/gpt-<profile>.pt)")
    p.add_argument("--snapshots", type=Path, default=None,
                   help="folder of its pretraining snapshots (default: .cache/pretrain/<checkpoint name>/snapshots)")
    p.add_argument("--tasks", default=None, help="comma-separated tasks (default: trec,pos)")
    p.add_argument("--labels", type=int, default=None, help="labelled examples per point (default: 100; smoke 20)")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: 3; smoke 1)")
    p.add_argument("--max-snapshots", type=int, default=None,
                   help="use this many snapshots, evenly spaced, first and last kept (default: all; smoke 2)")
    p.add_argument("--dry-run", action="store_true", help="list the points, cached or not, with a rough CPU time")


@experiment("scaling", "scaling",
            "held-out loss vs non-embedding parameters, tokens and compute (6·N·D), power laws fitted beside Kaplan et al. 2020 (chapter 08)",
            profile="sizes")
def _scaling(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=None, help="torch threads (the laptop sizes assume 1)")
    p.add_argument("--shapes", default=None,
                   help="size sweep shapes LAYERSxWIDTH, e.g. 1x32,2x64,4x128 (default: the profile's)")
    p.add_argument("--budgets", default=None,
                   help="token sweep budgets, e.g. 100k,400k,1.6M (default: the profile's)")


@experiment("bert-plateau", "bert_plateau",
            "BERT's held-out loss along its pretraining split by what the input shows ([MASK], random, the answer) beside the left-to-right twin (chapter 07)",
            profile="sizes")
def _bert_plateau(p: argparse.ArgumentParser) -> None:
    p.add_argument("--snapshots", type=Path, default=None,
                   help="the folder holding each run's <checkpoint name>/snapshots/ (default: .cache/pretrain)")
    p.add_argument("--shape", default=None, metavar="LAYERSxWIDTH",
                   help="the encoders pretrained with `pretrain bert --shape` (default: the profile's shape)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")


@experiment("compute", "compute",
            "training FLOPs (6·N·D) of each shipped model's pretraining against one fine-tuning run, beside BERT's and GPT-3's (chapter 08)",
            profile="sizes")
def _compute(p: argparse.ArgumentParser) -> None:
    """No options but --profile."""


@experiment("compute-axis", "compute_axis",
            "each claim's effect at 100 labels along pretraining compute: snapshots of one long run at 1/8 … 8x the laptop budget (chapters 06-08)")
def _compute_axis(p: argparse.ArgumentParser) -> None:
    from minilab.experiments.compute_axis import CLAIMS

    p.add_argument("--claims", default=None, help=f"comma-separated claims (default: {','.join(c.name for c in CLAIMS)})")
    p.add_argument("--tasks", default=None, help="comma-separated tasks of those claims (default: each claim's own)")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: 3; smoke 1)")
    p.add_argument("--out", type=Path, default=None,
                   help="the summary's path (default results/compute-axis-<profile>.json; a worker of a batch writes "
                        "its part elsewhere and one --cached-only pass writes the whole)")
    p.add_argument("--snapshots-root", type=Path, default=None,
                   help="folder holding each long run's checkpoint folder (default: .cache/pretrain)")
    p.add_argument("--dry-run", action="store_true", help="list the marks and points, cached or not, with a rough CPU time")
    p.add_argument("--cached-only", action="store_true", help="summarise what is cached; train nothing")
    p.add_argument("--keep-latest", action="store_true",
                   help="write each long run's newest snapshot to checkpoints/compute-axis/<run>-latest.pt (to "
                        "commit: the warm start of a later session whose machine lost the training state)")
    p.add_argument("--shipped", action="store_true",
                   help="each run's shipped 5x branch beside the recipe's own run: tokens and held-out loss, read "
                        "from their JSONs; trains nothing")


@experiment("gpt-zero-shot", "gpt_zero_shot",
            "GPT as a classifier before fine-tuning, along its pretraining (chapter 06, GPT-1 §5, Fig. 2)",
            profile="whose checkpoint")
def _gpt_zero_shot(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", type=Path, default=None, help="GPT checkpoint (default: the shipped one)")
    p.add_argument("--snapshots", type=Path, default=None,
                   help="folder of pretraining snapshots (default: .cache/pretrain/<checkpoint name>/snapshots)")


@experiment("queue", "queue",
            "fill any grid of points (tasks x methods x labels x seeds) with N worker processes and claim files; "
            "run it again to resume")
def _queue(p: argparse.ArgumentParser) -> None:
    from minilab.experiments.queue import STALE_AFTER_H

    p.add_argument("--task", default=None, help="comma-separated tasks: rt, trec, pos, or a CSV/TSV file")
    task_options(p)
    p.add_argument("--methods", default=None, help="comma-separated grid methods (any of the grid's families)")
    p.add_argument("--labels", default="100", help="comma-separated label counts, 'all' for the whole train split "
                                                   "(default: 100)")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: the profile's: 1 smoke, 3 laptop)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default: 1, this process)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per worker (default: 1)")
    p.add_argument("--checkpoint", type=Path, default=None,
                   help="fine-tune this checkpoint instead of each method's own (as sample-efficiency's --checkpoint)")
    p.add_argument("--results-dir", type=Path, default=None,
                   help="where points are cached (default: results/<family>; a CSV task's: in the data cache)")
    p.add_argument("--claims-dir", type=Path, default=None,
                   help="where workers claim points (default: .cache/queue-claims; a CSV task's: in the data cache); "
                        "queues sharing a results folder must share it")
    p.add_argument("--stale-after", type=float, default=STALE_AFTER_H,
                   help=f"hours after which any claim is taken over (default: {STALE_AFTER_H:g}); a claim whose "
                        "process has exited on this host is taken over at once")
    p.add_argument("--dry-run", action="store_true", help="print the plan, one line per point to train; train nothing")


# ----------------------------------------------------------------------------- the command

def add_options(p: argparse.ArgumentParser, name: str) -> None:
    """Experiment `name`'s --profile where it has one, its own options, then --fill and --restamp (every
    experiment's)."""
    spec = EXPERIMENTS[name]
    if spec.profile:
        profile_option(p, spec.profile)
    spec.options(p)
    p.add_argument("--fill", action="store_true",
                   help="train every uncached point, however long (without it a command stops before "
                        "training past ~5 min of estimated CPU time, and says how long the rest would take)")
    p.add_argument("--restamp", action="store_true",
                   help="train nothing; stamp each cached point whose stamped command is a script outside the "
                        "repository with this command (run with --fill instead of --restamp), the old one kept")


def options_parser(name: str, **kwargs) -> argparse.ArgumentParser:
    """A parser of experiment `name`'s options alone, as `python -m minilib experiment NAME` reads them (tests and
    scripts that call its cli_run directly)."""
    parser = argparse.ArgumentParser(**kwargs)
    add_options(parser, name)
    parser.set_defaults(_defaults=option_defaults(name))
    return parser


def option_defaults(name: str) -> dict:
    """Each option of experiment `name` and its default."""
    parser = argparse.ArgumentParser(add_help=False)
    add_options(parser, name)
    return vars(parser.parse_args([]))


def _fill(name: str):
    def fill(p: argparse.ArgumentParser) -> None:
        module = EXPERIMENTS[name].module
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            p.set_defaults(_missing=True)
            return
        add_options(p, name)
        p.set_defaults(_defaults=option_defaults(name))
    return fill


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = subcommands(parser, dest="experiment", metavar="NAME", required=True)
    for name, entry in EXPERIMENTS.items():
        p = sub.add_parser(name, options=_fill(name), help=entry.help, description=entry.help)
        p.set_defaults(_module=entry.module)


def run(args: argparse.Namespace) -> int:
    from minilab.experiments import grid

    if getattr(args, "_missing", False):
        raise SystemExit(f"experiment {args.experiment!r} is not written yet ({args._module})")
    if not args.restamp:
        with grid.cost_guard(None if args.fill else grid.LONG_S, dry_run=hasattr(args, "dry_run")):
            return int(importlib.import_module(args._module).cli_run(args, args.experiment) or 0)
    with grid.restamping(restamp_command()) as done:
        status = int(importlib.import_module(args._module).cli_run(args, args.experiment) or 0)
    print(f"restamp: points={done.checked} restamped={len(done.rewritten)}")
    return status


def restamp_command() -> str:
    """This command line as the one that remakes what it reads: --restamp replaced by --fill, stamped as
    provenance.stamp would stamp it."""
    argv = [("--fill" if a == "--restamp" else a) for a in sys.argv[1:] if a != "--fill"]
    return provenance.portable_text(" ".join([Path(sys.argv[0]).name, *argv]), provenance.shown_path)
