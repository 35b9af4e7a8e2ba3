"""Why BERT (masked LM + NSP) stays on its copy plateau where the masked LM alone leaves it: the variants measured
apart, at the 2 × 128 shape, where the plateau shows within ~30M tokens (docs/measurements.md).

    python tools/bert_diagnosis.py run nsp0 google          # pretrain the variants one after another (resumable)
    python tools/bert_diagnosis.py summarize                # results/bert-diagnosis-laptop.json, one line a run

Every variant trains exactly as the shipped 2 × 128 encoders did (`pretrain bert --shape 2x128`) with the MLM-only
run's schedule (--steps 14407: at each step the same learning rate), and differs in one thing (VARIANTS). The two
shipped 2 × 128 checkpoints are the references: MLM + NSP on this book's pairs, and the masked LM alone.

`summarize` reads each run's held-out curve (its own held-out batches) and scores every run's snapshots again on
one common held-out set, the MLM-only run's (real continuations, the same masks), so the `[MASK]` nats are
compared on the same positions at equal tokens. For the runs with an NSP head it also measures, on 8 training
batches per snapshot, the gradient norm of each loss over the shared encoder, their cosine, and how often the
sum exceeds the clip (1.0): what share of the update NSP takes.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPE, STEPS = "2x128", 14407          # the shipped bert-mlm-laptop-2x128 run's shape and schedule
RUNS = ROOT / ".cache" / "bert-diagnosis"
RESULT = "bert-diagnosis"      # experiments.bert_plateau.DIAGNOSIS: results/bert-diagnosis-laptop.json
REFERENCES = {"mlm+nsp": ("checkpoints/bert-laptop-2x128.pt", "BERT as shipped: MLM + NSP, this book's pairs"),
              "mlm": ("checkpoints/bert-mlm-laptop-2x128.pt", "the masked LM alone, real continuations")}
VARIANTS = {   # name: (what differs, the pretrain options that make it)
    "nsp0": ("BERT's pairs (half NotNext), NSP loss weighted 0", ["--nsp-weight", "0"]),
    "google": ("NSP on pairs cut as create_pretraining_data.py cuts them", ["--pairing", "google"]),
    "doc-sentences": ("RoBERTa's DOC-SENTENCES input, no NSP (§4.2)",
                      ["--objective", "mlm", "--pairing", "doc-sentences"]),
    "google-nsp0": ("Google's pairs, NSP loss weighted 0", ["--pairing", "google", "--nsp-weight", "0"]),
    # the released code clips the global norm at 1.0 for batches of 256 sequences; batch noise grows as
    # 1/sqrt(batch), so at our 16 pairs the same clip sits sqrt(256 / 16) = 4 times lower
    "clip4": ("MLM + NSP with the clip scaled to our batch (4.0)", ["--clip", "4"]),
    # the fix's candidates: NSP's gradient over the shared encoder is ~4x the masked LM's once NSP learns, so a
    # weight of 0.3 brings it to about the MLM's size and 0.1 well below it
    "nsp0.3": ("MLM + NSP, the NSP loss weighted 0.3", ["--nsp-weight", "0.3"]),
    "nsp0.1": ("MLM + NSP, the NSP loss weighted 0.1", ["--nsp-weight", "0.1"]),
}
GRAD_STEPS = (0, 500, 2000, 5000, 9000, 14000)   # snapshots whose per-head gradients are measured
GRAD_BATCHES = 16   # 16 batches of 16 pairs: pooled, the paper's 256 sequences a step (§A.2)


def command(name: str) -> list[str]:
    return [sys.executable, "-m", "minilib", "pretrain", "bert", "--profile", "laptop", "--shape", SHAPE,
            "--steps", str(STEPS), *VARIANTS[name][1], "--threads", "1", "--progress", "off",
            "--out", str((RUNS / f"bert-{name}-{SHAPE}.pt").relative_to(ROOT))]


def run(names: list[str]) -> int:
    """Each variant's pretraining in turn; a run already finished is loaded, an interrupted one resumed."""
    RUNS.mkdir(parents=True, exist_ok=True)
    for name in names:
        with open(RUNS / f"{name}.log", "a") as log:
            code = subprocess.call(command(name), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        if code:
            return code
    return 0


# ----------------------------------------------------------------------------- summarize

def _grad_norms(model, batches, nsp_weight: float) -> dict:
    """Per-head gradient norms over the shared encoder (every parameter but the two heads'), their cosine,
    and the share of batches whose summed gradient (over all parameters) the clip at 1.0 would scale."""
    import torch

    shared = [p for n, p in model.named_parameters() if not n.startswith(("pooler", "nsp_head", "mlm."))]
    rows, sums = [], [0.0, 0.0]
    torch.manual_seed(0)                    # dropout's draws: the same numbers every time
    model.train()
    for batch in batches:
        out = model(*batch)
        g_mlm = torch.autograd.grad(out.mlm_loss, shared, retain_graph=True, allow_unused=True)
        g_nsp = torch.autograd.grad(out.nsp_loss, shared, retain_graph=True, allow_unused=True)
        flat = [torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(gs, shared)])
                for gs in (g_mlm, g_nsp)]
        model.zero_grad()
        (out.mlm_loss + nsp_weight * out.nsp_loss).backward()
        total = torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters() if p.grad is not None))
        model.zero_grad()
        sums = [sums[0] + flat[0], sums[1] + flat[1]]
        rows.append((float(flat[0].norm()), float(flat[1].norm()),
                     float(torch.nn.functional.cosine_similarity(flat[0], flat[1], dim=0)), float(total),
                     float(out.mlm_loss.detach()), float(out.nsp_loss.detach())))
    model.eval()
    cols = list(zip(*rows))
    mean = lambda xs: sum(xs) / len(xs)
    # the mean of the batches' gradients is the gradient of one batch len(batches) times larger: noise shrinks
    # in it as 1/sqrt(len(batches)), the signal does not
    return {"mlm_grad_norm": mean(cols[0]), "nsp_grad_norm": mean(cols[1]), "cosine": mean(cols[2]),
            "mlm_grad_norm_pooled": float((sums[0] / len(batches)).norm()),
            "nsp_grad_norm_pooled": float((sums[1] / len(batches)).norm()), "pooled_batches": len(batches),
            "total_grad_norm": mean(cols[3]), "clipped_share": mean([t > 1.0 for t in cols[3]]),
            "mlm_loss": mean(cols[4]), "nsp_loss": mean(cols[5])}


