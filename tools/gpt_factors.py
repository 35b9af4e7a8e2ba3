"""Why GPT trails its own left-to-right twin at 100 labels: one factor swapped at a time (chapter 06, issue 57).

    python tools/gpt_factors.py run [FACTOR ...]       # train the missing points (test split, 3 seeds; resumable)
    python tools/gpt_factors.py summarize             # results/gpt-factors-laptop.json, one line a factor

The twin (`bert-ltr`) and GPT are both pre-LN 4 × 256 decoders that read ~40M tokens; they differ in the
fine-tuning recipe (BERT's: LR 1e-3, 10 epochs, batch 32, warm-up over 10 %, no auxiliary loss; GPT's: LR 2.5e-4,
10 epochs, warm-up over 0.2 %, λ = 0.5), the classifier head (a pooler, dense · tanh, vs W_y alone), what the
input's added tokens start as (the twin's [CLS]/[SEP] were pretrained; GPT-1's start/extract are new), the
pretraining input (sentence pairs vs windows at any offset) and the tokenizer (WordPiece vs BPE). Each FACTOR is
GPT (or gpt-scratch, the control searched alike) fine-tuned with one or more of the fine-tuning-side swaps; the
pretraining-side ones need another pretraining run and are not in this table.

Points are the grid's own (grid.run_point), cached in results/gpt-factors/<factor>/; the baselines are read from
the shipped grids (results/gpt/, results/bert/). Errors are means over seeds with the sample std (ddof 1) and a
Welch 95 % interval for the difference to GPT as shipped.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TASKS, LABELS, SEEDS = ("trec", "rt"), 100, (0, 1, 2)
FOLDER = ROOT / "results" / "gpt-factors"
RESULT = "gpt-factors"        # experiments.gpt_finetune.FACTOR_TABLE: results/gpt-factors-laptop.json
BERT_RECIPE = {"lr": 1e-3, "epochs": 10, "warmup": 0.1}          # bert_finetune.FINE_TUNING["bert"], batch 32 both
FACTORS = {   # name: (method, the change to the paper's settings, what it swaps)
    "bert-recipe": ("gpt", {**BERT_RECIPE}, "BERT's LR and warm-up (λ = 0.5 kept)"),
    "bert-recipe-no-aux": ("gpt", {**BERT_RECIPE, "lm_coef": 0.0}, "BERT's LR and warm-up, λ = 0 (the twin's recipe)"),
    "pooler": ("gpt", {"lr": 2.5e-4, "epochs": 10, "head": "pooler"}, "a pooler head, GPT's recipe"),
    "eos-tokens": ("gpt", {"lr": 2.5e-4, "epochs": 10, "new_tokens": "eos"},
                   "start/delim/extract begin as <|endoftext|>, GPT's recipe"),
    "bert-recipe-eos": ("gpt", {**BERT_RECIPE, "new_tokens": "eos"}, "BERT's recipe and tokens from <|endoftext|>"),
    "scratch-bert-recipe": ("gpt-scratch", {**BERT_RECIPE, "lm_coef": 0.0},
                            "the control from random weights, fine-tuned as the twin"),
}
BASELINES = {"gpt": "GPT as shipped", "gpt-scratch": "gpt-scratch as shipped", "bert-ltr": "the twin (BERT's recipe)"}


def settings(name: str) -> dict:
    from minilab.experiments import gpt_finetune as gf

    method, change, _ = FACTORS[name]
    return {**asdict(gf.paper_config(method, "laptop")), **change}


def run(names) -> int:
    import torch

    from minilab.experiments import grid

    torch.set_num_threads(1)
    for name in names:
        method = FACTORS[name][0]
        for task in TASKS:
            for seed in SEEDS:
                row = grid.run_point(task, LABELS, method, seed, settings=settings(name),
                                     results_dir=FOLDER / name)
                print(f"gpt-factors: {name} {task} seed {seed} error {row['error']:.3f} ({row['seconds']:.0f} s)",
                      flush=True)
    return 0


def summarize() -> int:
    from minilab import provenance
    from minilab.experiments import grid, store
    from minilib.eval.stats import difference_interval, mean_std

    rows = {}
    for name, what in BASELINES.items():
        rows[name] = {"what": what, "method": name,
                      **{t: [r["error"] for s in SEEDS if (r := grid.cached_point(t, LABELS, name, s, "laptop"))]
                         for t in TASKS}}
    for name, (method, change, what) in FACTORS.items():
        rows[name] = {"what": what, "method": method, "change": change,
                      **{t: [r["error"] for s in SEEDS
                             if (r := grid.cached_point(t, LABELS, method, s, "laptop", settings=settings(name),
                                                        results_dir=FOLDER / name))] for t in TASKS}}
    out = {}
    for name, row in rows.items():
        entry = {k: v for k, v in row.items() if k not in TASKS}
        for t in TASKS:
            if len(row[t]) < 2:
                continue
            mean, std = mean_std(row[t])
            base = rows["gpt-scratch" if row["method"] == "gpt-scratch" else "gpt"][t]
            lo, hi = difference_interval(row[t], base)
            entry[t] = {"errors": row[t], "error": mean, "std": std, "vs": "gpt-scratch" if
                        row["method"] == "gpt-scratch" else "gpt", "moved": mean - sum(base) / len(base),
                        "interval": [lo, hi]}
            print(f"gpt-factors: {name} {t} error={mean:.3f} std={std:.3f} moved={entry[t]['moved']:+.3f} "
                  f"interval=[{lo:+.3f}, {hi:+.3f}]")
        out[name] = entry
    provenance.write_if_changed(store.path(RESULT, "laptop"), {"labels": LABELS, "seeds": list(SEEDS), "rows": out,
                                         "provenance": provenance.stamp()})
    print(f"wrote {store.path(RESULT, 'laptop').relative_to(ROOT)}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run", help="train the factors' missing points")
    r.add_argument("names", nargs="*", metavar="FACTOR", help=f"some of {', '.join(FACTORS)} (default: all)")
    sub.add_parser("summarize", help="results/gpt-factors-laptop.json")
    args = p.parse_args(argv)
    unknown = [n for n in getattr(args, "names", []) if n not in FACTORS]
    if unknown:
        p.error(f"unknown factor {unknown[0]!r}: use some of {', '.join(FACTORS)}")
    return run(args.names or list(FACTORS)) if args.what == "run" else summarize()


if __name__ == "__main__":
    sys.exit(main())
