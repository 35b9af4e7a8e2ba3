"""Builds the draft of lesson 08 (the flywheel) as a notebook: python docs/drafts/build_08.py OUT.ipynb.
A draft: it reads results that take several CPU sessions to make — `experiment league` (fill), `experiment
scaling --threads 1`, `experiment flywheel` (needs GPT's pretraining snapshots: re-run `pretrain gpt` in the same
session), `experiment compute` (after the BERT checkpoints land). When they exist, execute it, check every
printed sentence against its numbers, and move it to lessons/08-the-flywheel.ipynb."""
import sys

import nbformat as nbf

cells = []


def md(text):
    cells.append(nbf.v4.new_markdown_cell(text.strip("\n")))


def code(text):
    cells.append(nbf.v4.new_code_cell(text.strip("\n")))


md(r"""
# 08 · The flywheel: no labels, more text, bigger models

**The moment.** By the end of 2018 every piece of this book was on the table: a
language model needs no labels (chapter 02), its states carry meaning into other
tasks (chapters 03–04), the Transformer trains in parallel (chapter 05), and a
pretrained Transformer fine-tuned whole beats models built for one task (chapters
06–07). What followed was less a new idea than a loop: more raw text and bigger
models made a better starting point for every task, and the better results paid
for the next, bigger run. GPT-2 read a web crawl and did tasks it was never
trained on; RoBERTa trained BERT longer on ten times the text; T5 turned every
task into text-to-text; from October 2019 BERT read English queries in Google
Search; in January 2020 Kaplan et al. measured the loop itself — loss falls as a
power law in parameters, data and compute — and in May 2020 GPT-3 learned tasks
from a few examples in its prompt.

This chapter measures the loop at our scale, with the models of the earlier
chapters:

1. **The league:** every era on the same tasks, labels and seeds.
2. **Scaling, measured here:** held-out loss against model size, tokens and
   compute, with power laws fitted beside Kaplan et al.'s exponents.
3. **The flywheel:** the same 100 labels, fine-tuned from GPT snapshots that had
   read more and more raw text.
4. **Compute:** what pretraining cost against what fine-tuning costs.

> **⏱ The 50-minute class path** runs the setup cell and the sections marked ⏱:
> the timeline (5 min), §1 the league and its widget (15 min), §2 scaling and
> its widget (15 min), §3 the flywheel (5 min), §4 compute (5 min) and the
> summary (5 min).
""")

code(r"""
import json

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

from minilib import provenance, runtime, story, viz, widgets
from minilib.exercises import check, compare_prediction
from minilib.experiments import compute, flywheel, league, scaling

PROFILE = runtime.profile()
GRID_PROFILE = "laptop"      # the cached results the lesson shows, at every profile
fig, ax = plt.subplots(figsize=story.FLYWHEEL_TIMELINE_FIGSIZE)
viz.timeline(story.MILESTONES + story.AFTERWARDS, ax=ax,
             title="After BERT: the same recipe, more text, bigger models (chapter 08's milestones to the right)")
plt.show()
after = {m.name: m for m in story.AFTERWARDS}
print(f"from BERT ({story.MILESTONES[-1].date}) to GPT-3 ({after['GPT-3'].date}): "
      f"{len(story.AFTERWARDS)} milestones in {int(after['GPT-3'].date[:4]) - int(story.MILESTONES[-1].date[:4])} years")
""")

md(r"""
## 1. ⏱ The league: every era on the same tasks

Each cell is one method at one label count, test error as mean ± std over
three seeds, from the one grid runner's cache (`python -m minilib experiment
league` fills what is missing). The simple baselines — the majority class, a
bag-of-words logistic regression and averaged static vectors — stand beside
every pretrained method, as in every chapter.
""")

code(r"""
cells = league.table(GRID_PROFILE)
display(Markdown(league.markdown(cells)))
league.plot(GRID_PROFILE); plt.show()
complete = sum(c["error"] is not None and c["seeds"] == len(league.SEEDS) for c in cells)
runnable = sum(c["reason"] in (None, "not run") for c in cells)
print(f"{complete} of {runnable} runnable cells have all {len(league.SEEDS)} seeds "
      f"({len(cells) - runnable} cells cannot run: an era with no method for the task)")
for t in league.TASKS:
    for n in league.LABELS:
        column = [c for c in cells if c["task"] == t and c["labels"] == n and c["error"] is not None]
        if not column:
            continue
        best = min(column, key=lambda c: c["error"])
        base = min((c for c in column if c["method"] in league.BASELINES), key=lambda c: c["error"], default=None)
        pre = min((c for c in column if c["method"] not in league.BASELINES), key=lambda c: c["error"], default=None)
        if base and pre:
            margin = base["error"] - pre["error"]
            spread = base["error_std"] + pre["error_std"]
            verdict = ("pretraining pays" if margin > spread else
                       "a simple baseline wins" if -margin > spread else "within the seeds' spread")
            print(f"{t:>4} at {str(n):>4} labels: best {best['era']} ({best['error']:.1%}); best pretrained "
                  f"{pre['era']} {pre['error']:.1%} vs best baseline {base['era']} {base['error']:.1%}: {verdict}")
""")

