"""ELMo where its paper says it helps most: a token-level task with few labels (Peters et al. 2018 §5.3,
Table 6 probes POS; §3.3 adds ELMo to a task model's input).

The task is `pos` (Brown gold universal tags; train sentences from Brown's train files, every word of
Brown's test files scored, which the biLM never read). With n labelled sentences, the same tagger reads
one of three kinds of word vectors, each frozen:

    static      our SGNS vector of the word (trained on the text the biLM read; chapters 01, 03)
    elmo        §3.2 eq. 1: a learned ScalarMix of the biLM's 3 layers at that word
    untrained   the same ScalarMix over the biLM's untrained twin (same architecture, random weights):
                the control for "what did pretraining teach?"

and two taggers, the same for every kind of vector:

    tagger-*    linear: dropout, one linear layer to the 12 tags (a probe with a mixed input)
    bilstm-*    §3.3's way: dropout, a 1-layer biLSTM over the sentence's vectors, a linear layer

For chapter 03's sentiment contrast the same biLSTM reads a sentence task (`--tagger bilstm-max --task
rt`): its states max-pooled over the words, one linear layer to the classes (methods bilstm-max-*).

Every point is one grid-runner point (experiments/grid.py), cached and stamped; the test split is
scored once after a fixed number of steps and nothing is selected on it.

    python -m minilib experiment elmo-pos        # elmo-pos: static_acc_n10= elmo_acc_n10= untrained_acc_n10= ...
    python -m minilib experiment elmo-pos --tagger bilstm-max --task rt
"""
from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from minilib import runtime, tasks
from minilab import provenance
from minilib.eval.classification import balanced_accuracy
from minilab.experiments import grid
from minilab.experiments.elmo_probes import SIZES as PROBE_SIZES, shipped_checkpoint, static_baseline
from minilib.models.elmo import ScalarMix
from minilib.models.pretrained import file_sha256
from minilib.runtime import UsageError
from minilib.train import checkpoint
from minilib.train.head import fit_head

KINDS = ("static", "elmo", "untrained")
TAGGERS = ("tagger", "bilstm")
FEATURE_CACHE = provenance.REPO_ROOT / ".cache" / "elmo-pos"


@dataclass(frozen=True)
class PosConfig:
    label_counts: tuple = (10, 30, 100, 300, 1000)   # labelled training sentences per point
    seeds: tuple[int, ...] = (0, 1, 2)                 # each seed: another sample and another init
    steps: int = 400                     # Adam steps, the same for every n (small samples are revisited)
    batch_size: int = 16                 # sentences per step
    lr: float = 5e-3                     # Adam, decaying linearly to 0
    weight_decay: float = 1e-4
    dropout: float = 0.5                 # on the input vectors (§3.3: dropout on ELMo)
    hidden: int = 64                     # biLSTM units per direction (bilstm taggers)
    max_test: int | None = None          # cap the test sentences with a fixed subset (smoke only)
    threads: int | None = 1


SIZES = {
    "smoke": PosConfig(label_counts=(10, 30), seeds=(0,), steps=40, max_test=150),
    "laptop": PosConfig(),
    "full": PosConfig(threads=None),
}


@dataclass(frozen=True)
class SentenceConfig(PosConfig):
    """The same biLSTM over frozen vectors as a sentence classifier (max-pooled states, §3.3's way of
    adding ELMo to a task model), for chapter 03's RT comparison."""
    label_counts: tuple = (100, 1000, grid.ALL)
    steps: int = 200                     # at least; a sentence brings one label where a tagged one brings ~20
    batch_size: int = 32
    epochs: int = 4                      # passes over the sample, and never fewer than `steps` steps


SENTENCE_SIZES = {
    "smoke": SentenceConfig(label_counts=(20, 40), seeds=(0,), steps=40, epochs=1, max_test=150),
    "laptop": SentenceConfig(),
    "full": SentenceConfig(threads=None),
}


# ----------------------------------------------------------------------------- features

def _words(sentences) -> list[list[str]]:
    """Token-task sentences are word lists (tags align with them); a sentence task's texts are tokenized."""
    from minilib.data import tokenize
    from minilib.eval.probe import probe_token

    return [tokenize(s) or ["<empty>"] if isinstance(s, str) else [probe_token(w) for w in s] for s in sentences]


def sentence_features(kind: str, elmo_path, sentences: Sequence[Sequence[str]]) -> list[torch.Tensor]:
    """(L, T_i, D) float32 vectors per sentence: static (L=1) or the biLM's 3 layers (trained or untrained)."""
    from minilib.eval.probe import layer_features, static_features
    from minilib.models.elmo import untrained_like
    from minilib.models.pretrained import load_pretrained

    model, _, meta = load_pretrained(elmo_path, "elmo")
    words = _words(sentences)
    if kind == "static":
        prof = PROBE_SIZES.get(meta.get("profile", "laptop"), PROBE_SIZES["laptop"])
        return static_features(static_baseline(meta, prof.static_dim, prof.static_epochs), words)
    if kind == "elmo":
        return layer_features(model, words)
    if kind == "untrained":
        return layer_features(untrained_like(model, seed=0), words)
    raise UsageError(f"vector kind {kind!r}: use one of {', '.join(KINDS)}")


