"""Which sentence task joins rt and trec? Measured on held-out *training* labels, never on a test split.

    python tools/choose_task.py            # ~1 min on 2 cores: 5 candidates x 3 methods x 3 seeds at 100 labels

The candidates are the labelled sentence sets our packages hold: VADER's tweets, Amazon and NYT sentences
(sign of the mean rating), the RT sentences (rt, for reference) and the SMS Spam Collection. A candidate's
would-be test split (a fixed ~20 % by hash, for sms and rt their real test split) is never read: from the
rest, a fixed quarter by another hash is the validation set. On each, at 100 labels and 3 seeds, a bag of
words (bow-lr) and mean GloVe vectors (glove-lr) are scored by the candidate's metric (balanced accuracy
where the rarest class has under half its balanced share, as tasks.IMBALANCED says; else accuracy).

The gap glove-lr minus bow-lr is what word meaning learned from unlabelled text adds at 100 labels: the
signal a small pretrained model can bring. The candidate with the largest gap is chosen; it has to beat
the majority class with a bag of words too (something to learn at all). Points are cached in the user's
data cache (grid.user_results), never in results/.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minilib import data, tasks  # noqa: E402
from minilib.data.labelled import VADER_SETS  # noqa: E402
from minilib.data.splits import hash_unit  # noqa: E402
from minilib.data.words import normalize  # noqa: E402
from minilab.experiments import grid  # noqa: E402

METHODS = ("majority", "bow-lr", "glove-lr")
LABELS, SEEDS = 100, (0, 1, 2)
TEST_FRACTION, VALID_FRACTION = 0.2, 0.25


def rated(name: str) -> list[tuple[str, int]]:
    """A VADER set's training part: sign of the mean rating (0 dropped), repeats dropped, the would-be
    test fifth left unread."""
    rows, seen = [], set()
    for text, score in data.vader_ratings(name):
        key = normalize(text)
        if score == 0 or not key or key in seen or hash_unit(f"{name}/{key}") < TEST_FRACTION:
            continue
        seen.add(key)
        rows.append((text, int(score > 0)))
    return rows


def candidates() -> dict[str, tuple[tuple[str, ...], list[tuple[str, int]]]]:
    """name -> (class names, training rows)."""
    sentiment = ("negative", "positive")
    return {**{name: (sentiment, rated(name)) for name in VADER_SETS},
            "rt": (sentiment, [(r.text, r.label) for r in data.rt_sentiment("train")]),
            "sms": (("ham", "spam"), [(r.text, r.label) for r in data.sms_spam("train")])}


def validation_task(name: str, classes: tuple[str, ...], rows: list[tuple[str, int]]) -> tasks.Task:
    valid = [hash_unit(f"choose/{normalize(t)}") < VALID_FRACTION for t, _ in rows]
    train = [r for r, v in zip(rows, valid) if not v]
    held = [r for r, v in zip(rows, valid) if v]
    shares = np.bincount([y for _, y in train], minlength=len(classes)) / len(train)
    metric = "balanced_accuracy" if shares.min() < tasks.IMBALANCED / len(classes) else "accuracy"
    return tasks.Task(f"choose-{name}", "sentence", classes,
                      tasks.Split([t for t, _ in train], [y for _, y in train]),
                      tasks.Split([t for t, _ in held], [y for _, y in held]),
                      source=f"{name}: training part only, a quarter held out for validation",
                      user=True, metric=metric)


def main() -> int:
    print(f"{'candidate':<22}{'metric':<19}{'train':>6}{'valid':>6}" + "".join(f"{m:>17}" for m in METHODS)
          + f"{'glove-bow':>11}")
    gaps = {}
    for name, (classes, rows) in candidates().items():
        task = validation_task(name, classes, rows)
        err = {m: [grid.run_point(task, LABELS, m, s)["error"] for s in SEEDS] for m in METHODS}
        gaps[name] = np.mean(err["bow-lr"]) - np.mean(err["glove-lr"])
        learnable = np.mean(err["bow-lr"]) < np.mean(err["majority"])
        print(f"{name:<22}{task.metric:<19}{len(task.train):>6}{len(task.test):>6}"
              + "".join(f"{np.mean(e):>10.3f} ± {np.std(e):.3f}" for e in err.values())
              + f"{gaps[name]:>+11.3f}" + ("" if learnable else "  (bow-lr not below majority)"))
    best = max(gaps, key=gaps.get)
    print(f"choose-task: candidates={len(gaps)} labels={LABELS} seeds={len(SEEDS)} chosen={best} "
          f"gap={gaps[best]:+.3f} (validation error, bow-lr minus glove-lr)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
