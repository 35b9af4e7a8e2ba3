"""experiments/baselines.py: the logistic-regression baselines choose L2 and class weighting by balanced accuracy
inside the labelled sample, so on an imbalanced task they do not fall back to predicting the majority class."""
import json

import numpy as np
import pytest
import torch

from minilib import tasks
from minilib.experiments import baselines as bl
from minilib.experiments import grid
from minilib.tasks import Split, Task

SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def loc_vs_rest():
    """Real TREC questions, LOC against every other class, LOC thinned to 9 % of each split (the first LOC
    questions in file order kept): an imbalanced two-class task with real text."""
    trec = tasks.get("trec")
    loc = trec.classes.index("LOC")

    def split(s):
        pos = [i for i, y in enumerate(s.labels) if y == loc]
        neg = [i for i, y in enumerate(s.labels) if y != loc]
        keep = sorted(neg + pos[:round(0.09 * len(neg) / 0.91)])
        return Split([s.texts[i] for i in keep], [int(s.labels[i] == loc) for i in keep])

    return Task("trec-loc", "sentence", ("other", "LOC"), split(trec.train), split(trec.test), source="test")


def _bow_features(task, idx):
    units, labels = bl._units(task, "train", idx)
    test_units, test_labels = bl._units(task, "test")
    vocab = {w: i for i, w in enumerate(sorted({w for u in units for w in u}))}
    return (bl._bow(units, vocab, False), torch.tensor(labels), bl._bow(test_units, vocab, False),
            torch.tensor(test_labels))


def _accuracy_rule(x, y, n_classes, seed):
    """The rule the baselines used before issue 41: L2 by mean 3-fold CV accuracy (unstratified folds), unweighted."""
    folds = np.array_split(np.random.default_rng(seed).permutation(len(y)), 3)
    cv = {}
    for l2 in bl.L2_GRID:
        accs = []
        for k in range(3):
            val = torch.as_tensor(folds[k])
            fit = torch.as_tensor(np.concatenate([folds[j] for j in range(3) if j != k]))
            head = bl.fit_logistic(bl._rows(x, fit), y[fit], n_classes, l2)
            with torch.no_grad():
                accs.append((bl._logits(head, bl._rows(x, val)).argmax(-1) == y[val]).float().mean().item())
        cv[l2] = float(np.mean(accs))
    l2 = max(bl.L2_GRID, key=lambda v: (cv[v], v))
    return bl.fit_logistic(x, y, n_classes, l2)


@pytest.mark.data
def test_bow_lr_predicts_the_rare_class_at_100_labels_where_the_accuracy_rule_did_not(loc_vs_rest, one_thread):
    task = loc_vs_rest
    assert 0.08 < task.balance()["LOC"] / len(task.train) < 0.10
    settings = grid.method("bow-lr").settings("smoke")
    new, old = [], []
    for seed in SEEDS:
        idx = task.sample(100, seed)
        row = bl.train_bow(task, idx, seed, settings, None)
        new.append(row)
        x, y, x_test, y_test = _bow_features(task, idx)
        with torch.no_grad():
            old.append(bl.scores(bl._logits(_accuracy_rule(x, y, 2, seed), x_test).argmax(-1), y_test, task.classes))
        assert row["weighting"] in bl.WEIGHTINGS and row["l2"] in bl.L2_GRID
        assert set(row["cv_balanced_accuracy"]) == set(bl.WEIGHTINGS)
    # the accuracy rule never predicts LOC on any seed; the balanced rule does on every seed
    assert [o["recall"]["LOC"] for o in old] == [0.0, 0.0, 0.0]
    assert [o["balanced_accuracy"] for o in old] == [0.5, 0.5, 0.5]
    assert all(r["recall"]["LOC"] > 0 and r["balanced_accuracy"] > 0.5 for r in new)
    assert np.mean([r["balanced_accuracy"] for r in new]) > 0.6


def test_class_weights_give_each_present_class_the_same_total():
    y = torch.tensor([0] * 90 + [1] * 10)
    w = bl.class_weights(y, 3, "balanced")
    assert w.tolist() == pytest.approx([100 / (2 * 90), 100 / (2 * 10), 0.0])   # class 2 absent: weight 0
    assert float(w[y].sum()) == pytest.approx(len(y))                           # weighted mean keeps the scale
    assert bl.class_weights(y, 3, "none") is None
    with pytest.raises(ValueError, match="class weighting 'inverse'"):
        bl.class_weights(y, 3, "inverse")


def test_balanced_accuracy_scores_a_constant_prediction_at_one_over_k():
    y = torch.tensor([0] * 91 + [1] * 9)
    majority = torch.zeros_like(y)
    assert bl.balanced_accuracy(majority, y, 2) == 0.5
    s = bl.scores(majority, y, ("other", "rare"))
    assert s == {"accuracy": pytest.approx(0.91), "balanced_accuracy": 0.5, "recall": {"other": 1.0, "rare": 0.0}}


def test_stratified_folds_deal_each_class_round_the_folds():
    y = torch.tensor([0] * 91 + [1] * 9)
    folds = bl.stratified_folds(y, seed=0)
    assert sorted(np.concatenate(folds).tolist()) == list(range(100))
    assert [int((y[torch.as_tensor(f)] == 1).sum()) for f in folds] == [3, 3, 3]
    assert all(np.array_equal(a, b) for a, b in zip(folds, bl.stratified_folds(y, seed=0)))


def test_choose_head_breaks_ties_towards_balanced_then_larger_l2(monkeypatch):
    # a constant head: every (weighting, l2) scores 1/2, so the tie rule alone decides
    monkeypatch.setattr(bl, "fit_logistic", lambda x, y, k, l2, weighting="none": _constant_head(x.shape[1], k))
    x, y = torch.randn(30, 4), torch.tensor([0] * 27 + [1] * 3)
    l2, weighting, cv = bl.choose_head(x, y, 2, seed=0)
    assert (l2, weighting) == (max(bl.L2_GRID), "balanced")
    assert cv == {w: {str(v): 0.5 for v in bl.L2_GRID} for w in bl.WEIGHTINGS}


def _constant_head(width, k):
    head = torch.nn.Linear(width, k)
    torch.nn.init.zeros_(head.weight)
    with torch.no_grad():
        head.bias.copy_(torch.arange(k, 0, -1).float())   # always class 0
    return head


@pytest.mark.data
@pytest.mark.parametrize("name", ["majority", "bow-lr", "glove-lr", "sgns-lr"])
def test_a_point_chosen_by_the_accuracy_rule_is_not_reused(name, loc_vs_rest, tmp_path):
    settings = grid.method(name).settings("smoke")
    assert settings["reports"] == bl.REPORTS
    if name != "majority":
        assert settings["selection"] == {"cv_folds": 3, "stratified": True, "score": "balanced_accuracy",
                                         "weightings": ["none", "balanced"]}
    old_settings = {k: v for k, v in settings.items() if k not in ("selection", "reports")}
    m = grid.method(name)
    path = grid.point_path(m, loc_vs_rest, 100, 0, "smoke", tmp_path)
    row = {"accuracy": 0.9, "task_sha256": loc_vs_rest.fingerprint, "config": old_settings, "checkpoint_sha256": "x"}
    path.write_text(json.dumps(row))
    assert grid.cached_point(loc_vs_rest, 100, name, 0, "smoke", results_dir=tmp_path, checkpoint_sha256="x") is None
    path.write_text(json.dumps({**row, "config": settings}))
    assert grid.cached_point(loc_vs_rest, 100, name, 0, "smoke", results_dir=tmp_path, checkpoint_sha256="x")
