"""Chapter 07's look inside BERT's pretraining: what a masked LM learns first, measured along its snapshots.

§3.1's 80 / 10 / 10 rule gives three kinds of scored position: the input shows [MASK] (only the context can
tell the answer), a random token, or the answer itself. Scoring each kind apart on the run's own held-out
batches, at every pretraining snapshot, shows the order in which the masked LM learns: copying the unchanged
10 % comes first and alone takes the overall loss to ~0.9 × the unigram loss; the [MASK] rows fall below
the unigram guess only when the model starts reading its neighbours — the plateau and "sudden drop" of MLM
training (Chen et al. 2024; Gopalani et al. 2024 see the same copy-first phase). The left-to-right twin of
the same size and compute, whose next-token target needs no attention to beat the unigram (the current token
is at its own position), is the reference curve. Beside it, what the frozen top layer of each encoder knows
about a word's part of speech (a linear probe, as chapter 03 probed ELMo), snapshot by snapshot.

    python -m minilib experiment bert-plateau [--snapshots DIR] [--shape 2x128]
                                                 # results/bert-plateau-<profile>[-<shape>].json
    bert-plateau: tokens=… mlm+nsp_mask_nats=… mlm_mask_nats=… unigram_at_mask=… … ltr_next_nats=… mlm+nsp_pos_probe=… …
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from minilib import runtime
from minilab import provenance
from minilab.experiments import store
from minilib.runtime import UsageError

RESULT = store.register("bert-plateau", "profile", "shape")    # the encoders' snapshots decide the rest
DIAGNOSIS = store.register("bert-diagnosis", "shape", "steps")   # MLM + NSP's variants: tools/bert_diagnosis.py
MASKED = ("mlm+nsp", "mlm")          # the objectives whose masked positions are split
REFERENCE = "ltr"                    # the twin read from its JSON's curve
PROBE_SENTENCES = {"smoke": 40, "laptop": 300, "full": 300}   # pos train / test sentences of the linear probe


def _checkpoint(profile: str, objective: str, shape: tuple[int, int] | None = None) -> Path:
    from minilib.recipes.bert import default_out

    return default_out("laptop" if profile == "smoke" else profile, objective, shape)


def _variant(shape: tuple[int, int] | None) -> str | None:
    """Another shape than the profile's is stored apart: results/bert-plateau-<profile>-2x128.json."""
    return f"{shape[0]}x{shape[1]}" if shape else None


def result_path(profile: str, shape: tuple[int, int] | None = None) -> Path:
    """results/bert-plateau-<profile>.json; another shape than the profile's adds it (…-laptop-2x128.json)."""
    return store.path(RESULT, profile, _variant(shape))


def snapshot_bert(path: str | Path, cfg):
    """A BERT with the snapshot's weights (fp16 on disk, the tied decoder stored once), float32, eval mode."""
    from minilib.models.bert import BERT
    from minilib.models.pretrained import load_half_state

    return load_half_state(BERT(cfg), path).eval()


def split_curve(objective: str, profile: str, snapshot_dir: str | Path | None = None, log=print,
                shape: tuple[int, int] | None = None) -> list[dict]:
    """recipes.bert.masked_nats_by_input at every snapshot of the objective's shipped run, on its held-out batches."""
    from minilib import data
    from minilib.data.mlm import DocumentStream, SpecialTokens, document_level
    from minilab.experiments.flywheel import snapshots
    from minilib.models.pretrained import load_pretrained
    from minilib.recipes.bert import BERTPretrainConfig, held_out_batches, masked_nats_by_input, unigram_log_probs

    checkpoint = _checkpoint(profile, objective, shape)
    folder = Path(snapshot_dir) / checkpoint.stem / "snapshots" if snapshot_dir else None
    pre = load_pretrained(checkpoint, "bert")
    config = BERTPretrainConfig(**pre.meta["config"])
    valid = held_out_batches(pre.vocab, data.pretraining_corpus("valid"), config, pre.model.cfg.block_size)
    train_words = None if profile != "smoke" else 60_000
    train = DocumentStream.from_documents(pre.vocab, document_level(data.pretraining_corpus("train", max_words=train_words)))
    unigram = unigram_log_probs(train, pre.model.cfg.vocab_size)
    mask_id = SpecialTokens.of(pre.vocab).mask_id
    rows = []
    for snap in snapshots(checkpoint, folder):
        model = pre.model if snap.source == checkpoint else snapshot_bert(snap.source, pre.model.cfg)
        split = masked_nats_by_input(model, valid, unigram, mask_id)
        rows.append({"step": snap.step, "tokens": snap.tokens, **split})
        if log:
            log(f"{objective} at {snap.tokens:,} tokens: [MASK] {split['[MASK]']:.3f}, unchanged "
                f"{split['unchanged']:.3f}, random {split['random']:.3f} nats (unigram at [MASK] "
                f"{split['unigram at [MASK]']:.3f})")
    return rows


