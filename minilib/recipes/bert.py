"""Pretraining BERT (Devlin et al. 2018, §3.1, §A.2): masked LM + next sentence prediction on sentence pairs
of the pretraining corpus in WordPiece; AdamW (β 0.9/0.999, weight decay 0.01), linear warm-up then linear
decay; the held-out loss and an fp16 snapshot every `eval_every` steps; the checkpoint in the one pretrained
format, with its tokenizer inside. The same recipe trains the Table 5 ablations (`objective`): "mlm"
(No NSP) and "ltr" (the left-to-right twin), each with the same compute as GPT's laptop run.

    cfg = BERTPretrainConfig.for_profile("laptop")                 # steps: GPT laptop's compute (equal_compute_tokens)
    metrics = pretrain_bert(cfg, pretraining_corpus("train"), pretraining_corpus("valid"),
                            "checkpoints/bert-laptop.pt", pretrained_tokenizer("wordpiece"),
                            checkpoint_dir=".cache/pretrain/bert-laptop")

`pretrain_bert_command` runs `python -m minilib pretrain bert` from its parsed options (their parser is
minilab/cli/pretrain.py; minilab/pretrain.py hands it the user's corpus and rebuilds the command line).
"""
from __future__ import annotations

import dataclasses
import io
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from minilib import files, runtime
from minilib.data.corpora import documents_fingerprint
from minilib.data.mlm import IGNORE_INDEX, BERTBatch, DocumentStream, PairBatches, SpecialTokens, document_level
from minilib.data.tokenizer import TOKENIZER_SIZES
from minilib.models.bert import BERT, BERT_SIZES, OBJECTIVES, bert_config
from minilib.models.gpt import GPT, GPT_SIZES, gpt_config
from minilib.models.pretrained import half_state, round_to_half, save_pretrained
from minilib.recipes.gpt import GPTPretrainConfig, HeldOutCurve, at_budget, warm_start, warm_start_meta
from minilib.train import Learner
from minilib.train.callbacks import StopAfter, TokenClock

TIED = ("mlm.decoder.weight",)   # = tok_emb.weight: stored once in snapshots and checkpoints


# ----------------------------------------------------------------------------- equal compute

def equal_compute_tokens(profile: str, objective: str = "mlm+nsp", gpt: GPTPretrainConfig | None = None,
                         shape: tuple[int, int] | None = None) -> int:
    """Tokens BERT must read to spend GPT's pretraining compute at `profile`, compute being non-embedding
    parameters × tokens (the issue's measure; `num_params(non_embedding=True)` of each model, the tied
    token embedding counted as the output layer): D_bert = N_gpt · D_gpt / N_bert.

    The parameters are counted on models built on the meta device (no memory, no time) at the
    profile's sizes (BERT's: `shape`, when given) and its tokenizers' vocabulary sizes
    (data.tokenizer.TOKENIZER_SIZES). The count is the issue's, not FLOPs: BERT's decoder runs on ~15 % of
    the positions, GPT's on all of them.
    """
    gpt = gpt or GPTPretrainConfig.for_profile(profile)
    with torch.device("meta"):
        n_gpt = GPT(gpt_config(TOKENIZER_SIZES[gpt.profile]["bpe"], gpt.profile)).num_params()
        n_bert = BERT(bert_config(TOKENIZER_SIZES[profile]["wordpiece"], profile, objective,
                                  **shape_overrides(shape))).num_params()
    gpt_tokens = gpt.steps * gpt.batch_size * GPT_SIZES[gpt.profile]["block_size"]
    return round(n_gpt * gpt_tokens / n_bert)


HEAD_DIM = 64    # BERT-base's 768 / 12 and our laptop's 256 / 4: a --shape keeps it


