"""`python -m minilib pretrain NAME ...`: pretrain a model, write a small checkpoint with provenance.

    python -m minilib pretrain awd-lstm                       # sizes from MINILIB_PROFILE
    python -m minilib pretrain awd-lstm --words 200000 --epochs 1 --out /tmp/awd.pt

Each pretrainer is one entry of PRETRAINERS: a help line, add_arguments(parser) and
run(args) -> int. Another model (e.g. ELMo) is one more entry. A checkpoint is a
half-precision state dict (DESIGN.md §6: <= 15 MB) with the vocabulary, the config and
`meta` inside, and `<out>.json` beside it: command, commit, data fingerprint, device,
time and the final validation perplexity, measured on the half-precision weights as
saved, so `load_pretrained` + re-measuring gives the same number.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from minilib import provenance, runtime
from minilib.train import checkpoint
from minilib.train.callbacks import Callback


@dataclass(frozen=True)
class Pretrainer:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# ----------------------------------------------------------------------------- shared pieces

EOS = "<eos>"  # after every line of the corpus; ULMFiT's classifier starts each text with it


def corpus_ids(split: str, vocab, max_words: int | None = None) -> np.ndarray:
    """The pretraining corpus's `split` as one id stream: tokens of each line, then <eos>."""
    from minilib import data

    eos = [vocab.stoi[EOS]] if EOS in vocab else []
    out: list[int] = []
    for doc in data.pretraining_corpus(split, max_words=max_words):
        for line in doc.text.split("\n"):
            tokens = data.tokenize(line)
            if tokens:
                out += vocab.encode(tokens) + eos
    return np.asarray(out, dtype=np.int64)


def corpus_vocab(max_words: int | None, vocab_size: int):
    """The vocabulary of the first `max_words` words of the train split: <unk>, <eos>, then by frequency."""
    from minilib import data

    lines = (data.tokenize(line) for doc in data.pretraining_corpus("train", max_words=max_words)
             for line in doc.text.split("\n"))
    return data.Vocab.build(lines, max_size=vocab_size, specials=(data.vocab.UNK, EOS))


def fingerprint(ids: np.ndarray, vocab) -> dict[str, Any]:
    """What the model was trained on: sha256 of the id stream and of the vocabulary, and the
    registry sha256 of every corpus source."""
    from minilib.data.corpora import DEFAULT_SOURCES
    from minilib.data.sources import source

    return {"train_ids_sha256": hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes()).hexdigest(),
            "vocab_sha256": hashlib.sha256("\n".join(vocab.itos).encode()).hexdigest(),
            "train_tokens": int(len(ids)),
            "sources": {name: source(name).artifact.sha256 for name in DEFAULT_SOURCES}}


