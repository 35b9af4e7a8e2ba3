"""The simple baselines every pretrained method is shown beside, as methods of the grid runner:

    majority   the most frequent class (tag) of the labelled sample
    bow-lr     logistic regression on a bag of words (token task: on the word itself)
    glove-lr   logistic regression on mean GloVe-50d vectors (token task: the word's vector)
    sgns-lr    the same on our SGNS vectors, trained on the text ELMo's biLM read (chapters 01, 03)

Pair tasks get [features of a; features of b]. The L2 strength of each logistic regression is
chosen by 3-fold cross-validation inside the labelled sample (never on test), from L2_GRID, by the task's own
metric. On a task scored by balanced accuracy (a CSV with a rare class, tasks.IMBALANCED) the loss weights each
class by the inverse of its share, the loss that matches that metric (a rare class then weighs as much as a common
one), and the folds are stratified.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F

from minilib.data.words import tokenize
from minilib.eval.classification import balanced_accuracy
from minilab.experiments.elmo_probes import shipped_checkpoint
from minilab.experiments.grid import Method, register
from minilib.tasks import Task

L2_GRID = (1e-4, 1e-3, 1e-2, 1e-1)   # mean-loss L2 penalties tried by cross-validation
CV_FOLDS = 3


# ----------------------------------------------------------------------------- features

def _words(text: str) -> list[str]:
    return tokenize(text)


def _token_word(word: str) -> str:
    tokens = tokenize(word)      # a corpus word as the tokenizer writes it (lowercase); kept whole
    return tokens[0] if len(tokens) == 1 else word.lower()


def _units(task: Task, split: str, idx=None):
    """(word lists per scored unit, labels): a sentence's or pair's words, or, for a token task,
    one unit per word (a one-word list)."""
    s = getattr(task, split)
    items = range(len(s)) if idx is None else idx
    if task.kind == "token":
        units = [[_token_word(w)] for i in items for w in s.texts[i]]
        labels = [t for i in items for t in s.labels[i]]
        return units, labels
    if task.kind == "pair":
        return [(_words(s.texts[i][0]), _words(s.texts[i][1])) for i in items], [s.labels[i] for i in items]
    return [_words(s.texts[i]) for i in items], [s.labels[i] for i in items]


def _bow(units, vocab: dict[str, int], pair: bool) -> torch.Tensor:
    """Binary bag of words as a sparse (n, |V|) matrix (pairs: two blocks)."""
    rows, cols = [], []
    width = len(vocab)
    for r, u in enumerate(units):
        for block, words in enumerate(u if pair else (u,)):
            for c in {vocab[w] for w in words if w in vocab}:
                rows.append(r)
                cols.append(c + block * width)
    values = torch.ones(len(rows))
    # check_invariants named, so torch does not warn that it skipped the check (one O(nnz) pass at our sizes)
    return torch.sparse_coo_tensor(torch.tensor([rows, cols], dtype=torch.long).reshape(2, -1), values,
                                   (len(units), width * (2 if pair else 1)), check_invariants=True).coalesce()


def _mean_vectors(units, lookup: dict[str, np.ndarray], dim: int, pair: bool) -> torch.Tensor:
    def mean(words):
        vs = [lookup[w] for w in words if w in lookup]
        return np.mean(vs, axis=0) if vs else np.zeros(dim, dtype=np.float32)
    feats = [np.concatenate([mean(a), mean(b)]) for a, b in units] if pair else [mean(u) for u in units]
    return torch.tensor(np.asarray(feats, dtype=np.float32))


# ----------------------------------------------------------------------------- logistic regression

def _logits(head: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return (torch.sparse.mm(x, head.weight.t()) + head.bias) if x.is_sparse else head(x)


def class_weights(y: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Each class weighted by the inverse of its share of `y` (1 on average over the items; an absent class 0)."""
    counts = torch.bincount(y, minlength=n_classes).float()
    return torch.where(counts > 0, len(y) / (n_classes * counts.clamp_min(1)), torch.zeros_like(counts))


def fit_logistic(x: torch.Tensor, y: torch.Tensor, n_classes: int, l2: float, steps: int = 100,
                 weighted: bool = False) -> torch.nn.Linear:
    """Multinomial logistic regression, mean cross-entropy (class-weighted if `weighted`) + l2·|W|², by
    full-batch L-BFGS."""
    torch.manual_seed(0)
    head = torch.nn.Linear(x.shape[1], n_classes)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    opt = torch.optim.LBFGS(head.parameters(), lr=1, max_iter=steps, history_size=10, line_search_fn="strong_wolfe")
    weight = class_weights(y, n_classes) if weighted else None

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(_logits(head, x), y, weight=weight) + l2 * head.weight.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return head


