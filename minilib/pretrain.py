"""`python -m minilib pretrain NAME ...`: pretrain a model, write a small checkpoint with provenance.

    python -m minilib pretrain awd-lstm                       # sizes from MINILIB_PROFILE
    python -m minilib pretrain awd-lstm --words 200000 --epochs 1 --out /tmp/awd.pt

Each pretrainer is one entry of PRETRAINERS: a help line, add_arguments(parser) and
run(args) -> int, which parses options and calls the model's recipe (minilib/recipes/).
Checkpoints are written in the one pretrained format (minilib/models/pretrained.py).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from minilib import provenance, runtime


@dataclass(frozen=True)
class Pretrainer:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# ----------------------------------------------------------------------------- shared pieces


# ----------------------------------------------------------------------------- awd-lstm


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


def _command_line(args: argparse.Namespace) -> str:
    """The command that repeats this run, rebuilt from the parsed options (whoever called main)."""
    parts = ["python -m minilib pretrain", args.model]
    for key, value in vars(args).items():
        if key in ("command", "model") or value is None or value is False:
            continue
        parts.append(f"--{key.replace('_', '-')}" + ("" if value is True else f" {value}"))
    return " ".join(parts)


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


def awd_lstm_command(args: argparse.Namespace) -> int:
    from minilib.recipes.awd_lstm import pretrain_awd_lstm

    if args.threads:
        torch.set_num_threads(args.threads)
    meta = pretrain_awd_lstm(args.profile, out=args.out, seed=args.seed, checkpoint_dir=args.checkpoint_dir,
                             resume=not args.no_resume, progress=False if args.progress == "off" else "console",
                             max_steps=args.max_steps, valid_words=args.valid_words, command=_command_line(args),
                             emb_size=args.emb_size, hidden_size=args.hidden_size, words=args.words,
                             vocab_size=args.vocab_size, epochs=args.epochs, batch_size=args.batch_size,
                             bptt=args.bptt, lr=args.lr)
    out = provenance.REPO_ROOT / "checkpoints" / f"awd-lstm-{meta['profile']}.pt" if args.out is None else args.out
    size_mb = Path(out).stat().st_size / 1e6
    print(f"trained {meta['train_tokens_seen']:,} tokens at {meta['tokens_per_s']:,.0f} tokens/s ({meta['threads']} threads)")
    print(f"wrote {out} ({size_mb:.1f} MB) and {Path(out).with_suffix('.json').name}: "
          f"valid perplexity {meta['valid_perplexity']:.1f} (fp32 {meta['valid_perplexity_fp32']:.1f})")
    if size_mb > 15:
        print(f"warning: {size_mb:.1f} MB is over the 15 MB budget for shipped checkpoints: "
              f"lower --vocab-size or the model size")
    return 0


def pretrain_elmo_command(args: argparse.Namespace) -> int:
    """ELMo's biLM (Peters et al. 2018) on pretraining_corpus('train'), perplexity on 'valid'."""
    from minilib import data
    from minilib.models.elmo import ELMoConfig
    from minilib.recipes.elmo import pretrain_elmo

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
    print(f"wrote {out} ({size_mb:.1f} MB) and {Path(out).with_suffix('.json').name}: valid perplexity "
          f"forward {metrics['valid_fwd_ppl']:.1f}, backward {metrics['valid_bwd_ppl']:.1f}")
    return 0


# ----------------------------------------------------------------------------- gpt

GPT_WORDS = {"smoke": 60_000, "laptop": None, "full": None}  # train words; None = the whole train split


def add_gpt_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", choices=runtime.PROFILES, default=None,
                   help="size profile (default: $MINILIB_PROFILE or the device's default)")
    p.add_argument("--words", type=int, default=None, help="train words from the corpus (default: per profile; 0 = all)")
    p.add_argument("--steps", type=int, default=None, help="optimizer steps of the schedule (default: per profile)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (warm-up, then cosine to 0)")
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many steps (timing, tests; the run then counts as finished)")
    add_budget_argument(p)
    add_run_arguments(p, "gpt")