def _half_state(model: torch.nn.Module, drop: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", torch.float16) for k, v in model.state_dict().items() if k not in drop}


def _round_to_half(model: torch.nn.Module) -> None:
    """Round the weights to what a half-precision checkpoint holds (so the measured metric is the saved model's)."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())


# ----------------------------------------------------------------------------- awd-lstm

AWD_SIZES = {  # corpus and batch sizes per profile; the model's sizes come from AWDLSTMConfig.for_profile
    "smoke": dict(words=100_000, vocab_size=5_000, epochs=1, batch_size=16, bptt=35, lr=3e-3),
    # laptop: 15k words keep AWDLSTMConfig's laptop size (200/512) under DESIGN.md's 15 MB in half precision
    # (20k: 16.7 MB). Measured on the busy 2-core CPU: ~600-860 tokens/s with 1 thread, ~200 with 2.
    "laptop": dict(words=None, vocab_size=15_000, epochs=1, batch_size=32, bptt=70, lr=3e-3),
    "full": dict(words=None, vocab_size=30_000, epochs=10, batch_size=64, bptt=70, lr=3e-3),
}


def add_run_arguments(p: argparse.ArgumentParser, name: str) -> None:
    """The options every pretrainer shares: threads, seed, where to write, resume, progress."""
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (1 is fastest for LSTMs on a busy 2-core CPU)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help=f"checkpoint path (default: checkpoints/{name}-<profile>.pt)")
    p.add_argument("--checkpoint-dir", type=Path, default=None,
                   help="training state for resume (default: .cache/pretrain/<out name>)")
    p.add_argument("--no-resume", action="store_true", help="start over even if a training checkpoint exists")
    p.add_argument("--progress", choices=("console", "off"), default="console")


def add_awd_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", choices=runtime.PROFILES, default=None,
                   help="size profile (default: $MINILIB_PROFILE or the device's default)")
    p.add_argument("--words", type=int, default=None, help="train words from the corpus (default: per profile; 0 = all)")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--vocab-size", type=int, default=None, help="words kept, specials included")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--bptt", type=int, default=None)
    p.add_argument("--lr", type=float, default=None, help="peak AdamW learning rate (one-cycle schedule)")
    p.add_argument("--emb-size", type=int, default=None, help="override the profile's embedding size")
    p.add_argument("--hidden-size", type=int, default=None, help="override the profile's LSTM size")
    p.add_argument("--valid-words", type=int, default=None, help="cap the validation words (default: the whole split)")
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many steps (timing, tests)")
    add_run_arguments(p, "awd-lstm")


class StopAfter(Callback):
    """Ends fit after `steps` optimizer steps (timing runs, tests)."""

    def __init__(self, steps: int):
        self.steps = steps

    def after_step(self, learner) -> None:
        if learner.step >= self.steps:
            learner.should_stop = True


class TokenClock(Callback):
    """Counts the tokens trained on in this fit and the seconds spent, for tokens/s."""

    def __init__(self):
        self.tokens, self.seconds, self._t = 0, 0.0, None

    def before_batch(self, learner) -> None:
        self._t = time.perf_counter()

    def after_step(self, learner) -> None:
        self.tokens += learner.batch[0].numel()
        self.seconds += time.perf_counter() - self._t

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else float("nan")


def pretrain_awd_lstm(args: argparse.Namespace) -> int:
    """Stage (a) of ULMFiT: AWD-LSTM on pretraining_corpus('train'), perplexity on 'valid'."""
    from minilib.data.batching import LMStream
    from minilib.eval.perplexity import evaluate_lm
    from minilib.models.awd_lstm import ARTAR, AWDLSTM, AWDLSTMConfig, SeqLenLR, VariableBPTTStream
    from minilib.train import Learner

    prof = args.profile or runtime.profile()
    sizes = dict(runtime.pick(AWD_SIZES, prof))
    for key in sizes:
        value = getattr(args, key, None)
        if value is not None:
            sizes[key] = value or None if key == "words" else value
    if args.threads:
        torch.set_num_threads(args.threads)
    out = args.out or provenance.REPO_ROOT / "checkpoints" / f"awd-lstm-{prof}.pt"
    ckpt_dir = args.checkpoint_dir or provenance.REPO_ROOT / ".cache" / "pretrain" / Path(out).stem
    runtime.seed_everything(args.seed)

    t0 = time.perf_counter()
    vocab = corpus_vocab(sizes["words"], sizes["vocab_size"])
    train_ids = corpus_ids("train", vocab, sizes["words"])
    valid_ids = corpus_ids("valid", vocab, args.valid_words)
    print(f"awd-lstm ({prof}): {len(train_ids):,} train tokens, {len(valid_ids):,} valid tokens, "
          f"vocab {len(vocab):,} ({time.perf_counter() - t0:.0f} s to tokenize)")
    overrides = {k: v for k, v in (("emb_size", args.emb_size), ("hidden_size", args.hidden_size)) if v}
    cfg = AWDLSTMConfig.for_profile(len(vocab), prof, **overrides)
    model = AWDLSTM(cfg)
    bs, bptt = sizes["batch_size"], sizes["bptt"]
    clock = TokenClock()
    callbacks = [ARTAR(), SeqLenLR(bptt), clock] + ([StopAfter(args.max_steps)] if args.max_steps else [])
    learner = Learner(model, VariableBPTTStream(train_ids, bs, bptt, seed=args.seed), LMStream(valid_ids, bs, bptt),
                      loss_fn=None, callbacks=callbacks, checkpoint_dir=ckpt_dir,
                      progress=False if args.progress == "off" else "console")
    t1 = time.perf_counter()
    learner.fit(sizes["epochs"], lr=sizes["lr"], schedule="onecycle", resume=not args.no_resume)
    train_seconds = time.perf_counter() - t1

    # The number we publish is the saved (half-precision) model's, on every valid token.
    valid_ce_fp32 = evaluate_lm(model, valid_ids, bs, bptt)
    _round_to_half(model)
    valid_ce = evaluate_lm(model, valid_ids, bs, bptt)
    meta = provenance.stamp(seed=args.seed, command=_command_line(args), profile=prof, model="awd-lstm", config=dataclasses.asdict(cfg),
                            sizes=sizes, data=fingerprint(train_ids, vocab), valid_tokens=int(len(valid_ids)),
                            valid_ids_sha256=hashlib.sha256(valid_ids.tobytes()).hexdigest(),
                            eval=dict(batch_size=bs, bptt=bptt, split="valid", max_words=args.valid_words),
                            valid_loss=valid_ce, valid_perplexity=float(np.exp(valid_ce)),
                            valid_perplexity_fp32=float(np.exp(valid_ce_fp32)), steps=learner.step,
                            train_seconds=round(train_seconds, 1), threads=torch.get_num_threads(),
                            tokens_per_s=round(clock.tokens_per_s, 1))
    save_pretrained(out, model, vocab, meta)
    size_mb = Path(out).stat().st_size / 1e6
    print(f"trained {clock.tokens:,} tokens at {clock.tokens_per_s:,.0f} tokens/s ({torch.get_num_threads()} threads)")
    print(f"wrote {out} ({size_mb:.1f} MB) and {Path(out).with_suffix('.json').name}: "
          f"valid perplexity {meta['valid_perplexity']:.1f} (fp32 {meta['valid_perplexity_fp32']:.1f})")
    if size_mb > 15:
        print(f"warning: {size_mb:.1f} MB is over the 15 MB budget for shipped checkpoints (DESIGN.md §6): "
              f"lower --vocab-size or the model size")
    return 0


def _command_line(args: argparse.Namespace) -> str:
    """The command that repeats this run, rebuilt from the parsed options (whoever called main)."""
    parts = ["python -m minilib pretrain", args.model]
    for key, value in vars(args).items():
        if key in ("command", "model") or value is None or value is False:
            continue
        parts.append(f"--{key.replace('_', '-')}" + ("" if value is True else f" {value}"))
    return " ".join(parts)


def save_pretrained(path: str | Path, model, vocab, meta: dict[str, Any]) -> None:
    """Write the half-precision checkpoint (the tied decoder weight stored once) and its JSON."""
    path = Path(path)
    meta = json.loads(json.dumps(meta, default=str))  # plain JSON types, so torch.load(weights_only=True) reads it
    checkpoint.save(path, {"format": "minilib-pretrained-v1", "model": meta.get("model", "awd-lstm"),
                           "config": dataclasses.asdict(model.cfg), "state": _half_state(model, ("decoder.weight",)),
                           "vocab": {"itos": vocab.itos, "counts": vocab.counts.tolist(), "unk": vocab.unk},
                           "meta": meta})
    provenance.write_json(path.with_suffix(".json"), {**meta, "checkpoint": path.name,
                                                      "checkpoint_bytes": path.stat().st_size})


def load_pretrained(path: str | Path):
    """(AWDLSTM in eval mode, float32; its Vocab; meta) from a checkpoint written by `pretrain awd-lstm`."""
    from minilib.data.vocab import Vocab
    from minilib.models.awd_lstm import AWDLSTM, AWDLSTMConfig

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no pretrained checkpoint at {path}: make one with "
                                f"`python -m minilib pretrain awd-lstm --out {path}`")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if state.get("format") != "minilib-pretrained-v1" or state.get("model") != "awd-lstm":
        raise ValueError(f"{path} is not an AWD-LSTM checkpoint written by `python -m minilib pretrain awd-lstm`")
    model = AWDLSTM(AWDLSTMConfig(**state["config"]))
    weights = {k: v.float() for k, v in state["state"].items()}
    weights["decoder.weight"] = weights["encoder.embedding.weight"]  # tied (§4.5)
    model.load_state_dict(weights)
    model.eval()
    v = state["vocab"]
    return model, Vocab(v["itos"], v["counts"], unk=v["unk"]), state["meta"]


# ----------------------------------------------------------------------------- elmo

ELMO_WORDS = {"smoke": (60_000, 10_000), "laptop": (3_000_000, 150_000), "full": (None, None)}  # (train, valid) words; None = all


def add_elmo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", choices=runtime.PROFILES, default=None,
                   help="size profile (default: $MINILIB_PROFILE or the device's default)")
    p.add_argument("--words", type=int, default=None, help="train words from the corpus (default: per profile; 0 = all)")
    p.add_argument("--valid-words", type=int, default=None, help="validation words (default: per profile; 0 = all)")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many steps (timing, tests)")
    add_run_arguments(p, "elmo")


def pretrain_elmo_command(args: argparse.Namespace) -> int:
    """ELMo's biLM (Peters et al. 2018) on pretraining_corpus('train'), perplexity on 'valid'."""
    from minilib import data
    from minilib.models.elmo import ELMoConfig, pretrain_elmo

    prof = args.profile or runtime.profile()
    words, valid_words = runtime.pick(ELMO_WORDS, prof)
    words = words if args.words is None else (args.words or None)
    valid_words = valid_words if args.valid_words is None else (args.valid_words or None)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = ELMoConfig.for_profile(prof, seed=args.seed, **({"epochs": args.epochs} if args.epochs else {}))
    out = args.out or provenance.REPO_ROOT / "checkpoints" / f"elmo-{prof}.pt"
    ckpt_dir = args.checkpoint_dir or provenance.REPO_ROOT / ".cache" / "pretrain" / Path(out).stem
    metrics = pretrain_elmo(cfg, data.pretraining_corpus("train", max_words=words),
                            data.pretraining_corpus("valid", max_words=valid_words), out,
                            progress=False if args.progress == "off" else "console", checkpoint_dir=ckpt_dir,
                            resume=not args.no_resume, max_steps=args.max_steps,
                            extra_meta=dict(command=_command_line(args), profile=prof,
                                            threads=torch.get_num_threads()))
    size_mb = Path(out).stat().st_size / 1e6
    print(f"trained {metrics['train_tokens']:,} tokens in {metrics['seconds']:.0f} s ({torch.get_num_threads()} threads)")
    print(f"wrote {out} ({size_mb:.1f} MB) and {Path(str(out) + '.json').name}: valid perplexity "
          f"forward {metrics['valid_fwd_ppl']:.1f}, backward {metrics['valid_bwd_ppl']:.1f}")
    return 0


PRETRAINERS: dict[str, Pretrainer] = {
    "awd-lstm": Pretrainer("AWD-LSTM language model (Merity et al. 2017), ULMFiT's stage (a)",
                           add_awd_arguments, pretrain_awd_lstm),
    "elmo": Pretrainer("ELMo's char-CNN biLM (Peters et al. 2018)", add_elmo_arguments, pretrain_elmo_command),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="model", metavar="MODEL", required=True)
    for name, p in PRETRAINERS.items():
        p.add_arguments(sub.add_parser(name, help=p.help, description=p.help))


def run(args: argparse.Namespace) -> int:
    return PRETRAINERS[args.model].run(args)