def split_features(kind: str, elmo_path, task: tasks.Task, split: str = "test", max_n: int | None = None, log=print):
    """A split's features (fp16, one (L, T_i, D) per item) and labels, cached by the checkpoint's sha256
    and the task's fingerprint."""
    items = getattr(task, split)
    n = len(items) if max_n is None else min(max_n, len(items))
    path = FEATURE_CACHE / f"{task.name}-{task.fingerprint[:12]}-{kind}-{file_sha256(elmo_path)[:16]}-{split}-n{n}.pt"
    if split == "test" and not path.exists():  # the name this cache had when only test splits were cached
        old = path.with_name(path.name.replace("-test-n", "-n"))
        path = old if old.exists() else path
    # a capped split: the first sentences of a token task; a stratified subset of a sentence task (rt's test
    # split is in file order, sorted by rating)
    keep = range(n) if task.kind == "token" or n == len(items) else tasks.stratified_sample(items.labels, n, seed=0)
    labels = [torch.tensor(items.labels[i]) for i in keep]
    if path.exists():
        return torch.load(path, weights_only=True), labels
    t = time.perf_counter()
    feats = [f.half() for f in sentence_features(kind, elmo_path, [items.texts[i] for i in keep])]
    checkpoint.save(path, feats)
    log(f"{kind} features of {n} {task.name} {split} items in {time.perf_counter() - t:.0f} s -> {path}")
    return feats, labels


# ----------------------------------------------------------------------------- the taggers

