"""Probes: what do a biLM's layers know? Peters et al. (2018), "Deep contextualized word representations", §5.3.

Two measurements, each per layer of the biLM (0 = char-CNN token vectors, 1 and 2 = biLSTM layers):

    POS tagging (§5.3, Table 5)   a linear softmax classifier on one layer's frozen vectors, trained on
                                  Brown's universal tags (the paper: PTB tags). Only a *linear* map is
                                  allowed, so the score says what the vectors make easy, not what a
                                  deep tagger could dig out of them.
    Word sense (§5.3, Table 5)    1-nearest-neighbour: each sense is the centroid of its lemma's
                                  vectors in training examples (paper: SemCor; here: WordNet's own
                                  example sentences); a test occurrence takes the sense of the closest
                                  centroid (cosine) among its lemma's senses. Baseline: the most
                                  frequent sense in the training examples (MFS).

The paper: POS from layer 1 (97.3%) beats layer 2 (96.8%); WSD from layer 2 (69.0 F1) beats layer 1
(67.4) — lower layers carry syntax, upper layers sense. A static vector (the same for every
occurrence) is the reference for both: for WSD it cannot do better than one sense per word.

    feats = layer_features(model, sentences)             # [(3, T_i, D) per sentence]
    acc = pos_probe(train_X, train_y, test_X, test_y)     # one layer's token features
    res = wsd_1nn(vectors, lemmas, senses, train_mask)    # accuracy on the rest, and MFS
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn

from minilib.data.words import tokenize
from minilib.train.head import fit_head

# ----------------------------------------------------------------------------- features


def probe_token(word: str) -> str:
    """A corpus word as the biLM and the static vectors saw words in training: minilib's tokenizer's form
    (lowercase; Brown's `` and '' become "). A word the tokenizer would split stays one token, lowercased,
    so tags stay aligned with words."""
    tokens = tokenize(word)
    return tokens[0] if len(tokens) == 1 else word.lower()


def layer_features(model, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> list[torch.Tensor]:
    """Each sentence's biLM representations, (L, T_i, D) float32, from `model.embed` in batches, no grad.

    Sentences are sorted by length before batching, so padding wastes little time."""
    out: list[torch.Tensor | None] = [None] * len(sentences)
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            layers = model.embed([list(sentences[i]) for i in idx]).cpu()      # (L, B, T, D)
            for b, i in enumerate(idx):
                out[i] = layers[:, b, :len(sentences[i])].clone()
    return out


def static_features(vectors, sentences: Sequence[Sequence[str]]) -> list[torch.Tensor]:
    """(1, T_i, dim) static vectors (a WordVectors) per sentence; out-of-vocabulary words get a zero vector."""
    zero = np.zeros(vectors.dim, dtype=np.float32)
    return [torch.from_numpy(np.stack([vectors.vector(w) if w in vectors else zero for w in s]))[None]
            for s in sentences]


def oov_rate(vectors, sentences: Sequence[Sequence[str]]) -> float:
    """Share of tokens the static vectors do not know (they get zero vectors)."""
    tokens = [w for s in sentences for w in s]
    return sum(w not in vectors for w in tokens) / max(1, len(tokens))


# ----------------------------------------------------------------------------- POS: a linear probe

@dataclass(frozen=True)
class ProbeConfig:
    epochs: int = 10          # passes over the training tokens; a linear model on a few 10k tokens is there by ~5
    batch_size: int = 256     # tokens per AdamW step
    lr: float = 1e-2          # AdamW; features are standardised, so one LR fits every layer and static vectors
    weight_decay: float = 1e-4  # a little L2 so separable data do not push weights to infinity
    seed: int = 0


def pos_probe(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
              n_classes: int, config: ProbeConfig = ProbeConfig()) -> dict:
    """Train a linear softmax classifier on (N, D) token features and return test accuracy.

    Features are standardised with the training tokens' mean and std (an affine map: what a linear
    probe can separate does not change, but one learning rate then suits every layer). Minibatch
    AdamW for a fixed number of epochs, seeded, so a rerun gives the same number."""
    if len(train_x) != len(train_y) or len(test_x) != len(test_y):
        raise ValueError(f"features and labels differ in length: {len(train_x)} vs {len(train_y)}, "
                         f"{len(test_x)} vs {len(test_y)}")
    mean, std = train_x.mean(0), train_x.std(0).clamp_min(1e-6)
    tx, vx = (train_x - mean) / std, (test_x - mean) / std
    gen = torch.Generator().manual_seed(config.seed)
    clf = nn.Linear(train_x.shape[1], n_classes)
    with torch.random.fork_rng():
        torch.manual_seed(config.seed)
        clf.reset_parameters()
    epochs = (torch.randperm(len(tx), generator=gen).split(config.batch_size) for _ in range(config.epochs))
    fit_head(clf, epochs, lambda clf, idx: nn.functional.cross_entropy(clf(tx[idx]), train_y[idx]),
             lr=config.lr, weight_decay=config.weight_decay)
    with torch.no_grad():
        train_acc = (clf(tx).argmax(-1) == train_y).float().mean().item()
        test_acc = (clf(vx).argmax(-1) == test_y).float().mean().item()
    return {"accuracy": test_acc, "train_accuracy": train_acc, "n_train": len(train_y), "n_test": len(test_y)}


def stack_tokens(features: Sequence[torch.Tensor], layer: int) -> torch.Tensor:
    """(sum T_i, D): one layer of per-sentence (L, T_i, D) features, all tokens in order."""
    return torch.cat([f[layer] for f in features])


# ----------------------------------------------------------------------------- WSD: 1-NN over sense centroids

TIE_TOLERANCE = 1e-5   # cosines this close count as equal: means of identical float32 vectors differ in the last bits


def wsd_split(lemmas: Sequence[str], senses: Sequence[str], seed: int, test_fraction: float = 0.25) -> np.ndarray:
    """A boolean mask: True = the example builds centroids, False = held out for testing.

    Per (lemma, sense), a seeded random `test_fraction` of its examples (at least one) is held out when
    the sense has at least two examples; a sense with one example only builds its centroid. So every
    test example's sense has a centroid, and a different seed gives a different split."""
    rng = np.random.default_rng(seed)
    train = np.ones(len(senses), dtype=bool)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(zip(lemmas, senses)):
        groups.setdefault(key, []).append(i)
    for key in sorted(groups):
        idx = groups[key]
        if len(idx) >= 2:
            n_test = max(1, int(round(test_fraction * len(idx))))
            n_test = min(n_test, len(idx) - 1)
            train[rng.permutation(idx)[:n_test]] = False
    return train


