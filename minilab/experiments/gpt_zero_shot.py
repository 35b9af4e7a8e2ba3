"""Chapter 06's zero-shot experiment (GPT-1 §5, Figure 2 right): the pretrained LM as a classifier
before any fine-tuning, scored along pretraining.

GPT-1's rule for sentiment: "we append the token *very* to each example and restrict the language
model's output distribution to only the words *positive* and *negative* and guess the token it
assigns higher probability to". Each prompt here is such a cue and one candidate continuation per
class; the prediction is the class whose continuation the LM finds likeliest (its BPE pieces'
log-probabilities summed), with no label seen. Run on every snapshot the pretraining kept
(recipes/gpt.py: every `eval_every` steps), this draws accuracy against pretraining tokens — the
germ of prompting. The majority class is the line to beat.

A small LM tends to prefer one continuation whatever the text (" positive" is simply the likelier
word). `accuracy_calibrated` also reports the rule after contextual calibration (Zhao et al. 2021,
"Calibrate before use", §4): each class's log-probability minus the one it gets after a
content-free input ("N/A" + cue), still with no label seen.

    from minilab.experiments import gpt_zero_shot as zs
    res = zs.run("laptop")                   # results/gpt-zero-shot-laptop.json, stamped
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from minilib import runtime, tasks
from minilab import provenance
from minilab.experiments import store

RESULT = store.register("gpt-zero-shot", "profile", "checkpoint_sha256", "prompts")   # results/gpt-zero-shot-<profile>.json
# task -> prompt name -> (cue appended to the text, one continuation per class in the task's class order)
PROMPTS = {
    "rt": {"very": (" very", (" negative", " positive")),            # GPT-1 §5's cue and words
           "it-was": (" It was", (" bad", " good"))},
    "trec": {"answer-is": (" The answer is", (" an abbreviation", " a description", " a thing",
                                              " a person", " a place", " a number"))},   # ABBR DESC ENTY HUM LOC NUM
}
MAX_TEST = {"smoke": 100, "laptop": None, "full": None}   # test items scored (None: all)
CONTENT_FREE = "N/A"          # Zhao et al. 2021's content-free input


def class_scores(model, tok, texts, cue: str, continuations) -> np.ndarray:
    """(N, C): ln p(continuation_c | text + cue) for every text and class."""
    from minilib.eval.likelihood import continuation_log_probs

    contexts = [tok.encode(t + cue) for t in texts]
    return np.stack([continuation_log_probs(model, contexts, tok.encode(c), model.cfg.block_size).numpy()
                     for c in continuations], axis=1)


def zero_shot(model, tok, task: tasks.Task, prompt: str, max_test: int | None = None) -> dict:
    """Accuracy of one prompt on the task's test split, and how often each class was predicted."""
    cue, continuations = PROMPTS[task.name][prompt]
    idx = np.arange(len(task.test))
    if max_test is not None and max_test < len(idx):
        idx = tasks.stratified_sample(task.test.labels, max_test, seed=0)
    labels = np.asarray(task.test.labels)[idx]
    scores = class_scores(model, tok, [task.test.texts[i] for i in idx], cue, continuations)
    pred = scores.argmax(1)
    calibrated = (scores - class_scores(model, tok, [CONTENT_FREE], cue, continuations)).argmax(1)
    majority = np.bincount(labels, minlength=task.n_classes).max() / len(labels)
    share = lambda p: (np.bincount(p, minlength=task.n_classes) / len(p)).round(4).tolist()
    return {"accuracy": float((pred == labels).mean()), "majority": float(majority), "n_test": int(len(idx)),
            "predicted_share": share(pred), "accuracy_calibrated": float((calibrated == labels).mean()),
            "predicted_share_calibrated": share(calibrated)}


def snapshot_models(final, meta: dict, snapshot_dir: Path):
    """(step, GPT) for every snapshot kept during pretraining, then the final checkpoint's model."""
    from minilib.models.gpt import GPT
    from minilib.models.pretrained import load_half_state

    for path in sorted(Path(snapshot_dir).glob("step-*.pt")):
        yield int(path.stem.split("-")[1]), load_half_state(GPT(final.cfg), path).eval()
    yield meta["metrics"]["steps"], final


def run(profile: str | None = None, checkpoint: str | Path | None = None, snapshot_dir: str | Path | None = None,
        write: bool = True, log=print) -> dict:
    prof = profile or runtime.profile()
    from minilab.experiments.gpt_finetune import recipe_checkpoint

    checkpoint = Path(checkpoint or recipe_checkpoint(prof))
    snapshot_dir = Path(snapshot_dir or provenance.REPO_ROOT / ".cache" / "pretrain" / checkpoint.stem / "snapshots")
    from minilib.models.pretrained import file_sha256, load_pretrained

    final, tok, meta = load_pretrained(checkpoint, "gpt")
    curve = {p["step"]: p for p in meta["metrics"]["curve"]}
    t0 = time.time()
    points, seen = [], set()
    for step, model in snapshot_models(final, meta, snapshot_dir):
        if step in seen:
            continue
        seen.add(step)
        point = {"step": step, "tokens": curve.get(step, {}).get("tokens"),
                 "valid_nats_per_token": curve.get(step, {}).get("valid_nats_per_token")}
        for task_name, prompts in PROMPTS.items():
            task = tasks.get(task_name)
            for prompt in prompts:
                point[f"{task_name}/{prompt}"] = zero_shot(model, tok, task, prompt, runtime.pick(MAX_TEST, prof))
        points.append(point)
        if log:
            log(f"step {step:>6}: " + " ".join(f"{k} {v['accuracy']:.3f} (calibrated {v['accuracy_calibrated']:.3f})"
                                               for k, v in point.items() if isinstance(v, dict)))
    result = {"experiment": "gpt-zero-shot", "profile": prof, "checkpoint": checkpoint.name,
              "checkpoint_sha256": file_sha256(checkpoint), "prompts": PROMPTS, "points": points,
              "seconds": round(time.time() - t0, 1), "provenance": provenance.stamp(seed=None)}
    if write:
        result = store.save(RESULT, prof, result)
    return result


def summary_line(result: dict) -> str:
    last = result["points"][-1]
    name = lambda k: k.replace("/", "_").replace("-", "_")
    keys = " ".join(f"{name(k)}={v['accuracy']:.3f} {name(k)}_calibrated={v['accuracy_calibrated']:.3f}"
                    for k, v in last.items() if isinstance(v, dict))
    return f"gpt-zero-shot: step={last['step']} {keys}"


def cli_run(args, name: str) -> int:
    result = run(args.profile, args.checkpoint, args.snapshots)
    print(summary_line(result))
    return 0
