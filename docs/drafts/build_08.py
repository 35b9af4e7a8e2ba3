"""Builds lesson 08 (the flywheel) as a notebook: python docs/drafts/build_08.py lessons/08-the-flywheel.ipynb, then
`make lessons`' nbconvert line on it (laptop profile, widget state stored). It reads the grid cache (`experiment
league`), results/scaling-laptop.json (`experiment scaling --threads 1`), results/flywheel-laptop.json (`experiment
flywheel --snapshots DIR`, on the snapshots of a `pretrain gpt` re-run) and results/compute-laptop.json (`experiment
compute`); after a change to any of them, rebuild, execute and check every printed sentence against its numbers."""
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

> **◷ The 50-minute class path** runs the setup cell (the timeline of what came
> after BERT) and the sections marked ◷: §1 (the league and its widget, 15 min),
> §2 (scaling and its widget, 15 min), §3 (the flywheel, 10 min), §4 (compute,
> 5 min) and the summary (5 min).
""")

code(r"""
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

from minilib import runtime, story, viz, widgets
from minilib.exercises import check, compare_prediction
from minilib.experiments import compute, flywheel, grid, league, scaling

PROFILE = runtime.profile()
GRID_PROFILE = "laptop"      # the cached results the lesson shows, at every profile
fig, ax = plt.subplots(figsize=story.FLYWHEEL_TIMELINE_FIGSIZE)
viz.timeline(story.MILESTONES + story.AFTERWARDS, ax=ax,
             title="After BERT: the same recipe, more text, bigger models (chapter 08's milestones to the right)")
plt.show()
after = {m.name: m for m in story.AFTERWARDS}
print(f"profile {PROFILE}; every result below is read from results/ ({GRID_PROFILE} runs), nothing trains here "
      "unless you ask it to")
print(f"from BERT ({story.MILESTONES[-1].date}) to GPT-3 ({after['GPT-3'].date}): "
      f"{len(story.AFTERWARDS)} milestones in {int(after['GPT-3'].date[:4]) - int(story.MILESTONES[-1].date[:4])} years")
""")

md(r"""
## 1. ◷ The league: every era on the same tasks

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
todo = [p for p in league.missing(GRID_PROFILE) if p["reason"] is None]
missing_s = {}
for p in todo:
    key = (p["task"], p["labels"], p["method"])
    missing_s[key] = missing_s.get(key, 0.0) + (p["estimate_s"] or 0.0)
for (t, n, m), seconds in sorted(missing_s.items(), key=lambda kv: kv[1]):
    print(f"  missing: {t} at {n} labels, {m}: about {league.duration(seconds)} of CPU for its seeds")
print(f"all missing points: about {league.duration(sum(missing_s.values()))} of CPU on one thread "
      f"(`python -m minilib experiment league` trains them, cached and resumable)")
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
## 2. ◷ Scaling, measured here

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
The fit is the chapter's model, and it is small enough to read: for a guessed
floor c, log(L − c) against log x is a straight line, and c is chosen where
that line fits L best.
""")

code(r"""
display(Markdown(viz.source(scaling.fit_power_law, start="    log_x = np.log(x)")))
display(Markdown(viz.source(scaling.training_flops, start="    return")))
""")

md(r"""
Kaplan's models were several orders of magnitude larger than ours and read
billions of tokens. Where the fitted floor c sits says whether a sweep ran
into a limit other than its x:
""")

code(r"""
for sweep, what in (("params", "model size"), ("tokens", "tokens read")):
    fit, runs = summary["fits"][sweep]["offset"], summary["runs"][sweep]
    best = min(r["valid_nats_per_token"] for r in runs)
    if fit["c"] > 0:
        print(f"{what}: the fitted floor c = {fit['c']:.3f} nats/token is {best - fit['c']:.3f} below the best run "
              f"({best:.3f}): the curve bends, growing {what} buys less and less here")
    else:
        print(f"{what}: the best fit has no floor (c = 0): the loss still falls as a pure power law at {best:.3f}")
