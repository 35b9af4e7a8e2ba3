"""Chapter 04's experiment: how many labels does a classifier need, with and without ULMFiT?

The paper's Figure 3 (Howard & Ruder 2018, §5): with 100 labelled examples ULMFiT matches
training from scratch on 10x (supervised) to 100x (semi-supervised) more. Three methods, the
same classifier (ULMFiTClassifier: AWD-LSTM encoder, concat pooling, 2-block head):

    scratch             random init; every layer trains from the start, one LR, STLR
    ulmfit-supervised   the pretrained LM's encoder, stage (c) only (gradual unfreezing,
                        discriminative LRs, STLR); no target-domain LM fine-tuning
    ulmfit              stage (b) first: the LM fine-tuned on the task's unlabeled text
                        (rt: movie_lm_text(), trec: the train questions), then stage (c)

    from minilib.experiments import sample_efficiency as se
    config = se.SIZES[runtime.profile()]
    row = se.run_point("rt", 100, "ulmfit", seed=0, pretrained_path="checkpoints/awd-lstm-laptop.pt")
    rows = se.run_grid(config, "checkpoints/awd-lstm-laptop.pt")      # cached point by point

Each point samples `n_labels` training examples, stratified by class and seeded, from the
task's train split only, and reports the error on the task's fixed test split. A point is
cached as results/sample-efficiency/<task>-<method>-n<labels>-s<seed>-<profile>.json with
its provenance, and reused when the pretrained checkpoint and the config match.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from minilib import provenance, runtime
from minilib.data.labelled import TREC_COARSE

RESULTS_DIR = provenance.REPO_ROOT / "results" / "sample-efficiency"
TASKS = ("rt", "trec")
METHODS = ("scratch", "ulmfit-supervised", "ulmfit")


@dataclass(frozen=True)
class SampleEfficiencyConfig:
    task: str = "rt"                                   # rt (binary sentiment) | trec (6 question types)
    label_counts: tuple[int, ...] = (50, 100, 200, 500, 1000)  # labelled training examples per point
    methods: tuple[str, ...] = METHODS
    seeds: tuple[int, ...] = (0, 1, 2)                 # each seed: another sample and another init
    clf_epochs: int = 6                                # stage (c) epochs (5 groups: 4 unfreezing + 2 all)
    clf_lr: float = 1e-2                               # head LR; lower groups /2.6 each (§3.2)
    batch_size: int = 32
    drop_mult: float = 0.5                             # AWD-LSTM dropouts x this for fine-tuning (fastai's drop_mult)
    lm_epochs: int = 1                                 # stage (b) epochs on the task's unlabeled text
    lm_lr: float = 3e-3
    lm_max_texts: int | None = None                    # cap the stage-(b) texts (smoke)
    max_test: int | None = None                        # cap the test items with a fixed stratified subset (smoke only)
    threads: int | None = 1                            # torch threads: 1 is fastest for LSTMs on a busy 2-core CPU

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task {self.task!r}: use one of {TASKS}")
        bad = [m for m in self.methods if m not in METHODS]
        if bad:
            raise ValueError(f"unknown methods {bad}: use {METHODS}")


SIZES = {
    "smoke": SampleEfficiencyConfig(label_counts=(20, 40), seeds=(0,), clf_epochs=2, lm_epochs=1,
                                    lm_max_texts=300, max_test=200, batch_size=16),
    "laptop": SampleEfficiencyConfig(label_counts=(50, 100, 200, 500, 1000), seeds=(0, 1, 2)),
    "full": SampleEfficiencyConfig(label_counts=(50, 100, 200, 500, 1000, 2000, 5000), seeds=(0, 1, 2, 3, 4),
                                   clf_epochs=8, lm_epochs=3),
}


# ----------------------------------------------------------------------------- data

def task_data(task: str, split: str) -> tuple[list[str], list[int]]:
    """(texts, integer labels) of a task's split: rt = positive(1)/negative(0); trec = coarse type index."""
    from minilib import data

    if task == "rt":
        items = data.rt_sentiment(split)
        return [r.text for r in items], [r.label for r in items]
    if task == "trec":
        items = data.trec6(split)
        return [q.text for q in items], [TREC_COARSE.index(q.coarse) for q in items]
    raise ValueError(f"task {task!r}: use one of {TASKS}")


def n_classes(task: str) -> int:
    return 2 if task == "rt" else len(TREC_COARSE)


