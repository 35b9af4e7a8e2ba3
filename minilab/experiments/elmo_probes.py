"""Chapter 03's probes: what each layer of our biLM knows, next to static vectors (Peters et al. 2018 §5.3).

    from minilab.experiments import elmo_probes as ep
    res = ep.run_probes("checkpoints/elmo-laptop.pt", "laptop", seeds=3)   # results/elmo-probes-laptop.json
    res["summary"]        # {"pos_l0": .., "pos_l1": .., "pos_l2": .., "pos_static": .., "wsd_l0": .., ..}

- POS: a linear probe per layer (0, 1, 2) and on static SGNS vectors, trained on Brown's universal tags of
  sentences from Brown's *train* files, scored on sentences from its *test* files, which the biLM never read.
- WSD: 1-nearest sense centroid per layer on WordNet's example sentences (see minilib.eval.probe), with the
  most-frequent-sense baseline. Static vectors are not scored: one vector per word cannot tell senses apart,
  so their 1-NN answer is no better than guessing one sense per word.
- The control: every layer is probed a second time in the biLM's *untrained* twin (same architecture, random
  weights, models.elmo.untrained_like). Random char-CNN and LSTM features already tag well, so what
  pretraining taught a layer is its margin over its twin, not its raw score.
- Each seed draws other probe-training sentences, another probe init and another WSD split; results are the
  mean and std over seeds.

The static baseline is SGNS (minilib's word2vec) trained on exactly the text the biLM was pretrained on:
the checkpoint's provenance names it (word count and sha256), and the vectors are cached in .cache/.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from minilib import runtime
from minilab import provenance
from minilib.eval import probe
from minilab.experiments import store
from minilib.models.pretrained import file_sha256

RESULT = store.register("elmo-probes", "checkpoint_sha256", "config", "seeds")   # results/elmo-probes-<profile>.json
CACHE_DIR = provenance.REPO_ROOT / ".cache" / "elmo-static"


@dataclass(frozen=True)
class ProbesConfig:
    pos_train_sentences: int       # Brown train sentences per seed for the probe (paper: all of PTB train)
    pos_test_sentences: int        # Brown test sentences, the same for every seed
    pos_epochs: int = 10           # probe epochs (see ProbeConfig)
    wsd_max_lemmas: int | None = None  # None: every usable WordNet lemma (~870)
    wsd_test_fraction: float = 0.25    # held-out share of each sense's examples
    static_dim: int = 100          # SGNS baseline size (chapter 01's laptop vectors)
    static_epochs: int = 3         # SGNS passes (chapter 01's laptop setting)
    batch_size: int = 64           # sentences per biLM forward pass
    threads: int | None = 1        # torch threads: LSTMs on a busy 2-core CPU run fastest on one


SIZES = {
    # smoke: direction only, < 20 s on one thread
    "smoke": ProbesConfig(pos_train_sentences=150, pos_test_sentences=100, pos_epochs=5, wsd_max_lemmas=40,
                          static_dim=50, static_epochs=1),
    # laptop: ~40k training tokens per seed (a linear probe needs no more to settle) and ~20k test tokens
    "laptop": ProbesConfig(pos_train_sentences=2000, pos_test_sentences=1000),
    "full": ProbesConfig(pos_train_sentences=20_000, pos_test_sentences=3358, pos_epochs=20, static_dim=300,
                         static_epochs=10, threads=None),
}


def default_checkpoint(profile: str) -> Path:
    return provenance.REPO_ROOT / "checkpoints" / f"elmo-{profile}.pt"


def shipped_checkpoint(profile: str) -> Path:
    """The biLM a profile's experiments read: smoke has none of its own and reads the shipped laptop one."""
    return default_checkpoint("laptop" if profile == "smoke" else profile)


# ----------------------------------------------------------------------------- the static baseline

def static_baseline(meta: dict, dim: int = 100, epochs: int = 3, seed: int = 0, cache_dir: Path = CACHE_DIR,
                    progress: bool = False):
    """SGNS vectors (minilib.models.word2vec) trained on the biLM's own pretraining text; cached.

    `meta` is the checkpoint's provenance: its data["train"] says how many words of pretraining_corpus
    ("train") the biLM read and their sha256, which is checked here, so both models saw the same text."""
    from minilib import data
    from minilib.data.vectors import WordVectors
    from minilib.data.corpora import documents_fingerprint
    from minilib.models.word2vec import Word2VecConfig
    from minilib.recipes.word2vec import train_word2vec

    seen = (meta.get("data") or {}).get("train")
    if not seen:
        raise ValueError("the checkpoint's provenance has no data['train'] fingerprint; re-create it with "
                         "`python -m minilib pretrain elmo`")
    cfg = Word2VecConfig(dim=dim, epochs=epochs, seed=seed)
    key = hashlib.sha256(json.dumps([seen["sha256"], asdict(cfg)]).encode()).hexdigest()[:16]
    path = Path(cache_dir) / f"sgns-{key}.npz"
    if path.exists():
        return WordVectors.load(path)
    docs = data.pretraining_corpus("train", max_words=seen["words"])
    if documents_fingerprint(docs)["sha256"] != seen["sha256"]:
        raise ValueError(f"the first {seen['words']:,} words of the pretraining corpus are not the text this biLM "
                         "was trained on (sha256 differs): the corpus changed; retrain the biLM")
    sentences = [toks for d in docs for line in d.text.split("\n") if (toks := data.tokenize(line))]
    vocab = data.Vocab.build(sentences, min_count=1, specials=())
    ids = [np.asarray(vocab.encode(s), dtype=np.int64) for s in sentences]
    # the tensor step, as the shipped probes and sgns-lr points were made (the compiled step's vectors differ)
    vectors = train_word2vec(ids, vocab.counts, cfg, words=vocab.itos, progress=progress, threads=1,
                             engine="hogwild").vectors
    path.parent.mkdir(parents=True, exist_ok=True)
    vectors.save(path)
    return WordVectors.load(path)