def adam_second_moment(model, state_path: Path) -> float | None:
    """The RMS of Adam's running gradient scale, sqrt(exp_avg_sq), over the encoder's blocks, read from a run's
    resumable training state (None without one): how large the gradients the shared layers are divided by."""
    import torch

    if not state_path.is_file():
        return None
    opt = torch.load(state_path, map_location="cpu", weights_only=False)["opt"]
    params = [(f"bert.{n}", p) for n, p in model.named_parameters()]          # PretrainingLoss wraps it as .bert
    order = [n for n, p in params if p.ndim >= 2] + [n for n, p in params if p.ndim < 2]   # train.groups' split
    chunks = [opt["state"][i]["exp_avg_sq"].sqrt().reshape(-1) for i, name in enumerate(order)
              if name.startswith("bert.blocks.") and i in opt["state"]]
    return float(torch.cat(chunks).pow(2).mean().sqrt()) if chunks else None


def summarize() -> int:
    import torch

    from minilib import data
    from minilab import provenance
    from minilab.experiments import store
    from minilib.data.mlm import DocumentStream, SpecialTokens, document_level
    from minilab.experiments.bert_plateau import snapshot_bert
    from minilab.experiments.flywheel import snapshots
    from minilib.models.pretrained import load_pretrained
    from minilib.recipes.bert import (BERTPretrainConfig, batches_for, held_out_batches, held_out_scores,
                                      unigram_nats)

    torch.set_num_threads(1)
    mlm = load_pretrained(ROOT / REFERENCES["mlm"][0], "bert")
    tok, T = mlm.vocab, mlm.model.cfg.block_size
    specials = SpecialTokens.of(tok)
    mlm_config = BERTPretrainConfig(**mlm.meta["config"])
    common = held_out_batches(tok, data.pretraining_corpus("valid"), mlm_config, T)
    train = DocumentStream.from_documents(tok, document_level(data.pretraining_corpus("train")))
    unigram = unigram_nats(train, common, tok.vocab_size)
    runs = {name: (ROOT / path, what) for name, (path, what) in REFERENCES.items()}
    runs.update({name: (RUNS / f"bert-{name}-{SHAPE}.pt", what) for name, (what, _) in VARIANTS.items()})
    out = {}
    for name, (path, what) in runs.items():
        if not path.with_suffix(".json").is_file():
            continue
        pre = load_pretrained(path, "bert")
        config = BERTPretrainConfig(**pre.meta["config"])
        folder = ROOT / ".cache" / "pretrain" / path.stem / "snapshots"
        grad_batches = list(batches_for(train, specials, config, GRAD_BATCHES, T, seed=1))
        metrics = pre.meta["metrics"]
        same_held_out = (config.objective, config.pairing) == ("mlm", "lines") and \
            (config.batch_size, config.valid_batches, config.seed) == (mlm_config.batch_size, mlm_config.valid_batches,
                                                                       mlm_config.seed)
        if folder.is_dir():                      # every snapshot scored again on the common held-out set
            points = [(snap.step, snap.tokens, snap.source) for snap in snapshots(path, folder)]
        elif same_held_out:                      # its own curve was scored on the very same batches
            points = [(p["step"], p["tokens"], None) for p in metrics["curve"][:-1]] + \
                     [(metrics["steps"], metrics["train_tokens_seen"], path)]
        else:                                    # a shipped run without its snapshots: the end only
            points = [(metrics["steps"], metrics["train_tokens_seen"], path)]
        own = {p["step"]: p for p in metrics["curve"]}
        curve = []
        for step, tokens, source in points:
            row = {"step": step, "tokens": tokens}
            if source is None:
                row["mask_nats"] = own[step]["valid_mask_nats"]
                curve.append(row)
                continue
            model = pre.model if source == path else snapshot_bert(source, pre.model.cfg)
            row["mask_nats"] = held_out_scores(model, common, specials.mask_id)["valid_mask_nats"]
            if config.objective == "mlm+nsp" and (step in GRAD_STEPS or source == path):
                row.update(_grad_norms(model, grad_batches, config.nsp_weight))
            curve.append(row)
        out[name] = {"adam_block_grad_rms": adam_second_moment(pre.model, ROOT / ".cache" / "pretrain" / path.stem /
                                                                "fit-0.pt"),
                     "what": what, "checkpoint": provenance.shown_path(path), "config": pre.meta["config"],
                     "tokens": metrics["train_tokens_seen"], "mask_nats": curve[-1]["mask_nats"],
                     "nsp_accuracy": metrics.get("valid_nsp_accuracy"), "curve": curve,
                     "own_held_out_curve": [{k: p[k] for k in ("step", "tokens", "valid_mask_nats",
                                                               "valid_nsp_accuracy") if k in p}
                                            for p in metrics["curve"]]}
        print(f"bert-diagnosis: run={name} tokens={out[name]['tokens']} mask_nats={out[name]['mask_nats']:.3f} "
              f"unigram={unigram:.3f} nsp_accuracy={out[name]['nsp_accuracy']}")
    provenance.write_if_changed(store.path(RESULT, "laptop"), {"shape": SHAPE, "steps": STEPS, "unigram_at_mask_common": unigram,
                                         "held_out": "the MLM-only run's held-out batches (real continuations)",
                                         "runs": out, "provenance": provenance.stamp()})
    print(f"wrote {store.path(RESULT, 'laptop').relative_to(ROOT)}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run", help="pretrain the named variants, one after another (resumable)")
    r.add_argument("names", nargs="+", choices=list(VARIANTS))
    sub.add_parser("summarize", help="score every run on one held-out set: results/bert-diagnosis-laptop.json")
    args = p.parse_args(argv)
    return run(args.names) if args.what == "run" else summarize()


if __name__ == "__main__":
    sys.exit(main())