fixed = summary["fits"]["params"]["tokens"]
print(f"the size sweep gives every model the same {fixed:,} tokens; its largest model has "
      f"{max(r['params'] for r in summary['runs']['params']):,} non-embedding parameters, "
      f"{fixed / max(r['params'] for r in summary['runs']['params']):.1f} tokens per parameter "
      f"(Hoffmann et al. 2022, Table 3: about 20 at the compute-optimal size)")
""")

md(r"""
The use of a power law is prediction. One point, trained here: the token
sweep's model on a budget between two of the sweep's (three times its second),
first predicted by the token fit, then trained on the same text with the same
recipe (about two minutes on a laptop CPU; at the smoke profile a tiny model on
a tiny corpus, which only checks the plumbing).
""")

code(r"""
live_profile = "smoke" if PROFILE == "smoke" else GRID_PROFILE     # the fit's own sizes and tokenizer
live_config = scaling.SIZES[live_profile]
live_budget = 3 * live_config.token_budgets[1]
token_fit = summary["fits"]["tokens"]["offset"]
live = scaling.train_point(live_config.token_shape, live_budget, live_config, scaling.Corpus(live_profile, live_config))
print(f"trained {live['shape']} on {live['tokens']:,} tokens in {live['seconds']:.0f} s: held-out "
      f"{live['valid_nats_per_token']:.3f} nats/token")
if PROFILE != "smoke":
    predicted = float(scaling.predict(token_fit, live["tokens"]))
    worst = max(abs(float(scaling.predict(token_fit, r["tokens"])) - r["valid_nats_per_token"])
                for r in summary["runs"]["tokens"])
    miss = live["valid_nats_per_token"] - predicted
    print(f"the token fit predicted {predicted:.3f}: off by {miss:+.3f}, against its worst miss on the runs it was "
          f"fitted to, {worst:.3f}")
    assert abs(miss) <= worst, "the fitted law should predict a point inside its range as well as it fits its own runs"
""")

md(r"""
Now pick any compute budget and read what each fitted law predicts there,
beside the measured point nearest to it:
""")

code(r"""
widgets.scaling_explorer(summary)
""")

md(r"""
## 3. ◷ The flywheel: the same labels, more raw text

GPT's pretraining (chapter 06) keeps a snapshot of its weights every 500 steps
(1.02M tokens). Fine-tune snapshots on the same 100 labelled examples — trec's
questions and pos's tagged sentences, three seeds, chapter 06's `gpt` recipe —
and the only thing that changes is how much unlabelled text the starting point
had read: nothing, then each doubling up to the shipped checkpoint. (The
snapshots are 10 MB each and not shipped: they come from re-running
`python -m minilib pretrain gpt` with the shipped checkpoint's recipe and seed;
the last point *is* the shipped checkpoint, shared with the league.)
""")

code(r"""
fly = flywheel.cached_result(GRID_PROFILE)
flywheel.plot(fly); plt.show()
rows = [[f"{p['step']:,}", f"{p['tokens']:,}", f"{p['valid_nats_per_token']:.3f}"] +
        [f"{p[t]['accuracy']:.1%} ± {p[t]['accuracy_std']:.1%}" for t in fly["tasks"]] for p in fly["points"]]
display(Markdown(viz.markdown_table(["step", "tokens read", "held-out LM loss (nats/token)"] +
                                    [f"{t} accuracy at {fly['labels']} labels" for t in fly["tasks"]], rows)))
print(flywheel.summary_line(fly))
for task in fly["tasks"]:
    accs = [p[task] for p in fly["points"]]
    first, last = accs[0], accs[-1]
    gain, spread = last["accuracy"] - first["accuracy"], last["accuracy_std"] + first["accuracy_std"]
    falls = [i for i in range(1, len(accs)) if accs[i]["accuracy"] + accs[i]["accuracy_std"]
             < accs[i - 1]["accuracy"] - accs[i - 1]["accuracy_std"]]
    line = (f"{task}: {first['accuracy']:.1%} from the untrained network → {last['accuracy']:.1%} after "
            f"{fly['points'][-1]['tokens']:,} tokens: " +
            (f"more text bought {gain:+.1%} (beyond the seeds' spread {spread:.1%})" if gain > spread else
             f"no gain beyond the seeds' spread ({gain:+.1%} against {spread:.1%})"))
    if falls:
        line += "; it fell beyond the spread after " + ", ".join(f"{fly['points'][i]['tokens']:,}" for i in falls) + " tokens"
    ref = fly.get("reference", {}).get(task)
    if ref:
        line += (f"; the same network trained from random weights on the same labels ({ref['method']}): "
                 f"{ref['accuracy']:.1%} ± {ref['accuracy_std']:.1%}")
    print(line)