# ----------------------------------------------------------------------------- the probes

def pos_data(n_sentences: int, split: str, seed: int):
    """(token lists, universal tag ids) of `n_sentences` Brown sentences of `split`, drawn with `seed`."""
    from minilib.data import UNIVERSAL_TAGS, brown_tagged

    sents = brown_tagged(split)
    idx = np.sort(np.random.default_rng(seed).choice(len(sents), size=min(n_sentences, len(sents)), replace=False))
    tag_id = {t: i for i, t in enumerate(UNIVERSAL_TAGS)}
    words = [[probe.probe_token(w) for w in sents[i].words] for i in idx]
    tags = torch.tensor([tag_id[t] for i in idx for t in sents[i].utags])
    return words, tags


def _mean_std(xs) -> dict:
    xs = np.asarray(xs, dtype=float)
    return {"mean": float(xs.mean()), "std": float(xs.std(ddof=1)) if len(xs) > 1 else 0.0, "runs": xs.tolist()}


def run_probes(elmo_path, profile: str | None = None, seeds: int = 3, config: ProbesConfig | None = None,
               out: Path | None = None, log=print) -> dict:
    """POS probes (layers 0-2 and static) and WSD (layers 0-2, MFS) over `seeds` seeds; saved stamped to
    results/elmo-probes-<profile>.json (or `out`) when the numbers differ from the file's (a re-run that finds the
    same numbers leaves the file, and its stamp, as they were). Returns what the file holds, with its "path"."""
    from minilib import data
    from minilib.data import UNIVERSAL_TAGS
    from minilib.models.pretrained import load_pretrained
    from minilib.models.elmo import untrained_like

    profile = profile or runtime.profile()
    config = config or SIZES[profile]
    if seeds < 1:
        raise ValueError("need at least one seed")
    if config.threads:
        torch.set_num_threads(config.threads)
    t0 = time.perf_counter()
    model, _, meta = load_pretrained(elmo_path, "elmo", device="cpu")
    static = static_baseline(meta, config.static_dim, config.static_epochs)
    times = {"static_vectors": time.perf_counter() - t0}
    log(f"biLM {elmo_path} ({model.num_params():,} params), static SGNS: {static}")

    # --- POS: test features once, training features per seed; each layer of the biLM and of its untrained
    # twin (the control: what the architecture gives before any pretraining), and the static vectors
    t = time.perf_counter()
    bilms = {"l": model, "untrained_l": untrained_like(model, seed=0)}
    test_words, test_y = pos_data(config.pos_test_sentences, "test", seed=0)
    test_feats = {name: probe.layer_features(m, test_words, config.batch_size) for name, m in bilms.items()}
    test_static = probe.static_features(static, test_words)
    pcfg = probe.ProbeConfig(epochs=config.pos_epochs)
    pos = {f"{name}{k}": [] for name in bilms for k in range(model.n_layers)} | {"static": []}
    for seed in range(seeds):
        words, y = pos_data(config.pos_train_sentences, "train", seed=seed)
        for name, m in bilms.items():
            feats = probe.layer_features(m, words, config.batch_size)
            for k in range(model.n_layers):
                pos[f"{name}{k}"].append(probe.pos_probe(
                    probe.stack_tokens(feats, k), y, probe.stack_tokens(test_feats[name], k), test_y,
                    len(UNIVERSAL_TAGS), dataclasses.replace(pcfg, seed=seed)))
        pos["static"].append(probe.pos_probe(probe.stack_tokens(probe.static_features(static, words), 0), y,
                                             probe.stack_tokens(test_static, 0), test_y, len(UNIVERSAL_TAGS),
                                             dataclasses.replace(pcfg, seed=seed)))
        log(f"POS seed {seed}: " + " ".join(f"{k}={v[-1]['accuracy']:.3f}" for k, v in pos.items()))
    times["pos"] = time.perf_counter() - t

    # --- WSD: every example's lemma vector once; seeds only change the split
    t = time.perf_counter()
    examples = probe.wsd_examples(data.wordnet_examples(), config.wsd_max_lemmas)
    sents = [data.tokenize(e.sentence) for e in examples]
    lemmas, senses = [e.lemma.lower() for e in examples], [e.sense for e in examples]
    vecs = {}                                               # "l1", "untrained_l1", ...: each example's lemma vector
    for name, m in bilms.items():
        feats = probe.layer_features(m, sents, config.batch_size)
        for k in range(model.n_layers):
            vecs[f"{name}{k}"] = torch.stack([f[k, e.index] for f, e in zip(feats, examples)])
    wsd = {key: [] for key in vecs}
    for seed in range(seeds):
        train = probe.wsd_split(lemmas, senses, seed, config.wsd_test_fraction)
        for key in wsd:
            wsd[key].append(probe.wsd_1nn(vecs[key], lemmas, senses, train))
        log(f"WSD seed {seed}: " + " ".join(f"{k}={v[-1]['accuracy']:.3f}" for k, v in wsd.items())
            + f" mfs={wsd['l0'][-1]['mfs']:.3f} ({wsd['l0'][-1]['n_test']} test examples)")
    times["wsd"] = time.perf_counter() - t

    # the lesson's "bank"/"apple" sentences: within-sense minus across-sense cosine, per layer and static
    from minilab.experiments.contextual import grouping_table
    grouping = grouping_table(model, static)
    log("sense grouping: " + "; ".join(f"{w}: " + " ".join(f"{k} {v:+.3f}" for k, v in g.items())
                                       for w, g in grouping.items()))

    summary = {f"pos_{k}": _mean_std([r["accuracy"] for r in v]) for k, v in pos.items()}
    summary |= {f"wsd_{k}": _mean_std([r["accuracy"] for r in v]) for k, v in wsd.items()}
    summary["wsd_mfs"] = _mean_std([r["mfs"] for r in wsd["l0"]])
    result = {
        "experiment": "elmo-probes", "checkpoint": provenance.shown_path(elmo_path),
        "checkpoint_sha256": file_sha256(elmo_path),
        "checkpoint_metrics": meta.get("metrics"), "config": asdict(config), "seeds": list(range(seeds)),
        "summary": summary,
        "pos": {k: v for k, v in pos.items()}, "wsd": wsd,
        "pos_static_oov": probe.oov_rate(static, test_words),
        "sense_grouping": grouping, "wsd_examples": len(examples), "wsd_lemmas": len(set(lemmas)),
        "static": {"model": "SGNS (minilib word2vec)", "words": len(static), "dim": static.dim,
                   "epochs": config.static_epochs, "trained_on": (meta.get("data") or {}).get("train")},
        "mfs": "the sense with most centroid-building (training) examples; ties: first in WordNet file order",
        "seconds": {k: round(v, 1) for k, v in times.items()} | {"total": round(time.perf_counter() - t0, 1)},
        "provenance": provenance.stamp(seed=0, threads=torch.get_num_threads()),
    }
    result = dict(store.save(RESULT, profile, result, at=out))  # the same numbers again: the file stays as it is
    result["path"] = str(out or store.path(RESULT, profile))
    return result


