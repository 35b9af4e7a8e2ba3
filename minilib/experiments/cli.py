"""`python -m minilib experiment NAME ...`: run a lesson's experiment, cache its results, print one line.

    python -m minilib experiment sample-efficiency --task rt --labels 100 --methods scratch,ulmfit --seeds 3
    python -m minilib experiment elmo-probes
    python -m minilib experiment queue --task trec,rt --methods majority,bow-lr --labels 100,1000 --seeds 3 --workers 2

Each experiment lives in its own module with `cli_arguments(parser)` and `cli_run(args) -> int`;
EXPERIMENTS names them (imported lazily, so one experiment's dependencies never slow another).
Like `bench`, every experiment ends with exactly one summary line, `NAME: key=value ...`.
A command trains at most ~5 min of uncached points (grid.cost_guard) unless given --fill; the experiments
that plan their points (league, compute-axis) say the whole estimate before training any.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from minilib import provenance

EXPERIMENTS = {  # name -> (module, help)
    "sample-efficiency": ("minilib.experiments.sample_efficiency",
                          "ULMFiT vs training from scratch at a few labels (chapter 04, Howard & Ruder 2018 Fig. 3)"),
    "ulmfit-ablations": ("minilib.experiments.sample_efficiency",
                         "ULMFiT without each trick in turn (chapter 04, the paper's Tables 6-7)"),
    "ulmfit-recipe": ("minilib.experiments.ulmfit_recipe",
                      "stage (c) schedules, epochs and LRs for scratch and ULMFiT, chosen on held-out training labels (chapter 04)"),
    "elmo-probes": ("minilib.experiments.elmo_probes",
                    "POS and word-sense probes of each ELMo layer vs static vectors (chapter 03, Peters et al. 2018 §5.3)"),
    "elmo-pos": ("minilib.experiments.elmo_pos",
                 "POS tagging from static vs ELMo vs untrained-biLM vectors at 10-1,000 labelled sentences (chapter 03)"),
    "elmo-downstream": ("minilib.experiments.elmo_downstream",
                        "RT sentiment from static vectors vs ELMo features at a few labels (chapter 03)"),
    "parallelism": ("minilib.experiments.parallelism",
                    "LSTM vs Transformer: time per token by length, bits per byte at equal time (chapter 05)"),
    "lm-quality": ("minilib.experiments.lm_quality",
                   "the shipped AWD-LSTM and GPT on the same held-out text: perplexity per word, bits per byte (chapter 06)"),
    "gpt-recipe": ("minilib.experiments.gpt_finetune",
                   "GPT fine-tuning LRs and epochs for gpt and gpt-scratch, chosen on held-out training labels (chapter 06)"),
    "gpt-norm": ("minilib.experiments.gpt_norm",
                 "post-LN (GPT-1) vs pre-LN (GPT-2) blocks at the laptop GPT's size: which leaves the unigram plateau (chapter 06)"),
    "bert-recipe": ("minilib.experiments.bert_finetune",
                    "BERT fine-tuning LR, epochs and batch (the paper's §A.3 grid and more), chosen on held-out training labels (chapter 07)"),
    "bert-ablations": ("minilib.experiments.bert_finetune",
                       "MLM + NSP vs MLM only vs left-to-right at equal compute, on pos, trec and rt (chapter 07, BERT Table 5)"),
    "league": ("minilib.experiments.league",
               "every era on the same tasks, labels and seeds: majority to BERT on pos, trec and rt at 100, 1,000 and all labels (chapter 08)"),
    "flywheel": ("minilib.experiments.flywheel",
                 "GPT fine-tuned at 100 labels from each pretraining snapshot: accuracy vs pretraining tokens seen (chapter 08)"),
    "scaling": ("minilib.experiments.scaling",
                "held-out loss vs non-embedding parameters, tokens and compute (6·N·D), power laws fitted beside Kaplan et al. 2020 (chapter 08)"),
    "bert-plateau": ("minilib.experiments.bert_plateau",
                     "BERT's held-out loss along its pretraining split by what the input shows ([MASK], random, the answer) beside the left-to-right twin (chapter 07)"),
    "compute": ("minilib.experiments.compute",
                "training FLOPs (6·N·D) of each shipped model's pretraining against one fine-tuning run, beside BERT's and GPT-3's (chapter 08)"),
    "compute-axis": ("minilib.experiments.compute_axis",
                     "each claim's effect at 100 labels along pretraining compute: snapshots of one long run at 1/8 … 8x the laptop budget (chapters 06-08)"),
    "gpt-zero-shot": ("minilib.experiments.gpt_zero_shot",
                      "GPT as a classifier before fine-tuning, along its pretraining (chapter 06, GPT-1 §5, Fig. 2)"),
    "queue": ("minilib.experiments.queue",
              "fill any grid of points (tasks x methods x labels x seeds) with N worker processes and claim files; "
              "run it again to resume"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="experiment", metavar="NAME", required=True)
    for name, (module_name, help_text) in EXPERIMENTS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module_name)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            p.set_defaults(_missing=True)
            continue
        getattr(module, "cli_arguments")(p, name)
        p.add_argument("--fill", action="store_true",
                       help="train every uncached point, however long (without it a command stops before "
                            "training past ~5 min of estimated CPU time, and says how long the rest would take)")
        p.add_argument("--restamp", action="store_true",
                       help="train nothing; stamp each cached point whose stamped command is a script outside the "
                            "repository with this command (run with --fill instead of --restamp), the old one kept")


def run(args: argparse.Namespace) -> int:
    from minilib.experiments import grid

    if getattr(args, "_missing", False):
        raise SystemExit(f"experiment {args.experiment!r} is not written yet ({args._module})")
    if not args.restamp:
        with grid.cost_guard(None if args.fill else grid.LONG_S):
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