losses = [p["valid_nats_per_token"] for p in fly["points"]]
assert all(b < a for a, b in zip(losses, losses[1:])), "the held-out LM loss should fall at every snapshot"
pos = [p["pos"]["accuracy"] for p in fly["points"]]
assert pos[-1] - pos[0] > fly["points"][-1]["pos"]["accuracy_std"] + fly["points"][0]["pos"]["accuracy_std"], \
    "on pos, the flywheel should pay: more pretraining text, better tagging at the same 100 labels"
""")

md(r"""
Why could two tasks answer more text differently? A tagger reads one state per
word, and each word's state is exactly what the LM objective trains. A question
classifier reads one state, the last token's, for the whole sentence, and must
learn from 100 examples to make it say *which kind* of question this is — a
property the next-word objective does not ask for at our size. Chapter 06's
`gpt-scratch` line above is the control: where a snapshot's point is not above
it, the pretraining that snapshot had was not yet paying for that task.
""")

md(r"""
## 4. ◷ Compute: pretraining is paid once

Training FLOPs counted by code as C ≈ 6·N·D (Kaplan §2.1: N non-embedding
parameters, D tokens) for each shipped model, against one fine-tuning run at
100 labels, 1,000 labels and all labels; and two papers' budgets counted the
same way from the shapes and token counts they state.
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
fine = [dict(r, model=model) for model, runs in cost["fine_tuning"].items() for r in runs]
for n in dict.fromkeys(r["labels"] for r in fine):
    multiples = [r["pretraining_multiple"] for r in fine if r["labels"] == n]
    print(f"one fine-tuning run at {n} labels costs 1/{max(multiples):,.0f} to 1/{min(multiples):,.0f} "
          f"of its model's pretraining")
cost_gpt = gpt = cost["pretraining"]["gpt"]["flops"]
for p in cost["papers"]:
    reported = f" (the paper reports {p['reported_flops']:.2e})" if p.get("reported_flops") else ""
    print(f"{p['name']} ({p['source']}): {p['flops']:.2e} FLOPs{reported}, {p['flops'] / gpt:,.0f}× our GPT's "
          f"pretraining ({np.log10(p['flops'] / gpt):.1f} orders of magnitude)")
dearest = min(fine, key=lambda r: r["pretraining_multiple"])
print(f"the dearest fine-tuning run here, {dearest['model']} on {dearest['task']} with all {dearest['n_labels']:,} "
      f"labels, read {dearest['tokens']:,} tokens over its epochs against its pretraining's "
      f"{cost['pretraining'][dearest['model']]['tokens']:,}: 1/{dearest['pretraining_multiple']:,.0f} of the pretraining's FLOPs")
""")

md(r"""
A fine-tuning run reads only the task's labelled text, however much text the
pretraining read; so the bigger the pretraining, the smaller each task's share
of the bill, and one pretrained model, paid for once, serves every task.

## Exercises

**1. Fit a power law by hand.** Take the size sweep's runs and fit the pure
power law L = a·N^−α yourself: a straight line through (log N, log L). Your α
should match the `pure` fit above.
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
(e.g. 3 layers × 96) at the sweep's token budget. Before you train it, write the
held-out loss the size fit predicts for it: its N is about 12 · layers · width²
(Kaplan §2.1), and `scaling.predict(fit, N)` reads the fitted law there. Then
train it (about 5–15 minutes on one CPU thread) and see how far off the law
was, against how far off it was on the runs it was fitted to.
""")

code(r"""
my_shape = None          # (layers, width), e.g. (3, 96): width a multiple of 32
my_prediction = None     # the size fit's loss for your shape, in nats per token: compute it

fit = summary["fits"]["params"]["offset"]
if my_shape is None or my_prediction is None:
    print("✎ set my_shape and my_prediction, then run this cell again")