def shape_overrides(shape: tuple[int, int] | None) -> dict:
    """bert_config's overrides for a (n_layer, n_embd) shape other than the profile's: {} for None."""
    if shape is None:
        return {}
    n_layer, n_embd = shape
    if n_layer < 1 or n_embd < HEAD_DIM or n_embd % HEAD_DIM:
        raise runtime.UsageError(f"shape {n_layer}x{n_embd}: use ≥ 1 layer and a width that is a multiple of "
                                 f"{HEAD_DIM} (the head size), e.g. 2x128")
    return dict(n_layer=n_layer, n_embd=n_embd, n_head=n_embd // HEAD_DIM)


def parse_shape(text: str) -> tuple[int, int]:
    """'2x128' → (2, 128), checked by shape_overrides; anything else is a one-line UsageError."""
    import re

    m = re.fullmatch(r"\s*(\d+)x(\d+)\s*", text)
    if not m:
        raise runtime.UsageError(f"--shape {text}: give one shape as LAYERSxWIDTH, e.g. --shape 2x128")
    shape = (int(m[1]), int(m[2]))
    shape_overrides(shape)
    return shape


@dataclass(frozen=True)
class BERTPretrainConfig:
    profile: str = "laptop"        # the model's size: models.bert.BERT_SIZES
    objective: str = "mlm+nsp"     # "mlm+nsp" (BERT) | "mlm" (No NSP) | "ltr" (left-to-right), Table 5
    batch_size: int = 16           # pairs per step (§A.2: 256 × 512 tokens; GPT laptop's 16 × 128 here)
    steps: int = 3_894             # optimizer steps; for_profile sets them: GPT laptop's compute (equal_compute_tokens)
    lr: float = 1e-3               # peak LR (§A.2: 1e-4 for 110M parameters; a small model takes more, as GPT's)
    warmup: float = 0.05           # fraction of steps of linear warm-up (§A.2: 10,000 of 1M steps)
    weight_decay: float = 0.01     # §A.2: "L2 weight decay of 0.01" (decoupled; not on biases and LayerNorms)
    clip: float = 1.0              # global gradient-norm clip (the released code clips at 1.0)
    mask_prob: float = 0.15        # §3.1: share of tokens the masked LM predicts
    eval_every: int = 500          # steps between held-out scores and snapshots (and resumable checkpoints)
    valid_batches: int = 32        # held-out batches of batch_size pairs, drawn once (fixed masks)
    seed: int = 0
    shape: tuple[int, int] | None = None   # (n_layer, n_embd) instead of the profile's; steps follow (equal compute)
    schedule: str = "linear"       # §A.2: "linear decay of the learning rate"; "wsd" for a run at a budget
    pairing: str = "lines"         # how pairs are cut: data.mlm.PAIRINGS ("google": create_pretraining_data.py)
    nsp_weight: float = 1.0        # the NSP loss's weight in the sum (§A.2: 1; 0 keeps BERT's pairs, not its loss)

    def at_budget(self, budget: float) -> "BERTPretrainConfig":
        """This run stretched to `budget` × its compute: see recipes.gpt.at_budget."""
        return at_budget(self, budget)

    @classmethod
    def for_profile(cls, profile: str, objective: str = "mlm+nsp", **overrides) -> "BERTPretrainConfig":
        """The profile's settings; unless given, steps = GPT's compute at this profile
        (`equal_compute_tokens`) / tokens per step."""
        if objective not in OBJECTIVES:
            raise ValueError(f"objective={objective!r}: use one of {', '.join(OBJECTIVES)}")
        if overrides.get("pairing") == "doc-sentences" and objective == "mlm+nsp":
            raise runtime.UsageError("--pairing doc-sentences has no second segment, so no NSP: give it "
                                     "--objective mlm (RoBERTa §4.2)")
        sizes = {"smoke": dict(batch_size=8, eval_every=20, valid_batches=4),
                 "laptop": dict(),
                 # BERT-base's shape on one GPU (§A.2: LR 1e-4, 10,000 warm-up steps of 1M)
                 "full": dict(batch_size=64, lr=1e-4, warmup=0.1, eval_every=1_000, valid_batches=64)}
        settings = {**runtime.pick(sizes, profile), **overrides}
        if "steps" not in settings:
            tokens_per_step = settings.get("batch_size", cls.batch_size) * BERT_SIZES[profile]["block_size"]
            settings["steps"] = round(equal_compute_tokens(profile, objective, shape=settings.get("shape"))
                                      / tokens_per_step)
        return cls(profile=profile, objective=objective, **settings)


def batches_for(stream: DocumentStream, specials: SpecialTokens, config: BERTPretrainConfig, steps: int,
                max_len: int, seed: int) -> PairBatches:
    """The objective's batches: BERT's NSP pairs (half NotNext) and masks; the ablations without NSP read
    only real continuations, masked ("mlm") or with next-token labels ("ltr")."""
    return PairBatches(stream, specials, config.batch_size, max_len, steps,
                       target="next" if config.objective == "ltr" else "mlm",
                       p_random_next=0.5 if config.objective == "mlm+nsp" else 0.0,
                       mask_prob=config.mask_prob, seed=seed, pairing=config.pairing)


def held_out_batches(tokenizer, valid_docs, config: BERTPretrainConfig, block_size: int) -> list[BERTBatch]:
    """The fixed held-out batches a run scores itself on (drawn once: the same pairs and masks every time),
    from the document-level valid text; a shipped checkpoint's config rebuilds them exactly."""
    valid_tokens = 4 * config.valid_batches * config.batch_size * block_size   # room for the pairs to vary
    stream = DocumentStream.from_documents(tokenizer, document_level(valid_docs), max_tokens=valid_tokens)
    return list(batches_for(stream, SpecialTokens.of(tokenizer), config, config.valid_batches, block_size, config.seed))


# ----------------------------------------------------------------------------- training pieces

class PretrainingLoss(torch.nn.Module):
    """The Learner's view of BERT: a BERTBatch → (mlm_loss + nsp_weight · nsp_loss, {"mlm_loss", "nsp_loss"})."""

    def __init__(self, bert: BERT, nsp_weight: float = 1.0):
        super().__init__()
        self.bert, self.nsp_weight = bert, nsp_weight

    def forward(self, ids, segments, attention_mask, labels, nsp_labels):
        out = self.bert(ids, segments, attention_mask, labels, nsp_labels)
        extras = {"mlm_loss": out.mlm_loss.detach()}
        if out.nsp_loss is None:
            return out.mlm_loss, extras
        extras["nsp_loss"] = out.nsp_loss.detach()
        return out.mlm_loss + self.nsp_weight * out.nsp_loss, extras


@torch.no_grad()
def held_out_scores(model: BERT, batches, mask_id: int | None = None) -> dict:
    """Nats per labelled token (masked tokens; next tokens for "ltr") summed over `batches` in eval mode,
    the NSP accuracy where the model has the head, and with `mask_id` the nats at the positions whose input
    shows [MASK] alone ("valid_mask_nats": only there must the model read context; see masked_nats_by_input)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    nats = tokens = correct = pairs = mask_nats = masked = 0
    try:
        for batch in batches:
            batch = [t.to(device) for t in batch]
            out = model(*batch)
            rows = batch[3].reshape(-1) != IGNORE_INDEX
            n = int(rows.sum())
            nats += float(out.mlm_loss) * n
            tokens += n
            if mask_id is not None:
                at_mask = batch[0].reshape(-1)[rows] == mask_id
                per_token = torch.nn.functional.cross_entropy(out.mlm_logits.float(), batch[3].reshape(-1)[rows],
                                                              reduction="none")
                mask_nats += float(per_token[at_mask].sum())
                masked += int(at_mask.sum())
            if out.nsp_logits is not None:
                correct += int((out.nsp_logits.argmax(-1) == batch[4]).sum())
                pairs += len(batch[4])
    finally:
        model.train(was_training)
    scores = {"valid_nats_per_token": nats / max(tokens, 1), "valid_tokens": tokens}
    if masked:
        scores["valid_mask_nats"] = mask_nats / masked
    if pairs:
        scores["valid_nsp_accuracy"] = correct / pairs
    return scores


def unigram_log_probs(train: DocumentStream, vocab_size: int) -> np.ndarray:
    """(vocab_size,) log p of each token under the train split's unigram distribution, add-one smoothed."""
    counts = np.bincount(train.ids, minlength=vocab_size).astype(np.float64) + 1.0
    return np.log(counts / counts.sum())


def unigram_nats(train: DocumentStream, batches, vocab_size: int) -> float:
    """The plateau: nats per labelled token of the best context-free guess, the train split's unigram
    distribution (add-one smoothed), on the same held-out labels. A masked LM gets ~10 % below it by copying
    the unchanged tokens alone; it uses context once its [MASK] positions ("valid_mask_nats") fall below it."""
    logp = unigram_log_probs(train, vocab_size)
    labels = np.concatenate([b.labels.numpy().ravel() for b in batches])
    return float(-logp[labels[labels != IGNORE_INDEX]].mean())


@torch.no_grad()
def masked_nats_by_input(model: BERT, batches, unigram_logp: np.ndarray, mask_id: int) -> dict[str, float]:
    """Held-out nats per masked token split by what the input showed at the position (§3.1's 80 / 10 / 10):
    "[MASK]" (the model must read the context), "random" (a wrong token), "unchanged" (the answer itself),
    and the unigram guess at the [MASK] positions. A masked LM first learns to copy the unchanged 10 %
    (that alone takes the overall loss to ~0.9 × unigram); it uses context only once its "[MASK]" row
    falls below the unigram one."""
    was_training = model.training
    model.eval()
    neg_logp = torch.from_numpy(-unigram_logp)       # unigram_log_probs(train, vocab_size): computed once by the caller
    sums = dict.fromkeys(("[MASK]", "random", "unchanged", "unigram at [MASK]"), 0.0)
    ns = dict.fromkeys(sums, 0)
    try:
        for batch in batches:
            rows = batch.labels.reshape(-1) != IGNORE_INDEX
            labels, shown = batch.labels.reshape(-1)[rows], batch.ids.reshape(-1)[rows]
            logits = model(batch.ids, batch.segments, batch.attention_mask, batch.labels).mlm_logits
            nats = torch.nn.functional.cross_entropy(logits.float(), labels, reduction="none")
            masked = shown == mask_id
            for key, where, values in (("[MASK]", masked, nats), ("unchanged", shown == labels, nats),
                                       ("random", ~masked & (shown != labels), nats),
                                       ("unigram at [MASK]", masked, neg_logp[labels])):
                sums[key] += float(values[where].sum())
                ns[key] += int(where.sum())
    finally:
        model.train(was_training)
    return {key: sums[key] / max(ns[key], 1) for key in sums}


class HeldOutMLMCurve(HeldOutCurve):
    """GPT's HeldOutCurve for BERT: every `every` steps (and after the last) the held-out loss per labelled
    token (and NSP accuracy) on fixed batches, and an fp16 snapshot. points: [{"step", "tokens",
    "valid_nats_per_token", ...}], kept in the resumable checkpoint."""

    def __init__(self, model: BERT, valid_batches, every: int, tokens_per_step: int,
                 snapshot_dir: Path | None, log=print, mask_id: int | None = None):
        super().__init__(model, None, every, tokens_per_step, snapshot_dir, log)
        self.valid_batches, self.mask_id = valid_batches, mask_id

    def score(self, learner) -> None:
        step = learner.step
        if any(p["step"] == step for p in self.points):
            return
        scores = held_out_scores(self.model, self.valid_batches, self.mask_id)
        scores.pop("valid_tokens")
        self.points.append({"step": step, "tokens": step * self.tokens_per_step, **scores})
        if self.snapshot_dir is not None:
            buffer = io.BytesIO()
            torch.save(half_state(self.model, TIED), buffer)
            files.atomic_write_bytes(self.snapshot_dir / f"step-{step:06d}.pt", buffer.getvalue())
        nsp = f", NSP accuracy {scores['valid_nsp_accuracy']:.3f}" if "valid_nsp_accuracy" in scores else ""
        mask = f" ({scores['valid_mask_nats']:.3f} where the input shows [MASK])" if "valid_mask_nats" in scores else ""
        self.log(f"step {step}: {step * self.tokens_per_step:,} tokens, held-out "
                 f"{scores['valid_nats_per_token']:.3f} nats/token{mask}{nsp}")


def pretrain_bert(config: BERTPretrainConfig, train_docs, valid_docs, out_path, tokenizer,
                  progress: bool | str = True, device: str | torch.device | None = None,
                  checkpoint_dir: str | Path | None = None, resume: bool = True, max_steps: int | None = None,
                  extra_meta: dict | None = None, log=print, warm_start_from: str | Path | None = None) -> dict:
    """Pretrain a BERT (or an ablation, `config.objective`) on `train_docs` with the WordPiece `tokenizer`,
    score `valid_docs`, write `out_path` and its JSON. Returns the metrics written into the JSON.

    With `checkpoint_dir` the training state is saved every `eval_every` steps and on interrupt, and a
    second call with the same arguments resumes where the first stopped; snapshots go to
    `checkpoint_dir/snapshots/`; `warm_start_from`: as pretrain_gpt's.
    """
    train_docs, valid_docs = document_level(train_docs), document_level(valid_docs)   # §3.2: no shuffled sentences
    t0 = time.time()
    runtime.seed_everything(config.seed)
    specials = SpecialTokens.of(tokenizer)
    model = BERT(bert_config(tokenizer.vocab_size, config.profile, config.objective, **shape_overrides(config.shape)))
    T = model.cfg.block_size
    train_stream = DocumentStream.from_documents(tokenizer, train_docs)
    train = batches_for(train_stream, specials, config, config.steps, T, config.seed)
    valid = held_out_batches(tokenizer, valid_docs, config, T)
    checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
    mask_id = None if config.objective == "ltr" else specials.mask_id
    curve = HeldOutMLMCurve(model, valid, config.eval_every, config.batch_size * T,
                            checkpoint_dir / "snapshots" if checkpoint_dir else None, log=log, mask_id=mask_id)
    clock = TokenClock()
    callbacks = [curve, clock] + ([StopAfter(max_steps)] if max_steps else [])
    learner = Learner(PretrainingLoss(model, config.nsp_weight), train, None, weight_decay=config.weight_decay, clip=config.clip,
                      device=device, progress=progress, callbacks=callbacks, checkpoint_dir=checkpoint_dir,
                      checkpoint_every=config.eval_every if checkpoint_dir else None)
    curve.warm_start = warm_start(learner, model, warm_start_from, checkpoint_dir, resume)   # resuming reloads it
    learner.fit(1, lr=config.lr, schedule=config.schedule, warmup=config.warmup, resume=resume)
    model.cpu()
    fp32 = curve.points[-1]
    round_to_half(model)                                     # the metrics below are the saved model's
    scores = held_out_scores(model, valid, mask_id)
    metrics = {**scores, "valid_nats_per_token_fp32": fp32["valid_nats_per_token"],
               "unigram_nats_per_token": unigram_nats(train_stream, valid, tokenizer.vocab_size),
               "objective": config.objective, "curve": curve.points, "steps": learner.step,
               "train_tokens_seen": learner.step * config.batch_size * T,
               "train_stream_tokens": int(len(train_stream.ids)), "tokens_per_s": round(clock.tokens_per_s, 1),
               "seconds": round(time.time() - t0, 1), "params": model.num_params(non_embedding=False),
               "params_non_embedding": model.num_params(),
               "equal_compute_tokens": equal_compute_tokens(config.profile, config.objective), **warm_start_meta(curve)}
    meta = runtime.stamp(seed=config.seed, model="bert", metrics=metrics, **(extra_meta or {}),
                            tokenizer=tokenizer.kind,
                            data={"train": documents_fingerprint(train_docs),
                                  "valid": documents_fingerprint(valid_docs)},
                            config=dataclasses.asdict(config), architecture=dataclasses.asdict(model.cfg))
    save_pretrained(out_path, model, tokenizer, meta)
    return metrics


class LMLoss(torch.nn.Module):
    """The Learner's view of BERT trained on its token objective alone (masked or next-token): no NSP loss,
    whatever heads the model has."""

    def __init__(self, bert: BERT):
        super().__init__()
        self.bert = bert

    def forward(self, ids, segments, attention_mask, labels, nsp_labels):
        return self.bert(ids, segments, attention_mask, labels).loss


def adapt_lm(model: BERT, texts, tokenizer, steps: int, lr: float, warmup: float = 0.06, batch_size: int = 16,
             seed: int = 0, texts_per_document: int = 8, progress: bool | str = False) -> BERT:
    """The in-domain stage for BERT (Gururangan et al. 2020 §5, "task-adaptive pretraining", as RoBERTa trains:
    the masked LM alone), in place, on a task's unlabelled text: `texts_per_document` texts in a row make a
    document, pairs of real continuations (no NotNext), §3.1's masking ("ltr": next tokens), `steps`
    batches, linear warm-up then linear decay (§A.2)."""
    texts = list(texts)
    docs = [" ".join(texts[i:i + texts_per_document]) for i in range(0, len(texts), texts_per_document)]
    stream = DocumentStream.from_documents(tokenizer, docs)
    train = PairBatches(stream, SpecialTokens.of(tokenizer), batch_size, model.cfg.block_size, steps,
                        target="next" if model.cfg.objective == "ltr" else "mlm", p_random_next=0.0, seed=seed)
    learner = Learner(LMLoss(model.train()), train, None, weight_decay=0.01, clip=1.0, progress=progress)
    learner.fit(1, lr=lr, schedule="linear", warmup=warmup)
    return model.eval()


# ----------------------------------------------------------------------------- `python -m minilib pretrain bert`

BERT_WORDS = {"smoke": 60_000, "laptop": None, "full": None}  # train words; None = the whole train split


def default_out(profile: str, objective: str, shape: tuple[int, int] | None = None,
                budget: float | None = None) -> Path:
    """checkpoints/bert-<profile>.pt for BERT, bert-<objective>-<profile>.pt for an ablation; another shape
    than the profile's adds it (bert-laptop-2x128.pt), a budget too (bert-mlm-laptop-4x.pt)."""
    name = "bert" if objective == "mlm+nsp" else f"bert-{objective}"
    suffix = (f"-{shape[0]}x{shape[1]}" if shape is not None else "") + ("" if budget is None else f"-{budget:g}x")
    return files.REPO_ROOT / "checkpoints" / f"{name}-{profile}{suffix}.pt"


def pretrain_bert_command(args, command: str | None = None, corpus=None, tokenizer=None) -> int:
    """BERT (Devlin et al. 2018) on pretraining_corpus('train') in WordPiece, held-out loss on 'valid'.
    `command`: the command line that repeats this run (pretrain.py's _command_line), for the provenance.
    `corpus`: a user's text instead (pretrain.CorpusRun: train and held-out documents, out, checkpoint_dir,
    meta); `tokenizer`: the WordPiece to read it with (default: the shipped one)."""
    from minilib import data
    from minilib.data.tokenizer import pretrained_tokenizer

    prof = args.profile or runtime.profile()
    words = runtime.pick(BERT_WORDS, prof) if args.words is None else (args.words or None)
    if args.threads:
        torch.set_num_threads(args.threads)
    shape = parse_shape(args.shape) if args.shape else None
    if args.mask_prob is not None and not 0 < args.mask_prob < 1:
        raise runtime.UsageError(f"--mask-prob {args.mask_prob}: give a share between 0 and 1, e.g. 0.15 (§3.1)")
    if args.clip is not None and args.clip <= 0:
        raise runtime.UsageError(f"--clip {args.clip}: give a gradient norm above 0, e.g. 1.0")
    if args.nsp_weight is not None and (args.nsp_weight < 0 or args.objective != "mlm+nsp"):
        raise runtime.UsageError(f"--nsp-weight {args.nsp_weight}: give a weight ≥ 0, with --objective mlm+nsp")
    overrides = {k: v for k, v in (("steps", args.steps), ("lr", args.lr), ("shape", shape),
                                   ("mask_prob", args.mask_prob), ("warmup", args.warmup),
                                   ("pairing", args.pairing), ("nsp_weight", args.nsp_weight),
                                   ("clip", args.clip)) if v is not None}
    cfg = BERTPretrainConfig.for_profile(prof, args.objective, seed=args.seed, **overrides)
    budget = getattr(args, "budget", None)
    if budget is not None:
        cfg = cfg.at_budget(budget)
    if corpus is not None:
        out, ckpt_dir, train_docs, valid_docs = corpus.out, corpus.checkpoint_dir, corpus.train, corpus.valid
    else:
        out = args.out or default_out(prof, args.objective, shape, budget)
        ckpt_dir = args.checkpoint_dir or files.REPO_ROOT / ".cache" / "pretrain" / Path(out).stem
        train_docs, valid_docs = data.pretraining_corpus("train", max_words=words), data.pretraining_corpus("valid")
    print(f"{cfg.steps:,} steps, {cfg.steps * cfg.batch_size * BERT_SIZES[prof]['block_size']:,} tokens "
          f"({cfg.schedule} schedule); resumable from {ckpt_dir}: run the same command again to continue")
    m = pretrain_bert(cfg, train_docs, valid_docs, out, tokenizer or pretrained_tokenizer("wordpiece", prof),
                      progress=False if args.progress == "off" else "console", checkpoint_dir=ckpt_dir,
                      resume=not args.no_resume, max_steps=args.max_steps,
                      extra_meta=dict(command=command, profile=prof, threads=torch.get_num_threads(),
                                      **(corpus.meta if corpus is not None else {})),
                      warm_start_from=getattr(args, "warm_start", None))
    size_mb = Path(out).stat().st_size / 1e6
    nsp = f", NSP accuracy {m['valid_nsp_accuracy']:.3f}" if "valid_nsp_accuracy" in m else ""
    print(f"trained {m['train_tokens_seen']:,} tokens at {m['tokens_per_s']:,.0f} tokens/s "
          f"({torch.get_num_threads()} threads)")
    print(f"wrote {out} ({size_mb:.1f} MB) and {Path(out).with_suffix('.json').name}: held-out "
          f"{m['valid_nats_per_token']:.3f} nats/token (unigram {m['unigram_nats_per_token']:.3f}){nsp}")
    return 0


# ----------------------------------------------------------------------------- fine-tuning (§4, §A.3)

def fine_tune_bert(model, train, epochs: int = 3, lr: float = 5e-5, warmup: float = 0.1, *, valid=None, score=None,
                   callbacks=(), progress: bool | str = False, device=None):
    """BERT's fine-tuning (§4, §A.3): every layer from the start at one LR (searched in {5e-5, 3e-5, 2e-5}),
    batch 16 or 32 (the batches' own), 2-4 epochs, AdamW with weight decay 0.01, linear warm-up over the first
    10 % of the steps then linear decay (the released run_classifier.py's schedule). GPT-1's loop with
    BERT's numbers and no auxiliary loss (the model computes only the task's loss)."""
    from minilib.recipes.gpt import fine_tune_gpt

    return fine_tune_gpt(model, train, epochs, lr, warmup, valid=valid, score=score, callbacks=callbacks,
                         progress=progress, device=device)