def task_lm_text(task: str) -> list[str]:
    """Unlabeled in-domain text for stage (b); neither ever holds a test item."""
    from minilib import data

    return data.movie_lm_text() if task == "rt" else task_data("trec", "train")[0]


def stratified_sample(labels: Sequence[int], n: int, seed: int) -> np.ndarray:
    """Indices of `n` items drawn without replacement, each class in proportion to its share
    (largest remainders, at least one per class when n allows), seeded. A smaller n with the
    same seed takes a prefix of each class's draw, so the samples are nested as n grows."""
    labels = np.asarray(labels)
    if not 0 < n <= len(labels):
        raise ValueError(f"asked for {n} labelled examples out of {len(labels)}")
    classes, counts = np.unique(labels, return_counts=True)
    quota = counts / counts.sum() * n
    take = np.floor(quota).astype(int)
    if n >= len(classes):
        take = np.maximum(take, 1)
    for i in np.argsort(-(quota - np.floor(quota)), kind="stable"):  # largest remainders first
        if take.sum() >= n:
            break
        take[i] += 1
    while take.sum() > n:  # the minimum-one rule overshot: trim the biggest class
        take[np.argmax(take)] -= 1
    take = np.minimum(take, counts)
    rng = np.random.default_rng(seed)
    picked = [rng.permutation(np.flatnonzero(labels == c))[:k] for c, k in zip(classes, take)]
    return np.sort(np.concatenate(picked))


# ----------------------------------------------------------------------------- one point

def _file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def fine_tuned_lm(task: str, pretrained_path: str | Path, config: SampleEfficiencyConfig, seed: int = 0,
                  cache_dir: str | Path | None = None):
    """Stage (b): the pretrained LM, vocabulary grown with the task's words (new rows = mean),
    fine-tuned on the task's unlabeled text. Cached (the grid reuses it for every label count
    and method): returns (lm, vocab)."""
    from minilib.data import tokenize
    from minilib.models.ulmfit import extend_vocab, fine_tune_lm, grow_vocab
    from minilib.pretrain import load_pretrained

    from minilib.models.awd_lstm import AWDLSTM

    lm, vocab, _ = load_pretrained(pretrained_path)
    key = hashlib.sha256(json.dumps([task, _file_sha256(Path(pretrained_path)), config.lm_epochs, config.lm_lr,
                                     config.lm_max_texts, config.drop_mult, seed]).encode()).hexdigest()[:16]
    cache = Path(cache_dir or provenance.REPO_ROOT / ".cache" / "ulmfit-lm") / f"{task}-{key}.pt"
    texts = task_lm_text(task)
    if config.lm_max_texts is not None:
        texts = texts[:config.lm_max_texts]
    new_vocab = grow_vocab(vocab, (tokenize(t) for t in texts), min_count=3)
    lm = extend_vocab(lm, vocab, new_vocab)
    if not cache.exists():
        tuned = AWDLSTM(lm.cfg.scale_dropouts(config.drop_mult))  # fastai's drop_mult for fine-tuning
        tuned.load_state_dict(lm.state_dict())
        runtime.seed_everything(seed)
        fine_tune_lm(tuned, texts, new_vocab, epochs=config.lm_epochs, lr=config.lm_lr,
                     batch_size=config.batch_size, seed=seed)
        cache.parent.mkdir(parents=True, exist_ok=True)
        torch.save(tuned.state_dict(), cache)
    lm.load_state_dict(torch.load(cache, map_location="cpu", weights_only=True))  # the pretrained dropouts kept
    lm.eval()
    return lm, new_vocab


def _point_path(results_dir: Path, task: str, n_labels: int, method: str, seed: int, prof: str) -> Path:
    return Path(results_dir) / f"{task}-{method}-n{n_labels}-s{seed}-{prof}.json"