def _rows(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return x.index_select(0, idx)


def _score(pred: torch.Tensor, y: torch.Tensor, metric: str) -> float:
    return (pred == y).float().mean().item() if metric == "accuracy" else balanced_accuracy(pred, y)


def choose_l2(x: torch.Tensor, y: torch.Tensor, n_classes: int, seed: int,
              metric: str = "accuracy") -> tuple[float, dict]:
    """(L2, mean score of each): the L2 of L2_GRID with the best mean `metric` over CV_FOLDS folds of the labelled
    sample (ties: the stronger penalty). For balanced accuracy the fits are class-weighted and the folds stratified."""
    n = len(y)
    weighted = metric == "balanced_accuracy"
    if n < 2 * CV_FOLDS:
        return L2_GRID[len(L2_GRID) // 2], {}
    rng = np.random.default_rng(seed)
    if metric == "balanced_accuracy":     # stratified: each fold holds its share of a rare class (a third of 9 items)
        dealt = np.concatenate([rng.permutation(np.flatnonzero(y.numpy() == c)) for c in range(n_classes)])
        folds = [dealt[k::CV_FOLDS] for k in range(CV_FOLDS)]
    else:
        folds = np.array_split(rng.permutation(n), CV_FOLDS)
    mean = {}
    for l2 in L2_GRID:
        folds_scores = []
        for k in range(CV_FOLDS):
            val = torch.as_tensor(folds[k])
            fit = torch.as_tensor(np.concatenate([folds[j] for j in range(CV_FOLDS) if j != k]))
            head = fit_logistic(_rows(x, fit), y[fit], n_classes, l2, weighted=weighted)
            with torch.no_grad():
                folds_scores.append(_score(_logits(head, _rows(x, val)).argmax(-1), y[val], metric))
        mean[l2] = float(np.mean(folds_scores))
    return max(L2_GRID, key=lambda l2: (mean[l2], l2)), {str(k): v for k, v in mean.items()}


def _train_lr(task: Task, idx, seed: int, featurize) -> dict:
    units, labels = _units(task, "train", idx)
    test_units, test_labels = _units(task, "test")
    x, x_test = featurize(units, test_units)
    y, y_test = torch.tensor(labels), torch.tensor(test_labels)
    weighted = task.metric == "balanced_accuracy"
    l2, cv = choose_l2(x, y, task.n_classes, seed, task.metric)
    head = fit_logistic(x, y, task.n_classes, l2, weighted=weighted)
    with torch.no_grad():
        pred = _logits(head, x_test).argmax(-1)
    test = {m: _score(pred, y_test, m) for m in ("accuracy", "balanced_accuracy")}
    return {**test, "l2": l2, **({"class_weights": weighted} if task.metric != "accuracy" else {}),
            ("cv_accuracy" if task.metric == "accuracy" else f"cv_{task.metric}"): cv,
            "n_features": int(x.shape[1]), "n_test": len(test_labels)}


# ----------------------------------------------------------------------------- the methods

def train_majority(task: Task, idx, seed, settings, checkpoint, **_) -> dict:
    _, labels = _units(task, "train", idx)
    _, test_labels = _units(task, "test")
    top = Counter(labels).most_common(1)[0][0]
    return {"accuracy": float(np.mean(np.asarray(test_labels) == top)),
            "balanced_accuracy": balanced_accuracy([top] * len(test_labels), test_labels), "predicts": task.classes[top], "n_test": len(test_labels)}


def train_bow(task: Task, idx, seed, settings, checkpoint, **_) -> dict:
    def featurize(units, test_units):
        seen = Counter(w for u in units for words in (u if task.kind == "pair" else (u,)) for w in words)
        vocab = {w: i for i, w in enumerate(sorted(w for w, c in seen.items() if c >= settings["min_count"]))}
        pair = task.kind == "pair"
        return _bow(units, vocab, pair), _bow(test_units, vocab, pair)
    return _train_lr(task, idx, seed, featurize)


def _vector_featurizer(task: Task, lookup: dict[str, np.ndarray], dim: int):
    def featurize(units, test_units):
        pair = task.kind == "pair"
        return _mean_vectors(units, lookup, dim, pair), _mean_vectors(test_units, lookup, dim, pair)
    return featurize


def _glove_lookup(max_words: int) -> dict[str, np.ndarray]:
    from minilib.data.lexical import glove50

    words, vectors = glove50(max_words)
    return dict(zip(words, vectors))


def train_glove(task: Task, idx, seed, settings, checkpoint, **_) -> dict:
    lookup = _glove_lookup(settings["max_words"])
    return _train_lr(task, idx, seed, _vector_featurizer(task, lookup, 50))


def train_sgns(task: Task, idx, seed, settings, checkpoint, **_) -> dict:
    from minilab.experiments.elmo_probes import static_baseline
    from minilib.models.pretrained import load_pretrained

    meta = load_pretrained(checkpoint, "elmo").meta
    vectors = static_baseline(meta, dim=settings["dim"], epochs=settings["epochs"])
    lookup = {w: vectors.vectors[i] for w, i in vectors.index.items()}
    return _train_lr(task, idx, seed, _vector_featurizer(task, lookup, vectors.dim))


register(Method("majority", "baselines", train_majority, lambda prof: {}, label="majority class"))
register(Method("bow-lr", "baselines", train_bow, lambda prof: {"min_count": 1, "l2_grid": list(L2_GRID)},
                label="bag of words + LR"))
register(Method("glove-lr", "baselines", train_glove, lambda prof: {"max_words": 400_000, "l2_grid": list(L2_GRID)},
                label="mean GloVe-50d + LR"))
register(Method("sgns-lr", "baselines", train_sgns, lambda prof: {"dim": 100, "epochs": 3, "l2_grid": list(L2_GRID)},
                checkpoint=shipped_checkpoint, label="mean SGNS (ours) + LR"))