def most_frequent_sense(lemmas: Sequence[str], senses: Sequence[str], train: np.ndarray) -> dict[str, str]:
    """lemma -> the sense with most *training* examples; ties go to the sense seen first (WordNet file order).

    This is the MFS baseline of the WSD literature computed from our training examples, not WordNet's
    first-listed sense (which comes from SemCor counts that WordNet's example sentences do not follow)."""
    counts: dict[str, dict[str, int]] = {}
    for lemma, sense, is_train in zip(lemmas, senses, train):
        if is_train:
            per = counts.setdefault(lemma, {})
            per[sense] = per.get(sense, 0) + 1            # dicts keep first-seen order: ties -> first seen
    return {lemma: max(per, key=per.get) for lemma, per in counts.items()}


def wsd_1nn(vectors: torch.Tensor, lemmas: Sequence[str], senses: Sequence[str], train: np.ndarray) -> dict:
    """§5.3 WSD by nearest sense centroid. `vectors` (N, D): the lemma's vector in each example.

    Centroids: the mean of each (lemma, sense)'s training vectors. A test example is scored only when
    its lemma has at least two senses with training examples (otherwise there is nothing to choose);
    it is correct when the closest centroid by cosine is its sense (ties: the sense with most training
    examples). Returns accuracy (every test
    example gets exactly one answer, so precision = recall = F1 = accuracy), the MFS baseline's
    accuracy on the same examples, and the counts."""
    vectors = torch.as_tensor(vectors, dtype=torch.float32)
    lemmas, senses, train = list(lemmas), list(senses), np.asarray(train, dtype=bool)
    if not (len(vectors) == len(lemmas) == len(senses) == len(train)):
        raise ValueError("vectors, lemmas, senses and train need one entry per example")
    unit = nn.functional.normalize(vectors, dim=-1)
    centroids: dict[str, dict[str, torch.Tensor]] = {}
    groups: dict[tuple[str, str], list[int]] = {}
    for i in np.flatnonzero(train):
        groups.setdefault((lemmas[i], senses[i]), []).append(int(i))
    counts: dict[str, dict[str, int]] = {}
    for (lemma, sense), idx in groups.items():
        centroids.setdefault(lemma, {})[sense] = vectors[idx].mean(0)
        counts.setdefault(lemma, {})[sense] = len(idx)
    mfs = most_frequent_sense(lemmas, senses, train)
    correct = correct_mfs = n = 0
    for i in np.flatnonzero(~train):
        cands = centroids.get(lemmas[i], {})
        if len(cands) < 2 or senses[i] not in cands:
            continue
        names = sorted(cands, key=lambda s: -counts[lemmas[i]][s])       # stable: most training examples first
        c = nn.functional.normalize(torch.stack([cands[s] for s in names]), dim=-1)
        scores = c @ unit[i]
        # ties (identical vectors, as a static or char-only layer gives every occurrence of a word form)
        # go to the sense with most training examples, i.e. such vectors answer like MFS
        guess = names[int(torch.nonzero(scores >= scores.max() - TIE_TOLERANCE)[0])]
        correct += guess == senses[i]
        correct_mfs += mfs[lemmas[i]] == senses[i]
        n += 1
    if n == 0:
        raise ValueError("no test example has a lemma with two or more senses in training; use more examples")
    return {"accuracy": correct / n, "mfs": correct_mfs / n, "n_test": n,
            "n_lemmas": len({lemmas[i] for i in np.flatnonzero(~train) if len(centroids.get(lemmas[i], {})) >= 2})}


def wsd_examples(examples, max_lemmas: int | None = None, max_tokens: int = 60, seed: int = 0) -> list:
    """The WordNet examples usable for WSD: single-word lemmas with at least two senses that each have at
    least two examples (so every lemma can be tested on two senses), sentences of at most `max_tokens`
    tokens. `max_lemmas` keeps a seeded random subset of those lemmas (smoke sizes)."""
    per: dict[str, dict[str, list]] = {}
    for ex in examples:
        lemma = ex.lemma.lower()
        if ex.index < 0 or "_" in lemma or " " in lemma or len(tokenize(ex.sentence)) > max_tokens:
            continue
        per.setdefault(lemma, {}).setdefault(ex.sense, []).append(ex)
    keep = sorted(lemma for lemma, senses in per.items() if sum(len(v) >= 2 for v in senses.values()) >= 2)
    if max_lemmas is not None and max_lemmas < len(keep):
        keep = sorted(np.random.default_rng(seed).choice(keep, size=max_lemmas, replace=False).tolist())
    return [ex for lemma in keep for exs in per[lemma].values() for ex in exs]