@torch.no_grad()
def word_states(model, tok, sentences, last_piece: bool) -> tuple[torch.Tensor, list[int]]:
    """Top-layer states of each word of `sentences` ([CLS] words [SEP], one sentence at a time): its first
    WordPiece (the encoder, §5.3's tagger) or its last (the causal twin, which has read the whole word only
    there). Sentences longer than the context are skipped. Returns (N, C) states and the sentence indices used."""
    from minilab.experiments.bert_finetune import word_pieces

    states, used = [], []
    for i, words in enumerate(sentences):
        pieces = word_pieces(tok, words)
        ids = [tok.cls_id] + [p for ps in pieces for p in ps] + [tok.sep_id]
        if len(ids) > model.cfg.block_size:
            continue
        lengths = torch.tensor([len(ps) for ps in pieces])
        last = lengths.cumsum(0)                               # each word's last piece ([CLS] is position 0)
        states.append(model.hidden(torch.tensor([ids]))[0, last if last_piece else last - lengths + 1])
        used.append(i)
    return (torch.cat(states) if states else torch.empty(0, model.cfg.n_embd)), used


def pos_probe_accuracy(model, tok, objective: str, profile: str) -> float:
    """Held-out accuracy of a linear POS probe (eval.probe.pos_probe, chapter 03's) on the encoder's frozen
    top-layer word states (word_states: the twin reads each word's last piece), trained on Brown's first
    PROBE_SENTENCES train sentences of the `pos` task and scored on as many test sentences."""
    from minilib import tasks
    from minilib.eval.probe import pos_probe

    pos, n = tasks.get("pos"), runtime.pick(PROBE_SENTENCES, profile)
    data_ = {}
    for split in ("train", "test"):
        sents = getattr(pos, split)
        x, used = word_states(model, tok, sents.texts[:n], last_piece=objective == "ltr")
        data_[split] = (x, torch.tensor([t for i in used for t in sents.labels[i]]))
    return pos_probe(*data_["train"], *data_["test"], pos.n_classes)["accuracy"]


def pos_probe_curve(objective: str, profile: str, snapshot_dir: str | Path | None = None, log=print,
                    shape: tuple[int, int] | None = None) -> list[dict]:
    """pos_probe_accuracy at each snapshot: what the encoder has learned about each word's role, along
    pretraining."""
    from minilab.experiments.flywheel import snapshots
    from minilib.models.pretrained import load_pretrained

    checkpoint = _checkpoint(profile, objective, shape)
    folder = Path(snapshot_dir) / checkpoint.stem / "snapshots" if snapshot_dir else None
    pre = load_pretrained(checkpoint, "bert")
    rows = []
    for snap in snapshots(checkpoint, folder):
        model = pre.model if snap.source == checkpoint else snapshot_bert(snap.source, pre.model.cfg)
        acc = pos_probe_accuracy(model, pre.vocab, objective, profile)
        rows.append({"step": snap.step, "tokens": snap.tokens, "pos_probe_accuracy": acc})
        if log:
            log(f"{objective} at {snap.tokens:,} tokens: linear POS probe {acc:.1%}")
    return rows


def run(profile: str | None = None, snapshot_dir: str | Path | None = None, write: bool = True, log=print,
        shape: tuple[int, int] | None = None) -> dict:
    """The three encoders of one shape (None: the profile's own), split and probed along their snapshots."""
    prof = profile or runtime.profile()
    t0 = time.time()
    curves = {objective: split_curve(objective, prof, snapshot_dir, log, shape) for objective in MASKED}
    probes = {objective: pos_probe_curve(objective, prof, snapshot_dir, log, shape)
              for objective in (*MASKED, REFERENCE)}
    ltr_meta = json.loads(_checkpoint(prof, REFERENCE, shape).with_suffix(".json").read_text())
    result = {"experiment": "bert-plateau", "profile": prof, "shape": list(shape) if shape else None,
              "masked": curves,
              "ltr": [{"step": p["step"], "tokens": p["tokens"], "next_nats": p["valid_nats_per_token"]}
                      for p in ltr_meta["metrics"]["curve"]],
              "ltr_unigram": ltr_meta["metrics"]["unigram_nats_per_token"], "pos_probe": probes,
              "seconds": round(time.time() - t0, 1), "provenance": provenance.stamp()}
    if write:
        result = store.save(RESULT, prof, result, variant=_variant(shape))
    return result