def run_point(task: str, n_labels: int, method: str, seed: int, pretrained_path: str | Path,
              config: SampleEfficiencyConfig | None = None, *, results_dir: str | Path = RESULTS_DIR,
              lm_cache_dir: str | Path | None = None, force: bool = False, progress: bool | str = False) -> dict[str, Any]:
    """Train one classifier and return {"error", "accuracy", ...}; cached as JSON in `results_dir`.

    The pretrained checkpoint gives the vocabulary (all three methods tokenize alike) and, for
    the ulmfit methods, the encoder's weights; scratch uses its config with a random init.
    """
    from minilib.models.awd_lstm import AWDLSTM
    from minilib.models.ulmfit import ClassificationBatches, ULMFiTClassifier, encode_texts, error_rate, \
        fine_tune_classifier
    from minilib.pretrain import load_pretrained

    prof = runtime.profile()
    config = config or dataclasses.replace(SIZES[prof], task=task)
    if method not in METHODS:
        raise ValueError(f"method {method!r}: use one of {METHODS}")
    pretrained_sha = _file_sha256(Path(pretrained_path))
    settings = {**asdict(config), "task": task}
    path = _point_path(Path(results_dir), task, n_labels, method, seed, prof)
    if path.exists() and not force:
        cached = json.loads(path.read_text())
        if cached.get("pretrained_sha256") == pretrained_sha and cached.get("config") == json.loads(json.dumps(settings)):
            return cached
    if config.threads:
        torch.set_num_threads(config.threads)
    t0 = time.perf_counter()

    if method == "ulmfit":
        lm, vocab = fine_tuned_lm(task, pretrained_path, config, seed=0, cache_dir=lm_cache_dir)
    else:
        lm, vocab, _ = load_pretrained(pretrained_path)
    lm_seconds = time.perf_counter() - t0
    cfg = lm.cfg.scale_dropouts(config.drop_mult)
    runtime.seed_everything(seed)
    encoder_model = AWDLSTM(cfg)
    if method != "scratch":
        encoder_model.load_state_dict(lm.state_dict())
    model = ULMFiTClassifier(encoder_model.encoder, n_classes(task))

    texts, labels = task_data(task, "train")
    idx = stratified_sample(labels, n_labels, seed)
    train = ClassificationBatches(encode_texts([texts[i] for i in idx], vocab), [labels[i] for i in idx],
                                  batch_size=config.batch_size, seed=seed)
    test_texts, test_labels = task_data(task, "test")
    if config.max_test is not None and config.max_test < len(test_labels):
        # a fixed stratified subset (the split is in file order, which is sorted by rating for rt)
        keep = stratified_sample(test_labels, config.max_test, seed=0)
        test_texts, test_labels = [test_texts[i] for i in keep], [test_labels[i] for i in keep]
    test = ClassificationBatches(encode_texts(test_texts, vocab), test_labels, batch_size=64, shuffle=False)

    ulmfit = method != "scratch"  # scratch: every layer from the start, one LR (nothing to protect)
    learner = fine_tune_classifier(model, train, None, epochs=config.clf_epochs, lr=config.clf_lr,
                                   gradual_unfreezing=ulmfit, discriminative=ulmfit, stlr=True, progress=progress)
    error = error_rate(model, test)
    row = {"task": task, "n_labels": n_labels, "method": method, "seed": seed, "error": error,
           "accuracy": 1 - error, "n_test": len(test_labels), "train_loss": learner.history.epochs[-1]["train_loss"],
           "seconds": round(time.perf_counter() - t0, 2), "lm_seconds": round(lm_seconds, 2),
           "train_indices_sha256": hashlib.sha256(np.asarray(idx, dtype=np.int64).tobytes()).hexdigest(),
           "pretrained": str(pretrained_path), "pretrained_sha256": pretrained_sha, "config": settings,
           "provenance": provenance.stamp(seed=seed, threads=torch.get_num_threads())}
    row = json.loads(json.dumps(row))  # as it will read back from the cache (tuples -> lists)
    provenance.write_json(path, row)
    return row


def run_grid(config: SampleEfficiencyConfig, pretrained_path: str | Path, **kwargs) -> list[dict[str, Any]]:
    """Every (label count, method, seed) point of `config`, reusing cached points."""
    rows = []
    for n in config.label_counts:
        for method in config.methods:
            for seed in config.seeds:
                rows.append(run_point(config.task, n, method, seed, pretrained_path, config, **kwargs))
                print(f"{config.task} n={n:<5d} {method:18s} seed {seed}: error {rows[-1]['error']:.3f} "
                      f"({rows[-1]['seconds']:.0f} s)")
    return rows


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and std of the error per (task, method, n_labels), over seeds."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["method"], r["n_labels"]), []).append(r["error"])
    return [{"task": t, "method": m, "n_labels": n, "error": float(np.mean(e)), "error_std": float(np.std(e)),
             "seeds": len(e)} for (t, m, n), e in sorted(groups.items())]