md(r"""
Pick a column; the cached points answer at once. "train this point" trains one
more seed of the era you choose, live, beside the cached mean.
""")

code(r"""
widgets.league_explorer(GRID_PROFILE)
""")

md(r"""
## 2. ⏱ Scaling, measured here

Kaplan et al. (2020, §3) trained Transformer LMs from 768 to 1.5 billion
non-embedding parameters and found the held-out loss falling as a power law in
each of parameters N, tokens D and compute C ≈ 6·N·D (§2.1), over many orders of
magnitude. `python -m minilib experiment scaling` does it small: decoders of
several shapes on one token budget, and one shape on several budgets, all on the
same text, the same held-out tokens and the same unit. The fits are
L = a·x^−α + c (with an irreducible floor c) and the pure power law.
""")

code(r"""
summary = scaling.load(GRID_PROFILE)
scaling.plot_scaling(summary); plt.show()
for sweep, kaplan in (("params", scaling.KAPLAN["alpha_params"]), ("tokens", scaling.KAPLAN["alpha_tokens"])):
    fit = summary["fits"][sweep]
    xs = [r[sweep if sweep == "tokens" else "params"] for r in summary["runs"][sweep]]
    print(f"{sweep}: {len(xs)} runs over {np.log10(max(xs) / min(xs)):.1f} orders of magnitude; "
          f"L = a·x^-α + c gives α = {fit['offset']['alpha']:.3f} (R² {fit['offset']['r2']:.3f}), the pure law "
          f"α = {fit['pure']['alpha']:.3f} (R² {fit['pure']['r2']:.3f}); Kaplan et al. (§3, eq. 1.1–1.2): α = {kaplan}")
    print(f"  our pure-law α is {fit['pure']['alpha'] / kaplan:.2f}× Kaplan's")
    assert fit["offset"]["r2"] >= 0.95, f"the {sweep} fit explains less than 95 % of the variance"
""")

md(r"""
Kaplan's models were 4 to 6 orders of magnitude larger and read 22 billion
tokens, far from any floor. Our size sweep gives every model the same 1.6M
tokens, so the larger ones run short of data and the curve bends towards a
floor (what c absorbs); the token sweep has no such floor at its size. The
ratios above say how close each exponent comes to theirs. The use of a power
law is prediction: pick a compute budget and read what each fitted law
predicts there, beside the measured point:
""")

code(r"""
widgets.scaling_explorer(summary)
""")

md(r"""
## 3. ⏱ The flywheel: the same labels, more raw text

GPT's pretraining (chapter 06) saved its weights every 1M tokens. Fine-tune each
snapshot on the same 100 labelled examples (trec and pos, three seeds, the same
recipe): the only thing that changes is how much unlabelled text the starting
point had read.
""")

code(r"""
fly = flywheel.cached_result(GRID_PROFILE)
flywheel.plot(fly); plt.show()
print(flywheel.summary_line(fly))
for task in fly["tasks"]:
    first, last = fly["points"][0][task], fly["points"][-1][task]
    gain, spread = last["accuracy"] - first["accuracy"], last["accuracy_std"] + first["accuracy_std"]
    print(f"{task}: {first['accuracy']:.1%} from the untrained network → {last['accuracy']:.1%} after "
          f"{fly['points'][-1]['tokens']:,} tokens: " +
          ("more text bought accuracy" if gain > spread else "no gain beyond the seeds' spread"))
""")

md(r"""
## 4. ⏱ Compute: pretraining is paid once

Training FLOPs counted by code as C ≈ 6·N·D for each shipped model, against one
fine-tuning run at 100 labels, 1,000 labels and all labels; and two papers'
budgets computed the same way from the shapes and token counts they state.
""")