def cached_result(profile: str | None = None) -> dict | None:
    """results/elmo-probes-<profile>.json as run_probes saved it, or None before it has run (reads only)."""
    return store.load(RESULT, profile)


def summary_line(result: dict, name: str = "elmo-probes") -> str:
    s = result["summary"]
    keys = ("pos_l0", "pos_l1", "pos_l2", "pos_static", "wsd_l1", "wsd_l2", "wsd_mfs")
    return f"{name}: " + " ".join(f"{k}={s[k]['mean']:.3f}" for k in keys)


def control_line(result: dict) -> str:
    """The untrained twin's scores beside the trained biLM's, per layer: what pretraining added."""
    s = result["summary"]
    return "untrained biLM (control): " + " ".join(
        f"{task}_l{k}={s[f'{task}_untrained_l{k}']['mean']:.3f}" for task in ("pos", "wsd") for k in (0, 1, 2)
        if f"{task}_untrained_l{k}" in s)


# ----------------------------------------------------------------------------- CLI

def cli_run(args, name: str) -> int:
    profile = args.profile or runtime.profile()
    ckpt = args.checkpoint or default_checkpoint(profile)
    if not Path(ckpt).exists():
        raise SystemExit(f"no biLM at {ckpt}: pass --checkpoint PATH, or make one with "
                         f"`python -m minilib pretrain elmo --profile {profile}`")
    result = run_probes(ckpt, profile, args.seeds, out=args.out)
    print(f"wrote {result['path']} in {result['seconds']['total']:.0f} s")
    print(control_line(result))
    print(summary_line(result, name))
    return 0