def cached_result(profile: str | None = None, shape: tuple[int, int] | None = None) -> dict | None:
    """The stored result of `shape`'s encoders (None: the profile's), or None before it has run (reads only)."""
    return store.load(RESULT, profile, variant=_variant(shape))


def plot(result: dict, ax=None):
    """Held-out nats vs pretraining tokens: each masked objective's [MASK] and unchanged rows, the unigram guess
    at [MASK] (dashed) and the left-to-right twin's next-token loss."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.2))
    for (objective, rows), colour in zip(result["masked"].items(), ("C0", "C2")):
        tokens = [r["tokens"] / 1e6 for r in rows]
        ax.plot(tokens, [r["[MASK]"] for r in rows], "o-", color=colour, label=f"{objective}: input shows [MASK]")
        ax.plot(tokens, [r["unchanged"] for r in rows], "s:", color=colour, alpha=0.6,
                label=f"{objective}: input shows the answer")
    first = next(iter(result["masked"].values()))
    ax.plot([r["tokens"] / 1e6 for r in first], [r["unigram at [MASK]"] for r in first], "k--",
            label="unigram guess at [MASK]")
    ax.plot([p["tokens"] / 1e6 for p in result["ltr"]], [p["next_nats"] for p in result["ltr"]], "^-",
            color="C3", label="left-to-right twin: next token")
    ax.set_xlabel("pretraining tokens (millions)")
    ax.set_ylabel("held-out nats per predicted token")
    ax.set_ylim(0, 10)
    ax.legend(fontsize=8)
    ax.set_title("What a masked LM learns first: to copy")
    return ax


def plot_probe(result: dict, ax=None):
    """Linear POS probe accuracy of each encoder's frozen top layer vs pretraining tokens (step 0: untrained)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 3.8))
    for (objective, rows), colour in zip(result["pos_probe"].items(), ("C0", "C2", "C3")):
        ax.plot([r["tokens"] / 1e6 for r in rows], [100 * r["pos_probe_accuracy"] for r in rows], "o-",
                color=colour, label=objective)
    ax.set_xlabel("pretraining tokens (millions)")
    ax.set_ylabel("linear POS probe accuracy (%)")
    ax.set_title("What each encoder's top layer knows about a word's part of speech")
    ax.legend(fontsize=8)
    return ax


def summary_line(result: dict) -> str:
    parts = [f"tokens={next(iter(result['masked'].values()))[-1]['tokens']}"]
    for objective, rows in result["masked"].items():
        parts.append(f"{objective}_mask_nats={rows[-1]['[MASK]']:.3f}")
    last = next(iter(result["masked"].values()))[-1]
    parts.append(f"unigram_at_mask={last['unigram at [MASK]']:.3f}")
    parts += [f"{objective}_unchanged_nats={rows[-1]['unchanged']:.3f}" for objective, rows in result["masked"].items()]
    parts.append(f"ltr_next_nats={result['ltr'][-1]['next_nats']:.3f}")
    parts += [f"{objective}_pos_probe={rows[-1]['pos_probe_accuracy']:.3f}" for objective, rows in result["pos_probe"].items()]
    parts.append(f"untrained_pos_probe={result['pos_probe']['mlm+nsp'][0]['pos_probe_accuracy']:.3f}")
    return "bert-plateau: " + " ".join(parts)


def cli_run(args, name: str) -> int:
    from minilib.recipes.bert import parse_shape

    if args.threads:
        torch.set_num_threads(args.threads)
    shape = parse_shape(args.shape) if args.shape else None
    prof = args.profile or runtime.profile()
    for objective in (*MASKED, REFERENCE):
        if not _checkpoint(prof, objective, shape).is_file():
            raise UsageError(f"no {_checkpoint(prof, objective, shape).name}: pretrain the three encoders first "
                             f"(python -m minilib pretrain bert --objective mlm+nsp|mlm|ltr"
                             f"{f' --shape {args.shape}' if shape else ''})")
    print(summary_line(run(prof, args.snapshots, shape=shape)))
    return 0