code(r"""
cost = compute.cached_result(GRID_PROFILE)
rows = [[name, f"{r['params']:,}", f"{r['tokens']:,}", f"{r['flops']:.2e}"] for name, r in cost["pretraining"].items()]
rows += [[p["name"] + " (paper)", f"{p['params']:.3g}", f"{p['tokens']:.3g}", f"{p['flops']:.2e}"] for p in cost["papers"]]
display(Markdown(viz.markdown_table(["model", "N (non-embedding)", "D (tokens)", "C = 6·N·D"], rows)))
for model, fine in cost["fine_tuning"].items():
    for r in fine:
        print(f"{model} on {r['task']} with {r['labels']} labels: {r['flops']:.2e} FLOPs = "
              f"pretraining / {r['pretraining_multiple']:,.0f}")
gpt = cost["pretraining"]["gpt"]["flops"]
for p in cost["papers"]:
    print(f"{p['name']}: {p['flops'] / gpt:,.0f}× our GPT's pretraining")
""")

md(r"""
## Exercises

**1. Fit a power law by hand.** Take the size sweep's runs and fit the pure
power law L = a·N^−α yourself: a straight line through (log N, log L). Your α
should match `scaling.fit_power_law(..., offset=False)`.
""")

code(r"""
runs = summary["runs"]["params"]
N = np.array([r["params"] for r in runs], dtype=float)
L = np.array([r["valid_nats_per_token"] for r in runs])
my_alpha = None   # your code: the slope of log L on log N, with its sign flipped
check("α of the pure power law", my_alpha, summary["fits"]["params"]["pure"]["alpha"], rel_tol=1e-3,
      hint="np.polyfit(np.log(N), np.log(L), 1) returns (slope, intercept); α = -slope")
""")

md(r"""
**2. (open) Predict, then train.** Choose a model shape the sweep did not train
(e.g. 2 layers × 96) at the sweep's token budget. Write the held-out loss the
size fit predicts for it *before* you train it, then train it (a few minutes on
a CPU) and compare.
""")

code(r"""
my_shape = None          # (layers, width), e.g. (2, 96)
my_prediction = None     # the loss the fit predicts, in nats per token: compute it with scaling.predict

def train_my_shape():
    config = scaling.SIZES[GRID_PROFILE]          # the sweep's recipe and budget (minutes on one CPU thread)
    row = scaling.train_point(my_shape, config.fixed_tokens, config, scaling.Corpus(GRID_PROFILE, config))
    return row["valid_nats_per_token"]

if my_shape is not None and my_prediction is not None:
    measured = train_my_shape()
    print(f"predicted {my_prediction:.3f}, measured {measured:.3f} nats per token "
          f"({abs(measured - my_prediction) / measured:.1%} off)")
else:
    print("✎ set my_shape and my_prediction, then run this cell again")
""")

md(r"""
## Summary ⏱
""")

code(r"""
print(f"The league: {complete} of {runnable} cells complete at {GRID_PROFILE} sizes.")
p, t = summary["fits"]["params"]["offset"], summary["fits"]["tokens"]["offset"]
print(f"Scaling: loss falls as a power law in parameters (α = {p['alpha']:.3f}, R² {p['r2']:.3f}) and in tokens "
      f"(α = {t['alpha']:.3f}, R² {t['r2']:.3f}) at our scale.")
print(flywheel.summary_line(fly))
""")

md(r"""
## References

- Radford, A., Wu, J., Child, R., Luan, D., Amodei, D., & Sutskever, I. (2019). Language Models are
  Unsupervised Multitask Learners. OpenAI.
- Liu, Y., Ott, M., Goyal, N., Du, J., Joshi, M., Chen, D., Levy, O., Lewis, M., Zettlemoyer, L., & Stoyanov, V.
  (2019). RoBERTa: A Robustly Optimized BERT Pretraining Approach. arXiv:1907.11692.
- Raffel, C., et al. (2020). Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer.
  *JMLR* 21(140). arXiv:1910.10683.
- Nayak, P. (2019, October 25). Understanding searches better than ever before. Google, The Keyword.
- Kaplan, J., McCandlish, S., Henighan, T., Brown, T. B., Chess, B., Child, R., Gray, S., Radford, A., Wu, J., &
  Amodei, D. (2020). Scaling Laws for Neural Language Models. arXiv:2001.08361.
- Brown, T. B., et al. (2020). Language Models are Few-Shot Learners. *NeurIPS 2020*. arXiv:2005.14165.
- Devlin, J., Chang, M.-W., Lee, K., & Toutanova, K. (2019). BERT. *NAACL-HLT 2019*. arXiv:1810.04805.
""")

nb = nbf.v4.new_notebook()
nb.cells = cells
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, sys.argv[1] if len(sys.argv) > 1 else "08-the-flywheel.draft.ipynb")