class Tagger(nn.Module):
    """ScalarMix over the input layers (one layer: just a scale) -> dropout -> [biLSTM] -> linear to the tags.
    pool: a sentence classifier instead — the biLSTM states max-pooled over the sentence's words, then linear."""

    def __init__(self, n_layers: int, dim: int, n_tags: int, dropout: float, hidden: int | None = None,
                 pool: bool = False):
        super().__init__()
        self.mix = ScalarMix(n_layers)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True) if hidden else None
        self.pool = pool
        self.out = nn.Linear(2 * hidden if hidden else dim, n_tags)

    def forward(self, layers: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """layers (L, B, T, D), lengths (B,) -> logits (B, T, n_tags), or (B, n_classes) when pooling."""
        x = self.dropout(self.mix(layers))                                   # (B, T, D)
        if self.lstm is not None:
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            x, _ = nn.utils.rnn.pad_packed_sequence(self.lstm(packed)[0], batch_first=True, total_length=x.shape[1])
        if self.pool:
            real = torch.arange(x.shape[1], device=x.device)[None, :] < lengths[:, None].to(x.device)  # (B, T)
            x = x.masked_fill(~real[..., None], float("-inf")).amax(dim=1)   # (B, 2H)
        return self.out(x)


def _pad(feats: Sequence[torch.Tensor], tags: Sequence[torch.Tensor]):
    """(L, B, T, D) float, (B, T) tags with -100 at padding (or (B,) classes of sentences), (B,) lengths."""
    lengths = torch.tensor([f.shape[1] for f in feats])
    L, D, T = feats[0].shape[0], feats[0].shape[2], int(lengths.max())
    x = torch.zeros(L, len(feats), T, D)
    for b, f in enumerate(feats):
        x[:, b, :f.shape[1]] = f.float()
    if tags[0].dim() == 0:
        return x, torch.stack(list(tags)), lengths
    y = torch.full((len(feats), T), -100, dtype=torch.long)
    for b, t in enumerate(tags):
        y[b, :len(t)] = t
    return x, y, lengths


def predicted(model: Tagger, feats, tags, batch_size: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """(predicted, true) label of every scored word (or, pooled, item), in eval mode."""
    model.eval()
    preds, truth = [], []
    with torch.no_grad():
        for i in range(0, len(feats), batch_size):
            x, y, lengths = _pad(feats[i:i + batch_size], tags[i:i + batch_size])
            keep = y != -100
            preds.append(model(x, lengths).argmax(-1)[keep])
            truth.append(y[keep])
    return torch.cat(preds), torch.cat(truth)


def accuracy(model: Tagger, feats, tags, batch_size: int = 128) -> float:
    pred, y = predicted(model, feats, tags, batch_size)
    return int((pred == y).sum()) / len(y)


def train_tagger(task, idx, seed: int, point: dict, checkpoint, *, kind: str, tagger: str, log=print,
                 **_) -> dict[str, Any]:
    """One point (the grid's `train`): the tagger (or, for a sentence task, the pooled classifier) on
    `task.train[idx]`, a fixed number of steps, then every test item scored once."""
    task = tasks.get(task)
    pooled = task.kind == "sentence"
    config = SentenceConfig(**point) if pooled else PosConfig(**point)
    if pooled:  # a sentence task's train split is cached whole; pos's (50k sentences, ~1.5 GB) is not
        all_feats, all_labels = split_features(kind, checkpoint, task, "train", log=log)
        feats, tags = [all_feats[i] for i in idx], [all_labels[i] for i in idx]
    else:
        feats = sentence_features(kind, checkpoint, [task.train.texts[i] for i in idx])
        tags = [torch.tensor(task.train.labels[i]) for i in idx]
    test_x, test_y = split_features(kind, checkpoint, task, "test", config.max_test, log=log)
    steps = max(config.steps, -(-config.epochs * len(feats) // config.batch_size)) if pooled else config.steps
    runtime.seed_everything(seed)
    model = Tagger(feats[0].shape[0], feats[0].shape[2], task.n_classes, config.dropout,
                   config.hidden if tagger.startswith("bilstm") else None, pool=pooled)
    rng = np.random.default_rng(seed)
    batches = (rng.choice(len(feats), size=min(config.batch_size, len(feats)), replace=False) for _ in range(steps))

    def loss(model, batch):
        x, y, lengths = _pad([feats[i] for i in batch], [tags[i] for i in batch])
        logits = model(x, lengths)
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-100)

    curve = []

    def record(step, value):
        if step % max(1, steps // 10) == 0:
            curve.append({"step": step, "train_loss": value.item()})

    fit_head(model, [batches], loss, lr=config.lr, weight_decay=config.weight_decay, steps=steps, on_step=record)
    pred, truth = predicted(model, test_x, test_y)
    acc = int((pred == truth).sum()) / len(truth)
    scored = {"n_train_items": len(tags), "n_test_items": len(test_y)} if pooled else \
        {"n_train_tokens": int(sum(len(t) for t in tags)), "n_test_tokens": int(sum(len(t) for t in test_y))}
    return {"kind": kind, "tagger": tagger, "accuracy": acc,
            **({"balanced_accuracy": balanced_accuracy(pred, truth)} if pooled else {}),
            "curve": curve, "steps": steps, **scored,
            "layer_weights": model.mix.weights.detach().tolist(), "gamma": model.mix.gamma.item()}


def method_name(tagger: str, kind: str) -> str:
    return f"{tagger}-{kind}"


for _tagger in TAGGERS:
    for _kind in KINDS:
        grid.register(grid.Method(method_name(_tagger, _kind), "elmo-pos",
                                  functools.partial(train_tagger, kind=_kind, tagger=_tagger),
                                  lambda prof: {k: v for k, v in asdict(SIZES[prof]).items()
                                                if k not in ("label_counts", "seeds", "threads")},
                                  checkpoint=shipped_checkpoint, kinds=("token",),
                                  label=f"{_kind} vectors, {'linear' if _tagger == 'tagger' else 'biLSTM'} tagger"))
for _kind in KINDS:  # the same biLSTM, max-pooled, as a sentence classifier: beside chapter 03's other RT arms
    grid.register(grid.Method(f"bilstm-max-{_kind}", "elmo-downstream",
                              functools.partial(train_tagger, kind=_kind, tagger="bilstm-max"),
                              lambda prof: {k: v for k, v in asdict(SENTENCE_SIZES[prof]).items()
                                            if k not in ("label_counts", "seeds", "threads")},
                              checkpoint=shipped_checkpoint, kinds=("sentence",),
                              label=f"{_kind} vectors, biLSTM + max-pool classifier (§3.3)"))


# ----------------------------------------------------------------------------- summary and CLI

def run(tagger: str = "tagger", profile: str | None = None, force: bool = False, log=print,
        task: str = "pos") -> list[dict]:
    """The grid of one tagger over the three kinds of vectors: on pos, or (tagger "bilstm-max") a sentence task."""
    prof = profile or runtime.profile()
    sentence = tasks.get(task).kind == "sentence"
    if sentence != (tagger == "bilstm-max"):
        raise UsageError(f"--tagger {tagger} does not fit task {task}: use bilstm-max on a sentence task "
                         f"(e.g. rt), tagger or bilstm on pos")
    config = (SENTENCE_SIZES if sentence else SIZES)[prof]
    return grid.run_grid(task, [method_name(tagger, k) for k in KINDS], config.label_counts, config.seeds,
                         log=log, force=force, threads=config.threads)


def summary_line(rows: Sequence[dict], name: str = "elmo-pos") -> str:
    """`elmo-pos: static_acc_n10=… elmo_acc_n10=… untrained_acc_n10=… …` (means over seeds)."""
    by = {(r["method"].rsplit("-", 1)[1], r["n_labels"]): 1 - r["error"] for r in grid.summarize(rows)}
    counts = sorted({n for _, n in by})
    return f"{name}: " + " ".join(f"{k}_acc_n{n}={by[k, n]:.3f}" for n in counts for k in KINDS if (k, n) in by)


def cli_run(args, name: str) -> int:
    ckpt = shipped_checkpoint(runtime.profile())
    if not Path(ckpt).exists():
        raise UsageError(f"no biLM at {ckpt}: make one with `python -m minilib pretrain elmo`")
    rows = run(args.tagger, force=args.force, task=args.task)
    for r in grid.summarize(rows, ddof=1):
        print(f"n={r['n_labels']:<5} {r['method']:18s} accuracy {1 - r['error']:.3f} ± {r['error_std']:.3f}")
    print(summary_line(rows, name))
    return 0