else:
    layers, width = my_shape
    check("your prediction is the size fit's", my_prediction, float(scaling.predict(fit, 12 * layers * width ** 2)),
          rel_tol=0.01, hint="scaling.predict(fit, 12 * layers * width ** 2)")
    config = scaling.SIZES[GRID_PROFILE]       # the sweep's recipe and token budget
    row = scaling.train_point(my_shape, config.fixed_tokens, config, scaling.Corpus(GRID_PROFILE, config))
    worst = max(abs(float(scaling.predict(fit, r["params"])) - r["valid_nats_per_token"]) for r in runs)
    miss = row["valid_nats_per_token"] - my_prediction
    print(f"{row['shape']}: {row['params']:,} non-embedding parameters; predicted {my_prediction:.3f}, measured "
          f"{row['valid_nats_per_token']:.3f} nats/token ({miss:+.3f}); the fit's worst miss on its own runs: "
          f"{worst:.3f}")
    print("the law predicted your run as well as it fits its own" if abs(miss) <= worst else
          "your run is further from the law than any run it was fitted to: is your shape outside the sweep's range?")
""")

md(r"""
**3. (open) A column the league does not have.** Pick a label count between the
league's (say 300 trec questions). Predict first: will GPT, fine-tuned, make
fewer test errors there than a bag-of-words logistic regression? The cell
trains both on the same sample (seed 0; GPT takes a few minutes on a CPU) and
checks your prediction against your run.
""")

code(r"""
my_task, my_labels = "trec", 300     # pos, trec or rt; a label count
my_prediction = None                 # "gpt" or "bow-lr": the one with fewer test errors — write it before you run

compare_prediction(f"fewer errors on {my_task} at {my_labels} labels", my_prediction,
                   lambda: grid.fewest_errors(my_task, my_labels, ("gpt", "bow-lr"), "exercise08"), ("gpt", "bow-lr"),
                   hint="read §1's table on both sides of your label count");
""")

md(r"""
## Summary ◷
""")

code(r"""
p_fit, t_fit = summary["fits"]["params"]["offset"], summary["fits"]["tokens"]["offset"]
lines = [f"- The league: {complete} of {runnable} cells complete at {GRID_PROFILE} sizes; "
         f"the missing ones need about {league.duration(sum(missing_s.values()))} of CPU.",
         f"- Scaling: held-out loss falls as a power law in parameters (α = {p_fit['alpha']:.3f}, floor "
         f"{p_fit['c']:.2f} nats, R² {p_fit['r2']:.3f}) and in tokens (α = {t_fit['alpha']:.3f}, R² "
         f"{t_fit['r2']:.3f}); Kaplan et al.'s tokens exponent is {scaling.KAPLAN['alpha_tokens']}, ours "
         f"{t_fit['alpha'] / scaling.KAPLAN['alpha_tokens']:.2f}× it.",
         "- The flywheel, 100 labels: " + "; ".join(
             f"{t} {fly['points'][0][t]['accuracy']:.1%} from the untrained network, "
             f"{fly['points'][-1][t]['accuracy']:.1%} after {fly['points'][-1]['tokens']:,} tokens of pretraining"
             for t in fly["tasks"]) + ".",
         f"- Compute: GPT's pretraining cost {cost_gpt:.2e} FLOPs; one fine-tuning run at 100 labels "
         f"1/{min(r['pretraining_multiple'] for r in fine if r['labels'] == 100):,.0f} of it or less."]
display(Markdown("\n".join(lines)))
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
- Hoffmann, J., et al. (2022). Training Compute-Optimal Large Language Models. *NeurIPS 2022*. arXiv:2203.15556.
- Brown, T. B., et al. (2020). Language Models are Few-Shot Learners. *NeurIPS 2020*. arXiv:2005.14165.
- Devlin, J., Chang, M.-W., Lee, K., & Toutanova, K. (2019). BERT. *NAACL-HLT 2019*. arXiv:1810.04805.
""")

nb = nbf.v4.new_notebook()
nb.cells = cells
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, sys.argv[1] if len(sys.argv) > 1 else "08-the-flywheel.draft.ipynb")