def add_budget_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", type=float, default=None, metavar="X",
                   help="train X times the profile's compute (the compute axis): X times the steps, LR held "
                        "then a 20%% cool-down, a snapshot every 1/8 of the profile's steps "
                        "(default out: <name>-<profile>-<X>x.pt)")


def budget_suffix(budget: float | None) -> str:
    """'' for the profile's own run, '-4x' for --budget 4 (checkpoint and cache names)."""
    return "" if budget is None else f"-{budget:g}x"



def pretrain_gpt_command(args: argparse.Namespace) -> int:
    """GPT-1 (Radford et al. 2018) on pretraining_corpus('train') in byte-level BPE, held-out loss on 'valid'."""
    from minilib import data
    from minilib.data.tokenizer import pretrained_tokenizer
    from minilib.models.gpt import GPT_SIZES
    from minilib.recipes.gpt import GPTPretrainConfig, pretrain_gpt

    prof = args.profile or runtime.profile()
    words = runtime.pick(GPT_WORDS, prof) if args.words is None else (args.words or None)
    if args.threads:
        torch.set_num_threads(args.threads)
    overrides = {k: v for k, v in (("steps", args.steps), ("lr", args.lr)) if v is not None}
    cfg = GPTPretrainConfig.for_profile(prof, seed=args.seed, **overrides)
    if args.budget is not None:
        cfg = cfg.at_budget(args.budget)
    out = args.out or provenance.REPO_ROOT / "checkpoints" / f"gpt-{prof}{budget_suffix(args.budget)}.pt"
    ckpt_dir = args.checkpoint_dir or provenance.REPO_ROOT / ".cache" / "pretrain" / Path(out).stem
    print(f"{cfg.steps:,} steps, {cfg.steps * cfg.batch_size * GPT_SIZES[prof]['block_size']:,} tokens "
          f"({cfg.schedule} schedule); resumable from {ckpt_dir}: run the same command again to continue")
    m = pretrain_gpt(cfg, data.pretraining_corpus("train", max_words=words), data.pretraining_corpus("valid"),
                     out, pretrained_tokenizer("bpe", prof), progress=False if args.progress == "off" else "console",
                     checkpoint_dir=ckpt_dir, resume=not args.no_resume, max_steps=args.max_steps,
                     extra_meta=dict(command=_command_line(args), profile=prof, threads=torch.get_num_threads()))
    size_mb = Path(out).stat().st_size / 1e6
    print(f"trained {m['train_tokens_seen']:,} tokens at {m['tokens_per_s']:,.0f} tokens/s ({torch.get_num_threads()} threads)")
    print(f"wrote {out} ({size_mb:.1f} MB) and {Path(out).with_suffix('.json').name}: held-out "
          f"{m['valid_nats_per_token']:.3f} nats/token, {m['valid_bits_per_byte']:.3f} bits/byte")
    return 0


# ----------------------------------------------------------------------------- bert

def add_bert_arguments(p: argparse.ArgumentParser) -> None:
    from minilib.recipes.bert import add_bert_arguments as add_own   # BERT's own options live with its recipe

    add_own(p)
    add_budget_argument(p)
    add_run_arguments(p, "bert")


def pretrain_bert_command(args: argparse.Namespace) -> int:
    from minilib.recipes.bert import pretrain_bert_command as run

    return run(args, command=_command_line(args))


PRETRAINERS: dict[str, Pretrainer] = {
    "awd-lstm": Pretrainer("AWD-LSTM language model (Merity et al. 2017), ULMFiT's stage (a)",
                           add_awd_arguments, awd_lstm_command),
    "elmo": Pretrainer("ELMo's char-CNN biLM (Peters et al. 2018)", add_elmo_arguments, pretrain_elmo_command),
    "gpt": Pretrainer("GPT-1's Transformer decoder (Radford et al. 2018)", add_gpt_arguments, pretrain_gpt_command),
    "bert": Pretrainer("BERT's Transformer encoder (Devlin et al. 2018): masked LM + next sentence prediction",
                       add_bert_arguments, pretrain_bert_command),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="model", metavar="MODEL", required=True)
    for name, p in PRETRAINERS.items():
        p.add_arguments(sub.add_parser(name, help=p.help, description=p.help))


def run(args: argparse.Namespace) -> int:
    return PRETRAINERS[args.model].run(args)
